#include "core/host_device.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace dnnb {

namespace {
// 64-byte alignment: one cache line, one AVX-512 vector.
constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t(2) << 20;
}  // namespace

Result<void*> allocate_host_memory(size_t bytes, bool huge, std::string* pages) {
  huge = huge && bytes >= kHugePage;
  const size_t align = huge ? kHugePage : kAlignment;
  if (bytes > SIZE_MAX - align) return DNNB_ERROR("host allocation of " + std::to_string(bytes) + " bytes is too large");
  const size_t rounded = std::max((bytes + align - 1) / align * align, align);
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) return DNNB_ERROR("host allocation of " + std::to_string(bytes) + " bytes failed");
  std::string asked = "4 KiB pages";
#if defined(__linux__)
  if (huge) {
    // Advice only: a kernel with THP off refuses it, and the memory stays on 4 KiB pages.
    asked = madvise(p, rounded, MADV_HUGEPAGE) == 0
                  ? "2 MiB pages requested"
                  : std::string("4 KiB pages (madvise(MADV_HUGEPAGE): ") + std::strerror(errno) + ")";
  }
#endif
  if (pages != nullptr) *pages = asked;
  return p;
}

bool host_huge_pages_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("DNNB_HOST_HUGE_PAGES");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  return enabled;
}

Result<BufferPtr> HostDevice::allocate(size_t bytes) {
  auto p = allocate_host_memory(bytes, host_huge_pages_enabled());
  if (!p) return p.status();
  auto buffer = std::make_shared<Buffer>();
  buffer->device = this;
  buffer->handle = *p;
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
