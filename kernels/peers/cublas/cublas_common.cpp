// The cuBLAS peer's shared part (cublas_common.h): handles, the column-major mapping, the
// cublasGemmEx / cublasLtMatmul calls, registration.
#include "kernels/peers/cublas/cublas_common.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/bench.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::cublas_peer {
namespace {

// One handle per device, created on first use and kept for the process, bound to the
// device's stream (the stream every kernel of the suite runs on).
Result<cublasHandle_t> handle_of(const CudaDevice& device) {
  static std::mutex mutex;
  static std::map<int, cublasHandle_t> handles;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = handles.find(device.ordinal()); it != handles.end()) return it->second;
  cublasHandle_t handle = nullptr;
  DNNB_CUBLAS_TRY(cublasCreate(&handle));
  const cublasStatus_t bound = cublasSetStream(handle, device.stream());
  if (bound != CUBLAS_STATUS_SUCCESS) {
    (void)cublasDestroy(handle);  // the error below is what the caller sees
    return cublas_status(bound, "cublasSetStream(handle, device.stream())", __FILE__, __LINE__);
  }
  handles[device.ordinal()] = handle;
  return handle;
}

}  // namespace

Result<const void*> ones(const CudaDevice& device, DType dtype, int64_t count) {
  static std::mutex mutex;
  static std::map<std::pair<int, DType>, std::pair<void*, int64_t>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& [ptr, capacity] = cache[{device.ordinal(), dtype}];
  if (ptr != nullptr && capacity >= count) return static_cast<const void*>(ptr);
  const int64_t n = std::max<int64_t>(count, 4096);
  std::vector<uint32_t> words;
  std::vector<uint16_t> halves;
  const void* host = nullptr;
  size_t bytes = 0;
  if (dtype == DType::f32) {
    words.assign(n, 0x3f800000u);
    host = words.data();
    bytes = n * sizeof(uint32_t);
  } else if (dtype == DType::f16 || dtype == DType::bf16) {
    halves.assign(n, dtype == DType::f16 ? uint16_t{0x3c00} : uint16_t{0x3f80});
    host = halves.data();
    bytes = n * sizeof(uint16_t);
  } else {
    return Status::unsupported(std::string("cublas: no ones vector of ") + dtype_name(dtype));
  }
  if (ptr != nullptr) {
    DNNB_CUDA_TRY(cudaFree(ptr));  // waits for the work that may still read it
    ptr = nullptr;
    capacity = 0;
  }
  void* fresh = nullptr;
  DNNB_CUDA_TRY(cudaMalloc(&fresh, bytes));
  const cudaError_t copied = cudaMemcpy(fresh, host, bytes, cudaMemcpyHostToDevice);  // done on return
  if (copied != cudaSuccess) {
    (void)cudaFree(fresh);
    return cuda_status(copied, "cudaMemcpy(ones)", __FILE__, __LINE__);
  }
  ptr = fresh;
  capacity = n;
  return static_cast<const void*>(ptr);
}

namespace {

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

}  // namespace

std::optional<Operand> transposed_view(int64_t rows, int64_t cols, int64_t s_r, int64_t s_c) {
  // Column-major cols x rows, leading dim s_r: element (c, r) at c + r s_r, which is (r, c).
  if ((s_c == 1 || cols == 1) && (rows == 1 || s_r >= cols))
    return Operand{CUBLAS_OP_N, rows == 1 ? std::max<int64_t>(cols, 1) : s_r};
  // Column-major rows x cols, leading dim s_c, transposed by cuBLAS.
  if ((s_r == 1 || rows == 1) && (cols == 1 || s_c >= rows))
    return Operand{CUBLAS_OP_T, cols == 1 ? std::max<int64_t>(rows, 1) : s_c};
  return std::nullopt;
}

bool fits_int(std::initializer_list<int64_t> values) {
  return std::all_of(values.begin(), values.end(), [](int64_t v) { return v >= 0 && v <= INT_MAX; });
}

Result<cublasLtHandle_t> lt_handle_of(const CudaDevice& device) {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = handles.find(device.ordinal()); it != handles.end()) return it->second;
  cublasLtHandle_t handle = nullptr;
  DNNB_CUBLAS_TRY(cublasLtCreate(&handle));
  handles[device.ordinal()] = handle;
  return handle;
}

