#include "reference/access.h"

namespace dnnb::reference {

Result<Rows> Rows::of(const Tensor& t, const std::string& name) {
  if (!t.buffer || t.device() == nullptr || !t.device()->host_accessible())
    return Status::bad_input("reference: tensor '" + name + "' (" + t.describe() +
                             ") is not in host memory");
  auto index = row_index(t);
  if (!index) return Status(index.status().code, "reference: tensor '" + name + "': " + index.status().message);
  Rows rows;
  rows.base_ = t.buffer->handle;
  rows.dtype_ = t.dtype;
  rows.index_ = *index;
  return rows;
}

Result<Rows> broadcast_rows(const Tensor& t, const Shape& target, const std::string& name) {
  auto view = t.broadcast_to(target);
  if (!view) return Status::bad_input("reference: tensor '" + name + "': " + view.status().message);
  return Rows::of(*view, name);
}

Result<double*> f64_output(Tensor& t, const Shape& shape, const std::string& name) {
  if (t.dtype != DType::f64 || !t.is_contiguous() || t.shape != shape)
    return Status::bad_input("reference: output '" + name + "' must be a contiguous f64 tensor of shape " +
                             shape_to_string(shape) + ", got " + t.describe());
  auto* data = static_cast<double*>(t.host_data());
  if (data == nullptr) return Status::bad_input("reference: output '" + name + "' is not in host memory");
  return data;
}

Result<std::vector<double>> dense_f64(const Tensor& t, const std::string& name) {
  auto rows = Rows::of(t, name);
  if (!rows) return rows.status();
  std::vector<double> out(static_cast<size_t>(rows->rows() * rows->cols()));
  for (int64_t r = 0; r < rows->rows(); ++r) {
    const RowView row = rows->row(r);
    for (int64_t c = 0; c < rows->cols(); ++c) out[r * rows->cols() + c] = row[c];
  }
  return out;
}

Status expect_arity(const std::vector<Tensor>& inputs, size_t n_inputs,
                    const std::vector<Tensor>& outputs, size_t n_outputs, const std::string& op) {
  if (inputs.size() != n_inputs || outputs.size() != n_outputs)
    return Status::bad_input("reference " + op + ": expected " + std::to_string(n_inputs) + " inputs and " +
                             std::to_string(n_outputs) + " outputs, got " + std::to_string(inputs.size()) +
                             " and " + std::to_string(outputs.size()));
  return Status::ok();
}

Shape without_last_dim(const Shape& shape) {
  if (shape.empty()) return shape;
  return Shape(shape.begin(), shape.end() - 1);
}

}  // namespace dnnb::reference
