// CUDA cross_entropy (forward): loss = mean over rows with target != ignore_index of
// logsumexp(logits[r]) - logits[r, target[r]]; every row ignored gives NaN (0/0), as torch.
// logits [N, C] f32 or bf16, target [N] i64, loss 0-d.
//
// Kernels (launch_cross_entropy picks the first that takes the rows):
//  - ce_stats_tma (bf16 rows of whole 4 KB chunks): persistent warps whose chunks arrive in
//    shared-memory rings filled by bulk copies (cross_entropy_tma.cuh).
//  - ce_stats_pipe (many aligned rows; f32's kernel): persistent warps with the next chunk in
//    flight in registers (cross_entropy_pipe.cuh).
//  Both end with the mean in the same launch (ce_pipe_mean).
//  - ce_stats_warp: a warp per row when there are many rows (ce_use_warp_rows), see below.
//  - ce_stats: one block per row (or per row chunk when few rows are long): a single streaming
//    pass over the logits with online statistics (running max m, sum s of exp(x - m), one
//    rescale per 16-byte vector at most), merged across the block. With one chunk per row the
//    block finishes the row: loss_r = m + log(s) - x[target] (0 when ignored) into scratch;
//    otherwise it writes (m, s) for its chunk. Bytes: the logits once (the minimum), 4-8 per row.
//  - ce_mean (after ce_stats_warp and ce_stats): one block sums the row losses in a fixed order
//    (threads stride rows, then a block tree) and counts kept rows: deterministic, no float
//    atomics. With chunks it first merges each row's (m, s) (a warp per row).
// bf16 logits take the 2-instruction exp (cuda_common.cuh, exp_shifted_16bit) in the first three;
// the alternative "expf" takes expf in ce_stats_warp and ce_stats only.
#include <algorithm>

#include "kernels/cuda/cross_entropy.cuh"
#include "kernels/cuda/cross_entropy_pipe.cuh"
#include "kernels/cuda/cross_entropy_tma.cuh"

