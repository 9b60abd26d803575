// linear_bwd's db: db[c] = the sum over rows of dy[r, c], in f32, rounded once. Work-item
// (c, s) sums column c over row slice s; consecutive work-items take consecutive columns, so a
// dy with unit column stride is read in coalesced row pieces. With one slice it stores db;
// otherwise it writes its f32 sum to partial[s n + c] and linear_bwd_db_finish adds the slices
// in slice order, so the bits do not depend on timing.
kernel void linear_bwd_db(const global dnnb_t* dy, long dy_offset, long s_row, long s_col, long rows, long n,
                          long slice_rows, global float* partial, global dnnb_t* db, long db_offset, long db_stride) {
  const long c = get_global_id(0);
  if (c >= n) return;
  const long s = get_global_id(1);
  const long first = s * slice_rows;
  const long last = min(rows, first + slice_rows);
  const long base = dy_offset + c * s_col;
  float sum = 0.0f;
  for (long r = first; r < last; ++r) sum += DNNB_LOAD(dy, base + r * s_row);
  if (get_global_size(1) == 1)
    DNNB_STORE(db, db_offset + c * db_stride, sum);
  else
    partial[s * n + c] = sum;
}

kernel void linear_bwd_db_finish(const global float* partial, long slices, long n, global dnnb_t* db, long db_offset,
                                 long db_stride) {
  const long c = get_global_id(0);
  if (c >= n) return;
  float sum = 0.0f;
  for (long s = 0; s < slices; ++s) sum += partial[s * n + c];
  DNNB_STORE(db, db_offset + c * db_stride, sum);
}
