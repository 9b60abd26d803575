// Host side of the row reductions (reduce_body.cl): sum, mean, max, norm2 over the last dim.
#pragma once
#include <string>

#include "kernels/opencl/opencl_launch.h"

namespace dnnb::opencl {

// x [..., N] any layout -> y [...] (0-d for a 1-D x). `op_source` defines the reduction.
// keys16_source (max only: max16.cl): f16/bf16 take max16_keys.
bool register_reduce(const std::string& op, const char* op_source, const char* keys16_source = nullptr);

}  // namespace dnnb::opencl
