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

}  // namespace dnnb
