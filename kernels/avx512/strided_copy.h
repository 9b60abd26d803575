// The copy engine of the AVX-512 layout ops (permute, concat, slice, repeat_kv): every
// element of an N-d view copied bit for bit to another view of the same sizes, 2- or 4-byte
// patterns moved as integers (never converted through float). Dims are simplified first
// (size-1 dims dropped, dims contiguous in both views merged), then the innermost dim picks
// the method: unit stride in both views, rows copied with memcpy; unit stride in the
// destination with the source's unit-stride dim elsewhere (a transpose), 16 x 16 tiles
// transposed in registers; anything else, element by element. Work is cut into tasks of
// whole rows or tile strips over OpenMP threads.
#pragma once
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::avx512 {

// One dim of a copy: `size` elements, `src` and `dst` strides in elements (src may be 0: a
// repeated element, as repeat_kv's copies of a head).
struct CopyDim {
  int64_t size = 1, src = 0, dst = 0;
};

// Copies the view of `dims` (outermost first) from src to dst; element_bytes is 2 or 4.
Status strided_copy(void* dst, const void* src, int element_bytes, std::vector<CopyDim> dims);

// strided_copy of two views of the same shape and dtype (f32, f16 or bf16).
Status copy_view(const Tensor& dst, const Tensor& src);

}  // namespace dnnb::avx512
