// What the CUDA attention kernels share (sdpa.cu, sdpa_bwd.cu): the problem as the kernels see
// it (Attn: sizes, the score rule, every operand with its four strides), the score rule itself
// (scale, softcap, the causal/window visibility and the additive mask, in that order, as
// reference/sdpa.cpp), the key range of a query block and the query range of a key block (the
// tiles the causal and window rules leave out), and the host side: operands from the call's
// tensors and the registration.
//
// Exponentials are exp2f(s log2e - m log2e), FlashAttention's form: one FMA and one ex2 per
// score. Every kernel forms the shift as m * kLog2e in f32 once per row, and lse as
// (m * kLog2e + log2(l)) ln 2, so exp2(s log2e - lse log2e) in the backward is p up to the
// rounding of lse (the tolerance's 4 u |lse| term, docs/conformance.md).
#pragma once
#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <string>

#include "kernels/cuda/attention_operand.cuh"
#include "kernels/cuda/cuda_common.cuh"
#include "suites/ops/sdpa_desc.h"

namespace dnnb::cuda_kernels::sdpa {

// The operands (attention_operand.cuh): q, k, v, o, do, dq, dk, dv [B, H, S, D]; lse [B, H, S]
// has se = 0; the mask [Sq, Sk] has sb = sh = 0, (i, j) at i ss + j se.
using attention::Operand;

struct Attn {
  int batch = 1, heads = 1, kv_heads = 1, group = 1;
  int sq = 1, sk = 1, d = 1, dv = 1;
  bool causal = false;
  int window = 0;  // > 0: also keys j > i - window
  float scale = 1.f;
  float softcap = 0.f;           // > 0: s -> softcap tanh(s / softcap)
  float softcap_inv = 0.f;       // 1 / softcap: a multiply in the loops (an IEEE division is a call)
  Operand q, k, v, mask;         // mask.data null without mask=1
  Operand o, lse;                // forward outputs; backward inputs
  Operand dout, dq, dk, dv_out;  // backward
  float* delta = nullptr;        // backward workspace: D_i = do_i . o_i, [B, H, Sq] contiguous
};

inline constexpr float kLn2 = 0.693147180559945309f;

// Key j visible to query i: both inside their lengths, then the causal and window rules.
__device__ __forceinline__ bool visible(const Attn& p, int i, int j) {
  return i < p.sq && j < p.sk && (!p.causal || j <= i) && (p.window == 0 || j > i - p.window);
}

// The raw dot product q_i . k_j scaled and softcapped; dcap is the softcap's derivative
// 1 - tanh^2 (1 without softcap).
__device__ __forceinline__ float capped_score(const Attn& p, float dot, float& dcap) {
  float s = dot * p.scale;
  dcap = 1.f;
  if (p.softcap > 0.f) {
    const float th = tanhf(s * p.softcap_inv);
    s = p.softcap * th;
    dcap = 1.f - th * th;
  }
  return s;
}

// The final score of (i, j) from the raw dot product: capped_score, -inf where not visible,
// plus the mask.
template <typename T>
__device__ __forceinline__ float final_score(const Attn& p, float dot, int i, int j, float& dcap) {
  float s = capped_score(p, dot, dcap);
  if (!visible(p, i, j)) return -INFINITY;
  if (p.mask.data != nullptr)
    s += to_float(
        static_cast<const T*>(p.mask.data)[static_cast<int64_t>(i) * p.mask.ss + static_cast<int64_t>(j) * p.mask.se]);
  return s;
}

// Keys [lo, hi) that rows i_first .. i_last (inclusive, i_last < sq) may see; hi <= lo: none.
__host__ __device__ __forceinline__ void key_range(const Attn& p, int i_first, int i_last, int& lo, int& hi) {
  lo = 0;
  hi = p.sk;
  if (p.causal) hi = hi < i_last + 1 ? hi : i_last + 1;
  if (p.window > 0) lo = i_first - p.window + 1 > 0 ? i_first - p.window + 1 : 0;
}

// Queries [lo, hi) that may see keys j_first .. j_last (inclusive, j_last < sk): causal needs
// i >= j, the window i < j + window.
__host__ __device__ __forceinline__ void query_range(const Attn& p, int j_first, int j_last, int& lo, int& hi) {
  lo = p.causal ? j_first : 0;
  hi = p.sq;
  if (p.window > 0) hi = hi < j_last + p.window ? hi : j_last + p.window;
}

// The rows of the online softmax: the shift of a row whose max is m (0 for a row with no finite
// score yet, so that exp2 of -inf scores stays 0 and nothing becomes NaN).
__device__ __forceinline__ float row_shift(float m) { return m == -INFINITY ? 0.f : m * kLog2e; }

// lse of a row from its max m and sum l of exp2(s log2e - row_shift(m)); -inf for an empty row.
__device__ __forceinline__ float row_lse(float m, float l) {
  return l > 0.f ? (row_shift(m) + log2f(l)) * kLn2 : -INFINITY;
}

// ---------------------------------------------------------------------------------------------
// Host side.

inline Result<Operand> operand_of(const Tensor& t, DType dtype, const Shape& shape, const char* name) {
  DNNB_TRY(expect_tensor(t, dtype, name));
  if (t.shape != shape || t.strides.size() != shape.size())
    return Status::bad_input(std::string("cuda sdpa: ") + name + " is " + t.describe() + ", expected shape " +
                             shape_to_string(shape));
  Operand op;
  op.data = data_ptr<unsigned char>(t);
  const auto& s = t.strides;
  if (shape.size() == 4) {
    op.sb = s[0], op.sh = s[1], op.ss = s[2], op.se = s[3];
  } else if (shape.size() == 3) {
    op.sb = s[0], op.sh = s[1], op.ss = s[2];
  } else {
    op.ss = s[0], op.se = s[1];
  }
  return op;
}

// The sizes and rule of a problem (no operands yet); unsupported where the kernels' int
// indices or the head dims they hold in registers do not reach.
inline Result<Attn> attn_shape(const Problem& problem) {
  auto d = ops::sdpa_desc(problem);
  if (!d) return d.status();
  if (d->d > 256 || d->dv > 256)
    return Status::unsupported(
        "cuda sdpa: head dims up to 256 (the kernels keep a row of the output in registers), got D=" +
        std::to_string(d->d) + ", Dv=" + std::to_string(d->dv));
  const int64_t rows = d->batch * d->heads * std::max(d->sq, d->sk);
  if (d->sq > (1 << 30) || d->sk > (1 << 30) || rows > INT_MAX || d->window > (1 << 30))
    return Status::unsupported("cuda sdpa: " + problem.to_string() + " exceeds the kernels' 32-bit row indices");
  Attn a;
  a.batch = static_cast<int>(d->batch);
  a.heads = static_cast<int>(d->heads);
  a.kv_heads = static_cast<int>(d->kv_heads);
  a.group = static_cast<int>(d->group());
  a.sq = static_cast<int>(d->sq);
  a.sk = static_cast<int>(d->sk);
  a.d = static_cast<int>(d->d);
  a.dv = static_cast<int>(d->dv);
  a.causal = d->causal;
  a.window = static_cast<int>(d->window);
  a.scale = static_cast<float>(d->scale);
  a.softcap = static_cast<float>(d->softcap);
  a.softcap_inv = d->softcap > 0 ? static_cast<float>(1.0 / d->softcap) : 0.f;
  return a;
}

// The problem with its input operands q, k, v[, mask] (and, for the backward, o, do, lse).
inline Result<Attn> attn_inputs(const OpCall& call, bool backward) {
  auto a = attn_shape(call.problem);
  if (!a) return a.status();
  auto d = ops::sdpa_desc(call.problem);
  const DType t = call.problem.dtype;
  const size_t n_in = 3 + (d->mask ? 1 : 0) + (backward ? 3 : 0);
  const size_t n_out = backward ? 3 : 2;
  if (call.inputs.size() != n_in || call.outputs.size() != n_out)
    return Status::bad_input("cuda " + call.problem.op + ": " + std::to_string(call.inputs.size()) + " inputs and " +
                             std::to_string(call.outputs.size()) + " outputs, the signature has " +
                             std::to_string(n_in) + " and " + std::to_string(n_out));
  size_t i = 0;
  auto next = [&](Operand& dst, DType dtype, const Shape& shape, const char* name) -> Status {
    auto op = operand_of(call.inputs[i++], dtype, shape, name);
    if (!op) return op.status();
    dst = *op;
    return Status::ok();
  };
  DNNB_TRY(next(a->q, t, ops::sdpa_q_shape(*d), "q"));
  DNNB_TRY(next(a->k, t, ops::sdpa_k_shape(*d), "k"));
  DNNB_TRY(next(a->v, t, ops::sdpa_v_shape(*d), "v"));
  if (d->mask) DNNB_TRY(next(a->mask, t, ops::sdpa_mask_shape(*d), "mask"));
  if (backward) {
    DNNB_TRY(next(a->o, t, ops::sdpa_o_shape(*d), "o"));
    DNNB_TRY(next(a->dout, t, ops::sdpa_o_shape(*d), "do"));
    DNNB_TRY(next(a->lse, DType::f32, ops::sdpa_lse_shape(*d), "lse"));
  }
  return a;
}

// Whether the f16/bf16 tensor-core forward (sdpa_mma.cuh) takes these head dims.
inline bool mma_head_dims(int d, int dv) {
  return (d == 64 || d == 128 || d == 256) && (dv == 32 || dv == 64 || dv == 128 || dv == 256);
}

// Registers the CUDA default of an attention op (f32, f16, bf16) with its arithmetic unit per
// problem and its workspace.
inline bool register_attention(const std::string& op, std::function<Status(OpCall&)> run,
                               std::function<std::string(const Problem&)> unit,
                               std::function<Result<size_t>(const Problem&, const DeviceRuntime&)> workspace) {
  Implementation impl;
  impl.op = op;
  impl.backend = "cuda";
  impl.dtypes = {DType::f32, DType::f16, DType::bf16};
  impl.supports = [op](const Problem& problem, const DeviceRuntime& device) {
    if (device.info().kind != DeviceKind::cuda)
      return Status::unsupported("cuda kernels run on CUDA devices, not " + device.info().id);
    if (problem.dtype != DType::f32 && problem.dtype != DType::f16 && problem.dtype != DType::bf16)
      return Status::unsupported("cuda " + op + " has no " + dtype_name(problem.dtype) + " kernel");
    auto a = attn_shape(problem);
    return a ? Status::ok() : a.status();
  };
  impl.run = std::move(run);
  impl.compute_unit_for = [unit = std::move(unit)](const Problem& problem, const DeviceRuntime&) {
    return unit(problem);
  };
  impl.workspace_bytes = std::move(workspace);
  return Registry::instance().add_implementation(std::move(impl));
}

}  // namespace dnnb::cuda_kernels::sdpa
