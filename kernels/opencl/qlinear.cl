// quantize_linear and dequantize_linear, bit for bit suites/ops/qlinear_desc.h's rules
// (docs/ops-family4.md, "quantize_linear and dequantize_linear").
// OpenCL C 1.2, no extension; the program is built with -cl-fp32-correctly-rounded-divide-sqrt
// (the host refuses a device without it), so 1.0f / scale is the IEEE reciprocal.
//   quantize:   v = rint(x * (1 / scale)) (one f32 multiply, ties to even), clamped by fmax/fmin
//               to [qmin - zp, qmax - zp] (fmax returns the other operand for NaN: qmin), then
//               convert_int (exact) + zp, stored as its low byte (the same bits for i8 and u8).
//   dequantize: convert_float(q - zp) (exact) * scale, one f32 multiply.
// Build options (host: kernels/opencl/qlinear.h):
//   -DQL_QUANTIZE=1|0    which op
//   -DQL_SIGNED=1|0      the integer side is i8 (char) or u8 (uchar)
//   -DQL_MODE=0|1|2      0 per tensor; 1 per channel with every aligned 16-element step inside one
//                        channel (inner a multiple of 16); 2 per channel, a channel per element
//   -DQL_ALIGNED=0|1     1: x's and y's offsets are whole 16-element steps and buffers are aligned
//                        to 64 bytes, so a step is typed vector accesses (a 16-byte one on the
//                        integer side) rather than vloadn/vstoren
// The rows kernels (x in any layout, y contiguous) need the prelude's dnnb_rows.

#if !defined(QL_QUANTIZE) || !defined(QL_SIGNED) || !defined(QL_MODE) || !defined(QL_ALIGNED)
#error "qlinear.cl needs -DQL_QUANTIZE, -DQL_SIGNED, -DQL_MODE and -DQL_ALIGNED"
#endif

#if QL_SIGNED
typedef char ql_int_t;
typedef char16 ql_int16_t;
#define QL_QMIN (-128)
#define QL_QMAX 127
#define QL_CONVERT_INT16 convert_char16
#else
typedef uchar ql_int_t;
typedef uchar16 ql_int16_t;
#define QL_QMIN 0
#define QL_QMAX 255
#define QL_CONVERT_INT16 convert_uchar16
#endif

#if QL_QUANTIZE
typedef float ql_src_t;
typedef float16 ql_src16_t;
typedef ql_int_t ql_dst_t;
typedef ql_int16_t ql_dst16_t;
#else
typedef ql_int_t ql_src_t;
typedef ql_int16_t ql_src16_t;
typedef float ql_dst_t;
typedef float16 ql_dst16_t;
#endif

// The channel of logical element `flat` (per tensor: 0).
inline long ql_channel(long flat, long inner, long channels) {
#if QL_MODE == 0
  return 0;
#else
  return (flat / inner) % channels;
#endif
}

// The conversion factor of channel c: 1 / scale (quantize) or scale.
inline float ql_factor(const global float* scale, long c) {
#if QL_QUANTIZE
  return 1.0f / scale[c];
#else
  return scale[c];
#endif
}

inline ql_dst_t ql_one(ql_src_t x, float f, int zp) {
#if QL_QUANTIZE
  const float v = fmin(fmax(rint(x * f), (float)(QL_QMIN - zp)), (float)(QL_QMAX - zp));
  return (ql_dst_t)(convert_int(v) + zp);
#else
  return convert_float((int)x - zp) * f;
#endif
}

inline ql_dst16_t ql_sixteen(ql_src16_t x, float f, int zp) {
#if QL_QUANTIZE
  const float16 v = fmin(fmax(rint(x * f), (float16)((float)(QL_QMIN - zp))), (float16)((float)(QL_QMAX - zp)));
  return QL_CONVERT_INT16(convert_int16(v) + zp);
#else
  return convert_float16(convert_int16(x) - zp) * f;
#endif
}

// Contiguous x and y: a work-item converts 16 consecutive elements a step.
kernel void qlinear_flat(const global ql_src_t* x, long x_offset, global ql_dst_t* y, long y_offset, long n,
                         const global float* scale, const global int* zero_point, long inner, long channels) {
  for (long i = (long)get_global_id(0) * 16; i < n; i += (long)get_global_size(0) * 16) {
    if (i + 16 <= n) {
#if QL_MODE == 2
      ql_dst_t out[16];
      for (int l = 0; l < 16; ++l) {
        const long c = ql_channel(i + l, inner, channels);
        out[l] = ql_one(x[x_offset + i + l], ql_factor(scale, c), zero_point[c]);
      }
      vstore16(vload16(0, out), 0, y + y_offset + i);
#else
      const long c = ql_channel(i, inner, channels);
#if QL_ALIGNED
      ((global ql_dst16_t*)(y + y_offset))[i / 16] =
          ql_sixteen(((const global ql_src16_t*)(x + x_offset))[i / 16], ql_factor(scale, c), zero_point[c]);
#else
      vstore16(ql_sixteen(vload16(0, x + x_offset + i), ql_factor(scale, c), zero_point[c]), 0, y + y_offset + i);
#endif
#endif
    } else {
      for (long j = i; j < n; ++j) {
        const long c = ql_channel(j, inner, channels);
        y[y_offset + j] = ql_one(x[x_offset + j], ql_factor(scale, c), zero_point[c]);
      }
    }
  }
}

// x in any layout (rows of dnnb_rows), y contiguous: element (r, c) is logical element r * cols + c.
kernel void qlinear_rows(const global ql_src_t* x, dnnb_rows xr, global ql_dst_t* y, long y_offset,
                         const global float* scale, const global int* zero_point, long inner, long channels) {
  for (long r = get_global_id(1); r < xr.rows; r += get_global_size(1)) {
    const long start = dnnb_row_start(xr, r);
    for (long c = get_global_id(0); c < xr.cols; c += get_global_size(0)) {
      const long flat = r * xr.cols + c;
      const long ch = ql_channel(flat, inner, channels);
      y[y_offset + flat] = ql_one(x[start + c * xr.col_stride], ql_factor(scale, ch), zero_point[ch]);
    }
  }
}
