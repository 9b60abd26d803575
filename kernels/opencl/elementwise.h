// Host side of the elementwise OpenCL kernels (unary_body.cl, binary_body.cl): one runner per
// shape of op; each op's .cpp registers itself with its own .cl source.
#pragma once
#include <string>

#include "kernels/opencl/opencl_launch.h"

namespace dnnb::opencl {

// y = f(x): x any layout, y of x's shape. `source` is program_source({op.cl, unary_body.cl}).
Status run_unary(OpCall& call, const std::string& program_name, const std::string& source);
// y = f(a, b): a and b broadcast to y's shape. `source` is program_source({op.cl, binary_body.cl}).
Status run_binary(OpCall& call, const std::string& program_name, const std::string& source);

bool register_unary(const std::string& op, const char* op_source);
bool register_binary(const std::string& op, const char* op_source);

}  // namespace dnnb::opencl
