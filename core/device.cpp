#include "core/device.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace dnnb {

nlohmann::json to_json(const DeviceInfo& info) {
  return {{"id", info.id}, {"kind", to_string(info.kind)}, {"name", info.name},
          {"capabilities", info.capabilities}, {"peaks", info.peaks}};
}

namespace {
double positive_number(const nlohmann::json& table, const std::string& key) {
  if (!table.is_object()) return 0;
  auto it = table.find(key);
  if (it == table.end() || !it->is_number()) return 0;
  const double v = it->get<double>();
  return std::isfinite(v) && v > 0 ? v : 0;
}
}  // namespace

double peak_bandwidth_bytes_per_s(const DeviceInfo& info) {
  return positive_number(info.peaks, "memory_bandwidth_bytes_per_s");
}
double peak_flops_per_s(const DeviceInfo& info, const std::string& dtype) {
  if (!info.peaks.is_object() || !info.peaks.contains("flops_per_s")) return 0;
  return positive_number(info.peaks["flops_per_s"], dtype);
}


const char* to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::cuda: return "cuda";
    case DeviceKind::opencl: return "opencl";
  }
  return "?";
}

Buffer::~Buffer() {
  if (device != nullptr && handle != nullptr) device->release(*this);
}

namespace {
class HostClockTimer final : public DeviceTimer {
 public:
  explicit HostClockTimer(DeviceRuntime& device) : device_(device) {}
  Status start() override {
    DNNB_TRY(device_.synchronize());
    start_ = std::chrono::steady_clock::now();
    return Status::ok();
  }
  Status stop() override {
    DNNB_TRY(device_.synchronize());
    stop_ = std::chrono::steady_clock::now();
    return Status::ok();
  }
  Result<double> elapsed_ms() override { return std::chrono::duration<double, std::milli>(stop_ - start_).count(); }
  const char* source() const override { return "host-clock"; }

 private:
  DeviceRuntime& device_;
  std::chrono::steady_clock::time_point start_, stop_;
};

std::vector<DeviceProvider>& providers() {
  static std::vector<DeviceProvider> list;
  return list;
}
}  // namespace

Result<std::unique_ptr<DeviceTimer>> DeviceRuntime::make_timer() {
  return std::unique_ptr<DeviceTimer>(std::make_unique<HostClockTimer>(*this));
}

bool register_device_provider(DeviceProvider provider) {
  providers().push_back(std::move(provider));
  return true;
}

DeviceSet& DeviceSet::instance() {
  static DeviceSet set;
  return set;
}

DeviceSet::DeviceSet() {
  auto list = providers();
  std::stable_sort(list.begin(), list.end(), [](const DeviceProvider& a, const DeviceProvider& b) {
    return static_cast<int>(a.kind) < static_cast<int>(b.kind);
  });
  for (const auto& provider : list) provider.discover(result_);
}

DeviceRuntime* DeviceSet::find(const std::string& id) const {
  for (const auto& d : result_.devices)
    if (d->info().id == id) return d.get();
  return nullptr;
}

DeviceRuntime* DeviceSet::first(DeviceKind kind) const {
  for (const auto& d : result_.devices)
    if (d->info().kind == kind) return d.get();
  return nullptr;
}

std::vector<DeviceRuntime*> DeviceSet::of_kind(DeviceKind kind) const {
  std::vector<DeviceRuntime*> out;
  for (const auto& d : result_.devices)
    if (d->info().kind == kind) out.push_back(d.get());
  return out;
}

std::string DeviceSet::absence_reason(DeviceKind kind) const {
  if (first(kind) != nullptr) return "";
  std::string reason;
  for (const auto& a : result_.absences)
    if (a.kind == kind) reason += (reason.empty() ? "" : "; ") + a.reason;
  if (reason.empty()) reason = std::string("no ") + to_string(kind) + " support compiled into this build";
  return reason;
}

}  // namespace dnnb
