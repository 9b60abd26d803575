// The layout ops' copy engine (strided_copy.h).
#include "kernels/avx512/strided_copy.h"

#include <cstring>

#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/transpose16.h"

namespace dnnb::avx512 {
namespace {

constexpr int64_t kTaskBytes = 64 * 1024;  // bytes of rows per task (row copies)
constexpr int64_t kStrip = 512;            // transposes: elements of each source row per strip
constexpr size_t kMaxDims = 8;             // dims left after merging

// The outer index of a row over dims [0, n) (row-major order) and its element offsets in
// both views: set once per task by division, then stepped row by row with carries.
struct Odometer {
  const std::vector<CopyDim>* dims;
  int n;
  int64_t index[kMaxDims] = {};
  int64_t src = 0, dst = 0;

  Odometer(const std::vector<CopyDim>& d, int count, int64_t r) : dims(&d), n(count) {
    for (int i = n - 1; i >= 0; --i) {
      index[i] = r % d[i].size;
      r /= d[i].size;
      src += index[i] * d[i].src;
      dst += index[i] * d[i].dst;
    }
  }
  void next() {
    for (int i = n - 1; i >= 0; --i) {
      const CopyDim& d = (*dims)[i];
      src += d.src;
      dst += d.dst;
      if (++index[i] < d.size) return;
      src -= d.size * d.src;
      dst -= d.size * d.dst;
      index[i] = 0;
    }
  }
};

int64_t product(const std::vector<CopyDim>& dims, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; ++i) p *= dims[i].size;
  return p;
}

// A 16 x 16 tile of 4- or 2-byte elements: `rows` source rows (src + i * src_row, i < rows)
// of `cols` unit-stride elements each become cols destination rows (dst + j * dst_row) of
// `rows` unit-stride elements. 2-byte lanes are widened to 32 bits and narrowed back: exact.
template <int kBytes>
DNNB_AVX512 void transpose_tile(const char* src, int64_t src_row, int rows, int cols, char* dst, int64_t dst_row) {
  const __mmask16 col_mask = tail_mask(cols), row_mask = tail_mask(rows);
  __m512 v[16];
  for (int i = 0; i < 16; ++i) {
    if (i >= rows) {
      v[i] = _mm512_setzero_ps();
    } else if constexpr (kBytes == 4) {
      v[i] = _mm512_maskz_loadu_ps(col_mask, src + i * src_row * 4);
    } else {
      const __m256i h = _mm256_maskz_loadu_epi16(col_mask, src + i * src_row * 2);
      v[i] = _mm512_castsi512_ps(_mm512_cvtepu16_epi32(h));
    }
  }
  transpose16x16(v);
  for (int j = 0; j < cols; ++j) {
    if constexpr (kBytes == 4) {
      _mm512_mask_storeu_ps(dst + j * dst_row * 4, row_mask, v[j]);
    } else {
      _mm256_mask_storeu_epi16(dst + j * dst_row * 2, row_mask, _mm512_cvtepi32_epi16(_mm512_castps_si512(v[j])));
    }
  }
}

// Element-by-element copy of n elements with strides (in elements).
template <class T>
void copy_elements(const T* src, int64_t ss, T* dst, int64_t ds, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i * ds] = src[i * ss];
}

