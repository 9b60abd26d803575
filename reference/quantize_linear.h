// The references of quantize_linear and dequantize_linear (docs/ops-family4.md, "quantize_linear
// and dequantize_linear"). Both ops are defined by f32 arithmetic (torch's fbgemm path: an f32
// reciprocal, an f32 multiply, round to nearest even; dequantize one f32 multiply), so the
// references compute exactly that, element by element in x's logical order with
// suites/ops/qlinear_desc.h's rules, and write the integer or f32 result as float64 (exact).
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// x (f32, any layout), scale [C] f32, zero_point [C] i32 -> y, the i8/u8 values as float64.
Status quantize_linear(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// x (i8/u8, any layout), scale, zero_point -> y, the f32 values as float64.
Status dequantize_linear(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
