// The kernels of the gating ops, for the gate the op's .cl defines before this file
// (dnnb_gate(a) = g(a); dnnb_gate_slope(a, &value) = g'(a) with value = g(a)):
//   forward  y = g(a) b;  backward da = dy b g'(a), db = dy g(a).
// Every operand has y's (or da's) shape; math in f32, each output rounded once.

inline float4 dnnb_glu4(float4 a, float4 b) {
  return (float4)(dnnb_gate(a.x), dnnb_gate(a.y), dnnb_gate(a.z), dnnb_gate(a.w)) * b;
}

// da, db of four elements.
inline void dnnb_glu_bwd4(float4 a, float4 b, float4 dy, float4* da, float4* db) {
  float vx, vy, vz, vw;  // OpenCL C takes no address of a vector element
  const float4 slope = (float4)(dnnb_gate_slope(a.x, &vx), dnnb_gate_slope(a.y, &vy), dnnb_gate_slope(a.z, &vz),
                                dnnb_gate_slope(a.w, &vw));
  *da = dy * b * slope;
  *db = dy * (float4)(vx, vy, vz, vw);
}

// a, b, y contiguous with one shape: four elements per work-item and step.
kernel void glu_flat(const global dnnb_t* a, long a_offset, const global dnnb_t* b, long b_offset,
                     global dnnb_t* y, long y_offset, long n) {
  for (long i = (long)get_global_id(0) * 4; i < n; i += (long)get_global_size(0) * 4) {
    if (i + 4 <= n) {
      DNNB_STORE4(y, y_offset + i, dnnb_glu4(DNNB_LOAD4(a, a_offset + i), DNNB_LOAD4(b, b_offset + i)));
    } else {
      for (long j = i; j < n; ++j)
        DNNB_STORE(y, y_offset + j, dnnb_gate(DNNB_LOAD(a, a_offset + j)) * DNNB_LOAD(b, b_offset + j));
    }
  }
}

// Any layout: views of y's shape.
kernel void glu_rows(const global dnnb_t* a, dnnb_rows ar, const global dnnb_t* b, dnnb_rows br,
                     global dnnb_t* y, dnnb_rows yr) {
  for (long r = get_global_id(1); r < yr.rows; r += get_global_size(1)) {
    const long as = dnnb_row_start(ar, r);
    const long bs = dnnb_row_start(br, r);
    const long ys = dnnb_row_start(yr, r);
    for (long c = (long)get_global_id(0) * 4; c < yr.cols; c += (long)get_global_size(0) * 4) {
      const float4 va = dnnb_load_cols4(a, as, ar.col_stride, yr.cols, c, 0.0f);
      const float4 vb = dnnb_load_cols4(b, bs, br.col_stride, yr.cols, c, 0.0f);
      dnnb_store_cols4(y, ys, yr.col_stride, yr.cols, c, dnnb_glu4(va, vb));
    }
  }
}

// a, b, dy, da, db contiguous with one shape.
kernel void glu_bwd_flat(const global dnnb_t* a, long a_offset, const global dnnb_t* b, long b_offset,
                         const global dnnb_t* dy, long dy_offset, global dnnb_t* da, long da_offset,
                         global dnnb_t* db, long db_offset, long n) {
  for (long i = (long)get_global_id(0) * 4; i < n; i += (long)get_global_size(0) * 4) {
    if (i + 4 <= n) {
      float4 vda, vdb;
      dnnb_glu_bwd4(DNNB_LOAD4(a, a_offset + i), DNNB_LOAD4(b, b_offset + i), DNNB_LOAD4(dy, dy_offset + i), &vda,
                    &vdb);
      DNNB_STORE4(da, da_offset + i, vda);
      DNNB_STORE4(db, db_offset + i, vdb);
    } else {
      for (long j = i; j < n; ++j) {
        float value;
        const float slope = dnnb_gate_slope(DNNB_LOAD(a, a_offset + j), &value);
        const float vdy = DNNB_LOAD(dy, dy_offset + j);
        DNNB_STORE(da, da_offset + j, vdy * DNNB_LOAD(b, b_offset + j) * slope);
        DNNB_STORE(db, db_offset + j, vdy * value);
      }
    }
  }
}

// Any layout: views of da's shape.
kernel void glu_bwd_rows(const global dnnb_t* a, dnnb_rows ar, const global dnnb_t* b, dnnb_rows br,
                         const global dnnb_t* dy, dnnb_rows dyr, global dnnb_t* da, dnnb_rows dar,
                         global dnnb_t* db, dnnb_rows dbr) {
  for (long r = get_global_id(1); r < dar.rows; r += get_global_size(1)) {
    const long as = dnnb_row_start(ar, r);
    const long bs = dnnb_row_start(br, r);
    const long dys = dnnb_row_start(dyr, r);
    const long das = dnnb_row_start(dar, r);
    const long dbs = dnnb_row_start(dbr, r);
    for (long c = (long)get_global_id(0) * 4; c < dar.cols; c += (long)get_global_size(0) * 4) {
      const float4 va = dnnb_load_cols4(a, as, ar.col_stride, dar.cols, c, 0.0f);
      const float4 vb = dnnb_load_cols4(b, bs, br.col_stride, dar.cols, c, 0.0f);
      const float4 vdy = dnnb_load_cols4(dy, dys, dyr.col_stride, dar.cols, c, 0.0f);
      float4 vda, vdb;
      dnnb_glu_bwd4(va, vb, vdy, &vda, &vdb);
      dnnb_store_cols4(da, das, dar.col_stride, dar.cols, c, vda);
      dnnb_store_cols4(db, dbs, dbr.col_stride, dbr.cols, c, vdb);
    }
  }
}
