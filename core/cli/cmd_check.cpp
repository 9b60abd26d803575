// `dnnblocks check`: every implementation of every selected op against PyTorch fixtures and
// the reference; a table, a summary, the repro line of each failure, JSON and JUnit files.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "core/check.h"
#include "core/cli/commands.h"

namespace dnnb::cli {

namespace {

std::string format_output(const OutputResult& o) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: max_abs %.2e rel_l2 %.2e ulp %lld", o.name.c_str(), o.ours.max_abs,
                o.ours.rel_l2, static_cast<long long>(o.ours.max_ulp));
  std::string s = buf;
  if (o.has_torch) {
    std::snprintf(buf, sizeof buf, " | torch max_abs %.2e rel_l2 %.2e", o.torch.max_abs, o.torch.rel_l2);
    s += buf;
  }
  s += " | " + o.tolerance.describe();
  if (o.within_torch) s += " (outside policy, within torch's own error)";
  return s;
}

struct CheckArgs {
  CheckOptions options;
  std::string json_path, junit_path;
  bool verbose = false;
  bool no_random = false, no_fixtures = false;
};

int run_check_command(CheckArgs& args) {
  args.options.random = !args.no_random;
  args.options.fixtures = !args.no_fixtures;
  FixtureManifest manifest;
  auto plan = plan_check(args.options, manifest);
  if (!plan) {
    std::fprintf(stderr, "dnnblocks check: %s\n", plan.status().message.c_str());
    return 2;
  }
  const bool tty = isatty(fileno(stderr));
  std::vector<CaseResult> results;
  results.reserve(plan->size());
  std::map<std::string, int> folded_skips;  // "backend: reason" -> count
  for (size_t i = 0; i < plan->size(); ++i) {
    const PlannedCase& pc = (*plan)[i];
    if (tty) std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", i + 1, plan->size(), pc.id.to_string().c_str());
    CaseResult r = run_case(pc, manifest, args.options);
    const bool quiet_skip = (r.status == StatusCode::skipped || r.status == StatusCode::unsupported) && !args.verbose;
    if (quiet_skip) {
      folded_skips[std::string(r.verdict()) + " " + pc.id.backend + ": " + r.reason]++;
    } else {
      if (tty) std::fprintf(stderr, "\r\033[K");
      std::printf("%-5s %s  %s  %.1fms  %s\n", r.verdict(), r.case_id.c_str(), r.device.c_str(), r.seconds * 1e3,
                  r.source.c_str());
      for (const auto& o : r.outputs) std::printf("        %s\n", format_output(o).c_str());
      if (r.status != StatusCode::ok && !r.reason.empty()) std::printf("        %s\n", r.reason.c_str());
    }
    results.push_back(std::move(r));
  }
  if (tty) std::fprintf(stderr, "\r\033[K");
  for (const auto& [what, count] : folded_skips) std::printf("%s (%d cases; --verbose lists them)\n", what.c_str(), count);

  CheckSummary s = summarize(results);
  std::printf("\ncheck: %d passed, %d failed, %d expected failures (known peer deviations), %d skipped, %d unsupported, %d bad input\n",
              s.passed, s.failed, s.expected_failures, s.skipped, s.unsupported, s.bad_input);
  if (s.failed + s.bad_input > 0) {
    std::printf("failures:\n");
    for (const auto& r : results) {
      if (!r.failed() && r.status != StatusCode::bad_input) continue;
      std::printf("  %s %s\n    %s\n    rerun: %s\n", r.verdict(), r.case_id.c_str(), r.reason.c_str(),
                  repro_command(r, args.options).c_str());
    }
  }
  if (!args.json_path.empty()) {
    std::ofstream out(args.json_path);
    if (!out) {
      std::fprintf(stderr, "dnnblocks check: --json: cannot write '%s'\n", args.json_path.c_str());
      return 2;
    }
    out << results_to_json(results).dump(1) << "\n";
  }
  if (!args.junit_path.empty()) {
    std::ofstream out(args.junit_path);
    if (!out) {
      std::fprintf(stderr, "dnnblocks check: --junit: cannot write '%s'\n", args.junit_path.c_str());
      return 2;
    }
    out << results_to_junit(results);
  }
  return s.exit_code();
}

}  // namespace

void add_check_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand("check", "Check implementations against PyTorch fixtures and the reference");
  cmd->add_option("--op", args->options.op_glob, "Op name or glob (default: all)");
  cmd->add_option("--backend", args->options.backend, "reference, avx512, cuda, opencl, onednn, cublas (or backend/variant)");
  cmd->add_option("--dtype", args->options.dtype, "f32, f16, bf16, ...");
  cmd->add_option("--device", args->options.device, "Device id: cpu:0, cuda:0, opencl:0.0");
  cmd->add_option("--case", args->options.case_id, "Rerun exactly one case id (as printed)");
  cmd->add_option("--fixtures", args->options.fixtures_dir, "Fixtures directory holding manifest.json");
  cmd->add_option("--json", args->json_path, "Write results as JSON");
  cmd->add_option("--junit", args->junit_path, "Write results as JUnit XML");
  cmd->add_flag("--bitwise", args->options.bitwise, "Run each case twice and require identical bits");
  cmd->add_flag("--no-random", args->no_random, "Only fixture cases");
  cmd->add_flag("--no-fixtures", args->no_fixtures, "Only random cases against the reference");
  cmd->add_flag("-v,--verbose", args->verbose, "List skipped and unsupported cases one by one");
  cmd->callback([args, &exit_code] { exit_code = run_check_command(*args); });
}

}  // namespace dnnb::cli
