// CUDA cross_entropy_bwd: dlogits = d(mean loss)/d logits for grad 1:
//   (softmax(logits[r]) - onehot(target[r])) / kept   for rows with target != ignore_index,
//   0                                                  for ignored rows,
// with kept = the number of rows whose target is not ignore_index. f32 and bf16.
//
// Kernels: the row softmax of kernels/cuda/softmax_rows.cuh with the cross-entropy epilogue:
// rows of 1025..8192 classes in the persistent prefetching kernel, others held in registers up to
// 16K classes or in shared memory up to 51200 classes (logits read once, dlogits written once);
// longer rows read the logits twice.
// The kept rows: the persistent kernel counts them itself (each block its own rows' targets,
// added with one atomic; the blocks wait for every block's count before their first store, so
// the launch is cooperative; exact integers, so deterministic): one launch for the op. The other
// kernels, and the alternative "expf" (bf16 with expf, without the persistent kernel), take
// ce_count_kept_kernel first: one block counts the kept rows into 4 bytes of scratch.
#include "kernels/cuda/softmax_rows.cuh"

namespace dnnb::cuda_kernels {
namespace {

constexpr int kCountThreads = 1024;

__global__ void __launch_bounds__(kCountThreads)
    ce_count_kept_kernel(const int64_t* target, int64_t stride, int64_t rows, int64_t ignore_index,
                         int* kept) {
  __shared__ int scratch[32];
  int count = 0;
  // Unrolled so that each thread's loads are issued together: one block reads every target, and
  // a loop with one load in flight per thread would pay a DRAM latency per 1024 rows.
#pragma unroll 16
  for (int64_t r = threadIdx.x; r < rows; r += kCountThreads)
    count += target[r * stride] != ignore_index;
#pragma unroll
  for (int o = 16; o > 0; o /= 2) count += __shfl_xor_sync(0xffffffffu, count, o);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = count;
  __syncthreads();
  if (threadIdx.x >= 32) return;
  count = scratch[threadIdx.x];
#pragma unroll
  for (int o = 16; o > 0; o /= 2) count += __shfl_xor_sync(0xffffffffu, count, o);
  if (threadIdx.x == 0) *kept = count;
}

Status run_cross_entropy_bwd(OpCall& call, SoftmaxExp exp) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto ignore_index = call.problem.get_int("ignore_index", -100);
  if (!ignore_index) return ignore_index.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input(
        "cuda cross_entropy_bwd: expected inputs logits, target and output dlogits");
  const Tensor& logits = call.inputs[0];
  const Tensor& target = call.inputs[1];
  const Tensor& dlogits = call.outputs[0];
  DNNB_TRY(expect_tensor(logits, call.problem.dtype, "logits"));
  DNNB_TRY(expect_tensor(target, DType::i64, "target"));
  DNNB_TRY(expect_tensor(dlogits, call.problem.dtype, "dlogits"));
  if (logits.ndim() != 2 || target.shape != Shape{logits.shape[0]} || dlogits.shape != logits.shape)
    return Status::bad_input(
        "cuda cross_entropy_bwd: expected logits [N, C], target [N], dlogits [N, C]");
  if (logits.numel() == 0) return Status::ok();
  const CudaDevice& dev = **device;
  const int64_t rows = logits.shape[0];
  return dispatch_float<false>(call.problem.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    SoftmaxArgs<T> a;
    auto xv = make_row_view<T>(logits);
    if (!xv) return xv.status();
    auto yv = make_row_view<T>(dlogits);
    if (!yv) return yv.status();
    a.x = *xv;
    a.y = *yv;
    a.rows = rows;
    a.cols = logits.shape[1];
    a.target = data_ptr<int64_t>(target);
    a.target_stride = target.strides[0];
    a.ignore_index = *ignore_index;
    if (exp == SoftmaxExp::fast16 && softmax_pipe_fits(a)) {  // the pipe kernel counts
      auto counters = grid_counters(dev);
      if (!counters) return counters.status();
      a.grid = *counters;
      return launch_softmax_rows<T>(dev, a, exp);
    }
    auto kept = StreamScratch::allocate(dev, sizeof(int));
    if (!kept) return kept.status();
    ce_count_kept_kernel<<<1, kCountThreads, 0, dev.stream()>>>(a.target, a.target_stride, rows,
                                                                a.ignore_index, kept->as<int>());
    DNNB_CUDA_CHECK_LAUNCH();
    a.kept_rows = kept->as<int>();
    DNNB_TRY(launch_softmax_rows<T>(dev, a, exp));
    return kept->release();
  });
}

Status check_cross_entropy_bwd(const Problem& problem) {
  auto ignore_index = problem.get_int("ignore_index", -100);
  return ignore_index ? Status::ok() : ignore_index.status();
}

DNNB_REGISTER(register_cuda(
    "cross_entropy_bwd", "", "", {DType::f32, DType::bf16},
    [](OpCall& call) { return run_cross_entropy_bwd(call, SoftmaxExp::fast16); },
    check_cross_entropy_bwd));
DNNB_REGISTER(register_cuda(
    "cross_entropy_bwd", "expf",
    "bf16 gradients computed with the accurate expf (the default's 2-instruction exp, within 2^-22 "
    "relative, can flip a near-tie rounding of the output), at about twice the default's time on "
    "rows of 1025..8192 classes.",
    {DType::bf16}, [](OpCall& call) { return run_cross_entropy_bwd(call, SoftmaxExp::expf); },
    check_cross_entropy_bwd));

}  // namespace
}  // namespace dnnb::cuda_kernels
