// AVX-512 rope_bwd: dx = dy rotated by the negative angle, the transpose of rope's rotation; the
// kernel is rope_rows.h's with the sines negated.
#include "kernels/avx512/rope_rows.h"

namespace dnnb::avx512 {
namespace {

DNNB_REGISTER(register_kernel("rope_bwd", {DType::f32, DType::f16, DType::bf16}, rope_supports,
                              [](OpCall& call) { return run_rope(call, -1.0f); }));

}  // namespace
}  // namespace dnnb::avx512
