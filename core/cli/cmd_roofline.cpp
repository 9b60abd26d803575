// `dnnblocks roofline [--device ID]... [--quick] [--out FILE.json] [--json]`: measures the
// ceilings of each device (core/ceilings.h; docs/roofline.md) and prints them beside the
// theoretical peaks of `dnnblocks devices`. Exit 0 when measured (a probe that cannot run
// here is reported, not fatal), 2 on bad input (an unknown device, an unwritable --out).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/ceilings.h"
#include "core/cli/commands.h"
#include "core/device.h"

namespace dnnb::cli {

namespace {

using nlohmann::json;

struct RooflineArgs {
  std::vector<std::string> devices;
  bool quick = false;
  bool as_json = false;
  std::string out_path;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The measured value in the unit people read: GB/s, GFLOP/s or TFLOP/s, microseconds.
std::string human(const std::string& probe, double value) {
  char text[48];
  if (ends_with(probe, "_bytes_per_s"))
    std::snprintf(text, sizeof text, "%.1f GB/s", value / 1e9);
  else if (ends_with(probe, "_flops_per_s") && value >= 1e12)
    std::snprintf(text, sizeof text, "%.2f TFLOP/s", value / 1e12);
  else if (ends_with(probe, "_flops_per_s"))
    std::snprintf(text, sizeof text, "%.1f GFLOP/s", value / 1e9);
  else if (ends_with(probe, "_s"))
    std::snprintf(text, sizeof text, "%.2f us", value * 1e6);
  else
    std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// The theoretical peak of DeviceInfo.peaks a probe compares with, when `devices` has one:
// DRAM streams against the memory bandwidth, each arithmetic unit against its dtype. AMX and
// caches have no modelled peak.
std::optional<double> theoretical_peak(const DeviceInfo& info, const std::string& probe) {
  auto known = [](double v) { return v > 0 ? std::optional<double>(v) : std::nullopt; };
  if (probe == "dram_copy_bytes_per_s" || probe == "dram_read_bytes_per_s") return known(peak_bandwidth_bytes_per_s(info));
  if (probe == "f32_fma_flops_per_s") return known(peak_flops_per_s(info, "f32"));
  if (probe == "f16_fma_flops_per_s" || probe == "f16_tensor_flops_per_s") return known(peak_flops_per_s(info, "f16"));
  if (probe == "bf16_dot_flops_per_s" || probe == "bf16_tensor_flops_per_s") return known(peak_flops_per_s(info, "bf16"));
  return std::nullopt;
}

// Other work on the host disturbs every probe (the CPU's directly, the GPU's through
// launches): say so before measuring, as the repeatability target assumes a quiet machine.
void warn_if_busy() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return;
  double load = 0;
  const bool read = std::fscanf(f, "%lf", &load) == 1;
  std::fclose(f);
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  if (read && load > 0.5 * cpus)
    std::fprintf(stderr,
                 "dnnblocks roofline: warning: load average %.1f on %u CPUs: other work is running and the "
                 "figures will be lower and noisier than on a quiet machine (see the spread column)\n",
                 load, cpus);
}

void print_table(const DeviceRuntime& device, const DeviceCeilings& c) {
  std::printf("%s  %s  (%s, %s, %.1f s)\n", c.device.c_str(), c.name.c_str(), c.source.c_str(), c.date.c_str(),
              c.seconds);
  std::printf("  %-24s %16s %7s %7s %16s %6s  %s\n", "probe", "measured", "spread", "samples", "theoretical", "ratio",
              "how");
  std::string above_peak;
  for (const auto& [probe, r] : c.measured) {
    std::string peak_text = "-", ratio_text = "-";
    if (auto peak = theoretical_peak(device.info(), probe)) {
      peak_text = human(probe, *peak);
      char ratio[16];
      std::snprintf(ratio, sizeof ratio, "%.0f%%", 100 * r.value / *peak);
      ratio_text = ratio;
      // 5% over: more than timing noise, so the theoretical figure's inputs are wrong.
      if (r.value > 1.05 * *peak) above_peak += (above_peak.empty() ? "" : ", ") + probe;
    }
    std::printf("  %-24s %16s %6.1f%% %7d %16s %6s  %s\n", probe.c_str(), human(probe, r.value).c_str(),
                100 * r.spread, r.samples, peak_text.c_str(), ratio_text.c_str(), r.how.c_str());
  }
  for (const auto& [probe, reason] : c.failed) std::printf("  %-24s not measured: %s\n", probe.c_str(), reason.c_str());
  if (!above_peak.empty())
    std::printf("  note: %s measured above the theoretical peak: its inputs (clock, units per core) are "
                "understated; see peaks.formula in `dnnblocks devices --json`\n",
                above_peak.c_str());
  std::printf("\n");
}

int run_roofline(const RooflineArgs& args) {
  const DeviceSet& set = DeviceSet::instance();
  std::vector<DeviceRuntime*> selected;
  for (const std::string& id : args.devices) {
    DeviceRuntime* d = set.find(id);
    if (!d) {
      std::string known;
      for (const auto& dev : set.devices()) known += (known.empty() ? "" : ", ") + dev->info().id;
      std::fprintf(stderr, "dnnblocks roofline: --device '%s': no such device (devices here: %s)\n", id.c_str(),
                   known.c_str());
      for (const auto& a : set.absences())
        std::fprintf(stderr, "  absent %s: %s\n", to_string(a.kind), a.reason.c_str());
      return 2;
    }
    if (std::find(selected.begin(), selected.end(), d) == selected.end()) selected.push_back(d);
  }
  if (args.devices.empty())
    for (const auto& d : set.devices()) selected.push_back(d.get());

  // Check --out before measuring, so a bad path costs no minute of probes (in append mode: an
  // earlier file survives until the new figures are there to replace it).
  if (!args.out_path.empty() && !std::ofstream(args.out_path, std::ios::app)) {
    std::fprintf(stderr, "dnnblocks roofline: --out: cannot write '%s'\n", args.out_path.c_str());
    return 2;
  }

  warn_if_busy();
  json document = {{"schema_version", 1}, {"kind", "ceilings"}, {"devices", json::object()}};
  for (DeviceRuntime* d : selected) {
    std::fprintf(stderr, "dnnblocks roofline: measuring %s (%s)%s...\n", d->info().id.c_str(), d->info().name.c_str(),
                 args.quick ? " in quick mode" : "");
    DeviceCeilings c = measure_ceilings(*d, ProbeOptions{args.quick});
    document["devices"][c.device] = c.to_json();
    if (!args.as_json) {
      print_table(*d, c);
      std::fflush(stdout);
    }
  }
  if (args.as_json) {
    std::printf("%s\n", document.dump(2).c_str());
  } else {
    if (!set.absences().empty()) std::printf("Absent:\n");
    for (const auto& a : set.absences()) std::printf("  %s: %s\n", to_string(a.kind), a.reason.c_str());
  }
  if (!args.out_path.empty()) {
    std::ofstream out(args.out_path, std::ios::trunc);
    out << document.dump(2) << "\n";
    out.close();
    if (!out) {
      std::fprintf(stderr, "dnnblocks roofline: --out: writing '%s' failed\n", args.out_path.c_str());
      return 2;
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_roofline_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RooflineArgs>();
  CLI::App* cmd = app.add_subcommand("roofline", "Measure each device's ceilings: DRAM and cache bandwidth, FLOP/s per unit");
  cmd->add_option("--device", args->devices, "Device id (repeatable; default: every device found)");
  cmd->add_flag("--quick", args->quick, "Fewer samples and smaller buffers: seconds, not a minute (tests, CI)");
  cmd->add_option("--out", args->out_path, "Write {schema_version, kind: ceilings, devices} as JSON");
  cmd->add_flag("--json", args->as_json, "Print the JSON document instead of the table");
  cmd->callback([args, &exit_code] { exit_code = run_roofline(*args); });
}

}  // namespace dnnb::cli
