#include "core/tensor.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <sstream>

#include "core/host_device.h"

namespace dnnb {

std::string shape_to_string(const Shape& shape) {
  if (shape.empty()) return "1";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

Result<Shape> parse_shape(const std::string& text) {
  Shape shape;
  if (text.empty()) return Status::bad_input("empty shape");
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('x', start);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(start, end - start);
    if (part.empty() || part.size() > 12 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return Status::bad_input("shape '" + text + "': '" + part + "' is not a dimension");
    shape.push_back(std::stoll(part));
    start = end + 1;
  }
  return shape;
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

Result<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      return Status::bad_input("shapes " + shape_to_string(a) + " and " + shape_to_string(b) +
                               " do not broadcast");
    out[i] = std::max(da, db);
  }
  return out;
}

bool Tensor::is_contiguous() const { return strides == contiguous_strides(shape); }

Status Tensor::check_storage_layout() const {
  if (is_block_format(dtype)) {
    const int64_t block = block_values(dtype);
    const auto refuse = [&](const std::string& why) {
      return Status::unsupported("tensor " + describe() + ": " + why + " (a " + dtype_name(dtype) +
                                 " row is whole " + std::to_string(block) + "-value blocks)");
    };
    if (ndim() == 0) return refuse("no last dim");
    if (shape.back() % block != 0) return refuse("last dim is not a multiple of " + std::to_string(block));
    if (shape.back() > 0 && strides.back() != 1) return refuse("last dim is not contiguous");
    if (offset % block != 0) return refuse("offset is not a multiple of " + std::to_string(block));
    for (int d = 0; d + 1 < ndim(); ++d)
      if (shape[d] > 1 && strides[d] % block != 0)
        return refuse("stride of dim " + std::to_string(d) + " is not a multiple of " + std::to_string(block));
  } else if (!starts_storage_unit(dtype, offset)) {
    return Status::unsupported("tensor " + describe() + ": offset " + std::to_string(offset) +
                               " falls inside a byte of " + dtype_name(dtype));
  }
  return Status::ok();
}

int64_t Tensor::storage_span() const {
  if (numel() == 0) return 0;
  int64_t last = 0;
  for (int d = 0; d < ndim(); ++d) last += (shape[d] - 1) * strides[d];
  return last + 1;
}

std::string Tensor::describe() const {
  std::string s = shape_to_string(shape) + ":";
  for (size_t i = 0; i < strides.size(); ++i) s += (i ? "x" : "") + std::to_string(strides[i]);
  if (strides.empty()) s += "1";
  return s + "+" + std::to_string(offset) + " " + dtype_name(dtype);
}

Result<Tensor> Tensor::permute(const std::vector<int>& dims) const {
  if (static_cast<int>(dims.size()) != ndim()) return Status::bad_input("permute: wrong number of dims");
  std::vector<bool> seen(ndim(), false);
  Tensor t = *this;
  for (int i = 0; i < ndim(); ++i) {
    int d = dims[i];
    if (d < 0 || d >= ndim() || seen[d]) return Status::bad_input("permute: dims is not a permutation");
    seen[d] = true;
    t.shape[i] = shape[d];
    t.strides[i] = strides[d];
  }
  DNNB_TRY(t.check_storage_layout());
  return t;
}

Result<Tensor> Tensor::transpose(int dim0, int dim1) const {
  if (dim0 < 0 || dim0 >= ndim() || dim1 < 0 || dim1 >= ndim())
    return Status::bad_input("transpose: dim out of range");
  std::vector<int> dims(ndim());
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[dim0], dims[dim1]);
  return permute(dims);
}

Result<Tensor> Tensor::slice(int dim, int64_t start, int64_t length) const {
  if (dim < 0 || dim >= ndim()) return Status::bad_input("slice: dim out of range");
  if (start < 0 || length < 0 || start + length > shape[dim])
    return Status::bad_input("slice: [" + std::to_string(start) + ", +" + std::to_string(length) +
                             ") outside dim of size " + std::to_string(shape[dim]));
  Tensor t = *this;
  t.offset += start * strides[dim];
  t.shape[dim] = length;
  DNNB_TRY(t.check_storage_layout());
  return t;
}

Result<Tensor> Tensor::reshape(const Shape& new_shape) const {
  if (!is_contiguous()) return Status::unsupported("reshape of a non-contiguous view needs a copy");
  if (shape_numel(new_shape) != numel())
    return Status::bad_input("reshape: " + shape_to_string(shape) + " to " + shape_to_string(new_shape));
  Tensor t = *this;
  t.shape = new_shape;
  t.strides = contiguous_strides(new_shape);
  DNNB_TRY(t.check_storage_layout());
  return t;
}

