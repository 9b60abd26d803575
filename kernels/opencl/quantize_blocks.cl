// quantize_blocks and dequantize_blocks on OpenCL (docs/ops-family4.md; docs/opencl.md): one
// work-item per 32-value block, bit for bit as core/dtype.cpp's quantize_row and load_element.
// OpenCL C 1.2, no extension. The prelude's storage dtype (dnnb_t, -DDNNB_F32/F16/BF16) is x's
// for quantize_blocks and y's for dequantize_blocks.
// Build options (host: quantize_blocks.cpp, dequantize_blocks.cpp):
//   -DBLK_FORMAT=f   0 q8_0, 1 q4_0, 2 mxfp8 (E4M3), 3 mxfp4 (E2M1), 4 mxfp8_e5m2
//   -DBLK_BYTES=n    bytes per block: 34, 18, 33, 17, 33
// The host builds with -cl-fp32-correctly-rounded-divide-sqrt (q8_0 and q4_0 divide as the host
// does) and refuses a device without it for those formats. Products and sums are not contracted
// into FMAs (ggml's reference rounds each).
#pragma OPENCL FP_CONTRACT OFF

#if !defined(BLK_FORMAT) || !defined(BLK_BYTES)
#error "quantize_blocks.cl needs -DBLK_FORMAT and -DBLK_BYTES"
#endif
#define BLK_Q8_0 0
#define BLK_Q4_0 1
#define BLK_E4M3 2
#define BLK_E2M1 3
#define BLK_E5M2 4

// ---- Element codecs (integers; the MX scale by ldexp, which is exact) ----------------------

