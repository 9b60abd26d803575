// lerp: a + w (b - a), in torch's form (exact at both ends):
//   |w| < 0.5 ? a + w (b - a) : b - (b - a) (1 - w).
// The weight is a scalar argument or a tensor broadcast to y's shape (w_is_tensor = 1).
inline float dnnb_lerp(float a, float b, float w) {
  const float d = b - a;
  return fabs(w) < 0.5f ? a + w * d : b - d * (1.0f - w);
}
inline float4 dnnb_lerp4(float4 a, float4 b, float4 w) {
  return (float4)(dnnb_lerp(a.x, b.x, w.x), dnnb_lerp(a.y, b.y, w.y), dnnb_lerp(a.z, b.z, w.z),
                  dnnb_lerp(a.w, b.w, w.w));
}

// a, b, y (and w when a tensor) contiguous with the same shape.
kernel void lerp_flat(const global dnnb_t* a, long a_offset, const global dnnb_t* b, long b_offset,
                      const global dnnb_t* w, long w_offset, int w_is_tensor, float weight,
                      global dnnb_t* y, long y_offset, long n) {
  for (long i = (long)get_global_id(0) * 4; i < n; i += (long)get_global_size(0) * 4) {
    if (i + 4 <= n) {
      float4 vw = w_is_tensor ? DNNB_LOAD4(w, w_offset + i) : (float4)(weight);
      DNNB_STORE4(y, y_offset + i, dnnb_lerp4(DNNB_LOAD4(a, a_offset + i), DNNB_LOAD4(b, b_offset + i), vw));
    } else {
      for (long j = i; j < n; ++j) {
        float vw = w_is_tensor ? DNNB_LOAD(w, w_offset + j) : weight;
        DNNB_STORE(y, y_offset + j, dnnb_lerp(DNNB_LOAD(a, a_offset + j), DNNB_LOAD(b, b_offset + j), vw));
      }
    }
  }
}

// Any layout; a, b, w are views with y's shape (w broadcast, stride 0 where repeated).
kernel void lerp_rows(const global dnnb_t* a, dnnb_rows ar, const global dnnb_t* b, dnnb_rows br,
                      const global dnnb_t* w, dnnb_rows wr, int w_is_tensor, float weight,
                      global dnnb_t* y, dnnb_rows yr) {
  for (long r = get_global_id(1); r < yr.rows; r += get_global_size(1)) {
    const long as = dnnb_row_start(ar, r);
    const long bs = dnnb_row_start(br, r);
    const long ws = w_is_tensor ? dnnb_row_start(wr, r) : 0;
    const long ys = dnnb_row_start(yr, r);
    for (long c = (long)get_global_id(0) * 4; c < yr.cols; c += (long)get_global_size(0) * 4) {
      float4 va = dnnb_load_cols4(a, as, ar.col_stride, yr.cols, c, 0.0f);
      float4 vb = dnnb_load_cols4(b, bs, br.col_stride, yr.cols, c, 0.0f);
      float4 vw = w_is_tensor ? dnnb_load_cols4(w, ws, wr.col_stride, yr.cols, c, 0.0f) : (float4)(weight);
      dnnb_store_cols4(y, ys, yr.col_stride, yr.cols, c, dnnb_lerp4(va, vb, vw));
    }
  }
}
