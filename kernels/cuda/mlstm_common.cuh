// What the CUDA mLSTM kernels share (mlstm.cu, mlstm_chunkwise.cu, mlstm_step.cu, mlstm_bwd.cu;
// suites/ops/mlstm_desc.h): the problem as the kernels see it (MlstmArgs: sizes, every operand
// with its strides), the gates of one tile of the sequence, and the host side (operands from a
// call's tensors, the registration).
//
// The chunkwise recurrence (NX-AI mlstm_kernels, torch/chunkwise/native/fw.py) in tile-local
// form. For a tile of L positions t0 .. t0 + L - 1 and the stabiliser m_prev of the state C, n
// before it (0 before the first tile, the package's initial value):
//   b[p]  = sum_{u <= p} logsigmoid(f[t0 + u])        (tile-local cumulative sum, f32)
//   a[p]  = i[t0 + p] - b[p]
//   mm[p] = max(m_prev, max_{u <= p} a[u])            (a prefix max: no L x L max)
// The package's row stabiliser is m_comb[p] = b[p] + mm[p], so
//   D[p, u]   = exp(b[p] - b[u] + i[u] - m_comb[p]) = exp(a[u] - mm[p])   (u <= p)
//   inter[p]  = exp(b[p] + m_prev - m_comb[p])      = exp(m_prev - mm[p])
// and the state update (its amax = b[L-1] + max_u a[u], m_next = max(g + m_prev, amax)):
//   abar[u] = exp(a[u] - mm[L-1]), gl = exp(m_prev - mm[L-1]), m_next = b[L-1] + mm[L-1].
// Every exponent is a difference of tile-local quantities (a tile's cumulative sum, not the
// sequence's, which reaches -1e4), so f32 keeps them accurate.
//
// The outputs do not depend on the tile length in exact arithmetic: by induction m_prev after
// position t is c[t] + max(0, max_{s <= t} (i[s] - c[s])) (c the sequence's cumulative sum),
// whatever the chunking, so m_comb, h and the last states (C, n scaled by exp(-m_last)) are
// those of any chunk length; the kernels use their own tile length (64 on the tensor cores, 32
// on the FMA units) and chunk= changes only roundings.
//
// The parallel form (op mlstm) is the same computation with a second stabiliser track: its
// m[t] = c[t] + max_{s <= t} (i[s] - c[s]), i.e. r_prev instead of m_prev with r_prev = -inf
// before the first tile (mmp[p] = max(r_prev, max_{u<=p} a[u]), m[p] = b[p] + mmp[p]). With
// E = exp(mm - mmp) >= 1, its sum of C[t, s] is the chunkwise one times E, so
// n = max(|rowsum|, exp(-m)) = n_chunk E and h = acc / (n_chunk + eps / E): the parallel h,
// n and m exactly, from the chunkwise state.
#pragma once
#include <climits>
#include <cmath>
#include <functional>
#include <string>

#include "kernels/cuda/attention_operand.cuh"
#include "kernels/cuda/cuda_common.cuh"
#include "suites/ops/mlstm_desc.h"

