// CUDA mlstm_chunkwise: h and the last states c_last, n_last, m_last of the mLSTM's chunkwise
// form (suites/ops/mlstm_desc.h; NX-AI mlstm_kernels torch/chunkwise/native/fw.py with
// return_last_states). The kernels (mlstm_mma.cuh on the tensor cores for f16/bf16,
// mlstm_fma.cuh otherwise) walk the sequence per (batch, head, v columns) holding the state in
// registers or shared memory, so no state of an intermediate chunk boundary goes to memory;
// mlstm_common.cuh derives why their tile length need not be chunk=.
#include "kernels/cuda/mlstm_fwd.cuh"

namespace dnnb::cuda_kernels::mlstm {
namespace {

Status run_mlstm_chunkwise(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  DNNB_TRY(fwd_limits(call.problem));
  auto a = mlstm_inputs(call, 4);
  if (!a) return a.status();
  auto d = ops::mlstm_desc(call.problem);
  const std::string& op = call.problem.op;
  auto c = operand_of(call.outputs[1], DType::f32, ops::mlstm_c_state_shape(*d), op, "c_last");
  auto n = operand_of(call.outputs[2], DType::f32, ops::mlstm_n_state_shape(*d), op, "n_last");
  auto m = operand_of(call.outputs[3], DType::f32, ops::mlstm_m_state_shape(*d), op, "m_last");
  if (!c) return c.status();
  if (!n) return n.status();
  if (!m) return m.status();
  a->c_last = *c;
  a->n_last = *n;
  a->m_last = *m;
  return launch_fwd<kModeChunk>(**device, *a, call.problem.dtype, d->chunk, op);
}

DNNB_REGISTER(register_mlstm("mlstm_chunkwise", run_mlstm_chunkwise, fwd_unit, fwd_limits));

}  // namespace
}  // namespace dnnb::cuda_kernels::mlstm
