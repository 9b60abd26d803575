// The block-format ops quantize_blocks and dequantize_blocks (docs/ops-family4.md): what they
// share between the specs, the references, every backend's kernels and
// tests/test_quantize_blocks.cpp. The block formats themselves (q8_0, q4_0, mxfp8, mxfp8_e5m2,
// mxfp4: layout, decode and quantise rules) are core/dtype.h's.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::ops {

// The five block formats, in enum order of their ggml / OCP names.
const std::vector<DType>& block_formats();

// quantize_blocks' target: y.dt= when given (one of block_formats()), else q8_0; bad_input
// naming y.dt otherwise.
Result<DType> quantize_target(const Problem& problem);
// dequantize_blocks' target: y.dt= when given (f32, f16 or bf16), else f32.
Result<DType> dequantize_target(const Problem& problem);

// The shape rule of both ops: at least one dim, none empty, the last a multiple of 32 (rows are
// whole blocks); bad_input naming the op and the shape otherwise.
Status check_block_shape(const Problem& problem);

// Random x of quantize_blocks (float source, any of f32/f16/bf16): most 32-value blocks are
// normal(0, 1) times 2^k (k sweeping -24..24 block by block, -14..10 for f16), and the first
// 16 blocks of every 512 are edge blocks: all zeros, one huge value among small ones, amax exactly a power of
// two and just below one, values whose scaled magnitude rounds up across the element format's
// largest value, results in the element format's subnormals, f32 subnormals, ties of q8_0's
// and q4_0's rounding, a lone negative maximum, and blocks holding NaN, +Inf or -Inf
// (docs/ops-family4.md, "Random inputs").
Status fill_quantize_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);

// Random x of dequantize_blocks (a block format): every 4th block quantised from normal
// values (core's quantize_row), the rest random bytes, so that over a few thousand blocks
// every scale encoding (f16 d: subnormals, Inf, NaN; E8M0: 2^-127 .. 2^127 and NaN) and every
// element code appears.
Status fill_dequantize_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);

}  // namespace dnnb::ops
