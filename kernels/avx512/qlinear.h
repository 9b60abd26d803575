// What the AVX-512 quantize_linear and dequantize_linear share (docs/ops-family4.md,
// "quantize_linear and dequantize_linear"; the element rules are suites/ops/qlinear_desc.h's):
// the per-channel parameters, the walk of x in spans of one channel, and the threaded driver.
//
// x is read as rows (contiguous x: one row of every element; otherwise row by row, strided rows
// gathered into per-thread scratch) in tiles of kTile elements; y is contiguous, so element
// (r, c) of x lands at y[r * cols + c], its logical row-major index, from which its channel
// follows. Within a tile, runs of one channel (inner >= 16 elements, or per tensor) broadcast
// that channel's parameters; where the channel changes inside a vector (a per-channel axis
// with fewer than 16 elements after it) each lane's parameters are gathered.
#pragma once
#include <string>
#include <vector>

#include "kernels/avx512/avx512_common.h"
#include "suites/ops/qlinear_desc.h"

namespace dnnb::avx512::qlinear {

// Per channel: the f32 factor (quantize: 1 / scale, dequantize: scale), the zero point, and
// quantize's clamp bounds qmin - zp and qmax - zp as f32 (exact).
struct Params {
  std::vector<float> factor, lo, hi;
  std::vector<int32_t> zp;
};

inline Result<Params> read_params(const ops::QlinearDesc& d, const Tensor& scale, const Tensor& zero_point, bool quantize) {
  if (scale.dtype != DType::f32 || zero_point.dtype != DType::i32 || scale.numel() != d.channels ||
      zero_point.numel() != d.channels || !scale.is_contiguous() || !zero_point.is_contiguous())
    return Status::bad_input("avx512 qlinear: scale must be f32 and zero_point i32, contiguous, " +
                             std::to_string(d.channels) + " elements each");
  const auto* s = static_cast<const float*>(scale.host_data());
  const auto* z = static_cast<const int32_t*>(zero_point.host_data());
  if (s == nullptr || z == nullptr) return Status::bad_input("avx512 qlinear: scale or zero_point not in host memory");
  Params p;
  for (int64_t c = 0; c < d.channels; ++c) {
    p.factor.push_back(quantize ? ops::qlinear_inv_scale(s[c]) : s[c]);
    p.zp.push_back(z[c]);
    p.lo.push_back(static_cast<float>(d.qmin - z[c]));
    p.hi.push_back(static_cast<float>(d.qmax - z[c]));
  }
  return p;
}

// Channel indices of the 16 elements at logical positions flat .. flat + 15.
DNNB_AVX512_INLINE __m512i lane_channels(const ops::QlinearDesc& d, int64_t flat) {
  alignas(64) int32_t idx[16];
  for (int l = 0; l < 16; ++l) idx[l] = static_cast<int32_t>(d.channel_of(flat + l));
  return _mm512_load_si512(idx);
}

// Elements [flat, flat + n) of x (src, contiguous) to dst: K::run(src, dst, len, channel) for runs
// of one channel, K::lanes(src, dst, len, channel indices) where the channel changes per lane.
template <class K>
DNNB_AVX512 void span(const K& k, const typename K::Src* src, typename K::Dst* dst, int64_t n, int64_t flat,
                             const ops::QlinearDesc& d) {
  if (!d.per_channel()) return k.run(src, dst, n, 0);
  if (d.inner >= 16) {
    for (int64_t i = 0; i < n;) {
      const int64_t pos = flat + i, len = std::min(n - i, d.inner - pos % d.inner);
      k.run(src + i, dst + i, len, d.channel_of(pos));
      i += len;
    }
    return;
  }
  for (int64_t i = 0; i < n; i += 16) k.lanes(src + i, dst + i, std::min<int64_t>(16, n - i), lane_channels(d, flat + i));
}

constexpr int64_t kTile = 16384;

// True when the view reads element i of its logical shape from offset i.
inline bool dense(const Tensor& t) {
  const Shape strides = contiguous_strides(t.shape);
  for (size_t i = 0; i < t.shape.size(); ++i)
    if (t.shape[i] > 1 && t.strides[i] != strides[i]) return false;
  return true;
}

// Runs K over every tile of x on the threads. K has Src, Dst and the span members above.
template <class K>
Status drive(const K& k, const Tensor& x, Tensor& y, const ops::QlinearDesc& d, const char* op) {
  if (x.shape != y.shape || !dense(y))
    return Status::bad_input(std::string("avx512 ") + op + ": y must be contiguous with x's shape (x " + x.describe() +
                             ", y " + y.describe() + ")");
  auto* out = static_cast<typename K::Dst*>(y.host_data());
  if (x.host_data() == nullptr || out == nullptr)
    return Status::bad_input(std::string("avx512 ") + op + ": tensors not in host memory");
  HostRows in;
  if (dense(x)) {
    in.data = static_cast<char*>(x.host_data());
    in.element_size = dtype_size(x.dtype);
    in.index.cols = x.numel();
  } else {
    auto rows = host_rows(x);
    if (!rows) return rows.status();
    in = *rows;
  }
  const int64_t rows = in.rows(), cols = in.cols();
  if (rows * cols == 0) return Status::ok();
  const int64_t tiles = (cols + kTile - 1) / kTile;
  parallel_tasks(rows * tiles, rows * cols, [&](int64_t task) {
    const int64_t r = task / tiles, c0 = (task % tiles) * kTile, n = std::min(kTile, cols - c0);
    const auto* src = read_span<typename K::Src>(in, r, c0, n, 0);
    span(k, src, out + r * cols + c0, n, r * cols + c0, d);
  });
  return Status::ok();
}

}  // namespace dnnb::avx512::qlinear
