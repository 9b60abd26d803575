// CUDA mlstm_step: one recurrent step of the mLSTM for decode (suites/ops/mlstm_desc.h; NX-AI
// mlstm_kernels torch/recurrent/native_step.py):
//   m' = max(logsigmoid(f) + m, i),  a = exp(logsigmoid(f) + m - m'),  b = exp(i - m')
//   C' = a C + b k v^T,  n' = a n + b k,  h = (scale q) C' / (max(|(scale q) . n'|, exp(-m')) + eps)
// Memory-bound: reading C and writing C' (DQK x DV f32 per head) is nearly every byte. A block
// of 256 threads takes 64 columns of one head's C: thread (x, y) = (column, row group) streams
// rows y, y + 4, ... of its column (a warp reads 128 contiguous bytes of a row), 8 rows in flight,
// and sums q . C' for h; the 4 row groups' sums are added in a fixed order. Every block forms
// a, b and q . n' itself (DQK values, from L2). C' may be C itself (each element is read and
// written by one thread); when n' or m' share memory with n or m, a second launch writes them
// after every block has read the old values.
// All arithmetic in f32: C' and n' are not rounded to the dtype before the products with q (the
// package's step rounds them; the tolerance allows either, docs/numerics.md "mLSTM").
#include "kernels/cuda/mlstm_common.cuh"

