// OpenCL timing: profiled marker commands on the in-order queue bracket the launches, so the
// time is the device's (CL_PROFILING_COMMAND_END of the start and stop markers).
#include "devices/opencl/opencl_device.h"

namespace dnnb {

namespace {
class OpenCLMarkerTimer final : public DeviceTimer {
 public:
  explicit OpenCLMarkerTimer(cl_command_queue queue) : queue_(queue) {}
  ~OpenCLMarkerTimer() override { reset(); }
  Status start() override {
    reset();
    DNNB_CL_TRY(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &start_));
    return Status::ok();
  }
  Status stop() override {
    DNNB_CL_TRY(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &stop_));
    return Status::ok();
  }
  Result<double> elapsed_ms() override {
    if (!start_ || !stop_) return Status::error("opencl timer: elapsed_ms() before start() and stop()");
    DNNB_CL_TRY(clWaitForEvents(1, &stop_));
    cl_ulong t0 = 0, t1 = 0;
    DNNB_CL_TRY(clGetEventProfilingInfo(start_, CL_PROFILING_COMMAND_END, sizeof t0, &t0, nullptr));
    DNNB_CL_TRY(clGetEventProfilingInfo(stop_, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr));
    return static_cast<double>(t1 - t0) * 1e-6;
  }
  const char* source() const override { return "opencl-profiling-markers"; }

 private:
  void reset() {
    if (start_) clReleaseEvent(start_);
    if (stop_) clReleaseEvent(stop_);
    start_ = stop_ = nullptr;
  }
  cl_command_queue queue_;
  cl_event start_ = nullptr;
  cl_event stop_ = nullptr;
};
}  // namespace

Result<std::unique_ptr<DeviceTimer>> OpenCLDevice::make_timer() {
  return std::unique_ptr<DeviceTimer>(std::make_unique<OpenCLMarkerTimer>(queue()));
}

}  // namespace dnnb
