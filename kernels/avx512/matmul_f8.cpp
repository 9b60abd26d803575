// matmul_f8 (torch._scaled_mm): y = scale_a * scale_b * (a @ b) with a and b in f8_e4m3fn or
// f8_e5m2, on VDPBF16PS (AVX512_BF16) through the 8-bit product engine (matmul_q8.h).
//
// Every e4m3fn and e5m2 value is a bf16 value (their exponents fit bf16's 8 bits, their
// mantissas its 7; their subnormals are bf16 normals), so a and b are decoded exactly to bf16
// pairs while packing (a 256-entry table per format). VDPBF16PS multiplies bf16 pairs exactly in
// f32 (8-bit mantissas give 16-bit products) and adds them to the f32 accumulator rounded to
// nearest even; it treats bf16 subnormal inputs as zero, and none occur (the smallest decoded
// value is e5m2's 2^-16). The finish multiplies by f32(scale_a[i] * scale_b[j]) (scale=tensor:
// one product for the whole matrix) and rounds once to y's dtype (bf16, f16 or f32).
#include <array>

#include "devices/cpu/cpu_features.h"
#include "kernels/avx512/matmul_q8.h"
#include "kernels/avx512/gemm.h"
#include "suites/ops/matmul_q_desc.h"

namespace dnnb::avx512 {
namespace {

struct Bf16Dot {
  using Acc = __m512;
  DNNB_AVX512_Q8 static inline __attribute__((always_inline)) __m512 zero() { return _mm512_setzero_ps(); }
  DNNB_AVX512_Q8 static inline __attribute__((always_inline)) __m512 dot(__m512 acc, __m512i a, __m512i b) {
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b));
  }
};

// bf16 bits of every encoding of an 8-bit float format (NaN encodings give bf16 NaN).
const std::array<uint16_t, 256>& bf16_table(DType dtype) {
  static const auto make = [](DType d) {
    std::array<uint16_t, 256> t{};
    for (int c = 0; c < 256; ++c) {
      const uint8_t code = static_cast<uint8_t>(c);
      t[static_cast<size_t>(c)] = f32_to_bf16(static_cast<float>(load_element(&code, d, 0)));
    }
    return t;
  };
  static const std::array<uint16_t, 256> e4m3 = make(DType::f8_e4m3fn), e5m2 = make(DType::f8_e5m2);
  return dtype == DType::f8_e5m2 ? e5m2 : e4m3;
}

Status matmul_f8_supports(const Problem& p, const DeviceRuntime& device) {
  DNNB_TRY(common_supports(p, device, {DType::f8_e4m3fn}));
  if (!cpu_features().avx512_bf16_usable()) return Status::skipped("avx512 matmul_f8: the CPU has no AVX512_BF16");
  auto d = ops::matmul_f8_desc(p);
  return d ? Status::ok() : d.status();
}

Status run_matmul_f8(OpCall& call) {
  auto d = ops::matmul_f8_desc(call.problem);
  if (!d) return d.status();
  const Tensor &ta = call.inputs.at(0), &tb = call.inputs.at(1);
  const MatrixView a = matrix_view(ta), b = matrix_view(tb);
  Tensor& y = call.outputs.at(0);
  if (y.strides.back() != 1) return Status::unsupported("avx512 matmul_f8: y's columns are not unit-stride");
  const MatrixView yv = matrix_view(y);
  const auto* pa = static_cast<const uint8_t*>(a.data);
  const auto* pb = static_cast<const uint8_t*>(b.data);
  const auto& ta_bf16 = bf16_table(ta.dtype);
  const auto& tb_bf16 = bf16_table(tb.dtype);
  const int64_t k = d->gemm.k, m = d->gemm.m, n = d->gemm.n, words = (k + 1) / 2;
  auto word_a = [&](int64_t i, int64_t w) {
    uint32_t word = ta_bf16[pa[i * a.row_stride + 2 * w * a.col_stride]];
    if (2 * w + 1 < k) word |= static_cast<uint32_t>(ta_bf16[pa[i * a.row_stride + (2 * w + 1) * a.col_stride]]) << 16;
    return word;
  };
  auto word_b = [&](int64_t w, int64_t j) {
    uint32_t word = tb_bf16[pb[2 * w * b.row_stride + j * b.col_stride]];
    if (2 * w + 1 < k) word |= static_cast<uint32_t>(tb_bf16[pb[(2 * w + 1) * b.row_stride + j * b.col_stride]]) << 16;
    return word;
  };
  const q8::Packed packed = q8::pack(m, n, words, word_a, word_b);
  // The scales as f32 vectors: one per row of a, one per column of b (padded to whole tiles).
  const bool row = d->scale == ops::F8Scale::row;
  const auto* sa = static_cast<const float*>(call.inputs.at(2).host_data());
  const auto* sb = static_cast<const float*>(call.inputs.at(3).host_data());
  const int64_t sa_stride = row ? call.inputs.at(2).strides[0] : 0, sb_stride = row ? call.inputs.at(3).strides[1] : 0;
  std::vector<float> col_scale(static_cast<size_t>(packed.panels * q8::kQ8NR), 0.0f);
  for (int64_t j = 0; j < n; ++j) col_scale[static_cast<size_t>(j)] = sb[j * sb_stride];
  return with_format(y.dtype, [&](auto fmt) {
    using Fmt = decltype(fmt);
    auto* out = static_cast<typename Fmt::storage*>(y.host_data());
    q8::multiply<Bf16Dot>(packed, [&](int64_t i, int64_t j0, __m512 acc, __mmask16 mask) DNNB_AVX512_Q8 {
      // f32(scale_a[i] * scale_b[j]), then acc times it: two f32 roundings before y's.
      const __m512 s = _mm512_mul_ps(_mm512_set1_ps(sa[i * sa_stride]), _mm512_loadu_ps(col_scale.data() + j0));
      Fmt::store(out + i * yv.row_stride + j0, _mm512_mul_ps(acc, s), mask);
    });
    return Status::ok();
  });
}

DNNB_REGISTER(register_kernel("matmul_f8", {DType::f8_e4m3fn}, matmul_f8_supports, run_matmul_f8, "", "",
                              [](const Problem&, const DeviceRuntime&) { return std::string("bf16_dot"); }));

}  // namespace
}  // namespace dnnb::avx512
