// matmul_i8 (torch._int_mm): y i32 [M, N] = a i8 [M, K] @ b i8 [K, N], exact, any strides of a
// and b (element strides; offsets in elements), y rows of stride ys.
// A work-group of 16 x 16 items computes a 64 x 64 tile of y, each item 4 x 4 elements (rows
// ty + 16 i, columns tx + 16 j, so neighbouring items read neighbouring local words). K runs in
// chunks of 32: the chunk's 64 rows of a and 64 columns of b are packed into local memory as
// 32-bit words of 4 consecutive K steps (zero past K), then each item takes 8 word dots per
// element. Sums stay exact: every partial sum is at most K x 2^14 < 2^31 (the spec's K bound).
// Dot forms (MM_DOT): 2 = NVIDIA's dp4a through inline PTX (the host asks for it on NVIDIA
// devices of compute capability 8.0 and more, prelude.cl's PTX condition; dp4a needs 6.1),
// 1 = cl_khr_integer_dot_product's packed built-in where the compiler declares it, else the
// portable form (four byte products summed).
#ifndef MM_DOT
#define MM_DOT 0
#endif

#define MM_TILE 64
#define MM_WORDS 8  // words of a K chunk (32 K steps)

inline int mm_dot4(uint a, uint b, int c) {
#if MM_DOT == 2
  int r;
  asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
#elif MM_DOT == 1 && defined(__opencl_c_integer_dot_product_input_4x8bit_packed)
  return c + dot_4x8packed_ss_int(a, b);
#else
  const int4 p = convert_int4(as_char4(a)) * convert_int4(as_char4(b));
  return c + p.x + p.y + p.z + p.w;
#endif
}

// Word of K steps k0 .. k0 + 3 of a line of x (element e at base + e * stride), zero past k.
inline uint mm_word(const global char* x, long base, long stride, long k0, long k) {
  uint w = 0;
  for (int s = 0; s < 4; ++s)
    if (k0 + s < k) w |= ((uint)(uchar)x[base + (k0 + s) * stride]) << (8 * s);
  return w;
}

kernel void matmul_i8_tiles(const global char* a, long a_off, long a_rs, long a_cs,
                            const global char* b, long b_off, long b_rs, long b_cs,
                            global int* y, long y_off, long ys, long m, long n, long k) {
  local uint as[MM_TILE][MM_WORDS + 1];  // + 1: rows of a land in different banks
  local uint bs[MM_WORDS][MM_TILE];
  const int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
  const int lid = ty * 16 + tx;
  const long row0 = (long)get_group_id(1) * MM_TILE, col0 = (long)get_group_id(0) * MM_TILE;
  int acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0;
  for (long k0 = 0; k0 < k; k0 += 4 * MM_WORDS) {
    // 64 x 8 words of a and 8 x 64 of b: two of each per item.
    for (int t = lid; t < MM_TILE * MM_WORDS; t += 256) {
      const int r = t / MM_WORDS, w = t % MM_WORDS;
      const long row = row0 + r;
      as[r][w] = row < m ? mm_word(a, a_off + row * a_rs, a_cs, k0 + 4 * w, k) : 0u;
      const int wb = t / MM_TILE, c = t % MM_TILE;
      const long col = col0 + c;
      bs[wb][c] = col < n ? mm_word(b, b_off + col * b_cs, b_rs, k0 + 4 * wb, k) : 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = 0; w < MM_WORDS; ++w) {
      uint av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = as[ty + 16 * i][w];
      for (int j = 0; j < 4; ++j) bv[j] = bs[w][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = mm_dot4(av[i], bv[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < 4; ++i) {
    const long row = row0 + ty + 16 * i;
    if (row >= m) continue;
    for (int j = 0; j < 4; ++j) {
      const long col = col0 + tx + 16 * j;
      if (col < n) y[y_off + row * ys + col] = acc[i][j];
    }
  }
}
