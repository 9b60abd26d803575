// CUDA kv_cache: what both decode kernels share (the block's work, the store, the block merge,
// the split combine) and the FMA decode kernel. kv_cache.cu holds the tensor-core decode kernel,
// the plan, the launches and the registration; docs/cuda.md, family 3, has the overview.
//
// One decode launch does the step: a block per (sequence b, kv head g, head chunk, split) reads
// positions [lo, hi) of its sequence's caches (hi <= pos[b] + 1, so no position past the length
// is ever read; with window=, lo >= pos[b] - window + 1) for up to 8 query heads of the group at once, each key and value row read once
// for all of them. The block whose range holds pos[b] first writes the token's k and v rows into
// both caches (store_token: the exact rounding of each cache format) and passes a barrier, so its
// own reads of that row see the stored value. Each warp keeps an online softmax (max, sum,
// weighted sum of values in f32, scores in the log2 domain: exp2f(s log2e - m)); the block merges
// its 4 warps through shared memory in warp order and writes either o (one split) or the split's
// normalised partial o and its log2-sum-exp into the workspace, which kv_combine_kernel merges.
// No atomics: results are the same run to run.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels::kv {

inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * 32;
inline constexpr int kTile = 16;      // positions of one mma step of a warp; splits are multiples
inline constexpr int kMaxD = 256;     // head dims the kernels hold in registers
inline constexpr int kMaxHeads = 8;   // query heads per block (one mma N tile)
inline constexpr int kMaxSplits = 128;

// Operands and the launch's decomposition. Token and output strides in elements; caches
// contiguous [B, KV, C, D] rows of row_bytes.
struct KvArgs {
  const void* q;
  int64_t q_sb, q_sh, q_se;
  const void* k;
  int64_t k_sb, k_sh, k_se;
  const void* v;
  int64_t v_sb, v_sh, v_se;
  void* o;
  int64_t o_sb, o_sh, o_se;
  const int32_t* pos;
  unsigned char* k_cache;
  unsigned char* v_cache;
  const float* k_scale;  // f8_e4m3fn caches only
  const float* v_scale;
  float* part_o;    // [B, H, splits, D] f32 (splits > 1)
  float* part_lse;  // [B, H, splits] f32, log2 domain
  int64_t row_bytes;
  int batch, heads, kv_heads, group, capacity, d;
  int chunk_heads, head_chunks;  // query heads per block, blocks per kv head
  int splits, chunk;             // position ranges per sequence and their length
  int lane_shift;                // fma kernel: log2 of the lanes per cache row
  float scale_log2e;             // score scale times log2(e)
  float cap_log2e;               // softcap= times log2(e); 0: no softcap
  int window;                    // window=: positions > pos - window only; 0: all
};

// A score in the log2 domain (s log2e) capped as Gemma 2's attention caps s (c tanh(s / c)):
// (c log2e) tanh(s log2e / (c log2e)). Applied before the masking of positions past the range.
__device__ __forceinline__ float cap_score(const KvArgs& a, float s) {
  return a.cap_log2e > 0.f ? a.cap_log2e * tanhf(s / a.cap_log2e) : s;
}

// What one block does.
struct Work {
  int b, kvh, h0, hn, split;
  int lo, hi;  // positions read: [lo, hi)
  int pos;
  bool store;  // the block's range holds pos: it writes the token first
};

__device__ __forceinline__ Work work_of(const KvArgs& a) {
  Work w;
  int idx = blockIdx.x;
  w.split = idx % a.splits;
  idx /= a.splits;
  const int hc = idx % a.head_chunks;
  idx /= a.head_chunks;
  w.kvh = idx % a.kv_heads;
  w.b = idx / a.kv_heads;
  w.h0 = w.kvh * a.group + hc * a.chunk_heads;
  w.hn = min(a.chunk_heads, a.group - hc * a.chunk_heads);
  w.pos = a.pos[w.b];
  // A position outside the cache is refused by the reference before any run; here it only must
  // not write out of bounds: nothing is stored and the reads stop at the capacity.
  const bool inside = w.pos >= 0 && w.pos < a.capacity;
  const int n = w.pos < 0 ? 0 : (inside ? w.pos + 1 : a.capacity);
  const int start = w.split * a.chunk;
  const int first = a.window > 0 && inside ? max(w.pos - a.window + 1, 0) : 0;  // the sliding window
  w.lo = max(start, first);  // a split wholly before the window reads nothing (an empty range)
  w.hi = min(start + a.chunk, n);
  w.store = inside && w.pos >= start && w.pos - start < a.chunk;
  return w;
}

