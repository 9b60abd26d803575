// layernorm_bwd and rmsnorm_bwd in float64: one formula with the centring (layernorm's mean)
// and the weight offset (Gemma's 1 + w) as its two switches. Written for clarity, per row:
// xhat and g, the two row means, then dx and the column sums.
#include "reference/norm_bwd.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "core/compare.h"
#include "core/host_device.h"
#include "reference/access.h"

namespace dnnb::reference {
namespace {

struct NormBwdOperands {
  Rows x, w, dy, rstd;
  std::optional<Rows> mean;  // layernorm only
};

Result<NormBwdOperands> operands(const std::vector<Tensor>& inputs, bool centered, const char* op) {
  const size_t expected = centered ? 5 : 4;
  if (inputs.size() != expected)
    return Status::bad_input(std::string("reference ") + op + ": expected " + std::to_string(expected) + " inputs, got " +
                             std::to_string(inputs.size()));
  auto x = Rows::of(inputs[0], "x");
  if (!x) return x.status();
  auto w = Rows::of(inputs[1], "w");
  if (!w) return w.status();
  auto dy = Rows::of(inputs[2], "dy");
  if (!dy) return dy.status();
  auto rstd = Rows::of(inputs[centered ? 4 : 3], "rstd");
  if (!rstd) return rstd.status();
  if (inputs[1].shape != Shape{x->cols()})
    return Status::bad_input(std::string("reference ") + op + ": w must have shape [" + std::to_string(x->cols()) + "]");
  if (inputs[2].shape != inputs[0].shape)
    return Status::bad_input(std::string("reference ") + op + ": dy must have x's shape");
  if (rstd->rows() != x->rows() || rstd->cols() != 1)
    return Status::bad_input(std::string("reference ") + op + ": rstd must hold one value per row of x");
  NormBwdOperands o{*x, *w, *dy, *rstd, std::nullopt};
  if (centered) {
    auto mean = Rows::of(inputs[3], "mean");
    if (!mean) return mean.status();
    if (mean->rows() != x->rows() || mean->cols() != 1)
      return Status::bad_input(std::string("reference ") + op + ": mean must hold one value per row of x");
    o.mean = *mean;
  }
  return o;
}

Status norm_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
                bool centered, const char* op) {
  auto o = operands(inputs, centered, op);
  if (!o) return o.status();
  const size_t n_outputs = centered ? 3 : 2;
  if (outputs.size() != n_outputs)
    return Status::bad_input(std::string("reference ") + op + ": expected " + std::to_string(n_outputs) + " outputs");
  const std::string form = problem.get("form", "torch");
  if (form != "torch" && form != "gemma")
    return Status::bad_input(std::string("reference ") + op + ": parameter form='" + form + "' is not torch or gemma");
  const double weight_offset = form == "gemma" ? 1.0 : 0.0;
  const int64_t rows = o->x.rows(), cols = o->x.cols();
  auto dx = f64_output(outputs[0], inputs[0].shape, "dx");
  if (!dx) return dx.status();
  auto dw = f64_output(outputs[1], Shape{cols}, "dw");
  if (!dw) return dw.status();
  double* db = nullptr;
  if (centered) {
    auto b = f64_output(outputs[2], Shape{cols}, "db");
    if (!b) return b.status();
    db = *b;
  }
  for (int64_t c = 0; c < cols; ++c) {
    (*dw)[c] = 0;
    if (db) db[c] = 0;
  }
  const RowView w = o->w.row(0);
  std::vector<double> xhat(static_cast<size_t>(cols)), g(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const RowView x = o->x.row(r), dy = o->dy.row(r);
    const double rstd = o->rstd.row(r)[0];
    const double mean = o->mean ? o->mean->row(r)[0] : 0.0;
    double sum_g = 0, sum_gx = 0;
    for (int64_t c = 0; c < cols; ++c) {
      xhat[c] = (x[c] - mean) * rstd;
      g[c] = dy[c] * (w[c] + weight_offset);
      sum_g += g[c];
      sum_gx += g[c] * xhat[c];
    }
    const double mean_g = centered ? sum_g / static_cast<double>(cols) : 0.0;
    const double mean_gx = sum_gx / static_cast<double>(cols);
    double* out = *dx + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      out[c] = rstd * (g[c] - mean_g - xhat[c] * mean_gx);
      (*dw)[c] += dy[c] * xhat[c];
      if (db) db[c] += dy[c];
    }
  }
  return Status::ok();
}

}  // namespace

Status layernorm_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  return norm_bwd(problem, inputs, outputs, true, "layernorm_bwd");
}

Status rmsnorm_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  return norm_bwd(problem, inputs, outputs, false, "rmsnorm_bwd");
}

