// linear_bwd's db: db[c] = the sum over rows of dy[r, c], one work-item per column, f32, rounded
// once. Consecutive work-items take consecutive columns, so a dy with unit column stride is read
// one coalesced row at a time.
kernel void linear_bwd_db(const global dnnb_t* dy, long dy_offset, long s_row, long s_col, long rows, long n,
                          global dnnb_t* db, long db_offset, long db_stride) {
  const long c = get_global_id(0);
  if (c >= n) return;
  const long first = dy_offset + c * s_col;
  float s = 0.0f;
  for (long r = 0; r < rows; ++r) s += DNNB_LOAD(dy, first + r * s_row);
  DNNB_STORE(db, db_offset + c * db_stride, s);
}
