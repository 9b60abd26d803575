// Host glue shared by the CUDA kernels (see cuda_common.cuh).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

Result<const CudaDevice*> cuda_device_of(OpCall& call) {
  if (call.device.info().kind != DeviceKind::cuda)
    return Status::error("cuda kernel for " + call.problem.op + " called on device " +
                         call.device.info().id + ", which is not a CUDA device");
  const auto& device = static_cast<const CudaDevice&>(call.device);
  DNNB_TRY(device.activate());
  return &device;
}

Status expect_tensor(const Tensor& t, DType dtype, const char* what) {
  if (!t.buffer || t.buffer->handle == nullptr)
    return Status::bad_input(std::string("tensor ") + what + " has no device buffer");
  if (t.dtype != dtype)
    return Status::bad_input(std::string("tensor ") + what + " is " + dtype_name(t.dtype) +
                             ", the kernel expects " + dtype_name(dtype));
  return Status::ok();
}

bool rows_vectorizable(const void* data, const RowIndex& ri, int vec_elements) {
  if (reinterpret_cast<uintptr_t>(data) % 16 != 0) return false;
  if (ri.col_stride != 1) return false;
  for (int d = 0; d < ri.outer_dims; ++d)
    if (ri.stride[d] % vec_elements != 0) return false;
  return true;
}

namespace {
// One memory pool per device, created on first use and kept for the process: its release
// threshold keeps freed memory in the pool, so a benchmark loop does not map and unmap pages.
Result<cudaMemPool_t> scratch_pool(int ordinal) {
  static std::mutex mutex;
  static std::map<int, cudaMemPool_t> pools;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = pools.find(ordinal);
  if (it != pools.end()) return it->second;
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = ordinal;
  cudaMemPool_t pool = nullptr;
  DNNB_CUDA_TRY(cudaMemPoolCreate(&pool, &props));
  uint64_t keep_all = UINT64_MAX;
  DNNB_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  pools[ordinal] = pool;
  return pool;
}
}  // namespace

Result<int64_t> resident_blocks(const void* kernel, int threads, const CudaDevice& device) {
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, int>, int64_t> known;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(kernel, threads, device.ordinal());
  if (auto it = known.find(key); it != known.end()) return it->second;
  int per_sm = 0;
  DNNB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  known[key] = static_cast<int64_t>(std::max(per_sm, 1)) * device.sm_count();
  return known[key];
}

Result<GridCounters*> grid_counters(const CudaDevice& device) {
  static std::mutex mutex;
  static std::map<int, GridCounters*> counters;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = counters.find(device.ordinal()); it != counters.end()) return it->second;
  void* block = nullptr;
  DNNB_CUDA_TRY(cudaMalloc(&block, sizeof(GridCounters)));
  // Zeroed in the stream, so any later launch on it sees 0; never freed (the process's).
  DNNB_CUDA_TRY(cudaMemsetAsync(block, 0, sizeof(GridCounters), device.stream()));
  counters[device.ordinal()] = static_cast<GridCounters*>(block);
  return static_cast<GridCounters*>(block);
}

Result<StreamScratch> StreamScratch::allocate(const CudaDevice& device, size_t bytes) {
  auto pool = scratch_pool(device.ordinal());
  if (!pool) return pool.status();
  void* ptr = nullptr;
  DNNB_CUDA_TRY(cudaMallocFromPoolAsync(&ptr, std::max<size_t>(bytes, 16), *pool, device.stream()));
  return StreamScratch(ptr, device.stream());
}

StreamScratch::StreamScratch(StreamScratch&& other) noexcept
    : ptr_(other.ptr_), stream_(other.stream_) {
  other.ptr_ = nullptr;
}

StreamScratch::~StreamScratch() {
  if (ptr_ != nullptr) (void)cudaFreeAsync(ptr_, stream_);  // error path: the run already failed
}

Status StreamScratch::release() {
  void* ptr = ptr_;
  ptr_ = nullptr;
  if (ptr != nullptr) DNNB_CUDA_TRY(cudaFreeAsync(ptr, stream_));
  return Status::ok();
}

bool register_cuda(std::string op, std::string variant, std::string when,
                   std::initializer_list<DType> dtypes, std::function<Status(OpCall&)> run,
                   std::function<Status(const Problem&)> extra) {
  if (variant.empty() != when.empty()) {
    std::fprintf(stderr, "dnnblocks: cuda %s%s%s: %s\n", op.c_str(), variant.empty() ? "" : "/",
                 variant.c_str(),
                 variant.empty() ? "a default has no 'when' sentence, not registered"
                                 : "an alternative needs its 'when' sentence, not registered");
    return false;
  }
  Implementation impl;
  impl.op = op;
  impl.backend = "cuda";
  impl.variant = std::move(variant);
  impl.when = std::move(when);
  impl.dtypes.assign(dtypes.begin(), dtypes.end());
  std::vector<DType> allowed = impl.dtypes;
  impl.supports = [allowed, extra](const Problem& problem, const DeviceRuntime& device) {
    if (device.info().kind != DeviceKind::cuda)
      return Status::unsupported("cuda kernels run on CUDA devices, not " + device.info().id);
    if (std::find(allowed.begin(), allowed.end(), problem.dtype) == allowed.end())
      return Status::unsupported(std::string("cuda ") + problem.op + " has no " +
                                 dtype_name(problem.dtype) + " kernel");
    // RowIndex holds 4 outer dims after collapsing: any shape of up to 5 dims fits.
    if (problem.shape.size() > 5)
      return Status::unsupported("cuda kernels address at most 5-d tensors (RowIndex has " +
                                 std::to_string(RowIndex::kMaxOuterDims) + " outer dims), got " +
                                 shape_to_string(problem.shape));
    return extra ? extra(problem) : Status::ok();
  };
  impl.run = std::move(run);
  return Registry::instance().add_implementation(std::move(impl));
}

}  // namespace dnnb::cuda_kernels
