// The AVX-512 rope kernel, shared by rope (rotation by +angle) and rope_bwd (by -angle, the
// transpose): x [B, H, S, D] of any strides, pos [B, S] (i64 or i32) -> y.
//
// Work is cut into tasks of (batch b, a block of kPositions positions), spread over threads.
// A task first builds the cos/sin table of its positions (one per position and pair: the f32
// angle of ops::rope_angle, its cos and sin taken in double, 8 pairs per step, and rounded to
// f32), then applies it to those positions in every head, so each table entry serves H rows; the
// table of a task (8 KiB at rot = 128, 16 KiB in the interleaved form, whose entries are
// duplicated per pair) stays in L1 while the heads stream by.
// Rows are rotated 16 pairs per step in f32 with FMAs and rounded once to the dtype:
//   half:        y[i] = x[i] c - x[i+h] s, y[i+h] = x[i+h] c + x[i] s   (tables c[i], s[i], i < h)
//   interleaved: y = x C + swap_pairs(x) S, C = (c0, c0, c1, c1, ...), S = (-s0, s0, -s1, s1, ...)
// Columns rot..D are copied as they are. A row whose columns are not unit-stride is gathered into
// scratch first (and its output scattered after). Outputs that with the input exceed the last-level
// cache (stream_output) are written with non-temporal stores, saving the read for ownership.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/avx512/avx512_common.h"
#include "suites/ops/rope_desc.h"

namespace dnnb::avx512 {

namespace rope_detail {

constexpr int64_t kPositions = 16;  // positions per task

struct Plan {
  ops::RopeDesc d;
  std::vector<float> inv_freq;
  std::vector<int64_t> pos;  // [B * S]
  float sign = 1.0f;         // +1 rope, -1 rope_bwd
  const char* x = nullptr;
  char* y = nullptr;
  int64_t xs[4] = {}, ys[4] = {};  // strides in elements
  int64_t table_len = 0;           // floats per position per table: h (half) or rot (interleaved)
  bool stream = false;             // non-temporal stores of whole aligned vectors (stream_output)
};

// Stores 16 lanes (those of m) to p: a non-temporal store when streaming, m is whole and p is
// aligned to the vector's bytes (64 for f32, 32 for f16/bf16), a regular one otherwise.
template <class Fmt>
DNNB_AVX512_INLINE void store_lanes(typename Fmt::storage* p, __m512 v, __mmask16 m, bool stream) {
  constexpr uintptr_t kBytes = 16 * sizeof(typename Fmt::storage);
  if (stream && m == 0xffff && reinterpret_cast<uintptr_t>(p) % kBytes == 0) {
    if constexpr (Fmt::dtype == DType::f32) {
      _mm512_stream_ps(p, v);
    } else {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p), Fmt::encode(v));
    }
    return;
  }
  Fmt::store(p, v, m);
}

