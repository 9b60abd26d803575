// permute: the contiguous copy of x's permuted view (Tensor::permute swaps strides).
#include "reference/access.h"
#include "reference/layout.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::reference {

Status permute(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 1, outputs, 1, "permute"));
  auto order = ops::permute_order(problem);
  if (!order) return order.status();
  auto view = inputs[0].permute(*order);
  if (!view) return view.status();
  auto values = dense_f64(*view, "x");
  if (!values) return values.status();
  auto y = f64_output(outputs[0], view->shape, "y");
  if (!y) return y.status();
  std::copy(values->begin(), values->end(), *y);
  return Status::ok();
}

}  // namespace dnnb::reference
