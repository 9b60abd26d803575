// Shared by the products (gemm.cl, gemv.cl, dot.cl): the output y is either of the program's
// storage dtype or f32 (y.dt=f32: a 16-bit product keeping its f32 accumulator). The kernel
// takes y as bytes and a flag, so one program per input dtype serves both outputs.
inline void dnnb_store_y(global uchar* y, long i, int y_f32, float v) {
  if (y_f32)
    ((global float*)y)[i] = v;
  else
    DNNB_STORE((global dnnb_t*)y, i, v);
}

// Four consecutive outputs i..i+3 (unit stride), as one vector store where the dtype allows.
inline void dnnb_store_y4(global uchar* y, long i, int y_f32, float4 v) {
  if (y_f32)
    vstore4(v, 0, (global float*)y + i);
  else
    DNNB_STORE4((global dnnb_t*)y, i, v);
}
