// `dnnblocks bench`: times implementations (core/bench.h), prints one line per case as it
// finishes (a progress line on a terminal), and writes the results file (docs/bench-json.md).
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "core/bench.h"
#include "core/cli/commands.h"

namespace dnnb::cli {

namespace {

struct BenchArgs {
  BenchOptions options;
  std::string cache = "cold";
  std::string slowdown;
  std::string out_path;
  std::string command_line;
};

std::string fixed(double v, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

void print_header() {
  std::printf("%-58s %-10s %10s %6s %9s %6s %-7s %6s %7s  %s\n", "case", "device", "median_us", "cv%", "GB/s", "%SOL",
              "bound", "%copy", "xempty", "flags");
}

void print_result(const BenchResult& r, const DeviceCeilings* dc) {
  const std::string id = r.id.to_string();
  if (r.status != StatusCode::ok) {
    std::printf("%-58s %-10s %s: %s\n", id.c_str(), r.device.c_str(), to_string(r.status), r.reason.c_str());
    if (!r.block.empty()) std::printf("    node %s of %s\n", r.nodes.empty() ? "" : r.nodes[0].c_str(), r.block.c_str());
    std::fflush(stdout);
    return;
  }
  DeviceRuntime* d = DeviceSet::instance().find(r.device);
  const nlohmann::json roof = roofline_json(r, dc, d ? &d->info() : nullptr);
  const double empty = dc ? dc->value("empty_launch_s") : 0;
  std::string flags;
  for (const auto& f : r.flags) flags += (flags.empty() ? "" : "; ") + f;
  std::printf("%-58s %-10s %10.2f %6.2f %9.1f %6.1f %-7s %6s %7s  %s\n", id.c_str(), r.device.c_str(), r.median_s * 1e6,
              r.cv * 100, r.bytes_per_s() / 1e9, roof["sol_percent"].get<double>(), roof["bound_by"].get<std::string>().c_str(),
              roof["pct_of_copy"].is_number() ? fixed(roof["pct_of_copy"].get<double>(), 1).c_str() : "-",
              empty > 0 ? fixed(r.median_s / empty, 1).c_str() : "-", flags.c_str());
  // Blocks (OpSpec::tokens): the tokens one launch processes, per second of its median.
  if (const OpSpec* spec = Registry::instance().find_op(r.id.problem.op); spec && spec->tokens && r.median_s > 0)
    std::printf("    %.0f tokens/s (%.0f tokens per launch)\n", spec->tokens(r.id.problem) / r.median_s, spec->tokens(r.id.problem));
  // Node cases (--nodes): which block and which of its nodes this problem is.
  if (!r.block.empty()) {
    std::string names;
    for (const auto& n : r.nodes) names += (names.empty() ? "" : ", ") + n;
    std::printf("    node%s %s of %s\n", r.nodes.size() > 1 ? "s" : "", names.c_str(), r.block.c_str());
  }
  std::fflush(stdout);
}

int run_bench_command(BenchArgs& args) {
  if (args.cache != "cold" && args.cache != "hot") {
    std::fprintf(stderr, "dnnblocks bench: --cache: expected cold or hot, got '%s'\n", args.cache.c_str());
    return 2;
  }
  args.options.cache = args.cache == "cold" ? CachePolicy::cold : CachePolicy::hot;
  if (!args.slowdown.empty()) {
    const auto eq = args.slowdown.rfind('=');
    char* end = nullptr;
    const double pct = eq == std::string::npos ? -1 : std::strtod(args.slowdown.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == nullptr || *end != '\0' || !(pct >= 0)) {
      std::fprintf(stderr, "dnnblocks bench: --slowdown: expected GLOB=PERCENT, e.g. 'add:f32:*@cuda:0=5', got '%s'\n",
                   args.slowdown.c_str());
      return 2;
    }
    args.options.slowdown_glob = args.slowdown.substr(0, eq);
    args.options.slowdown_percent = pct;
  }
  const bool terminal = isatty(fileno(stderr));
  int failed = 0;
  print_header();
  auto on_result = [&](const BenchResult& r, const DeviceCeilings* ceilings, size_t done, size_t total) {
    if (terminal) std::fprintf(stderr, "\r\033[K");
    print_result(r, ceilings);
    failed += r.status == StatusCode::error;
    if (terminal) {  // a bar on stderr under the result lines: [#####.....] 12/340 case
      constexpr int kWidth = 30;
      const int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
      std::fprintf(stderr, "[%s%s] %zu/%zu %s", std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
                   done, total, r.id.to_string().c_str());
    }
  };
  auto run = run_bench(args.options, on_result);
  if (terminal) std::fprintf(stderr, "\r\033[K");
  if (!run) {
    std::fprintf(stderr, "dnnblocks bench: %s\n", run.status().message.c_str());
    return run.status().code == StatusCode::bad_input ? 2 : 1;
  }
  // The ceilings each device was judged against, measured in this run unless --ceilings.
  for (const auto& [id, c] : run->ceilings) {
    std::printf("%s ceilings (%s):", id.c_str(), c.source.c_str());
    for (const auto& [name, probe] : c.measured) std::printf(" %s=%.4g", name.c_str(), probe.value);
    std::printf("\n");
  }
  if (!args.out_path.empty()) {
    std::ofstream out(args.out_path);
    if (!out) {
      std::fprintf(stderr, "dnnblocks bench: --out: cannot write '%s'\n", args.out_path.c_str());
      return 2;
    }
    out << bench_file_json(*run, args.command_line).dump(1) << "\n";
    if (!out) {
      std::fprintf(stderr, "dnnblocks bench: --out: writing '%s' failed\n", args.out_path.c_str());
      return 2;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<BenchArgs>();
  BenchOptions& o = args->options;
  CLI::App* cmd = app.add_subcommand("bench", "Time implementations against the device's roofline (Google Benchmark, device timers)");
  cmd->add_option("--op", o.op_glob, "Op names or globs, comma-separated (matmul,linear)");
  cmd->add_option("--backend", o.backend, "Backend, backend/variant, or a comma-separated list of them");
  add_variants_option(cmd, o.all_variants, "time each backend's default implementation");
  cmd->add_option("--dtype", o.dtype, "f32, f16, bf16");
  cmd->add_option("--device", o.devices, "Device id (repeatable; default: the first device of each backend's kind)");
  cmd->add_option("--size", o.size, "shape[:params], e.g. 16384x8192 (default: the spec's bench problems)");
  cmd->add_flag("--sweep", o.sweep, "Rows 1, 4, 16, ... up to each bench problem's rows (or --size's)");
  cmd->add_flag("--nodes", o.nodes, "Blocks: also time each node of the block's graph as a case of its own op");
  cmd->add_option("--case", o.case_ids, "Exact case id to time (repeatable), as check and bench print them");
  cmd->add_option("--repetitions", o.repetitions, "Google Benchmark repetitions per round (default 10)")->check(CLI::Range(2, 100000));
  cmd->add_option("--min-time", o.min_time_s, "Device time per repetition in seconds (sets launches per repetition; default 0.005)")
      ->check(CLI::Range(1e-6, 60.0));
  cmd->add_option("--max-time", o.max_time_s, "Time cap per case in seconds: no new round after it (default 2)")->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--noise-target", o.noise_target, "Stop once cv over repetitions is under this (default 0.01)")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--warmup", o.warmup, "Untimed launches per buffer set first (default 3)")->check(CLI::Range(0, 100000));
  cmd->add_option("--cache", args->cache, "cold (rotate buffers past the last-level cache, default) or hot");
  cmd->add_option("--ceilings", o.ceilings_path, "Ceilings file from `dnnblocks roofline --out` (default: quick probes measured now)");
  cmd->add_option("--slowdown", args->slowdown, "Testing aid: GLOB=PERCENT adds a device-side delay of PERCENT of the launch time to matching cases");
  cmd->add_option("--out", args->out_path, "Write the results file (docs/bench-json.md)");
  cmd->callback([args, &exit_code, &app] {
    args->command_line = "dnnblocks bench";
    for (const auto& o : app.get_subcommand("bench")->get_options())
      for (const auto& r : o->results()) args->command_line += " " + o->get_name() + (o->get_type_size() == 0 ? "" : " " + r);
    exit_code = run_bench_command(*args);
  });
}

}  // namespace dnnb::cli
