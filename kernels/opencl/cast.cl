// cast: y = x.to(dtype) between f32, f16, bf16, f8_e4m3fn and f8_e5m2, bit for bit as
// core/dtype.cpp converts (docs/ops-family4.md, "cast"; docs/opencl.md, "Family 4"). OpenCL C 1.2,
// no extension: every format is its storage integer (uint, ushort, uchar) and every conversion is
// integer code plus one exact f32 add or subtract, on vectors of CAST_E lanes.
// Build options (host: cast.cpp):
//   -DCAST_SRC=s -DCAST_DST=d   the formats, 0 f32, 1 f16, 2 bf16, 3 e4m3fn, 4 e5m2
//   -DCAST_E=4|8|16             elements per work-item step: 16 bytes of the narrower format
//   -DCAST_ALIGNED=0|1          1: both views' offsets are multiples of CAST_E and the buffers
//                               are aligned to 64 bytes, so whole steps are typed vector accesses
//                               (one 16-byte access on the narrow side) rather than vloadn
// The rows kernel (any layout) needs the prelude's dnnb_rows.

#define CAST_F32 0
#define CAST_F16 1
#define CAST_BF16 2
#define CAST_E4M3 3
#define CAST_E5M2 4
#if !defined(CAST_SRC) || !defined(CAST_DST) || !defined(CAST_E) || !defined(CAST_ALIGNED)
#error "cast.cl needs -DCAST_SRC, -DCAST_DST, -DCAST_E and -DCAST_ALIGNED"
#endif

#define CAST_CAT_(a, b) a##b
#define CAST_CAT(a, b) CAST_CAT_(a, b)
// uintE / floatE / intE and the storage vectors of the two formats.
#define CAST_UV CAST_CAT(uint, CAST_E)
#define CAST_FV CAST_CAT(float, CAST_E)
#define CAST_AS_UV CAST_CAT(as_uint, CAST_E)
#define CAST_AS_FV CAST_CAT(as_float, CAST_E)
#define CAST_VLOAD CAST_CAT(vload, CAST_E)
#define CAST_VSTORE CAST_CAT(vstore, CAST_E)

#if CAST_SRC == CAST_F32
typedef uint cast_src_t;
#elif CAST_SRC == CAST_F16 || CAST_SRC == CAST_BF16
typedef ushort cast_src_t;
#else
typedef uchar cast_src_t;
#endif
#if CAST_DST == CAST_F32
typedef uint cast_dst_t;
#define CAST_DST_SIZE 4
#elif CAST_DST == CAST_F16 || CAST_DST == CAST_BF16
typedef ushort cast_dst_t;
#define CAST_DST_SIZE 2
#else
typedef uchar cast_dst_t;
#define CAST_DST_SIZE 1
#endif
#if CAST_SRC == CAST_F32
#define CAST_SRC_VT CAST_CAT(uint, CAST_E)
#elif CAST_SRC == CAST_F16 || CAST_SRC == CAST_BF16
#define CAST_SRC_VT CAST_CAT(ushort, CAST_E)
#else
#define CAST_SRC_VT CAST_CAT(uchar, CAST_E)
#endif
#if CAST_DST_SIZE == 4
#define CAST_DST_VT CAST_CAT(uint, CAST_E)
#define CAST_TO_DST CAST_CAT(convert_uint, CAST_E)
#elif CAST_DST_SIZE == 2
#define CAST_DST_VT CAST_CAT(ushort, CAST_E)
#define CAST_TO_DST CAST_CAT(convert_ushort, CAST_E)
#else
#define CAST_DST_VT CAST_CAT(uchar, CAST_E)
#define CAST_TO_DST CAST_CAT(convert_uchar, CAST_E)
#endif
#define CAST_TO_UV CAST_CAT(convert_uint, CAST_E)

// ---- conversions (every lane on its own; the same integer forms as kernels/cuda/cast.cu) ------

