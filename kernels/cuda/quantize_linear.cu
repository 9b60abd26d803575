// CUDA quantize_linear: y = clamp(nearbyint(x * (1 / scale)) + zp, qmin, qmax), per tensor or per
// channel, f32 to i8/u8 (docs/ops-family4.md, "quantize_linear and dequantize_linear"). The
// kernels and their launch are kernels/cuda/qlinear.cuh.
#include "kernels/cuda/qlinear.cuh"

namespace dnnb::cuda_kernels {
namespace {

DNNB_REGISTER(register_cuda("quantize_linear", "", "", {DType::f32}, qlinear_detail::run<true>,
                            [](const Problem& problem) {
                              auto d = ops::qlinear_desc(problem, true);
                              return d ? Status::ok() : d.status();
                            }));

}  // namespace
}  // namespace dnnb::cuda_kernels