// sin and cos of 8 angles |a| < 2^30 in double: a = k pi/2 + r with k = round(a 2/pi) and
// r = a - k pi/2 by FMAs over pi/2 split in three doubles (the first step is exact: a is an f32,
// k P1 a multiple of 2^-52, and |r| < 2), then fdlibm's __kernel_sin / __kernel_cos polynomials
// on [-pi/4, pi/4] and the quadrant k mod 4. Error about 1e-16 absolute, like the C library's
// sin and cos the reference uses: the f32 roundings of the table are the same but in rare ties.
DNNB_AVX512_INLINE void sincos8(__m512d a, __m512d* sin_out, __m512d* cos_out) {
  const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(a, _mm512_set1_pd(0x1.45f306dc9c883p-1)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(0x1.921fb54442d18p+0), a);
  r = _mm512_fnmadd_pd(k, _mm512_set1_pd(0x1.1a62633145c07p-54), r);
  r = _mm512_fnmadd_pd(k, _mm512_set1_pd(-0x1.f1976b7ed8fbcp-110), r);
  const __m512d z = _mm512_mul_pd(r, r);
  auto poly = [&](const double (&coef)[6]) DNNB_AVX512_LAMBDA {  // coef[0] + z coef[1] + ... + z^5 coef[5]
    __m512d p = _mm512_set1_pd(coef[5]);
    for (int j = 4; j >= 0; --j) p = _mm512_fmadd_pd(z, p, _mm512_set1_pd(coef[j]));
    return p;
  };
  static constexpr double kSin[6] = {-1.66666666666666324348e-01, 8.33333333332248946124e-03,
                                     -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                                     -2.50507602534068634195e-08, 1.58969099521155010221e-10};
  static constexpr double kCos[6] = {4.16666666666666019037e-02, -1.38888888888741095749e-03,
                                     2.48015872894767294178e-05, -2.75573143513906633035e-07,
                                     2.08757232129817482790e-09, -1.13596475577881948265e-11};
  const __m512d sin_r = _mm512_fmadd_pd(_mm512_mul_pd(z, r), poly(kSin), r);
  const __m512d cos_r =
      _mm512_fmadd_pd(_mm512_mul_pd(z, z), poly(kCos), _mm512_fnmadd_pd(_mm512_set1_pd(0.5), z, _mm512_set1_pd(1.0)));
  // sin(k pi/2 + r) is sin r, cos r, -sin r, -cos r for k mod 4 = 0..3; cos is cos r, -sin r,
  // -cos r, sin r.
  const __m256i q = _mm512_cvtpd_epi32(k);
  const __m256i one = _mm256_set1_epi32(1), two = _mm256_set1_epi32(2);
  const __mmask8 swap = _mm256_test_epi32_mask(q, one);
  const __mmask8 sin_neg = _mm256_test_epi32_mask(q, two);
  const __mmask8 cos_neg = _mm256_test_epi32_mask(_mm256_add_epi32(q, one), two);
  const __m512d sign = _mm512_set1_pd(-0.0);
  *sin_out = _mm512_mask_xor_pd(_mm512_mask_blend_pd(swap, sin_r, cos_r), sin_neg,
                                _mm512_mask_blend_pd(swap, sin_r, cos_r), sign);
  *cos_out = _mm512_mask_xor_pd(_mm512_mask_blend_pd(swap, cos_r, sin_r), cos_neg,
                                _mm512_mask_blend_pd(swap, cos_r, sin_r), sign);
}

// The cos/sin table of one position (see the file comment for its layout per form), 8 pairs per
// step: the f32 angles f32(f32(pos) * inv_freq) (one VMULPS, as ops::rope_angle), their sin and
// cos by sincos8, or by the C library for a group with an angle of 2^30 or more.
DNNB_AVX512_INLINE void build_table(const Plan& p, int64_t pos, float* c, float* s) {
  const int64_t h = p.d.pairs();
  const bool half = p.d.form == ops::RopeForm::half;
  const __m256 position = _mm256_set1_ps(static_cast<float>(pos));
  const __m512i duplicate = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  for (int64_t i = 0; i < h; i += 8) {
    const int64_t n = std::min<int64_t>(8, h - i);
    const auto m = static_cast<__mmask8>((1u << n) - 1u);
    const __m256 angle = _mm256_mul_ps(position, _mm256_maskz_loadu_ps(m, p.inv_freq.data() + i));
    __m512d sin_d, cos_d;
    if (_mm256_cmp_ps_mask(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), angle), _mm256_set1_ps(0x1p30f), _CMP_NLT_UQ)) {
      alignas(32) float a[8];
      alignas(64) double sv[8], cv[8];
      _mm256_store_ps(a, angle);
      for (int j = 0; j < 8; ++j) {
        sv[j] = std::sin(static_cast<double>(a[j]));
        cv[j] = std::cos(static_cast<double>(a[j]));
      }
      sin_d = _mm512_load_pd(sv);
      cos_d = _mm512_load_pd(cv);
    } else {
      sincos8(_mm512_cvtps_pd(angle), &sin_d, &cos_d);
    }
    const __m256 cf = _mm512_cvtpd_ps(cos_d);
    const __m256 sf = _mm256_mul_ps(_mm512_cvtpd_ps(sin_d), _mm256_set1_ps(p.sign));
    if (half) {
      _mm256_mask_storeu_ps(c + i, m, cf);
      _mm256_mask_storeu_ps(s + i, m, sf);
    } else {  // (c0, c0, c1, c1, ...) and (-s0, s0, -s1, s1, ...) at columns 2i..
      const auto m2 = static_cast<__mmask16>((1u << (2 * n)) - 1u);
      const __m512 c2 = _mm512_permutexvar_ps(duplicate, _mm512_castps256_ps512(cf));
      const __m512 s2 = _mm512_permutexvar_ps(duplicate, _mm512_castps256_ps512(sf));
      _mm512_mask_storeu_ps(c + 2 * i, m2, c2);
      _mm512_mask_storeu_ps(s + 2 * i, m2, _mm512_mask_xor_ps(s2, 0x5555, s2, _mm512_set1_ps(-0.0f)));
    }
  }
}

