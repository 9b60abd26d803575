// The ceiling probe registry, DeviceCeilings and its JSON (docs/bench-json.md
// "devices.<id>.ceilings"), measuring one device, and loading a saved file. A saved file is
// untrusted input: every key is checked for presence, type and range, and the first problem
// is reported as bad_input naming the file and the key.
#include "core/ceilings.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <exception>
#include <fstream>
#include <sstream>

namespace dnnb {

namespace {

using nlohmann::json;

std::vector<CeilingProbe>& ceiling_probes() {
  static std::vector<CeilingProbe> list;
  return list;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (!gmtime_r(&now, &utc)) return "";
  char text[32];
  if (std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc) == 0) return "";
  return text;
}

// A short description of a JSON value for error messages ("a string", "-3").
std::string describe(const json& j) {
  if (j.is_number()) return j.dump();
  std::string type = j.type_name();
  const bool vowel = !type.empty() && std::string("aeiou").find(type[0]) != std::string::npos;
  return std::string(vowel ? "an " : "a ") + type;
}

// Field readers for from_json. `key` is the dotted path shown in the error.
Status bad_key(const std::string& key, const std::string& what) {
  return Status::bad_input("key '" + key + "': " + what);
}

Status read_string(const json& parent, const char* name, const std::string& key, bool required, std::string& out) {
  auto it = parent.find(name);
  if (it == parent.end()) return required ? bad_key(key, "missing (a string is required)") : Status::ok();
  if (!it->is_string()) return bad_key(key, "expected a string, got " + describe(*it));
  out = it->get<std::string>();
  return Status::ok();
}

// A finite number >= 0. JSON has no NaN/Inf literal; overflowing literals parse to +-inf.
Status read_non_negative(const json& parent, const char* name, const std::string& key, bool required, double& out) {
  auto it = parent.find(name);
  if (it == parent.end()) return required ? bad_key(key, "missing (a number >= 0 is required)") : Status::ok();
  if (!it->is_number()) return bad_key(key, "expected a number, got " + describe(*it));
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0) return bad_key(key, "expected a finite number >= 0, got " + it->dump());
  out = v;
  return Status::ok();
}

Result<ProbeResult> probe_from_json(const json& j, const std::string& key) {
  if (!j.is_object()) return bad_key(key, "expected an object {value, spread, samples, how}, got " + describe(j));
  ProbeResult r;
  DNNB_TRY(read_non_negative(j, "value", key + ".value", true, r.value));
  if (r.value <= 0) return bad_key(key + ".value", "a measured ceiling must be > 0, got " + j.at("value").dump());
  DNNB_TRY(read_non_negative(j, "best", key + ".best", false, r.best));
  DNNB_TRY(read_non_negative(j, "spread", key + ".spread", false, r.spread));
  auto samples = j.find("samples");
  if (samples != j.end()) {
    if (!samples->is_number_integer() || samples->get<long long>() < 1 || samples->get<long long>() > 1000000000)
      return bad_key(key + ".samples", "expected an integer >= 1, got " + samples->dump());
    r.samples = static_cast<int>(samples->get<long long>());
  }
  DNNB_TRY(read_string(j, "how", key + ".how", false, r.how));
  return r;
}

Result<DeviceCeilings> ceilings_from_json(const json& j, const std::string& source, const std::string& prefix) {
  if (!j.is_object()) return bad_key(prefix.empty() ? "(top level)" : prefix, "expected an object, got " + describe(j));
  auto key = [&](const std::string& name) { return prefix.empty() ? name : prefix + "." + name; };
  DeviceCeilings c;
  c.source = source;
  DNNB_TRY(read_string(j, "device", key("device"), true, c.device));
  if (c.device.empty()) return bad_key(key("device"), "empty device id");
  DNNB_TRY(read_string(j, "name", key("name"), false, c.name));
  DNNB_TRY(read_string(j, "date", key("date"), false, c.date));
  DNNB_TRY(read_non_negative(j, "seconds", key("seconds"), false, c.seconds));
  auto measured = j.find("measured");
  if (measured == j.end()) return bad_key(key("measured"), "missing (an object of probe results is required)");
  if (!measured->is_object()) return bad_key(key("measured"), "expected an object, got " + describe(*measured));
  for (const auto& [name, value] : measured->items()) {
    if (name.empty()) return bad_key(key("measured"), "empty probe name");
    auto probe = probe_from_json(value, key("measured." + name));
    if (!probe) return probe.status();
    c.measured[name] = *probe;
  }
  auto failed = j.find("failed");
  if (failed != j.end()) {
    if (!failed->is_object()) return bad_key(key("failed"), "expected an object, got " + describe(*failed));
    for (const auto& [name, reason] : failed->items()) {
      if (!reason.is_string()) return bad_key(key("failed." + name), "expected a string, got " + describe(reason));
      c.failed[name] = reason.get<std::string>();
    }
  }
  return c;
}

}  // namespace

