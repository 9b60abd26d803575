// Shared by the row-cached kernels (softmax, layernorm, rmsnorm, the cross-entropy kernels,
// the row reductions); placed after the prelude. Built with three more options, all set by the
// host (opencl_launch.cpp, RowPlan), which checks them against the launch:
//   -DDNNB_ROW_WG=n      the work-group size; kernels declare reqd_work_group_size(n), so a
//                        launch with another size is refused by the runtime instead of
//                        overrunning the local arrays sized from n below.
//   -DDNNB_ROW_VECS=k    chunks per work-item held in registers (the row cache).
//   -DDNNB_ALIGNED=0|1   1 only when the host proved that every row start of every tensor
//                        accessed by chunks is a multiple of DNNB_VW elements from a buffer
//                        base aligned to 16 bytes: then full chunks use typed 16-byte loads
//                        and stores. 0: vloadn/vload_halfn, which need element alignment only.
//
// A chunk is DNNB_VW consecutive columns (16 bytes of storage: 4 f32 or 8 f16/bf16), held as
// float4/float8 (dnnb_vec). Work-item `lid` owns chunks k = 0..DNNB_ROW_VECS-1 at column
// (k * DNNB_ROW_WG + lid) * DNNB_VW, so each load instruction of a warp reads consecutive
// 16-byte pieces. Column math is int (the host checks cols < 2^31); row starts are long.
//   -DDNNB_ROW_PACKED=0|1 (16-bit only) the row cache holds the storage bits (uint4 = 8 columns
//                        in 4 registers) instead of floats; see "row cache" below.
#if !defined(DNNB_ROW_WG) || !defined(DNNB_ROW_VECS) || !defined(DNNB_ALIGNED)
#error "row_body.cl needs -DDNNB_ROW_WG, -DDNNB_ROW_VECS and -DDNNB_ALIGNED"
#endif
#if (DNNB_ROW_WG % 16) != 0
#error "DNNB_ROW_WG must be a multiple of 16 (two-level reduction)"
#endif
//   -DDNNB_ROW_EXACT=1   (raw plans only) the host proved cols == DNNB_ROW_WG * DNNB_VW *
//                        DNNB_ROW_VECS for every row (e.g. 8192 columns): every chunk of every
//                        work-item is full and inside the row, so the row kernels drop all bounds
//                        tests and their loads are straight-line code (see "raw loads").
#ifndef DNNB_ROW_EXACT
#define DNNB_ROW_EXACT 0
#endif
#if DNNB_ROW_EXACT
#define dnnb_in_row(c, cols) 1
#else
#define dnnb_in_row(c, cols) ((c) < (cols))
#endif