bool Tensor::can_broadcast_to(const Shape& target) const {
  if (shape.size() > target.size()) return false;
  size_t lead = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != target[lead + i] && shape[i] != 1) return false;
  return true;
}

Result<Tensor> Tensor::broadcast_to(const Shape& target) const {
  if (!can_broadcast_to(target))
    return Status::bad_input("cannot broadcast " + shape_to_string(shape) + " to " + shape_to_string(target));
  Tensor t = *this;
  size_t lead = target.size() - shape.size();
  t.shape = target;
  t.strides.assign(target.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i)
    t.strides[lead + i] = (shape[i] == target[lead + i] && shape[i] != 1) ? strides[i] : 0;
  DNNB_TRY(t.check_storage_layout());
  return t;
}

void* Tensor::host_data() const {
  if (!buffer || buffer->device == nullptr || !buffer->device->host_accessible()) return nullptr;
  if (!starts_storage_unit(dtype, offset)) return nullptr;
  return static_cast<char*>(buffer->handle) + storage_bytes(dtype, offset);
}

Result<Tensor> empty_tensor(DeviceRuntime& device, DType dtype, const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) return Status::bad_input("negative dimension in " + shape_to_string(shape));
  if (is_block_format(dtype) && (shape.empty() || shape.back() % block_values(dtype) != 0))
    return Status::bad_input(std::string(dtype_name(dtype)) + " tensor of shape " + shape_to_string(shape) +
                             ": its last dim must be a multiple of the " +
                             std::to_string(block_values(dtype)) + "-value block");
  auto buffer = device.allocate(storage_bytes(dtype, shape_numel(shape)));
  if (!buffer) return buffer.status();
  Tensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = contiguous_strides(shape);
  t.buffer = *buffer;
  return t;
}

namespace {
// Copies n values of `dtype` from value si of `src` to value di of `dst` (both counted from a
// storage-unit start). Whole-byte dtypes and whole blocks are bytes; f4_e2m1 moves nibble by
// nibble (element 2k in the low nibble), keeping the other nibble of each byte it writes.
void copy_values(DType dtype, const uint8_t* src, int64_t si, uint8_t* dst, int64_t di, int64_t n) {
  if (dtype != DType::f4_e2m1) {
    std::memcpy(dst + storage_bytes(dtype, di), src + storage_bytes(dtype, si), storage_bytes(dtype, n));
    return;
  }
  for (int64_t k = 0; k < n; ++k) {
    const int64_t from = si + k, to = di + k;
    const uint8_t code = (src[from / 2] >> (4 * (from % 2))) & 0x0F;
    const int shift = static_cast<int>(4 * (to % 2));
    dst[to / 2] = static_cast<uint8_t>((dst[to / 2] & ~(0x0F << shift)) | (code << shift));
  }
}

// Gather a host view into contiguous storage, one row at a time: a unit-stride row (every
// row of a block format) in one copy, otherwise value by value.
void gather_rows(const Tensor& src, const RowIndex& ri, uint8_t* dst) {
  const auto* base = static_cast<const uint8_t*>(src.buffer->handle);
  for (int64_t r = 0; r < ri.rows; ++r) {
    const int64_t row = ri.offset + ri.row_offset(r);
    if (ri.col_stride == 1) {
      copy_values(src.dtype, base, row, dst, r * ri.cols, ri.cols);
      continue;
    }
    for (int64_t c = 0; c < ri.cols; ++c) copy_values(src.dtype, base, row + c * ri.col_stride, dst, r * ri.cols + c, 1);
  }
}
void scatter_rows(const Tensor& dst, const RowIndex& ri, const uint8_t* src) {
  auto* base = static_cast<uint8_t*>(dst.buffer->handle);
  for (int64_t r = 0; r < ri.rows; ++r) {
    const int64_t row = ri.offset + ri.row_offset(r);
    if (ri.col_stride == 1) {
      copy_values(dst.dtype, src, r * ri.cols, base, row, ri.cols);
      continue;
    }
    for (int64_t c = 0; c < ri.cols; ++c) copy_values(dst.dtype, src, r * ri.cols + c, base, row + c * ri.col_stride, 1);
  }
}
}  // namespace

Result<Tensor> to_host(const Tensor& src) {
  auto host = empty_tensor(scratch_host(), src.dtype, src.shape);
  if (!host) return host.status();
  DNNB_TRY(copy_tensor(*host, src));
  return host;
}