// One row: src and dst unit-stride (the caller gathers and scatters otherwise).
template <class Fmt>
DNNB_AVX512 void rotate_row(const Plan& p, const typename Fmt::storage* src, typename Fmt::storage* dst,
                            const float* c, const float* s, bool stream) {
  const int64_t h = p.d.pairs();
  if (p.d.form == ops::RopeForm::half) {
    for (int64_t i = 0; i < h; i += 16) {
      const __mmask16 m = h - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(h - i);
      const __m512 x1 = Fmt::load(src + i, m), x2 = Fmt::load(src + h + i, m);
      const __m512 ci = _mm512_maskz_loadu_ps(m, c + i), si = _mm512_maskz_loadu_ps(m, s + i);
      store_lanes<Fmt>(dst + i, _mm512_fmsub_ps(x1, ci, _mm512_mul_ps(x2, si)), m, stream);
      store_lanes<Fmt>(dst + h + i, _mm512_fmadd_ps(x2, ci, _mm512_mul_ps(x1, si)), m, stream);
    }
  } else {
    const int64_t rot = p.d.rot;
    for (int64_t j = 0; j < rot; j += 16) {  // rot and j even: a mask never splits a pair
      const __mmask16 m = rot - j >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(rot - j);
      const __m512 v = Fmt::load(src + j, m);
      const __m512 swapped = _mm512_permute_ps(v, 0xb1);  // (x1, x0, x3, x2, ...)
      const __m512 cj = _mm512_maskz_loadu_ps(m, c + j), sj = _mm512_maskz_loadu_ps(m, s + j);
      store_lanes<Fmt>(dst + j, _mm512_fmadd_ps(v, cj, _mm512_mul_ps(swapped, sj)), m, stream);
    }
  }
  const int64_t rest = p.d.dim - p.d.rot;
  if (rest > 0) std::memcpy(dst + p.d.rot, src + p.d.rot, static_cast<size_t>(rest) * sizeof(*src));
}

