// How the references read and write tensors. Inputs may have any dtype and any layout
// (transposed, padded, broadcast with stride 0, an offset into a guarded buffer): they are
// read element by element through row_index() and load_element(). Outputs are the
// contiguous float64 host tensors that OpSpec::reference is handed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// One row of a tensor: element c is at `start + c * col_stride` from the buffer's start.
struct RowView {
  const void* base = nullptr;
  DType dtype = DType::f32;
  int64_t start = 0;
  int64_t col_stride = 1;
  int64_t cols = 1;

  double operator[](int64_t c) const { return load_element(base, dtype, start + c * col_stride); }
};

// A host tensor seen as rows x cols (the last dim is cols; a 0-d tensor is one 1-wide row).
class Rows {
 public:
  // Fails (bad_input naming `name`) for a tensor without host-readable memory.
  static Result<Rows> of(const Tensor& t, const std::string& name);
  int64_t rows() const { return index_.rows; }
  int64_t cols() const { return index_.cols; }
  RowView row(int64_t r) const {
    return {base_, dtype_, index_.offset + index_.row_offset(r), index_.col_stride, index_.cols};
  }

 private:
  const void* base_ = nullptr;
  DType dtype_ = DType::f32;
  RowIndex index_;
};

// `t` read as if it had shape `target` (numpy broadcast: repeated dims get stride 0).
Result<Rows> broadcast_rows(const Tensor& t, const Shape& target, const std::string& name);

// The float64 data of reference output `t`, checked to be contiguous, f64, host-readable
// and of shape `shape` (the shape the math produces).
Result<double*> f64_output(Tensor& t, const Shape& shape, const std::string& name);

// Every element of a host tensor of any dtype and layout, as float64 in row-major order of its
// logical shape (what a dense reference loop wants). bad_input naming `name` when unreadable.
Result<std::vector<double>> dense_f64(const Tensor& t, const std::string& name);

// The op received the number of inputs and outputs its signature lists.
Status expect_arity(const std::vector<Tensor>& inputs, size_t n_inputs,
                    const std::vector<Tensor>& outputs, size_t n_outputs, const std::string& op);

// The shape with its last dim removed (what a last-dim reduction produces).
Shape without_last_dim(const Shape& shape);

}  // namespace dnnb::reference
