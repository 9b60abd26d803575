// CUDA cross_entropy_bwd: dlogits = d(mean loss)/d logits for grad 1:
//   (softmax(logits[r]) - onehot(target[r])) / kept   for rows with target != ignore_index,
//   0                                                  for ignored rows,
// with kept = the number of rows whose target is not ignore_index. f32 and bf16.
//
// Kernels: the row softmax of kernels/cuda/softmax_rows.cuh with the cross-entropy epilogue:
// rows held in registers up to 16K classes or in shared memory up to 51200 classes (logits read
// once, dlogits written once); longer rows read the logits twice.
// The kept rows: counted inside the pipe kernel (each block its own rows' targets, added with one
// atomic; the blocks wait for every block's count before their first store, so the launch is
// cooperative; exact integers, so deterministic) since 2026-11-26, session 17. At 16384 x 8192
// in three rounds: H200 bf16 148.0-148.1 us against session 16's 149.0-149.3, f32 289.3-289.8
// against 289.9-290.4; H100 bf16 205.1-205.2 against 206.8-206.9 with the count kernel, 1 x
// 8192 bf16 6.06 against 6.69. The other kernels, and
// variant "count_kernel", take ce_count_kept first (one block counts the kept rows into 4 bytes
// of scratch; the pipe kernel is launched to overlap it, session 13).
// Variants, as softmax's (SoftmaxPlan): "" the persistent prefetching kernel (softmax_pipe_kernel;
// bf16 in "pipe4"'s shape, or "pipe32"'s on devices with DRAM under 4 TB/s: softmax_plan.h;
// equal to "occ" bit for bit; promoted from "pipe" after the H200 run of 2026-11-21, session 3:
// f32 295 us against 452, bf16 201 against 297; session 4: bf16 with 4 blocks per SM, 161 us);
// "pipe32", "pipe4", "pipe16" the pipe kernel's launch shapes (softmax.cu; session 6 on the H200,
// bf16 at 16384 x 8192: pipe16 66.6% of copy against the default's 83.5, also with 4 stages
// (66.2) or without the exact-row kernel (63.2): the 16-bit softmax's shape does not carry over);
// "occ" places 1025..8192 classes 3 rows per SM
// with the 2-instruction exp for bf16 (the default from the first H200 run that day: f32 452 us
// against 578, bf16 312 against 406 at 16384 x 8192); "occ_expf" the same with expf; "reg2" the
// default before.
#include "kernels/cuda/softmax_rows.cuh"

namespace dnnb::cuda_kernels {
namespace {

constexpr int kCountThreads = 1024;

__global__ void __launch_bounds__(kCountThreads)
    ce_count_kept_kernel(const int64_t* target, int64_t stride, int64_t rows, int64_t ignore_index,
                         int* kept) {
  __shared__ int scratch[32];
  // The softmax pipe kernel after this one may start now (row_pipe.cuh, overlap_prior): it
  // waits for this kernel's completion before it reads the count.
  release_dependent_grid();
  int count = 0;
  // Unrolled so that each thread's loads are issued together: one block reads every target, and
  // a loop with one load in flight per thread paid a DRAM latency per 1024 rows (16 at 16384
  // rows: Nsight Compute on the H200, 2026-11-21, session 7, timed the bf16 softmax kernel at
  // 142.6 us where the op took 150 in bench).
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

// How the kept rows are counted: inside the pipe kernel, whose blocks then wait for each other's
// counts (softmax_rows.cuh, add_block_kept_rows: one launch, not two), wherever the pipe kernel
// takes the rows; else, and in variant "count_kernel", by ce_count_kept_kernel before the row
// kernel.
enum class KeptCount { kernel_before, in_grid };

Status run_cross_entropy_bwd(OpCall& call, SoftmaxPlan plan, KeptCount counting) {
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
    if (counting == KeptCount::in_grid && is_pipe_plan(plan) && softmax_pipe_fits(a)) {
      auto counters = grid_counters(dev);
      if (!counters) return counters.status();
      a.grid = *counters;
      return launch_softmax_rows<T>(dev, a, plan);
    }
    auto kept = StreamScratch::allocate(dev, sizeof(int));
    if (!kept) return kept.status();
    ce_count_kept_kernel<<<1, kCountThreads, 0, dev.stream()>>>(a.target, a.target_stride, rows,
                                                                a.ignore_index, kept->as<int>());
    DNNB_CUDA_CHECK_LAUNCH();
    a.kept_rows = kept->as<int>();
    DNNB_TRY(launch_softmax_rows<T>(dev, a, plan));
    return kept->release();
  });
}

Status check_cross_entropy_bwd(const Problem& problem) {
  auto ignore_index = problem.get_int("ignore_index", -100);
  return ignore_index ? Status::ok() : ignore_index.status();
}

bool register_cross_entropy_bwd(const char* variant, SoftmaxPlan plan,
                                KeptCount counting = KeptCount::in_grid) {
  return register_cuda(
      "cross_entropy_bwd", variant, {DType::f32, DType::bf16},
      [plan, counting](OpCall& call) { return run_cross_entropy_bwd(call, plan, counting); },
      check_cross_entropy_bwd);
}

DNNB_REGISTER(register_cross_entropy_bwd("", SoftmaxPlan::pipe));
DNNB_REGISTER(register_cross_entropy_bwd("pipe32", SoftmaxPlan::pipe32));
DNNB_REGISTER(register_cross_entropy_bwd("pipe4", SoftmaxPlan::pipe4));
DNNB_REGISTER(register_cross_entropy_bwd("pipe16", SoftmaxPlan::pipe16));
DNNB_REGISTER(register_cross_entropy_bwd("occ", SoftmaxPlan::occ));
DNNB_REGISTER(register_cross_entropy_bwd("occ_expf", SoftmaxPlan::occ_expf));
DNNB_REGISTER(register_cross_entropy_bwd("reg2", SoftmaxPlan::reg2));
DNNB_REGISTER(register_cross_entropy_bwd("count_kernel", SoftmaxPlan::pipe, KeptCount::kernel_before));

}  // namespace
}  // namespace dnnb::cuda_kernels