#if defined(DNNB_F32)
#define DNNB_VW 4
typedef float4 dnnb_vec;
typedef int4 dnnb_ivec;
#define DNNB_IOTA ((int4)(0, 1, 2, 3))
#define dnnb_vload_unaligned(p) vload4(0, (p))
#define dnnb_vstore_unaligned(v, p) vstore4((v), 0, (p))
inline float4 dnnb_vload_aligned(const global float* p) { return *(const global float4*)p; }
inline void dnnb_vstore_aligned(float4 v, global float* p) { *(global float4*)p = v; }
#else
#define DNNB_VW 8
typedef float8 dnnb_vec;
typedef int8 dnnb_ivec;
#define DNNB_IOTA ((int8)(0, 1, 2, 3, 4, 5, 6, 7))
#if defined(DNNB_F16)
// The 16 bytes come in as one uint4; vload_half8 on a private copy converts them (a copy the
// compiler can keep in registers: not yet confirmed on NVIDIA), so no 2-byte global loads.
inline float8 dnnb_vload_aligned(const global half* p) {
  const uint4 bits = *(const global uint4*)p;
  return vload_half8(0, (const private half*)&bits);
}
inline void dnnb_vstore_aligned(float8 v, global half* p) {
  uint4 bits;
  vstore_half8_rte(v, 0, (private half*)&bits);
  *(global uint4*)p = bits;
}
#define dnnb_vload_unaligned(p) vload_half8(0, (p))
#define dnnb_vstore_unaligned(v, p) vstore_half8_rte((v), 0, (p))
#else  // bf16: a bf16 is the top half of an f32, so widening is a shift or a mask.
inline float8 dnnb_bf16x8_widen(uint4 u) {
  const uint4 lo = u << 16;
  const uint4 hi = u & 0xffff0000u;
  return (float8)(as_float(lo.x), as_float(hi.x), as_float(lo.y), as_float(hi.y), as_float(lo.z),
                  as_float(hi.z), as_float(lo.w), as_float(hi.w));
}
// The 8-lane bf16 narrowing: round to nearest even (prelude.cl, dnnb_bf16x8_rne), or in the
// 16-bit math tiers round half away from zero, except with the NVIDIA PTX tier (DNNB_NV_PTX),
// whose RNE is four cvt instructions for the eight lanes, fewer than the 3 per element below.
#if DNNB_HALF_MATH && !DNNB_NV_PTX
// The 16-bit math tiers (prelude.cl) carry an f32 error of up to ~2e-5 relative, so a tie of
// the f32 value is not a tie of the exact one, and rounding it to even buys nothing: round half
// away from zero (one add; the result is still within half an ulp plus that error), NaN lanes
// quieted as in dnnb_bf16x8_rne, tested by isnan (one compare). 2 integer ops per element fewer
// on NVIDIA (clang + ptxas for sm_90: 3 SASS per element against 5).
inline uint4 dnnb_bf16x8_narrow(float8 v) {
  const uint8 u = as_uint8(v);
  const uint8 bits = select(u + 0x8000u, u | 0x00400000u, isnan(v));
  return (bits.even >> 16) | (bits.odd & 0xffff0000u);
}
#else
#define dnnb_bf16x8_narrow dnnb_bf16x8_rne
#endif
inline float8 dnnb_vload_aligned(const global ushort* p) { return dnnb_bf16x8_widen(*(const global uint4*)p); }
inline void dnnb_vstore_aligned(float8 v, global ushort* p) { *(global uint4*)p = dnnb_bf16x8_narrow(v); }
inline float8 dnnb_vload_unaligned(const global ushort* p) {
  return dnnb_bf16x8_widen(as_uint4(vload8(0, p)));
}
inline void dnnb_vstore_unaligned(float8 v, global ushort* p) { vstore8(as_ushort8(dnnb_bf16x8_narrow(v)), 0, p); }
#endif
#endif

#if DNNB_ALIGNED
#define dnnb_vload_full dnnb_vload_aligned
#define dnnb_vstore_full dnnb_vstore_aligned
#else
#define dnnb_vload_full dnnb_vload_unaligned
#define dnnb_vstore_full dnnb_vstore_unaligned
#endif

// ---- chunks of one contiguous row (col_stride 1) ------------------------------------------
// Columns c..c+DNNB_VW-1 of `row`; those at or past `cols` read as `fill` and are never
// touched in memory (the last chunk of a row may be partial: scalar loads, bounds checked).
inline dnnb_vec dnnb_row_load(const global dnnb_t* row, int c, int cols, float fill) {
  if (DNNB_ROW_EXACT || c + DNNB_VW <= cols) return dnnb_vload_full(row + c);
  float part[DNNB_VW];
  for (int j = 0; j < DNNB_VW; ++j) part[j] = c + j < cols ? DNNB_LOAD(row, c + j) : fill;
#if DNNB_VW == 4
  return vload4(0, part);
#else
  return vload8(0, part);
#endif
}

inline void dnnb_row_store(global dnnb_t* row, int c, int cols, dnnb_vec v) {
  if (DNNB_ROW_EXACT || c + DNNB_VW <= cols) {
    dnnb_vstore_full(v, row + c);
    return;
  }
  float part[DNNB_VW];
#if DNNB_VW == 4
  vstore4(v, 0, part);
#else
  vstore8(v, 0, part);
#endif
  for (int j = 0; j < DNNB_VW; ++j)
    if (c + j < cols) DNNB_STORE(row, c + j, part[j]);
}

// ---- row cache --------------------------------------------------------------------------------
// dnnb_cache_t is one cached chunk. Unpacked (default): the chunk as floats (dnnb_vec). Packed
// (DNNB_ROW_PACKED=1, 16-bit): the chunk's 16 storage bytes, widened again by every pass that
// reads it (exact: the bits are the stored values), so a 16-bit row costs half the registers
// and an SM holds twice the rows. Only kernels whose cache holds x itself (not values computed
// from it) can be packed; the cross-entropy kernels recompute exp from x then.
#ifndef DNNB_ROW_PACKED
#define DNNB_ROW_PACKED 0
#endif
#if DNNB_ROW_PACKED && DNNB_VW != 8
#error "DNNB_ROW_PACKED is for 16-bit storage only"
#endif
// 16-bit chunks as storage bits (the packed cache and the raw loads below).
#if DNNB_VW == 8
#if DNNB_ALIGNED
inline uint4 dnnb_vload_bits(const global dnnb_t* p) { return *(const global uint4*)p; }
#else
inline uint4 dnnb_vload_bits(const global dnnb_t* p) { return as_uint4(vload8(0, (const global ushort*)p)); }
#endif
#if defined(DNNB_F16)
inline float8 dnnb_unpack(uint4 bits) { return vload_half8(0, (const private half*)&bits); }
inline uint4 dnnb_pack(float8 v) {
  uint4 bits;
  vstore_half8_rte(v, 0, (private half*)&bits);
  return bits;
}
#else
#define dnnb_unpack dnnb_bf16x8_widen
#define dnnb_pack dnnb_bf16x8_narrow
#endif
#endif
#if DNNB_ROW_PACKED
typedef uint4 dnnb_cache_t;
#define dnnb_cache_get(e) dnnb_unpack(e)
#else
typedef dnnb_vec dnnb_cache_t;
#define dnnb_cache_get(e) (e)
#endif