// A narrow float (sign, E exponent bits, M mantissa bits, bias B) to f32 bits, exactly; ieee: the
// all-ones exponent is Inf or NaN (quiet, payload kept), else (e4m3fn) only S.1111.111 is NaN
// (0x7FC00000). A subnormal m 2^(1-B-M) is (2^(1-B) + m 2^(1-B-M)) - 2^(1-B), an exact subtraction.
inline CAST_UV cast_decode(CAST_UV code, uint e_bits, uint m_bits, uint bias, int ieee) {
  const uint mag_mask = (1u << (e_bits + m_bits)) - 1u;
  const CAST_UV sign = ((code >> (e_bits + m_bits)) & 1u) << 31;
  const CAST_UV mag = code & mag_mask;
  const CAST_UV shifted = mag << (23u - m_bits);
  const CAST_UV exponent = mag >> m_bits;
  const uint one = (128u - bias) << 23;
  const CAST_UV normal = shifted + ((127u - bias) << 23);
  const CAST_UV small = CAST_AS_UV(CAST_AS_FV(shifted + one) - as_float(one));
  CAST_UV out = select(normal, small, exponent == 0u);
  if (ieee) {
    const CAST_UV mantissa = (mag & ((1u << m_bits) - 1u)) << (23u - m_bits);
    const CAST_UV special = 0x7F800000u | mantissa | select((CAST_UV)(0u), (CAST_UV)(0x00400000u), mantissa != 0u);
    out = select(out, special, exponent == (1u << e_bits) - 1u);
  } else {
    out = select(out, (CAST_UV)(0x7FC00000u), mag == mag_mask);
  }
  return out | sign;
}

// f32 bits to a narrow float of M mantissa bits and bias B, round to nearest even: a normal
// result by rebiasing the exponent and adding half an ulp less one plus the lowest kept bit before
// the shift (a carry moves into the exponent); below the smallest normal 2^(1-B), |x| plus
// 2^(1-B-M+23), an f32 whose ulp is the target's quantum, so the f32 add (round to nearest even)
// does the rounding and the quanta are the sum's low bits. Codes past `top` (finite overflow, Inf)
// become `top`; NaN `nan`; the sign goes to bit `sign_bit`.
inline CAST_UV cast_encode(CAST_UV bits, uint m_bits, uint bias, uint top, uint nan, uint sign_bit) {
  const CAST_UV a = bits & 0x7FFFFFFFu;
  const uint magic = (151u - bias - m_bits) << 23;
  const CAST_UV small = CAST_AS_UV(CAST_AS_FV(a) + as_float(magic)) - magic;
  const CAST_UV normal =
      (a - ((127u - bias) << 23) + ((1u << (22u - m_bits)) - 1u) + ((a >> (23u - m_bits)) & 1u)) >> (23u - m_bits);
  CAST_UV code = select(normal, small, a < ((128u - bias) << 23));
  code = min(code, (CAST_UV)(top));
  code = select(code, (CAST_UV)(nan), a > 0x7F800000u);
  return code | ((bits >> (31u - sign_bit)) & (1u << sign_bit));
}

// bf16 has f32's exponent range: the rounding add on the top 16 bits; overflow reaches 0x7F80.
inline CAST_UV cast_encode_bf16(CAST_UV bits) {
  const CAST_UV a = bits & 0x7FFFFFFFu;
  const CAST_UV code = select((a + 0x7FFFu + ((a >> 16) & 1u)) >> 16, (CAST_UV)(0x7FC0u), a > 0x7F800000u);
  return code | ((bits >> 16) & 0x8000u);
}

inline CAST_UV cast_to_f32(CAST_UV code) {
#if CAST_SRC == CAST_F32
  return code;
#elif CAST_SRC == CAST_F16
  return cast_decode(code, 5u, 10u, 15u, 1);
#elif CAST_SRC == CAST_BF16
  return code << 16;
#elif CAST_SRC == CAST_E4M3
  return cast_decode(code, 4u, 3u, 7u, 0);
#else
  return cast_decode(code, 5u, 2u, 15u, 1);
#endif
}

