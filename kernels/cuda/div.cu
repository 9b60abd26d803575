// CUDA div: y = a / b with numpy broadcasting of a and b to y's shape. IEEE division (nvcc's
// default -prec-div=true): correctly rounded in f32.
// Kernels: kernels/cuda/elementwise.cuh (flat 16-byte path when nothing broadcasts, else rows;
// the variants below).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct DivOp {
  __device__ float operator()(float a, float b) const { return a / b; }
};

DNNB_REGISTER(register_binary("div", DivOp{}));
// "": row (1 x C) and column (R x 1) broadcasts of contiguous tensors with C % 8 (16-bit) or
// C % 4 (f32) == 0 through elementwise_tile_kernel, 4 rows of one 16-byte column vector per
// thread (the variant "tile" in session 7; "flat2d", one vector per thread, before), other
// non-flat layouts as "wide" (elementwise.cuh, ElementwisePlan::binary); "wide": such layouts
// through the wide rows kernel for f32 and the rows kernel for f16/bf16 (the default before);
// "rows": the rows kernel for every dtype (the default before that).
DNNB_REGISTER(register_binary("div", DivOp{}, "wide", ElementwisePlan::wide));
DNNB_REGISTER(register_binary("div", DivOp{}, "rows", ElementwisePlan::rows));

// The 16-bit broadcast gap (H200, 2026-11-21, 16384 x 8192; div f16 b = 16384 x 1 at 83% of copy
// where mul ran at 95%, with the flat2d kernel) was the kernel's layout, not the division. Tried
// in session 6 without effect: "rcp" below (83.2%); IEEE division's fast-path sequence without
// the range check and slow-path call (exact for f16 operands; 83.9%); one Newton step after
// "rcp" (80.7%); 4 vectors per thread instead of 2 (70.4%). Closed in session 7 by the tile
// kernel (elementwise.cuh, from NVIDIA's OpenCL binary_tile): 130.7-131.3 us, as mul.
// Variant "rcp", f16/bf16 only (f32 keeps IEEE division: its tolerance is 32 f32 eps and its
// result is the output): a * rcp.approx.ftz(b) where b is normal and 1/b is too
// (2^-126 <= |b| <= 2^126), IEEE a / b elsewhere (0, subnormal, huge, inf, NaN b: rare,
// and exact there). Why: the IEEE f32 division is a ~10-instruction sequence with a range
// check and a slow-path call per element; at 16 divisions per thread it is what holds the
// 16-bit broadcast div at 78-81% of copy where add/sub/mul reach 93-102% (2026-11-21).
// Error: rcp.approx.f32 is within 1 ulp (PTX ISA), the product rounds once more (0.5 ulp), so
// the f32 quotient is within 1.5 x 2^-23 < 2^-22 relative of the exact one (subnormal f32
// products: an absolute error under 2^-149, far below bf16's 2^-133 spacing there), while half
// a 16-bit ulp is at least 2^-12 relative (f16; bf16 2^-9). Rounding to f16/bf16 then gives the
// correctly rounded quotient except when it lies within 2^-22 relative of a rounding midpoint,
// where it may give the neighbour: 1 ulp, the class's tolerance, the same exposure IEEE f32
// division followed by rounding has (there within 2^-24).
struct DivRcp16Op {
  __device__ float operator()(float a, float b) const {
    const float mag = fabsf(b);
    if (mag >= 0x1p-126f && mag <= 0x1p126f) {  // false for NaN: IEEE path
      float r;
      asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
      return a * r;
    }
    return a / b;
  }
};

bool register_div_rcp16() {
  return register_cuda("div", "rcp", {DType::f16, DType::bf16}, [](OpCall& call) {
    return run_elementwise<2>(call, {"a", "b"}, DivRcp16Op{}, ElementwisePlan::binary);
  });
}

DNNB_REGISTER(register_div_rcp16());

}  // namespace
}  // namespace dnnb::cuda_kernels