Status copy_tensor(Tensor& dst, const Tensor& src) {
  if (dst.dtype != src.dtype || dst.shape != src.shape)
    return Status::bad_input("copy_tensor: " + src.describe() + " into " + dst.describe());
  if (!dst.buffer || !src.buffer) return Status::bad_input("copy_tensor: tensor without a buffer");
  DNNB_TRY(src.check_storage_layout());
  DNNB_TRY(dst.check_storage_layout());
  const DType dtype = src.dtype;
  const size_t bytes = storage_bytes(dtype, src.numel());
  if (bytes == 0) return Status::ok();
  DeviceRuntime& sdev = *src.buffer->device;
  DeviceRuntime& ddev = *dst.buffer->device;
  // Stage 1: contiguous host bytes of src.
  std::vector<uint8_t> staging(bytes);
  if (src.is_contiguous()) {
    DNNB_TRY(sdev.download(staging.data(), *src.buffer, storage_bytes(dtype, src.offset), bytes));
  } else {
    auto ri = row_index(src);
    if (!ri) return ri.status();
    if (sdev.host_accessible()) {
      gather_rows(src, *ri, staging.data());
    } else {
      // Download the whole span, then gather on the host.
      Tensor span = src;
      std::vector<uint8_t> raw(storage_bytes(dtype, src.storage_span()));
      DNNB_TRY(sdev.download(raw.data(), *src.buffer, storage_bytes(dtype, src.offset), raw.size()));
      HostDevice& host = scratch_host();
      auto tmp = host.allocate(raw.size());
      if (!tmp) return tmp.status();
      std::memcpy((*tmp)->handle, raw.data(), raw.size());
      span.buffer = *tmp;
      span.offset = 0;
      auto ri2 = row_index(span);
      gather_rows(span, *ri2, staging.data());
    }
  }
  // Stage 2: into dst. A contiguous run of whole bytes is one upload; an f4_e2m1 run of odd
  // length ends inside a byte, so it goes through the read-modify-write below.
  if (dst.is_contiguous() && starts_storage_unit(dtype, dst.numel()))
    return ddev.upload(*dst.buffer, storage_bytes(dtype, dst.offset), staging.data(), bytes);
  auto ri = row_index(dst);
  if (!ri) return ri.status();
  if (ddev.host_accessible()) {
    scatter_rows(dst, *ri, staging.data());
    return Status::ok();
  }
  // Read-modify-write the span so that bytes between rows (padding, guards) are kept.
  std::vector<uint8_t> raw(storage_bytes(dtype, dst.storage_span()));
  DNNB_TRY(ddev.download(raw.data(), *dst.buffer, storage_bytes(dtype, dst.offset), raw.size()));
  HostDevice& host = scratch_host();
  auto tmp = host.allocate(raw.size());
  if (!tmp) return tmp.status();
  std::memcpy((*tmp)->handle, raw.data(), raw.size());
  Tensor span = dst;
  span.buffer = *tmp;
  span.offset = 0;
  auto ri2 = row_index(span);
  scatter_rows(span, *ri2, staging.data());
  return ddev.upload(*dst.buffer, storage_bytes(dtype, dst.offset), (*tmp)->handle, raw.size());
}

Result<RowIndex> row_index(const Tensor& t) {
  RowIndex ri;
  ri.offset = t.offset;
  if (t.ndim() == 0) return ri;
  ri.cols = t.shape.back();
  ri.col_stride = t.strides.back();
  // Outer dims, dropping size-1 dims and merging d into d+1 when stride[d] == size[d+1]*stride[d+1].
  std::vector<std::pair<int64_t, int64_t>> dims;  // (size, stride), outermost first
  for (int d = 0; d + 1 < t.ndim(); ++d) {
    if (t.shape[d] == 1) continue;
    dims.push_back({t.shape[d], t.strides[d]});
  }
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (auto& d : dims) {
    if (!merged.empty() && merged.back().second == d.first * d.second) {
      merged.back().first *= d.first;
      merged.back().second = d.second;
    } else {
      merged.push_back(d);
    }
  }
  if (static_cast<int>(merged.size()) > RowIndex::kMaxOuterDims)
    return Status::unsupported("tensor " + t.describe() + " has more than " +
                               std::to_string(RowIndex::kMaxOuterDims) + " non-collapsible outer dims");
  ri.outer_dims = static_cast<int>(merged.size());
  ri.rows = 1;
  for (int i = 0; i < ri.outer_dims; ++i) {
    ri.size[i] = merged[i].first;
    ri.stride[i] = merged[i].second;
    ri.rows *= merged[i].first;
  }
  return ri;
}

}  // namespace dnnb
