// The OpenCL runtime of one device (opencl:P.D): context, in-order queue with profiling, and the
// programs built for it: each (name, options, source) is built once per process, and from the
// on-disk binary cache (opencl_program_cache.h) where an earlier process built it.
#pragma once
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <map>
#include <mutex>
#include <string>

#include "core/device.h"
#include "devices/opencl/opencl_program_cache.h"

namespace dnnb {

const char* opencl_error_name(cl_int err);
Status opencl_status(cl_int err, const char* call, const char* file, int line);
#define DNNB_CL_TRY(call)                                                             \
  do {                                                                                \
    cl_int dnnb_cl_err_ = (call);                                                     \
    if (dnnb_cl_err_ != CL_SUCCESS) return ::dnnb::opencl_status(dnnb_cl_err_, #call, __FILE__, __LINE__); \
  } while (0)

class OpenCLDevice final : public DeviceRuntime {
 public:
  OpenCLDevice(cl_platform_id platform, cl_device_id device, DeviceInfo info);
  ~OpenCLDevice() override;
  // Creates the context and the profiling queue; discovery calls it once and reports a
  // device whose init fails as an absence.
  Status init();
  const DeviceInfo& info() const override { return info_; }
  Result<BufferPtr> allocate(size_t bytes) override;
  Status upload(Buffer& dst, size_t dst_offset, const void* src, size_t bytes) override;
  Status download(void* dst, const Buffer& src, size_t src_offset, size_t bytes) override;
  Status synchronize() override;
  void release(Buffer& buffer) noexcept override;
  // Profiled marker events on queue(), queued behind a device-side wait (opencl_timer.cpp).
  Result<std::unique_ptr<DeviceTimer>> make_timer() override;
  // The same markers with no wait ahead (what enqueue_spin calibrates with).
  std::unique_ptr<DeviceTimer> make_plain_timer();
  // A one-work-item kernel on queue() that runs for about `seconds` (a chain of dependent
  // multiply-adds whose cost per step is measured once per device: OpenCL C 1.2 has no clock).
  Status enqueue_spin(double seconds);

  cl_context context() const { return context_; }
  cl_device_id device_id() const { return device_; }
  cl_command_queue queue() const { return queue_; }
  bool has_extension(const std::string& name) const;
  size_t max_work_group_size() const { return max_work_group_size_; }
  size_t local_mem_size() const { return local_mem_size_; }
  // A device buffer of at least `bytes`, reused between calls (for per-row partials that a
  // second kernel reduces). Valid until the next scratch() call on this device.
  Result<cl_mem> scratch(size_t bytes);
  // Builds `source` with `options` once per device and process (kept by name, options and source
  // length), from the on-disk cache's binary where it has a valid one, else from source (then
  // saving the binary there). A failed source build returns an error whose message holds the
  // full build log; it is not kept. from_source: skip the on-disk cache for this build (the
  // program dump wants the compiler's own log).
  Result<cl_program> program(const std::string& name, const std::string& source, const std::string& options = "",
                             bool from_source = false);
  // A kernel object from a cached program (created once, cached; not thread-safe to share
  // between concurrent launches, which the harness never does).
  Result<cl_kernel> kernel(const std::string& program_name, const std::string& source,
                           const std::string& kernel_name, const std::string& options = "");
  ProgramCacheStats program_cache_stats() const;

 private:
  cl_platform_id platform_;
  cl_device_id device_;
  DeviceInfo info_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  size_t max_work_group_size_ = 0;
  size_t local_mem_size_ = 0;
  std::string extensions_;
  std::string binary_identity_;  // opencl_binary_identity(), part of every cache key
  bool platform_caches_builds_ = false;  // opencl_platform_caches_builds()
  mutable std::mutex mutex_;
  std::map<std::string, cl_program> programs_;
  std::map<std::string, cl_kernel> kernels_;
  ProgramCacheStats cache_stats_;
  cl_mem scratch_ = nullptr;
  size_t scratch_bytes_ = 0;

  // clCreateProgramWithBinary + clBuildProgram; nullptr when the driver refuses the binary.
  cl_program program_from_binary(const std::string& binary, const std::string& options);
};

}  // namespace dnnb
