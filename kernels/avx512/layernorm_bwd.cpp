// layernorm_bwd on AVX-512: the shared backward-norm kernel of norm_bwd.h (centered: x - mean, and db).
#include "kernels/avx512/norm_bwd.h"

namespace dnnb::avx512 {
namespace {

DNNB_REGISTER(register_kernel("layernorm_bwd", {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
  return with_format(call.problem.dtype, [&](auto fmt) { return run_norm_bwd<decltype(fmt)>(call, true); });
}));

}  // namespace
}  // namespace dnnb::avx512
