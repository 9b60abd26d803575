// The references of quantize_blocks and dequantize_blocks (docs/ops-family4.md): core/dtype.cpp's
// quantize_row and load_element, which tests/test_block_formats.cpp and the fixtures hold to
// gguf.quants (q8_0, q4_0) and to the OCP MX v1.0 rule with torch's element conversions (MX).
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// x (f32, f16 or bf16, any layout) -> y in the block format y.dt=: each row's 32-value blocks
// quantised by quantize_row, written as the values they decode to (float64, exact).
Status quantize_blocks(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

// The reference backend's run of quantize_blocks: the blocks themselves, each row of x (host,
// any layout) quantised by quantize_row into the row of y (host, contiguous, the block format).
// (OpSpec::reference writes float64 values, which a block format cannot store one by one.)
Status quantize_blocks_into(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

// x in a block format -> y (f32, f16 or bf16): each value decoded exactly, rounded once to y's
// dtype, written as float64.
Status dequantize_blocks(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
