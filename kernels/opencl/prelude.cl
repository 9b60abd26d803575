// Shared by every dnnblocks OpenCL program (prepended by the host): storage formats, row
// addressing and work-group reductions. OpenCL C 1.2, no extensions: f16 goes through
// vload_half/vstore_half (no cl_khr_fp16 needed), bf16 is a ushort converted in code.
//
// The storage dtype is chosen by one build option, so one source serves three dtypes:
//   -DDNNB_F32, -DDNNB_F16 or -DDNNB_BF16.
// Arithmetic is always f32; every store rounds once to the storage format (RNE).

// ---- storage formats -----------------------------------------------------------------
inline float dnnb_bf16_to_f32(ushort bits) { return as_float(((uint)bits) << 16); }

// Round to nearest even on the top 16 bits; a NaN stays a (quiet) NaN. Written as a select,
// not an early return, so every element runs the same integer ops and no branch. The NaN test is
// isnan (one float compare, setp.nan on NVIDIA) rather than (u & 0x7fffffff) > 0x7f800000 (an and
// and an integer compare): the same predicate for every float (no flag of ours flushes or assumes
// away NaNs), one op less per element. tests/opencl/test_bf16_store.cpp holds both forms, on every
// OpenCL device, to the integer test for all 2^32 floats.
// These integer forms ("_int") are the portable code; dnnb_f32_to_bf16 / dnnb_bf16x8_rne
// below are them, or the PTX forms of the NVIDIA tier (DNNB_NV_PTX).
inline ushort dnnb_f32_to_bf16_int(float value) {
  const uint u = as_uint(value);
  const uint rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint quiet = (u >> 16) | 0x0040u;
  return (ushort)(isnan(value) ? quiet : rounded);
}
// dnnb_f32_to_bf16 on eight lanes at once (the 16-byte chunks of row_body.cl): all lanes round
// as one uint8 computation, NaN lanes quieted (u | 0x00400000 has the same top half as
// (u >> 16) | 0x0040), then even lanes give the low halves and odd lanes the high halves of the
// four words (little-endian order, as the chunk paths that use it require).
inline uint4 dnnb_bf16x8_rne_int(float8 v) {
  const uint8 u = as_uint8(v);
  const uint8 bits = select(u + 0x7fffu + ((u >> 16) & 1u), u | 0x00400000u, isnan(v));
  return (bits.even >> 16) | (bits.odd & 0xffff0000u);
}

