// matmul_ggml (docs/ops-family4.md): y = x w^T with w in q8_0 or q4_0, as ggml computes it.
// Built per x dtype (prelude.cl's DNNB_F32 / _F16 / _BF16: dnnb_t, DNNB_LOAD), weight format
// (GGML_Q8 or GGML_Q4), GGML_MT (x rows per launch row tile, 1..8) and GGML_DP4A=1 where
// NVIDIA's inline PTX is taken (dp4a.s32.s32; the host asks for compute capability 8.0, the
// condition of prelude.cl's PTX tier, well past dp4a's 6.1). Without it the 4-byte dot is
// portable integer code; with cl_khr_integer_dot_product (GGML_KHR_DOT=1) its built-in.
// Built with -cl-fp32-correctly-rounded-divide-sqrt: the host refuses a device without it,
// since x's quantisation divides in f32 and must round as the host's does.

// The f16 bits of a finite d >= 0, rounded to nearest even (65520 and above give Inf).
inline ushort ggml_f16_bits(float d) {
  if (d >= 65520.0f) return (ushort)0x7c00u;
  const uint bits = as_uint(d);
  const int e = (int)(bits >> 23) - 127;
  if (e < -14) return (ushort)rint(d * 16777216.0f);  // subnormal quanta of 2^-24 (1024: the smallest normal)
  const uint mant = bits & 0x7fffffu;
  uint h = ((uint)(e + 15) << 10) | (mant >> 13);
  const uint rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return (ushort)h;
}

// The value of f16 bits h without a sign (d >= 0): exact in f32.
inline float ggml_f16_value(ushort h) {
  const uint e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0u) return (float)m * 0x1p-24f;
  if (e == 31u) return as_float(0x7f800000u | (m << 13));
  return as_float(((e + 112u) << 23) | (m << 13));
}

// One block of x per work-item (rows x blocks items): core/dtype.cpp's quantize_row for q8_0
// (ggml's quantize_row_q8_0_ref): d = amax / 127, id = 1 / d (0 for d = 0), q = round(x id)
// half away from zero, clamped to +-127 (NaN -> 0, only where id is Inf), d stored as f16; a
// block with a NaN or an Inf gets a NaN d and q = 0. Writes the 32 quants (qx, 8 uints a
// block), d decoded to f32 (dx) and the sum of the quants (sx, q4_0's correction).
kernel void ggml_quantize_x(const global dnnb_t* x, long x_offset, long x_row_stride, long x_col_stride,
                            long rows, int nb, global uint* ws, long dx_at, long sx_at) {
  global uint* qx = ws;
  global float* dx = (global float*)(ws + dx_at);
  global int* sx = (global int*)(ws + sx_at);
  const long item = get_global_id(0);
  if (item >= rows * nb) return;
  const long i = item / nb;
  const int b = (int)(item % nb);
  const global dnnb_t* src = x + x_offset + i * x_row_stride + (long)b * 32 * x_col_stride;
  float v[32];
  bool finite = true;
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) {
    v[j] = DNNB_LOAD(src, j * x_col_stride);
    finite = finite && isfinite(v[j]);
    amax = fmax(amax, fabs(v[j]));
  }
  global uint* q = qx + item * 8;
  if (!finite) {
    for (int j = 0; j < 8; ++j) q[j] = 0u;
    dx[item] = as_float(0x7fc00000u);  // the decoded f16 NaN 0x7e00
    sx[item] = 0;
    return;
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int sum = 0;
  for (int j = 0; j < 8; ++j) {
    uint word = 0u;
    for (int t = 0; t < 4; ++t) {
      const float r = round(v[4 * j + t] * id);
      const int qi = isnan(r) ? 0 : (int)clamp(r, -127.0f, 127.0f);
      sum += qi;
      word |= ((uint)qi & 0xffu) << (8 * t);
    }
    q[j] = word;
  }
  dx[item] = ggml_f16_value(ggml_f16_bits(d));
  sx[item] = sum;
}

#ifndef GGML_DP4A
#define GGML_DP4A 0
#endif
#ifndef GGML_KHR_DOT
#define GGML_KHR_DOT 0
#endif