bool register_ceiling_probe(CeilingProbe probe) {
  ceiling_probes().push_back(std::move(probe));
  return true;
}

std::vector<std::string> ceiling_probe_names(DeviceKind kind) {
  std::vector<std::string> names;
  for (const auto& p : ceiling_probes())
    if (p.kind == kind) names.push_back(p.name);
  return names;
}

Result<ProbeResult> probe_result_from_samples(std::vector<double> samples, std::string how, SampleKind kind) {
  if (samples.empty()) return Status::error("no samples were taken");
  for (double s : samples)
    if (!std::isfinite(s) || s <= 0) return Status::error("a sample was not a finite positive number: " + std::to_string(s));
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  const double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  ProbeResult r;
  r.value = median;
  r.best = kind == SampleKind::rate ? samples.back() : samples.front();
  r.spread = (samples.back() - samples.front()) / median;
  r.samples = static_cast<int>(n);
  r.how = std::move(how);
  return r;
}

double DeviceCeilings::value(const std::string& probe) const {
  auto it = measured.find(probe);
  return it == measured.end() ? 0 : it->second.value;
}

double DeviceCeilings::bandwidth_bytes_per_s() const {
  return std::max(value("dram_copy_bytes_per_s"), value("dram_read_bytes_per_s"));
}

double DeviceCeilings::flops_per_s(const std::string& unit) const { return value(unit + "_flops_per_s"); }

json DeviceCeilings::to_json() const {
  json m = json::object();
  for (const auto& [probe, r] : measured) {
    m[probe] = {{"value", r.value}, {"spread", r.spread}, {"samples", r.samples}, {"how", r.how}};
    if (r.best > 0) m[probe]["best"] = r.best;
  }
  json f = json::object();
  for (const auto& [probe, reason] : failed) f[probe] = reason;
  return {{"device", device}, {"name", name},   {"source", source}, {"date", date},
          {"seconds", seconds}, {"measured", m}, {"failed", f}};
}

Result<DeviceCeilings> DeviceCeilings::from_json(const json& j, const std::string& source) {
  auto c = ceilings_from_json(j, source, "");
  if (!c) return Status::bad_input("ceilings from " + source + ": " + c.status().message);
  return c;
}

namespace {

// A probe must return a Status, but one that throws (std::bad_alloc on a huge buffer) must
// not take the other probes down with it.
Result<ProbeResult> run_probe(const CeilingProbe& probe, DeviceRuntime& device, const ProbeOptions& options) {
  Result<ProbeResult> r = Status::error("not run");
  try {
    r = probe.measure(device, options);
  } catch (const std::exception& e) {
    return Status::error(std::string("exception: ") + e.what());
  }
  if (r && (!std::isfinite(r->value) || r->value <= 0))
    return Status::error("probe returned a non-positive value (" + std::to_string(r->value) + ")");
  return r;
}

}  // namespace

DeviceCeilings measure_ceilings(DeviceRuntime& device, const ProbeOptions& options) {
  // Other work on the machine only ever lowers a rate, and a disturbed round shows as a wide
  // spread. A probe whose spread exceeds kQuietSpread is measured again (at most kMaxRounds
  // rounds, and only if another round, as long as the last, still ends inside the device's
  // retry budget) and the round with the smallest spread is kept: its median is the figure of
  // a quiet machine, so two runs agree. The budget keeps a full run under 60 s per device.
  constexpr double kQuietSpread = 0.05;
  constexpr int kMaxRounds = 3;
  const double budget_s = options.quick ? 4 : 45;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  DeviceCeilings c;
  c.device = device.info().id;
  c.name = device.info().name;
  c.source = "measured in this run";
  c.date = utc_now_iso8601();
  for (const auto& probe : ceiling_probes()) {
    if (probe.kind != device.info().kind) continue;
    double started = elapsed();
    Result<ProbeResult> best = run_probe(probe, device, options);
    double round_s = elapsed() - started;
    int rounds = 1;
    while (best && best->spread > kQuietSpread && rounds < kMaxRounds && elapsed() + round_s < budget_s) {
      started = elapsed();
      Result<ProbeResult> again = run_probe(probe, device, options);
      round_s = elapsed() - started;
      ++rounds;
      if (again && again->spread < best->spread) best = std::move(again);
    }
    if (!best) {
      c.failed[probe.name] = best.status().to_string();
      continue;
    }
    if (rounds > 1)
      best->how += "; the quietest of " + std::to_string(rounds) + " rounds (spread above " +
                   std::to_string(static_cast<int>(kQuietSpread * 100)) + "% triggers another)";
    c.measured[probe.name] = *best;
  }
  c.seconds = elapsed();
  return c;
}

