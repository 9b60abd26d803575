// The host as a device: plain aligned memory. cpu:0's runtime; devices/ fills its info.
#pragma once
#include "core/device.h"

namespace dnnb {

class HostDevice final : public DeviceRuntime {
 public:
  explicit HostDevice(DeviceInfo info) : info_(std::move(info)) {}
  const DeviceInfo& info() const override { return info_; }
  bool host_accessible() const override { return true; }
  Result<BufferPtr> allocate(size_t bytes) override;
  Status upload(Buffer& dst, size_t dst_offset, const void* src, size_t bytes) override;
  Status download(void* dst, const Buffer& src, size_t src_offset, size_t bytes) override;
  Status synchronize() override { return Status::ok(); }
  void release(Buffer& buffer) noexcept override;

 private:
  DeviceInfo info_;
};

// A host runtime usable before/without discovery (tests, file loading).
HostDevice& scratch_host();

// Host memory for tensors and probe buffers, released with std::free. 64-byte aligned (a
// line, an AVX-512 vector); an allocation of 2 MiB or more is 2 MiB aligned and asked for on
// transparent huge pages (madvise) when `huge` is set. Why: with 4 KiB pages a stream takes a
// page walk every 4 KiB, two-level walks under a hypervisor (the CPU probes of
// devices/cpu/cpu_ceilings.cpp ask for them). `pages`, when given, gets what was asked for in
// words, for a probe's how line.
Result<void*> allocate_host_memory(size_t bytes, bool huge, std::string* pages = nullptr);

// Whether tensors on cpu:0 ask for huge pages: only with DNNB_HOST_HUGE_PAGES=1. Off by
// default: on the GPU machine's VM two interleaved rounds gave no consistent gain (sum f32 and
// rmsnorm f32 faster, cross_entropy f32 slower; docs/avx512.md, "Sixth round").
bool host_huge_pages_enabled();

}  // namespace dnnb
