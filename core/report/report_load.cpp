// Reading bench results files (docs/bench-json.md) into the report model. Every key is
// checked for its type before use; a wrong one is bad_input "FILE: results[3].median_s: ...".
// Keys the report can derive (bytes_per_s, intensity) or only displays are optional.
#include <cerrno>
#include <cstdint>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/report/report_model.h"

namespace dnnb::report {

namespace {

using nlohmann::json;

// Larger files are refused rather than read into memory: a bench of every op, backend and
// size is a few megabytes.
constexpr std::streamoff kMaxFileBytes = 512ll << 20;

std::string join_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// A file being read: turns a key path and a complaint into a bad_input naming both.
struct Reader {
  std::string file;

  Status bad(const std::string& path, const std::string& what) const {
    return Status::bad_input(file + ": " + path + ": " + what);
  }
  Status wrong_type(const std::string& path, const char* want, const json& got) const {
    return bad(path, std::string("expected ") + want + ", got " + got.type_name());
  }

  // Optional keys may be absent or null; required ones must be there and not null.
  const json* find(const json& object, const std::string& key) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
  }

  Status string_at(const json& object, const std::string& path, const std::string& key, std::string& out,
                   bool required) const {
    const json* value = find(object, key);
    if (!value) return required ? bad(join_path(path, key), "missing") : Status::ok();
    if (!value->is_string()) return wrong_type(join_path(path, key), "a string", *value);
    out = value->get<std::string>();
    return Status::ok();
  }

  // Finite and not negative: every quantity in the file is a size, a time or a rate.
  Status number_at(const json& object, const std::string& path, const std::string& key, double& out,
                   bool required) const {
    const json* value = find(object, key);
    if (!value) return required ? bad(join_path(path, key), "missing") : Status::ok();
    if (!value->is_number()) return wrong_type(join_path(path, key), "a number", *value);
    const double v = value->get<double>();
    if (!std::isfinite(v) || v < 0) return bad(join_path(path, key), "must be a finite number >= 0");
    out = v;
    return Status::ok();
  }

  Status optional_number_at(const json& object, const std::string& path, const std::string& key,
                            std::optional<double>& out) const {
    if (!find(object, key)) return Status::ok();
    double v = 0;
    DNNB_TRY(number_at(object, path, key, v, true));
    out = v;
    return Status::ok();
  }

  Status int_at(const json& object, const std::string& path, const std::string& key, int& out) const {
    const json* value = find(object, key);
    if (!value) return Status::ok();
    if (!value->is_number_integer()) return wrong_type(join_path(path, key), "an integer", *value);
    const bool in_range = value->is_number_unsigned() ? value->get<uint64_t>() <= INT_MAX
                                                      : value->get<int64_t>() >= 0 && value->get<int64_t>() <= INT_MAX;
    if (!in_range) return bad(join_path(path, key), "out of range");
    out = static_cast<int>(value->get<int64_t>());
    return Status::ok();
  }

  Status bool_at(const json& object, const std::string& path, const std::string& key,
                 std::optional<bool>& out) const {
    const json* value = find(object, key);
    if (!value) return Status::ok();
    if (!value->is_boolean()) return wrong_type(join_path(path, key), "true or false", *value);
    out = value->get<bool>();
    return Status::ok();
  }

