// CUDA mlstm: h and the rows' n, m of the mLSTM's parallel (stabilised) form (suites/ops/
// mlstm_desc.h; NX-AI mlstm_kernels torch/parallel/native/fw.py). The S x S form is evaluated
// through the chunkwise recurrence (mlstm_mma.cuh, mlstm_fma.cuh with kModeParallel): the same sums
// in O(S) work instead of O(S^2), with the parallel form's own stabiliser carried beside the
// state's, so h, n and m are the parallel form's (mlstm_common.cuh derives it).
#include "kernels/cuda/mlstm_fwd.cuh"

namespace dnnb::cuda_kernels::mlstm {
namespace {

Status run_mlstm(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  DNNB_TRY(fwd_limits(call.problem));
  auto a = mlstm_inputs(call, 3);
  if (!a) return a.status();
  auto d = ops::mlstm_desc(call.problem);
  const std::string& op = call.problem.op;
  auto n = operand_of(call.outputs[1], DType::f32, ops::mlstm_gate_shape(*d), op, "n");
  auto m = operand_of(call.outputs[2], DType::f32, ops::mlstm_gate_shape(*d), op, "m");
  if (!n) return n.status();
  if (!m) return m.status();
  a->n_out = *n;
  a->m_out = *m;
  return launch_fwd<kModeParallel>(**device, *a, call.problem.dtype, d->chunk, op);
}

DNNB_REGISTER(register_mlstm("mlstm", run_mlstm, fwd_unit, fwd_limits));

}  // namespace
}  // namespace dnnb::cuda_kernels::mlstm