// ---- bf16 store tier for NVIDIA: inline PTX (-DDNNB_NV_PTX=1; host: opencl_launch.cpp) ----
// 16-bit bf16 ops (gelu, cross_entropy_bwd) are instruction-bound on NVIDIA's OpenCL at the copy
// rate, and the integer rounding above costs ~5 instructions per element. NVIDIA's OpenCL
// compiler takes inline PTX, and sm_80+ has cvt.rn.bf16x2.f32 d, a, b: two floats rounded to
// nearest even into one word, a in the upper 16 bits, b in the lower: one instruction per two
// values. The host adds the flag only to bf16 programs on NVIDIA devices reporting compute
// capability >= 8.0; every other device (PoCL included) keeps the integer code.
// Same results as the integer forms for every non-NaN float (RNE, no flush: subnormals round
// as subnormals, overflow goes to inf, ties to even; tests/opencl/test_bf16_store.cpp checks all
// 2^32 floats on the device). A NaN gives cvt's canonical NaN, not the payload-keeping quiet
// NaN of the integer forms (nor its sign): NaN stays NaN, which is all an output needs.
#ifndef DNNB_NV_PTX
#define DNNB_NV_PTX 0
#endif
#if DNNB_NV_PTX && !defined(DNNB_BF16)
#error "DNNB_NV_PTX is the bf16 store tier: for -DDNNB_BF16 programs only"
#endif
#if DNNB_NV_PTX
// (rne(hi) << 16) | rne(lo): one cvt.rn.bf16x2.f32.
inline uint dnnb_bf16x2_ptx(float hi, float lo) {
  uint r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// The bf16x2 form with the value in the low half (the 16-bit cvt.rn.bf16.f32 would need an
// "h" output operand, not tried on NVIDIA's OpenCL compiler; this form is).
inline ushort dnnb_f32_to_bf16(float value) { return (ushort)dnnb_bf16x2_ptx(0.0f, value); }
// Lane 2k in the low half, lane 2k+1 in the high half of word k, as dnnb_bf16x8_rne_int.
inline uint4 dnnb_bf16x8_rne(float8 v) {
  return (uint4)(dnnb_bf16x2_ptx(v.s1, v.s0), dnnb_bf16x2_ptx(v.s3, v.s2), dnnb_bf16x2_ptx(v.s5, v.s4),
                 dnnb_bf16x2_ptx(v.s7, v.s6));
}
// Four lanes in order (x, y, z, w), as four dnnb_f32_to_bf16: two cvts.
inline ushort4 dnnb_bf16x4_rne(float4 v) {
  const uint xy = dnnb_bf16x2_ptx(v.y, v.x);
  const uint zw = dnnb_bf16x2_ptx(v.w, v.z);
  return (ushort4)((ushort)xy, (ushort)(xy >> 16), (ushort)zw, (ushort)(zw >> 16));
}
#else
inline ushort dnnb_f32_to_bf16(float value) { return dnnb_f32_to_bf16_int(value); }
inline uint4 dnnb_bf16x8_rne(float8 v) { return dnnb_bf16x8_rne_int(v); }
inline ushort4 dnnb_bf16x4_rne(float4 v) {
  return (ushort4)(dnnb_f32_to_bf16(v.x), dnnb_f32_to_bf16(v.y), dnnb_f32_to_bf16(v.z), dnnb_f32_to_bf16(v.w));
}
#endif

#if defined(DNNB_F32)
typedef float dnnb_t;
#define DNNB_LOAD(p, i) ((p)[(i)])
#define DNNB_STORE(p, i, v) ((p)[(i)] = (v))
#define DNNB_LOAD4(p, i) vload4(0, (p) + (i))
#define DNNB_STORE4(p, i, v) vstore4((v), 0, (p) + (i))
#elif defined(DNNB_F16)
typedef half dnnb_t;
#define DNNB_LOAD(p, i) vload_half((i), (p))
#define DNNB_STORE(p, i, v) vstore_half_rte((v), (i), (p))
#define DNNB_LOAD4(p, i) vload_half4(0, (p) + (i))
#define DNNB_STORE4(p, i, v) vstore_half4_rte((v), 0, (p) + (i))
#elif defined(DNNB_BF16)
typedef ushort dnnb_t;
#define DNNB_LOAD(p, i) dnnb_bf16_to_f32((p)[(i)])
#define DNNB_STORE(p, i, v) ((p)[(i)] = dnnb_f32_to_bf16(v))
inline float4 dnnb_bf16x4_load(const global ushort* p) {
  uint4 u = convert_uint4(vload4(0, p)) << 16;
  return as_float4(u);
}
inline void dnnb_bf16x4_store(float4 v, global ushort* p) { vstore4(dnnb_bf16x4_rne(v), 0, p); }
#define DNNB_LOAD4(p, i) dnnb_bf16x4_load((p) + (i))
#define DNNB_STORE4(p, i, v) dnnb_bf16x4_store((v), (p) + (i))
#else
#error "build with -DDNNB_F32, -DDNNB_F16 or -DDNNB_BF16"
#endif

// ---- 16-bit math tiers (-DDNNB_HALF_MATH=1 or 2) ---------------------------------------------
// For results rounded to f16/bf16 next, the activations may trade f32 accuracy they do not
// need for instructions: an f32 error of ~2e-6 (f16) / ~2e-5 (bf16) moves a 16-bit result by
// at most 0.005 ulp; the exhaustive test (tests/opencl/test_half_math.cpp) holds every 16-bit
// input to 0.505 ulp of the exact value on every OpenCL device it finds. f32 never takes them.
//   1 (the activations' alternative "portable_math"): full-precision built-ins (exp) and
//     native_recip refined by one Newton step: accurate by construction on any device.
//   2 (the 16-bit default of the activations; the fast exp of the 16-bit row plans): native_exp2
//     and native_recip as they are (one MUFU each on NVIDIA, whose ex2.approx/rcp.approx err by
//     ~2^-22). OpenCL leaves the accuracy of native_ functions to the implementation, so this
//     level is as good as the device: the exhaustive test is what vouches for it there.
#ifndef DNNB_HALF_MATH
#define DNNB_HALF_MATH 0
#endif
#if DNNB_HALF_MATH && defined(DNNB_F32)
#error "DNNB_HALF_MATH is for 16-bit outputs only: f32 results keep the full-precision built-ins"
#endif
// 1/d for finite d >= 1. Level 1: native_recip (one MUFU.RCP on NVIDIA) and one Newton step,
// which squares its relative error (2^-11 or better becomes 2^-22): a few f32 ulps on any
// device, where the correctly rounded division these programs are built for
// (-cl-fp32-correctly-rounded-divide-sqrt) is ~10 instructions and a slow-path branch on
// NVIDIA. d >= 1 keeps the estimate away from subnormals (flushed by some devices).
inline float dnnb_recip16(float d) {
  const float r = native_recip(d);
#if DNNB_HALF_MATH >= 2
  return r;
#else
  return fma(fma(-d, r, 1.0f), r, r);
#endif
}
// e^w for w <= 0 (or NaN). Level 1: the built-in exp (on NVIDIA 8 instructions with one
// MUFU.EX2, exact down to subnormals). Level 2: native_exp2(w log2 e); rounding w log2 e costs
// |w| 2^-24 ln 2 relative (4e-6 at the bf16 tail, |w| = 100). NVIDIA's ex2.approx.ftz flushes
// results below 2^-126, but bf16 keeps results down to 2^-133: the exponent is raised by 32
// and the result scaled back by an ordinary multiply, which rounds into subnormals correctly.
#if DNNB_HALF_MATH >= 2 && defined(DNNB_BF16)
#define DNNB_EXP16_BIAS 32.0f
#define DNNB_EXP16_UNBIAS 0x1p-32f
#else
#define DNNB_EXP16_BIAS 0.0f
#define DNNB_EXP16_UNBIAS 1.0f
#endif
// DNNB_EXP16_SCALED(w, T): e^w times 2^DNNB_EXP16_BIAS, for w of type T (float or a float
// vector: the row ops take a chunk at a time). The row ops of the tier (softmax and the
// cross-entropy ops, row_body.cl dnnb_row_exp) keep the scale where the row's normalization
// cancels it (one multiply less per element).
#if DNNB_HALF_MATH >= 2
#define DNNB_EXP16_SCALED(w, T) native_exp2(fma((w), (T)(M_LOG2E_F), (T)(DNNB_EXP16_BIAS)))
#else
#define DNNB_EXP16_SCALED(w, T) exp(w)
#endif
inline float dnnb_exp_neg16(float w) { return DNNB_EXP16_SCALED(w, float) * DNNB_EXP16_UNBIAS; }
// 1/(1+e^-v) without overflow or cancellation: e = e^-|v| in [0, 1], 1/(1+e) for v >= 0,
// e/(1+e) for v < 0 (tiny results keep their precision). NaN propagates through e; v = -inf
// gives 0. Shared by sigmoid, silu and gelu_tanh.
inline float dnnb_sigmoid16(float v) {
  const float e = dnnb_exp_neg16(-fabs(v));
  const float r = dnnb_recip16(1.0f + e);
  return v < 0.0f ? e * r : r;
}

// ---- row addressing ----------------------------------------------------------------------
// The host's RowIndex (core/tensor.h) as a kernel argument: element (r, c) of a view is at
// dnnb_row_start(ri, r) + c * ri.col_stride. All fields are 64-bit so host and device agree
// on the layout without padding rules.
typedef struct {
  long offset;      // elements from the start of the buffer
  long rows;
  long cols;
  long col_stride;  // 0 for a broadcast last dim
  long outer_dims;  // 0..4 dims left after collapsing; size/stride outermost first
  long size[4];
  long stride[4];
} dnnb_rows;

inline long dnnb_row_start(dnnb_rows ri, long r) {
  long off = ri.offset;
  for (int d = (int)ri.outer_dims - 1; d >= 0; --d) {
    off += (r % ri.size[d]) * ri.stride[d];
    r /= ri.size[d];
  }
  return off;
}

// Four consecutive columns c..c+3 of a row starting at `start`; columns past `cols` read
// as `fill`. Contiguous rows use a vector load (scalar alignment suffices for vloadn).
inline float4 dnnb_load_cols4(const global dnnb_t* p, long start, long col_stride, long cols, long c,
                              float fill) {
  if (col_stride == 1 && c + 4 <= cols) return DNNB_LOAD4(p, start + c);
  float4 v = (float4)(fill);
  if (c < cols) v.x = DNNB_LOAD(p, start + c * col_stride);
  if (c + 1 < cols) v.y = DNNB_LOAD(p, start + (c + 1) * col_stride);
  if (c + 2 < cols) v.z = DNNB_LOAD(p, start + (c + 2) * col_stride);
  if (c + 3 < cols) v.w = DNNB_LOAD(p, start + (c + 3) * col_stride);
  return v;
}

inline void dnnb_store_cols4(global dnnb_t* p, long start, long col_stride, long cols, long c, float4 v) {
  if (col_stride == 1 && c + 4 <= cols) {
    DNNB_STORE4(p, start + c, v);
    return;
  }
  if (c < cols) DNNB_STORE(p, start + c * col_stride, v.x);
  if (c + 1 < cols) DNNB_STORE(p, start + (c + 1) * col_stride, v.y);
  if (c + 2 < cols) DNNB_STORE(p, start + (c + 2) * col_stride, v.z);
  if (c + 3 < cols) DNNB_STORE(p, start + (c + 3) * col_stride, v.w);
}

// ---- work-group reductions ---------------------------------------------------------------
// Tree reductions in local memory; the work-group size is a power of two (the host makes it
// so). Every work-item gets the result. `scratch` holds at least get_local_size(0) floats.
inline float dnnb_wg_sum(float v, local float* scratch) {
  const uint lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float total = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // scratch is reused by the next reduction
  return total;
}

// max that propagates NaN (as torch.max does); fmax would drop it.
// Bitwise | instead of ||: no short-circuit, so the compiler emits a select, not a branch.
inline float dnnb_max_nan(float a, float b) { return ((a > b) | isnan(a)) ? a : b; }
inline float dnnb_max4_nan(float4 v) { return dnnb_max_nan(dnnb_max_nan(v.x, v.y), dnnb_max_nan(v.z, v.w)); }
inline float dnnb_sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

inline float dnnb_wg_max(float v, local float* scratch) {
  const uint lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] = dnnb_max_nan(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float total = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

// ---- merged statistics ----------------------------------------------------------------------
// Softmax statistics as a pair (m, s): the max of some values and the sum of exp(v - m) over
// them. Two pairs merge exactly (up to rounding), so one tree gives both the row max and the
// row sum: half the barriers of a max tree followed by a sum tree.
// A pair whose values were NaN and -inf only is (-inf, NaN): dnnb_softmax_add keeps a NaN in s,
// never in m. So a pair with m = -inf is weighted by 0, not dropped: 0 for an empty pair's s = 0,
// NaN for that one (a row whose only NaN is the only column of its work-item, e.g. column 32 of
// a 33-column row, must still give NaN, as torch does).
inline void dnnb_softmax_merge(float* m, float* s, float m2, float s2) {
  const float mm = dnnb_max_nan(*m, m2);
  if (mm == -INFINITY) {  // no finite value on either side: stays (-inf, 0), or (-inf, NaN)
    *s += s2;
    return;
  }
  const float a = *s * (*m == -INFINITY ? 0.0f : exp(*m - mm));
  const float b = s2 * (m2 == -INFINITY ? 0.0f : exp(m2 - mm));
  *m = mm;
  *s = a + b;
}

// Adds one value to a running pair; exp(-inf) = 0 covers the first value, and -inf values
// (masked) add nothing. A NaN value makes s NaN, as torch's result is NaN then.
inline void dnnb_softmax_add(float x, float* m, float* s) {
  if (x > *m) {
    *s = *s * exp(*m - x) + 1.0f;
    *m = x;
  } else if (x != -INFINITY) {
    *s += exp(x - *m);
  }
}

// Work-group merge of (m, s) pairs; every work-item gets the row's pair. `scratch` holds at
// least 2 * get_local_size(0) floats.
inline float dnnb_wg_softmax_stats(float m, float s, local float* scratch, float* m_out) {
  const uint lid = get_local_id(0);
  const uint n = get_local_size(0);
  scratch[lid] = m;
  scratch[n + lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint st = n / 2; st > 0; st >>= 1) {
    if (lid < st) {
      float mm = scratch[lid];
      float ss = scratch[n + lid];
      dnnb_softmax_merge(&mm, &ss, scratch[lid + st], scratch[n + lid + st]);
      scratch[lid] = mm;
      scratch[n + lid] = ss;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *m_out = scratch[0];
  const float total = scratch[n];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

// Mean and variance as (count, mean, M2 = sum of squared deviations), merged with Chan's
// formula, so one tree gives both moments without the cancellation of sum(x^2) - n mean^2.
// `scratch` holds at least 3 * get_local_size(0) floats. Returns M2; *mean_out gets the mean.
inline float dnnb_wg_moments(float count, float mean, float m2, local float* scratch, float* mean_out) {
  const uint lid = get_local_id(0);
  const uint n = get_local_size(0);
  scratch[lid] = count;
  scratch[n + lid] = mean;
  scratch[2 * n + lid] = m2;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint st = n / 2; st > 0; st >>= 1) {
    if (lid < st) {
      const float na = scratch[lid], nb = scratch[lid + st];
      const float total = na + nb;
      if (nb > 0.0f) {
        const float delta = scratch[n + lid + st] - scratch[n + lid];
        const float fb = nb / total;
        scratch[n + lid] += delta * fb;
        scratch[2 * n + lid] += scratch[2 * n + lid + st] + delta * delta * na * fb;
        scratch[lid] = total;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *mean_out = scratch[n];
  const float total_m2 = scratch[2 * n];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total_m2;
}

// ---- row kernels: register cache ---------------------------------------------------------
// Row kernels run one work-group per row. When a row fits, each work-item keeps its slots
// (DNNB_CACHE_VECS float4 each, slot k at column (k * local_size + lid) * 4) in registers, so
// multi-pass ops (softmax, norms) read global memory once.
#ifndef DNNB_CACHE_VECS
#define DNNB_CACHE_VECS 8
#endif
inline bool dnnb_row_fits_cache(long cols) { return cols <= (long)DNNB_CACHE_VECS * (long)get_local_size(0) * 4; }

// 1 for columns c..c+3 that are inside the row, 0 past its end.
inline float4 dnnb_valid4(long c, long cols) {
  return (float4)(c < cols ? 1.0f : 0.0f, c + 1 < cols ? 1.0f : 0.0f, c + 2 < cols ? 1.0f : 0.0f,
                  c + 3 < cols ? 1.0f : 0.0f);
}
