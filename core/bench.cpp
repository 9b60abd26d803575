#include "core/bench.h"

#include <fnmatch.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "core/check.h"

namespace dnnb {

namespace {

std::vector<DeviceProbe>& probes() {
  static std::vector<DeviceProbe> list;
  return list;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * (v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

// Host inputs of the last problem, reused when the next implementation times the same
// problem (filling 10^8 elements costs seconds; every backend of one problem sees the same).
struct InputCache {
  std::string problem;
  std::vector<Tensor> inputs;
};

BenchResult bench_one(const OpSpec& spec, const Implementation& impl, DeviceRuntime& device, const Problem& problem,
                      const BenchOptions& options, InputCache& cache) {
  BenchResult r;
  CaseId id{problem, impl.backend, impl.variant, device.info().id.substr(device.info().id.find(':') + 1)};
  r.case_id = id.to_string();
  r.device = device.info().id;
  auto fail = [&](const Status& s) {
    r.status = s.code;
    r.reason = s.message;
    return r;
  };
  auto sig = spec.signature(problem);
  if (!sig) return fail(sig.status());
  Status support = impl.supports(problem, device);
  if (!support.is_ok()) return fail(support);
  auto bytes = minimal_bytes(spec, problem);
  if (!bytes) return fail(bytes.status());
  r.bytes = *bytes;
  r.flops = spec.flops ? spec.flops(problem) : 0;
  if (cache.problem != problem.to_string()) {
    cache = {};
    auto made = make_random_inputs(spec, problem, *sig);
    if (!made) return fail(made.status());
    cache = {problem.to_string(), std::move(*made)};
  }
  const std::vector<Tensor>* host_inputs = &cache.inputs;
  OpCall call{problem, device, {}, {}};
  for (size_t i = 0; i < sig->inputs.size(); ++i) {
    auto t = make_device_input(device, sig->inputs[i]);
    if (!t) return fail(t.status());
    Status s = copy_tensor(*t, (*host_inputs)[i]);
    if (!s.is_ok()) return fail(s);
    r.working_set_bytes += static_cast<double>(t->storage_span()) * t->element_size();
    call.inputs.push_back(*t);
  }
  for (const auto& out : sig->outputs) {
    auto t = empty_tensor(device, out.dtype, out.shape);
    if (!t) return fail(t.status());
    r.working_set_bytes += static_cast<double>(t->numel()) * t->element_size();
    call.outputs.push_back(*t);
  }
  auto timer = device.make_timer();
  if (!timer) return fail(timer.status());
  r.timer = (*timer)->source();
  for (int i = 0; i < options.warmup; ++i) {
    Status s = impl.run(call);
    if (!s.is_ok()) return fail(s);
  }
  Status synced = device.synchronize();
  if (!synced.is_ok()) return fail(synced);
  std::vector<double> samples;
  double total = 0;
  while (static_cast<int>(samples.size()) < options.repetitions || total < options.min_time_s * 1e3) {
    Status s = (*timer)->start();
    if (s.is_ok()) s = impl.run(call);
    if (s.is_ok()) s = (*timer)->stop();
    if (!s.is_ok()) return fail(s);
    auto ms = (*timer)->elapsed_ms();
    if (!ms) return fail(ms.status());
    samples.push_back(*ms);
    total += *ms;
    if (samples.size() > 100000) break;
  }
  r.samples = static_cast<int>(samples.size());
  r.median_ms = percentile(samples, 0.5);
  r.p10_ms = percentile(samples, 0.1);
  r.p90_ms = percentile(samples, 0.9);
  r.min_ms = *std::min_element(samples.begin(), samples.end());
  return r;
}

}  // namespace

bool register_device_probe(DeviceProbe probe) {
  probes().push_back(std::move(probe));
  return true;
}

std::vector<std::pair<std::string, Result<double>>> run_device_probes(DeviceRuntime& device) {
  std::vector<std::pair<std::string, Result<double>>> out;
  for (auto& p : probes())
    if (p.kind == device.info().kind) out.emplace_back(p.name, p.measure(device));
  return out;
}

Result<std::vector<BenchResult>> run_bench(const BenchOptions& options) {
  Registry& reg = Registry::instance();
  std::string backend = options.backend, variant;
  bool variant_given = false;
  if (auto slash = backend.find('/'); slash != std::string::npos) {
    variant = backend.substr(slash + 1);
    backend = backend.substr(0, slash);
    variant_given = true;
  }
  if (!backend.empty() && !find_backend(backend)) return Status::bad_input("--backend: unknown backend '" + backend + "'");
  std::optional<DType> dtype;
  if (!options.dtype.empty()) {
    dtype = parse_dtype(options.dtype);
    if (!dtype) return Status::bad_input("--dtype: unknown dtype '" + options.dtype + "'");
  }
  std::vector<BenchResult> results;
  InputCache cache;
  bool any_op = false;
  for (const auto& spec : reg.ops()) {
    if (fnmatch(options.op_glob.c_str(), spec.name.c_str(), 0) != 0) continue;
    any_op = true;
    // dtype -> size -> implementation, so every implementation of one problem runs back to
    // back and shares its host inputs.
    const std::vector<std::string> sizes =
        options.size.empty() ? spec.bench_problems : std::vector<std::string>{options.size};
    for (DType d : spec.dtypes) {
      if (dtype && d != *dtype) continue;
      for (const auto& size : sizes) {
        auto problem = Problem::parse(spec.name + ":" + dtype_name(d) + ":" + size);
        if (!problem) return Status::bad_input("--size '" + size + "': " + problem.status().message);
        for (const Implementation* impl : reg.implementations_of(spec.name)) {
          if (!backend.empty() && impl->backend != backend) continue;
          if (variant_given && impl->variant != variant) continue;
          if (std::find(impl->dtypes.begin(), impl->dtypes.end(), d) == impl->dtypes.end()) continue;
          DeviceKind kind = find_backend(impl->backend)->device_kind;
          DeviceRuntime* device = options.device.empty() ? DeviceSet::instance().first(kind)
                                                         : DeviceSet::instance().find(options.device);
          if (device != nullptr && device->info().kind != kind) continue;
          if (device == nullptr) {
            BenchResult r;
            r.case_id = CaseId{*problem, impl->backend, impl->variant, ""}.to_string();
            r.status = StatusCode::skipped;
            r.reason = DeviceSet::instance().absence_reason(kind);
            results.push_back(r);
            continue;
          }
          results.push_back(bench_one(spec, *impl, *device, *problem, options, cache));
        }
      }
    }
  }
  if (!any_op) return Status::bad_input("--op: no op matches '" + options.op_glob + "'");
  return results;
}

nlohmann::json bench_to_json(const std::vector<BenchResult>& results) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : results)
    list.push_back({{"case", r.case_id}, {"device", r.device}, {"timer", r.timer},
                    {"status", to_string(r.status)}, {"reason", r.reason}, {"samples", r.samples},
                    {"median_ms", r.median_ms}, {"min_ms", r.min_ms}, {"p10_ms", r.p10_ms}, {"p90_ms", r.p90_ms},
                    {"bytes", r.bytes}, {"flops", r.flops}, {"bytes_per_s", r.bytes_per_s()},
                    {"flops_per_s", r.flops_per_s()}, {"working_set_bytes", r.working_set_bytes}});
  return {{"schema_version", 0}, {"note", "interim format; issue 5 replaces it with Google Benchmark JSON"},
          {"results", list}};
}

}  // namespace dnnb
