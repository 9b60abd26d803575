// The launch shape the default row-softmax plan takes per device (kernels/cuda/softmax_plan.h):
// host-only, so it is tested here without a GPU. The kernels behind each plan are checked on
// the GPU machine as variants of softmax and cross_entropy_bwd.
#include <gtest/gtest.h>

#include "kernels/cuda/softmax_plan.h"

namespace dnnb::cuda_kernels {
namespace {

constexpr double kH100 = 2 * 2.619e9 * 5120 / 8;  // 3.35 TB/s: memory clock x bus width, DDR
constexpr double kH200 = 4.81e12;                  // docs/devices-h200.md

TEST(SoftmaxPlan, SixteenBitRowsTakeTheShapeTunedForTheirDramSpeed) {
  EXPECT_EQ(resolve_softmax_plan(SoftmaxPlan::pipe, 2, false, kH200), SoftmaxPlan::pipe16);
  EXPECT_EQ(resolve_softmax_plan(SoftmaxPlan::pipe, 2, true, kH200), SoftmaxPlan::pipe4);
  EXPECT_EQ(resolve_softmax_plan(SoftmaxPlan::pipe, 2, false, kH100), SoftmaxPlan::pipe4);
  EXPECT_EQ(resolve_softmax_plan(SoftmaxPlan::pipe, 2, true, kH100), SoftmaxPlan::pipe32);
}

TEST(SoftmaxPlan, UnknownBandwidthKeepsTheH200Shapes) {
  EXPECT_EQ(resolve_softmax_plan(SoftmaxPlan::pipe, 2, false, 0), SoftmaxPlan::pipe16);
  EXPECT_EQ(resolve_softmax_plan(SoftmaxPlan::pipe, 2, true, 0), SoftmaxPlan::pipe4);
}

TEST(SoftmaxPlan, F32AndNamedVariantsDoNotDependOnTheDevice) {
  for (double bw : {0.0, kH100, kH200}) {
    EXPECT_EQ(resolve_softmax_plan(SoftmaxPlan::pipe, 4, false, bw), SoftmaxPlan::pipe16s4);
    EXPECT_EQ(resolve_softmax_plan(SoftmaxPlan::pipe, 4, true, bw), SoftmaxPlan::pipe);
    for (auto named : {SoftmaxPlan::pipe32, SoftmaxPlan::pipe4, SoftmaxPlan::pipe16, SoftmaxPlan::occ})
      for (size_t bytes : {2, 4}) EXPECT_EQ(resolve_softmax_plan(named, bytes, bytes == 2, bw), named);
  }
}

// cross_entropy_bwd counts its kept rows inside the pipe kernel only when the plan runs it: a
// variant of another kernel (occ, reg2) counted that way read a null count (session 17).
TEST(SoftmaxPlan, PipePlansAreTheOnesThatRunThePipeKernel) {
  for (auto pipe : {SoftmaxPlan::pipe, SoftmaxPlan::pipe32, SoftmaxPlan::pipe4, SoftmaxPlan::pipe16,
                    SoftmaxPlan::pipe16s3, SoftmaxPlan::pipe16s4})
    EXPECT_TRUE(is_pipe_plan(pipe));
  for (auto other : {SoftmaxPlan::occ, SoftmaxPlan::occ_expf, SoftmaxPlan::reg2, SoftmaxPlan::smem,
                     SoftmaxPlan::two_pass})
    EXPECT_FALSE(is_pipe_plan(other));
  for (double bw : {0.0, kH100, kH200})
    for (size_t bytes : {2, 4}) EXPECT_TRUE(is_pipe_plan(resolve_softmax_plan(SoftmaxPlan::pipe, bytes, true, bw)));
}

}  // namespace
}  // namespace dnnb::cuda_kernels
