// repeat_kv: x [B, H, S, D] seen as [B, H, R, S, D] with stride 0 on the new R dim (each head
// repeated R times in place, as repeat_interleave on dim 1), copied out contiguous.
#include "reference/access.h"
#include "reference/layout.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::reference {

Status repeat_kv(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 1, outputs, 1, "repeat_kv"));
  auto d = ops::repeat_kv_desc(problem);
  if (!d) return d.status();
  const Tensor& x = inputs[0];
  if (x.ndim() != 4) return Status::bad_input("reference repeat_kv: x must have 4 dims, got " + x.describe());
  Tensor view = x;
  view.shape = {x.shape[0], x.shape[1], d->n_rep, x.shape[2], x.shape[3]};
  view.strides = {x.strides[0], x.strides[1], 0, x.strides[2], x.strides[3]};
  auto values = dense_f64(view, "x");
  if (!values) return values.status();
  auto y = f64_output(outputs[0], d->y, "y");
  if (!y) return y.status();
  std::copy(values->begin(), values->end(), *y);
  return Status::ok();
}

}  // namespace dnnb::reference
