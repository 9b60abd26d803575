// Bench hooks for OpenCL devices: a device-side delay for the gate's injected-slowdown test and
// the marker timer's lead (OpenCLDevice::enqueue_spin).
// OpenCL C 1.2 has no clock to read inside a kernel, so the delay is a chain of dependent
// multiply-adds in one work-item whose cost per step is measured once per device.
#include <map>
#include <mutex>

#include "core/bench.h"
#include "core/registry.h"
#include "devices/opencl/opencl_device.h"

namespace dnnb {

namespace {

const char* kSpinSource = R"CLC(
__kernel void spin(__global float* sink, int steps) {
  float x = sink[0];
  for (int i = 0; i < steps; ++i) x = mad(x, 0.999999f, 1e-7f);
  sink[0] = x;
}
)CLC";

struct SpinState {
  cl_mem sink = nullptr;
  double seconds_per_step = 0;
};

Status run_spin(OpenCLDevice& cl, cl_kernel kernel, cl_mem sink, int steps) {
  DNNB_CL_TRY(clSetKernelArg(kernel, 0, sizeof(cl_mem), &sink));
  DNNB_CL_TRY(clSetKernelArg(kernel, 1, sizeof(int), &steps));
  const size_t one = 1;
  DNNB_CL_TRY(clEnqueueNDRangeKernel(cl.queue(), kernel, 1, nullptr, &one, &one, 0, nullptr, nullptr));
  return Status::ok();
}

Status enqueue_opencl_delay(DeviceRuntime& device, double seconds) {
  return static_cast<OpenCLDevice&>(device).enqueue_spin(seconds);
}

}  // namespace

Status OpenCLDevice::enqueue_spin(double seconds) {
  static std::mutex mutex;
  static std::map<std::string, SpinState> states;
  std::lock_guard<std::mutex> lock(mutex);
  auto spin = kernel("bench_spin", kSpinSource, "spin");
  if (!spin) return spin.status();
  SpinState& state = states[info().id];
  if (!state.sink) {
    cl_int err = CL_SUCCESS;
    const float zero = 0;
    state.sink = clCreateBuffer(context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(float),
                                const_cast<float*>(&zero), &err);
    DNNB_CL_TRY(err);
    // Calibrate: the device time of a known number of steps (kept for the process).
    auto timer = make_plain_timer();
    constexpr int kSteps = 1 << 20;
    DNNB_TRY(run_spin(*this, *spin, state.sink, kSteps));  // first launch compiles/warms
    DNNB_TRY(timer->start());
    DNNB_TRY(run_spin(*this, *spin, state.sink, kSteps));
    DNNB_TRY(timer->stop());
    auto ms = timer->elapsed_ms();
    if (!ms) return ms.status();
    state.seconds_per_step = *ms * 1e-3 / kSteps;
    if (!(state.seconds_per_step > 0)) return Status::error("OpenCL delay calibration measured no time on " + info().id);
  }
  const double steps = seconds / state.seconds_per_step;
  return run_spin(*this, *spin, state.sink, static_cast<int>(std::min(steps, 2.0e9)));
}

DNNB_REGISTER(register_bench_hooks({DeviceKind::opencl, nullptr, enqueue_opencl_delay}));

}  // namespace dnnb