__device__ __forceinline__ uint4 ldcg16(const unsigned char* p) { return __ldcg(reinterpret_cast<const uint4*>(p)); }

__device__ __forceinline__ uint32_t word_of(const uint4& v, int i) {
  return i == 0 ? v.x : (i == 1 ? v.y : (i == 2 ? v.z : v.w));
}

// ---------------------------------------------------------------------------------------------
// The store: reference::store_cache_row bit for bit.

// f32 -> f8_e4m3fn as core/dtype.cpp's encode_narrow_float with kToE4m3fn: round to nearest even
// from the exact f32 (subnormals included); NaN -> 0x7F with the sign; finite values that round
// past 448, and +-Inf, give +-448 (0x7E / 0xFE). Integer arithmetic only: the hardware's
// cvt.rn.satfinite has its own NaN and range rules, not the reference's.
__device__ __forceinline__ uint8_t f32_to_e4m3(float value) {
  const uint32_t bits = __float_as_uint(value);
  const uint32_t sign = (bits >> 31) << 7;
  const uint32_t mag = bits & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return static_cast<uint8_t>(sign | 0x7F);
  if (mag == 0x7F800000u) return static_cast<uint8_t>(sign | 0x7E);
  const uint32_t field = mag >> 23, fraction = mag & 0x7FFFFFu;
  const int exponent = field == 0 ? -126 : static_cast<int>(field) - 127;
  const uint32_t significand = field == 0 ? fraction : (fraction | 0x800000u);
  const int target = max(exponent, -6);                   // e4m3's smallest normal exponent
  const int shift = (target - 3) - (exponent - 23);        // >= 20
  uint32_t quanta = 0;
  if (shift <= 24) {  // else the value is below half the smallest subnormal: 0
    quanta = significand >> shift;
    const uint32_t rest = significand & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (quanta & 1u))) ++quanta;
  }
  const int encoded = ((target + 6) << 3) + static_cast<int>(quanta);
  return static_cast<uint8_t>(sign | (encoded > 0x7E ? 0x7Eu : static_cast<uint32_t>(encoded)));
}

// One element of a scalar cache format.
template <DType C>
__device__ __forceinline__ void store_scalar(unsigned char* row, int e, float x, float scale) {
  if constexpr (C == DType::f32) {
    reinterpret_cast<float*>(row)[e] = x;
  } else if constexpr (C == DType::f16) {
    reinterpret_cast<__half*>(row)[e] = __float2half_rn(x);
  } else if constexpr (C == DType::bf16) {
    reinterpret_cast<__nv_bfloat16*>(row)[e] = __float2bfloat16_rn(x);
  } else {
    row[e] = f32_to_e4m3(x / scale);  // IEEE division (-prec-div=true), as the host's x / scale
  }
}

// One q8_0 block from the 32 lanes of a warp (lane j holds value j), as ggml's
// quantize_row_q8_0_ref and core/dtype.cpp: d = amax / 127, id = 1 / d (0 for d == 0),
// q = roundf(x id) (ties away from zero), clamped to +-127 with NaN -> 0, d stored as f16 (nearest
// even); a block holding a NaN or an Inf gets d = 0x7E00 and q = 0.
__device__ __forceinline__ void store_q8_0_block(unsigned char* block, float x, int lane) {
  if (!__all_sync(0xffffffffu, isfinite(x))) {
    if (lane == 0) *reinterpret_cast<uint16_t*>(block) = 0x7E00;
    block[2 + lane] = 0;
    return;
  }
  const float amax = warp_reduce(fabsf(x), MaxOp{});
  const float d = amax / 127.f;
  const float id = d != 0.f ? 1.f / d : 0.f;
  const float q = roundf(x * id);
  const float clamped = isnan(q) ? 0.f : fminf(fmaxf(q, -127.f), 127.f);
  if (lane == 0) *reinterpret_cast<uint16_t*>(block) = __half_as_ushort(__float2half_rn(d));
  block[2 + lane] = static_cast<uint8_t>(static_cast<int8_t>(clamped));
}

