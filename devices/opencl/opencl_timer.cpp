// OpenCL timing: profiled marker commands on the in-order queue bracket the launches, so the
// time is the device's (CL_PROFILING_COMMAND_END of the start and stop markers).
//
// As on CUDA (devices/cuda/cuda_timer.cpp says why), the start marker is queued behind a
// device-side wait (OpenCLDevice::enqueue_spin) of twice the host's previous start..stop span
// (TimerLead, core/device.h),
// so that a driver that submits each command at once has the whole batch queued before the
// device reaches the start marker; one that holds commands until the flush submits them
// together either way. stop() asks whether the start marker had already completed before the
// flush (late(): the device may have waited for the host inside the timed span).
#include "devices/opencl/opencl_device.h"

namespace dnnb {

namespace {
class OpenCLMarkerTimer final : public DeviceTimer {
 public:
  // lead_device == nullptr: no wait ahead of the start marker.
  OpenCLMarkerTimer(OpenCLDevice* lead_device, cl_command_queue queue) : lead_device_(lead_device), queue_(queue) {}
  ~OpenCLMarkerTimer() override { reset(); }
  Status start() override {
    reset();
    if (lead_device_ != nullptr) DNNB_TRY(lead_device_->enqueue_spin(lead_.seconds()));
    DNNB_CL_TRY(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &start_));
    lead_.host_started();
    return Status::ok();
  }
  Status stop() override {
    DNNB_CL_TRY(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &stop_));
    if (lead_device_ != nullptr) {
      lead_.host_stopped();
      cl_int status = CL_QUEUED;
      DNNB_CL_TRY(clGetEventInfo(start_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
      late_ = status == CL_COMPLETE;
    }
    DNNB_CL_TRY(clFlush(queue_));
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
  bool late() const override { return late_; }

 private:
  void reset() {
    if (start_) clReleaseEvent(start_);
    if (stop_) clReleaseEvent(stop_);
    start_ = stop_ = nullptr;
  }
  OpenCLDevice* lead_device_;
  cl_command_queue queue_;
  cl_event start_ = nullptr;
  cl_event stop_ = nullptr;
  TimerLead lead_;
  bool late_ = false;
};
}  // namespace

Result<std::unique_ptr<DeviceTimer>> OpenCLDevice::make_timer() {
  return std::unique_ptr<DeviceTimer>(std::make_unique<OpenCLMarkerTimer>(this, queue()));
}

std::unique_ptr<DeviceTimer> OpenCLDevice::make_plain_timer() {
  return std::make_unique<OpenCLMarkerTimer>(nullptr, queue());
}

}  // namespace dnnb
