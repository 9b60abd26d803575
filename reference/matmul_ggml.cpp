// matmul_ggml in float64 over the quantised values, block by block as ggml's vec_dot does.
#include "reference/matmul_ggml.h"

#include <cstring>

#include "reference/access.h"
#include "suites/ops/matmul_ggml_desc.h"

namespace dnnb::reference {
namespace {

struct QuantRow {
  std::vector<double> d;   // per block: the f16 scale, decoded
  std::vector<int> q;      // per value: the quant (q4_0: code - 8)
};

// Row r of a contiguous block-format tensor `t` (k values) as scales and integer quants.
QuantRow quant_row(const uint8_t* row, DType dtype, int64_t k) {
  QuantRow out;
  const int64_t bytes = block_bytes(dtype);
  for (int64_t b = 0; b < k / 32; ++b) {
    const uint8_t* block = row + b * bytes;
    uint16_t bits;
    std::memcpy(&bits, block, 2);
    out.d.push_back(f16_to_f32(bits));
    for (int j = 0; j < 32; ++j) {
      if (dtype == DType::q8_0) {
        out.q.push_back(static_cast<int8_t>(block[2 + j]));
      } else {  // q4_0: byte j % 16, low nibble for j < 16, high nibble for j >= 16
        const uint8_t byte = block[2 + j % 16];
        out.q.push_back((j < 16 ? byte & 0x0F : byte >> 4) - 8);
      }
    }
  }
  return out;
}

}  // namespace

Status matmul_ggml(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, "matmul_ggml"));
  auto d = ops::matmul_ggml_desc(problem);
  if (!d) return d.status();
  const Tensor& w = inputs[0];
  const int64_t M = d->m, N = d->n, K = d->k, nb = d->blocks();
  auto x = dense_f64(inputs[1], "x");
  if (!x) return x.status();
  auto y = f64_output(outputs[0], {M, N}, "y");
  if (!y) return y.status();

  // x: each row (exact in f32: it came from f32, f16 or bf16 values) quantised to q8_0.
  std::vector<QuantRow> xq;
  std::vector<float> row(static_cast<size_t>(K));
  std::vector<uint8_t> blocks(storage_bytes(DType::q8_0, K));
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t c = 0; c < K; ++c) row[c] = static_cast<float>((*x)[i * K + c]);
    DNNB_TRY(quantize_row(DType::q8_0, row.data(), K, blocks.data()));
    xq.push_back(quant_row(blocks.data(), DType::q8_0, K));
  }

  if (is_block_format(w.dtype)) {
    if (w.dtype != d->w || !w.is_contiguous())
      return Status::bad_input("reference matmul_ggml: w is not a contiguous " + std::string(dtype_name(d->w)) + " tensor");
    const auto* wp = static_cast<const uint8_t*>(w.host_data());
    const size_t row_bytes = storage_bytes(w.dtype, K);
    for (int64_t j = 0; j < N; ++j) {
      const QuantRow wq = quant_row(wp + j * row_bytes, w.dtype, K);
      for (int64_t i = 0; i < M; ++i) {
        double sum = 0;
        for (int64_t b = 0; b < nb; ++b) {
          int64_t sumi = 0;
          for (int64_t c = b * 32; c < b * 32 + 32; ++c) sumi += static_cast<int64_t>(wq.q[c]) * xq[i].q[c];
          sum += wq.d[b] * xq[i].d[b] * static_cast<double>(sumi);
        }
        (*y)[i * N + j] = sum;
      }
    }
    return Status::ok();
  }
  // w as values (check's magnitude sums: |w| dequantised, x as |x|, whose quantisation is |q|).
  auto wv = dense_f64(w, "w");
  if (!wv) return wv.status();
  for (int64_t j = 0; j < N; ++j)
    for (int64_t i = 0; i < M; ++i) {
      double sum = 0;
      for (int64_t b = 0; b < nb; ++b) {
        double block = 0;
        for (int64_t c = b * 32; c < b * 32 + 32; ++c) block += (*wv)[j * K + c] * xq[i].q[c];
        sum += xq[i].d[b] * block;
      }
      (*y)[i * N + j] = sum;
    }
  return Status::ok();
}

}  // namespace dnnb::reference
