// Bit-exact copies between views for the layout ops (permute, concat, slice, repeat_kv; the
// gather of embedding.cl). Values move as storage words, never through float, so every bit
// pattern (NaN payloads, -0, subnormals) arrives unchanged. The host puts this body into one
// program twice (layout_copy.cpp), once per word size:
//   DNNB_CT      the word: uint (f32) or ushort (f16, bf16)
//   DNNB_CW      words per vector access: 4 (16 bytes of f32) or 8 (16 bytes of f16/bf16)
//   DNNB_CV      the vector of DNNB_CW words; DNNB_CVLOAD(p) / DNNB_CVSTORE(v, p) move one
//   DNNB_CK(n)   the kernel's name for this word size (n##_32 or n##_16)

// y = x, both views of one shape seen as rows (dnnb_rows: up to 4 outer dims, any strides,
// stride 0 on broadcast dims). Dim 0 of the grid walks a row's columns one vector at a time
// (consecutive items, consecutive addresses), dim 1 the rows. Where both rows have unit column
// stride a full vector is one access; otherwise word by word.
kernel void DNNB_CK(copy_rows)(const global DNNB_CT* x, dnnb_rows xr, global DNNB_CT* y, dnnb_rows yr) {
  const int unit = xr.col_stride == 1 && yr.col_stride == 1;
  for (long r = get_global_id(1); r < yr.rows; r += get_global_size(1)) {
    const long xs = dnnb_row_start(xr, r);
    const long ys = dnnb_row_start(yr, r);
    for (long c = (long)get_global_id(0) * DNNB_CW; c < yr.cols; c += (long)get_global_size(0) * DNNB_CW) {
      if (unit && c + DNNB_CW <= yr.cols) {
        DNNB_CVSTORE(DNNB_CVLOAD(x + xs + c), y + ys + c);
      } else {
        const long end = min(c + DNNB_CW, yr.cols);
        for (long j = c; j < end; ++j) y[ys + j * yr.col_stride] = x[xs + j * xr.col_stride];
      }
    }
  }
}

// A batch of 2-D transposes: y[b0, b1, i, j] = x[b0, b1, i, j] where x's unit stride is along i
// and y's along j (permute moving the innermost dim). A work-group of 32 x 8 items moves a
// 32 x 32 tile: it reads the tile along i (coalesced in x) into local memory and writes it
// along j (coalesced in y). The tile holds uint for both word sizes, and rows of 33, so the
// column reads hit 32 different banks. Tiles are walked by a grid-stride loop over dim 0.
// Must match ClTranspose in layout_copy.cpp field for field. (Defined once: the body is in the
// program twice.)
#ifndef DNNB_TT
#define DNNB_TT 32
typedef struct {
  long n_i, n_j, n_b1, batches;  // batches = n_b0 * n_b1
  long x_offset, x_i, x_j, x_b0, x_b1;
  long y_offset, y_i, y_j, y_b0, y_b1;
} dnnb_transpose;
#endif
kernel __attribute__((reqd_work_group_size(DNNB_TT, 8, 1))) void DNNB_CK(transpose_tiles)(const global DNNB_CT* x,
                                                                                           global DNNB_CT* y,
                                                                                           dnnb_transpose t) {
  local uint tile[DNNB_TT][DNNB_TT + 1];
  const int lx = get_local_id(0);
  const int ly = get_local_id(1);
  const long tiles_i = (t.n_i + DNNB_TT - 1) / DNNB_TT;
  const long tiles_j = (t.n_j + DNNB_TT - 1) / DNNB_TT;
  const long tiles = tiles_i * tiles_j * t.batches;
  for (long g = get_group_id(0); g < tiles; g += get_num_groups(0)) {
    const long tj = g % tiles_j;
    const long ti = (g / tiles_j) % tiles_i;
    const long batch = g / (tiles_j * tiles_i);
    const long b1 = batch % t.n_b1;
    const long b0 = batch / t.n_b1;
    const long xb = t.x_offset + b0 * t.x_b0 + b1 * t.x_b1;
    const long yb = t.y_offset + b0 * t.y_b0 + b1 * t.y_b1;
    for (int r = ly; r < DNNB_TT; r += 8) {
      const long i = ti * DNNB_TT + lx;
      const long j = tj * DNNB_TT + r;
      if (i < t.n_i && j < t.n_j) tile[r][lx] = x[xb + i * t.x_i + j * t.x_j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = ly; r < DNNB_TT; r += 8) {
      const long i = ti * DNNB_TT + r;
      const long j = tj * DNNB_TT + lx;
      if (i < t.n_i && j < t.n_j) y[yb + i * t.y_i + j * t.y_j] = (DNNB_CT)tile[lx][r];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
