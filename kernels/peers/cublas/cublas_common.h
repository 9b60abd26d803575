// cuBLAS (cublasGemmEx / cublasGemmStridedBatchedEx, cublasLtMatmul for a bias on an f16/bf16
// y) as a peer backend for the matrix products. Each op file turns its operands into one
// Product; this file maps a Product to cuBLAS's column-major conventions, owns the per-device
// handles and registers the ops.
//
// Mapping: a row-major y (M x N, row stride ldy) is the column-major matrix y^T (N x M, leading
// dim ldy), and y = A B is y^T = B^T A^T, so cuBLAS computes C = op(B') op(A') with m = N,
// n = M, k = K. Each row-major operand (R x C, strides s_r, s_c) is either a column-major C x R
// matrix with leading dim s_r (s_c == 1: op N gives its transpose) or a column-major R x C one
// with leading dim s_c (s_r == 1: op T). Anything else (padding along both dims, a transposed
// and padded operand) has no leading dim and is unsupported.
//
// Numerics: f32 accumulation always (CUBLAS_COMPUTE_32F, with
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION so split-K partial sums are not rounded to
// f16/bf16); f32 without tf32 is CUBLAS_COMPUTE_32F_PEDANTIC (full f32, no tf32 whatever
// NVIDIA_TF32_OVERRIDE says); tf32=1 is CUBLAS_COMPUTE_32F_FAST_TF32.
//
// A bias (linear) must be added to the f32 accumulator before the one rounding to y, as
// PyTorch does in cuBLASLt's epilogue. With an f16/bf16 y the product is one cublasLtMatmul
// with CUBLASLT_EPILOGUE_BIAS (bias read in y's dtype, added in f32, rounded once); adding to a
// bf16 y with beta = 1 would round the bias and the product separately. With an f32 y the bias
// is written into y first by a K = 1 product (a column of ones times the bias row: exact in
// f32), then the main product adds to it with beta = 1, one f32 rounding of the same sum.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>

#include "core/registry.h"
#include "devices/cuda/cuda_device.h"

namespace dnnb::cublas_peer {

// A failed cuBLAS call as an error Status naming the call, cuBLAS's status name and the place.
Status cublas_status(cublasStatus_t status, const char* call, const char* file, int line);
#define DNNB_CUBLAS_TRY(call)                                                                       \
  do {                                                                                              \
    cublasStatus_t dnnb_cublas_status_ = (call);                                                    \
    if (dnnb_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                               \
      return ::dnnb::cublas_peer::cublas_status(dnnb_cublas_status_, #call, __FILE__, __LINE__);    \
  } while (0)

// One product y[b] = A[b] B[b] (+ bias); strides in elements, pointers with offsets applied.
struct Product {
  DType in_dtype = DType::f32, out_dtype = DType::f32;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t a_batch = 0, a_m = 0, a_k = 0;
  const void* b = nullptr;
  int64_t b_batch = 0, b_k = 0, b_n = 0;
  const void* bias = nullptr;  // [N] with unit stride, or nullptr
  void* y = nullptr;
  int64_t y_batch = 0, y_m = 0;  // y's column stride is 1
  bool tf32 = false;
};

// The CUDA device of a call, made current.
Result<const CudaDevice*> device_of(OpCall& call);
// Element 0 of a tensor's view.
void* data_of(const Tensor& t);
// ok when y has a buffer, unit stride along its last dim, and the input dtype or, for f16/bf16
// inputs, f32.
Status expect_output(const Tensor& y, DType in_dtype);
// y (M x N) = x (M x K) times w (N x K) transposed, the product of linear and gemv, for tensors
// already checked against the problem: w is B with its two strides swapped.
Product x_times_w_transposed(DType in_dtype, int64_t m, int64_t n, int64_t k, const Tensor& x, const Tensor& w,
                             const Tensor& y);

// How a row-major rows x cols operand (strides s_r, s_c) is handed to cuBLAS so that op(X) is
// its transpose (cols x rows); nullopt when no leading dim describes it. A dim of one element
// has no stride to honour; its leading dim is then the smallest cuBLAS accepts.
struct Operand {
  cublasOperation_t op;
  int64_t ld;
};
std::optional<Operand> transposed_view(int64_t rows, int64_t cols, int64_t s_r, int64_t s_c);
// Every value in [0, 2^31 - 1] (cuBLAS's int dims and leading dims).
bool fits_int(std::initializer_list<int64_t> values);

// One cuBLASLt handle per device, created on first use and kept for the process. Lt handles
// carry no stream: each cublasLtMatmul is given the device's stream.
Result<cublasLtHandle_t> lt_handle_of(const CudaDevice& device);
// The largest power of two (at most 256) dividing a device address: the alignment the Lt
// heuristic must assume for an operand (it assumes 256 bytes unless told).
uint32_t alignment_of(const void* ptr);
// Owners of the Lt descriptors of one call, destroyed on every return path (a destroy's status
// is dropped: the call's own status is what the caller sees).
struct LtDescs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtDescs() {
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
    if (c) (void)cublasLtMatrixLayoutDestroy(c);
    if (b) (void)cublasLtMatrixLayoutDestroy(b);
    if (a) (void)cublasLtMatrixLayoutDestroy(a);
    if (op) (void)cublasLtMatmulDescDestroy(op);
  }
};

// A device vector of at least `count` ones in `dtype` (the column of ones of linear's bias
// product, linear_bwd's column sum), kept per device and dtype; a longer one replaces it.
Result<const void*> ones(const CudaDevice& device, DType dtype, int64_t count);

// Runs the product with cuBLAS (or cuBLASLt, see above) on the device's stream, using the
// call's workspace.
Status run_product(const CudaDevice& device, OpCall& call, const Product& p);

// The workspace every cuBLAS call gets (cublasSetWorkspace): 32 MiB, what NVIDIA recommends
// for Hopper.
inline constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// Registers `run` as backend "cublas" of `op` (f32, f16, bf16; CUDA devices only).
bool register_op(const std::string& op, const std::string& compute_unit, std::function<Status(OpCall&)> run,
                 std::vector<KnownDeviation> deviations = {});

}  // namespace dnnb::cublas_peer