  // An optional object: null when absent or null, else it must be an object.
  Status object_at(const json& object, const std::string& path, const std::string& key, const json*& out) const {
    out = find(object, key);
    if (out && !out->is_object()) return wrong_type(join_path(path, key), "an object", *out);
    return Status::ok();
  }
};

Status read_peaks(const Reader& r, const json& peaks, const std::string& path, DeviceRecord& device) {
  DNNB_TRY(r.number_at(peaks, path, "memory_bandwidth_bytes_per_s", device.theoretical_bandwidth, false));
  const json* flops = nullptr;
  DNNB_TRY(r.object_at(peaks, path, "flops_per_s", flops));
  if (flops) {
    for (const auto& [dtype, value] : flops->items()) {
      if (value.is_null()) continue;  // the device does not have the unit; formula says why
      double v = 0;
      DNNB_TRY(r.number_at(*flops, join_path(path, "flops_per_s"), dtype, v, true));
      if (v > 0) device.theoretical_flops[dtype] = v;
    }
  }
  const json* formula = nullptr;
  DNNB_TRY(r.object_at(peaks, path, "formula", formula));
  if (formula)
    for (const auto& [key, value] : formula->items())
      DNNB_TRY(r.string_at(*formula, join_path(path, "formula"), key, device.theoretical_formula[key], false));
  return Status::ok();
}

// The capability line: the provider's summary when it wrote one, else the scalar capabilities.
Status read_capabilities(const Reader& r, const json& caps, const std::string& path, DeviceRecord& device) {
  DNNB_TRY(r.string_at(caps, path, "summary", device.summary, false));
  if (!device.summary.empty()) return Status::ok();
  for (const auto& [key, value] : caps.items()) {
    std::string text;
    if (value.is_string())
      text = value.get<std::string>();
    else if (value.is_number_integer() || value.is_boolean())
      text = value.dump();
    else if (value.is_number_float())
      text = json(value.get<double>()).dump();
    else
      continue;  // lists and objects are in the JSON; the line keeps to scalars
    device.summary += (device.summary.empty() ? "" : ", ") + key + "=" + text;
  }
  return Status::ok();
}

Status read_ceilings(const Reader& r, const json& ceilings, const std::string& path, DeviceRecord& device) {
  DNNB_TRY(r.string_at(ceilings, path, "source", device.ceilings_source, false));
  DNNB_TRY(r.string_at(ceilings, path, "date", device.ceilings_date, false));
  const json* measured = nullptr;
  DNNB_TRY(r.object_at(ceilings, path, "measured", measured));
  if (measured) {
    const std::string measured_path = join_path(path, "measured");
    for (const auto& [probe, entry] : measured->items()) {
      const std::string entry_path = join_path(measured_path, probe);
      if (!entry.is_object()) return r.wrong_type(entry_path, "an object", entry);
      CeilingValue value;
      DNNB_TRY(r.number_at(entry, entry_path, "value", value.value, true));
      DNNB_TRY(r.number_at(entry, entry_path, "spread", value.spread, false));
      DNNB_TRY(r.int_at(entry, entry_path, "samples", value.samples));
      DNNB_TRY(r.string_at(entry, entry_path, "how", value.how, false));
      device.measured[probe] = value;
    }
  }
  const json* failed = nullptr;
  DNNB_TRY(r.object_at(ceilings, path, "failed", failed));
  if (failed)
    for (const auto& [probe, why] : failed->items())
      DNNB_TRY(r.string_at(*failed, join_path(path, "failed"), probe, device.failed[probe], true));
  return Status::ok();
}

Status read_device(const Reader& r, const std::string& id, const json& entry, DeviceRecord& device) {
  const std::string path = "devices." + id;
  if (!entry.is_object()) return r.wrong_type(path, "an object", entry);
  device.id = id;
  device.file = r.file;
  const json* info = nullptr;
  DNNB_TRY(r.object_at(entry, path, "info", info));
  if (info) {
    const std::string info_path = join_path(path, "info");
    DNNB_TRY(r.string_at(*info, info_path, "kind", device.kind, false));
    DNNB_TRY(r.string_at(*info, info_path, "name", device.name, false));
    const json* caps = nullptr;
    DNNB_TRY(r.object_at(*info, info_path, "capabilities", caps));
    if (caps) DNNB_TRY(read_capabilities(r, *caps, join_path(info_path, "capabilities"), device));
    const json* peaks = nullptr;
    DNNB_TRY(r.object_at(*info, info_path, "peaks", peaks));
    if (peaks) DNNB_TRY(read_peaks(r, *peaks, join_path(info_path, "peaks"), device));
  }
  const json* ceilings = nullptr;
  DNNB_TRY(r.object_at(entry, path, "ceilings", ceilings));
  if (ceilings) {
    DNNB_TRY(read_ceilings(r, *ceilings, join_path(path, "ceilings"), device));
    if (device.name.empty()) DNNB_TRY(r.string_at(*ceilings, join_path(path, "ceilings"), "name", device.name, false));
  }
  if (device.kind.empty()) device.kind = id.substr(0, id.find(':'));
  return Status::ok();
}

Status read_string_list(const Reader& r, const json& object, const std::string& path, const std::string& key,
                        std::vector<std::string>& out) {
  const json* list = r.find(object, key);
  if (!list) return Status::ok();
  if (!list->is_array()) return r.wrong_type(join_path(path, key), "an array of strings", *list);
  for (size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    if (!item.is_string())
      return r.wrong_type(join_path(path, key) + "[" + std::to_string(i) + "]", "a string", item);
    out.push_back(item.get<std::string>());
  }
  return Status::ok();
}

Status read_timings(const Reader& r, const json& j, const std::string& path, ResultRecord& result) {
  DNNB_TRY(r.number_at(j, path, "median_s", result.median_s, true));
  if (result.median_s <= 0) return r.bad(join_path(path, "median_s"), "must be > 0 for an ok result");
  DNNB_TRY(r.number_at(j, path, "bytes", result.bytes, true));
  DNNB_TRY(r.number_at(j, path, "flops", result.flops, true));
  DNNB_TRY(r.number_at(j, path, "min_s", result.min_s, false));
  DNNB_TRY(r.number_at(j, path, "cv", result.cv, false));
  DNNB_TRY(r.number_at(j, path, "noise_target", result.noise_target, false));
  DNNB_TRY(r.bool_at(j, path, "noise_target_met", result.noise_target_met));
  DNNB_TRY(r.int_at(j, path, "repetitions", result.repetitions));
  DNNB_TRY(r.int_at(j, path, "iterations", result.iterations));
  DNNB_TRY(r.int_at(j, path, "samples", result.samples));
  DNNB_TRY(r.number_at(j, path, "working_set_bytes", result.working_set_bytes, false));
  DNNB_TRY(r.number_at(j, path, "cache_bytes", result.cache_bytes, false));
  // Derivable from the three required numbers: taken from the file when there.
  result.bytes_per_s = result.bytes / result.median_s;
  result.flops_per_s = result.flops / result.median_s;
  result.intensity = result.bytes > 0 ? result.flops / result.bytes : 0;
  DNNB_TRY(r.number_at(j, path, "bytes_per_s", result.bytes_per_s, false));
  DNNB_TRY(r.number_at(j, path, "flops_per_s", result.flops_per_s, false));
  DNNB_TRY(r.number_at(j, path, "intensity", result.intensity, false));
  const json* times = r.find(j, "repetition_times_s");
  if (times && !times->is_array()) return r.wrong_type(join_path(path, "repetition_times_s"), "an array", *times);
  if (times)
    for (size_t i = 0; i < times->size(); ++i)
      if (!(*times)[i].is_number())
        return r.wrong_type(join_path(path, "repetition_times_s") + "[" + std::to_string(i) + "]", "a number",
                            (*times)[i]);

  const json* roofline = nullptr;
  DNNB_TRY(r.object_at(j, path, "roofline", roofline));
  if (roofline) {
    const std::string roof_path = join_path(path, "roofline");
    DNNB_TRY(r.number_at(*roofline, roof_path, "bandwidth_bytes_per_s", result.roof_bandwidth, false));
    DNNB_TRY(r.number_at(*roofline, roof_path, "compute_flops_per_s", result.roof_compute, false));
    DNNB_TRY(r.number_at(*roofline, roof_path, "bound_flops_per_s", result.roof_bound_flops, false));
    DNNB_TRY(r.string_at(*roofline, roof_path, "compute_source", result.compute_source, false));
    DNNB_TRY(r.string_at(*roofline, roof_path, "bound_by", result.bound_by, false));
    DNNB_TRY(r.optional_number_at(*roofline, roof_path, "sol_percent", result.bench_sol_percent));
    DNNB_TRY(r.optional_number_at(*roofline, roof_path, "pct_of_copy", result.pct_of_copy));
  }
  const json* launch = nullptr;
  DNNB_TRY(r.object_at(j, path, "launch", launch));
  if (launch) {
    const std::string launch_path = join_path(path, "launch");
    DNNB_TRY(r.optional_number_at(*launch, launch_path, "empty_launch_s", result.empty_launch_s));
    DNNB_TRY(r.optional_number_at(*launch, launch_path, "x_empty", result.x_empty));
    DNNB_TRY(r.optional_number_at(*launch, launch_path, "batched_s", result.batched_s));
  }
  const json* clock = nullptr;
  DNNB_TRY(r.object_at(j, path, "clock", clock));
  if (clock) {
    const std::string clock_path = join_path(path, "clock");
    DNNB_TRY(r.optional_number_at(*clock, clock_path, "sm_mhz_median", result.sm_mhz_median));
    DNNB_TRY(r.int_at(*clock, clock_path, "throttled_repetitions", result.throttled_repetitions));
  }
  return Status::ok();
}

Status read_result(const Reader& r, const json& j, const std::string& path, ResultRecord& result) {
  if (!j.is_object()) return r.wrong_type(path, "an object", j);
  result.file = r.file;
  DNNB_TRY(r.string_at(j, path, "case_id", result.case_id, true));
  if (result.case_id.empty()) return r.bad(join_path(path, "case_id"), "empty");
  DNNB_TRY(r.string_at(j, path, "status", result.status, true));
  static const std::set<std::string> kStatuses = {"ok", "skipped", "unsupported", "error", "bad_input"};
  if (!kStatuses.count(result.status))
    return r.bad(join_path(path, "status"), "'" + result.status + "' is not ok|skipped|unsupported|error|bad_input");
  for (auto [key, field] : {std::pair{"op", &result.op}, {"dtype", &result.dtype}, {"shape", &result.shape},
                            {"backend", &result.backend}, {"device", &result.device}})
    DNNB_TRY(r.string_at(j, path, key, *field, true));
  for (auto [key, field] : {std::pair{"params", &result.params}, {"variant", &result.variant},
                            {"device_name", &result.device_name}, {"reason", &result.reason},
                            {"timer", &result.timer}, {"cache_policy", &result.cache_policy},
                            {"compute_unit", &result.compute_unit}, {"family", &result.family},
                            {"block", &result.block}})
    DNNB_TRY(r.string_at(j, path, key, *field, false));
  DNNB_TRY(read_string_list(r, j, path, "flags", result.flags));
  DNNB_TRY(read_string_list(r, j, path, "nodes", result.nodes));
  DNNB_TRY(r.number_at(j, path, "tokens", result.tokens, false));
  if (result.tokens < 0) return r.bad(join_path(path, "tokens"), "must be >= 0");
  if (!result.block.empty() && result.nodes.empty()) return r.bad(join_path(path, "nodes"), "a node case (block set) names its nodes");
  if (result.ok()) DNNB_TRY(read_timings(r, j, path, result));
  return Status::ok();
}

// Fingerprint values as text, the commit and toolchain first; lists of strings joined.
FingerprintRecord read_fingerprint(const json& fingerprint, const std::string& file) {
  static const std::vector<std::string> kOrder = {
      "git_commit", "git_dirty", "host", "date", "command", "compiler", "cxx_flags", "build_type",
      "cuda_compiler", "cuda_architectures", "cuda_driver", "cuda_runtime", "opencl_platforms", "onednn",
      "google_benchmark"};
  FingerprintRecord record{file, {}};
  auto text_of = [](const json& value) -> std::string {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_boolean() || value.is_number_integer()) return value.dump();
    if (value.is_number_float()) return json(value.get<double>()).dump();
    if (value.is_array()) {
      std::string joined;
      for (const auto& item : value)
        joined += (joined.empty() ? "" : "; ") + (item.is_string() ? item.get<std::string>() : std::string("(?)"));
      return joined;
    }
    // Objects are not flattened: their depth is the input's to choose.
    return value.is_null() ? std::string() : std::string("(") + value.type_name() + ")";
  };
  std::set<std::string> done;
  for (const auto& key : kOrder) {
    auto it = fingerprint.find(key);
    if (it == fingerprint.end() || it->is_null()) continue;
    record.fields.emplace_back(key, text_of(*it));
    done.insert(key);
  }
  for (const auto& [key, value] : fingerprint.items())
    if (!done.count(key) && !value.is_null()) record.fields.emplace_back(key, text_of(value));
  return record;
}