// Sum of the four signed byte products of a and b, plus c.
inline int ggml_dot4(uint a, uint b, int c) {
#if GGML_DP4A
  int r;
  asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
#elif GGML_KHR_DOT && defined(__opencl_c_integer_dot_product_input_4x8bit_packed)
  return c + dot_4x8packed_ss_int(a, b);
#else
  const int4 p = convert_int4(as_char4(a)) * convert_int4(as_char4(b));
  return c + p.x + p.y + p.z + p.w;
#endif
}

#if defined(GGML_Q8)
#define GGML_BLOCK_BYTES 34
#elif defined(GGML_Q4)
#define GGML_BLOCK_BYTES 18
#else
#error "build with -DGGML_Q8 or -DGGML_Q4"
#endif

// Four bytes of a block's quants from two 2-byte aligned halves (blocks are 34 or 18 bytes
// apart, so only 2-byte alignment holds).
inline uint ggml_word(const global ushort* p) { return (uint)p[0] | ((uint)p[1] << 16); }

// y rows [tile x GGML_MT, +GGML_MT) x w rows [group x GGML_ROWS, +GGML_ROWS): each row of w gets
// GGML_LANES items, item l taking blocks l, l + GGML_LANES, ...; per block the integer dot with
// each x row (exact), then acc += sumi x (d_w x d_x) (the product of two f16 values, exact in
// f32), one f32 accumulator per x row; the row's items are then summed by a tree in local
// memory.
kernel void ggml_matmul(const global uchar* w, long w_offset, long w_row_bytes, long n_rows, int nb,
                        const global uint* ws, long dx_at, long sx_at, long m_rows,
                        global float* y, long y_offset, long y_row_stride, local float* scratch) {
  const global uint* qx = ws;
  const global float* dx = (const global float*)(ws + dx_at);
  const global int* sx = (const global int*)(ws + sx_at);
  const int lane = get_local_id(0) % GGML_LANES;
  const int r = get_local_id(0) / GGML_LANES;
  const long j = (long)get_group_id(0) * GGML_ROWS + r;
  const long i0 = (long)get_group_id(1) * GGML_MT;
  const int mt = (int)min((long)GGML_MT, m_rows - i0);
  float acc[GGML_MT];
  for (int v = 0; v < GGML_MT; ++v) acc[v] = 0.0f;
  if (j < n_rows) {
    const global uchar* row = w + w_offset + j * w_row_bytes;
    for (int b = lane; b < nb; b += GGML_LANES) {
      const global ushort* block = (const global ushort*)(row + (long)b * GGML_BLOCK_BYTES);
      const float dw = vload_half(0, (const global half*)block);
      uint wq[8];
#if defined(GGML_Q8)
      for (int t = 0; t < 8; ++t) wq[t] = ggml_word(block + 1 + 2 * t);
#else
      for (int t = 0; t < 4; ++t) {
        const uint packed = ggml_word(block + 1 + 2 * t);
        wq[t] = packed & 0x0f0f0f0fu;             // elements 4t .. 4t + 3: codes 0..15
        wq[t + 4] = (packed >> 4) & 0x0f0f0f0fu;  // elements 16 + 4t ..
      }
#endif
      for (int v = 0; v < GGML_MT; ++v) {
        if (v >= mt) break;
        const long xb = (i0 + v) * nb + b;
        const global uint* xq = qx + xb * 8;
        int sumi = 0;
        for (int t = 0; t < 8; ++t) sumi = ggml_dot4(wq[t], xq[t], sumi);
#if defined(GGML_Q4)
        sumi -= 8 * sx[xb];  // codes are q + 8
#endif
        acc[v] = fma((float)sumi, dw * dx[xb], acc[v]);
      }
    }
  }
  // Tree over the GGML_LANES items of each row, one x row at a time.
  local float* mine = scratch + r * GGML_LANES;
  for (int v = 0; v < GGML_MT; ++v) {
    mine[lane] = acc[v];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = GGML_LANES / 2; s > 0; s >>= 1) {
      if (lane < s) mine[lane] += mine[lane + s];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane == 0 && j < n_rows && v < mt) y[y_offset + (i0 + v) * y_row_stride + j] = mine[0];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