// ---- raw loads (DNNB_ROW_RAW=1; every row op's plan, the 16-bit reductions) -------------------
// A chunk converted right after its load, inside the chunk's bounds branch (shl/and for bf16,
// cvt.f32.f16 for f16), makes a GPU warp wait for that load before it reaches the next chunk's
// branch: one load in flight per work-item (NVIDIA's PTX of the 16-bit kernels shows exactly
// that shape). dnnb_raw_t is the chunk as it is stored (float4 for f32, uint4 bits for 16-bit);
// dnnb_row_fetch loads all of a work-item's chunks first (one branch for the common all-inside
// case, then plain loads), dnnb_raw_get converts afterwards. Exact: a partial last chunk is
// packed from its values and `fill` (0 or -inf, representable).
#ifndef DNNB_ROW_RAW
#define DNNB_ROW_RAW 0
#endif
// dnnb_raw_load: one chunk, bounds-checked. (clang for nvptx, tried here, merges the two arms
// of dnnb_row_fetch back into one bounds branch per chunk, the conversion inside it again; only
// DNNB_ROW_EXACT rows, with no branch at all, are sure to issue all loads first.)
#if DNNB_VW == 8
typedef uint4 dnnb_raw_t;
#define dnnb_raw_full dnnb_vload_bits
#define dnnb_raw_get(r) dnnb_unpack(r)
#define dnnb_raw_splat(fill) dnnb_pack((float8)(fill))
inline uint4 dnnb_raw_load(const global dnnb_t* row, int c, int cols, float fill) {
  if (DNNB_ROW_EXACT || c + DNNB_VW <= cols) return dnnb_vload_bits(row + c);
  return dnnb_pack(dnnb_row_load(row, c, cols, fill));
}
#else
typedef float4 dnnb_raw_t;
#define dnnb_raw_full dnnb_vload_full
#define dnnb_raw_get(r) (r)
#define dnnb_raw_splat(fill) ((float4)(fill))
#define dnnb_raw_load dnnb_row_load
#endif
#if DNNB_ROW_PACKED
#define dnnb_cache_of_raw(r) (r)
#else
#define dnnb_cache_of_raw(r) dnnb_raw_get(r)
#endif

// ---- early loads (DNNB_ROW_EARLY=1, raw plans only: the f16/bf16 softmax, f16 norms) -----------
// Raw loads cover x; a row's other loads would each wait on a use placed before them: the w (and
// b) chunks of rmsnorm/layernorm in the write pass (each behind the previous chunk's store to y,
// which the compiler cannot move a load above: the buffers may alias) and the mask chunks of
// softmax (loaded and added inside each z). With EARLY each of them is loaded as storage bits
// before its first use: the mask chunks together with x's chunks; w and b at the start of the
// write pass in groups of DNNB_EARLY_GROUP chunks (with x's chunks they would cost rmsnorm 28 more
// registers and make packed layernorm spill, clang + ptxas for sm_90), so a group's loads share
// one latency. Results are bit-identical to the plan without EARLY (the same values meet the same
// arithmetic). The storage-bits helpers below also serve the cross-entropy target logits.
#ifndef DNNB_ROW_EARLY
#define DNNB_ROW_EARLY 0
#endif
#if DNNB_ROW_EARLY && !DNNB_ROW_RAW
#error "DNNB_ROW_EARLY extends the raw loads: build it with DNNB_ROW_RAW=1"
#endif
// One stored element as its storage bits (no conversion), and its value.
#if DNNB_VW == 8
typedef ushort dnnb_bits_t;
inline ushort dnnb_load_bits(const global dnnb_t* p, int i) { return ((const global ushort*)p)[i]; }
#if defined(DNNB_F16)
inline float dnnb_bits_get(ushort b) { return vload_half(0, (const private half*)&b); }
#else
#define dnnb_bits_get dnnb_bf16_to_f32
#endif
#else
typedef float dnnb_bits_t;
inline float dnnb_load_bits(const global float* p, int i) { return p[i]; }
#define dnnb_bits_get(b) (b)
#endif

