// The bench results file (docs/bench-json.md): Google Benchmark's JSON plus our results,
// each judged against its device's roofline, the devices and their ceilings, and the
// fingerprint that says what produced the figures.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "core/bench.h"
#include "core/registry.h"
#include "dnnb_build_info.h"
#include "dnnb_git_info.h"

namespace dnnb {

namespace {

std::vector<std::pair<std::string, std::function<std::string()>>>& fingerprint_items() {
  static std::vector<std::pair<std::string, std::function<std::string()>>> items;
  return items;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

nlohmann::json or_null(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

// Theoretical FLOP/s of a compute unit from the device's peaks ("f32_fma" -> peaks f32).
double theoretical_flops(const DeviceInfo* info, const std::string& unit) {
  return info ? peak_flops_per_s(*info, unit.substr(0, unit.find('_'))) : 0;
}

}  // namespace

bool register_fingerprint_item(std::string name, std::function<std::string()> value) {
  fingerprint_items().emplace_back(std::move(name), std::move(value));
  return true;
}

nlohmann::json build_fingerprint() {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  nlohmann::json f = {{"git_commit", DNNB_GIT_COMMIT},
                      {"git_dirty", DNNB_GIT_DIRTY},
                      {"compiler", DNNB_BUILD_CXX_COMPILER},
                      {"cxx_flags", DNNB_BUILD_CXX_FLAGS},
                      {"build_type", DNNB_BUILD_TYPE},
                      {"cuda_compiler", or_null(DNNB_BUILD_CUDA_COMPILER)},
                      {"cuda_flags", or_null(DNNB_BUILD_CUDA_FLAGS)},
                      {"cuda_architectures", or_null(DNNB_BUILD_CUDA_ARCHITECTURES)},
                      {"google_benchmark", or_null(DNNB_BUILD_GOOGLE_BENCHMARK)},
                      {"host", host},
                      {"date", utc_now()}};
  // Driver and runtime versions as the devices report them.
  nlohmann::json platforms = nlohmann::json::array();
  f["cuda_driver"] = nullptr;
  f["cuda_runtime"] = nullptr;
  for (const auto& d : DeviceSet::instance().devices()) {
    const auto& caps = d->info().capabilities;
    if (d->info().kind == DeviceKind::cuda) {
      if (caps.contains("driver_version")) f["cuda_driver"] = caps["driver_version"];
      if (caps.contains("runtime_version")) f["cuda_runtime"] = caps["runtime_version"];
    }
    if (d->info().kind == DeviceKind::opencl && caps.contains("platform_version") && caps["platform_version"].is_string()) {
      std::string p = caps["platform_version"].get<std::string>();
      if (caps.contains("driver_version") && caps["driver_version"].is_string())
        p += " (driver " + caps["driver_version"].get<std::string>() + ")";
      if (std::find(platforms.begin(), platforms.end(), p) == platforms.end()) platforms.push_back(p);
    }
  }
  f["opencl_platforms"] = platforms;
  for (const auto& [name, value] : fingerprint_items()) f[name] = value();
  return f;
}

nlohmann::json roofline_json(const BenchResult& r, const DeviceCeilings* ceilings, const DeviceInfo* info) {
  const double bandwidth = ceilings ? ceilings->bandwidth_bytes_per_s() : 0;
  double compute = ceilings ? ceilings->flops_per_s(r.compute_unit) : 0;
  std::string compute_source = "measured";
  if (compute <= 0) {
    compute = theoretical_flops(info, r.compute_unit);
    compute_source = compute > 0 ? "theoretical" : "none";
  }
  const double intensity = r.bytes > 0 ? r.flops / r.bytes : 0;
  double bound = 0;
  std::string bound_by = "memory";
  if (bandwidth > 0) bound = intensity * bandwidth;
  // An op without arithmetic (a copy) is bound by memory alone, however fast the units are.
  if (r.flops > 0 && compute > 0 && (bound <= 0 || compute < bound)) bound = compute, bound_by = "compute";
  const double memory_fraction = bandwidth > 0 ? r.bytes_per_s() / bandwidth : 0;
  const double compute_fraction = compute > 0 ? r.flops_per_s() / compute : 0;
  const double copy = ceilings ? ceilings->value("dram_copy_bytes_per_s") : 0;
  nlohmann::json j = {{"bandwidth_bytes_per_s", bandwidth},
                      {"compute_flops_per_s", compute},
                      {"compute_source", compute_source},
                      {"bound_flops_per_s", bound},
                      {"bound_by", bound_by},
                      {"sol_percent", 100 * std::max(memory_fraction, compute_fraction)},
                      {"pct_of_copy", copy > 0 ? nlohmann::json(100 * r.bytes_per_s() / copy) : nlohmann::json(nullptr)}};
  return j;
}

nlohmann::json bench_file_json(const BenchRun& run, const std::string& command) {
  nlohmann::json j = run.google_benchmark.is_object() ? run.google_benchmark : nlohmann::json::object();
  if (!j.contains("context")) j["context"] = nlohmann::json::object();
  if (!j.contains("benchmarks")) j["benchmarks"] = nlohmann::json::array();
  j["schema_version"] = 1;
  j["kind"] = "bench";
  j["fingerprint"] = build_fingerprint();
  j["fingerprint"]["command"] = command;
  nlohmann::json devices = nlohmann::json::object();
  for (const auto& [id, ceilings] : run.ceilings) {
    DeviceRuntime* d = DeviceSet::instance().find(id);
    devices[id] = {{"info", d ? to_json(d->info()) : nlohmann::json(nullptr)}, {"ceilings", ceilings.to_json()}};
  }
  j["devices"] = devices;
  nlohmann::json results = nlohmann::json::array();
  for (const auto& r : run.results) {
    const Problem& p = r.id.problem;
    std::string params;
    for (const auto& [k, v] : p.params) params += (params.empty() ? "" : ",") + k + "=" + v;
    nlohmann::json x = {{"case_id", r.id.to_string()}, {"op", p.op}, {"dtype", dtype_name(p.dtype)},
                        {"shape", shape_to_string(p.shape)}, {"params", params}, {"backend", r.id.backend},
                        {"variant", r.id.variant}, {"device", r.device}, {"device_name", r.device_name},
                        {"status", to_string(r.status)}, {"reason", r.reason}};
    const OpSpec* spec = Registry::instance().find_op(p.op);
    if (spec) x["family"] = spec->family;
    if (!r.block.empty()) x["block"] = r.block, x["nodes"] = r.nodes;
    if (spec && spec->tokens) {
      x["tokens"] = spec->tokens(p);
      if (r.status == StatusCode::ok && r.median_s > 0) x["tokens_per_s"] = spec->tokens(p) / r.median_s;
    }
    if (r.status != StatusCode::ok) {
      results.push_back(x);
      continue;
    }
    DeviceRuntime* d = DeviceSet::instance().find(r.device);
    auto c = run.ceilings.find(r.device);
    const DeviceCeilings* ceilings = c == run.ceilings.end() ? nullptr : &c->second;
    x["benchmark_name"] = r.benchmark_name;
    x["timer"] = r.timer;
    x["cache_policy"] = to_string(r.cache);
    x["rotation_sets"] = r.rotation_sets;
    x["working_set_bytes"] = r.working_set_bytes;
    x["cache_bytes"] = r.cache_bytes;
    x["repetitions"] = r.repetition_times_s.size();
    x["iterations"] = r.iterations;
    x["samples"] = r.repetition_times_s.size() * r.iterations;
    x["repetition_times_s"] = r.repetition_times_s;
    x["median_s"] = r.median_s;
    x["min_s"] = r.min_s;
    x["cv"] = r.cv;
    x["noise_target_met"] = r.noise_target_met;
    x["bytes"] = r.bytes;
    x["flops"] = r.flops;
    x["bytes_per_s"] = r.bytes_per_s();
    x["flops_per_s"] = r.flops_per_s();
    x["intensity"] = r.bytes > 0 ? r.flops / r.bytes : 0;
    x["compute_unit"] = r.compute_unit;
    x["roofline"] = roofline_json(r, ceilings, d ? &d->info() : nullptr);
    const double empty = ceilings ? ceilings->value("empty_launch_s") : 0;
    if (d && d->info().kind != DeviceKind::cpu) {
      x["launch"] = {{"empty_launch_s", empty > 0 ? nlohmann::json(empty) : nlohmann::json(nullptr)},
                     {"x_empty", empty > 0 ? nlohmann::json(r.median_s / empty) : nlohmann::json(nullptr)},
                     {"batched_s", r.batched_s ? nlohmann::json(*r.batched_s) : nlohmann::json(nullptr)}};
    } else {
      x["launch"] = nullptr;
    }
    if (!r.clocks.empty()) {
      std::vector<double> mhz;
      double max_mhz = 0;
      int throttled = 0;
      for (const auto& s : r.clocks) mhz.push_back(s.sm_mhz), max_mhz = std::max(max_mhz, s.sm_max_mhz), throttled += s.throttled;
      std::sort(mhz.begin(), mhz.end());
      x["clock"] = {{"sm_mhz_median", mhz[mhz.size() / 2]}, {"sm_mhz_max", max_mhz}, {"throttled_repetitions", throttled}};
    } else {
      x["clock"] = nullptr;
    }
    x["flags"] = r.flags;
    results.push_back(x);
  }
  j["results"] = results;
  return j;
}

}  // namespace dnnb