Status fill_norm_bwd_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng) {
  const bool centered = inputs.size() == 5;
  if (inputs.size() != 4 && inputs.size() != 5)
    return Status::bad_input("fill " + problem.op + ": got " + std::to_string(inputs.size()) + " inputs");
  auto eps = problem.get_double("eps", centered ? 1e-5 : 1e-6);
  if (!eps) return eps.status();
  for (size_t i = 0; i < 3; ++i) {
    auto index = row_index(inputs[i]);
    if (!index) return index.status();
    for (int64_t r = 0; r < index->rows; ++r)
      for (int64_t c = 0; c < index->cols; ++c)
        store_element(inputs[i].buffer->handle, inputs[i].dtype,
                      index->offset + index->row_offset(r) + c * index->col_stride, rng.normal());
  }
  auto x = Rows::of(inputs[0], "x");
  if (!x) return x.status();
  Tensor& rstd = inputs[centered ? 4 : 3];
  auto rstd_index = row_index(rstd);
  if (!rstd_index) return rstd_index.status();
  auto mean_index = centered ? row_index(inputs[3]) : rstd_index;
  if (!mean_index) return mean_index.status();
  if (rstd_index->rows != x->rows() || mean_index->rows != x->rows())
    return Status::bad_input("fill " + problem.op + ": the statistics must hold one value per row of x");
  const double n = static_cast<double>(x->cols());
  for (int64_t r = 0; r < x->rows(); ++r) {
    const RowView row = x->row(r);
    double mean = 0;
    if (centered) {
      for (int64_t c = 0; c < x->cols(); ++c) mean += row[c];
      mean /= n;
      store_element(inputs[3].buffer->handle, inputs[3].dtype, mean_index->offset + mean_index->row_offset(r), mean);
    }
    double square = 0;
    for (int64_t c = 0; c < x->cols(); ++c) square += (row[c] - mean) * (row[c] - mean);
    store_element(rstd.buffer->handle, rstd.dtype, rstd_index->offset + rstd_index->row_offset(r),
                  1.0 / std::sqrt(square / n + *eps));
  }
  return Status::ok();
}

Result<std::vector<OutputBound>> norm_bwd_bounds(const Problem& problem, const std::vector<Tensor>& inputs) {
  const bool centered = inputs.size() == 5;
  auto o = operands(inputs, centered, problem.op.c_str());
  if (!o) return o.status();
  const int64_t rows = o->x.rows(), cols = o->x.cols();
  // dx: the forward's class (normalization) against the rms of the expected dx.
  std::vector<Tensor> expected;
  const std::vector<Shape> shapes = centered ? std::vector<Shape>{inputs[0].shape, {cols}, {cols}}
                                             : std::vector<Shape>{inputs[0].shape, {cols}};
  for (const Shape& shape : shapes) {
    auto t = empty_tensor(scratch_host(), DType::f64, shape);
    if (!t) return t.status();
    expected.push_back(*t);
  }
  DNNB_TRY(norm_bwd(problem, inputs, expected, centered, problem.op.c_str()));
  const auto* dx = static_cast<const double*>(expected[0].host_data());
  double dx_square = 0;
  for (int64_t i = 0; i < rows * cols; ++i) dx_square += dx[i] * dx[i];
  const DType dtype = inputs[0].dtype;
  const Tolerance dx_tolerance =
      tolerance_for(ToleranceClass::normalization, dtype, std::sqrt(dx_square / static_cast<double>(rows * cols)));
  // dw, db: sums over the rows of |dy xhat| and |dy| per column, their rms over the columns.
  std::vector<double> dw_mag(static_cast<size_t>(cols), 0.0), db_mag(static_cast<size_t>(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const RowView x = o->x.row(r), dy = o->dy.row(r);
    const double rstd = o->rstd.row(r)[0];
    const double mean = o->mean ? o->mean->row(r)[0] : 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      dw_mag[c] += std::fabs(dy[c] * (x[c] - mean) * rstd);
      db_mag[c] += std::fabs(dy[c]);
    }
  }
  auto column_bound = [&](const std::vector<double>& magnitude) {
    double square = 0;
    for (double m : magnitude) square += m * m;
    // lambda = 8 as for the dot_product class; sqrt(rows) u for the f32 sum over the rows, 4 u
    // for each term's own roundings (x - mean, times rstd, times dy).
    constexpr double kLambda = 8, kF32UnitRoundoff = 0x1p-24;
    OutputBound b;
    b.rtol = dtype_epsilon(dtype);
    b.atol = kLambda * (std::sqrt(static_cast<double>(rows)) + 4) * kF32UnitRoundoff *
             std::sqrt(square / static_cast<double>(cols));
    b.atol = std::max(b.atol, tolerance_for(ToleranceClass::exact, dtype, 0).atol);
    return b;
  };
  std::vector<OutputBound> bounds(1);
  bounds[0].rtol = dx_tolerance.rtol;
  bounds[0].atol = dx_tolerance.atol;
  bounds.push_back(column_bound(dw_mag));
  if (centered) bounds.push_back(column_bound(db_mag));
  return bounds;
}

}  // namespace dnnb::reference