Result<std::map<std::string, DeviceCeilings>> load_ceilings(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::bad_input(path + ": cannot open ceilings file");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::bad_input(path + ": read error");
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::exception& e) {
    return Status::bad_input(path + ": not valid JSON (" + e.what() + ")");
  }
  auto fail = [&](const Status& s) { return Status::bad_input(path + ": " + s.message); };
  if (!j.is_object()) return fail(bad_key("(top level)", "expected an object, got " + describe(j)));
  auto version = j.find("schema_version");
  if (version == j.end()) return fail(bad_key("schema_version", "missing"));
  if (!version->is_number_integer() || version->get<long long>() != 1)
    return fail(bad_key("schema_version", "expected 1, got " + version->dump()));
  auto kind = j.find("kind");
  if (kind != j.end() && (!kind->is_string() || kind->get<std::string>() != "ceilings"))
    return fail(bad_key("kind", "expected \"ceilings\", got " + kind->dump()));
  auto devices = j.find("devices");
  if (devices == j.end()) return fail(bad_key("devices", "missing"));
  if (!devices->is_object()) return fail(bad_key("devices", "expected an object {id: ceilings}, got " + describe(*devices)));
  std::map<std::string, DeviceCeilings> result;
  for (const auto& [id, value] : devices->items()) {
    auto c = ceilings_from_json(value, "file " + path, "devices." + id);
    if (!c) return fail(c.status());
    if (c->device != id)
      return fail(bad_key("devices." + id + ".device", "says '" + c->device + "', the key says '" + id + "'"));
    result.emplace(id, std::move(*c));
  }
  return result;
}

Result<std::vector<double>> time_probe_samples(DeviceRuntime& device, const ProbePlan& plan,
                                               const std::function<Status()>& launch) {
  auto timer = device.make_timer();
  if (!timer) return timer.status();
  auto timed = [&]() -> Result<double> {
    DNNB_TRY((*timer)->start());
    DNNB_TRY(launch());
    DNNB_TRY((*timer)->stop());
    return (*timer)->elapsed_ms();
  };
  // Warm-ups go through the timer too, so a GPU timer's lead fits these launches before the
  // first sample (core/device.h, DeviceTimer::late).
  for (int i = 0; i < plan.warmups; ++i) {
    auto elapsed = timed();
    if (!elapsed) return elapsed.status();
  }
  std::vector<double> ms;
  int retakes = plan.samples;  // a late sample is taken again, this many times in all
  while (static_cast<int>(ms.size()) < plan.samples) {
    auto elapsed = timed();
    if (!elapsed) return elapsed.status();
    if ((*timer)->late() && retakes-- > 0) continue;
    ms.push_back(*elapsed);
  }
  return ms;
}

Result<long long> calibrate_probe_count(DeviceRuntime& device, double target_s, int max_rounds,
                                        const std::function<Status(long long)>& launch) {
  DNNB_TRY(launch(1));
  long long count = 1;
  for (int round = 0; round < max_rounds; ++round) {
    auto ms = time_probe_samples(device, ProbePlan{0, 1, 0}, [&] { return launch(count); });
    if (!ms) return ms.status();
    const double s = ms->front() * 1e-3;
    if (s >= target_s / 10) return std::max(1ll, static_cast<long long>(count * target_s / s));
    count *= 4;
  }
  return Status::error("calibration: the kernel did not take measurable time");
}

Result<ProbeResult> probe_rates(std::vector<double> ms, double amount, std::string how) {
  for (double& m : ms) m = m > 0 ? amount / (m * 1e-3) : 0;
  return probe_result_from_samples(std::move(ms), std::move(how));
}

}  // namespace dnnb
