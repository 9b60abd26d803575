// The Markdown summary, for a CI job summary ($GITHUB_STEP_SUMMARY): the verdict line first,
// then the ten results furthest from the roofline and the best ones, the launch-bound ones
// furthest from the empty launch, the size sweeps of products (per size and backend: FLOP/s
// and % of roofline), then what was not measured (grouped by reason so a thousand skips of one
// kind stay one line), flags, notes, fingerprint.
#include <algorithm>
#include <map>

#include "core/report/html_parts.h"
#include "core/report/report_blocks.h"
#include "core/report/report_charts.h"
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
  // One median per backend and bound, never pooled across bounds; the oracle has none.
  std::string medians;
  bool oracle = false;
  for (const auto& s : backend_summaries(model)) {
    oracle = oracle || (s.oracle && s.ok > 0);
    if (s.by_bound.empty()) continue;
    std::string parts;
    for (const auto& [bound, median] : s.by_bound)
      parts += std::string(parts.empty() ? "" : ", ") + bound_name(bound) + "-bound " + format_percent(median.median) +
               " (" + std::to_string(median.count) + ")";
    medians += (medians.empty() ? "" : "; ") + md_escape(s.backend) + ": " + parts;
  }
  if (!medians.empty()) line += ". Median % of roofline: " + medians;
  if (oracle) line += ". The float64 reference is the oracle: listed, not ranked";
  return line + ".\n";
}

std::string result_table(const ReportModel& model, const std::vector<size_t>& rows) {
  std::string out = "| % of roofline | Judged against | Case | Median | Bandwidth | Compute | Flags |\n"
                    "|---:|---|---|---:|---:|---:|---|\n";
  for (size_t i : rows) {
    const ResultRecord& r = model.results[i];
    std::string flags;
    for (const auto& w : r.warnings()) flags += (flags.empty() ? "" : "; ") + md_escape(w);
    out += "| " + format_percent(*r.judged.percent) + " | " + md_escape(r.judged.roof()) + " | " + md_escape(r.case_id) +
           " | " + format_time(r.median_s) + " | " + si(r.bytes_per_s, "B/s") + " | " + si(r.flops_per_s, "FLOP/s") +
           " | " + flags + " |\n";
  }
  return out;
}

std::vector<size_t> first_rows(const std::vector<size_t>& rows, size_t count) {
  return std::vector<size_t>(rows.begin(), rows.begin() + static_cast<ptrdiff_t>(std::min(count, rows.size())));
}

// Per sweep that becomes compute-bound (a product at growing M): a row per size, a column per
// backend, each cell its FLOP/s and % of the roofline with what binds it, so the size at which
// each backend leaves the memory roof (or falls short of the compute roof) reads off the table.
std::string product_sweeps(const ReportModel& model) {
  const auto groups = hardware_groups(model);
  std::string out;
  for (const auto& sweep : size_sweeps(model, groups)) {
    if (!sweep.compute_bound) continue;
    std::map<std::pair<double, std::string>, std::map<size_t, size_t>> rows;  // (bytes, shape) -> series -> result
    for (size_t k = 0; k < sweep.series.size(); ++k)
      for (size_t i : sweep.series[k].results) rows[{model.results[i].bytes, model.results[i].shape}][k] = i;
    out += "\n**" + md_escape(sweep.op + " " + sweep.dtype) + " on " + md_escape(groups[sweep.group].name) +
           "**: FLOP/s and % of the roofline (what binds) per size\n\n| Shape |";
    std::string rule = "|---|";
    for (const auto& series : sweep.series) {
      out += ' ' + md_escape(series.label) + " |";
      rule += "---:|";
    }
    out += "\n" + rule + "\n";
    for (const auto& [key, cells] : rows) {
      out += "| " + md_escape(key.second) + " |";
      for (size_t k = 0; k < sweep.series.size(); ++k) {
        auto it = cells.find(k);
        if (it == cells.end()) {
          out += " \xE2\x80\x93 |";
          continue;
        }
        const ResultRecord& r = model.results[it->second];
        out += ' ' + si(r.flops_per_s, "FLOP/s");
        if (r.judged.percent) out += ", " + format_percent(*r.judged.percent) + " " + bound_name(r.judged.bound);
        out += " |";
      }
      out += "\n";
    }
  }
  if (out.empty()) return out;
  std::string section = "\n### Size sweeps of products\n";
  return section + out;
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
  // Launch-bound cases are ranked apart: their % is of the empty launch, not of a roof.
  std::vector<size_t> roof_bound, launch_bound;
  size_t oracle = 0, no_ceiling = 0;
  for (size_t i : results_by_sol(model)) {
    const ResultRecord& r = model.results[i];
    if (!r.ok()) continue;
    if (r.judged.percent) (r.judged.bound == Bound::launch ? launch_bound : roof_bound).push_back(i);
    else if (r.judged.bound == Bound::oracle) ++oracle;
    else ++no_ceiling;
  }
  if (!roof_bound.empty()) {
    const size_t worst = std::min(kTableRows, roof_bound.size());
    out += "\n### Furthest from the roofline\n\nDRAM-, cache- and compute-bound cases, each against the ceiling it "
           "is judged by.\n\n" + result_table(model, first_rows(roof_bound, worst));
    // The best ones not already listed, best first.
    std::vector<size_t> best(roof_bound.rbegin(), roof_bound.rend() - static_cast<ptrdiff_t>(worst));
    if (!best.empty()) out += "\n### Closest to the roofline\n\n" + result_table(model, first_rows(best, kTableRows));
  }
  if (!launch_bound.empty())
    out += "\n### Launch-bound: furthest from the empty launch\n\nCases whose time at the roofline is under the "
           "device's measured empty launch; their % is the empty launch over their time.\n\n" +
           result_table(model, first_rows(launch_bound, kTableRows));
  if (oracle > 0)
    out += "\n" + std::to_string(oracle) + " float64 reference result(s) are listed on the page but not ranked: the "
           "reference is the oracle the others are checked against.\n";
  if (no_ceiling > 0)
    out += "\n" + std::to_string(no_ceiling) + " measured result(s) have no % of roofline (no memory ceiling for their device).\n";
  out += blocks_markdown(model);
  out += product_sweeps(model);
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
