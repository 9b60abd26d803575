// slice: the contiguous copy of x's narrowed view (Tensor::slice moves the offset).
#include "reference/access.h"
#include "reference/layout.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::reference {

Status slice(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 1, outputs, 1, "slice"));
  auto d = ops::slice_desc(problem);
  if (!d) return d.status();
  auto view = inputs[0].slice(d->dim, d->start, d->length);
  if (!view) return view.status();
  auto values = dense_f64(*view, "x");
  if (!values) return values.status();
  auto y = f64_output(outputs[0], d->y, "y");
  if (!y) return y.status();
  std::copy(values->begin(), values->end(), *y);
  return Status::ok();
}

}  // namespace dnnb::reference
