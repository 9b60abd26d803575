#include "suites/ops/matmul_ggml_desc.h"

#include <cmath>
#include <string>

namespace dnnb::ops {

const std::vector<DType>& matmul_ggml_dtypes() {
  static const std::vector<DType> d = {DType::q8_0, DType::q4_0};
  return d;
}

const std::vector<DType>& matmul_ggml_x_dtypes() {
  static const std::vector<DType> d = {DType::f32, DType::f16, DType::bf16};
  return d;
}

namespace {
Result<double> scale_param(const Problem& p, const std::string& key) {
  auto v = p.get_double(key, 1.0);
  if (!v) return Status::bad_input("matmul_ggml: " + v.status().message);
  if (!(*v > 0) || !std::isfinite(*v))
    return Status::bad_input("matmul_ggml: parameter " + key + "=" + p.get(key) + " is not a positive finite number");
  return *v;
}
}  // namespace

Result<GgmlDesc> matmul_ggml_desc(const Problem& p) {
  if (p.shape.size() != 3)
    return Status::bad_input("matmul_ggml: shape " + shape_to_string(p.shape) + " is not MxNxK (tokens x out x in)");
  for (int64_t d : p.shape)
    if (d < 1) return Status::bad_input("matmul_ggml: shape " + shape_to_string(p.shape) + " has an empty dim");
  GgmlDesc d;
  d.m = p.shape[0];
  d.n = p.shape[1];
  d.k = p.shape[2];
  if (d.k % 32 != 0)
    return Status::bad_input("matmul_ggml: K=" + std::to_string(d.k) + " (shape " + shape_to_string(p.shape) +
                             ") is not a multiple of 32, the block length of q8_0 and q4_0");
  d.w = p.dtype;
  auto zeros = p.get_int("zeros", 0);
  if (!zeros || (*zeros != 0 && *zeros != 1))
    return Status::bad_input("matmul_ggml: parameter zeros=" + p.get("zeros") + " is not 0 or 1");
  d.zeros = *zeros == 1;
  auto xs = scale_param(p, "xscale");
  if (!xs) return xs.status();
  auto ws = scale_param(p, "wscale");
  if (!ws) return ws.status();
  d.x_scale = *xs;
  d.w_scale = *ws;
  return d;
}

Status fill_matmul_ggml_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng) {
  auto d = matmul_ggml_desc(problem);
  if (!d) return d.status();
  if (inputs.size() != 2) return Status::error("matmul_ggml: fill wants the inputs w, x");
  Tensor& w = inputs[0];
  Tensor& x = inputs[1];
  // x: normal(0, 1) x xscale, rounded to x's dtype; every 3rd block zero with zeros=1.
  void* xp = x.host_data();
  for (int64_t i = 0; i < d->m; ++i)
    for (int64_t c = 0; c < d->k; ++c) {
      const bool zero = d->zeros && ((i * d->blocks() + c / 32) % 3 == 1);
      store_element(xp, x.dtype, i * d->k + c, zero ? 0.0 : rng.normal() * d->x_scale);
    }
  // w: each row quantised as ggml's reference quantiser does; every 5th block zero with zeros=1.
  std::vector<float> row(static_cast<size_t>(d->k));
  auto* wp = static_cast<uint8_t*>(w.host_data());
  const size_t row_bytes = storage_bytes(d->w, d->k);
  for (int64_t j = 0; j < d->n; ++j) {
    for (int64_t c = 0; c < d->k; ++c) {
      const bool zero = d->zeros && ((j * d->blocks() + c / 32) % 5 == 2);
      row[c] = zero ? 0.0f : static_cast<float>(rng.normal() * d->w_scale);
    }
    DNNB_TRY(quantize_row(d->w, row.data(), d->k, wp + j * row_bytes));
  }
  return Status::ok();
}

}  // namespace dnnb::ops
