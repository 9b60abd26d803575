// `dnnblocks bench` (interim): median device time of each implementation on the spec's bench
// problems, achieved bandwidth and FLOP/s, next to the device's empty-launch time and, when
// given, a measured bandwidth ceiling. Issue 5 turns this into the Google Benchmark based
// bench with roofline ceilings and reports.
#include <cstdio>
#include <fstream>
#include <map>

#include "core/bench.h"
#include "core/cli/commands.h"

namespace dnnb::cli {

namespace {

struct BenchArgs {
  BenchOptions options;
  std::string out_path;
  double ceiling_gbps = 0;
};

int run_bench_command(BenchArgs& args) {
  auto results = run_bench(args.options);
  if (!results) {
    std::fprintf(stderr, "dnnblocks bench: %s\n", results.status().message.c_str());
    return 2;
  }
  // Probes of every device used: the empty-launch time and the copy ceiling, measured in
  // this same run so ratios are not against stale figures.
  std::map<std::string, double> empty_ms, copy_bps;
  nlohmann::json probe_json = nlohmann::json::object();
  for (const auto& r : *results) {
    if (r.device.empty() || probe_json.contains(r.device)) continue;
    DeviceRuntime* d = DeviceSet::instance().find(r.device);
    probe_json[r.device] = nlohmann::json::object();
    if (!d) continue;
    for (auto& [name, value] : run_device_probes(*d)) {
      if (value) {
        probe_json[r.device][name] = *value;
        if (name == "empty_launch_ms") empty_ms[r.device] = *value;
        if (name == "copy_bytes_per_s") copy_bps[r.device] = *value;
        std::printf("%s: %s = %.6g\n", r.device.c_str(), name.c_str(), *value);
      } else {
        probe_json[r.device][name] = value.status().to_string();
        std::printf("%s: %s: %s\n", r.device.c_str(), name.c_str(), value.status().to_string().c_str());
      }
    }
  }
  std::printf("%-62s %-8s %7s %10s %7s %9s %8s %s\n", "case", "device", "samples", "median_us", "spread", "GB/s",
              "%copy", "x empty");
  int failed = 0;
  for (const auto& r : *results) {
    if (r.status != StatusCode::ok) {
      std::printf("%-62s %-8s %s: %s\n", r.case_id.c_str(), r.device.c_str(), to_string(r.status), r.reason.c_str());
      failed += r.status == StatusCode::error || r.status == StatusCode::bad_input;
      continue;
    }
    const double gbps = r.bytes_per_s() / 1e9;
    char ceil[16] = "";
    const double ceiling = args.ceiling_gbps > 0 ? args.ceiling_gbps * 1e9 : (copy_bps.count(r.device) ? copy_bps[r.device] : 0);
    if (ceiling > 0) std::snprintf(ceil, sizeof ceil, "%.1f%%", 100 * r.bytes_per_s() / ceiling);
    const double e = empty_ms.count(r.device) ? empty_ms[r.device] : -1;
    char xempty[16] = "";
    if (e > 0) std::snprintf(xempty, sizeof xempty, "%.1f", r.median_ms / e);
    std::printf("%-62s %-8s %7d %10.2f %6.1f%% %9.1f %8s %s\n", r.case_id.c_str(), r.device.c_str(), r.samples,
                r.median_ms * 1e3, 100 * r.spread(), gbps, ceil, xempty);
  }
  if (!args.out_path.empty()) {
    std::ofstream out(args.out_path);
    if (!out) {
      std::fprintf(stderr, "dnnblocks bench: --out: cannot write '%s'\n", args.out_path.c_str());
      return 2;
    }
    nlohmann::json j = bench_to_json(*results);
    j["device_probes"] = probe_json;
    if (args.ceiling_gbps > 0) j["ceiling_override_bytes_per_s"] = args.ceiling_gbps * 1e9;
    out << j.dump(1) << "\n";
  }
  return failed ? 1 : 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Time implementations (interim: device timers, medians)");
  cmd->add_option("--op", args->options.op_glob, "Op name or glob");
  cmd->add_option("--backend", args->options.backend, "Backend (or backend/variant)");
  cmd->add_option("--dtype", args->options.dtype, "f32, f16, bf16");
  cmd->add_option("--device", args->options.device, "Device id");
  cmd->add_option("--size", args->options.size, "shape[:params], e.g. 16384x8192 (default: the spec's bench problems)");
  cmd->add_option("--repetitions", args->options.repetitions, "Timed samples (default 50)")->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", args->options.warmup, "Untimed launches first (default 10)")->check(CLI::Range(0, 100000));
  cmd->add_option("--min-time", args->options.min_time_s, "Sample until this much device time (seconds)");
  cmd->add_option("--ceiling-gbps", args->ceiling_gbps, "Bandwidth ceiling in GB/s to report % of (default: the copy probe measured in this run)");
  cmd->add_option("--out", args->out_path, "Write results as JSON");
  cmd->callback([args, &exit_code] { exit_code = run_bench_command(*args); });
}

}  // namespace dnnb::cli
