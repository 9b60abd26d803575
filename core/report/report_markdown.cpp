// The Markdown summary, for a CI job summary ($GITHUB_STEP_SUMMARY): the verdict line first,
// then the ten results furthest from the roofline and the best ones, then what was not measured
// (grouped by reason so a thousand skips of one kind stay one line), flags, notes, fingerprint.
#include <algorithm>
#include <map>

#include "core/report/html_parts.h"
#include "core/report/report_text.h"
#include "core/report/report_writers.h"

namespace dnnb::report {

namespace {

constexpr size_t kTableRows = 10;
constexpr size_t kCasesPerReason = 20;  // more are on the HTML page

std::string verdict_line(const ReportModel& model) {
  const auto groups = hardware_groups(model);
  std::string files;
  for (size_t i = 0; i < model.files.size(); ++i) files += (i ? ", " : "") + md_escape(model.files[i]);
  if (model.results.empty()) return "**dnnblocks report**: no results in " + files + ": nothing was measured.\n";
  const size_t ok = model.ok_count();
  size_t flagged = 0;
  for (const auto& r : model.results) flagged += r.ok() && !r.warnings().empty();
  std::string line = "**dnnblocks report**: " + std::to_string(ok) + " of " + std::to_string(model.results.size()) +
                     " cases measured on " + std::to_string(model.devices.size()) + " device" +
                     (model.devices.size() == 1 ? "" : "s") + " (";
  for (size_t i = 0; i < groups.size(); ++i) line += (i ? ", " : "") + md_escape(groups[i].name);
  line += ")";
  if (ok < model.results.size()) line += "; " + std::to_string(model.results.size() - ok) + " not measured";
  if (flagged) line += "; " + std::to_string(flagged) + " flagged";
  std::string sols;
  for (const auto& s : backend_summaries(model))
    if (s.with_sol > 0) sols += (sols.empty() ? "" : ", ") + md_escape(s.backend) + " " + format_percent(s.median_sol);
  if (!sols.empty()) line += ". Median % of roofline: " + sols;
  return line + ".\n";
}

std::string result_table(const ReportModel& model, const std::vector<size_t>& rows) {
  std::string out =
      "| % of roofline | Case | Median | Bandwidth | Compute | Bound | Flags |\n|---:|---|---:|---:|---:|---|---|\n";
  for (size_t i : rows) {
    const ResultRecord& r = model.results[i];
    std::string flags;
    for (const auto& w : r.warnings()) flags += (flags.empty() ? "" : "; ") + md_escape(w);
    out += "| " + format_percent(*r.sol_percent) + " | " + md_escape(r.case_id) + " | " + format_time(r.median_s) +
           " | " + si(r.bytes_per_s, "B/s") + " | " + si(r.flops_per_s, "FLOP/s") + " | " + md_escape(r.bound_by) +
           " | " + flags + " |\n";
  }
  return out;
}

std::string not_measured(const ReportModel& model) {
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> by_reason;
  for (const auto& r : model.results)
    if (!r.ok()) by_reason[{r.status, r.reason}].push_back(r.case_id);
  if (by_reason.empty()) return "";
  std::string out = "\n### Not measured\n\n| Status | Cases | Reason |\n|---|---|---|\n";
  for (const auto& [key, cases] : by_reason) {
    std::string list;
    for (size_t i = 0; i < cases.size() && i < kCasesPerReason; ++i) list += (i ? ", " : "") + md_escape(cases[i]);
    if (cases.size() > kCasesPerReason) list += " and " + std::to_string(cases.size() - kCasesPerReason) + " more";
    out += "| " + md_escape(key.first) + " (" + std::to_string(cases.size()) + ") | " + list + " | " +
           (key.second.empty() ? "(no reason given)" : md_escape(key.second)) + " |\n";
  }
  return out;
}

// "FILE: commit 267876f3c1d2 (dirty), GNU 12.2.0, CUDA driver 13.0, ..." (the page has all keys).
std::string fingerprint_line(const FingerprintRecord& fingerprint) {
  auto field = [&](const std::string& key) {
    for (const auto& [k, value] : fingerprint.fields)
      if (k == key) return value;
    return std::string();
  };
  std::vector<std::string> parts;
  if (!field("git_commit").empty())
    parts.push_back("commit " + field("git_commit").substr(0, 12) + (field("git_dirty") == "true" ? " (dirty)" : ""));
  for (const auto& [key, label] : std::vector<std::pair<std::string, std::string>>{
           {"compiler", ""}, {"cuda_driver", "CUDA driver "}, {"cuda_runtime", "CUDA runtime "},
           {"onednn", "oneDNN "}, {"host", "host "}, {"date", ""}})
    if (!field(key).empty()) parts.push_back(label + field(key));
  std::string line = md_escape(fingerprint.file) + ':';
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? ", " : " ") + md_escape(parts[i]);
  return line;
}

}  // namespace

std::string markdown_summary(const ReportModel& model) {
  std::string out = verdict_line(model);
  std::vector<size_t> with_sol;
  size_t ok_without_sol = 0;
  for (size_t i : results_by_sol(model)) {
    if (model.results[i].ok() && model.results[i].sol_percent) with_sol.push_back(i);
    else if (model.results[i].ok()) ++ok_without_sol;
  }
  if (!with_sol.empty()) {
    const size_t worst = std::min(kTableRows, with_sol.size());
    out += "\n### Furthest from the roofline\n\n" +
           result_table(model, std::vector<size_t>(with_sol.begin(), with_sol.begin() + static_cast<ptrdiff_t>(worst)));
    // The best ones not already listed, best first.
    std::vector<size_t> best(with_sol.rbegin(), with_sol.rend() - static_cast<ptrdiff_t>(worst));
    if (best.size() > kTableRows) best.resize(kTableRows);
    if (!best.empty()) out += "\n### Closest to the roofline\n\n" + result_table(model, best);
  }
  if (ok_without_sol > 0)
    out += "\n" + std::to_string(ok_without_sol) + " measured result(s) have no % of roofline (no ceilings for their device).\n";
  out += not_measured(model);

  std::string flagged;
  for (const auto& r : model.results) {
    if (!r.ok() || r.warnings().empty()) continue;
    std::string flags;
    for (const auto& w : r.warnings()) flags += (flags.empty() ? "" : "; ") + md_escape(w);
    flagged += "| " + md_escape(r.case_id) + " | " + flags + " |\n";
  }
  if (!flagged.empty()) out += "\n### Flagged\n\n| Case | Flags |\n|---|---|\n" + flagged;
  if (!model.notes.empty()) {
    out += "\n### Notes on the input\n\n";
    for (size_t i = 0; i < model.notes.size() && i < 50; ++i) out += "- " + md_escape(model.notes[i]) + "\n";
    if (model.notes.size() > 50) out += "- and " + std::to_string(model.notes.size() - 50) + " more\n";
  }
  if (!model.fingerprints.empty()) {
    out += "\n";
    for (const auto& fingerprint : model.fingerprints) out += "<sub>" + fingerprint_line(fingerprint) + "</sub><br>\n";
  }
  return out;
}

}  // namespace dnnb::report
