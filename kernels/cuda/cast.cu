// CUDA cast: y = x.to(dtype) between f32, f16, bf16, f8_e4m3fn and f8_e5m2, every pair, bit for
// bit as core/dtype.cpp converts (docs/ops-family4.md, "cast"; docs/cuda.md, "Family 4"). The
// conversions and the flat kernel's per-thread body are kernels/cuda/cast.cuh (host and device).
// Kernels:
//  - cast_flat_kernel, contiguous 16-byte aligned x and y: one 16-byte store of y a step per
//    thread, 64 bytes of x loaded before any store, a grid-stride loop over the blocks that fit
//    on the device at once (cast.cuh, "Flat body"). 8-bit sources fill their result table in
//    shared memory first (min(G, 8) copies).
//  - cast_rows_kernel, any other layout: a block's threads along the columns of its rows,
//    element by element (padded rows coalesce; transposed ones do not); 8-bit sources through
//    one copy of the table.
#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "kernels/cuda/cast.cuh"
#include "kernels/cuda/cuda_common.cuh"
#include "suites/ops/cast_desc.h"

namespace dnnb::cuda_kernels {
namespace {

using namespace cast_detail;

inline constexpr int kThreads = kCastThreads;  // blockDim.x of both kernels (one table entry a thread)

template <int S, int D>
__global__ void __launch_bounds__(kThreads)
    cast_flat_kernel(const void* __restrict__ x, void* __restrict__ y, int64_t n) {
  using F = Flat<S, D>;
  __shared__ uint32_t table[F::kTableWords];
  if constexpr (F::kTable) {
    fill_table_entry<S, D, F::kCopies>(table, threadIdx.x);
    __syncthreads();
  }
  cast_flat_thread<S, D>(x, y, n, blockIdx.x, gridDim.x, threadIdx.x, table);
}

// Start of row r of a view (RowIndex::row_offset with the loop over its at most four outer dims
// unrolled: indexing the view's arrays by a run-time dim would copy them to local memory).
__device__ __forceinline__ int64_t row_begin(const RowIndex& ri, int64_t r) {
  if (ri.outer_dims <= 1) return ri.outer_dims == 0 ? 0 : r * ri.stride[0];
  int64_t off = 0;
#pragma unroll
  for (int d = RowIndex::kMaxOuterDims - 1; d >= 0; --d)
    if (d < ri.outer_dims) {
      off += (r % ri.size[d]) * ri.stride[d];
      r /= ri.size[d];
    }
  return off;
}

template <int S, int D>
__global__ void __launch_bounds__(kThreads, 4)  // up to 64 registers: the row division then does not spill
    cast_rows_kernel(RowView<const typename Storage<S>::type> x, RowView<typename Storage<D>::type> y) {
  using TD = typename Storage<D>::type;
  __shared__ uint32_t table[kThreads];
  if constexpr (sizeof(typename Storage<S>::type) == 1 && S != D) {
    fill_table_entry<S, D, 1>(table, threadIdx.x);
    __syncthreads();
  }
  const int64_t rows = y.ri.rows, cols = y.ri.cols;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const auto* xr = x.data + row_begin(x.ri, r);
    TD* yr = y.data + row_begin(y.ri, r);
    for (int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; c < cols;
         c += static_cast<int64_t>(gridDim.x) * kThreads)
      yr[c * y.ri.col_stride] = static_cast<TD>(convert<S, D>(xr[c * x.ri.col_stride], table));
  }
}


template <int S, int D>
Status launch(const CudaDevice& device, const Tensor& x, const Tensor& y) {
  using TS = typename Storage<S>::type;
  using TD = typename Storage<D>::type;
  const int64_t n = y.numel();
  if (n == 0) return Status::ok();
  const TS* xp = data_ptr<const TS>(x);
  TD* yp = data_ptr<TD>(y);
  if (x.is_contiguous() && y.is_contiguous() && aligned16(xp) && aligned16(yp)) {
    using F = Flat<S, D>;
    auto resident = resident_blocks(reinterpret_cast<const void*>(&cast_flat_kernel<S, D>), kThreads, device);
    if (!resident) return resident.status();
    // Every block resident at once (no second wave), none without an iteration of work.
    const int64_t blocks = std::clamp<int64_t>(ceil_div(n / F::kG, int64_t{kThreads} * F::kSteps), 1, *resident);
    cast_flat_kernel<S, D><<<static_cast<unsigned>(blocks), kThreads, 0, device.stream()>>>(xp, yp, n);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  const int64_t max_blocks = static_cast<int64_t>(device.sm_count()) * 8;
  auto xv = make_row_view<const TS>(x);
  if (!xv) return xv.status();
  auto yv = make_row_view<TD>(y);
  if (!yv) return yv.status();
  if (xv->ri.rows != yv->ri.rows || xv->ri.cols != yv->ri.cols)
    return Status::unsupported("cuda cast: x " + x.describe() + " and y " + y.describe() +
                               " do not split into the same rows");
  const int64_t col_blocks = std::min<int64_t>(ceil_div(yv->ri.cols, kThreads), max_blocks);
  const int64_t row_blocks = std::min<int64_t>({yv->ri.rows, 65535, std::max<int64_t>(1, max_blocks * 4 / col_blocks)});
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(row_blocks));
  cast_rows_kernel<S, D><<<grid, kThreads, 0, device.stream()>>>(*xv, *yv);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

Result<int> format_of(DType dtype) {
  switch (dtype) {
    case DType::f32: return kF32;
    case DType::f16: return kF16;
    case DType::bf16: return kBF16;
    case DType::f8_e4m3fn: return kE4M3;
    case DType::f8_e5m2: return kE5M2;
    default: return Status::unsupported(std::string("cuda cast: no format ") + dtype_name(dtype));
  }
}

// launch<S, D> for the runtime pair: one instantiation per pair.
template <int S>
Status launch_to(int d, const CudaDevice& device, const Tensor& x, const Tensor& y) {
  switch (d) {
    case kF32: return launch<S, kF32>(device, x, y);
    case kF16: return launch<S, kF16>(device, x, y);
    case kBF16: return launch<S, kBF16>(device, x, y);
    case kE4M3: return launch<S, kE4M3>(device, x, y);
    default: return launch<S, kE5M2>(device, x, y);
  }
}

Status run_cast(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input("cuda cast: expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  auto target = ops::cast_target(call.problem);
  if (!target) return target.status();
  DNNB_TRY(expect_tensor(x, call.problem.dtype, "x"));
  DNNB_TRY(expect_tensor(y, *target, "y"));
  if (x.shape != y.shape) return Status::bad_input("cuda cast: x " + x.describe() + " and y " + y.describe() + " differ in shape");
  auto s = format_of(x.dtype);
  if (!s) return s.status();
  auto d = format_of(y.dtype);
  if (!d) return d.status();
  switch (*s) {
    case kF32: return launch_to<kF32>(*d, **device, x, y);
    case kF16: return launch_to<kF16>(*d, **device, x, y);
    case kBF16: return launch_to<kBF16>(*d, **device, x, y);
    case kE4M3: return launch_to<kE4M3>(*d, **device, x, y);
    default: return launch_to<kE5M2>(*d, **device, x, y);
  }
}

DNNB_REGISTER(register_cuda("cast", "", "",
                            {DType::f32, DType::f16, DType::bf16, DType::f8_e4m3fn, DType::f8_e5m2}, run_cast,
                            [](const Problem& problem) {
                              auto target = ops::cast_target(problem);
                              return target ? Status::ok() : target.status();
                            }));

}  // namespace
}  // namespace dnnb::cuda_kernels
