// Devices as the core sees them: an id, what they can do, and a runtime that owns memory on
// them. The core includes no CUDA or OpenCL header; devices/ implements these interfaces.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace dnnb {

enum class DeviceKind { cpu, cuda, opencl };
const char* to_string(DeviceKind kind);

struct DeviceInfo {
  std::string id;             // "cpu:0", "cuda:0", "opencl:1.0"
  DeviceKind kind = DeviceKind::cpu;
  std::string name;           // marketing name as the driver reports it
  nlohmann::json capabilities = nlohmann::json::object();
  // Theoretical peaks derived from the query; formulas in docs/devices.md.
  // {"memory_bandwidth_bytes_per_s": x, "flops_per_s": {"f32": x, "bf16": x, ...}, "formula": {...}}
  nlohmann::json peaks = nlohmann::json::object();
};

// {"id", "kind", "name", "capabilities", "peaks"}: one device of `dnnblocks devices --json`.
nlohmann::json to_json(const DeviceInfo& info);

// The theoretical peaks of `info.peaks`: DRAM bandwidth, and FLOP/s of a dtype ("f32", "bf16").
// 0 where the device gave none, or no finite positive number.
double peak_bandwidth_bytes_per_s(const DeviceInfo& info);
double peak_flops_per_s(const DeviceInfo& info, const std::string& dtype);

class DeviceRuntime;

// Memory on one device. `handle` is a host pointer (cpu), a device pointer (cuda) or a
// cl_mem (opencl); only code for that device kind interprets it.
struct Buffer {
  DeviceRuntime* device = nullptr;
  void* handle = nullptr;
  size_t bytes = 0;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
};
using BufferPtr = std::shared_ptr<Buffer>;

// Times work queued on one device: start() and stop() put marks on the device's queue;
// elapsed_ms() waits for the stop mark. CUDA uses events, OpenCL profiling markers, the host
// its steady clock around a synchronisation. `source()` says which, for reports.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  virtual Status start() = 0;
  virtual Status stop() = 0;
  virtual Result<double> elapsed_ms() = 0;
  virtual const char* source() const = 0;
  // After stop(): true when the device may have idled between start() and stop() waiting for
  // the host to queue the work, so the time may include the host's launch path (a GPU timer
  // queues its start mark behind a device-side wait to prevent that; see cuda_timer.cpp).
  virtual bool late() const { return false; }
};

// How long a GPU timer's device-side wait ahead of its start mark lasts (docs/bench.md, "Device
// time only"): twice the host's time for the previous start..stop span, so the host has queued
// the timed work before the device reaches the start mark, whatever the caller times (one
// launch or a batch of hundreds); at least kMinSeconds (a launch and two marks take 5-10 us in
// the GPU machine's VM), at most kMaxSeconds.
class TimerLead {
 public:
  static constexpr double kMinSeconds = 20e-6;
  static constexpr double kMaxSeconds = 0.2;
  double seconds() const { return seconds_; }
  // Call when start() has queued the start mark, and when stop() has queued the stop mark.
  void host_started() { host_start_ = std::chrono::steady_clock::now(); }
  void host_stopped() {
    const double span = std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start_).count();
    seconds_ = std::clamp(2 * span, kMinSeconds, kMaxSeconds);
  }

 private:
  double seconds_ = kMinSeconds;
  std::chrono::steady_clock::time_point host_start_;
};

// One step of DeviceRuntime::run_recorded: its launches, and the earlier steps (indices) whose
// work it must follow (it reads what they write, or writes what they read or write).
struct LaunchStep {
  std::function<Status()> enqueue;
  std::vector<size_t> after;
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual const DeviceInfo& info() const = 0;
  // True when buffers are plain host memory the CPU can dereference.
  virtual bool host_accessible() const { return false; }
  virtual Result<BufferPtr> allocate(size_t bytes) = 0;
  virtual Status upload(Buffer& dst, size_t dst_offset, const void* src, size_t bytes) = 0;
  virtual Status download(void* dst, const Buffer& src, size_t src_offset, size_t bytes) = 0;
  virtual Status synchronize() = 0;
  // Called by ~Buffer; must not throw.
  virtual void release(Buffer& buffer) noexcept = 0;
  // Default: host steady clock around synchronize().
  virtual Result<std::unique_ptr<DeviceTimer>> make_timer();
  // Runs `steps`, each a sequence of launches on this device's queue (no synchronisation, no
  // host state kept per launch), in an order that keeps every step after the earlier steps it
  // names in `after`, so that they can be replayed: a device that records its queue (CUDA
  // graphs) records the steps of the first call with `key` as one graph in which steps that do
  // not follow one another may run side by side, and replays it for every call with that key;
  // the others run the steps one after another each time. `key` names everything the launches
  // depend on (the problem, every buffer and offset they touch).
  virtual Status run_recorded(const std::string& key, const std::vector<LaunchStep>& steps) {
    (void)key;
    for (const LaunchStep& step : steps) DNNB_TRY(step.enqueue());
    return Status::ok();
  }
  // What run_recorded does here, for reports: "" when it runs the steps each time.
  virtual const char* recording() const { return ""; }
};

// Why a kind of device is absent on this machine ("no CUDA device: cudaGetDeviceCount
// returned cudaErrorNoDevice"). Absences are reported, never fatal.
struct DeviceAbsence {
  DeviceKind kind;
  std::string reason;
};

struct DiscoveryResult {
  std::vector<std::unique_ptr<DeviceRuntime>> devices;
  std::vector<DeviceAbsence> absences;
};

// devices/ registers one provider per kind (static registration in an OBJECT library).
struct DeviceProvider {
  DeviceKind kind;
  std::function<void(DiscoveryResult&)> discover;
};
bool register_device_provider(DeviceProvider provider);

// The devices of this machine, discovered once on first use, in kind order (cpu, cuda, opencl).
class DeviceSet {
 public:
  static DeviceSet& instance();
  const std::vector<std::unique_ptr<DeviceRuntime>>& devices() const { return result_.devices; }
  const std::vector<DeviceAbsence>& absences() const { return result_.absences; }
  DeviceRuntime* find(const std::string& id) const;
  // The first device of a kind, or nullptr.
  DeviceRuntime* first(DeviceKind kind) const;
  std::vector<DeviceRuntime*> of_kind(DeviceKind kind) const;
  // Reason a kind has no device, or "" if it has one.
  std::string absence_reason(DeviceKind kind) const;

 private:
  DeviceSet();
  DiscoveryResult result_;
};

// The host runtime (cpu:0) is always present; devices/ fills its info via the cpu provider.
}  // namespace dnnb