namespace dnnb::cuda_kernels::mlstm {

// The operands (attention_operand.cuh): q, k, v, h [B, NH, S, D]; gates and per-row outputs
// [B, NH, S] have se = 0; the states: c [B, NH, DQK, DV] (row d at d ss), n [B, NH, DQK] (d at
// d ss), m [B, NH].
using attention::Operand;

// What a forward launch writes: the chunkwise form's h and last states, the parallel form's h,
// n and m, or, for mlstm_bwd (the gradient through n needs h and the branch of n's max), per
// row each block's share of dh . h (h in f32, before rounding) and sigma = d n / d rowsum:
// sign(rowsum) where |rowsum| > exp(-m), 0 where exp(-m) is larger, half the sign on a tie.
enum FwdMode : int { kModeChunk = 0, kModeParallel = 1, kModeDel = 2 };

struct MlstmArgs {
  int batch = 1, heads = 1, s = 1, dqk = 1, dv = 1;
  float scale = 1.f, eps = 1e-6f;
  Operand q, k, v, i, f;
  Operand h;                            // [B, NH, S, DV]
  Operand n_out, m_out;                 // mlstm: n, m [B, NH, S]
  Operand c_last, n_last, m_last;       // mlstm_chunkwise: the last states
  Operand dh;                           // kModeDel: [B, NH, S, DV]
  float* dh_dot = nullptr;              // kModeDel: [B, NH, S, v-column blocks]
  float* sigma = nullptr;               // kModeDel: [B, NH, S]
};

// sigma of a row from the chunk-stabilised row sum den and emc = exp(-m_comb) (the comparison
// |rowsum| vs exp(-m) of the parallel form is the same after both sides are scaled by E > 0).
__device__ __forceinline__ float row_sigma(float den, float emc) {
  const float a = fabsf(den), e = emc;
  const float sgn = den > 0.f ? 1.f : den < 0.f ? -1.f : 0.f;
  return a > e ? sgn : a < e ? 0.f : 0.5f * sgn;
}

inline constexpr float kNegInf = -INFINITY;

// logsigmoid(x) = min(x, 0) - log1p(exp(-|x|)): no overflow for any x, accurate near 0.
__device__ __forceinline__ float log_sigmoid(float x) { return fminf(x, 0.f) - log1pf(expf(-fabsf(x))); }

// Inclusive warp scans (sum, max) over the lanes in lane order (float or double).
template <typename V>
__device__ __forceinline__ V warp_scan_sum(V x, int lane) {
#pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    const V y = __shfl_up_sync(0xffffffffu, x, off);
    if (lane >= off) x += y;
  }
  return x;
}
template <typename V>
__device__ __forceinline__ V warp_scan_max(V x, int lane) {
#pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    const V y = __shfl_up_sync(0xffffffffu, x, off);
    if (lane >= off) x = fmax(x, y);
  }
  return x;
}

// logsigmoid in float64 (the gate pre-pass, below).
__device__ __forceinline__ double log_sigmoid_d(double x) { return fmin(x, 0.0) - log1p(exp(-fabs(x))); }

// The pre-pass's transcendentals. kF64: float64 exp and log1p, each result rounded once (the f32
// kernel, held to f32 fixtures). Otherwise f32 transcendentals on float64 arguments: logsigmoid
// as min(x, 0) - log1pf(expf(-|x|)) added in float64 (the log1p term is small where |x| is large,
// so its f32 error is small in absolute terms), and exp(x) = expf(x_hi) (1 + x_lo) with x = x_hi +
// x_lo (expf's own 2 ulps, not |x| ulps of a rounded argument), for the tensor-core kernels, whose
// bounds carry the dtype's rounding and whose gate warp should not stall on float64 exps.
template <bool kF64>
__device__ __forceinline__ double gate_lsig(float x) {
  if constexpr (kF64) {
    return log_sigmoid_d(static_cast<double>(x));
  } else {
    return static_cast<double>(fminf(x, 0.f)) - static_cast<double>(log1pf(expf(-fabsf(x))));
  }
}
template <bool kF64>
__device__ __forceinline__ float gate_exp(double x) {
  if constexpr (kF64) {
    return static_cast<float>(exp(x));
  } else {
    const float hi = static_cast<float>(x);
    if (fabsf(hi) == INFINITY) return expf(hi);
    const float lo = static_cast<float>(x - static_cast<double>(hi));
    const float e = expf(hi);
    return e == INFINITY ? e : fmaf(e, lo, e);
  }
}

// The gates of one tile of L positions (above), as the kernels read them from shared memory.
// The pre-pass runs in float64 (b, a, the prefix maxima, the stabilisers and every exponent;
// the exps and logsigmoid per gate_exp / gate_lsig), then rounds each value once: with forget gates near 0 a tile's b reaches -1e2..-1e3
// (an f32 ulp of 1e-5..1e-4), and m = b + mm formed in f32 would lose what the f32 fixtures'
// bound on m, n and h allows (docs/numerics.md, "mLSTM"). a and mm are kept as hi + lo floats so
// that a score's exponent a[u] - mm[p] = (a_hi - mm_hi) + (a_lo - mm_lo) is accurate to its own
// ulp, not to a's (the f32 kernel uses both parts; the tensor-core kernels the hi parts).
template <int L>
struct TileGates {
  float a[L];      // i - b; -inf past the sequence
  float a_lo[L];   // a - a_hi (0 past the sequence)
  float mm[L];     // chunkwise stabiliser (tile-local part)
  float mm_lo[L];  // mm - mm_hi
  float inter[L];  // exp(m_prev - mm): weight of the state before the tile
  float emc[L];    // exp(-m_comb), m_comb = b + mm: the package's row stabiliser
  float abar[L];   // exp(a - mm[L-1]): weight of key u in the state after the tile
  float mpar[L];   // parallel form: its m (b + mmp)
  float epar[L];   // parallel form: exp(-m)
  float epsf[L];   // parallel form: 1 / E = exp(mmp - mm), the factor on eps
  float gl;        // exp(m_prev - mm[L-1]): the decay of the state over the tile
};

