// A tensor is a view: dtype, shape and strides (in elements), an element offset and a
// buffer on some device. Views (permute, transpose, slice, reshape of contiguous data,
// broadcast) never copy. Kernels see a tensor as a batch of rows: see RowIndex.
//
// Packed dtypes keep whole storage units addressable (core/dtype.h): a tensor of a block
// format (q8_0, q4_0, mxfp8, mxfp4) has its last dim a multiple of 32 with stride 1, and its
// offset and every other stride multiples of 32, so that each row is whole blocks; an
// f4_e2m1 tensor starts on a byte (even offset). Views that would break this are refused
// (unsupported). Byte counts and offsets are storage_bytes(dtype, elements).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/status.h"

#if defined(__CUDACC__)
#define DNNB_HOST_DEVICE __host__ __device__
#else
#define DNNB_HOST_DEVICE
#endif

namespace dnnb {

using Shape = std::vector<int64_t>;

std::string shape_to_string(const Shape& shape);              // "64x4096", scalar -> "1"
Result<Shape> parse_shape(const std::string& text);           // "64x4096"
int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
// Numpy broadcasting of two shapes, or bad_input naming both.
Result<Shape> broadcast_shapes(const Shape& a, const Shape& b);

struct Tensor {
  DType dtype = DType::f32;
  Shape shape;
  Shape strides;        // elements; 0 on a broadcast (repeated) dim
  int64_t offset = 0;   // elements from the start of the buffer
  BufferPtr buffer;

  int ndim() const { return static_cast<int>(shape.size()); }
  int64_t numel() const { return shape_numel(shape); }
  bool is_contiguous() const;
  // ok when the view keeps a packed dtype's storage units whole (above); unsupported, naming
  // the view, otherwise. Always ok for whole-byte scalar dtypes.
  Status check_storage_layout() const;
  // Elements [offset, offset + span) of the buffer are what this view can touch.
  int64_t storage_span() const;
  // "4x8:8x1+0 bf16"
  std::string describe() const;
  DeviceRuntime* device() const { return buffer ? buffer->device : nullptr; }

  // Views: no copy. Errors name the argument that is out of range.
  Result<Tensor> permute(const std::vector<int>& dims) const;
  Result<Tensor> transpose(int dim0, int dim1) const;
  Result<Tensor> slice(int dim, int64_t start, int64_t length) const;
  Result<Tensor> reshape(const Shape& new_shape) const;   // contiguous data only
  Result<Tensor> broadcast_to(const Shape& target) const; // stride 0 on repeated dims
  // True when this shape can be repeated (numpy rules) to `target`.
  bool can_broadcast_to(const Shape& target) const;

  // Host pointer to element 0 of the view (byte storage_bytes(dtype, offset) of the buffer);
  // null for a buffer the host cannot read, or an offset that does not start a storage unit.
  void* host_data() const;
};

// New contiguous tensor on `device` of storage_bytes(dtype, numel) bytes; bad_input for a
// shape a block format cannot hold (last dim not a multiple of 32, or no dims).
Result<Tensor> empty_tensor(DeviceRuntime& device, DType dtype, const Shape& shape);
// Copy between devices or within one. Both views must have the same dtype and shape;
// non-contiguous views are gathered/scattered through the host (block formats a row of
// whole blocks at a time, f4_e2m1 a nibble at a time); bytes of the destination's buffer
// outside its elements, the other nibble of a shared f4_e2m1 byte included, are kept.
Status copy_tensor(Tensor& dst, const Tensor& src);
// A contiguous host copy of any tensor.
Result<Tensor> to_host(const Tensor& src);

// The addressing contract for kernels: rows are the outer dims collapsed as far as the
// strides allow (at most kMaxOuterDims left), cols the last dim. Element (r, c) is at
// offset + row_offset(r) + c * col_stride. A broadcast input has stride 0 where repeated.
struct RowIndex {
  static constexpr int kMaxOuterDims = 4;
  int outer_dims = 0;
  int64_t size[kMaxOuterDims] = {1, 1, 1, 1};
  int64_t stride[kMaxOuterDims] = {0, 0, 0, 0};
  int64_t rows = 1;
  int64_t cols = 1;
  int64_t col_stride = 1;
  int64_t offset = 0;

  // Element offset of the start of row r (excluding `offset`): one loop over dims, not
  // nested loops, so kernels on every backend share it.
  DNNB_HOST_DEVICE int64_t row_offset(int64_t r) const {
    int64_t off = 0;
    for (int d = outer_dims - 1; d >= 0; --d) {
      off += (r % size[d]) * stride[d];
      r /= size[d];
    }
    return off;
  }
  // Rows are evenly spaced by a single stride (one outer dim after collapsing).
  bool uniform_rows() const { return outer_dims <= 1; }
  int64_t row_stride() const { return outer_dims == 0 ? 0 : stride[outer_dims - 1]; }
};
// Fails (unsupported) only for more than kMaxOuterDims non-collapsible outer dims.
Result<RowIndex> row_index(const Tensor& t);

}  // namespace dnnb
