// Host side shared by the OpenCL mLSTM kernels (mlstm.cpp, mlstm_chunkwise.cpp, mlstm_step.cpp,
// mlstm_bwd.cpp; kernels in mlstm_body.cl and the op's .cl, tiled with sdpa_body.cl): the call's
// device and desc, the problem's dims as a kernel argument, the operands' views, the forward
// kernels' argument list, the checks of a call against the operand contract
// (suites/ops/mlstm_desc.h), the tiles, the build options, one-dimensional launches, and the
// gate pre-pass into device scratch.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/opencl/mlstm_body_cl.h"
#include "kernels/opencl/sdpa_launch.h"
#include "suites/ops/mlstm_desc.h"

namespace dnnb::opencl {

// dnnb_mlstm_dims in mlstm_body.cl, field for field.
struct ClMlstmDims {
  cl_long batch, heads, s, dqk, dv, chunk;
};
static_assert(sizeof(ClMlstmDims) == 6 * sizeof(cl_long), "ClMlstmDims must match dnnb_mlstm_dims in mlstm_body.cl");

// Items of mlstm_gates' work-group per (batch, head) (MLSTM_GATES_WG, set by mlstm_options).
inline constexpr size_t kMlstmGatesItems = 128;

inline ClMlstmDims mlstm_dims(const ops::MlstmDesc& d) {
  return ClMlstmDims{d.batch, d.heads, d.s, d.dqk, d.dv, d.chunk};
}

// An operand as dnnb_sdpa_view: [B, NH, S, E] (q, k, v, h, dh, dq, dk, dv), [B, NH, S] (gates,
// n, m: E unused), the states [B, NH, DQK, DV] and [B, NH, DQK] (rows over DQK), [B, NH] (m_last).
inline ClSdpaView mlstm_view(const Tensor& t) {
  ClSdpaView v;
  v.offset = t.offset;
  const auto& s = t.strides;
  if (t.ndim() >= 2) v.sb = s[0], v.sh = s[1];
  if (t.ndim() >= 3) v.ss = s[2];
  if (t.ndim() >= 4) v.se = s[3];
  return v;
}

// Adds an operand's buffer and then its view (dnnb_sdpa_view), the pair every mLSTM kernel
// takes per tensor.
inline KernelArgs& add_mlstm_operand(KernelArgs& args, const Tensor& t) {
  return args.add(cl_buffer(t)).add(mlstm_view(t));
}

// What every mLSTM op's run starts from: the call's device, the problem's desc and dtype.
struct MlstmRun {
  OpenCLDevice* device;
  ops::MlstmDesc d;
  DType dtype;
};

inline Result<MlstmRun> mlstm_run(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  auto d = ops::mlstm_desc(call.problem);
  if (!d) return d.status();
  return MlstmRun{*device, *d, call.problem.dtype};
}

// `groups` work-groups of `items` items, one dimension (launch_sdpa_tiles with one lane per row);
// unsupported when the compiled kernel cannot run that many items on this device.
inline Status launch_mlstm_groups(OpenCLDevice& device, cl_kernel kernel, int64_t groups, size_t items,
                                  const std::string& what) {
  SdpaTiles tiles;
  tiles.rows = static_cast<int64_t>(items);
  tiles.lanes = 1;
  return launch_sdpa_tiles(device, kernel, groups, tiles, what);
}

// Sets the arguments of the forward kernels (mlstm_fwd, mlstm_chunkwise_fwd, mlstm_step), which
// all take: the first `inputs` inputs (operand each), the gate pre-pass's scratch unless `gates`
// is null (mlstm_step has none), every output, then the dims, scale and eps.
inline Status set_mlstm_forward_args(cl_kernel kernel, const OpCall& call, size_t inputs, cl_mem gates,
                                     const ops::MlstmDesc& d) {
  KernelArgs args(kernel);
  for (size_t i = 0; i < inputs; ++i) add_mlstm_operand(args, call.inputs[i]);
  if (gates != nullptr) args.add(gates);
  for (const Tensor& t : call.outputs) add_mlstm_operand(args, t);
  args.add(mlstm_dims(d)).add(static_cast<cl_float>(d.scale())).add(static_cast<cl_float>(d.eps));
  return args.status();
}

// One operand of a signature: its name, shape and dtype.
struct MlstmOperand {
  const char* name;
  Shape shape;
  DType dtype;
};

// The call's inputs and outputs against the signature, in order: counts, shapes, dtypes.
inline Status check_mlstm_call(const OpCall& call, const std::vector<MlstmOperand>& in,
                               const std::vector<MlstmOperand>& out) {
  const std::string& op = call.problem.op;
  if (call.inputs.size() != in.size() || call.outputs.size() != out.size())
    return Status::bad_input("opencl " + op + ": " + std::to_string(call.inputs.size()) + " inputs and " +
                             std::to_string(call.outputs.size()) + " outputs, the signature has " +
                             std::to_string(in.size()) + " and " + std::to_string(out.size()));
  auto check = [&](const Tensor& t, const MlstmOperand& want) -> Status {
    if (t.shape != want.shape || t.dtype != want.dtype)
      return Status::bad_input("opencl " + op + ": " + want.name + " is " + t.describe() + ", the signature's is " +
                               shape_to_string(want.shape) + " " + dtype_name(want.dtype));
    return Status::ok();
  };
  for (size_t i = 0; i < in.size(); ++i) DNNB_TRY(check(call.inputs[i], in[i]));
  for (size_t i = 0; i < out.size(); ++i) DNNB_TRY(check(call.outputs[i], out[i]));
  return Status::ok();
}

// The inputs every sequence op reads first: q, k, v in the problem dtype, i and f in f32.
inline std::vector<MlstmOperand> mlstm_sequence_inputs(const ops::MlstmDesc& d, DType dtype) {
  return {{"q", ops::mlstm_qk_shape(d), dtype},
          {"k", ops::mlstm_qk_shape(d), dtype},
          {"v", ops::mlstm_v_shape(d), dtype},
          {"i", ops::mlstm_gate_shape(d), DType::f32},
          {"f", ops::mlstm_gate_shape(d), DType::f32}};
}

// The tiles of the parallel kernels (mlstm_fwd, mlstm_bwd's): the first of sdpa's lists whose
// local bytes fit (sdpa_tiles, whose device rules and DNNB_OPENCL_SDPA_TILES switch apply).
inline Result<SdpaTiles> mlstm_tiles(const OpenCLDevice& device, const ops::MlstmDesc& d,
                                     const std::function<size_t(const SdpaTiles&)>& bytes, const std::string& what) {
  ops::SdpaDesc shape;  // only the head dims, for sdpa_tiles' message
  shape.d = d.dqk;
  shape.dv = d.dv;
  return sdpa_tiles(device, shape, bytes, what);
}

// True when the tiles of a CPU device apply: the device is a CPU (PoCL), or
// DNNB_OPENCL_SDPA_TILES=cpu (=gpu takes the GPU tiles on any device, so PoCL checks them too),
// as sdpa_tiles decides.
inline Result<bool> mlstm_cpu_tiles(const OpenCLDevice& device) {
  cl_device_type type = 0;
  DNNB_CL_TRY(clGetDeviceInfo(device.device_id(), CL_DEVICE_TYPE, sizeof(type), &type, nullptr));
  bool cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
  if (const char* force = std::getenv("DNNB_OPENCL_SDPA_TILES")) {
    if (std::strcmp(force, "gpu") == 0) cpu = false;
    if (std::strcmp(force, "cpu") == 0) cpu = true;
  }
  return cpu;
}

// The local memory a work-group may take: the device's, at most 48 KiB on a GPU (NVIDIA's
// limit of static local memory per work-group) and 256 KiB on a CPU.
inline size_t mlstm_local_cap(const OpenCLDevice& device, bool cpu) {
  return std::min(device.local_mem_size(), cpu ? size_t{256} << 10 : size_t{48} << 10);
}

// build_options plus the lanes, the head dims rounded up to 4 (sdpa_body.cl's SDPA_T, SDPA_D4,
// SDPA_DV4), the gate pre-pass's work-group (MLSTM_GATES_WG) and `extra`.
inline std::string mlstm_options(const OpenCLDevice& device, DType dtype, const ops::MlstmDesc& d, int64_t lanes,
                                 const std::string& extra) {
  const auto round4 = [](int64_t e) { return std::to_string((e + 3) / 4 * 4); };
  return build_options(device, dtype,
                       "-DSDPA_T=" + std::to_string(lanes) + " -DSDPA_D4=" + round4(d.dqk) +
                           " -DSDPA_DV4=" + round4(d.dv) + " -DMLSTM_GATES_WG=" + std::to_string(kMlstmGatesItems) +
                           " " + extra);
}

// prelude, sdpa_body.cl, mlstm_body.cl, then the op's own part.
inline std::string mlstm_source(const char* op_part) {
  return program_source({opencl_source::sdpa_body, opencl_source::mlstm_body, op_part});
}

// Bytes of the gate pre-pass's arrays in scratch: ga and gc (float4), arg (int).
inline size_t mlstm_gates_bytes(const ops::MlstmDesc& d) {
  return static_cast<size_t>(d.batch * d.heads * d.s) * (8 * sizeof(cl_float) + sizeof(cl_int));
}

// Enqueues mlstm_gates (mlstm_body.cl) of `kernel` over i and f into `gates`, whose first
// mlstm_gates_bytes(d) the kernel writes: ga, gc (B NH S float4 each), arg (B NH S int).
inline Status launch_mlstm_gates(OpenCLDevice& device, cl_kernel kernel, const Tensor& ig, const Tensor& fg,
                                 cl_mem gates, const ops::MlstmDesc& d, bool clamp_zero, const std::string& what) {
  KernelArgs args(kernel);
  add_mlstm_operand(add_mlstm_operand(args, ig), fg).add(gates).add(mlstm_dims(d)).add(cl_int{clamp_zero ? 1 : 0});
  DNNB_TRY(args.status());
  return launch_mlstm_groups(device, kernel, d.batch * d.heads, kMlstmGatesItems, what);
}

// Builds mlstm_gates from the op's program (`op`, `source`, `options`: those of its own kernels),
// takes `scratch_bytes` (at least mlstm_gates_bytes(d)) of device scratch and enqueues the gate
// pre-pass over the call's i and f (inputs 3 and 4) into its start; returns the scratch.
inline Result<cl_mem> run_mlstm_gates(OpenCLDevice& device, const OpCall& call, const ops::MlstmDesc& d,
                                      const std::string& op, const std::string& source, const std::string& options,
                                      size_t scratch_bytes, bool clamp_zero) {
  auto kernel = opencl_kernel(device, op, source, "mlstm_gates", options);
  if (!kernel) return kernel.status();
  auto scratch = device.scratch(scratch_bytes);
  if (!scratch) return scratch.status();
  DNNB_TRY(launch_mlstm_gates(device, *kernel, call.inputs[3], call.inputs[4], *scratch, d, clamp_zero,
                              op + "/mlstm_gates"));
  return *scratch;
}

}  // namespace dnnb::opencl