// Raw gate values of one tile for lane `lane` of a warp (positions lane + 32 j), loaded by the
// warp that prepares the gates one tile ahead of their use.
template <int L>
struct GateRegs {
  float i[L / 32], f[L / 32];
};

template <int L>
__device__ __forceinline__ void load_gate_regs(GateRegs<L>& r, const float* ig, const float* fg, int64_t i_ss,
                                               int64_t f_ss, int t0, int s, int lane) {
#pragma unroll
  for (int j = 0; j < L / 32; ++j) {
    const int t = t0 + lane + 32 * j;
    r.i[j] = t < s ? ig[static_cast<int64_t>(t) * i_ss] : 0.f;
    r.f[j] = t < s ? fg[static_cast<int64_t>(t) * f_ss] : 0.f;
  }
}

// float64 -> hi + lo floats (lo = 0 where hi is infinite).
__device__ __forceinline__ void split_d(double x, float& hi, float& lo) {
  hi = static_cast<float>(x);
  lo = fabsf(hi) == INFINITY ? 0.f : static_cast<float>(x - static_cast<double>(hi));
}

// One warp turns a tile's raw gates into TileGates and advances the stabilisers m_prev (the
// chunkwise one) and r_prev (the parallel form's), which every lane holds in float64. Positions
// past the sequence (t0 + p >= s) add nothing to b and have a = -inf, so the weights of their
// keys are 0.
template <int L, bool kF64>
__device__ __forceinline__ void prep_gates(TileGates<L>& gt, const GateRegs<L>& r, int t0, int s, int lane,
                                           double& m_prev, double& r_prev) {
  const double ninf = -static_cast<double>(INFINITY);
  double carry_b = 0.0, carry_a = ninf;
  double mm_last = 0.0, mmp_last = 0.0, b_last = 0.0;
  double av[L / 32];
#pragma unroll
  for (int j = 0; j < L / 32; ++j) {
    const int p = lane + 32 * j;
    const bool valid = t0 + p < s;
    const double ls = valid ? gate_lsig<kF64>(r.f[j]) : 0.0;
    const double b = warp_scan_sum(ls, lane) + carry_b;
    const double a = valid ? static_cast<double>(r.i[j]) - b : ninf;
    const double amax = fmax(warp_scan_max(a, lane), carry_a);
    carry_b = __shfl_sync(0xffffffffu, b, 31);
    carry_a = __shfl_sync(0xffffffffu, amax, 31);
    const double mm = fmax(m_prev, amax);
    const double mmp = fmax(r_prev, amax);
    av[j] = a;
    split_d(a, gt.a[p], gt.a_lo[p]);
    split_d(mm, gt.mm[p], gt.mm_lo[p]);
    gt.inter[p] = gate_exp<kF64>(m_prev - mm);
    gt.emc[p] = gate_exp<kF64>(-(b + mm));
    gt.mpar[p] = static_cast<float>(b + mmp);
    gt.epar[p] = gate_exp<kF64>(-(b + mmp));
    gt.epsf[p] = mmp == ninf ? 0.f : gate_exp<kF64>(mmp - mm);
    mm_last = __shfl_sync(0xffffffffu, mm, 31);
    mmp_last = __shfl_sync(0xffffffffu, mmp, 31);
    b_last = carry_b;
  }
#pragma unroll
  for (int j = 0; j < L / 32; ++j) gt.abar[lane + 32 * j] = gate_exp<kF64>(av[j] - mm_last);
  if (lane == 0) gt.gl = gate_exp<kF64>(m_prev - mm_last);
  m_prev = b_last + mm_last;
  r_prev = b_last + mmp_last;
}

// h's normaliser of a row: max(|den|, exp(-m_comb)) (the package's n of the chunkwise form),
// from emc = exp(-m_comb).
__device__ __forceinline__ float row_norm(float den, float emc) { return fmaxf(fabsf(den), emc); }

// ---------------------------------------------------------------------------------------------
// Host side.

