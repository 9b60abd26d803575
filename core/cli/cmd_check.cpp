// `dnnblocks check`: every implementation of every selected op against PyTorch fixtures and
// the reference; a table, a summary, the repro line of each failure, JSON and JUnit files.
#include <unistd.h>

#include <algorithm>
#include <chrono>
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
  if (!o.torch_rule.empty()) {
    s += " | rule: max_abs " + o.torch_rule + (o.within_torch ? " (met)" : " (not met)");
    return s;
  }
  s += " | " + o.tolerance.describe();
  if (o.within_torch) s += " (outside policy, within torch's own error)";
  return s;
}

// The tensors of a --weights file that an op takes no case from: each with --verbose, else one
// line per op and reason with the count and the first names.
void print_skipped_tensors(const std::vector<SkippedTensor>& skipped, bool verbose) {
  if (verbose) {
    for (const SkippedTensor& t : skipped)
      std::printf("SKIP  tensor %s (%s) for %s: %s\n", t.tensor.c_str(), t.what.c_str(), t.op.c_str(), t.reason.c_str());
    return;
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // "op: reason" -> tensors, in file order
  for (const SkippedTensor& t : skipped) {
    const std::string key = t.op + ": " + t.reason;
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& e) { return e.first == key; });
    if (g == groups.end()) g = groups.insert(groups.end(), {key, {}});
    g->second.push_back(t.tensor + " (" + t.what + ")");
  }
  constexpr size_t kShown = 3;
  for (const auto& [key, names] : groups) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < kShown; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > kShown) list += ", ... (--verbose lists them)";
    std::printf("SKIP  %zu tensors for %s: %s\n", names.size(), key.c_str(), list.c_str());
  }
}

struct CheckArgs {
  CheckOptions options;
  std::string tier = "ci";
  std::string json_path, junit_path;
  bool verbose = false;
  bool no_random = false, no_fixtures = false;
};

// Seconds and cases per implementation label and device, in the order they first ran.
struct BackendTime {
  std::string where;
  int cases = 0;
  double seconds = 0;
};

