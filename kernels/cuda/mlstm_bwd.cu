// CUDA mlstm_bwd: dq, dk, dv, di, df of the mLSTM's parallel form from q, k, v, i, f, dh and the
// forward's n, m (suites/ops/mlstm_desc.h): torch autograd through mlstm_kernels' parallel
// native fw.py, i.e. the expressions of its bw.py plus the gradient through the normaliser
// n = max(|rowsum|, exp(-m)): dn = -(dh . h) / (n + eps), which adds del = sigma dn to every
// dC~[t, s] of the row (sigma = sign(rowsum) where |rowsum| > exp(-m), else 0: that branch's
// path through m changes h only through eps and is left out, as the reference allows).
//   1. The forward again (mlstm_fwd.cuh, kModeDel): per row and v-column block the share of
//      dh . h (h in f32) and sigma; mlstm_bwd_del_kernel adds the shares in a fixed order.
//   2. Three sweeps over the sequence that carry a state (dq forward, dk and dv backward, O(S)
//      work), writing their shares of q . dq and k . dk to scratch: on the tensor cores
//      (mlstm_bwd_mma.cuh) for f16/bf16 with DQK and DV in {64, 128, 256}, else on the FMA units
//      (mlstm_bwd_fma.cuh).
//   3. One warp per head adds those in a fixed order for di = k . dk and
//      df = sigmoid(-f) * (reverse cumulative sum of q . dq - k . dk).
#include "kernels/cuda/mlstm_bwd_fma.cuh"
#include "kernels/cuda/mlstm_bwd_mma.cuh"
#include "kernels/cuda/mlstm_fwd.cuh"

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

bool mma_dim(int d) { return d == 64 || d == 128 || d == 256; }

bool bwd_uses_mma(DType t, int dqk, int dv) { return t != DType::f32 && mma_dim(dqk) && mma_dim(dv); }

// One tensor-core sweep: K1 = DV for dq and dk, DQK for dv; blocks per head: its 32-column tiles.
template <typename T, int kSweep, int K1>
Status launch_sweep(const CudaDevice& dev, const BwdArgs& a, int64_t heads) {
  auto kernel = mlstm_bwd_mma_kernel<T, K1, kSweep>;
  constexpr int kSmem = BwdMmaLayout<K1>::kSmem;
  DNNB_TRY(set_smem(kernel, kSmem));
  const int64_t tiles = (kSweep == kSweepDv ? a.dv : a.dqk) / kBwdMmaCols;
  kernel<<<static_cast<unsigned>(heads * tiles), kMmaThreads, kSmem, dev.stream()>>>(a, bwd_mma_paths(a));
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <typename T, int kSweep>
Status launch_sweep_k1(const CudaDevice& dev, const BwdArgs& a, int64_t heads) {
  switch (kSweep == kSweepDv ? a.dqk : a.dv) {
    case 64: return launch_sweep<T, kSweep, 64>(dev, a, heads);
    case 128: return launch_sweep<T, kSweep, 128>(dev, a, heads);
    default: return launch_sweep<T, kSweep, 256>(dev, a, heads);
  }
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
  const size_t rows = static_cast<size_t>(heads * d->s);
  const int del_tiles = static_cast<int>(fwd_del_tiles(a.dv));
  auto scratch = StreamScratch::allocate(dev, (2 * shares + rows * (del_tiles + 2)) * sizeof(float));
  if (!scratch) return scratch.status();
  a.qdq = scratch->as<float>();
  a.kdk = a.qdq + shares;
  float* dh_dot = a.kdk + shares;
  float* sigma = dh_dot + rows * del_tiles;
  float* del = sigma + rows;

  // 1: dh . h and sigma from the forward, then del.
  MlstmArgs fa;
  fa.batch = a.batch, fa.heads = a.heads, fa.s = a.s, fa.dqk = a.dqk, fa.dv = a.dv;
  fa.scale = a.scale, fa.eps = a.eps;
  fa.q = a.q, fa.k = a.k, fa.v = a.v, fa.i = a.i, fa.f = a.f, fa.dh = a.dh;
  fa.dh_dot = dh_dot;
  fa.sigma = sigma;
  DNNB_TRY(launch_fwd<kModeDel>(dev, fa, t, d->chunk, op));
  mlstm_bwd_del_kernel<<<static_cast<unsigned>(ceil_div(static_cast<int64_t>(rows), 256)), 256, 0, dev.stream()>>>(
      a, dh_dot, sigma, del_tiles, del);
  DNNB_CUDA_CHECK_LAUNCH();
  a.del = del;

  // 2: the sweeps.
  const BwdLayout qk_lay = bwd_layout(a.dv, false), dv_lay = bwd_layout(a.dqk, true);
  DNNB_TRY(dispatch_float(t, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, float>) {
      if (bwd_uses_mma(t, a.dqk, a.dv)) {
        DNNB_TRY((launch_sweep_k1<T, kSweepDq>(dev, a, heads)));
        DNNB_TRY((launch_sweep_k1<T, kSweepDk>(dev, a, heads)));
        return launch_sweep_k1<T, kSweepDv>(dev, a, heads);
      }
    }
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
  // 3: di, df.
  mlstm_bwd_gates_kernel<<<static_cast<unsigned>(heads), 32, 0, dev.stream()>>>(a);
  DNNB_CUDA_CHECK_LAUNCH();
  return scratch->release();
}

// The tensor-core unit where the sweeps run on it, else the FMA units.
std::string bwd_unit(const Problem& problem) {
  auto a = mlstm_shape(problem);
  if (a && bwd_uses_mma(problem.dtype, a->dqk, a->dv)) return ops::tensor_core_unit(problem);
  return "f32_fma";
}

DNNB_REGISTER(register_mlstm("mlstm_bwd", run_mlstm_bwd, bwd_unit, bwd_limits));

}  // namespace
}  // namespace dnnb::cuda_kernels::mlstm
