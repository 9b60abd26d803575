#include "core/host_device.h"

#include <cstdlib>
#include <cstring>

namespace dnnb {

namespace {
// 64-byte alignment: one cache line, one AVX-512 vector.
constexpr size_t kAlignment = 64;
}

Result<BufferPtr> HostDevice::allocate(size_t bytes) {
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) return DNNB_ERROR("host allocation of " + std::to_string(bytes) + " bytes failed");
  auto buffer = std::make_shared<Buffer>();
  buffer->device = this;
  buffer->handle = p;
  buffer->bytes = bytes;
  return buffer;
}

Status HostDevice::upload(Buffer& dst, size_t dst_offset, const void* src, size_t bytes) {
  if (dst_offset + bytes > dst.bytes) return DNNB_ERROR("host upload past the end of the buffer");
  std::memcpy(static_cast<char*>(dst.handle) + dst_offset, src, bytes);
  return Status::ok();
}

Status HostDevice::download(void* dst, const Buffer& src, size_t src_offset, size_t bytes) {
  if (src_offset + bytes > src.bytes) return DNNB_ERROR("host download past the end of the buffer");
  std::memcpy(dst, static_cast<const char*>(src.handle) + src_offset, bytes);
  return Status::ok();
}

void HostDevice::release(Buffer& buffer) noexcept {
  std::free(buffer.handle);
  buffer.handle = nullptr;
}

HostDevice& scratch_host() {
  static HostDevice host(DeviceInfo{"host", DeviceKind::cpu, "host scratch", {}, {}});
  return host;
}

}  // namespace dnnb