// First column of chunk k of this work-item.
inline int dnnb_chunk_col(int k) { return (k * DNNB_ROW_WG + (int)get_local_id(0)) * DNNB_VW; }

// This work-item's DNNB_ROW_VECS chunks of `row`, every load issued before any is converted;
// chunks past the row end are `fill`.
inline void dnnb_row_fetch(private dnnb_raw_t* raw, const global dnnb_t* row, int cols, float fill) {
  if (DNNB_ROW_EXACT || dnnb_chunk_col(DNNB_ROW_VECS - 1) + DNNB_VW <= cols) {
#pragma unroll
    for (int k = 0; k < DNNB_ROW_VECS; ++k) raw[k] = dnnb_raw_full(row + dnnb_chunk_col(k));
  } else {
#pragma unroll
    for (int k = 0; k < DNNB_ROW_VECS; ++k) {
      const int c = dnnb_chunk_col(k);
      raw[k] = c < cols ? dnnb_raw_load(row, c, cols, fill) : dnnb_raw_splat(fill);
    }
  }
}

// Chunks k0..k0+n-1 of this work-item's DNNB_ROW_VECS (n constant after unrolling), as
// dnnb_row_fetch: every load issued before any is used. The early loads of w and b take a
// row's chunks in groups of these, so their registers stay a few chunks' worth.
inline void dnnb_row_fetch_part(private dnnb_raw_t* raw, const global dnnb_t* row, int cols, float fill, int k0,
                                int n) {
  // No "#pragma unroll" here: n is constant only once inlined, and a compiler that also builds
  // the function on its own (PoCL) warns that it cannot unroll it; inlined, the loops unroll.
  if (DNNB_ROW_EXACT || dnnb_chunk_col(k0 + n - 1) + DNNB_VW <= cols) {
    for (int j = 0; j < n; ++j) raw[j] = dnnb_raw_full(row + dnnb_chunk_col(k0 + j));
  } else {
    for (int j = 0; j < n; ++j) {
      const int c = dnnb_chunk_col(k0 + j);
      raw[j] = c < cols ? dnnb_raw_load(row, c, cols, fill) : dnnb_raw_splat(fill);
    }
  }
}

// Columns c..c+DNNB_VW-1 that lie inside the row: all-ones lanes (as select() wants) where so.
inline dnnb_ivec dnnb_row_inside(int c, int cols) {
#if DNNB_ROW_EXACT
  return (dnnb_ivec)(-1);
#else
  return ((dnnb_ivec)(c) + DNNB_IOTA) < (dnnb_ivec)(cols);
#endif
}

