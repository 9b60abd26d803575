// rope and rope_bwd in float64: for each (b, s) the angles f32(f32(pos) * inv_freq[i]) of
// ops::rope_angle, their cos and sin in float64, and every head's row rotated pair by pair:
//   half:        (x[i], x[i + rot/2]) -> (x[i] c - x[i + rot/2] s, x[i + rot/2] c + x[i] s)
//   interleaved: (x[2i], x[2i + 1])   -> (x[2i] c - x[2i + 1] s,   x[2i] s + x[2i + 1] c)
// with s negated for the backward; columns rot..D copied.
#include "reference/rope.h"

#include <cmath>
#include <string>

#include "reference/access.h"
#include "suites/ops/rope_desc.h"

namespace dnnb::reference {
namespace {

Status rotate(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
              double direction, const char* x_name, const char* y_name) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, problem.op));
  auto d = ops::rope_desc(problem);
  if (!d) return d.status();
  const Tensor& x = inputs[0];
  const Tensor& pos = inputs[1];
  if (x.shape != d->x_shape() || pos.shape != d->pos_shape())
    return Status::bad_input(problem.op + ": " + x_name + " " + x.describe() + " and pos " + pos.describe() +
                             " do not match " + problem.to_string());
  if (pos.dtype != DType::i64 && pos.dtype != DType::i32)
    return Status::bad_input(problem.op + ": pos must be i64 or i32, got " + pos.describe());
  auto xs = Rows::of(x, x_name);
  if (!xs) return xs.status();
  auto ps = Rows::of(pos, "pos");
  if (!ps) return ps.status();
  auto y = f64_output(outputs[0], d->x_shape(), y_name);
  if (!y) return y.status();

  const std::vector<float> inv_freq = ops::rope_inv_freq(*d);
  const int64_t B = d->batch, H = d->heads, S = d->seq, D = d->dim, h = d->pairs();
  std::vector<double> c(static_cast<size_t>(h)), s(static_cast<size_t>(h));
  for (int64_t b = 0; b < B; ++b) {
    const RowView pos_row = ps->row(b);
    for (int64_t t = 0; t < S; ++t) {
      const auto p = static_cast<int64_t>(pos_row[t]);
      for (int64_t i = 0; i < h; ++i) {
        const double angle = ops::rope_angle(p, inv_freq[static_cast<size_t>(i)]);
        c[static_cast<size_t>(i)] = std::cos(angle);
        s[static_cast<size_t>(i)] = direction * std::sin(angle);
      }
      for (int64_t hd = 0; hd < H; ++hd) {
        const int64_t r = (b * H + hd) * S + t;
        const RowView in = xs->row(r);
        double* out = *y + r * D;
        for (int64_t i = 0; i < h; ++i) {
          // The two elements of pair i, and where they go.
          const int64_t j0 = d->form == ops::RopeForm::half ? i : 2 * i;
          const int64_t j1 = d->form == ops::RopeForm::half ? i + h : 2 * i + 1;
          const double x0 = in[j0], x1 = in[j1];
          const double ci = c[static_cast<size_t>(i)], si = s[static_cast<size_t>(i)];
          out[j0] = x0 * ci - x1 * si;
          out[j1] = x1 * ci + x0 * si;
        }
        for (int64_t j = d->rot; j < D; ++j) out[j] = in[j];
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status rope(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  return rotate(problem, inputs, outputs, 1.0, "x", "y");
}

Status rope_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  return rotate(problem, inputs, outputs, -1.0, "dy", "dx");
}

}  // namespace dnnb::reference
