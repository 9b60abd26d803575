#include "reference/fill.h"

#include <cmath>
#include <limits>
#include <string>

namespace dnnb {

namespace {

// Calls value(r, c) for every element of host tensor `t` in row-major order and stores the
// result (rounded through t's dtype) at that element, whatever t's strides are.
template <typename ValueOf>
Status fill_each(Tensor& t, const std::string& name, ValueOf value) {
  if (!t.buffer || t.device() == nullptr || !t.device()->host_accessible())
    return Status::bad_input("fill: input '" + name + "' (" + t.describe() + ") is not in host memory");
  auto index = row_index(t);
  if (!index) return index.status();
  for (int64_t r = 0; r < index->rows; ++r) {
    const int64_t row_start = index->offset + index->row_offset(r);
    for (int64_t c = 0; c < index->cols; ++c)
      store_element(t.buffer->handle, t.dtype, row_start + c * index->col_stride, value(r, c));
  }
  return Status::ok();
}

Status fill_normal(Tensor& t, const std::string& name, Rng& rng) {
  if (!is_floating(t.dtype))
    return Status::bad_input("fill: input '" + name + "' has integer dtype " + dtype_name(t.dtype) +
                             "; its op needs its own fill rule");
  return fill_each(t, name, [&](int64_t, int64_t) { return rng.normal(); });
}

Status expect_inputs(const std::vector<Tensor>& inputs, size_t lo, size_t hi, const std::string& op) {
  if (inputs.size() < lo || inputs.size() > hi)
    return Status::bad_input("fill " + op + ": got " + std::to_string(inputs.size()) + " inputs");
  return Status::ok();
}

}  // namespace

Status fill_normal_inputs(const Problem&, std::vector<Tensor>& inputs, Rng& rng) {
  for (size_t i = 0; i < inputs.size(); ++i) DNNB_TRY(fill_normal(inputs[i], "input " + std::to_string(i), rng));
  return Status::ok();
}

Status fill_div_inputs(const Problem&, std::vector<Tensor>& inputs, Rng& rng) {
  DNNB_TRY(expect_inputs(inputs, 2, 2, "div"));
  DNNB_TRY(fill_normal(inputs[0], "a", rng));
  return fill_each(inputs[1], "b", [&](int64_t, int64_t) {
    const double v = rng.normal();
    return std::copysign(0.5 + std::fabs(v), v);
  });
}

Status fill_softmax_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng) {
  DNNB_TRY(expect_inputs(inputs, 1, 2, "softmax"));
  DNNB_TRY(fill_normal(inputs[0], "x", rng));
  if (inputs.size() == 1) return Status::ok();
  auto masked_rows = problem.get_int("masked_rows", 0);
  if (!masked_rows) return masked_rows.status();
  const double minus_inf = -std::numeric_limits<double>::infinity();
  return fill_each(inputs[1], "mask", [&](int64_t r, int64_t) {
    const bool masked = rng.uniform() < 0.25;  // drawn for every element: a fixed stream
    return (masked || (r == 0 && *masked_rows == 1)) ? minus_inf : 0.0;
  });
}

Status fill_cross_entropy_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng) {
  DNNB_TRY(expect_inputs(inputs, 2, 2, "cross_entropy"));
  DNNB_TRY(fill_normal(inputs[0], "logits", rng));
  if (inputs[0].ndim() != 2) return Status::bad_input("fill cross_entropy: logits must be [N, C]");
  const int64_t classes = inputs[0].shape[1];
  auto ignore_index = problem.get_int("ignore_index", -100);
  if (!ignore_index) return ignore_index.status();
  const bool ignore_some = problem.has("ignore_index");
  return fill_each(inputs[1], "target", [&](int64_t, int64_t) {
    const bool ignored = rng.uniform() < 0.125;  // drawn for every row: a fixed stream
    const int64_t target = rng.integer(0, classes);
    return static_cast<double>(ignore_some && ignored ? *ignore_index : target);
  });
}

}  // namespace dnnb
