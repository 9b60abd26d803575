// rmsnorm_bwd on AVX-512: the shared backward-norm kernel of norm_bwd.h (uncentered; form=gemma adds 1 to w).
#include "kernels/avx512/norm_bwd.h"

namespace dnnb::avx512 {
namespace {

DNNB_REGISTER(register_kernel("rmsnorm_bwd", {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
  return with_format(call.problem.dtype, [&](auto fmt) { return run_norm_bwd<decltype(fmt)>(call, false); });
}));

}  // namespace
}  // namespace dnnb::avx512
