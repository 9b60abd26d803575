// The report model's derived views: problem keys, warnings, and which devices share hardware.
#include "core/report/report_model.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace dnnb::report {

double DeviceRecord::measured_value(const std::string& probe) const {
  auto it = measured.find(probe);
  return it == measured.end() ? 0 : it->second.value;
}

double DeviceRecord::measured_bandwidth() const {
  return std::max(measured_value("dram_copy_bytes_per_s"), measured_value("dram_read_bytes_per_s"));
}

std::string ResultRecord::problem() const {
  return op + ":" + dtype + ":" + shape + (params.empty() ? "" : ":" + params);
}

std::string ResultRecord::backend_label() const { return variant.empty() ? backend : backend + "/" + variant; }

std::vector<std::string> ResultRecord::warnings() const {
  std::vector<std::string> out = flags;
  auto has = [&](const std::string& word) {
    return std::any_of(out.begin(), out.end(), [&](const std::string& f) { return f.find(word) != std::string::npos; });
  };
  if (noise_target_met == false && !has("noise")) {
    char text[96];
    // The bench stopped at its time cap before the spread came under the target.
    std::snprintf(text, sizeof text, "noise target missed: cv %.2g%% > %.2g%%", cv * 100, noise_target * 100);
    out.push_back(text);
  }
  if (throttled_repetitions > 0 && !has("throttl"))
    out.push_back("clock throttled in " + std::to_string(throttled_repetitions) + " repetitions");
  if (!judged.note.empty()) out.push_back(judged.note);
  return out;
}

size_t ReportModel::ok_count() const {
  return static_cast<size_t>(std::count_if(results.begin(), results.end(), [](const ResultRecord& r) { return r.ok(); }));
}

std::string ReportModel::device_name(const std::string& id) const {
  auto it = devices.find(id);
  if (it != devices.end() && !it->second.name.empty()) return it->second.name;
  for (const auto& r : results)
    if (r.device == id && !r.device_name.empty()) return r.device_name;
  return id;
}

std::string ReportModel::device_kind(const std::string& id) const {
  auto it = devices.find(id);
  if (it != devices.end() && !it->second.kind.empty()) return it->second.kind;
  return id.substr(0, id.find(':'));
}

std::vector<BackendSummary> backend_summaries(const ReportModel& model) {
  std::vector<BackendSummary> out;
  std::map<std::pair<std::string, Bound>, std::vector<double>> percents;
  for (const auto& r : model.results) {
    auto it = std::find_if(out.begin(), out.end(), [&](const BackendSummary& s) { return s.backend == r.backend; });
    if (it == out.end()) {
      it = out.insert(out.end(), BackendSummary{});
      it->backend = r.backend;
      it->oracle = r.oracle();
    }
    if (!r.ok()) {
      ++it->not_ok;
      continue;
    }
    ++it->ok;
    if (r.judged.percent) percents[{r.backend, r.judged.bound}].push_back(*r.judged.percent);
  }
  for (auto& [key, v] : percents) {
    std::sort(v.begin(), v.end());
    const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    auto it = std::find_if(out.begin(), out.end(), [&](const BackendSummary& s) { return s.backend == key.first; });
    it->by_bound[key.second] = BoundMedian{v.size(), median};
  }
  return out;
}

namespace {

// Native kinds come first so that OpenCL devices can join them; then by id.
int kind_rank(const std::string& kind) { return kind == "cuda" ? 0 : kind == "cpu" ? 1 : 2; }

bool names_match(const std::string& native, const std::string& opencl) {
  if (native.empty() || opencl.empty()) return false;
  return native == opencl || opencl.find(native) != std::string::npos;
}

std::string group_kind_label(const std::string& kind, const ReportModel& model, const std::string& id) {
  if (kind == "cuda") return "GPU";
  if (kind == "cpu") return "CPU";
  // A stand-alone OpenCL device says what it is in its summary ("device_type=gpu").
  auto it = model.devices.find(id);
  if (it != model.devices.end()) {
    const std::string& summary = it->second.summary;
    for (const char* type : {"gpu", "cpu", "accelerator"})
      if (summary.find(std::string("device_type=") + type) != std::string::npos)
        return std::string("OpenCL ") + (type[0] == 'a' ? "accelerator" : type == std::string("gpu") ? "GPU" : "CPU");
  }
  return "OpenCL device";
}

}  // namespace

std::vector<HardwareGroup> hardware_groups(const ReportModel& model) {
  std::vector<std::string> ids;
  for (const auto& [id, device] : model.devices) ids.push_back(id);
  for (const auto& r : model.results)
    if (!r.device.empty() && std::find(ids.begin(), ids.end(), r.device) == ids.end()) ids.push_back(r.device);
  std::stable_sort(ids.begin(), ids.end(), [&](const std::string& a, const std::string& b) {
    const int ra = kind_rank(model.device_kind(a)), rb = kind_rank(model.device_kind(b));
    return ra != rb ? ra < rb : a < b;
  });

  std::vector<HardwareGroup> groups;
  for (const auto& id : ids) {
    const std::string kind = model.device_kind(id);
    const std::string name = model.device_name(id);
    if (kind == "opencl") {
      auto native = std::find_if(groups.begin(), groups.end(), [&](const HardwareGroup& g) {
        return model.device_kind(g.primary) != "opencl" && names_match(g.name, name);
      });
      if (native != groups.end()) {
        native->device_ids.push_back(id);
        continue;
      }
    }
    HardwareGroup group;
    group.name = name;
    group.kind = group_kind_label(kind, model, id);
    group.primary = id;
    group.device_ids = {id};
    group.anchor = "hw-" + std::to_string(groups.size());
    groups.push_back(std::move(group));
  }
  return groups;
}

size_t group_of(const std::vector<HardwareGroup>& groups, const std::string& device_id) {
  for (size_t i = 0; i < groups.size(); ++i)
    if (std::find(groups[i].device_ids.begin(), groups[i].device_ids.end(), device_id) != groups[i].device_ids.end())
      return i;
  return groups.size();
}

}  // namespace dnnb::report
