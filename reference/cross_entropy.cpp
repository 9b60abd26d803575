// Cross-entropy over logits [N, C] with integer targets [N], mean reduction, as
// F.cross_entropy(logits, target, ignore_index=I):
//   forward:  loss = mean over kept rows of (logsumexp(row) - row[target]); kept rows are
//             those with target != ignore_index; no kept row gives NaN (0/0, as torch).
//   backward: dlogits = (softmax(row) - onehot(target)) / kept for kept rows, 0 for
//             ignored rows (so all zeros when no row is kept, as torch's gradient is).
#include <cmath>
#include <limits>

#include "reference/access.h"
#include "reference/reference.h"

namespace dnnb::reference {

namespace {

struct CrossEntropyInputs {
  Rows logits;
  Rows target;  // one row of N targets
  int64_t ignore_index = -100;
  int64_t kept_rows = 0;
};

// Reads and checks the inputs: logits 2-D, one target per row, each target in [0, C) or
// equal to ignore_index (torch raises on anything else; so does the reference).
Result<CrossEntropyInputs> read_inputs(const Problem& problem, const Inputs& inputs, const char* op) {
  auto ignore_index = problem.get_int("ignore_index", -100);
  if (!ignore_index) return ignore_index.status();
  if (inputs[0].ndim() != 2 || inputs[1].shape != Shape{inputs[0].shape[0]})
    return Status::bad_input(std::string("reference ") + op + ": expected logits [N, C] and target [N], got " +
                             inputs[0].describe() + " and " + inputs[1].describe());
  auto logits = Rows::of(inputs[0], "logits");
  if (!logits) return logits.status();
  auto target = Rows::of(inputs[1], "target");
  if (!target) return target.status();
  CrossEntropyInputs in{*logits, *target, *ignore_index, 0};
  const RowView targets = in.target.row(0);
  for (int64_t r = 0; r < in.logits.rows(); ++r) {
    const auto t = static_cast<int64_t>(targets[r]);
    if (t == in.ignore_index) continue;
    if (t < 0 || t >= in.logits.cols())
      return Status::bad_input(std::string("reference ") + op + ": target[" + std::to_string(r) + "] = " +
                               std::to_string(t) + " is outside [0, " + std::to_string(in.logits.cols()) +
                               ") and is not ignore_index");
    ++in.kept_rows;
  }
  return in;
}

double row_max(const RowView& row) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < row.cols; ++c) m = std::fmax(m, row[c]);
  return m;
}

// log(sum exp(row)), shifted by the row max so that nothing overflows.
double logsumexp(const RowView& row) {
  const double m = row_max(row);
  double s = 0;
  for (int64_t c = 0; c < row.cols; ++c) s += std::exp(row[c] - m);
  return m + std::log(s);
}

}  // namespace

Status cross_entropy(const Problem& problem, const Inputs& inputs, Outputs& outputs) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, "cross_entropy"));
  auto in = read_inputs(problem, inputs, "cross_entropy");
  if (!in) return in.status();
  auto loss = f64_output(outputs[0], Shape{}, "loss");
  if (!loss) return loss.status();
  const RowView targets = in->target.row(0);
  double total = 0;
  for (int64_t r = 0; r < in->logits.rows(); ++r) {
    const auto t = static_cast<int64_t>(targets[r]);
    if (t == in->ignore_index) continue;
    const RowView row = in->logits.row(r);
    total += logsumexp(row) - row[t];
  }
  // 0/0 = NaN when every row is ignored, as torch.
  **loss = in->kept_rows > 0 ? total / static_cast<double>(in->kept_rows)
                             : std::numeric_limits<double>::quiet_NaN();
  return Status::ok();
}

Status cross_entropy_bwd(const Problem& problem, const Inputs& inputs, Outputs& outputs) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, "cross_entropy_bwd"));
  auto in = read_inputs(problem, inputs, "cross_entropy_bwd");
  if (!in) return in.status();
  auto dlogits = f64_output(outputs[0], inputs[0].shape, "dlogits");
  if (!dlogits) return dlogits.status();
  const RowView targets = in->target.row(0);
  const int64_t cols = in->logits.cols();
  for (int64_t r = 0; r < in->logits.rows(); ++r) {
    double* out = *dlogits + r * cols;
    const auto t = static_cast<int64_t>(targets[r]);
    if (t == in->ignore_index) {
      for (int64_t c = 0; c < cols; ++c) out[c] = 0.0;
      continue;
    }
    const RowView row = in->logits.row(r);
    const double lse = logsumexp(row);
    for (int64_t c = 0; c < cols; ++c) {
      const double softmax_c = std::exp(row[c] - lse);
      out[c] = (softmax_c - (c == t ? 1.0 : 0.0)) / static_cast<double>(in->kept_rows);
    }
  }
  return Status::ok();
}

}  // namespace dnnb::reference
