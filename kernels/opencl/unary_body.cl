// Unary elementwise kernels; the op's .cl (placed before row_body.cl and this file) defines
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

// x and y contiguous: n elements in 16-byte chunks of row_body.cl (4 f32 or 8 f16/bf16 per
// work-item per step): with DNNB_ALIGNED (both offsets multiples of the chunk) one 16-byte
// load and store per chunk instead of the 2-byte ones of vload_half4/vload4 on 16-bit data.
// The last partial chunk goes element by element.
#if DNNB_VW == 4
inline float4 dnnb_unary_chunk(float4 v) { return dnnb_unary4(v); }
#else
inline float8 dnnb_unary_chunk(float8 v) { return (float8)(dnnb_unary4(v.lo), dnnb_unary4(v.hi)); }
#endif

kernel void unary_chunks(const global dnnb_t* x, long x_offset, global dnnb_t* y, long y_offset, long n) {
  const global dnnb_t* xp = x + x_offset;
  global dnnb_t* yp = y + y_offset;
  for (long i = (long)get_global_id(0) * DNNB_VW; i < n; i += (long)get_global_size(0) * DNNB_VW) {
    if (i + DNNB_VW <= n) {
      dnnb_vstore_full(dnnb_unary_chunk(dnnb_vload_full(xp + i)), yp + i);
    } else {
      for (long j = i; j < n; ++j) DNNB_STORE(yp, j, dnnb_unary(DNNB_LOAD(xp, j)));
    }
  }
}
