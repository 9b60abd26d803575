// Tensor-core GEMM for f16 and bf16 on NVIDIA (compute capability 8.0 and later), through
// inline PTX: mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}, f32 accumulation. Same
// operands and results as gemm_tiled (dnnb_gemm in product_body.cl: any strides, batch, bias,
// y of the storage dtype or f32); the host builds it only for NVIDIA devices with the tier, or
// with -DDNNB_MMA_EMULATE=1 anywhere (below).
//
// Tiling: a work-group of 256 items (8 warps, 2 along M x 4 along N) computes a 128 x 128 tile
// of y; each warp a 64 x 32 piece as 4 x 4 mma tiles of 16 x 8 (64 f32 accumulators per item).
// K goes in steps of 32. Both operands are staged in local memory as storage bits with k
// innermost (A as [m][k], B as [n][k]), rows padded to 40 elements (80 bytes), so a fragment's
// 32-bit loads (8 rows x 4 pairs of k) fall in 32 different banks. Each item fetches two
// 8-element vectors of A and two of B per step along the operand's unit-stride dim; the next
// step's vectors are fetched into registers before the current step's mmas, and stored to local
// memory after them.
//
// Fragments (PTX ISA, m16n8k16 with 16-bit operands; g = lane / 4, t = lane % 4; each register
// holds two consecutive k, the lower k in the low half):
//   A (16 x 16, row): a0 (row g, k 2t), a1 (row g+8, k 2t), a2 (row g, k 2t+8), a3 (row g+8, k 2t+8)
//   B (16 x 8, col):  b0 (k 2t, col g), b1 (k 2t+8, col g)
//   C, D (16 x 8 f32): c0, c1 (row g, cols 2t, 2t+1), c2, c3 (row g+8, cols 2t, 2t+1)
// The work-items of a warp are 32 consecutive local ids (NVIDIA forms warps that way).
//
// DNNB_MMA_EMULATE=1: the mmas are computed from the same fragments exchanged through local
// memory (dnnb_mma_step), so the tiling and fragment code runs, and is checked, on any device
// (PoCL); only the PTX line itself needs NVIDIA.
#if !defined(DNNB_F16) && !defined(DNNB_BF16)
#error "gemm_mma is for f16 and bf16 programs"
#endif
#ifndef DNNB_MMA_EMULATE
#define DNNB_MMA_EMULATE 0
#endif

#define DNNB_MMA_WG 256
#define DNNB_MMA_TILE 128                   // rows and columns of y per work-group
#define DNNB_MMA_KT 32                      // k per local-memory step
#define DNNB_MMA_LD (DNNB_MMA_KT + 8)       // elements per row of a local tile
#define DNNB_MMA_MI 4                       // mma tiles along M per warp (64 rows)
#define DNNB_MMA_NJ 4                       // mma tiles along N per warp (32 columns)

#if DNNB_MMA_EMULATE
// Storage bits (low 16 bits of `bits`) to f32.
inline float dnnb_mma_value(uint bits) {
#if defined(DNNB_BF16)
  return as_float((bits & 0xffffu) << 16);
#else
  const ushort h = (ushort)bits;
  return vload_half(0, (const private half*)&h);
#endif
}

// The words an item posts per k16 step: its A fragments, then its B fragments.
#define DNNB_MMA_POST (4 * DNNB_MMA_MI + 2 * DNNB_MMA_NJ)