template <int kBytes>
Status copy_dims(char* dst, const char* src, std::vector<CopyDim> dims) {
  using T = std::conditional_t<kBytes == 4, uint32_t, uint16_t>;
  const int n = static_cast<int>(dims.size());
  const int last = n - 1;
  const CopyDim inner = dims[last];
  const int64_t total = product(dims, n);
  if (inner.src == 1 && inner.dst == 1) {
    // Rows contiguous in both: memcpy, several rows per task.
    const int64_t rows = product(dims, last);
    const int64_t row_bytes = inner.size * kBytes;
    const int64_t per_task = std::max<int64_t>(1, kTaskBytes / row_bytes);
    parallel_tasks((rows + per_task - 1) / per_task, total, [&](int64_t task) {
      const int64_t r0 = task * per_task, r1 = std::min(rows, r0 + per_task);
      Odometer o(dims, last, r0);
      for (int64_t r = r0; r < r1; ++r, o.next())
        std::memcpy(dst + o.dst * kBytes, src + o.src * kBytes, static_cast<size_t>(row_bytes));
    });
    return Status::ok();
  }
  int q = -1;  // the dim where the source is unit-stride
  for (int i = 0; i < last; ++i)
    if (dims[i].src == 1) q = i;
  if (inner.dst == 1 && q >= 0) {
    // A transpose: tiles of 16 (dim q, source-contiguous) x 16 (the last dim,
    // destination-contiguous), in strips of kStrip elements of each source row, each strip
    // walked along the last dim. The source rows of a strip lie a row stride apart, often each
    // on its own page: reading 16 or 32 lines of a row per visit, not one, takes that many
    // times fewer page walks, while the strip's kStrip destination rows stay in the TLB.
    const CopyDim tq = dims[q];
    std::vector<CopyDim> outer;
    for (int i = 0; i < last; ++i)
      if (i != q) outer.push_back(dims[i]);
    const int no = static_cast<int>(outer.size());
    const int64_t outer_count = product(outer, no);
    const int64_t strips = (tq.size + kStrip - 1) / kStrip;
    parallel_tasks(outer_count * strips, total, [&](int64_t task) {
      const Odometer o(outer, no, task / strips);
      const int64_t s = o.src, d = o.dst;
      const int64_t q0 = (task % strips) * kStrip, q1 = std::min(tq.size, q0 + kStrip);
      for (int64_t l = 0; l < inner.size; l += 16) {
        const int nl = static_cast<int>(std::min<int64_t>(16, inner.size - l));
        for (int64_t qi = q0; qi < q1; qi += 16) {
          const int nq = static_cast<int>(std::min<int64_t>(16, q1 - qi));
          // The tile's source rows are nl steps of the last dim (stride inner.src), each of nq
          // unit-stride elements along q; its destination rows are the nq values of q.
          transpose_tile<kBytes>(src + (s + qi + l * inner.src) * kBytes, inner.src, nl, nq,
                                 dst + (d + qi * tq.dst + l) * kBytes, tq.dst);
        }
      }
    });
    return Status::ok();
  }
  // Anything else: element by element along the last dim.
  const int64_t rows = product(dims, last);
  const int64_t per_task = std::max<int64_t>(1, kTaskBytes / (inner.size * kBytes));
  parallel_tasks((rows + per_task - 1) / per_task, total, [&](int64_t task) {
    const int64_t r0 = task * per_task, r1 = std::min(rows, r0 + per_task);
    Odometer o(dims, last, r0);
    for (int64_t r = r0; r < r1; ++r, o.next())
      copy_elements(reinterpret_cast<const T*>(src) + o.src, inner.src, reinterpret_cast<T*>(dst) + o.dst, inner.dst,
                    inner.size);
  });
  return Status::ok();
}

}  // namespace

Status strided_copy(void* dst, const void* src, int element_bytes, std::vector<CopyDim> dims) {
  if (dst == nullptr || src == nullptr) return Status::bad_input("avx512 copy: a tensor is not in host memory");
  // Drop size-1 dims; an empty view copies nothing.
  std::vector<CopyDim> kept;
  for (const CopyDim& d : dims) {
    if (d.size == 0) return Status::ok();
    if (d.size != 1) kept.push_back(d);
  }
  // Merge a dim into the one inside it where both views step over it contiguously.
  std::vector<CopyDim> merged;
  for (const CopyDim& d : kept) {
    if (!merged.empty()) {
      CopyDim& in = merged.back();
      // `d` is inside `in`: in can absorb d when in's strides are d's times d's size.
      if (in.src == d.src * d.size && in.dst == d.dst * d.size) {
        in = {in.size * d.size, d.src, d.dst};
        continue;
      }
    }
    merged.push_back(d);
  }
  if (merged.empty()) merged.push_back({1, 1, 1});
  if (merged.size() > kMaxDims)
    return Status::unsupported("avx512 copy: " + std::to_string(merged.size()) + " dims that do not merge (at most " +
                               std::to_string(kMaxDims) + ")");
  if (element_bytes == 4) return copy_dims<4>(static_cast<char*>(dst), static_cast<const char*>(src), std::move(merged));
  if (element_bytes == 2) return copy_dims<2>(static_cast<char*>(dst), static_cast<const char*>(src), std::move(merged));
  return Status::unsupported("avx512 copy: elements of " + std::to_string(element_bytes) + " bytes");
}

Status copy_view(const Tensor& dst, const Tensor& src) {
  if (dst.shape != src.shape || dst.dtype != src.dtype)
    return Status::error("avx512 copy: views " + dst.describe() + " and " + src.describe() + " differ");
  std::vector<CopyDim> dims;
  for (int i = 0; i < src.ndim(); ++i) dims.push_back({src.shape[i], src.strides[i], dst.strides[i]});
  return strided_copy(dst.host_data(), src.host_data(), static_cast<int>(dtype_size(src.dtype)), std::move(dims));
}

}  // namespace dnnb::avx512
