// CUDA dequantize_linear: y = f32(x - zp) * scale, per tensor or per channel, i8/u8 to f32
// (docs/ops-family4.md, "quantize_linear and dequantize_linear"). The kernels and their launch
// are kernels/cuda/qlinear.cuh.
#include "kernels/cuda/qlinear.cuh"

namespace dnnb::cuda_kernels {
namespace {

DNNB_REGISTER(register_cuda("dequantize_linear", "", "", {DType::i8, DType::u8}, qlinear_detail::run<false>,
                            [](const Problem& problem) {
                              auto d = ops::qlinear_desc(problem, false);
                              return d ? Status::ok() : d.status();
                            }));

}  // namespace
}  // namespace dnnb::cuda_kernels
