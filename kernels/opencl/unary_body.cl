// Unary elementwise kernels; the op's .cl (placed before this file) defines
//   float dnnb_unary(float x)
inline float4 dnnb_unary4(float4 v) {
  return (float4)(dnnb_unary(v.x), dnnb_unary(v.y), dnnb_unary(v.z), dnnb_unary(v.w));
}

// x and y contiguous with the same shape: n elements, four per work-item per step.
kernel void unary_flat(const global dnnb_t* x, long x_offset, global dnnb_t* y, long y_offset, long n) {
  for (long i = (long)get_global_id(0) * 4; i < n; i += (long)get_global_size(0) * 4) {
    if (i + 4 <= n) {
      DNNB_STORE4(y, y_offset + i, dnnb_unary4(DNNB_LOAD4(x, x_offset + i)));
    } else {
      for (long j = i; j < n; ++j) DNNB_STORE(y, y_offset + j, dnnb_unary(DNNB_LOAD(x, x_offset + j)));
    }
  }
}

// Any layout: dimension 1 walks rows, dimension 0 walks groups of four columns.
kernel void unary_rows(const global dnnb_t* x, dnnb_rows xr, global dnnb_t* y, dnnb_rows yr) {
  for (long r = get_global_id(1); r < yr.rows; r += get_global_size(1)) {
    const long xs = dnnb_row_start(xr, r);
    const long ys = dnnb_row_start(yr, r);
    for (long c = (long)get_global_id(0) * 4; c < yr.cols; c += (long)get_global_size(0) * 4) {
      float4 v = dnnb_load_cols4(x, xs, xr.col_stride, yr.cols, c, 0.0f);
      dnnb_store_cols4(y, ys, yr.col_stride, yr.cols, c, dnnb_unary4(v));
    }
  }
}
