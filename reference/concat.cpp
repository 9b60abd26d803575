// concat: for each index of the dims before `dim`, a's block of that index, then b's.
#include "reference/access.h"
#include "reference/layout.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::reference {

Status concat(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, "concat"));
  auto d = ops::concat_desc(problem);
  if (!d) return d.status();
  auto a = dense_f64(inputs[0], "a");
  if (!a) return a.status();
  auto b = dense_f64(inputs[1], "b");
  if (!b) return b.status();
  auto y = f64_output(outputs[0], d->y, "y");
  if (!y) return y.status();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < d->dim; ++i) outer *= d->a[i];
  for (size_t i = d->dim + 1; i < d->a.size(); ++i) inner *= d->a[i];
  const int64_t a_block = d->a[d->dim] * inner, b_block = d->b[d->dim] * inner;
  double* out = *y;
  for (int64_t o = 0; o < outer; ++o) {
    out = std::copy(a->begin() + o * a_block, a->begin() + (o + 1) * a_block, out);
    out = std::copy(b->begin() + o * b_block, b->begin() + (o + 1) * b_block, out);
  }
  return Status::ok();
}

}  // namespace dnnb::reference
