// embedding_bwd: dW[v] = sum of dy[t] over the tokens with ids[t] = v, zero for rows no token
// takes; f32 accumulation, each element of dW rounded once (DNNB_STORE). Deterministic, no float
// atomics: a stable bucketing of the tokens by id, then one work-item per (row, column) adding
// the row's tokens in increasing position.
//   ebwd_count: per token, its rank among the earlier tokens with the same id (ids compared a
//     local-memory tile at a time) and count[id + 1] += 1 (an integer atomic: the counts do not
//     depend on the order). A bad id (outside [0, vocab)) gets rank -1 and its position goes to
//     bad[0] (atomic_min; the host sets INT_MAX first).
//   ebwd_scan: count becomes its inclusive prefix sum in place (one work-group), so count[v] is
//     the first sorted position of row v and count[vocab] the number of good tokens.
//   ebwd_place: order[count[id] + rank] = t.
//   ebwd_rows: dW[v][c] = the sum over order[count[v] .. count[v + 1]) of dy[t][c].
//   ebwd_bad_id: one work-item: the id at position bad[0] into bad[2..3] (a long).
inline long ebwd_id(const global uchar* ids, long ids_offset, long ids_stride, int ids_i32, long t) {
  const long at = ids_offset + t * ids_stride;
  return ids_i32 ? (long)((const global int*)ids)[at] : ((const global long*)ids)[at];
}

#define EBWD_TILE 256
kernel __attribute__((reqd_work_group_size(EBWD_TILE, 1, 1))) void ebwd_count(
    const global uchar* ids, long ids_offset, long ids_stride, int ids_i32, long tokens, long vocab,
    volatile global int* count, global int* rank, volatile global int* bad) {
  local long tile[EBWD_TILE];
  const long t = get_global_id(0);
  const long id = t < tokens ? ebwd_id(ids, ids_offset, ids_stride, ids_i32, t) : -1;
  int r = 0;
  // Tiles of earlier tokens; every work-item of the group takes part in every load.
  const long group_first = (long)get_group_id(0) * EBWD_TILE;
  for (long base = 0; base <= group_first; base += EBWD_TILE) {
    const long mine = base + get_local_id(0);
    tile[get_local_id(0)] = mine < tokens ? ebwd_id(ids, ids_offset, ids_stride, ids_i32, mine) : -1;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int n = (int)min((long)EBWD_TILE, t - base);  // positions base .. t-1 of this tile
    for (int k = 0; k < n; ++k) r += tile[k] == id;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t >= tokens) return;
  if (id < 0 || id >= vocab) {
    atomic_min(bad, (int)t);
    rank[t] = -1;
    return;
  }
  rank[t] = r;
  atomic_inc(count + id + 1);
}

#define EBWD_SCAN 256
kernel __attribute__((reqd_work_group_size(EBWD_SCAN, 1, 1))) void ebwd_scan(global int* count, long n) {
  local int part[EBWD_SCAN];
  const int lid = (int)get_local_id(0);
  const long per = (n + EBWD_SCAN - 1) / EBWD_SCAN;
  const long first = lid * per, last = min(n, first + per);
  int sum = 0;
  for (long i = first; i < last; ++i) sum += count[i];
  part[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0)
    for (int k = 1; k < EBWD_SCAN; ++k) part[k] += part[k - 1];
  barrier(CLK_LOCAL_MEM_FENCE);
  int run = lid == 0 ? 0 : part[lid - 1];
  for (long i = first; i < last; ++i) {
    run += count[i];
    count[i] = run;
  }
}

kernel void ebwd_place(const global uchar* ids, long ids_offset, long ids_stride, int ids_i32, long tokens,
                       const global int* start, const global int* rank, global int* order) {
  const long t = get_global_id(0);
  if (t >= tokens || rank[t] < 0) return;
  order[start[ebwd_id(ids, ids_offset, ids_stride, ids_i32, t)] + rank[t]] = (int)t;
}

// Dimension 0 walks columns, dimension 1 rows (grid-stride loops over both).
kernel void ebwd_rows(const global dnnb_t* dy, long dy_offset, long dy_row, long dy_col, global dnnb_t* dw,
                      long dw_offset, long dw_row, long dw_col, long vocab, long dim, const global int* start,
                      const global int* order) {
  for (long v = get_global_id(1); v < vocab; v += get_global_size(1)) {
    const int first = start[v], last = start[v + 1];
    for (long c = get_global_id(0); c < dim; c += get_global_size(0)) {
      float acc = 0.0f;
      for (int j = first; j < last; ++j) acc += DNNB_LOAD(dy, dy_offset + (long)order[j] * dy_row + c * dy_col);
      DNNB_STORE(dw, dw_offset + v * dw_row + c * dw_col, acc);
    }
  }
}

kernel void ebwd_bad_id(const global uchar* ids, long ids_offset, long ids_stride, int ids_i32, global int* bad) {
  if (bad[0] == INT_MAX) return;
  *(global long*)(bad + 2) = ebwd_id(ids, ids_offset, ids_stride, ids_i32, bad[0]);
}
