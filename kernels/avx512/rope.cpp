// AVX-512 rope: each pair of x rotated by its position's angle (docs/ops-family3.md, "Position");
// the kernel is rope_rows.h's (cos/sin table per block of positions, shared by every head).
#include "kernels/avx512/rope_rows.h"

namespace dnnb::avx512 {
namespace {

DNNB_REGISTER(register_kernel("rope", {DType::f32, DType::f16, DType::bf16}, rope_supports,
                              [](OpCall& call) { return run_rope(call, 1.0f); }));

}  // namespace
}  // namespace dnnb::avx512
