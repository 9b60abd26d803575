// mlstm (the parallel form) on OpenCL: the gate pre-pass mlstm_gates (mlstm_body.cl) into device
// scratch, then mlstm_fwd (mlstm.cl: one work-group per batch x head and block of query rows, k
// and v tiles in local memory) writing h in the problem dtype and n, m in f32. Every operand is
// read through its strides. Tiles and build options: mlstm_launch.h.
#include "kernels/opencl/mlstm_cl.h"
#include "kernels/opencl/mlstm_launch.h"

namespace dnnb::opencl {
namespace {

// Local bytes of mlstm_fwd at rows x walk = SDPA_BQ x SDPA_BK: q, k and v tiles, the weights,
// the keys' a.
size_t forward_local_bytes(const ops::MlstmDesc& d, const SdpaTiles& t) {
  const int64_t kw = t.width4(d.dqk), vw = t.width4(d.dv);
  return static_cast<size_t>(16 * (t.rows * kw + t.walk * kw + t.walk * vw) + 4 * t.rows * t.walk + 8 * t.walk);
}

Status run_mlstm(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  auto d = ops::mlstm_desc(call.problem);
  if (!d) return d.status();
  const DType dtype = call.problem.dtype;
  DNNB_TRY(check_mlstm_call(call, mlstm_sequence_inputs(*d, dtype),
                            {{"h", ops::mlstm_v_shape(*d), dtype},
                             {"n", ops::mlstm_gate_shape(*d), DType::f32},
                             {"m", ops::mlstm_gate_shape(*d), DType::f32}}));
  const Tensor& q = call.inputs[0];
  const Tensor& k = call.inputs[1];
  const Tensor& v = call.inputs[2];
  const Tensor& h = call.outputs[0];
  const Tensor& n = call.outputs[1];
  const Tensor& m = call.outputs[2];
  auto tiles = mlstm_tiles(**device, *d, [&](const SdpaTiles& t) { return forward_local_bytes(*d, t); }, "mlstm");
  if (!tiles) return tiles.status();
  static const std::string source = mlstm_source(opencl_source::mlstm);
  const std::string options = mlstm_options(**device, dtype, *d, tiles->lanes,
                                            "-DSDPA_BQ=" + std::to_string(tiles->rows) +
                                                " -DSDPA_BK=" + std::to_string(tiles->walk));
  auto gates_kernel = opencl_kernel(**device, "mlstm", source, "mlstm_gates", options);
  if (!gates_kernel) return gates_kernel.status();
  auto kernel = opencl_kernel(**device, "mlstm", source, "mlstm_fwd", options);
  if (!kernel) return kernel.status();
  auto gates = (*device)->scratch(mlstm_gates_bytes(*d));
  if (!gates) return gates.status();
  DNNB_TRY(launch_mlstm_gates(**device, *gates_kernel, call.inputs[3], call.inputs[4], *gates, *d, false,
                              "mlstm/mlstm_gates"));

  KernelArgs args(*kernel);
  args.add(cl_buffer(q)).add(mlstm_view(q)).add(cl_buffer(k)).add(mlstm_view(k)).add(cl_buffer(v)).add(mlstm_view(v));
  args.add(*gates).add(cl_buffer(h)).add(mlstm_view(h)).add(cl_buffer(n)).add(mlstm_view(n));
  args.add(cl_buffer(m)).add(mlstm_view(m)).add(mlstm_dims(*d));
  args.add(static_cast<cl_float>(d->scale())).add(static_cast<cl_float>(d->eps));
  DNNB_TRY(args.status());
  const int64_t groups = d->batch * d->heads * sdpa_ceil_div(d->s, tiles->rows);
  return launch_sdpa_tiles(**device, *kernel, groups, *tiles, "mlstm/mlstm_fwd");
}

bool register_mlstm() { return register_opencl("mlstm", float_dtypes(), run_mlstm); }

}  // namespace
DNNB_REGISTER(register_mlstm());
}  // namespace dnnb::opencl
