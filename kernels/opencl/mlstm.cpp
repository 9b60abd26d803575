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
  auto run = mlstm_run(call);
  if (!run) return run.status();
  OpenCLDevice& device = *run->device;
  const ops::MlstmDesc& d = run->d;
  const DType dtype = run->dtype;
  DNNB_TRY(check_mlstm_call(call, mlstm_sequence_inputs(d, dtype),
                            {{"h", ops::mlstm_v_shape(d), dtype},
                             {"n", ops::mlstm_gate_shape(d), DType::f32},
                             {"m", ops::mlstm_gate_shape(d), DType::f32}}));
  auto tiles = mlstm_tiles(device, d, [&](const SdpaTiles& t) { return forward_local_bytes(d, t); }, "mlstm");
  if (!tiles) return tiles.status();
  static const std::string source = mlstm_source(opencl_source::mlstm);
  const std::string options = mlstm_options(device, dtype, d, tiles->lanes,
                                            "-DSDPA_BQ=" + std::to_string(tiles->rows) +
                                                " -DSDPA_BK=" + std::to_string(tiles->walk));
  auto kernel = opencl_kernel(device, "mlstm", source, "mlstm_fwd", options);
  if (!kernel) return kernel.status();
  auto gates = run_mlstm_gates(device, call, d, "mlstm", source, options, mlstm_gates_bytes(d), false);
  if (!gates) return gates.status();

  // q, k, v (i and f only through the gates), the gates, h, n, m.
  DNNB_TRY(set_mlstm_forward_args(*kernel, call, 3, *gates, d));
  const int64_t groups = d.batch * d.heads * sdpa_ceil_div(d.s, tiles->rows);
  return launch_sdpa_tiles(device, *kernel, groups, *tiles, "mlstm/mlstm_fwd");
}

bool register_mlstm() { return register_opencl("mlstm", float_dtypes(), run_mlstm); }

}  // namespace
DNNB_REGISTER(register_mlstm());
}  // namespace dnnb::opencl
