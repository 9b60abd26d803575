// Bench hooks for CUDA devices: the SM clock and throttle state per repetition (NVML, loaded
// at run time so a machine without the driver's NVML still runs), and a device-side delay
// for the gate's injected-slowdown test and the event timer's lead (a one-thread kernel spinning
// on %globaltimer).
#include <dlfcn.h>

#include <mutex>

#include "core/bench.h"
#include "devices/cuda/cuda_device.h"

namespace dnnb {

namespace {

// The few NVML entry points used, declared here (nvml.h types) so no NVML link is needed.
using nvml_device = struct nvml_device_opaque*;
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;
// Reasons that mean the clock was held down by power or heat (nvmlClocksEventReason*):
// SwPowerCap 0x4, HwSlowdown 0x8, SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrake 0x80.
constexpr unsigned long long kThrottleReasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

struct Nvml {
  bool loaded = false;
  std::string why_not;
  int (*init)() = nullptr;
  int (*by_pci)(const char*, nvml_device*) = nullptr;
  int (*clock)(nvml_device, int, unsigned*) = nullptr;
  int (*max_clock)(nvml_device, int, unsigned*) = nullptr;
  int (*reasons)(nvml_device, unsigned long long*) = nullptr;
};

const Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      n.why_not = "libnvidia-ml.so.1 not found";
      return;
    }
    n.init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    n.by_pci = reinterpret_cast<int (*)(const char*, nvml_device*)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.clock = reinterpret_cast<int (*)(nvml_device, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    n.max_clock = reinterpret_cast<int (*)(nvml_device, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    n.reasons = reinterpret_cast<int (*)(nvml_device, unsigned long long*)>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!n.reasons)
      n.reasons = reinterpret_cast<int (*)(nvml_device, unsigned long long*)>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    if (!n.init || !n.by_pci || !n.clock || !n.max_clock || !n.reasons) {
      n.why_not = "libnvidia-ml.so.1 lacks an entry point used here";
      return;
    }
    const int rc = n.init();
    if (rc != kNvmlSuccess) {
      n.why_not = "nvmlInit_v2 returned " + std::to_string(rc);
      return;
    }
    n.loaded = true;
  });
  return n;
}

Result<ClockSample> read_cuda_clock(DeviceRuntime& device) {
  const Nvml& n = nvml();
  if (!n.loaded) return Status::skipped("no SM clock: " + n.why_not);
  const auto& caps = device.info().capabilities;
  if (!caps.contains("pci_bus_id") || !caps["pci_bus_id"].is_string()) return Status::skipped("no SM clock: no PCI bus id");
  nvml_device handle = nullptr;
  const std::string pci = caps["pci_bus_id"].get<std::string>();
  if (n.by_pci(pci.c_str(), &handle) != kNvmlSuccess) return Status::skipped("no SM clock: NVML does not know " + pci);
  unsigned mhz = 0, max_mhz = 0;
  unsigned long long reasons = 0;
  if (n.clock(handle, kNvmlClockSm, &mhz) != kNvmlSuccess || n.max_clock(handle, kNvmlClockSm, &max_mhz) != kNvmlSuccess ||
      n.reasons(handle, &reasons) != kNvmlSuccess)
    return Status::skipped("no SM clock: an NVML query failed");
  return ClockSample{double(mhz), double(max_mhz), (reasons & kThrottleReasons) != 0};
}

__global__ void spin_kernel(unsigned long long nanoseconds) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

Status enqueue_cuda_delay(DeviceRuntime& device, double seconds) {
  auto& cuda = static_cast<CudaDevice&>(device);
  DNNB_TRY(cuda.activate());
  return cuda.enqueue_spin(static_cast<unsigned long long>(seconds * 1e9));
}

}  // namespace

Status CudaDevice::enqueue_spin(unsigned long long nanoseconds) const {
  spin_kernel<<<1, 1, 0, stream_>>>(nanoseconds);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

DNNB_REGISTER(register_bench_hooks({DeviceKind::cuda, read_cuda_clock, enqueue_cuda_delay}));

}  // namespace dnnb
