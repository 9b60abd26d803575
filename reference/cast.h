// The reference of the cast op (docs/ops-family4.md, "cast"): each element of x (any dtype of
// the five, any layout) converted by core/dtype.cpp's conversions, which are bit-exact with
// torch's tensor.to(dtype).
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// cast: x -> y, y[i] the value x[i] takes in the target dtype (y.dt=, suites/ops/cast_desc.h),
// written as float64 (exact: every value of the five formats is a double).
Status cast(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
