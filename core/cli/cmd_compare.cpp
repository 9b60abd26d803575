// `dnnblocks compare BASE CANDIDATE`: the regression gate (core/regression.h). Matches two
// bench, check or baseline files case by case and exits 0 clean, 1 on a regression, 2 on bad
// input; writes the verdict and the largest changes as Markdown, JUnit and JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/cli/commands.h"
#include "core/check.h"
#include "core/regression.h"

namespace dnnb::cli {

namespace {

std::string format_time(double seconds) {
  char buf[32];
  if (seconds >= 1) std::snprintf(buf, sizeof buf, "%.3g s", seconds);
  else if (seconds >= 1e-3) std::snprintf(buf, sizeof buf, "%.4g ms", seconds * 1e3);
  else if (seconds >= 1e-6) std::snprintf(buf, sizeof buf, "%.4g us", seconds * 1e6);
  else std::snprintf(buf, sizeof buf, "%.4g ns", seconds * 1e9);
  return buf;
}

std::string format_change(double fraction) {
  if (std::isinf(fraction)) return fraction > 0 ? "+inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * fraction);
  return buf;
}

std::string format_p(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", p);
  return buf;
}

std::string md_code(const std::string& s) { return "`" + s + "`"; }


bool failing(const TimingComparison& t, bool ambiguous_fails) {
  return t.verdict == TimingVerdict::regression || t.verdict == TimingVerdict::now_failing ||
         (ambiguous_fails && t.verdict == TimingVerdict::ambiguous);
}

std::string timing_row(const TimingComparison& t) {
  std::ostringstream s;
  const bool timed = t.verdict != TimingVerdict::now_failing;
  s << "| " << md_code(t.candidate_case_id) << " | " << format_time(t.base_median_s) << " | "
    << (timed ? format_time(t.candidate_median_s) : "-") << " | " << (timed ? format_change(t.change) : "-") << " | "
    << (timed ? "[" + format_change(t.change_lower) + ", " + format_change(t.change_upper) + "]" : "-") << " | "
    << (timed ? format_p(t.p_value) : "-") << " | " << (timed ? format_change(t.threshold).substr(1) : "-") << " | "
    << (t.verdict == TimingVerdict::same ? "same" : std::string("**") + to_string(t.verdict) + "**")
    << (t.note.empty() ? "" : ": " + t.note) << " |\n";
  return s.str();
}

const char* kTimingHeader =
    "| case | base median | candidate median | change | interval | p | threshold | verdict |\n"
    "|---|---:|---:|---:|---|---:|---:|---|\n";

void status_list(std::ostringstream& md, const char* title, const std::vector<StatusChange>& changes) {
  if (changes.empty()) return;
  md << "\n## " << title << " (" << changes.size() << ")\n\n";
  for (const auto& c : changes) {
    md << "- " << md_code(c.case_id);
    if (!c.base.empty() && !c.candidate.empty()) md << ": " << c.base << " -> " << c.candidate;
    else if (!c.base.empty()) md << " (" << c.base << " in base)";
    else md << " (" << c.candidate << ")";
    if (!c.reason.empty()) md << ": " << c.reason;
    md << "\n";
  }
}

std::string to_markdown(const Comparison& c, const CompareOptions& options, bool ambiguous_fails, int top) {
  std::ostringstream md;
  md << "# dnnblocks compare: " << (c.exit_code(ambiguous_fails) ? "FAIL" : "PASS") << "\n\n";
  md << "**" << c.verdict_line(ambiguous_fails) << "**\n\n";
  md << "Base " << md_code(c.base_path) << ", candidate " << md_code(c.candidate_path);
  if (!c.device_models.empty()) md << ", device model " << c.device_models;
  char rule[400];
  std::snprintf(rule, sizeof rule,
                ". A regression is slower by more than max(%g%%, %g x the runs' %s) with p < %g (two-sided Mann-Whitney U "
                "over the repetitions); the change is the Hodges-Lehmann estimate with its %g%% interval; ambiguous: "
                "neither significantly slower by more than the threshold nor with an interval below it.\n",
                options.threshold_pct, options.noise_multiple, options.robust_noise ? "robust cv" : "cv", options.alpha,
                100 * (1 - options.alpha));
  md << rule;
  if (c.check && !c.check->regressions.empty()) {
    md << "\n## Conformance regressions (" << c.check->regressions.size() << "): passed in base, fail now\n\n";
    for (const auto& r : c.check->regressions)
      md << "- " << md_code(r.case_id) << ": " << r.base << " -> " << r.candidate << (r.reason.empty() ? "" : ": " + r.reason)
         << "\n  rerun: `dnnblocks check --case '" << r.case_id << "'`\n";
  }
  if (c.bench) {
    std::vector<const TimingComparison*> by_change;
    for (const auto& t : c.bench->timings) by_change.push_back(&t);
    // Failing cases first, then the largest changes either way.
    std::stable_sort(by_change.begin(), by_change.end(), [&](const TimingComparison* a, const TimingComparison* b) {
      const bool fa = failing(*a, ambiguous_fails), fb = failing(*b, ambiguous_fails);
      if (fa != fb) return fa;
      return std::fabs(a->change) > std::fabs(b->change);
    });
    if (!by_change.empty()) {
      const size_t shown = std::min(by_change.size(), static_cast<size_t>(std::max(top, 0)));
      md << "\n## Largest changes (" << shown << " of " << by_change.size() << ")\n\n" << kTimingHeader;
      for (size_t i = 0; i < shown; ++i) md << timing_row(*by_change[i]);
    }
    for (TimingVerdict v : {TimingVerdict::regression, TimingVerdict::now_failing, TimingVerdict::ambiguous}) {
      const int n = c.bench->count(v);
      if (n == 0) continue;
      md << "\n## " << (v == TimingVerdict::regression ? "Slower" : v == TimingVerdict::now_failing ? "Now failing" : "Ambiguous")
         << " (" << n << ")\n\n" << kTimingHeader;
      for (const auto& t : c.bench->timings)
        if (t.verdict == v) md << timing_row(t);
    }
    status_list(md, "Bench: missing in candidate", c.bench->missing);
    status_list(md, "Bench: not measured in candidate", c.bench->not_measured);
    status_list(md, "Bench: new in candidate", c.bench->added);
    status_list(md, "Bench: newly measured", c.bench->newly_measured);
  }
  if (c.check) {
    status_list(md, "Conformance: fixed", c.check->fixed);
    status_list(md, "Conformance: other verdict changes", c.check->changed);
    status_list(md, "Conformance: missing in candidate", c.check->missing);
    status_list(md, "Conformance: new in candidate", c.check->added);
  }
  return md.str();
}

std::string to_junit(const Comparison& c, bool ambiguous_fails) {
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  if (c.bench) {
    int failures = 0;
    for (const auto& t : c.bench->timings) failures += failing(t, ambiguous_fails);
    x << "<testsuite name=\"dnnblocks.compare.bench\" tests=\"" << c.bench->timings.size() + c.bench->missing.size()
      << "\" failures=\"" << failures << "\">\n";
    for (const auto& t : c.bench->timings) {
      x << "  <testcase classname=\"compare.bench\" name=\"" << xml_escape(t.candidate_case_id) << "\">";
      const std::string what = std::string(to_string(t.verdict)) + " " + format_change(t.change) + " (p " + format_p(t.p_value) +
                                ", threshold " + format_change(t.threshold).substr(1) + ")" + (t.note.empty() ? "" : ": " + t.note);
      if (failing(t, ambiguous_fails)) x << "<failure message=\"" << xml_escape(what) << "\"/>";
      else if (t.verdict == TimingVerdict::ambiguous) x << "<skipped message=\"" << xml_escape(what) << "\"/>";
      x << "</testcase>\n";
    }
    for (const auto& m : c.bench->missing)
      x << "  <testcase classname=\"compare.bench\" name=\"" << xml_escape(m.case_id)
        << "\"><skipped message=\"missing in candidate\"/></testcase>\n";
    x << "</testsuite>\n";
  }
  if (c.check) {
    x << "<testsuite name=\"dnnblocks.compare.check\" tests=\"" << c.check->matched << "\" failures=\""
      << c.check->regressions.size() << "\">\n";
    for (const auto& r : c.check->regressions)
      x << "  <testcase classname=\"compare.check\" name=\"" << xml_escape(r.case_id) << "\"><failure message=\""
        << xml_escape(r.base + " -> " + r.candidate + ": " + r.reason) << "\"/></testcase>\n";
    x << "  <testcase classname=\"compare.check\" name=\"" << c.check->matched << " matched cases\"/>\n";
    x << "</testsuite>\n";
  }
  x << "</testsuites>\n";
  return x.str();
}

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json changes_json(const std::vector<StatusChange>& changes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : changes)
    out.push_back({{"case_id", c.case_id}, {"base", c.base}, {"candidate", c.candidate}, {"reason", c.reason}});
  return out;
}

nlohmann::json to_json(const Comparison& c, const CompareOptions& options, bool ambiguous_fails) {
  nlohmann::json j = {{"schema_version", 1},
                      {"kind", "compare"},
                      {"base", c.base_path},
                      {"candidate", c.candidate_path},
                      {"device_models", c.device_models},
                      {"verdict", c.exit_code(ambiguous_fails) ? "FAIL" : "PASS"},
                      {"summary", c.verdict_line(ambiguous_fails)},
                      {"options", {{"threshold_pct", options.threshold_pct}, {"noise_multiple", options.noise_multiple},
                                   {"noise", options.robust_noise ? "robust" : "cv"},
                                   {"alpha", options.alpha}, {"ambiguous_fails", ambiguous_fails}}}};
  if (c.bench) {
    nlohmann::json timings = nlohmann::json::array();
    for (const auto& t : c.bench->timings)
      timings.push_back({{"case_id", t.candidate_case_id}, {"base_case_id", t.base_case_id}, {"device_name", t.device_name},
                         {"verdict", to_string(t.verdict)}, {"note", t.note}, {"base_median_s", t.base_median_s},
                         {"candidate_median_s", t.candidate_median_s}, {"change", t.change},
                         {"change_lower", finite_or_null(t.change_lower)}, {"change_upper", finite_or_null(t.change_upper)},
                         {"p_value", t.p_value}, {"noise", t.noise}, {"threshold", t.threshold},
                         {"repetitions", {t.base_repetitions, t.candidate_repetitions}}});
    j["bench"] = {{"timings", timings},
                  {"missing", changes_json(c.bench->missing)},
                  {"added", changes_json(c.bench->added)},
                  {"not_measured", changes_json(c.bench->not_measured)},
                  {"newly_measured", changes_json(c.bench->newly_measured)}};
  }
  if (c.check)
    j["check"] = {{"matched", c.check->matched},       {"regressions", changes_json(c.check->regressions)},
                  {"fixed", changes_json(c.check->fixed)}, {"changed", changes_json(c.check->changed)},
                  {"missing", changes_json(c.check->missing)}, {"added", changes_json(c.check->added)}};
  return j;
}

struct CompareArgs {
  std::string base_path, candidate_path;
  std::vector<std::string> rerun_paths, replace_paths;
  CompareOptions options;
  std::string md_path, junit_path, json_path, ambiguous_list_path, slower_list_path;
  bool ambiguous_fails = false;
  int top = 20;
  std::string noise_measure = "robust";
  bool all_variants = false;
};

// Writes `text` to `path`; false (with the message) when it cannot.
bool write_file(const std::string& path, const std::string& flag, const std::string& text) {
  std::ofstream out(path);
  if (out << text) return true;
  std::fprintf(stderr, "dnnblocks compare: %s: cannot write '%s'\n", flag.c_str(), path.c_str());
  return false;
}

int run_compare_command(CompareArgs& args) {
  args.options.robust_noise = args.noise_measure == "robust";
  if (!(args.options.threshold_pct >= 0) || !(args.options.alpha > 0 && args.options.alpha < 1)) {
    std::fprintf(stderr, "dnnblocks compare: --threshold must be >= 0 and --alpha in (0, 1)\n");
    return 2;
  }
  auto base = load_results_file(args.base_path);
  if (!base) {
    std::fprintf(stderr, "dnnblocks compare: BASE %s\n", base.status().message.c_str());
    return 2;
  }
  auto candidate = load_results_file(args.candidate_path);
  if (!candidate) {
    std::fprintf(stderr, "dnnblocks compare: CANDIDATE %s\n", candidate.status().message.c_str());
    return 2;
  }
  if (!args.all_variants) {
    drop_alternative_cases(*base);
    drop_alternative_cases(*candidate);
  }
  // Confirmation runs replace first, then reruns of ambiguous cases join (the gate's order).
  for (bool replace : {true, false}) {
    for (const auto& path : replace ? args.replace_paths : args.rerun_paths) {
      auto rerun = load_results_file(path);
      Status applied = rerun ? apply_rerun(*candidate, *rerun, replace) : rerun.status();
      if (!applied) {
        std::fprintf(stderr, "dnnblocks compare: %s %s\n", replace ? "--replace" : "--rerun", applied.message.c_str());
        return 2;
      }
    }
  }
  auto comparison = compare_results(*base, *candidate, args.options);
  if (!comparison) {
    std::fprintf(stderr, "dnnblocks compare: %s\n", comparison.status().message.c_str());
    return 2;
  }
  const Comparison& c = *comparison;
  std::printf("compare %s -> %s%s\n", c.base_path.c_str(), c.candidate_path.c_str(),
              c.device_models.empty() ? "" : (" (" + c.device_models + ")").c_str());
  if (c.bench)
    for (const auto& t : c.bench->timings)
      if (t.verdict != TimingVerdict::same && t.verdict != TimingVerdict::faster)
        std::printf("  %-11s %s %s [%s, %s] p %s threshold %s%s\n", to_string(t.verdict), t.candidate_case_id.c_str(),
                    format_change(t.change).c_str(), format_change(t.change_lower).c_str(), format_change(t.change_upper).c_str(),
                    format_p(t.p_value).c_str(), format_change(t.threshold).substr(1).c_str(), t.note.empty() ? "" : (": " + t.note).c_str());
  if (c.check)
    for (const auto& r : c.check->regressions)
      std::printf("  conformance %s: %s -> %s %s\n", r.case_id.c_str(), r.base.c_str(), r.candidate.c_str(), r.reason.c_str());
  std::printf("%s\n", c.verdict_line(args.ambiguous_fails).c_str());

  bool written = true;
  if (!args.md_path.empty()) written &= write_file(args.md_path, "--md", to_markdown(c, args.options, args.ambiguous_fails, args.top));
  if (!args.junit_path.empty()) written &= write_file(args.junit_path, "--junit", to_junit(c, args.ambiguous_fails));
  if (!args.json_path.empty())
    written &= write_file(args.json_path, "--json", to_json(c, args.options, args.ambiguous_fails).dump(1) + "\n");
  // Case ids for the gate's reruns in a fresh process, one per line.
  auto write_ids = [&](const std::string& path, const char* flag, TimingVerdict verdict) {
    if (path.empty()) return;
    std::string ids;
    if (c.bench)
      for (const auto& t : c.bench->timings)
        if (t.verdict == verdict) ids += t.candidate_case_id + "\n";
    written &= write_file(path, flag, ids);
  };
  write_ids(args.ambiguous_list_path, "--ambiguous-list", TimingVerdict::ambiguous);
  write_ids(args.slower_list_path, "--slower-list", TimingVerdict::regression);
  if (!written) return 2;
  return c.exit_code(args.ambiguous_fails);
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand("compare", "Compare two bench, check or baseline files: exit 1 on a regression");
  cmd->add_option("BASE", args->base_path, "Base results: bench, check or baseline JSON")->required();
  cmd->add_option("CANDIDATE", args->candidate_path, "Candidate results: bench, check or baseline JSON")->required();
  add_variants_option(cmd, args->all_variants, "compare the default implementations' cases");
  cmd->add_option("--threshold", args->options.threshold_pct, "Slowdown in percent below which nothing is a regression (default 5)");
  cmd->add_option("--noise-multiple", args->options.noise_multiple, "The threshold is at least this times the runs' cv (default 3)");
  cmd->add_option("--alpha", args->options.alpha, "Significance of the Mann-Whitney U test (default 0.05)");
  cmd->add_option("--noise", args->noise_measure, "Noise of a run: robust (MAD-based cv, default) or cv")
      ->check(CLI::IsMember({"robust", "cv"}));
  cmd->add_option("--md", args->md_path, "Write the verdict and the largest changes as Markdown");
  cmd->add_option("--junit", args->junit_path, "Write one JUnit test case per compared case");
  cmd->add_option("--json", args->json_path, "Write every comparison as JSON");
  cmd->add_option("--top", args->top, "Rows in the Markdown table of largest changes (default 20)");
  cmd->add_option("--rerun", args->rerun_paths, "Bench file of reruns: repetitions join the candidate's of the same case (repeatable)");
  cmd->add_option("--replace", args->replace_paths, "Bench file whose results replace the candidate's (confirmation runs; repeatable)");
  cmd->add_option("--ambiguous-list", args->ambiguous_list_path, "Write the ids of ambiguous cases, one per line (for reruns)");
  cmd->add_option("--slower-list", args->slower_list_path, "Write the ids of significantly slower cases, one per line (for reruns)");
  cmd->add_flag("--fail-on-ambiguous", args->ambiguous_fails, "Ambiguous cases fail too (the gate's last word after reruns)");
  cmd->add_flag("--allow-device-mismatch", args->options.allow_device_mismatch, "Compare results of different device models");
  cmd->callback([args, &exit_code] { exit_code = run_compare_command(*args); });
}

}  // namespace dnnb::cli