// Copies the ceilings a result is judged against from its own file's record of its device
// (bench's roofline object where the file does not describe the device).
void copy_own_ceilings(const std::vector<std::pair<std::string, DeviceRecord>>& devices, ResultRecord& result) {
  if (!result.ok()) return;
  const DeviceRecord* device = nullptr;
  for (const auto& [id, record] : devices)
    if (id == result.device) device = &record;
  auto measured = [&](const std::string& probe) {
    if (!device) return CeilingValue{};
    auto it = device->measured.find(probe);
    return it == device->measured.end() ? CeilingValue{} : it->second;
  };
  const CeilingValue copy = measured("dram_copy_bytes_per_s"), read = measured("dram_read_bytes_per_s");
  result.own_dram = copy.value >= read.value ? copy : read;
  if (result.own_dram.value <= 0) {
    result.own_dram = CeilingValue{};
    result.own_dram.value = result.roof_bandwidth;
  }
  result.own_cache = measured("cache_read_bytes_per_s");
  result.own_launch = measured("empty_launch_s");
  if (result.empty_launch_s && *result.empty_launch_s > 0) result.own_launch.value = *result.empty_launch_s;
  // Compute: the ceiling bench chose (measured, else the theoretical peak, which has no spread).
  result.own_compute = measured(result.compute_unit + "_flops_per_s");
  if (result.roof_compute > 0 && result.compute_source != "measured") result.own_compute = CeilingValue{};
  if (result.roof_compute > 0) result.own_compute.value = result.roof_compute;
}