namespace dnnb::cuda_kernels {
namespace {

constexpr int kCeUnroll = 4;

// Loss of one row from its statistics: 0 when ignored, NaN for a target outside [0, C) (torch
// raises there; NaN makes the bad input visible instead of reading out of bounds).
template <typename T>
__device__ float ce_row_loss(const CeArgs<T>& a, int64_t row, float m, float s) {
  const int64_t t = a.target[row * a.target_stride];
  if (t == a.ignore_index) return 0.f;
  if (t < 0 || t >= a.cols) return NAN;
  const float x_t = to_float(a.x.row(row)[t * a.x.ri.col_stride]);
  return (m + logf(s)) - x_t;
}

template <typename T>
__global__ void __launch_bounds__(512) ce_stats_kernel(CeArgs<T> a) {
  constexpr int W = kVec<T>;
  __shared__ float scratch[2][32];
  const int64_t row = blockIdx.x / a.splits;
  const int64_t c0 = (blockIdx.x % a.splits) * a.chunk;
  const int64_t c1 = c0 + a.chunk < a.cols ? c0 + a.chunk : a.cols;
  const int64_t step = static_cast<int64_t>(blockDim.x) * W;
  const T* x_row = a.x.row(row);
  float m = -INFINITY;
  float s = 0.f;
  for (int64_t c = c0 + static_cast<int64_t>(threadIdx.x) * W; c < c1; c += step * kCeUnroll) {
    float v[kCeUnroll][W];
#pragma unroll
    for (int u = 0; u < kCeUnroll; ++u) load_vec<T>(v[u], a.x, x_row, c + u * step, c1, -INFINITY);
#pragma unroll
    for (int u = 0; u < kCeUnroll; ++u) online_max_sum(v[u], m, s);
  }
  group_reduce_max_sum(m, s, blockDim.x, scratch[0], scratch[1]);
  if (threadIdx.x != 0) return;
  if (a.splits == 1)
    a.row_loss[row] = ce_row_loss(a, row, m, s);
  else
    a.partials[blockIdx.x] = make_float2(m, s);
}

// Many rows the persistent kernels do not take (unaligned rows, C % kVec != 0): a warp per row
// streams it with kCeUnroll 16-byte vectors per lane in flight (2 KB per warp at f32), online
// (max, sum) per lane, a warp butterfly at the end: no block barrier and few registers, so 64
// rows are in flight per SM where the block-per-row kernel keeps 2-4. kFastExp == false: the
// same per-vector arithmetic as ce_stats_kernel; the merge order differs (last bits of the
// loss). kFastExp (bf16 unless "expf"): online_max_sum_fast, as bf16 logits are issue-bound with
// expf (one expf per 2 bytes read).
template <typename T, bool kFastExp>
__global__ void __launch_bounds__(256) ce_stats_warp_kernel(CeArgs<T> a) {
  static_assert(!kFastExp || sizeof(T) == 2, "the approximate exp is for 16-bit logits only");
  constexpr int W = kVec<T>;
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (row >= a.rows) return;  // whole warps leave together: rows are warp-uniform
  const int lane = threadIdx.x & 31;
  const int64_t step = 32 * W;
  const T* x_row = a.x.row(row);
  float m = -INFINITY;
  float ms = -INFINITY;  // kFastExp: m * log2e as used by the exps
  float s = 0.f;
  for (int64_t c = static_cast<int64_t>(lane) * W; c < a.cols; c += step * kCeUnroll) {
    float v[kCeUnroll][W];
#pragma unroll
    for (int u = 0; u < kCeUnroll; ++u) load_vec<T>(v[u], a.x, x_row, c + u * step, a.cols, -INFINITY);
#pragma unroll
    for (int u = 0; u < kCeUnroll; ++u) {
      if constexpr (kFastExp)
        online_max_sum_fast(v[u], m, ms, s);
      else
        online_max_sum(v[u], m, s);
    }
  }
  if constexpr (kFastExp) s = online_fast_finish(m, ms, s);
  group_reduce_max_sum(m, s, 32, nullptr, nullptr);
  if (lane == 0) a.row_loss[row] = ce_row_loss(a, row, m, s);
}

template <typename T>
__global__ void __launch_bounds__(kCeMeanThreads) ce_mean_kernel(CeArgs<T> a) {
  __shared__ float scratch[2][32];
  const int lane = threadIdx.x & 31;
  float sum = 0.f;
  int kept = 0;
  if (a.splits == 1) {
#pragma unroll 4
    for (int64_t r = threadIdx.x; r < a.rows; r += kCeMeanThreads) {
      sum += a.row_loss[r];
      kept += a.target[r * a.target_stride] != a.ignore_index;
    }
  } else {
    for (int64_t r = threadIdx.x >> 5; r < a.rows; r += kCeMeanThreads / 32) {
      float m = -INFINITY;
      float s = 0.f;
      for (int64_t i = lane; i < a.splits; i += 32) {
        const float2 p = a.partials[r * a.splits + i];
        merge_max_sum(m, s, p.x, p.y);
      }
      group_reduce_max_sum(m, s, 32, nullptr, nullptr);  // one warp: no shared memory used
      if (lane == 0) {
        sum += ce_row_loss(a, r, m, s);
        kept += a.target[r * a.target_stride] != a.ignore_index;
      }
    }
  }
  block_sum_float_int(sum, kept, scratch);
  if (threadIdx.x == 0) a.loss[0] = from_float<T>(sum / static_cast<float>(kept));  // 0/0 = NaN
}

// Which exp bf16 logits take: fast16, the 2-instruction exp in every kernel (the default);
// expf, expf in the warp and block kernels (the alternative "expf"). f32 takes expf either way.
enum class CeExp { fast16, expf };

template <typename T>
Status launch_cross_entropy(const CudaDevice& device, CeArgs<T> a, CeExp exp) {
  constexpr int W = kVec<T>;
  if (exp == CeExp::fast16) {
    // bf16: the bulk-copy kernel (1-1.5% faster than the register pipeline at 16384 x 8192 bf16
    // on the H200); f32 stays on the register pipeline, which is faster for it.
    if constexpr (sizeof(T) == 2) {
      auto launched = try_launch_ce_tma<T>(device, a);
      if (!launched) return launched.status();
      if (*launched) return Status::ok();
    }
    auto launched = try_launch_ce_pipe<T>(device, a);
    if (!launched) return launched.status();
    if (*launched) return Status::ok();
  }
  const bool fast_exp = exp == CeExp::fast16;
  a.splits = 1;
  if (ce_use_warp_rows(device, a.rows, a.cols)) {
    auto scratch = StreamScratch::allocate(device, sizeof(float) * a.rows);
    if (!scratch) return scratch.status();
    a.row_loss = scratch->as<float>();
    constexpr int kWarpsPerBlock = 8;
    const unsigned grid = static_cast<unsigned>(ceil_div(a.rows, kWarpsPerBlock));
    if constexpr (sizeof(T) == 2) {
      if (fast_exp)
        ce_stats_warp_kernel<T, true><<<grid, 32 * kWarpsPerBlock, 0, device.stream()>>>(a);
      else
        ce_stats_warp_kernel<T, false><<<grid, 32 * kWarpsPerBlock, 0, device.stream()>>>(a);
    } else {  // f32: expf always
      ce_stats_warp_kernel<T, false><<<grid, 32 * kWarpsPerBlock, 0, device.stream()>>>(a);
    }
    DNNB_CUDA_CHECK_LAUNCH();
    ce_mean_kernel<T><<<1, kCeMeanThreads, 0, device.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
    return scratch->release();
  }
  a.chunk = round_up(std::max<int64_t>(a.cols, 1), W);
  const int64_t want_blocks = 2LL * device.sm_count();
  if (a.rows < want_blocks && a.cols >= 16384) {
    const int64_t splits =
        std::min(ceil_div(want_blocks, std::max<int64_t>(a.rows, 1)), ceil_div(a.cols, 8192));
    a.chunk = round_up(ceil_div(a.cols, splits), W);
    a.splits = ceil_div(a.cols, a.chunk);
  }
  const int block = static_cast<int>(
      std::clamp<int64_t>(round_up(ceil_div(a.chunk, W * kCeUnroll), 32), 32, 512));
  const int64_t grid = a.rows * a.splits;
  if (grid > INT32_MAX) return Status::unsupported("too many rows for one launch");
  auto scratch = StreamScratch::allocate(
      device, a.splits == 1 ? sizeof(float) * a.rows : sizeof(float2) * a.rows * a.splits);
  if (!scratch) return scratch.status();
  if (a.splits == 1)
    a.row_loss = scratch->as<float>();
  else
    a.partials = scratch->as<float2>();
  if (grid > 0) {
    ce_stats_kernel<T><<<static_cast<unsigned>(grid), block, 0, device.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
  }
  ce_mean_kernel<T><<<1, kCeMeanThreads, 0, device.stream()>>>(a);
  DNNB_CUDA_CHECK_LAUNCH();
  return scratch->release();
}

Status run_cross_entropy(OpCall& call, CeExp exp) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto ignore_index = call.problem.get_int("ignore_index", -100);
  if (!ignore_index) return ignore_index.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cuda cross_entropy: expected inputs logits, target and output loss");
  const Tensor& logits = call.inputs[0];
  const Tensor& target = call.inputs[1];
  const Tensor& loss = call.outputs[0];
  DNNB_TRY(expect_tensor(logits, call.problem.dtype, "logits"));
  DNNB_TRY(expect_tensor(target, DType::i64, "target"));
  DNNB_TRY(expect_tensor(loss, call.problem.dtype, "loss"));
  if (logits.ndim() != 2 || target.shape != Shape{logits.shape[0]} || loss.numel() != 1)
    return Status::bad_input("cuda cross_entropy: expected logits [N, C], target [N], loss []");
  return dispatch_float<false>(call.problem.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    CeArgs<T> a;
    auto xv = make_row_view<T>(logits);
    if (!xv) return xv.status();
    a.x = *xv;
    a.target = data_ptr<int64_t>(target);
    a.target_stride = target.strides[0];
    a.ignore_index = *ignore_index;
    a.rows = logits.shape[0];
    a.cols = logits.shape[1];
    a.loss = data_ptr<T>(loss);
    return launch_cross_entropy<T>(**device, a, exp);
  });
}

Status check_cross_entropy(const Problem& problem) {
  auto ignore_index = problem.get_int("ignore_index", -100);
  return ignore_index ? Status::ok() : ignore_index.status();
}

DNNB_REGISTER(register_cuda(
    "cross_entropy", "", "", {DType::f32, DType::bf16},
    [](OpCall& call) { return run_cross_entropy(call, CeExp::fast16); }, check_cross_entropy));
DNNB_REGISTER(register_cuda(
    "cross_entropy", "expf",
    "bf16 logits whose loss must come from the accurate expf (the default's 2-instruction exp is "
    "within 2^-22 relative per term), at about 2.5x the default's time: a warp per row without "
    "the prefetching pipeline.",
    {DType::bf16}, [](OpCall& call) { return run_cross_entropy(call, CeExp::expf); },
    check_cross_entropy));

}  // namespace
}  // namespace dnnb::cuda_kernels
