#include "devices/cpu/device_report.h"

#include <algorithm>
#include <cstdio>

// Set on this target by devices/CMakeLists.txt from the configure-time backend switches.
#ifndef DNNB_BUILD_CUDA
#define DNNB_BUILD_CUDA 0
#endif
#ifndef DNNB_BUILD_OPENCL
#define DNNB_BUILD_OPENCL 0
#endif
#ifndef DNNB_BUILD_ONEDNN
#define DNNB_BUILD_ONEDNN 0
#endif
#ifndef DNNB_BUILD_VERSION
#define DNNB_BUILD_VERSION "unknown"
#endif

namespace dnnb {

namespace {

using nlohmann::json;

constexpr DeviceKind kAllKinds[] = {DeviceKind::cpu, DeviceKind::cuda, DeviceKind::opencl};

bool compiled_in(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cpu: return true;
    case DeviceKind::cuda: return DNNB_BUILD_CUDA != 0;
    case DeviceKind::opencl: return DNNB_BUILD_OPENCL != 0;
  }
  return false;
}

std::string compiled_out_reason(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cuda:
      return "this build has no CUDA support (configured with DNNB_CUDA=OFF, or AUTO found no "
             "CUDA toolkit)";
    case DeviceKind::opencl:
      return "this build has no OpenCL support (configured with DNNB_OPENCL=OFF, or AUTO found "
             "no OpenCL headers and loader)";
    case DeviceKind::cpu: break;
  }
  return "this build has no cpu device provider";
}

std::string peak_cell(const json& peaks, const char* dtype) {
  if (!peaks.contains("flops_per_s")) return "-";
  const json& flops = peaks["flops_per_s"];
  if (!flops.contains(dtype) || !flops[dtype].is_number()) return "-";
  return si_prefixed(flops[dtype].get<double>()) + "FLOP/s";
}

std::string bandwidth_cell(const json& peaks) {
  auto it = peaks.find("memory_bandwidth_bytes_per_s");
  if (it == peaks.end() || !it->is_number()) return "unknown";
  return si_prefixed(it->get<double>()) + "B/s";
}

// The capability line under a row: the provider's "summary" if it wrote one, otherwise the
// scalar capabilities in order (so a provider without a summary still shows something).
std::string summary_of(const json& caps) {
  auto it = caps.find("summary");
  if (it != caps.end() && it->is_string()) return it->get<std::string>();
  std::string line;
  for (auto item = caps.begin(); item != caps.end(); ++item) {
    if (item->is_structured()) continue;
    std::string value = item->is_string() ? item->get<std::string>() : item->dump();
    line += (line.empty() ? "" : ", ") + item.key() + "=" + value;
    if (line.size() > 160) break;
  }
  return line;
}

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

}  // namespace

std::string si_prefixed(double value) {
  static const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int index = 0;
  while (value >= 1000.0 && index < 6) {
    value /= 1000.0;
    ++index;
  }
  char text[32];
  std::snprintf(text, sizeof text, value >= 100 ? "%.0f %s" : "%.3g %s", value, prefixes[index]);
  return text;
}

json build_backends_json() {
  return {{"cuda", DNNB_BUILD_CUDA != 0},
          {"opencl", DNNB_BUILD_OPENCL != 0},
          {"onednn", DNNB_BUILD_ONEDNN != 0},
          {"version", DNNB_BUILD_VERSION}};
}

std::vector<DeviceAbsence> reported_absences(const std::vector<std::unique_ptr<DeviceRuntime>>& devices,
                                             const std::vector<DeviceAbsence>& absences) {
  std::vector<DeviceAbsence> out = absences;
  for (DeviceKind kind : kAllKinds) {
    bool has_device = false, has_reason = false;
    for (const auto& d : devices) has_device = has_device || d->info().kind == kind;
    for (const auto& a : absences) has_reason = has_reason || a.kind == kind;
    if (has_device || has_reason) continue;
    out.push_back({kind, compiled_in(kind) ? std::string("no ") + to_string(kind) +
                                                 " device found (the provider gave no reason)"
                                           : compiled_out_reason(kind)});
  }
  return out;
}

json devices_json(const std::vector<std::unique_ptr<DeviceRuntime>>& devices,
                  const std::vector<DeviceAbsence>& absences) {
  json out;
  out["schema_version"] = 1;
  out["build"] = build_backends_json();
  json list = json::array();
  for (const auto& d : devices) {
    list.push_back(to_json(d->info()));
  }
  out["devices"] = list;
  json absent = json::array();
  for (const DeviceAbsence& a : reported_absences(devices, absences))
    absent.push_back({{"kind", to_string(a.kind)}, {"reason", a.reason}});
  out["absent"] = absent;
  return out;
}

json devices_json(const DeviceSet& set) { return devices_json(set.devices(), set.absences()); }

std::string devices_table(const std::vector<std::unique_ptr<DeviceRuntime>>& devices,
                          const std::vector<DeviceAbsence>& absences) {
  size_t id_width = 6, name_width = 8;
  for (const auto& d : devices) {
    id_width = std::max(id_width, d->info().id.size() + 2);
    name_width = std::max(name_width, d->info().name.size() + 2);
  }
  std::string out = pad("ID", id_width) + pad("KIND", 8) + pad("NAME", name_width) +
                    pad("PEAK f32", 16) + pad("PEAK bf16", 16) + "MEMORY BW\n";
  for (const auto& d : devices) {
    const DeviceInfo& info = d->info();
    out += pad(info.id, id_width) + pad(to_string(info.kind), 8) + pad(info.name, name_width) +
           pad(peak_cell(info.peaks, "f32"), 16) + pad(peak_cell(info.peaks, "bf16"), 16) +
           bandwidth_cell(info.peaks) + "\n";
    std::string summary = summary_of(info.capabilities);
    if (!summary.empty()) out += std::string(id_width, ' ') + summary + "\n";
  }
  if (devices.empty()) out += "(no devices)\n";
  std::vector<DeviceAbsence> absent = reported_absences(devices, absences);
  if (!absent.empty()) {
    out += "\nAbsent:\n";
    for (const DeviceAbsence& a : absent) out += std::string("  ") + to_string(a.kind) + ": " + a.reason + "\n";
  }
  out += "\nPeaks are theoretical upper bounds; formulas: `dnnblocks devices --json` and docs/devices.md.\n";
  return out;
}

std::string devices_table(const DeviceSet& set) { return devices_table(set.devices(), set.absences()); }

}  // namespace dnnb