uint32_t alignment_of(const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

namespace {

// The product with its bias added by cuBLASLt's CUBLASLT_EPILOGUE_BIAS: the f32 accumulator
// plus the bias (read in the output dtype, which is the input dtype here) is rounded once to y.
// Same column-major mapping as run_product: D (m = N rows, n = M cols, ld ldc) = op(B') op(A'),
// and the bias runs along D's rows, so it is linear's [N] vector as is. Split-K reductions are
// restricted to none or one in the compute type (f32) so partial sums are never rounded to y's
// f16/bf16 (what CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION does for cublasGemmEx).
Status run_product_lt_bias(const CudaDevice& device, OpCall& call, const Product& p, const Operand& a_view,
                           const Operand& b_view, int64_t ldc) {
  if (p.batch != 1) return Status::unsupported("cublas: a bias on a batched product");
  if (p.out_dtype != p.in_dtype)
    return Status::unsupported(std::string("cublas: the Lt bias epilogue reads its bias in the output dtype (") +
                               dtype_name(p.out_dtype) + "), the bias here is " + dtype_name(p.in_dtype));
  auto handle = lt_handle_of(device);
  if (!handle) return handle.status();
  const cublasComputeType_t compute = p.in_dtype != DType::f32 ? CUBLAS_COMPUTE_32F
                                      : p.tf32                 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                               : CUBLAS_COMPUTE_32F_PEDANTIC;
  const cudaDataType_t in_type = cuda_type(p.in_dtype), out_type = cuda_type(p.out_dtype);
  const uint64_t m = static_cast<uint64_t>(p.n), n = static_cast<uint64_t>(p.m), k = static_cast<uint64_t>(p.k);

  LtDescs d;
  DNNB_CUBLAS_TRY(cublasLtMatmulDescCreate(&d.op, compute, CUDA_R_32F));
  const int32_t trans_a = b_view.op, trans_b = a_view.op;
  DNNB_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
  DNNB_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
  const uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  DNNB_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  const int32_t bias_type = out_type;
  DNNB_CUBLAS_TRY(
      cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
  const void* bias = p.bias;
  DNNB_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));

  // Layouts of the operands as stored (column-major): an op-T operand is stored transposed.
  const bool a_t = b_view.op == CUBLAS_OP_T, b_t = a_view.op == CUBLAS_OP_T;
  DNNB_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&d.a, in_type, a_t ? k : m, a_t ? m : k, b_view.ld));
  DNNB_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&d.b, in_type, b_t ? n : k, b_t ? k : n, a_view.ld));
  DNNB_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&d.c, out_type, m, n, ldc));

  uint64_t workspace_bytes = 0;
  void* workspace = nullptr;
  if (call.workspace.buffer && call.workspace.buffer->handle != nullptr) {
    workspace = data_of(call.workspace);
    workspace_bytes = storage_bytes(call.workspace.dtype, call.workspace.numel());
  }
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&d.pref));
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &workspace_bytes, sizeof(workspace_bytes)));
  const uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                       &reductions, sizeof(reductions)));
  const uint32_t align_a = alignment_of(p.b), align_b = alignment_of(p.a), align_c = alignment_of(p.y);
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
                                                       sizeof(align_a)));
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
                                                       sizeof(align_b)));
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c,
                                                       sizeof(align_c)));
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c,
                                                       sizeof(align_c)));

  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  DNNB_CUBLAS_TRY(cublasLtMatmulAlgoGetHeuristic(*handle, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &heuristic, &found));
  if (found < 1)
    return Status::unsupported(std::string("cublas: cublasLtMatmulAlgoGetHeuristic found no algorithm for a ") +
                               dtype_name(p.in_dtype) + " product with a bias epilogue (" + std::to_string(p.m) + "x" +
                               std::to_string(p.n) + "x" + std::to_string(p.k) + ", alignments A " +
                               std::to_string(align_a) + " B " + std::to_string(align_b) + " D " +
                               std::to_string(align_c) + " bytes, workspace " + std::to_string(workspace_bytes) + ")");
  const float one = 1.f, zero = 0.f;
  DNNB_CUBLAS_TRY(cublasLtMatmul(*handle, d.op, &one, p.b, d.a, p.a, d.b, &zero, p.y, d.c, p.y, d.c, &heuristic.algo,
                                 workspace, workspace_bytes, device.stream()));
  return Status::ok();
}

}  // namespace