int run_check_command(CheckArgs& args) {
  args.options.random = !args.no_random;
  args.options.fixtures = !args.no_fixtures;
  auto tier = parse_check_tier(args.tier);
  if (!tier) {
    std::fprintf(stderr, "dnnblocks check: %s\n", tier.status().message.c_str());
    return 2;
  }
  args.options.tier = *tier;
  if (!(args.options.case_timeout_s >= 0)) {
    std::fprintf(stderr, "dnnblocks check: --case-timeout: %g is not a number of seconds >= 0\n", args.options.case_timeout_s);
    return 2;
  }
  FixtureManifest manifest;
  std::vector<SkippedTensor> skipped_tensors;
  auto plan = plan_check(args.options, manifest, &skipped_tensors);
  if (!plan) {
    std::fprintf(stderr, "dnnblocks check: %s\n", plan.status().message.c_str());
    return 2;
  }
  const bool tty = isatty(fileno(stderr));
  std::map<std::string, int> folded_skips;  // "backend: reason" -> count
  std::vector<BackendTime> times;
  const auto started = std::chrono::steady_clock::now();
  if (tty && !plan->empty()) std::fprintf(stderr, "[1/%zu] %s", plan->size(), (*plan)[0].id.to_string().c_str());
  size_t finished = 0;
  auto on_result = [&](size_t i, const CaseResult& r) {
    const PlannedCase& pc = (*plan)[i];
    ++finished;
    const bool quiet_skip = (r.status == StatusCode::skipped || r.status == StatusCode::unsupported) && !args.verbose &&
                            r.reason.rfind("not run: ", 0) != 0;
    if (quiet_skip) {
      folded_skips[std::string(r.verdict()) + " " + pc.id.backend + ": " + r.reason]++;
    } else {
      if (tty) std::fprintf(stderr, "\r\033[K");
      std::printf("%-5s %s  %s  %.1fms  %s\n", r.verdict(), r.case_id.c_str(), r.device.c_str(), r.seconds * 1e3,
                  r.source.c_str());
      for (const auto& o : r.outputs) std::printf("        %s\n", format_output(o).c_str());
      if (r.quantize_stats) std::printf("        quantize-stats: %s\n", quantize_stats_line(*r.quantize_stats).c_str());
      if (r.status != StatusCode::ok && !r.reason.empty()) std::printf("        %s\n", r.reason.c_str());
      if (r.timed_out) std::printf("        rerun: %s\n", repro_command(r, args.options).c_str());
      std::fflush(stdout);
    }
    const std::string where = pc.impl->label() + (r.device.empty() ? "" : "@" + r.device);
    auto t = std::find_if(times.begin(), times.end(), [&](const BackendTime& b) { return b.where == where; });
    if (t == times.end()) t = times.insert(times.end(), BackendTime{where});
    t->cases++;
    t->seconds += r.seconds;
    if (tty && finished < plan->size())
      std::fprintf(stderr, "\r\033[K[%zu/%zu done] %s", finished, plan->size(), r.case_id.c_str());
  };
  std::vector<CaseResult> results = run_plan(*plan, manifest, args.options, on_result);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (tty) std::fprintf(stderr, "\r\033[K");
  for (const auto& [what, count] : folded_skips) std::printf("%s (%d cases; --verbose lists them)\n", what.c_str(), count);
  print_skipped_tensors(skipped_tensors, args.verbose);

  std::printf("\ntime per implementation and device (tier %s, variants %s):\n", args.tier.c_str(),
              args.options.all_variants || args.options.tier == CheckTier::full ? "all" : "defaults");
  for (const auto& t : times) std::printf("  %-32s %6d cases %9.2f s\n", t.where.c_str(), t.cases, t.seconds);
  std::printf("  %-32s %6zu cases %9.2f s wall\n", "all", results.size(), wall);
  CheckSummary s = summarize(results);
  int timeouts = 0;
  for (const auto& r : results) timeouts += r.timed_out;
  std::printf("\ncheck: %d passed, %d failed, %d expected failures (known peer deviations), %d skipped, %d unsupported, %d bad input\n",
              s.passed, s.failed, s.expected_failures, s.skipped, s.unsupported, s.bad_input);
  if (!args.options.weights_path.empty())
    std::printf("check: %zu tensor and op pairs of %s skipped (no case: listed above)\n", skipped_tensors.size(),
                args.options.weights_path.c_str());
  if (timeouts > 0) std::printf("check: %d of the failed cases timed out (--case-timeout %g s)\n", timeouts, args.options.case_timeout_s);
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
    nlohmann::json j = results_to_json(results);
    if (!args.options.weights_path.empty()) {
      j["weights"] = args.options.weights_path;
      j["skipped_tensors"] = nlohmann::json::array();
      for (const SkippedTensor& t : skipped_tensors)
        j["skipped_tensors"].push_back({{"op", t.op}, {"tensor", t.tensor}, {"what", t.what}, {"reason", t.reason}});
    }
    out << j.dump(1) << "\n";
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
  cmd->add_option("--op", args->options.op_glob, "Op names or globs, comma-separated (default: all)");
  cmd->add_option("--backend", args->options.backend, "reference, avx512, cuda, opencl, onednn, cublas, backend/variant, or a comma-separated list of them");
  cmd->add_option("--dtype", args->options.dtype, "f32, f16, bf16, ...");
  cmd->add_option("--device", args->options.device, "Device id: cpu:0, cuda:0, opencl:0.0");
  cmd->add_option("--case", args->options.case_id, "Rerun exactly one case id (as printed)");
  cmd->add_flag("--serial", args->options.serial,
                "One case at a time in plan order (default: each device runs its cases side by side with the others)");
  cmd->add_option("--fixtures", args->options.fixtures_dir, "Fixtures directory holding manifest.json");
  cmd->add_option("--weights", args->options.weights_path,
                  "A GGUF file: check the ops that take weights (matmul_ggml, dequantize_blocks, quantize_blocks) with "
                  "its tensors as their weight operand, other inputs random, against the reference (no fixtures or "
                  "random problems)");
  cmd->add_option("--tensor", args->options.weights_tensors,
                  "With --weights: only these tensors of the file, comma-separated (default: every tensor)");
  cmd->add_option("--json", args->json_path, "Write results as JSON");
  cmd->add_option("--junit", args->junit_path, "Write results as JUnit XML");
  cmd->add_option("--tier", args->tier,
                  "smoke: one fixture per op and dtype; ci (default): every fixture and the random problems; "
                  "full: also the bench problems and every variant");
  add_variants_option(cmd, args->options.all_variants,
                      "check each backend's default implementation (a variant named in --backend B/V always runs)");
  cmd->add_option("--case-timeout", args->options.case_timeout_s,
                  "Seconds a case may take before it is reported TIMEOUT and the run goes on (0: no limit; default 600)");
  cmd->add_flag("--bitwise", args->options.bitwise, "Run each case twice and require identical bits");
  cmd->add_flag("--no-random", args->no_random, "Only fixture cases");
  cmd->add_flag("--no-fixtures", args->no_fixtures, "Only random cases against the reference");
  cmd->add_flag("-v,--verbose", args->verbose, "List skipped and unsupported cases one by one");
  cmd->callback([args, &exit_code] { exit_code = run_check_command(*args); });
}

}  // namespace dnnb::cli