// ---- exp of a chunk for softmax and the cross-entropy ops ------------------------------------
// dnnb_row_exp(w) = e^w * 2^DNNB_EXP16_BIAS, w = z - (row max) <= 0, -inf (masked, or past the
// row end) or NaN. Built-in exp by default (and always for f32: prelude.cl refuses
// DNNB_HALF_MATH there). With -DDNNB_HALF_MATH=2 (16-bit row plans with fast_exp, opencl_launch.h
// RowPlan) the tier's native_exp2(fma(w, log2 e, bias)): one FMA and one ex2.approx.ftz on NVIDIA,
// where the built-in exp is ~8 instructions (docs/opencl.md, "16-bit math"). The row's normalization (y = e / sum e, in softmax and cross_entropy_bwd) cancels
// the 2^bias, so those kernels never unscale; cross_entropy scales its sum back (exact) before log.
// Special values as exp: -inf gives +0 (ex2(-inf) = +0), so a fully masked row still has sum 0 and
// y = 0; NaN stays NaN; +inf in x makes w = inf - inf = NaN, as the built-in path does.
// Error (level 2, NVIDIA: ex2.approx relative error ~2^-22):
//   - argument: fma rounds t = w log2 e + bias once, by at most half an ulp of |t|, and
//     2^(t + dt) = 2^t (1 + dt ln 2). f16 (bias 0): outputs are nonzero only for w >= -17.4,
//     |t| < 32, so <= 2^-20 ln 2 = 6.6e-7. bf16 (bias 32): t in [-101, 32] for the results bf16
//     keeps (down to 2^-133, w >= -92.2): <= 2^-18 ln 2 = 2.6e-6 at the tail, 6.6e-7 for w > -22.
//   - so each e is within ~1e-6 (f16) / ~3e-6 (bf16) relative, the sum within the same (a weighted
//     mean of its terms' errors), and y = e / sum within twice that: <= 0.005 ulp of f16 (ulp >=
//     2^-11 relative) and <= 0.002 ulp of bf16 (>= 2^-8). The 16-bit result is then rounded once;
//     the f32 error can flip that rounding only when the value lies within 0.005 ulp of a tie: at
//     most 1 ulp there, inside the 2-ulp normalization/loss tolerance (core/compare.cpp).
//   - cross_entropy (bf16): loss = log(sum) + m - x_t, so the sum's relative error becomes an
//     absolute error in the loss: <= 2.9e-6, ~9e-7 when the terms near the max carry the sum
//     (6.6e-7 + 2^-22): < 0.01 bf16 ulp for losses >= 2^-6, ~0.12 ulp at 1e-3 (every row nearly
//     certain), so still inside the 2-ulp tolerance there.
//   - flush: ex2.approx.ftz gives 0 below 2^-126, bf16 keeps values down to 2^-133. With the bias
//     (bf16), e * 2^32 is flushed only for e < 2^-158, and y = e/sum <= e (sum >= 1 for the row max's
//     own term), so no bf16 output of softmax or cross_entropy_bwd (y / count <= y) and no term of
//     cross_entropy's sum (>= 1) that could matter is ever lost. f16 needs no bias (its outputs are 0
//     below 2^-25). Even unbiased, a flushed y (< 2^-126) would sit far inside the check's absolute
//     tolerance (rtol times the output's RMS), so the bias is for exactness, not for the check.
inline dnnb_vec dnnb_row_exp(dnnb_vec w) { return DNNB_EXP16_SCALED(w, dnnb_vec); }

// ---- horizontal reductions of one chunk ---------------------------------------------------
#if DNNB_VW == 4
inline float dnnb_vsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }
inline float dnnb_vmax(float4 v) { return dnnb_max_nan(dnnb_max_nan(v.x, v.y), dnnb_max_nan(v.z, v.w)); }
#else
inline float dnnb_vsum(float8 v) { return ((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7)); }
inline float dnnb_vmax(float8 v) {
  return dnnb_max_nan(dnnb_max_nan(dnnb_max_nan(v.s0, v.s1), dnnb_max_nan(v.s2, v.s3)),
                      dnnb_max_nan(dnnb_max_nan(v.s4, v.s5), dnnb_max_nan(v.s6, v.s7)));
}
#endif

// Lane-wise max that propagates NaN (as dnnb_max_nan).
inline dnnb_vec dnnb_vmax2(dnnb_vec a, dnnb_vec b) { return select(b, a, (a > b) | isnan(a)); }

// ---- work-group reductions in two levels ---------------------------------------------------
// Local scratch of DNNB_ROW_SCRATCH floats, declared by the kernel at kernel scope (so its size
// is the compile-time work-group size, never a host assumption). Level 1: 16 work-items each
// combine DNNB_ROW_WG/16 values (stride 16: consecutive banks); level 2: every work-item combines
// the 16 results itself (broadcast reads). Three barriers instead of log2(n) + 1, and a fixed
// order, so results are bitwise reproducible. The last barrier lets the caller reuse scratch.
#define DNNB_ROW_SCRATCH (DNNB_ROW_WG + 16)

inline float dnnb_row_wg_sum(float v, local float* scratch) {
  const int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid < 16) {
    float a = scratch[lid];
    for (int j = 1; j < DNNB_ROW_WG / 16; ++j) a += scratch[lid + 16 * j];
    scratch[DNNB_ROW_WG + lid] = a;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  float total = scratch[DNNB_ROW_WG];
  for (int j = 1; j < 16; ++j) total += scratch[DNNB_ROW_WG + j];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

inline float dnnb_row_wg_max(float v, local float* scratch) {
  const int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid < 16) {
    float a = scratch[lid];
    for (int j = 1; j < DNNB_ROW_WG / 16; ++j) a = dnnb_max_nan(a, scratch[lid + 16 * j]);
    scratch[DNNB_ROW_WG + lid] = a;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  float total = scratch[DNNB_ROW_WG];
  for (int j = 1; j < 16; ++j) total = dnnb_max_nan(total, scratch[DNNB_ROW_WG + j]);
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

#define DNNB_ROW_KERNEL kernel __attribute__((reqd_work_group_size(DNNB_ROW_WG, 1, 1)))
