// The AVX-512 rope kernel, shared by rope (rotation by +angle) and rope_bwd (by -angle, the
// transpose): x [B, H, S, D] of any strides, pos [B, S] (i64 or i32) -> y.
//
// Work is cut into tasks of (batch b, a block of kPositions positions), spread over threads.
// A task first builds the cos/sin table of its positions (one per position and pair: the f32
// angle of ops::rope_angle, its cos and sin taken in double and rounded to f32), then applies it
// to those positions in every head, so each table entry serves H rows; the table of a task
// (kPositions x rot floats x 2, 16 KiB at rot = 128) stays in L1 while the heads stream by.
// Rows are rotated 16 pairs per step in f32 with FMAs and rounded once to the dtype:
//   half:        y[i] = x[i] c - x[i+h] s, y[i+h] = x[i+h] c + x[i] s   (tables c[i], s[i], i < h)
//   interleaved: y = x C + swap_pairs(x) S, C = (c0, c0, c1, c1, ...), S = (-s0, s0, -s1, s1, ...)
// Columns rot..D are copied as they are. A row whose columns are not unit-stride is gathered into
// scratch first (and its output scattered after).
#pragma once
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
};

// The cos/sin table of one position (see the file comment for its layout per form).
inline void build_table(const Plan& p, int64_t pos, float* c, float* s) {
  const int64_t h = p.d.pairs();
  const bool half = p.d.form == ops::RopeForm::half;
  for (int64_t i = 0; i < h; ++i) {
    const double angle = ops::rope_angle(pos, p.inv_freq[static_cast<size_t>(i)]);
    const float ci = static_cast<float>(std::cos(angle));
    const float si = p.sign * static_cast<float>(std::sin(angle));
    if (half) {
      c[i] = ci;
      s[i] = si;
    } else {
      c[2 * i] = c[2 * i + 1] = ci;
      s[2 * i] = -si;
      s[2 * i + 1] = si;
    }
  }
}

// One row: src and dst unit-stride (the caller gathers and scatters otherwise).
template <class Fmt>
DNNB_AVX512 void rotate_row(const Plan& p, const typename Fmt::storage* src, typename Fmt::storage* dst,
                            const float* c, const float* s) {
  const int64_t h = p.d.pairs();
  if (p.d.form == ops::RopeForm::half) {
    for (int64_t i = 0; i < h; i += 16) {
      const __mmask16 m = h - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(h - i);
      const __m512 x1 = Fmt::load(src + i, m), x2 = Fmt::load(src + h + i, m);
      const __m512 ci = _mm512_maskz_loadu_ps(m, c + i), si = _mm512_maskz_loadu_ps(m, s + i);
      Fmt::store(dst + i, _mm512_fmsub_ps(x1, ci, _mm512_mul_ps(x2, si)), m);
      Fmt::store(dst + h + i, _mm512_fmadd_ps(x2, ci, _mm512_mul_ps(x1, si)), m);
    }
  } else {
    const int64_t rot = p.d.rot;
    for (int64_t j = 0; j < rot; j += 16) {  // rot and j even: a mask never splits a pair
      const __mmask16 m = rot - j >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(rot - j);
      const __m512 v = Fmt::load(src + j, m);
      const __m512 swapped = _mm512_permute_ps(v, 0xb1);  // (x1, x0, x3, x2, ...)
      const __m512 cj = _mm512_maskz_loadu_ps(m, c + j), sj = _mm512_maskz_loadu_ps(m, s + j);
      Fmt::store(dst + j, _mm512_fmadd_ps(v, cj, _mm512_mul_ps(swapped, sj)), m);
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
      rotate_row<Fmt>(p, src, y_unit ? dst : staged, cos_table + k * L, sin_table + k * L);
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