// The token's k and v rows into row pos of both caches, by the whole block.
template <typename T, DType C>
__device__ void store_token(const KvArgs& a, const Work& w) {
  const int64_t row = (static_cast<int64_t>(w.b) * a.kv_heads + w.kvh) * a.capacity + w.pos;
  const T* kt = static_cast<const T*>(a.k) + w.b * a.k_sb + w.kvh * a.k_sh;
  const T* vt = static_cast<const T*>(a.v) + w.b * a.v_sb + w.kvh * a.v_sh;
  unsigned char* krow = a.k_cache + row * a.row_bytes;
  unsigned char* vrow = a.v_cache + row * a.row_bytes;
  if constexpr (C == DType::q8_0) {
    // A warp per 32-value block: D is a multiple of 32, so no block straddles k and v.
    const int lane = threadIdx.x & 31;
    for (int i0 = threadIdx.x & ~31; i0 < 2 * a.d; i0 += kThreads) {
      const bool is_v = i0 >= a.d;
      const int e = (is_v ? i0 - a.d : i0) + lane;
      const float x = to_float(is_v ? vt[e * a.v_se] : kt[e * a.k_se]);
      store_q8_0_block((is_v ? vrow : krow) + (e / 32) * 34, x, lane);
    }
  } else {
    const float ks = C == DType::f8_e4m3fn ? *a.k_scale : 1.f;
    const float vs = C == DType::f8_e4m3fn ? *a.v_scale : 1.f;
    for (int i = threadIdx.x; i < 2 * a.d; i += kThreads) {
      if (i < a.d) {
        store_scalar<C>(krow, i, to_float(kt[i * a.k_se]), ks);
      } else {
        store_scalar<C>(vrow, i - a.d, to_float(vt[(i - a.d) * a.v_se]), vs);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The block's merge and output.

// Each warp's state: per head its max m (log2 domain), sum l and weighted sum of values.
template <int DS>
struct BlockState {
  float acc[kWarps][kMaxHeads][DS];
  float m[kWarps][kMaxHeads];
  float l[kWarps][kMaxHeads];
};

// Merges the warps (in warp order) and writes o (one split: o = acc vmult / l, rounded once)
// or the split's partial (acc vmult / l and m + log2 l; 0 and -inf for an empty range).
template <typename T, int DS>
__device__ void finish_block(const KvArgs& a, const Work& w, const BlockState<DS>& st, float vmult) {
  for (int i = threadIdx.x; i < w.hn * a.d; i += kThreads) {
    const int h = i / a.d, e = i % a.d;
    float mx = -INFINITY;
#pragma unroll
    for (int k = 0; k < kWarps; ++k) mx = fmaxf(mx, st.m[k][h]);
    float l = 0.f, o = 0.f;
    if (mx != -INFINITY) {
#pragma unroll
      for (int k = 0; k < kWarps; ++k) {
        const float f = exp2f(st.m[k][h] - mx);
        l = fmaf(st.l[k][h], f, l);
        o = fmaf(st.acc[k][h][e], f, o);
      }
    }
    const int head = w.h0 + h;
    if (a.splits == 1) {
      static_cast<T*>(a.o)[w.b * a.o_sb + head * a.o_sh + e * a.o_se] = from_float<T>(o * vmult / l);
    } else {
      const int64_t at = (static_cast<int64_t>(w.b) * a.heads + head) * a.splits + w.split;
      a.part_o[at * a.d + e] = l == 0.f ? 0.f : o * vmult / l;  // NaN stays NaN
      if (e == 0) a.part_lse[at] = l == 0.f ? -INFINITY : mx + log2f(l);
    }
  }
}

// o[b, h] from the splits' partials: weights 2^(lse_s - max lse), a block per (b, h).
template <typename T>
__global__ void __launch_bounds__(kThreads) kv_combine_kernel(const KvArgs a) {
  __shared__ float weight[kMaxSplits];
  const int bh = blockIdx.x, b = bh / a.heads, h = bh % a.heads;
  const float* lse = a.part_lse + static_cast<int64_t>(bh) * a.splits;
  float mx = -INFINITY;
  for (int s = 0; s < a.splits; ++s) mx = fmaxf(mx, lse[s]);
  for (int s = threadIdx.x; s < a.splits; s += kThreads) weight[s] = exp2f(lse[s] - mx);
  __syncthreads();
  float total = 0.f;
  for (int s = 0; s < a.splits; ++s) total += weight[s];
  const float* part = a.part_o + static_cast<int64_t>(bh) * a.splits * a.d;
  for (int e = threadIdx.x; e < a.d; e += kThreads) {
    float o = 0.f;
    for (int s = 0; s < a.splits; ++s) o = fmaf(weight[s], part[static_cast<int64_t>(s) * a.d + e], o);
    static_cast<T*>(a.o)[b * a.o_sb + h * a.o_sh + e * a.o_se] = from_float<T>(o / total);
  }
}

// One online-softmax update of a head: scores s (log2 domain, -inf masked) against the running
// max m; returns the shift z (0 while every score so far is -inf, so that exp2f gives 0, not NaN)
// and the factor alpha the old sums take.
__device__ __forceinline__ float softmax_shift(float& m, float tile_max, float& alpha) {
  const float mn = fmaxf(m, tile_max);
  const float z = mn == -INFINITY ? 0.f : mn;
  alpha = exp2f(m - z);
  m = mn;
  return z;
}

// ---------------------------------------------------------------------------------------------
// The FMA kernel: every problem dtype and cache format (the f32 problems, q8_0 and f32 caches, a
// 16-bit cache of the other 16-bit type, and head dims the mma kernel does not take).
//
// A cache row is split among L lanes (a power of two, L = 32 >> lane_shift <= 32), each lane
// owning E consecutive values (E = 8: f32 in two 16-byte loads, f16/bf16 in one; E = 16: f8 in one
// 16-byte load, q8_0 as half a block: 8 two-byte loads, its blocks being 34 bytes); a warp reads
// 32 / L consecutive rows per load. Each lane multiplies its values with GT query heads (q in f32
// registers), a butterfly over the L lanes finishes each score, and the row's p v goes into the
// lane's E accumulators per head. The row slots of a warp are merged at the end.

template <DType C>
inline constexpr int kFmaE = (C == DType::f8_e4m3fn || C == DType::q8_0) ? 16 : 8;

struct Raw {  // one lane's bytes of a row: f32 uses both, q8_0 keeps its f16 d in b.x
  uint4 a = make_uint4(0, 0, 0, 0);
  uint4 b = make_uint4(0, 0, 0, 0);
};

template <DType C>
__device__ __forceinline__ Raw load_raw(const unsigned char* row, int c) {
  Raw r;
  if constexpr (C == DType::f32) {
    r.a = ldcg16(row + 32 * c);
    r.b = ldcg16(row + 32 * c + 16);
  } else if constexpr (C == DType::q8_0) {
    const unsigned char* block = row + 34 * (c >> 1);
    const auto* qs = reinterpret_cast<const unsigned short*>(block + 2 + 16 * (c & 1));  // 2-byte aligned
    uint32_t w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      w[j] = static_cast<uint32_t>(__ldcg(qs + 2 * j)) | (static_cast<uint32_t>(__ldcg(qs + 2 * j + 1)) << 16);
    r.a = make_uint4(w[0], w[1], w[2], w[3]);
    r.b.x = __ldcg(reinterpret_cast<const unsigned short*>(block));
  } else {
    r.a = ldcg16(row + 16 * c);
  }
  return r;
}

// e4m3 byte -> f32, exactly: its magnitude bits placed under an f32 exponent 120 too small
// (subnormals become f32 subnormals; -ftz=false keeps them) times 2^120; 0x7F/0xFF are NaN.
__device__ __forceinline__ float e4m3_value(uint32_t byte) {
  const uint32_t mag = byte & 0x7Fu;
  float v = __uint_as_float(mag << 20) * 0x1p120f;
  if (mag == 0x7Fu) v = __uint_as_float(0x7FC00000u);
  return (byte & 0x80u) ? -v : v;
}

// A lane's E values in f32; returns the q8_0 block's d (1 for the other formats). q8_0's int8
// becomes f32 by the magic-number trick (0x4B000000 | (q + 128) is 2^23 + q + 128).
template <DType C>
__device__ __forceinline__ float decode_raw(const Raw& r, float (&x)[kFmaE<C>]) {
  const uint32_t w[4] = {r.a.x, r.a.y, r.a.z, r.a.w};
  if constexpr (C == DType::f32) {
    const uint32_t u[4] = {r.b.x, r.b.y, r.b.z, r.b.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      x[k] = __uint_as_float(w[k]);
      x[4 + k] = __uint_as_float(u[k]);
    }
  } else if constexpr (C == DType::bf16) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      x[2 * k] = __uint_as_float(w[k] << 16);
      x[2 * k + 1] = __uint_as_float(w[k] & 0xffff0000u);
    }
  } else if constexpr (C == DType::f16) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      __half2 h;
      memcpy(&h, &w[k], sizeof(h));
      const float2 f = __half22float2(h);
      x[2 * k] = f.x;
      x[2 * k + 1] = f.y;
    }
  } else if constexpr (C == DType::f8_e4m3fn) {
#pragma unroll
    for (int k = 0; k < 16; ++k) x[k] = e4m3_value((w[k / 4] >> (8 * (k % 4))) & 0xFFu);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t biased = w[j] ^ 0x80808080u;
#pragma unroll
      for (int k = 0; k < 4; ++k) x[4 * j + k] = __uint_as_float(__byte_perm(biased, 0x4B000000u, 0x7440 | k)) - 8388736.f;
    }
    return __half2float(__ushort_as_half(static_cast<unsigned short>(r.b.x)));
  }
  return 1.f;
}

