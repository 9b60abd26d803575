// CUDA layernorm_stats and rmsnorm_stats: the f32 statistics a norm's forward saves for its
// backward, one value per row, one warp per row (8 rows per 256-thread block, grid-stride over
// the rest). Lanes read consecutive columns, so a unit-stride row is read in whole 128-byte
// lines; the sums are f32, combined by a butterfly of shuffles.
// layernorm: the sum of x - x0 (x0 the row's first element), then the squared deviations about
// the mean in a second read of the row (from L1/L2 for rows of the blocks' sizes): a constant
// row has mean x0 and variance 0 exactly, as in the layernorm kernels (norm_common.cuh).
// rmsnorm: the f32 sum of squares.
#include <algorithm>

#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {
namespace {

constexpr int kStatsWarps = 8;
constexpr int64_t kStatsMaxBlocks = 65535;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T, bool kCentered>
__global__ void __launch_bounds__(kStatsWarps * 32)
    norm_stats_kernel(RowView<T> x, int64_t rows, int64_t cols, float eps, RowView<float> mean, RowView<float> rstd) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kStatsWarps;
  const int64_t col_stride = x.ri.col_stride;
  const float inv_cols = 1.f / static_cast<float>(cols);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kStatsWarps + (threadIdx.x >> 5); r < rows; r += warps) {
    const T* row = x.row(r);
    if constexpr (kCentered) {
      const float x0 = to_float(row[0]);
      float s = 0.f;
      for (int64_t c = lane; c < cols; c += 32) s += to_float(row[c * col_stride]) - x0;
      const float m = warp_sum(s) * inv_cols;  // of x - x0
      float q = 0.f;
      for (int64_t c = lane; c < cols; c += 32) {
        const float d = to_float(row[c * col_stride]) - x0 - m;
        q = fmaf(d, d, q);
      }
      const float var = warp_sum(q) * inv_cols;
      if (lane == 0) {
        *mean.row(r) = x0 + m;
        *rstd.row(r) = 1.f / sqrtf(var + eps);
      }
    } else {
      float q = 0.f;
      for (int64_t c = lane; c < cols; c += 32) {
        const float v = to_float(row[c * col_stride]);
        q = fmaf(v, v, q);
      }
      const float sum_squares = warp_sum(q);
      if (lane == 0) *rstd.row(r) = 1.f / sqrtf(sum_squares * inv_cols + eps);
    }
  }
}

// input x; outputs [mean,] rstd, f32 of x's shape with a last dim of 1.
template <bool kCentered>
Status run_norm_stats(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  const CudaDevice& dev = **device;
  const std::string& op = call.problem.op;
  constexpr size_t kOutputs = kCentered ? 2 : 1;
  if (call.inputs.size() != 1 || call.outputs.size() != kOutputs)
    return Status::bad_input("cuda " + op + ": expected input x and " + std::to_string(kOutputs) + " outputs");
  auto eps = call.problem.get_double("eps", kCentered ? 1e-5 : 1e-6);
  if (!eps) return eps.status();
  const Tensor& x = call.inputs[0];
  DNNB_TRY(expect_tensor(x, call.problem.dtype, "x"));
  if (x.ndim() == 0) return Status::bad_input("cuda " + op + ": x " + x.describe() + " needs >= 1 dim");
  Shape stats = x.shape;
  stats.back() = 1;
  for (size_t i = 0; i < kOutputs; ++i) {
    DNNB_TRY(expect_tensor(call.outputs[i], DType::f32, kCentered && i == 0 ? "mean" : "rstd"));
    if (call.outputs[i].shape != stats)
      return Status::bad_input("cuda " + op + ": output " + call.outputs[i].describe() + " must have shape " +
                               shape_to_string(stats));
  }
  const int64_t cols = x.shape.back();
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  if (rows == 0) return Status::ok();
  return dispatch_float(call.problem.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    auto xv = make_row_view<T>(x);
    if (!xv) return xv.status();
    auto rstd = make_row_view<float>(call.outputs[kOutputs - 1]);
    if (!rstd) return rstd.status();
    auto mean = make_row_view<float>(call.outputs[0]);  // rmsnorm: unused (rstd's view)
    if (!mean) return mean.status();
    const unsigned blocks = static_cast<unsigned>(std::min(ceil_div(rows, int64_t{kStatsWarps}), kStatsMaxBlocks));
    norm_stats_kernel<T, kCentered>
        <<<blocks, kStatsWarps * 32, 0, dev.stream()>>>(*xv, rows, cols, static_cast<float>(*eps), *mean, *rstd);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  });
}

DNNB_REGISTER(register_cuda("layernorm_stats", "", "", {DType::f32, DType::f16, DType::bf16}, run_norm_stats<true>));
DNNB_REGISTER(register_cuda("rmsnorm_stats", "", "", {DType::f32, DType::f16, DType::bf16}, run_norm_stats<false>));

}  // namespace
}  // namespace dnnb::cuda_kernels