bool same_ceilings(const DeviceRecord& a, const DeviceRecord& b) {
  if (a.measured.size() != b.measured.size()) return false;
  for (const auto& [probe, value] : a.measured) {
    auto it = b.measured.find(probe);
    if (it == b.measured.end() || it->second.value != value.value) return false;
  }
  return true;
}

}  // namespace

Status add_report_text(ReportModel& model, const std::string& text, const std::string& file_label) {
  const Reader r{file_label};
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    return Status::bad_input(file_label + ": not JSON: " + e.what());
  }
  if (!root.is_object()) return r.wrong_type("(top level)", "an object", root);
  const json* version = r.find(root, "schema_version");
  if (!version) return r.bad("schema_version", "missing (not a bench results file?)");
  if (!version->is_number_integer() || version->get<int64_t>() != 1)
    return r.bad("schema_version", "is " + version->dump() + "; this report reads version 1");
  std::string kind = "bench";
  DNNB_TRY(r.string_at(root, "", "kind", kind, false));
  if (kind != "bench")
    return r.bad("kind", "is '" + kind + "'; report reads bench results (`dnnblocks bench --out`)");

  // Read everything before touching the model, so a bad file leaves no half of itself behind.
  std::vector<std::pair<std::string, DeviceRecord>> devices;
  const json* devices_json = nullptr;
  DNNB_TRY(r.object_at(root, "", "devices", devices_json));
  if (devices_json)
    for (const auto& [id, entry] : devices_json->items()) {
      DeviceRecord device;
      DNNB_TRY(read_device(r, id, entry, device));
      devices.emplace_back(id, std::move(device));
    }
  const json* results_json = r.find(root, "results");
  if (!results_json) return r.bad("results", "missing");
  if (!results_json->is_array()) return r.wrong_type("results", "an array", *results_json);
  std::vector<ResultRecord> results(results_json->size());
  for (size_t i = 0; i < results.size(); ++i) {
    DNNB_TRY(read_result(r, (*results_json)[i], "results[" + std::to_string(i) + "]", results[i]));
    copy_own_ceilings(devices, results[i]);
  }
  const json* fingerprint = nullptr;
  DNNB_TRY(r.object_at(root, "", "fingerprint", fingerprint));

  model.files.push_back(file_label);
  if (fingerprint) model.fingerprints.push_back(read_fingerprint(*fingerprint, file_label));
  for (auto& [id, device] : devices) {
    auto it = model.devices.find(id);
    if (it != model.devices.end()) {
      if (it->second.name != device.name)
        model.notes.push_back("device " + id + " is '" + it->second.name + "' in " + it->second.file + " but '" +
                              device.name + "' in " + file_label + ": the later record is kept");
      else if (!same_ceilings(it->second, device))
        model.notes.push_back("ceilings of " + id + " differ between " + it->second.file + " and " + file_label +
                              ": the chart draws the later ones; each result is judged against its own file's");
    }
    model.devices[id] = std::move(device);
  }
  std::map<std::string, std::pair<int, std::string>> repeated;  // "in A and B" -> count, first case
  std::unordered_map<std::string, size_t> index_of_case;
  for (size_t i = 0; i < model.results.size(); ++i) index_of_case[model.results[i].case_id] = i;
  for (auto& result : results) {
    auto found = index_of_case.find(result.case_id);
    if (found == index_of_case.end()) {
      index_of_case[result.case_id] = model.results.size();
      model.results.push_back(std::move(result));
      continue;
    }
    ResultRecord* same = &model.results[found->second];
    // One note per pair of files (a size sweep repeats the bench sizes: dozens of cases).
    const std::string where = same->file == file_label ? "twice in " + file_label : "in " + same->file + " and " + file_label;
    auto& [count, first_case] = repeated[where];
    if (count++ == 0) first_case = result.case_id;
    *same = std::move(result);
  }
  for (const auto& [where, entry] : repeated)
    model.notes.push_back(std::to_string(entry.first) + (entry.first == 1 ? " case appears " : " cases appear ") + where +
                          " (" + (entry.first == 1 ? "" : "first ") + entry.second + "): the later results are kept");
  judge_results(model);
  return Status::ok();
}

Result<ReportModel> load_report(const std::vector<std::string>& paths) {
  ReportModel model;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::bad_input(path + ": cannot open: " + std::strerror(errno));
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < 0) return Status::bad_input(path + ": cannot read its size");
    if (size > kMaxFileBytes) return Status::bad_input(path + ": larger than 512 MiB; not a results file?");
    in.seekg(0, std::ios::beg);
    std::string text(static_cast<size_t>(size), '\0');
    if (!in.read(text.data(), size)) return Status::bad_input(path + ": read failed");
    DNNB_TRY(add_report_text(model, text, path));
  }
  return model;
}

}  // namespace dnnb::report
