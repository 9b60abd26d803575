// Binary elementwise kernels; the op's .cl (placed before row_body.cl and this file) defines
//   float dnnb_binary(float a, float b) and its chunk form DNNB_BINARY_V(a, b).
inline float4 dnnb_binary4(float4 a, float4 b) {
  return (float4)(dnnb_binary(a.x, b.x), dnnb_binary(a.y, b.y), dnnb_binary(a.z, b.z), dnnb_binary(a.w, b.w));
}

// a, b and y contiguous with the same shape (no broadcast).
kernel void binary_flat(const global dnnb_t* a, long a_offset, const global dnnb_t* b, long b_offset,
                        global dnnb_t* y, long y_offset, long n) {
  for (long i = (long)get_global_id(0) * 4; i < n; i += (long)get_global_size(0) * 4) {
    if (i + 4 <= n) {
      DNNB_STORE4(y, y_offset + i, dnnb_binary4(DNNB_LOAD4(a, a_offset + i), DNNB_LOAD4(b, b_offset + i)));
    } else {
      for (long j = i; j < n; ++j)
        DNNB_STORE(y, y_offset + j, dnnb_binary(DNNB_LOAD(a, a_offset + j), DNNB_LOAD(b, b_offset + j)));
    }
  }
}

// Any layout; a and b are views broadcast to y's shape (stride 0 where repeated).
kernel void binary_rows(const global dnnb_t* a, dnnb_rows ar, const global dnnb_t* b, dnnb_rows br,
                        global dnnb_t* y, dnnb_rows yr) {
  for (long r = get_global_id(1); r < yr.rows; r += get_global_size(1)) {
    const long as = dnnb_row_start(ar, r);
    const long bs = dnnb_row_start(br, r);
    const long ys = dnnb_row_start(yr, r);
    for (long c = (long)get_global_id(0) * 4; c < yr.cols; c += (long)get_global_size(0) * 4) {
      float4 va = dnnb_load_cols4(a, as, ar.col_stride, yr.cols, c, 0.0f);
      float4 vb = dnnb_load_cols4(b, bs, br.col_stride, yr.cols, c, 1.0f);
      dnnb_store_cols4(y, ys, yr.col_stride, yr.cols, c, dnnb_binary4(va, vb));
    }
  }
}

