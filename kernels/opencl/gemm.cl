// Tiled GEMM for matmul and linear: y[b] (M x N) = A[b] (M x K) B[b] (K x N) (+ bias[n]), with
// f32 accumulation whatever the storage dtype. Every operand is a strided view (any strides,
// any offset): matmul passes a and b as they are, linear passes w [N, K] as B with its strides
// swapped, so one kernel serves transposed, padded and batched operands.
//
// Tiling: a work-group of 8 x 8 items computes a 64 x 64 tile of y, each item an 8 x 8 block
// (rows ty*8.., columns tx*8..) in 64 registers. K goes in steps of 16: the group stages a
// 64 x 16 tile of A and a 16 x 64 tile of B in local memory as f32 (each item loads four
// 4-element vectors of each), then each item reads two float4 of A and two of B per k and does
// 64 multiply-adds. Loads follow the operand's unit-stride dim (the host says which one it is)
// so consecutive items read consecutive addresses; the local tiles are k-major either way.
// Edges: loads past M, N or K read 0 and stores past M or N are skipped, so any shape works.
// The operands' struct (dnnb_gemm) is in product_body.cl.
#define DNNB_GEMM_TILE 64                     // rows and columns of y per work-group
#define DNNB_GEMM_KT 16                       // k per local-memory step
#define DNNB_GEMM_LD (DNNB_GEMM_TILE + 4)     // floats per k row of a local tile (pad: 4)
#define DNNB_GEMM_LD4 (DNNB_GEMM_LD / 4)      // the same in float4

// One 64 x 16 slab of an operand into a k-major local tile: `rows` of the slab index the tile's
// 64 entries (m for A, n for B), `kk` its 16 k. fast_k: the operand's unit-stride dim is k, so
// items walk k fastest (4 consecutive k per item) and store them transposed; otherwise they walk
// the 64 entries fastest and store a float4 as it is.
inline void dnnb_gemm_stage(const global dnnb_t* p, long base, long stride_row, long stride_k, long n_rows,
                            long n_k, long row0, long k0, int fast_k, local float4* tile, int lid) {
  local float* tile_f = (local float*)tile;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int q = lid + 64 * i;
    if (fast_k) {
      const int r = q >> 2;
      const int kk = (q & 3) * 4;
      const long row = row0 + r;
      const float4 v =
          row < n_rows ? dnnb_load_cols4(p, base + row * stride_row, stride_k, n_k, k0 + kk, 0.0f) : (float4)(0.0f);
      tile_f[(kk + 0) * DNNB_GEMM_LD + r] = v.x;
      tile_f[(kk + 1) * DNNB_GEMM_LD + r] = v.y;
      tile_f[(kk + 2) * DNNB_GEMM_LD + r] = v.z;
      tile_f[(kk + 3) * DNNB_GEMM_LD + r] = v.w;
    } else {
      const int kk = q >> 4;
      const int r = (q & 15) * 4;
      const long kr = k0 + kk;
      tile[kk * DNNB_GEMM_LD4 + (r >> 2)] =
          kr < n_k ? dnnb_load_cols4(p, base + kr * stride_k, stride_row, n_rows, row0 + r, 0.0f) : (float4)(0.0f);
    }
  }
}

kernel __attribute__((reqd_work_group_size(8, 8, 1))) void gemm_tiled(const global dnnb_t* a,
                                                                       const global dnnb_t* b,
                                                                       const global dnnb_t* bias,
                                                                       global uchar* y, dnnb_gemm g) {
  local float4 a_tile[DNNB_GEMM_KT * DNNB_GEMM_LD4];
  local float4 b_tile[DNNB_GEMM_KT * DNNB_GEMM_LD4];
  const int tx = get_local_id(0);
  const int ty = get_local_id(1);
  const int lid = ty * 8 + tx;
  const long batch = get_group_id(2);
  const long m0 = (long)get_group_id(1) * DNNB_GEMM_TILE;
  const long n0 = (long)get_group_id(0) * DNNB_GEMM_TILE;
  const long a_base = g.a_offset + batch * g.a_batch;
  const long b_base = g.b_offset + batch * g.b_batch;

  // acc_lo[i], acc_hi[i]: row ty*8 + i, columns tx*8 + 0..3 and tx*8 + 4..7.
  float4 acc_lo[8], acc_hi[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) acc_lo[i] = acc_hi[i] = (float4)(0.0f);

  for (long k0 = 0; k0 < g.k; k0 += DNNB_GEMM_KT) {
    dnnb_gemm_stage(a, a_base, g.a_row, g.a_col, g.m, g.k, m0, k0, (int)g.a_k_fast, a_tile, lid);
    dnnb_gemm_stage(b, b_base, g.b_col, g.b_row, g.n, g.k, n0, k0, !(int)g.b_n_fast, b_tile, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int kk = 0; kk < DNNB_GEMM_KT; ++kk) {
      const float4 a0 = a_tile[kk * DNNB_GEMM_LD4 + ty * 2];
      const float4 a1 = a_tile[kk * DNNB_GEMM_LD4 + ty * 2 + 1];
      const float4 b0 = b_tile[kk * DNNB_GEMM_LD4 + tx * 2];
      const float4 b1 = b_tile[kk * DNNB_GEMM_LD4 + tx * 2 + 1];
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        acc_lo[i] = fma((float4)(av[i]), b0, acc_lo[i]);
        acc_hi[i] = fma((float4)(av[i]), b1, acc_hi[i]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  const long col = n0 + tx * 8;
  float4 bias_lo = (float4)(0.0f), bias_hi = (float4)(0.0f);
  if (g.has_bias) {
    bias_lo = dnnb_load_cols4(bias, g.bias_offset, g.bias_stride, g.n, col, 0.0f);
    bias_hi = dnnb_load_cols4(bias, g.bias_offset, g.bias_stride, g.n, col + 4, 0.0f);
  }
  const long y_base = g.y_offset + batch * g.y_batch;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const long row = m0 + ty * 8 + i;
    if (row >= g.m) break;
    const float4 lo = acc_lo[i] + bias_lo;
    const float4 hi = acc_hi[i] + bias_hi;
    const long start = y_base + row * g.y_row;
    if (g.y_col == 1 && col + 8 <= g.n) {
      dnnb_store_y4(y, start + col, (int)g.y_f32, lo);
      dnnb_store_y4(y, start + col + 4, (int)g.y_f32, hi);
    } else {
      const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      for (int j = 0; j < 8 && col + j < g.n; ++j) dnnb_store_y(y, start + (col + j) * g.y_col, (int)g.y_f32, v[j]);
    }
  }
}
