// embedding: y[t] = table[ids[t]], a gather of rows moved as storage words (bit-exact), in the
// layout-copy program (layout_copy.cl's word macros; DNNB_CK names this word size's kernel).
// ids are i64 or i32 (ids_i32). An id outside [0, vocab) is never read through: its row of y is
// left alone and the lowest such position goes to bad[0] (atomic_min; the host sets it to
// INT_MAX before the launch); embedding_bad_id then puts that position's id in bad[2..3] (a
// long), and the host reads the 16 bytes back without waiting and reports bad input at the
// queue's next synchronisation.
kernel void DNNB_CK(embedding_rows)(const global uchar* ids, long ids_offset, long ids_stride, int ids_i32, long vocab,
                                    const global DNNB_CT* table, long table_offset, long table_row, long table_col,
                                    global DNNB_CT* y, long y_offset, long y_row, long y_col, long tokens, long dim,
                                    volatile global int* bad) {
  const int unit = table_col == 1 && y_col == 1;
  for (long t = get_global_id(1); t < tokens; t += get_global_size(1)) {
    const long at = ids_offset + t * ids_stride;
    const long id = ids_i32 ? (long)((const global int*)ids)[at] : ((const global long*)ids)[at];
    if (id < 0 || id >= vocab) {
      if (get_global_id(0) == 0) atomic_min(bad, (int)t);
      continue;
    }
    const long xs = table_offset + id * table_row;
    const long ys = y_offset + t * y_row;
    for (long c = (long)get_global_id(0) * DNNB_CW; c < dim; c += (long)get_global_size(0) * DNNB_CW) {
      if (unit && c + DNNB_CW <= dim) {
        DNNB_CVSTORE(DNNB_CVLOAD(table + xs + c), y + ys + c);
      } else {
        const long end = min(c + DNNB_CW, dim);
        for (long j = c; j < end; ++j) y[ys + j * y_col] = table[xs + j * table_col];
      }
    }
  }
}

// One work-item: bad[2..3] = the id at position bad[0], when embedding_rows saw a bad id.
kernel void DNNB_CK(embedding_bad_id)(const global uchar* ids, long ids_offset, long ids_stride, int ids_i32,
                                      global int* bad) {
  if (bad[0] == INT_MAX) return;
  const long at = ids_offset + (long)bad[0] * ids_stride;
  *(global long*)(bad + 2) = ids_i32 ? (long)((const global int*)ids)[at] : ((const global long*)ids)[at];
}
