// CUDA mlstm_bwd: dq, dk, dv, di, df of the mLSTM's parallel form from q, k, v, i, f, dh and the
// forward's n, m (suites/ops/mlstm_desc.h; NX-AI mlstm_kernels torch/parallel/native/bw.py's
// expressions). Three sweeps over the sequence that carry a state (mlstm_bwd_fma.cuh: dq
// forward, dk and dv backward, O(S) work), each writing its shares of q . dq and k . dk to a
// scratch buffer, then one warp per head adds them in a fixed order for di = k . dk and
// df = sigmoid(-f) * (reverse cumulative sum of q . dq - k . dk).
#include "kernels/cuda/mlstm_bwd_fma.cuh"

namespace dnnb::cuda_kernels::mlstm {
namespace {

Status bwd_limits(const Problem& problem) {
  auto a = mlstm_shape(problem);
  if (!a) return a.status();
  if (a->dqk > kBwdMaxDim || a->dv > kBwdMaxDim)
    return Status::unsupported("cuda mlstm_bwd: DQK and DV up to " + std::to_string(kBwdMaxDim) +
                               " (rows of the tiles in shared memory), got DQK=" + std::to_string(a->dqk) +
                               ", DV=" + std::to_string(a->dv));
  return Status::ok();
}

template <typename K>
Status set_smem(K kernel, size_t bytes) {
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return Status::ok();
}

Status run_mlstm_bwd(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  DNNB_TRY(bwd_limits(call.problem));
  auto shape = mlstm_shape(call.problem);
  if (!shape) return shape.status();
  auto d = ops::mlstm_desc(call.problem);
  const std::string& op = call.problem.op;
  if (call.inputs.size() != 8 || call.outputs.size() != 5)
    return Status::bad_input("cuda " + op + ": " + std::to_string(call.inputs.size()) + " inputs and " +
                             std::to_string(call.outputs.size()) + " outputs, the signature has 8 and 5");
  const DType t = call.problem.dtype;
  BwdArgs a;
  a.batch = shape->batch;
  a.heads = shape->heads;
  a.s = shape->s;
  a.dqk = shape->dqk;
  a.dv = shape->dv;
  a.scale = shape->scale;
  a.eps = shape->eps;
  const Shape qk = ops::mlstm_qk_shape(*d), vv = ops::mlstm_v_shape(*d), gate = ops::mlstm_gate_shape(*d);
  struct Slot {
    Operand* dst;
    const Tensor* t;
    DType dtype;
    const Shape* shape;
    const char* name;
  };
  const Slot slots[] = {{&a.q, &call.inputs[0], t, &qk, "q"},          {&a.k, &call.inputs[1], t, &qk, "k"},
                        {&a.v, &call.inputs[2], t, &vv, "v"},          {&a.i, &call.inputs[3], DType::f32, &gate, "i"},
                        {&a.f, &call.inputs[4], DType::f32, &gate, "f"}, {&a.dh, &call.inputs[5], t, &vv, "dh"},
                        {&a.n, &call.inputs[6], DType::f32, &gate, "n"}, {&a.m, &call.inputs[7], DType::f32, &gate, "m"},
                        {&a.dq, &call.outputs[0], t, &qk, "dq"},       {&a.dk, &call.outputs[1], t, &qk, "dk"},
                        {&a.dvo, &call.outputs[2], t, &vv, "dv"},       {&a.di, &call.outputs[3], DType::f32, &gate, "di"},
                        {&a.df, &call.outputs[4], DType::f32, &gate, "df"}};
  for (const Slot& s : slots) {
    auto o = operand_of(*s.t, s.dtype, *s.shape, op, s.name);
    if (!o) return o.status();
    *s.dst = *o;
  }
  const int64_t heads = d->batch * d->heads;
  const int64_t dtiles = ceil_div(d->dqk, kBwdTile), jtiles = ceil_div(d->dv, kBwdTile);
  if (heads * std::max(dtiles, jtiles) > INT_MAX)
    return Status::unsupported("cuda " + op + ": " + call.problem.to_string() + " exceeds the grid");
  const CudaDevice& dev = **device;
  const size_t shares = static_cast<size_t>(heads * d->s * dtiles);
  auto scratch = StreamScratch::allocate(dev, 2 * shares * sizeof(float));
  if (!scratch) return scratch.status();
  a.qdq = scratch->as<float>();
  a.kdk = a.qdq + shares;
  const BwdLayout qk_lay = bwd_layout(a.dv, false), dv_lay = bwd_layout(a.dqk, true);
  DNNB_TRY(dispatch_float(t, [&](auto tag) -> Status {
    using T = decltype(tag);
    auto dq_kernel = mlstm_bwd_qk_kernel<T, false>;
    auto dk_kernel = mlstm_bwd_qk_kernel<T, true>;
    auto dv_kernel = mlstm_bwd_dv_kernel<T>;
    DNNB_TRY(set_smem(dq_kernel, qk_lay.bytes));
    DNNB_TRY(set_smem(dk_kernel, qk_lay.bytes));
    DNNB_TRY(set_smem(dv_kernel, dv_lay.bytes));
    const unsigned qk_blocks = static_cast<unsigned>(heads * dtiles), dv_blocks = static_cast<unsigned>(heads * jtiles);
    dq_kernel<<<qk_blocks, kBwdThreads, qk_lay.bytes, dev.stream()>>>(a, qk_lay);
    DNNB_CUDA_CHECK_LAUNCH();
    dk_kernel<<<qk_blocks, kBwdThreads, qk_lay.bytes, dev.stream()>>>(a, qk_lay);
    DNNB_CUDA_CHECK_LAUNCH();
    dv_kernel<<<dv_blocks, kBwdThreads, dv_lay.bytes, dev.stream()>>>(a, dv_lay);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }));
  mlstm_bwd_gates_kernel<<<static_cast<unsigned>(heads), 32, 0, dev.stream()>>>(a);
  DNNB_CUDA_CHECK_LAUNCH();
  return scratch->release();
}

DNNB_REGISTER(register_mlstm("mlstm_bwd", run_mlstm_bwd, [](const Problem&) { return std::string("f32_fma"); },
                             bwd_limits));

}  // namespace
}  // namespace dnnb::cuda_kernels::mlstm