// ---- binary_tile: 2-D broadcasts ---------------------------------------------------------------
// The common [N, C] op [N, 1] and [N, C] op [1, C] (and scalars): y has unit column stride; a and b
// are each at off + r * rs + c * cs with cs 0 (one value per row) or 1, and each operand's layout is
// built in as a mode, with DNNB_TILE_ROWS rows of one column chunk (row_body.cl) per work-item.
// A 16-bit broadcast moves only 2 + 2 bytes per element, so its element must cost less than a
// same-shape one's to keep up with the memory: here a row pointer steps by the stride (no 64-bit
// index products per chunk), a [1, C] chunk is loaded and widened once per tile, and no operand's
// load waits in a branch of its own.
//   -DDNNB_A_MODE, -DDNNB_B_MODE: 0 [R, C] (a chunk per row), 1 [R, 1] (a value per row),
//                                 2 [1, C] (one chunk for every row), 3 [1, 1] (one value).
// A full tile has no branch: all its loads are issued (chunks as storage bits) before any
// conversion or store (a store may alias a later load, so the compiler would not hoist the loads
// over it). Dimension 0 walks column chunks, dimension 1 tiles of rows.
#if defined(DNNB_TILE_ROWS)
#if !defined(DNNB_A_MODE) || !defined(DNNB_B_MODE)
#error "binary_tile needs -DDNNB_A_MODE and -DDNNB_B_MODE"
#endif
#define DNNB_MODE_CHUNK(m) (((m) & 1) == 0)  // 0, 2: chunks of the row; 1, 3: one value
#define DNNB_MODE_PER_ROW(m) ((m) < 2)       // 0, 1: a load per row; 2, 3: one per tile
// Tile row j of operand X (A or B; p = a or b): loaded into slot j, or slot 0 once per tile.
#define DNNB_TILE_LOAD(X, p, j, c)                                                  \
  if (DNNB_MODE_PER_ROW(DNNB_##X##_MODE) || (j) == 0) {                             \
    if (DNNB_MODE_CHUNK(DNNB_##X##_MODE)) raw_##p[j] = dnnb_raw_full(p##row + (c)); \
    else val_##p[j] = DNNB_LOAD(p##row, 0);                                         \
  }
#define DNNB_TILE_GET(X, p, k) \
  (DNNB_MODE_CHUNK(DNNB_##X##_MODE) ? dnnb_raw_get(raw_##p[k]) : (dnnb_vec)(val_##p[k]))

kernel void binary_tile(const global dnnb_t* a, long a_off, long a_rs, const global dnnb_t* b, long b_off,
                        long b_rs, global dnnb_t* y, long y_off, long y_rs, long rows, int cols) {
  const long row_step = (long)get_global_size(1) * DNNB_TILE_ROWS;
  for (int c = (int)get_global_id(0) * DNNB_VW; c < cols; c += (int)get_global_size(0) * DNNB_VW) {
    for (long r0 = (long)get_global_id(1) * DNNB_TILE_ROWS; r0 < rows; r0 += row_step) {
      const global dnnb_t* arow = a + a_off + r0 * a_rs;
      const global dnnb_t* brow = b + b_off + r0 * b_rs;
      global dnnb_t* yrow = y + y_off + r0 * y_rs;
      if (c + DNNB_VW <= cols && r0 + DNNB_TILE_ROWS <= rows) {
        // Slots a mode does not load are never read; every index is a constant after unrolling.
        dnnb_raw_t raw_a[DNNB_TILE_ROWS], raw_b[DNNB_TILE_ROWS];
        float val_a[DNNB_TILE_ROWS], val_b[DNNB_TILE_ROWS];
#pragma unroll
        for (int j = 0; j < DNNB_TILE_ROWS; ++j) {
          DNNB_TILE_LOAD(A, a, j, c)
          DNNB_TILE_LOAD(B, b, j, c)
          arow += a_rs;
          brow += b_rs;
        }
        const dnnb_vec va0 = DNNB_TILE_GET(A, a, 0);  // once per tile for modes 2 and 3
        const dnnb_vec vb0 = DNNB_TILE_GET(B, b, 0);
#pragma unroll
        for (int j = 0; j < DNNB_TILE_ROWS; ++j) {
          const dnnb_vec va = DNNB_MODE_PER_ROW(DNNB_A_MODE) && j > 0 ? DNNB_TILE_GET(A, a, j) : va0;
          const dnnb_vec vb = DNNB_MODE_PER_ROW(DNNB_B_MODE) && j > 0 ? DNNB_TILE_GET(B, b, j) : vb0;
          dnnb_vstore_full(DNNB_BINARY_V(va, vb), yrow + c);
          yrow += y_rs;
        }
      } else {
        // The last rows or a partial last chunk: row by row, bounds-checked.
        for (int j = 0; j < DNNB_TILE_ROWS && r0 + j < rows; ++j) {
          const dnnb_vec va =
              DNNB_MODE_CHUNK(DNNB_A_MODE) ? dnnb_row_load(arow, c, cols, 0.0f) : (dnnb_vec)(DNNB_LOAD(arow, 0));
          const dnnb_vec vb =
              DNNB_MODE_CHUNK(DNNB_B_MODE) ? dnnb_row_load(brow, c, cols, 1.0f) : (dnnb_vec)(DNNB_LOAD(brow, 0));
          dnnb_row_store(yrow, c, cols, DNNB_BINARY_V(va, vb));
          arow += a_rs;
          brow += b_rs;
          yrow += y_rs;
        }
      }
    }
  }
}
#endif