template <typename T, DType C, int GT>
__global__ void __launch_bounds__(kThreads) kv_decode_fma_kernel(const KvArgs a) {
  constexpr int E = kFmaE<C>;
  constexpr int N = (E == 16 || GT == 8) ? 2 : 4;  // rows per lane and iteration, loads issued together
  __shared__ BlockState<kMaxD> st;
  const Work w = work_of(a);
  if (w.store) {
    store_token<T, C>(a, w);
    __syncthreads();  // the stored row is visible to the block's reads below
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int lanes = 1 << a.lane_shift, rows_per_load = 32 >> a.lane_shift;
  const int slot = lane >> a.lane_shift, c = lane & (lanes - 1);
  const bool active = c < a.d / E;

  float qf[GT][E];
#pragma unroll
  for (int hh = 0; hh < GT; ++hh) {
    const bool on = active && hh < w.hn;
    const T* qr = static_cast<const T*>(a.q) + w.b * a.q_sb + static_cast<int64_t>(w.h0 + (on ? hh : 0)) * a.q_sh;
#pragma unroll
    for (int e = 0; e < E; ++e) qf[hh][e] = on ? to_float(qr[static_cast<int64_t>(c * E + e) * a.q_se]) : 0.f;
  }
  float sl2 = a.scale_log2e, vmult = 1.f;
  if constexpr (C == DType::f8_e4m3fn) {
    sl2 *= *a.k_scale;
    vmult = *a.v_scale;
  }
  float m[GT], l[GT], acc[GT][E];
#pragma unroll
  for (int hh = 0; hh < GT; ++hh) {
    m[hh] = -INFINITY;
    l[hh] = 0.f;
#pragma unroll
    for (int e = 0; e < E; ++e) acc[hh][e] = 0.f;
  }
  const int64_t first_row = (static_cast<int64_t>(w.b) * a.kv_heads + w.kvh) * a.capacity;
  const unsigned char* kc = a.k_cache + first_row * a.row_bytes;
  const unsigned char* vc = a.v_cache + first_row * a.row_bytes;

  for (int r0 = w.lo + warp * rows_per_load * N; r0 < w.hi; r0 += kWarps * rows_per_load * N) {
    Raw kr[N], vr[N];
    bool valid[N];
#pragma unroll
    for (int u = 0; u < N; ++u) {
      const int r = r0 + u * rows_per_load + slot;
      valid[u] = r < w.hi;
      if (valid[u] && active) {
        kr[u] = load_raw<C>(kc + r * a.row_bytes, c);
        vr[u] = load_raw<C>(vc + r * a.row_bytes, c);
      }
    }
    float s[N][GT];
#pragma unroll
    for (int u = 0; u < N; ++u) {
      float kx[E];
      const float kd = decode_raw<C>(kr[u], kx);
#pragma unroll
      for (int hh = 0; hh < GT; ++hh) {
        float dot = 0.f;
#pragma unroll
        for (int e = 0; e < E; ++e) dot = fmaf(qf[hh][e], kx[e], dot);
        s[u][hh] = dot * kd;
      }
    }
#pragma unroll
    for (int u = 0; u < N; ++u)
#pragma unroll
      for (int hh = 0; hh < GT; ++hh) {
        for (int o = 1; o < lanes; o <<= 1) s[u][hh] += __shfl_xor_sync(0xffffffffu, s[u][hh], o);
        s[u][hh] = valid[u] ? cap_score(a, s[u][hh] * sl2) : -INFINITY;
      }
    float pw[N][GT];
#pragma unroll
    for (int hh = 0; hh < GT; ++hh) {
      float mx = -INFINITY;
#pragma unroll
      for (int u = 0; u < N; ++u) mx = fmaxf(mx, s[u][hh]);
      float alpha;
      const float z = softmax_shift(m[hh], mx, alpha);
      l[hh] *= alpha;
#pragma unroll
      for (int e = 0; e < E; ++e) acc[hh][e] *= alpha;
#pragma unroll
      for (int u = 0; u < N; ++u) {
        pw[u][hh] = exp2f(s[u][hh] - z);
        l[hh] += pw[u][hh];
      }
    }
#pragma unroll
    for (int u = 0; u < N; ++u) {
      float vx[E];
      const float vd = decode_raw<C>(vr[u], vx);
#pragma unroll
      for (int hh = 0; hh < GT; ++hh) {
        const float pv = pw[u][hh] * vd;
#pragma unroll
        for (int e = 0; e < E; ++e) acc[hh][e] = fmaf(pv, vx[e], acc[hh][e]);
      }
    }
  }

  // Merge the warp's row slots (lanes that differ in the bits above the lane's column).
  for (int o = lanes; o < 32; o <<= 1) {
#pragma unroll
    for (int hh = 0; hh < GT; ++hh) {
      const float m2 = __shfl_xor_sync(0xffffffffu, m[hh], o);
      const float l2 = __shfl_xor_sync(0xffffffffu, l[hh], o);
      float a2[E];
#pragma unroll
      for (int e = 0; e < E; ++e) a2[e] = __shfl_xor_sync(0xffffffffu, acc[hh][e], o);
      const float mn = fmaxf(m[hh], m2);
      if (mn != -INFINITY) {  // else both sides are empty (l = 0, acc = 0)
        const float f1 = exp2f(m[hh] - mn), f2 = exp2f(m2 - mn);
        l[hh] = l[hh] * f1 + l2 * f2;
#pragma unroll
        for (int e = 0; e < E; ++e) acc[hh][e] = acc[hh][e] * f1 + a2[e] * f2;
        m[hh] = mn;
      }
    }
  }
  if (slot == 0 && active)
#pragma unroll
    for (int hh = 0; hh < GT; ++hh)
#pragma unroll
      for (int e = 0; e < E; ++e) st.acc[warp][hh][c * E + e] = acc[hh][e];
  if (lane == 0)
#pragma unroll
    for (int hh = 0; hh < GT; ++hh) {
      st.m[warp][hh] = m[hh];
      st.l[warp][hh] = l[hh];
    }
  __syncthreads();
  finish_block<T>(a, w, st, vmult);
}

}  // namespace dnnb::cuda_kernels::kv