inline float blk_e4m3_to_f32(uint c) {
  const uint mag = c & 0x7Fu;
  float v;
  if (mag == 0x7Fu) v = as_float(0x7FC00000u);
  else if (mag < 8u) v = (float)mag * 0x1p-9f;
  else v = as_float((mag << 20) + (120u << 23));
  return (c & 0x80u) ? -v : v;
}
inline float blk_e5m2_to_f32(uint c) {
  const uint mag = c & 0x7Fu;
  float v;
  if (mag >= 0x7Cu) v = mag == 0x7Cu ? as_float(0x7F800000u) : as_float(0x7FC00000u);
  else if (mag < 4u) v = (float)mag * 0x1p-16f;
  else v = as_float((mag << 21) + (112u << 23));
  return (c & 0x80u) ? -v : v;
}
inline float blk_e2m1_to_f32(uint c) {
  const float m[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = m[c & 7u];
  return (c & 8u) ? -v : v;
}

// f32 -> fp8 (M mantissa bits, bias B) to nearest even, codes past `top` clamped to it (MX's
// saturation: e4m3 0x7E = 448, e5m2 0x7B = 57344), sign in bit 7; finite inputs only. Normal
// results rebias and round in integers; below the smallest normal one exact-quantum f32 add.
inline uint blk_encode_fp8(float v, uint m_bits, uint bias, uint top) {
  const uint bits = as_uint(v), a = bits & 0x7FFFFFFFu;
  uint code;
  if (a < ((1u - bias + 127u) << 23)) {
    const uint magic = (1u - bias - m_bits + 23u + 127u) << 23;
    code = as_uint(as_float(a) + as_float(magic)) - magic;
  } else {
    const uint lsb = (a >> (23u - m_bits)) & 1u;
    code = (a + ((bias - 127u) << 23) + (1u << (22u - m_bits)) - 1u + lsb) >> (23u - m_bits);
  }
  return min(code, top) | ((bits >> 24) & 0x80u);
}
// f32 -> E2M1 to nearest even, saturating at 6: boundaries below |v|, ties to the even code.
inline uint blk_encode_e2m1(float v) {
  const float a = fabs(v);
  uint c = (uint)(a > 0.25f) + (uint)(a >= 0.75f) + (uint)(a > 1.25f) + (uint)(a >= 1.75f) + (uint)(a > 2.5f) +
           (uint)(a >= 3.5f) + (uint)(a > 5.0f);
  return c | ((as_uint(v) >> 28) & 0x8u);
}

inline float blk_f16_to_f32(const global uchar* p) { return vload_half(0, (const global half*)p); }

// ---- dequantize_blocks: x (blocks, rows xr in values) -> y (dnnb_t, contiguous) -------------

kernel void dequantize_blocks(const global uchar* x, dnnb_rows xr, global dnnb_t* y, long y_offset) {
  const long per_row = xr.cols / 32, n_blocks = xr.rows * per_row;
  for (long b = get_global_id(0); b < n_blocks; b += get_global_size(0)) {
    // Row starts are whole blocks (a block tensor's offset and strides are multiples of 32).
    const global uchar* block = x + (dnnb_row_start(xr, b / per_row) / 32 + b % per_row) * BLK_BYTES;
    global dnnb_t* out = y + y_offset + b * 32;
#if BLK_FORMAT == BLK_Q8_0 || BLK_FORMAT == BLK_Q4_0
    const float d = blk_f16_to_f32(block);
    for (int j = 0; j < 32; j += 4) {
#if BLK_FORMAT == BLK_Q8_0
      const float4 q = convert_float4(as_char4(vload4(0, block + 2 + j)));
#else
      const uchar4 bytes = vload4(0, block + 2 + (j & 15));
      const uchar4 nib = j < 16 ? (bytes & (uchar4)(15)) : (bytes >> (uchar4)(4));
      const float4 q = convert_float4(convert_int4(nib) - 8);
#endif
      DNNB_STORE4(out, j, q * d);
    }
#else
    const uint s = block[0];
    for (int j = 0; j < 32; j += 4) {
      float4 v;
#if BLK_FORMAT == BLK_E2M1
      const uchar2 pair = vload2(0, block + 1 + j / 2);
      v = (float4)(blk_e2m1_to_f32(pair.x & 15u), blk_e2m1_to_f32(pair.x >> 4), blk_e2m1_to_f32(pair.y & 15u),
                   blk_e2m1_to_f32(pair.y >> 4));
#else
      const uchar4 c = vload4(0, block + 1 + j);
#if BLK_FORMAT == BLK_E4M3
      v = (float4)(blk_e4m3_to_f32(c.x), blk_e4m3_to_f32(c.y), blk_e4m3_to_f32(c.z), blk_e4m3_to_f32(c.w));
#else
      v = (float4)(blk_e5m2_to_f32(c.x), blk_e5m2_to_f32(c.y), blk_e5m2_to_f32(c.z), blk_e5m2_to_f32(c.w));
#endif
#endif
      // 2^(s - 127) x element, exact (ldexp of a value with at most 4 significant bits); the scale
      // 0xFF is NaN for the whole block.
      const int e = (int)s - 127;
      v = (float4)(ldexp(v.x, e), ldexp(v.y, e), ldexp(v.z, e), ldexp(v.w, e));
      if (s == 0xFFu) v = (float4)(as_float(0x7FC00000u));
      DNNB_STORE4(out, j, v);
    }
#endif
  }
}

// ---- quantize_blocks: x (dnnb_t, any layout) -> y (blocks), contiguous ---------------------

// Block b of the output: row b / blocks_per_row, columns 32 (b % blocks_per_row) onwards.
kernel void quantize_blocks(const global dnnb_t* x, dnnb_rows xr, global uchar* y, long y_offset_blocks) {
  const long per_row = xr.cols / 32, n_blocks = xr.rows * per_row;
  for (long b = get_global_id(0); b < n_blocks; b += get_global_size(0)) {
    const long r = b / per_row, c0 = (b % per_row) * 32;
    const long start = dnnb_row_start(xr, r);
    float v[32];
    bool finite = true;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      v[j] = DNNB_LOAD(x, start + (c0 + j) * xr.col_stride);
      finite = finite && isfinite(v[j]);
      amax = fmax(amax, fabs(v[j]));
    }
    global uchar* block = y + (y_offset_blocks + b) * BLK_BYTES;
    if (!finite) {  // core/dtype.cpp's NaN block: a NaN scale, zero elements
#if BLK_FORMAT == BLK_Q8_0 || BLK_FORMAT == BLK_Q4_0
      block[0] = 0x00;
      block[1] = 0x7E;
      for (int j = 2; j < BLK_BYTES; ++j) block[j] = BLK_FORMAT == BLK_Q4_0 ? 0x88 : 0x00;
#else
      block[0] = 0xFF;
      for (int j = 1; j < BLK_BYTES; ++j) block[j] = 0x00;
#endif
      continue;
    }
#if BLK_FORMAT == BLK_Q8_0
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    vstore_half_rte(d, 0, (global half*)block);
    for (int j = 0; j < 32; ++j) {
      const float q = round(v[j] * id);  // half away from zero, as roundf
      block[2 + j] = (uchar)(char)(isnan(q) ? 0 : (int)clamp(q, -127.0f, 127.0f));
    }
#elif BLK_FORMAT == BLK_Q4_0
    float max = 0.0f, best = 0.0f;
    for (int j = 0; j < 32; ++j)
      if (best < fabs(v[j])) {
        best = fabs(v[j]);
        max = v[j];
      }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    vstore_half_rte(d, 0, (global half*)block);
    for (int j = 0; j < 16; ++j) {
      uint q[2];
      for (int h = 0; h < 2; ++h) {
        const float scaled = v[j + 16 * h] * id;
        const float shifted = scaled + 8.5f;
        q[h] = !(shifted > 0.0f) ? 0u : shifted >= 15.0f ? 15u : (uint)shifted;
      }
      block[2 + j] = (uchar)(q[0] | (q[1] << 4));
    }
#else
    // OCP MX: X = 2^(floor(log2(amax)) - emax_elem), clamped to 2^-127 .. 2^127 (a zero or f32
    // subnormal amax gives 2^-127); elements x / X rounded to nearest even and saturated.
#if BLK_FORMAT == BLK_E4M3
    const int emax = 8;
#elif BLK_FORMAT == BLK_E5M2
    const int emax = 15;
#else
    const int emax = 2;
#endif
    const int field = (int)(as_uint(amax) >> 23);
    const int e = field == 0 ? -127 : clamp(field - 127 - emax, -127, 127);
    block[0] = (uchar)(e + 127);
#if BLK_FORMAT == BLK_E2M1
    for (int k = 0; k < 16; ++k)
      block[1 + k] = (uchar)(blk_encode_e2m1(ldexp(v[2 * k], -e)) | (blk_encode_e2m1(ldexp(v[2 * k + 1], -e)) << 4));
#else
    for (int j = 0; j < 32; ++j)
      block[1 + j] = (uchar)(BLK_FORMAT == BLK_E4M3 ? blk_encode_fp8(ldexp(v[j], -e), 3u, 7u, 0x7Eu)
                                                    : blk_encode_fp8(ldexp(v[j], -e), 2u, 15u, 0x7Bu));
#endif
#endif
  }
}
