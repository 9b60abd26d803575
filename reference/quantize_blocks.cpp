#include "reference/quantize_blocks.h"

#include <cstdint>

#include "reference/access.h"
#include "reference/reference.h"
#include "suites/ops/blocks_desc.h"

namespace dnnb::reference {

Status quantize_blocks(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 1, outputs, 1, "quantize_blocks"));
  auto target = ops::quantize_target(problem);
  if (!target) return target.status();
  auto rows = Rows::of(inputs[0], "x");
  if (!rows) return rows.status();
  auto y = f64_output(outputs[0], inputs[0].shape, "y");
  if (!y) return y.status();
  const int64_t cols = rows->cols();
  std::vector<float> row(static_cast<size_t>(cols));
  std::vector<uint8_t> blocks(storage_bytes(*target, cols));
  for (int64_t r = 0; r < rows->rows(); ++r) {
    const RowView view = rows->row(r);
    // f32, f16 and bf16 values are exact in float: the quantiser sees the source's values.
    for (int64_t c = 0; c < cols; ++c) row[c] = static_cast<float>(view[c]);
    DNNB_TRY(quantize_row(*target, row.data(), cols, blocks.data()));
    for (int64_t c = 0; c < cols; ++c) (*y)[r * cols + c] = load_element(blocks.data(), *target, c);
  }
  return Status::ok();
}

Status quantize_blocks_into(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 1, outputs, 1, "quantize_blocks"));
  auto target = ops::quantize_target(problem);
  if (!target) return target.status();
  Tensor& y = outputs[0];
  if (y.dtype != *target || !y.is_contiguous() || y.shape != inputs[0].shape || y.host_data() == nullptr)
    return Status::bad_input("quantize_blocks: y " + y.describe() + " is not a contiguous host tensor of x's shape in " +
                             dtype_name(*target));
  auto rows = Rows::of(inputs[0], "x");
  if (!rows) return rows.status();
  const int64_t cols = rows->cols();
  const size_t row_bytes = storage_bytes(*target, cols);
  std::vector<float> row(static_cast<size_t>(cols));
  auto* out = static_cast<uint8_t*>(y.host_data());
  for (int64_t r = 0; r < rows->rows(); ++r) {
    const RowView view = rows->row(r);
    for (int64_t c = 0; c < cols; ++c) row[c] = static_cast<float>(view[c]);
    DNNB_TRY(quantize_row(*target, row.data(), cols, out + r * row_bytes));
  }
  return Status::ok();
}

Status dequantize_blocks(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto target = ops::dequantize_target(problem);
  if (!target) return target.status();
  // The decode is exact in double (core/dtype.cpp); storing into one element of the target and
  // reading it back is the one rounding (through f32 first, where every block value but those
  // past f32's range is exact: those become +-Inf in f32 and in f16/bf16 alike).
  return map_elements(inputs, outputs, [dtype = *target](double x) {
    uint32_t slot = 0;
    store_element(&slot, dtype, 0, x);
    return load_element(&slot, dtype, 0);
  }, "dequantize_blocks");
}

}  // namespace dnnb::reference