// acc[i][j] += the mma of A fragment i and B fragment j for every i, j, computed from the warp's
// fragments: each item posts its registers to `xchg`, then forms its outputs of each mma tile
// from the registers of the items that hold them, in k order. Two barriers per k16 step, the
// loops left rolled: PoCL compiles this form in seconds.
inline void dnnb_mma_step(float acc[DNNB_MMA_MI][DNNB_MMA_NJ][4], uint af[DNNB_MMA_MI][4], uint bf[DNNB_MMA_NJ][2],
                          local uint* xchg) {
  const int lid = get_local_id(0);
  const int lane = lid & 31;
  local uint* w = xchg + (lid >> 5) * 32 * DNNB_MMA_POST;  // this warp's posts, item by item
  for (int i = 0; i < DNNB_MMA_MI; ++i)
    for (int r = 0; r < 4; ++r) w[lane * DNNB_MMA_POST + 4 * i + r] = af[i][r];
  for (int j = 0; j < DNNB_MMA_NJ; ++j)
    for (int r = 0; r < 2; ++r) w[lane * DNNB_MMA_POST + 4 * DNNB_MMA_MI + 2 * j + r] = bf[j][r];
  barrier(CLK_LOCAL_MEM_FENCE);
  const int g = lane >> 2, t = lane & 3;
  for (int i = 0; i < DNNB_MMA_MI; ++i) {
    for (int j = 0; j < DNNB_MMA_NJ; ++j) {
      for (int e = 0; e < 4; ++e) {
        const int row = g + (e >= 2 ? 8 : 0);
        const int col = 2 * t + (e & 1);
        float s = acc[i][j][e];
        for (int k = 0; k < 16; ++k) {
          const int holder = (k & 7) >> 1;  // t of the items holding column k of A, row k of B
          const uint wa = w[((row & 7) * 4 + holder) * DNNB_MMA_POST + 4 * i + (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)];
          const uint wb = w[(col * 4 + holder) * DNNB_MMA_POST + 4 * DNNB_MMA_MI + 2 * j + (k >= 8 ? 1 : 0)];
          const int shift = (k & 1) * 16;
          s = fma(dnnb_mma_value(wa >> shift), dnnb_mma_value(wb >> shift), s);
        }
        acc[i][j][e] = s;
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}
#else
#if defined(DNNB_BF16)
#define DNNB_MMA_PTX "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#else
#define DNNB_MMA_PTX "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#endif
// acc[i][j] += the mma of A fragment i and B fragment j for every i, j: one mma.sync each.
inline void dnnb_mma_step(float acc[DNNB_MMA_MI][DNNB_MMA_NJ][4], uint af[DNNB_MMA_MI][4], uint bf[DNNB_MMA_NJ][2],
                          local uint* xchg) {
#pragma unroll
  for (int i = 0; i < DNNB_MMA_MI; ++i) {
#pragma unroll
    for (int j = 0; j < DNNB_MMA_NJ; ++j) {
      float* c = acc[i][j];
      float d0, d1, d2, d3;
      asm volatile(DNNB_MMA_PTX " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                   : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                   : "r"(af[i][0]), "r"(af[i][1]), "r"(af[i][2]), "r"(af[i][3]), "r"(bf[j][0]), "r"(bf[j][1]),
                     "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
      c[0] = d0;
      c[1] = d1;
      c[2] = d2;
      c[3] = d3;
    }
  }
}
#endif

// Eight storage elements p[start + (c + j) stride], j < 8, those at or past `count` as 0.
inline ushort8 dnnb_mma_load8(const global ushort* p, long start, long stride, long count, long c) {
  if (stride == 1 && c + 8 <= count) return vload8(0, p + start + c);
  ushort e[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int j = 0; j < 8; ++j)
    if (c + j < count) e[j] = p[start + (c + j) * stride];
  return vload8(0, e);
}

// An item's two vectors of a 128 x 32 slab (rows: m for A, n for B) of an operand. fast_k: the
// operand's unit stride is along k, so a vector is 8 consecutive k of one row; otherwise 8
// consecutive rows at one k.
inline void dnnb_mma_fetch(const global ushort* p, long base, long stride_row, long stride_k, long n_rows, long n_k,
                           long row0, long k0, int fast_k, int lid, ushort8* v) {
  for (int i = 0; i < 2; ++i) {
    const int q = lid + DNNB_MMA_WG * i;
    if (fast_k) {
      const long row = row0 + (q >> 2);
      v[i] = row < n_rows ? dnnb_mma_load8(p, base + row * stride_row, stride_k, n_k, k0 + (q & 3) * 8) : (ushort8)(0);
    } else {
      const long k = k0 + (q >> 4);
      v[i] = k < n_k ? dnnb_mma_load8(p, base + k * stride_k, stride_row, n_rows, row0 + (q & 15) * 8) : (ushort8)(0);
    }
  }
}

// The vectors of dnnb_mma_fetch into the [row][k] local tile.
inline void dnnb_mma_put(local ushort* tile, int fast_k, int lid, const ushort8* v) {
  for (int i = 0; i < 2; ++i) {
    const int q = lid + DNNB_MMA_WG * i;
    if (fast_k) {
      vstore8(v[i], 0, tile + (q >> 2) * DNNB_MMA_LD + (q & 3) * 8);
    } else {
      ushort e[8];
      vstore8(v[i], 0, e);
      const int k = q >> 4, r = (q & 15) * 8;
      for (int j = 0; j < 8; ++j) tile[(r + j) * DNNB_MMA_LD + k] = e[j];
    }
  }
}

kernel __attribute__((reqd_work_group_size(DNNB_MMA_WG, 1, 1))) void gemm_mma(const global ushort* a,
                                                                              const global ushort* b,
                                                                              const global dnnb_t* bias,
                                                                              global uchar* y, dnnb_gemm g) {
  // uint arrays: every fragment load (an even element index) is an aligned 32-bit word.
  local uint a_words[DNNB_MMA_TILE * DNNB_MMA_LD / 2];
  local uint b_words[DNNB_MMA_TILE * DNNB_MMA_LD / 2];
  local ushort* a_tile = (local ushort*)a_words;
  local ushort* b_tile = (local ushort*)b_words;
#if DNNB_MMA_EMULATE
  local uint xchg[DNNB_MMA_WG * DNNB_MMA_POST];
#else
  local uint* xchg = 0;
#endif
  const int lid = get_local_id(0);
  const int warp = lid >> 5;
  const int lane = lid & 31;
  const int fg = lane >> 2, ft = lane & 3;
  const int wm = (warp >> 2) * (16 * DNNB_MMA_MI);  // the warp's first row in the tile
  const int wn = (warp & 3) * (8 * DNNB_MMA_NJ);    // and first column
  const long batch = get_group_id(2);
  const long m0 = (long)get_group_id(1) * DNNB_MMA_TILE;
  const long n0 = (long)get_group_id(0) * DNNB_MMA_TILE;
  const long a_base = g.a_offset + batch * g.a_batch;
  const long b_base = g.b_offset + batch * g.b_batch;
  const int a_fast_k = (int)g.a_k_fast;
  const int b_fast_k = !(int)g.b_n_fast;

  // Every loop over acc is unrolled, so its indices are constants and it stays in registers.
  float acc[DNNB_MMA_MI][DNNB_MMA_NJ][4];
#pragma unroll
  for (int i = 0; i < DNNB_MMA_MI; ++i)
#pragma unroll
    for (int j = 0; j < DNNB_MMA_NJ; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  ushort8 next_a[2], next_b[2];
  dnnb_mma_fetch(a, a_base, g.a_row, g.a_col, g.m, g.k, m0, 0, a_fast_k, lid, next_a);
  dnnb_mma_fetch(b, b_base, g.b_col, g.b_row, g.n, g.k, n0, 0, b_fast_k, lid, next_b);
  dnnb_mma_put(a_tile, a_fast_k, lid, next_a);
  dnnb_mma_put(b_tile, b_fast_k, lid, next_b);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (long k0 = 0; k0 < g.k; k0 += DNNB_MMA_KT) {
    const int more = k0 + DNNB_MMA_KT < g.k;  // the same for every item: the barriers below are uniform
    if (more) {
      dnnb_mma_fetch(a, a_base, g.a_row, g.a_col, g.m, g.k, m0, k0 + DNNB_MMA_KT, a_fast_k, lid, next_a);
      dnnb_mma_fetch(b, b_base, g.b_col, g.b_row, g.n, g.k, n0, k0 + DNNB_MMA_KT, b_fast_k, lid, next_b);
    }
#pragma unroll
    for (int kb = 0; kb < DNNB_MMA_KT; kb += 16) {
      uint af[DNNB_MMA_MI][4], bf[DNNB_MMA_NJ][2];
#pragma unroll
      for (int i = 0; i < DNNB_MMA_MI; ++i) {
        const int w0 = ((wm + 16 * i + fg) * DNNB_MMA_LD + kb + 2 * ft) >> 1;  // word of (row g, k 2t)
        af[i][0] = a_words[w0];
        af[i][1] = a_words[w0 + 4 * DNNB_MMA_LD];  // row g + 8: 8 rows of LD / 2 words
        af[i][2] = a_words[w0 + 4];                // k 2t + 8
        af[i][3] = a_words[w0 + 4 * DNNB_MMA_LD + 4];
      }
#pragma unroll
      for (int j = 0; j < DNNB_MMA_NJ; ++j) {
        const int w0 = ((wn + 8 * j + fg) * DNNB_MMA_LD + kb + 2 * ft) >> 1;
        bf[j][0] = b_words[w0];
        bf[j][1] = b_words[w0 + 4];
      }
      dnnb_mma_step(acc, af, bf, xchg);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (more) {
      dnnb_mma_put(a_tile, a_fast_k, lid, next_a);
      dnnb_mma_put(b_tile, b_fast_k, lid, next_b);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }

  const long y_base = g.y_offset + batch * g.y_batch;
#pragma unroll
  for (int j = 0; j < DNNB_MMA_NJ; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long col = n0 + wn + 8 * j + 2 * ft + h;
      if (col >= g.n) continue;
      const float bias_v = g.has_bias ? DNNB_LOAD(bias, g.bias_offset + col * g.bias_stride) : 0.0f;
#pragma unroll
      for (int i = 0; i < DNNB_MMA_MI; ++i) {
#pragma unroll
        for (int e = h; e < 4; e += 2) {
          const long row = m0 + wm + 16 * i + fg + (e >= 2 ? 8 : 0);
          if (row < g.m) dnnb_store_y(y, y_base + row * g.y_row + col * g.y_col, (int)g.y_f32, acc[i][j][e] + bias_v);
        }
      }
    }
  }
}