// Task: batch b, positions [s0, s1).
template <class Fmt>
DNNB_AVX512 void rope_task(const Plan& p, int64_t b, int64_t s0, int64_t s1) {
  using T = typename Fmt::storage;
  const int64_t n = s1 - s0, L = p.table_len, D = p.d.dim;
  float* cos_table = scratch<float>(0, n * L);
  float* sin_table = scratch<float>(1, n * L);
  for (int64_t k = 0; k < n; ++k)
    build_table(p, p.pos[static_cast<size_t>(b * p.d.seq + s0 + k)], cos_table + k * L, sin_table + k * L);
  const bool x_unit = p.xs[3] == 1, y_unit = p.ys[3] == 1;
  T* gathered = x_unit ? nullptr : scratch<T>(2, D);
  T* staged = y_unit ? nullptr : scratch<T>(3, D);
  for (int64_t hd = 0; hd < p.d.heads; ++hd) {
    for (int64_t k = 0; k < n; ++k) {
      const int64_t s = s0 + k;
      const T* src = reinterpret_cast<const T*>(p.x) + b * p.xs[0] + hd * p.xs[1] + s * p.xs[2];
      T* dst = reinterpret_cast<T*>(p.y) + b * p.ys[0] + hd * p.ys[1] + s * p.ys[2];
      if (!x_unit) {
        for (int64_t j = 0; j < D; ++j) gathered[j] = src[j * p.xs[3]];
        src = gathered;
      }
      rotate_row<Fmt>(p, src, y_unit ? dst : staged, cos_table + k * L, sin_table + k * L, p.stream && y_unit);
      if (!y_unit)
        for (int64_t j = 0; j < D; ++j) dst[j * p.ys[3]] = staged[j];
    }
  }
}

}  // namespace rope_detail

// ops::rope_desc parses: every problem the spec accepts runs.
inline Status rope_supports(const Problem& problem, const DeviceRuntime&) {
  auto d = ops::rope_desc(problem);
  return d ? Status::ok() : d.status();
}

// rope (sign +1) or rope_bwd (sign -1): inputs {x or dy, pos}, output {y or dx}.
inline Status run_rope(OpCall& call, float sign) {
  using namespace rope_detail;
  auto d = ops::rope_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("avx512 " + call.problem.op + ": expected inputs (x, pos) and one output");
  const Tensor& x = call.inputs[0];
  const Tensor& pos = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (x.shape != d->x_shape() || y.shape != d->x_shape() || pos.shape != d->pos_shape() || x.dtype != y.dtype)
    return Status::bad_input("avx512 " + call.problem.op + ": " + x.describe() + ", " + pos.describe() + " -> " +
                             y.describe() + " do not match " + call.problem.to_string());
  if (pos.dtype != DType::i64 && pos.dtype != DType::i32)
    return Status::unsupported("avx512 " + call.problem.op + ": pos of dtype " + dtype_name(pos.dtype));
  const void* pos_data = pos.host_data();
  Plan p;
  p.x = static_cast<const char*>(x.host_data());
  p.y = static_cast<char*>(y.host_data());
  if (p.x == nullptr || p.y == nullptr || pos_data == nullptr)
    return Status::bad_input("avx512 " + call.problem.op + ": a tensor is not in host memory");
  p.d = *d;
  p.inv_freq = ops::rope_inv_freq(*d);
  p.sign = sign;
  p.table_len = d->form == ops::RopeForm::half ? d->pairs() : d->rot;
  for (int k = 0; k < 4; ++k) {
    p.xs[k] = x.strides[k];
    p.ys[k] = y.strides[k];
  }
  p.pos.resize(static_cast<size_t>(d->batch * d->seq));
  for (int64_t b = 0; b < d->batch; ++b)
    for (int64_t s = 0; s < d->seq; ++s) {
      const int64_t at = b * pos.strides[0] + s * pos.strides[1];
      p.pos[static_cast<size_t>(b * d->seq + s)] = pos.dtype == DType::i64 ? static_cast<const int64_t*>(pos_data)[at]
                                                                           : static_cast<const int32_t*>(pos_data)[at];
    }
  p.stream = stream_output(tensor_bytes(y), tensor_bytes(x) + tensor_bytes(pos));
  const int64_t blocks = (d->seq + kPositions - 1) / kPositions;
  return with_format(y.dtype, [&](auto fmt) -> Status {
    using Fmt = decltype(fmt);
    parallel_tasks(d->batch * blocks, y.numel(), [&](int64_t task) {
      const int64_t b = task / blocks, s0 = (task % blocks) * kPositions;
      rope_task<Fmt>(p, b, s0, std::min(d->seq, s0 + kPositions));
    });
    return Status::ok();
  });
}

}  // namespace dnnb::avx512
