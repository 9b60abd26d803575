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

// The GEMM's operands (gemm.cl, gemm_mma.cl): y[b] (M x N) = A[b] (M x K) B[b] (K x N) (+ bias).
// Must match ClGemm in gemm.cpp field for field (all 64-bit: no padding rules to agree on).
typedef struct {
  long m, n, k;
  long a_offset, a_batch, a_row, a_col;  // A (M x K): element (i, k) at a_offset + i a_row + k a_col
  long b_offset, b_batch, b_row, b_col;  // B (K x N): element (k, j) at b_offset + k b_row + j b_col
  long y_offset, y_batch, y_row, y_col;
  long bias_offset, bias_stride;
  long a_k_fast;  // 1: A's unit-stride dim is k (row-major A); 0: it is m (or neither)
  long b_n_fast;  // 1: B's unit-stride dim is n (row-major B); 0: it is k (linear's w, or neither)
  long has_bias;
  long y_f32;     // y is f32 (y.dt=f32) rather than the storage dtype
} dnnb_gemm;