namespace dnnb::cuda_kernels::mlstm {
namespace {

inline constexpr int kStepCols = 64, kStepGroups = 4, kStepThreads = kStepCols * kStepGroups;

struct StepArgs {
  int batch = 1, heads = 1, dqk = 1, dv = 1;
  float scale = 1.f, eps = 1e-6f;
  Operand q, k, v, i, f, c, n, m;  // inputs ([B, NH, DQK] etc.: the last dim's stride in ss)
  Operand h, c_new, n_new, m_new;  // outputs
};

struct StepGates {
  float m_new, a, b, em;  // em = exp(-m')
};

// The gates in float64, each rounded once: h = q C' / q n' is as sensitive to a as to C and n
// themselves (a few ulps of a move h by as much on the fixtures), so a, b and exp(-m') are
// correctly rounded rather than f32 expressions of f32 exps.
__device__ __forceinline__ StepGates step_gates(const StepArgs& p, int b, int h) {
  const double lf = log_sigmoid_d(*p.f.head<const float>(b, h));
  const double m = *p.m.head<const float>(b, h);
  const double ig = *p.i.head<const float>(b, h);
  const double mn = fmax(lf + m, ig);
  StepGates g;
  g.m_new = static_cast<float>(mn);
  g.a = static_cast<float>(exp(lf + m - mn));
  g.b = static_cast<float>(exp(ig - mn));
  g.em = static_cast<float>(exp(-mn));
  return g;
}

// kWriteNM: this launch also writes n' and m' (block 0 of each head), when they do not alias n, m.
template <typename T, bool kWriteNM>
__global__ void __launch_bounds__(kStepThreads) mlstm_step_kernel(const StepArgs p) {
  extern __shared__ __align__(16) unsigned char smem[];
  float* qs = reinterpret_cast<float*>(smem);  // scale q, [DQK]
  float* ks = qs + p.dqk;                      // k, [DQK]
  __shared__ float red[kStepGroups][kStepCols];
  __shared__ float warp_qn[kStepThreads / 32];
  const int dv_tiles = (p.dv + kStepCols - 1) / kStepCols;
  const int dvt = static_cast<int>(blockIdx.x) % dv_tiles;
  const int bh = static_cast<int>(blockIdx.x) / dv_tiles;
  const int b = bh / p.heads, h = bh % p.heads;
  const StepGates g = step_gates(p, b, h);

  const T* qg = p.q.head<const T>(b, h);
  const T* kg = p.k.head<const T>(b, h);
  const float* ng = p.n.head<const float>(b, h);
  float qn = 0.f;
  for (int d = threadIdx.x; d < p.dqk; d += kStepThreads) {
    const float qd = to_float(qg[static_cast<int64_t>(d) * p.q.ss]) * p.scale;
    const float kd = to_float(kg[static_cast<int64_t>(d) * p.k.ss]);
    const float nn = fmaf(g.a, ng[static_cast<int64_t>(d) * p.n.ss], g.b * kd);
    qs[d] = qd;
    ks[d] = kd;
    qn = fmaf(qd, nn, qn);
    if (kWriteNM && dvt == 0) p.n_new.head<float>(b, h)[static_cast<int64_t>(d) * p.n_new.ss] = nn;
  }
  for (int o = 16; o > 0; o /= 2) qn += __shfl_xor_sync(0xffffffffu, qn, o);
  if ((threadIdx.x & 31) == 0) warp_qn[threadIdx.x >> 5] = qn;
  __syncthreads();
  qn = 0.f;
#pragma unroll
  for (int w = 0; w < kStepThreads / 32; ++w) qn += warp_qn[w];

  const int x = threadIdx.x % kStepCols, y = threadIdx.x / kStepCols;
  const int j = dvt * kStepCols + x;
  const bool valid = j < p.dv;
  const float bv = valid ? g.b * to_float(p.v.head<const T>(b, h)[static_cast<int64_t>(j) * p.v.ss]) : 0.f;
  const float* cg = p.c.head<const float>(b, h) + static_cast<int64_t>(j) * p.c.se;
  float* cng = p.c_new.head<float>(b, h) + static_cast<int64_t>(j) * p.c_new.se;
  float acc = 0.f;
  if (valid) {
    int d = y;
    // 8 rows in flight per thread, then the rest.
    for (; d + 7 * kStepGroups < p.dqk; d += 8 * kStepGroups) {
      float cv[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) cv[u] = cg[static_cast<int64_t>(d + u * kStepGroups) * p.c.ss];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int dd = d + u * kStepGroups;
        const float cn = fmaf(g.a, cv[u], ks[dd] * bv);
        cng[static_cast<int64_t>(dd) * p.c_new.ss] = cn;
        acc = fmaf(qs[dd], cn, acc);
      }
    }
    for (; d < p.dqk; d += kStepGroups) {
      const float cn = fmaf(g.a, cg[static_cast<int64_t>(d) * p.c.ss], ks[d] * bv);
      cng[static_cast<int64_t>(d) * p.c_new.ss] = cn;
      acc = fmaf(qs[d], cn, acc);
    }
  }
  red[y][x] = acc;
  __syncthreads();
  if (y == 0 && valid) {
    float s = red[0][x];
#pragma unroll
    for (int r = 1; r < kStepGroups; ++r) s += red[r][x];
    const float nrm = fmaxf(fabsf(qn), g.em);
    p.h.head<T>(b, h)[static_cast<int64_t>(j) * p.h.ss] = from_float<T>(s / (nrm + p.eps));
  }
  if (kWriteNM && dvt == 0 && threadIdx.x == 0) *p.m_new.head<float>(b, h) = g.m_new;
}

// n' and m' after the step kernel, when they alias n and m: a block per head.
template <typename T>
__global__ void __launch_bounds__(128) mlstm_step_nm_kernel(const StepArgs p) {
  const int bh = static_cast<int>(blockIdx.x);
  const int b = bh / p.heads, h = bh % p.heads;
  const StepGates g = step_gates(p, b, h);
  __syncthreads();  // every thread has read m before thread 0 writes m'
  const float* ng = p.n.head<const float>(b, h);
  const T* kg = p.k.head<const T>(b, h);
  float* nng = p.n_new.head<float>(b, h);
  for (int d = threadIdx.x; d < p.dqk; d += blockDim.x) {
    const float kd = to_float(kg[static_cast<int64_t>(d) * p.k.ss]);
    nng[static_cast<int64_t>(d) * p.n_new.ss] = fmaf(g.a, ng[static_cast<int64_t>(d) * p.n.ss], g.b * kd);
  }
  if (threadIdx.x == 0) *p.m_new.head<float>(b, h) = g.m_new;
}

bool overlaps(const Tensor& a, const Tensor& b) {
  const char* pa = data_ptr<char>(a);
  const char* pb = data_ptr<char>(b);
  const size_t na = storage_bytes(a.dtype, a.storage_span()), nb = storage_bytes(b.dtype, b.storage_span());
  return pa < pb + nb && pb < pa + na;
}

Status run_mlstm_step(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto d = ops::mlstm_desc(call.problem);
  if (!d) return d.status();
  const std::string& op = call.problem.op;
  if (call.inputs.size() != 8 || call.outputs.size() != 4)
    return Status::bad_input("cuda " + op + ": " + std::to_string(call.inputs.size()) + " inputs and " +
                             std::to_string(call.outputs.size()) + " outputs, the signature has 8 and 4");
  const DType t = call.problem.dtype;
  const Shape qk = {d->batch, d->heads, d->dqk}, vv = {d->batch, d->heads, d->dv}, gate = {d->batch, d->heads};
  StepArgs a;
  a.batch = static_cast<int>(d->batch);
  a.heads = static_cast<int>(d->heads);
  a.dqk = static_cast<int>(d->dqk);
  a.dv = static_cast<int>(d->dv);
  a.scale = static_cast<float>(d->scale());
  a.eps = static_cast<float>(d->eps);
  struct Slot {
    Operand* dst;
    const Tensor* t;
    DType dtype;
    Shape shape;
    const char* name;
  };
  const Slot slots[] = {{&a.q, &call.inputs[0], t, qk, "q"},
                        {&a.k, &call.inputs[1], t, qk, "k"},
                        {&a.v, &call.inputs[2], t, vv, "v"},
                        {&a.i, &call.inputs[3], DType::f32, gate, "i"},
                        {&a.f, &call.inputs[4], DType::f32, gate, "f"},
                        {&a.c, &call.inputs[5], DType::f32, ops::mlstm_c_state_shape(*d), "c"},
                        {&a.n, &call.inputs[6], DType::f32, ops::mlstm_n_state_shape(*d), "n"},
                        {&a.m, &call.inputs[7], DType::f32, ops::mlstm_m_state_shape(*d), "m"},
                        {&a.h, &call.outputs[0], t, vv, "h"},
                        {&a.c_new, &call.outputs[1], DType::f32, ops::mlstm_c_state_shape(*d), "c_new"},
                        {&a.n_new, &call.outputs[2], DType::f32, ops::mlstm_n_state_shape(*d), "n_new"},
                        {&a.m_new, &call.outputs[3], DType::f32, ops::mlstm_m_state_shape(*d), "m_new"}};
  for (const Slot& s : slots) {
    auto o = operand_of(*s.t, s.dtype, s.shape, op, s.name);
    if (!o) return o.status();
    *s.dst = *o;
  }
  const bool separate = !overlaps(call.outputs[2], call.inputs[6]) && !overlaps(call.outputs[3], call.inputs[7]) &&
                        !overlaps(call.outputs[2], call.inputs[7]) && !overlaps(call.outputs[3], call.inputs[6]);
  const int64_t blocks = d->batch * d->heads * ceil_div(d->dv, kStepCols);
  if (blocks > INT_MAX) return Status::unsupported("cuda " + op + ": " + std::to_string(blocks) + " blocks exceed the grid");
  const size_t smem = sizeof(float) * 2 * static_cast<size_t>(a.dqk);
  const CudaDevice& dev = **device;
  DNNB_TRY(dispatch_float(t, [&](auto tag) -> Status {
    using T = decltype(tag);
    auto kernel = separate ? mlstm_step_kernel<T, true> : mlstm_step_kernel<T, false>;
    DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    kernel<<<static_cast<unsigned>(blocks), kStepThreads, smem, dev.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
    if (!separate) {
      mlstm_step_nm_kernel<T><<<static_cast<unsigned>(d->batch * d->heads), 128, 0, dev.stream()>>>(a);
      DNNB_CUDA_CHECK_LAUNCH();
    }
    return Status::ok();
  }));
  return Status::ok();
}

// q, k and the state rows in shared memory: 2 DQK floats.
Status step_limits(const Problem& problem) {
  auto d = ops::mlstm_desc(problem);
  if (!d) return d.status();
  if (d->dqk > 16384)
    return Status::unsupported("cuda mlstm_step: DQK up to 16384 (q and k in shared memory), got " +
                               std::to_string(d->dqk));
  return Status::ok();
}

DNNB_REGISTER(register_mlstm("mlstm_step", run_mlstm_step, [](const Problem&) { return std::string("f32_fma"); },
                             step_limits));

}  // namespace
}  // namespace dnnb::cuda_kernels::mlstm