inline CAST_UV cast_from_f32(CAST_UV bits) {
#if CAST_DST == CAST_F32
  return bits;
#elif CAST_DST == CAST_F16
  return cast_encode(bits, 10u, 15u, 0x7C00u, 0x7E00u, 15u);
#elif CAST_DST == CAST_BF16
  return cast_encode_bf16(bits);
#elif CAST_DST == CAST_E4M3
  return cast_encode(bits, 3u, 7u, 0x7Eu, 0x7Fu, 7u);  // overflow and Inf saturate to 448 (torch 2.15)
#else
  return cast_encode(bits, 2u, 15u, 0x7Cu, 0x7Fu, 7u);  // overflow and Inf give Inf
#endif
}

// One step of CAST_E source codes (widened to uint) to target codes. Same format: the bits.
inline CAST_UV cast_codes(CAST_UV code) {
#if CAST_SRC == CAST_DST
  return code;
#elif CAST_SRC == CAST_F16 && CAST_DST == CAST_E5M2
  // e5m2 is the top byte of an f16 (same bias): round the f16 bits to it directly.
  const CAST_UV a = code & 0x7FFFu;
  const CAST_UV out = select((a + 0x7Fu + ((a >> 8) & 1u)) >> 8, (CAST_UV)(0x7Fu), a > 0x7C00u);
  return out | ((code >> 8) & 0x80u);
#else
  return cast_from_f32(cast_to_f32(code));
#endif
}

// ---- kernels ----------------------------------------------------------------------------------

inline CAST_UV cast_load_step(const global cast_src_t* p) {
#if CAST_ALIGNED
  return CAST_TO_UV(*(const global CAST_SRC_VT*)p);
#else
  return CAST_TO_UV(CAST_VLOAD(0, p));
#endif
}
inline void cast_store_step(CAST_UV codes, global cast_dst_t* p) {
#if CAST_ALIGNED
  *(global CAST_DST_VT*)p = CAST_TO_DST(codes);
#else
  CAST_VSTORE(CAST_TO_DST(codes), 0, p);
#endif
}

// The last n < CAST_E elements of a contiguous run (or any n elements at a stride): through
// private arrays, the lanes past n converted from 0 and not stored.
inline void cast_partial(const global cast_src_t* x, long x_stride, global cast_dst_t* y, long y_stride, int n) {
  uint in[CAST_E], out[CAST_E];
  for (int k = 0; k < CAST_E; ++k) in[k] = k < n ? (uint)x[k * x_stride] : 0u;
  CAST_VSTORE(cast_codes(CAST_VLOAD(0, in)), 0, out);
  for (int k = 0; k < n; ++k) y[k * y_stride] = (cast_dst_t)out[k];
}

// x and y contiguous: n elements, CAST_E per work-item step.
kernel void cast_flat(const global cast_src_t* x, long x_offset, global cast_dst_t* y, long y_offset, long n) {
  const global cast_src_t* xp = x + x_offset;
  global cast_dst_t* yp = y + y_offset;
  for (long i = (long)get_global_id(0) * CAST_E; i < n; i += (long)get_global_size(0) * CAST_E) {
    if (i + CAST_E <= n)
      cast_store_step(cast_codes(cast_load_step(xp + i)), yp + i);
    else
      cast_partial(xp + i, 1, yp + i, 1, (int)(n - i));
  }
}

// Any layout: dimension 1 walks rows, dimension 0 steps of CAST_E columns; unit-stride steps
// with vloadn/vstoren, others element by element.
kernel void cast_rows(const global cast_src_t* x, dnnb_rows xr, global cast_dst_t* y, dnnb_rows yr) {
  for (long r = get_global_id(1); r < yr.rows; r += get_global_size(1)) {
    const global cast_src_t* xrow = x + dnnb_row_start(xr, r);
    global cast_dst_t* yrow = y + dnnb_row_start(yr, r);
    for (long c = (long)get_global_id(0) * CAST_E; c < yr.cols; c += (long)get_global_size(0) * CAST_E) {
      const int n = (int)min((long)CAST_E, yr.cols - c);
      if (n == CAST_E && xr.col_stride == 1 && yr.col_stride == 1)
        CAST_VSTORE(CAST_TO_DST(cast_codes(CAST_TO_UV(CAST_VLOAD(0, xrow + c)))), 0, yrow + c);
      else
        cast_partial(xrow + c * xr.col_stride, xr.col_stride, yrow + c * yr.col_stride, yr.col_stride, n);
    }
  }
}