Status cublas_status(cublasStatus_t status, const char* call, const char* file, int line) {
  return error_at(file, line,
                  std::string(call) + " failed: " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

Result<const CudaDevice*> device_of(OpCall& call) {
  if (call.device.info().kind != DeviceKind::cuda)
    return Status::error("cublas " + call.problem.op + " called on device " + call.device.info().id +
                         ", which is not a CUDA device");
  const auto& device = static_cast<const CudaDevice&>(call.device);
  DNNB_TRY(device.activate());
  return &device;
}

void* data_of(const Tensor& t) { return static_cast<char*>(t.buffer->handle) + storage_bytes(t.dtype, t.offset); }

Status expect_output(const Tensor& y, DType in_dtype) {
  if (!y.buffer || y.buffer->handle == nullptr) return Status::bad_input("tensor y has no device buffer");
  const bool widened = y.dtype == DType::f32 && (in_dtype == DType::f16 || in_dtype == DType::bf16);
  if (y.dtype != in_dtype && !widened)
    return Status::bad_input(std::string("tensor y is ") + dtype_name(y.dtype) + ", a product of " + dtype_name(in_dtype) +
                             " writes " + dtype_name(in_dtype) + " or f32");
  if (y.ndim() > 0 && y.shape.back() > 1 && y.strides.back() != 1)
    return Status::unsupported("cublas: y must have unit stride along its last dim, got " + y.describe());
  return Status::ok();
}

Status run_product(const CudaDevice& device, OpCall& call, const Product& p) {
  // C (N x M, column-major: y^T) = op(B') (N x K) op(A') (K x M).
  const auto b_view = transposed_view(p.k, p.n, p.b_k, p.b_n);
  if (!b_view)
    return Status::unsupported("cublas: operand b (" + std::to_string(p.k) + "x" + std::to_string(p.n) + ", strides " +
                               std::to_string(p.b_k) + "," + std::to_string(p.b_n) + ") has no leading dimension");
  const auto a_view = transposed_view(p.m, p.k, p.a_m, p.a_k);
  if (!a_view)
    return Status::unsupported("cublas: operand a (" + std::to_string(p.m) + "x" + std::to_string(p.k) + ", strides " +
                               std::to_string(p.a_m) + "," + std::to_string(p.a_k) + ") has no leading dimension");
  const int64_t ldc = p.m == 1 ? std::max<int64_t>(p.n, 1) : p.y_m;
  if (ldc < p.n) return Status::unsupported("cublas: y's row stride " + std::to_string(p.y_m) + " is below N");
  if (!fits_int({p.m, p.n, p.k, a_view->ld, b_view->ld, ldc, p.batch}))
    return Status::unsupported("cublas: a dim or leading dim beyond 2^31 - 1");
  // A bias with an f16/bf16 y goes through the Lt epilogue (rounded once); an f32 y holds the
  // bias exactly, so the two-product path below also rounds the sum once.
  if (p.bias != nullptr && p.out_dtype != DType::f32)
    return run_product_lt_bias(device, call, p, *a_view, *b_view, ldc);

  auto handle = handle_of(device);
  if (!handle) return handle.status();
  cublasHandle_t h = *handle;
  if (call.workspace.buffer && call.workspace.buffer->handle != nullptr) {
    DNNB_CUBLAS_TRY(cublasSetWorkspace(h, data_of(call.workspace), storage_bytes(call.workspace.dtype, call.workspace.numel())));
  } else {
    DNNB_CUBLAS_TRY(cublasSetWorkspace(h, nullptr, 0));
  }
  DNNB_CUBLAS_TRY(cublasSetMathMode(
      h, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  const cublasComputeType_t compute = p.in_dtype != DType::f32 ? CUBLAS_COMPUTE_32F
                                      : p.tf32                 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                               : CUBLAS_COMPUTE_32F_PEDANTIC;
  const cudaDataType_t in_type = cuda_type(p.in_dtype), out_type = cuda_type(p.out_dtype);
  const float one = 1.f, zero = 0.f;
  const int m = static_cast<int>(p.n), n = static_cast<int>(p.m), k = static_cast<int>(p.k);

  if (p.bias != nullptr) {
    if (p.batch != 1) return Status::unsupported("cublas: a bias on a batched product");
    auto column = ones(device, p.in_dtype, p.m);
    if (!column) return column.status();
    // y^T (N x M) = bias (N x 1) times ones (1 x M): every row of y is the bias, exactly.
    DNNB_CUBLAS_TRY(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, 1, &one, p.bias, in_type, std::max(m, 1), *column,
                                 in_type, 1, &zero, p.y, out_type, static_cast<int>(ldc), compute, CUBLAS_GEMM_DEFAULT));
  }
  const float* beta = p.bias != nullptr ? &one : &zero;
  if (p.batch == 1) {
    DNNB_CUBLAS_TRY(cublasGemmEx(h, b_view->op, a_view->op, m, n, k, &one, p.b, in_type, static_cast<int>(b_view->ld),
                                 p.a, in_type, static_cast<int>(a_view->ld), beta, p.y, out_type, static_cast<int>(ldc),
                                 compute, CUBLAS_GEMM_DEFAULT));
  } else {
    DNNB_CUBLAS_TRY(cublasGemmStridedBatchedEx(
        h, b_view->op, a_view->op, m, n, k, &one, p.b, in_type, static_cast<int>(b_view->ld), p.b_batch, p.a, in_type,
        static_cast<int>(a_view->ld), p.a_batch, beta, p.y, out_type, static_cast<int>(ldc), p.y_batch,
        static_cast<int>(p.batch), compute, CUBLAS_GEMM_DEFAULT));
  }
  return Status::ok();
}

Product x_times_w_transposed(DType in_dtype, int64_t m, int64_t n, int64_t k, const Tensor& x, const Tensor& w,
                             const Tensor& y) {
  Product p;
  p.in_dtype = in_dtype;
  p.out_dtype = y.dtype;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = data_of(x);
  p.a_m = x.strides[0];
  p.a_k = x.strides[1];
  p.b = data_of(w);  // B (K x N) = w^T: element (k, n) at n * w.strides[0] + k * w.strides[1]
  p.b_k = w.strides[1];
  p.b_n = w.strides[0];
  p.y = data_of(y);
  p.y_m = y.strides[0];
  return p;
}

bool register_op(const std::string& op, const std::string& compute_unit, std::function<Status(OpCall&)> run,
                 std::vector<KnownDeviation> deviations) {
  Implementation impl;
  impl.op = op;
  impl.backend = "cublas";
  impl.dtypes = {DType::f32, DType::f16, DType::bf16};
  impl.compute_unit = compute_unit;
  if (compute_unit == "bf16_tensor")
    impl.compute_unit_for = [](const Problem& problem, const DeviceRuntime&) { return ops::tensor_core_unit(problem); };
  impl.known_deviations = std::move(deviations);
  impl.supports = [](const Problem& problem, const DeviceRuntime& device) {
    if (device.info().kind != DeviceKind::cuda)
      return Status::unsupported("cublas runs on CUDA devices, not " + device.info().id);
    if (problem.dtype != DType::f32 && problem.dtype != DType::f16 && problem.dtype != DType::bf16)
      return Status::unsupported("cublas " + problem.op + " has no " + dtype_name(problem.dtype) + " product");
    return Status::ok();
  };
  impl.run = std::move(run);
  impl.workspace_bytes = [](const Problem&, const DeviceRuntime&) -> Result<size_t> { return kWorkspaceBytes; };
  return Registry::instance().add_implementation(std::move(impl));
}

}  // namespace dnnb::cublas_peer

namespace dnnb {
// The cuBLAS library version actually loaded, for the results' fingerprint.
DNNB_REGISTER(register_fingerprint_item("cublas", [] {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS)
    return std::string("unknown");
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}));
}  // namespace dnnb