inline Result<Operand> operand_of(const Tensor& t, DType dtype, const Shape& shape, const std::string& op,
                                  const char* name) {
  DNNB_TRY(expect_tensor(t, dtype, name));
  if (t.shape != shape || t.strides.size() != shape.size())
    return Status::bad_input("cuda " + op + ": " + name + " is " + t.describe() + ", expected shape " +
                             shape_to_string(shape));
  Operand o;
  o.data = data_ptr<unsigned char>(t);
  const auto& s = t.strides;
  if (shape.size() >= 1) o.sb = s[0];
  if (shape.size() >= 2) o.sh = s[1];
  if (shape.size() >= 3) o.ss = s[2];
  if (shape.size() >= 4) o.se = s[3];
  return o;
}

// The sizes of a problem; unsupported where the kernels' 32-bit indices do not reach.
inline Result<MlstmArgs> mlstm_shape(const Problem& problem) {
  auto d = ops::mlstm_desc(problem);
  if (!d) return d.status();
  if (d->s > (1 << 30) || d->dqk > (1 << 20) || d->dv > (1 << 20) || d->batch * d->heads > INT_MAX / 64)
    return Status::unsupported("cuda " + problem.op + ": " + problem.to_string() +
                               " exceeds the kernels' 32-bit indices");
  MlstmArgs a;
  a.batch = static_cast<int>(d->batch);
  a.heads = static_cast<int>(d->heads);
  a.s = static_cast<int>(d->s);
  a.dqk = static_cast<int>(d->dqk);
  a.dv = static_cast<int>(d->dv);
  a.scale = static_cast<float>(d->scale());
  a.eps = static_cast<float>(d->eps);
  return a;
}

// The inputs q, k, v, i, f of mlstm and mlstm_chunkwise and the counts of a call's operands.
inline Result<MlstmArgs> mlstm_inputs(const OpCall& call, size_t n_out) {
  auto a = mlstm_shape(call.problem);
  if (!a) return a.status();
  auto d = ops::mlstm_desc(call.problem);
  const std::string& op = call.problem.op;
  if (call.inputs.size() != 5 || call.outputs.size() != n_out)
    return Status::bad_input("cuda " + op + ": " + std::to_string(call.inputs.size()) + " inputs and " +
                             std::to_string(call.outputs.size()) + " outputs, the signature has 5 and " +
                             std::to_string(n_out));
  const DType t = call.problem.dtype;
  auto q = operand_of(call.inputs[0], t, ops::mlstm_qk_shape(*d), op, "q");
  auto k = operand_of(call.inputs[1], t, ops::mlstm_qk_shape(*d), op, "k");
  auto v = operand_of(call.inputs[2], t, ops::mlstm_v_shape(*d), op, "v");
  auto i = operand_of(call.inputs[3], DType::f32, ops::mlstm_gate_shape(*d), op, "i");
  auto f = operand_of(call.inputs[4], DType::f32, ops::mlstm_gate_shape(*d), op, "f");
  for (const auto* r : {&q, &k, &v, &i, &f})
    if (!*r) return r->status();
  a->q = *q, a->k = *k, a->v = *v, a->i = *i, a->f = *f;
  auto h = operand_of(call.outputs[0], t, ops::mlstm_v_shape(*d), op, "h");
  if (!h) return h.status();
  a->h = *h;
  return a;
}

// Registers the CUDA default of an mLSTM op (f32, f16, bf16) with its arithmetic unit per
// problem; `extra` adds the op's own shape limits to supports().
inline bool register_mlstm(const std::string& op, std::function<Status(OpCall&)> run,
                           std::function<std::string(const Problem&)> unit,
                           std::function<Status(const Problem&)> extra) {
  Implementation impl;
  impl.op = op;
  impl.backend = "cuda";
  impl.dtypes = {DType::f32, DType::f16, DType::bf16};
  impl.supports = [op, extra](const Problem& problem, const DeviceRuntime& device) {
    if (device.info().kind != DeviceKind::cuda)
      return Status::unsupported("cuda kernels run on CUDA devices, not " + device.info().id);
    if (problem.dtype != DType::f32 && problem.dtype != DType::f16 && problem.dtype != DType::bf16)
      return Status::unsupported("cuda " + op + " has no " + dtype_name(problem.dtype) + " kernel");
    auto a = mlstm_shape(problem);
    if (!a) return a.status();
    return extra ? extra(problem) : Status::ok();
  };
  impl.run = std::move(run);
  impl.compute_unit_for = [unit = std::move(unit)](const Problem& problem, const DeviceRuntime&) {
    return unit(problem);
  };
  return Registry::instance().add_implementation(std::move(impl));
}

}  // namespace dnnb::cuda_kernels::mlstm
