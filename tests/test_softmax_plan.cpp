// The launch shape softmax_pipe_kernel takes per dtype, op and device (kernels/cuda/softmax_plan.h):
// host-only, so it is tested here without a GPU. The kernels in each shape are checked on the GPU
// machine through softmax and cross_entropy_bwd on the device of each kind.
#include <gtest/gtest.h>

#include "kernels/cuda/softmax_plan.h"

namespace dnnb::cuda_kernels {
namespace {

constexpr double kH100 = 2 * 2.619e9 * 5120 / 8;  // 3.35 TB/s: memory clock x bus width, DDR
constexpr double kH200 = 4.81e12;                  // docs/devices-h200.md

TEST(SoftmaxPlan, SixteenBitRowsTakeTheShapeTunedForTheirDramSpeed) {
  EXPECT_EQ(softmax_pipe_shape(2, false, kH200), SoftmaxPipeShape::cols16_blocks2);
  EXPECT_EQ(softmax_pipe_shape(2, true, kH200), SoftmaxPipeShape::cols32_blocks4);
  EXPECT_EQ(softmax_pipe_shape(2, false, kH100), SoftmaxPipeShape::cols32_blocks4);
  EXPECT_EQ(softmax_pipe_shape(2, true, kH100), SoftmaxPipeShape::cols32_blocks3);
}

TEST(SoftmaxPlan, TheThresholdIsFourTerabytesPerSecond) {
  EXPECT_EQ(softmax_pipe_shape(2, false, kRowPipeFastDramBytesPerS), SoftmaxPipeShape::cols16_blocks2);
  EXPECT_EQ(softmax_pipe_shape(2, false, kRowPipeFastDramBytesPerS * 0.999), SoftmaxPipeShape::cols32_blocks4);
}

TEST(SoftmaxPlan, UnknownBandwidthTakesTheH200Shapes) {
  EXPECT_EQ(softmax_pipe_shape(2, false, 0), SoftmaxPipeShape::cols16_blocks2);
  EXPECT_EQ(softmax_pipe_shape(2, true, 0), SoftmaxPipeShape::cols32_blocks4);
}

TEST(SoftmaxPlan, F32DoesNotDependOnTheDevice) {
  for (double bw : {0.0, kH100, kH200}) {
    EXPECT_EQ(softmax_pipe_shape(4, false, bw), SoftmaxPipeShape::cols16_blocks2_stages4);
    EXPECT_EQ(softmax_pipe_shape(4, true, bw), SoftmaxPipeShape::cols32_blocks3);
  }
}

}  // namespace
}  // namespace dnnb::cuda_kernels
