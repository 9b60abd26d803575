// Host side of the elementwise OpenCL kernels (unary_body.cl, binary_body.cl): one runner per
// shape of op; each op's .cpp registers itself with its own .cl source.
#pragma once
#include <string>

#include "kernels/opencl/opencl_launch.h"

namespace dnnb::opencl {

// y = f(x): x any layout, y of x's shape. `source` is program_source({op.cl, row_body.cl,
// unary_body.cl}). chunks: contiguous x and y take unary_chunks (else unary_flat). half_math
// 1 or 2: built with -DDNNB_HALF_MATH=half_math, a 16-bit math tier of the op's .cl (f16/bf16
// only; prelude.cl says what each level trades).
Status run_unary(OpCall& call, const std::string& program_name, const std::string& source, bool chunks,
                 int half_math = 0);
// y = f(a, b): a and b broadcast to y's shape. `source` is program_source({op.cl, row_body.cl,
// binary_body.cl}). Same-shape contiguous operands take binary_flat, 2-D broadcasts binary_tile,
// any other view binary_rows.
Status run_binary(OpCall& call, const std::string& program_name, const std::string& source);

// Registers the default of a unary op: unary_chunks for contiguous views, unary_rows for the
// rest. f32_flat: f32 contiguous views take unary_flat instead (both make 16-byte accesses for
// f32; tanh runs faster in the flat kernel on NVIDIA's OpenCL). half_tier: the op's .cl has
// DNNB_HALF_MATH tiers; f16/bf16 take level 2, and the alternative "portable_math" level 1.
bool register_unary(const std::string& op, const char* op_source, bool f32_flat = false, bool half_tier = false);
// Registers the default of a binary op (run_binary).
bool register_binary(const std::string& op, const char* op_source);

}  // namespace dnnb::opencl
