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
// binary_body.cl}). two_d_path: 2-D broadcasts take binary_2d (else binary_rows); raw: binary_2d
// built with DNNB_ROW_RAW=1 (variant "raw"); tile_rows > 0: 2-D broadcasts take binary_tile with
// that many rows per work-item instead (variants "rows4", "rows8"); div_recip: binary_tile built
// with DNNB_DIV_RECIP=1 (div's "rows4r").
Status run_binary(OpCall& call, const std::string& program_name, const std::string& source, bool two_d_path,
                  bool raw = false, int tile_rows = 0, bool div_recip = false);

// Register the default and the "legacy" variant (unary_flat / binary_rows only).
// f32_default_flat: the f32 default is unary_flat (legacy) and variant "chunks" keeps
// unary_chunks for every dtype (tanh: see docs/opencl.md, H200 measurements of 2026-11-21).
// half_tier: the op's .cl has DNNB_HALF_MATH tiers; variants "half" (level 1) and "halfn"
// (level 2), f16 and bf16 only, are unary_chunks built with them (docs/opencl.md, "16-bit math
// tiers").
bool register_unary(const std::string& op, const char* op_source, bool f32_default_flat = false,
                    bool half_tier = false);
// Registers the default (binary_tile, 4 rows), "chunk", "legacy", "raw" and "rows8"; with
// div_recip also "rows4r".
bool register_binary(const std::string& op, const char* op_source, bool div_recip = false);

}  // namespace dnnb::opencl
