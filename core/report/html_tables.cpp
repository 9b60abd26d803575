// The page's tables: every result (sortable, by % of roofline first), backend against backend
// on the same hardware, what was not measured and why, flagged measurements, and the build
// fingerprint of each input file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/report/html_parts.h"
#include "core/report/report_charts.h"
#include "core/report/report_text.h"
#include "core/report/svg_chart.h"

namespace dnnb::report {

namespace {

const char* const kDash = "\xE2\x80\x93";

// A number for data-v (what the sort compares): full precision, no unit.
std::string sort_value(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

std::string num_cell(const std::optional<double>& sort, const std::string& shown, const std::string& title = "") {
  return "<td class=\"num\"" + (sort ? " data-v=\"" + sort_value(*sort) + "\"" : std::string(" data-v=\"\"")) +
         (title.empty() ? "" : " title=\"" + html_escape(title) + "\"") + ">" + html_escape(shown) + "</td>";
}

std::string sol_bar(double sol) {
  const char* color = sol >= 80 ? "#2da44e" : sol >= 50 ? "#d4a72c" : "#e5534b";
  return "<span class=\"bar\"><i style=\"width:" + format_fixed(std::clamp(sol, 0.0, 100.0), 1) + "%;background:" + color +
         "\"></i></span>";
}

// A case id may break before its '@' and after each ':', so a narrow column still reads
// problem / backend. (Escaping makes neither character, so the breaks cannot land in an entity.)
std::string breakable_case_id(const std::string& case_id) {
  std::string out;
  for (char c : html_escape(case_id)) {
    if (c == '@') out += "<wbr>";
    out += c;
    if (c == ':') out += "<wbr>";
  }
  return out;
}

// The % of roofline cell: the bar, the figure and what it is judged against beneath it; the
// oracle says so instead of a figure.
std::string percent_cell(const ResultRecord& r) {
  const Judgment& j = r.judged;
  if (j.percent)
    return "<td class=\"num sol\" data-v=\"" + sort_value(*j.percent) + "\">" + sol_bar(*j.percent) +
           format_percent(*j.percent) + "<div class=\"bound\">" + html_escape(j.roof()) + "</div></td>";
  if (j.bound == Bound::oracle)
    return "<td class=\"num sol\" data-v=\"\" title=\"the float64 reference: the oracle the others are checked "
           "against, not ranked\"><span class=\"muted\">oracle</span></td>";
  return "<td class=\"num sol\" data-v=\"\" title=\"no memory ceiling for its device\">" + std::string(kDash) + "</td>";
}

// The case id names the device too ("@cuda:0"), so the row has no device column; the ceiling
// a result is judged against sits under its % bar, and a result that was not measured shows
// its status there and its reason in the last column.
std::string result_row(const ResultRecord& r, size_t index) {
  std::string out = "<tr id=\"" + result_row_id(index) + "\"><td class=\"mono case\">" + breakable_case_id(r.case_id) + "</td>";
  out += "<td data-v=\"" + html_escape(r.backend_label()) + "\">" + backend_chip(r.backend, r.backend_label()) + "</td>";
  if (!r.ok()) {
    out += "<td class=\"num sol\" data-v=\"\">" + status_badge(r.status) + "</td>";
    for (int i = 0; i < 6; ++i) out += "<td class=\"num\" data-v=\"\"></td>";
    return out + "<td class=\"reason\">" + html_escape(r.reason) + "</td></tr>\n";
  }
  out += percent_cell(r);
  out += num_cell(r.median_s, format_time(r.median_s),
                  "min " + format_time(r.min_s) + ", " + std::to_string(r.repetitions) + " repetitions x " +
                      std::to_string(r.iterations) + " launches, " + r.timer + ", " + r.cache_policy + " cache");
  // The share of the DRAM copy probe is a figure beside the roof, not a ranking: in the hover.
  out += num_cell(r.bytes_per_s, si(r.bytes_per_s, "B/s"),
                  si(r.bytes, "B") + " per launch, working set " + si(r.working_set_bytes, "B") +
                      (r.pct_of_copy ? ", " + format_percent(*r.pct_of_copy) + " of the DRAM copy probe" : ""));
  out += num_cell(r.flops_per_s, si(r.flops_per_s, "FLOP/s"), si(r.flops, "FLOP") + " per launch");
  out += num_cell(r.intensity, format_fixed(r.intensity, r.intensity < 1 ? 3 : 2));
  out += num_cell(r.cv, format_percent(100 * r.cv));
  out += num_cell(r.x_empty, r.x_empty ? format_fixed(*r.x_empty, 1) + "\xC3\x97" : kDash);
  return out + "<td class=\"reason\">" + flag_list(r.warnings()) + "</td></tr>\n";
}

}  // namespace

std::string status_badge(const std::string& status) {
  const std::string known = status == "ok" || status == "skipped" || status == "unsupported" || status == "error" ||
                                    status == "bad_input"
                                ? status
                                : "error";
  return "<span class=\"badge " + known + "\">" + html_escape(status) + "</span>";
}

std::string backend_chip(const std::string& backend, const std::string& label) {
  return "<span class=\"chip\"><span class=\"dot\" style=\"background:" + backend_color(backend) + "\"></span>" +
         html_escape(label) + "</span>";
}

std::string flag_list(const std::vector<std::string>& flags) {
  std::string out;
  for (const auto& flag : flags) out += "<span class=\"flag\">\xE2\x9A\xA0 " + html_escape(flag) + "</span> ";
  return out;
}

std::vector<size_t> results_by_sol(const ReportModel& model) {
  std::vector<size_t> order(model.results.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](size_t i) {
    const ResultRecord& r = model.results[i];
    // Ranked, then ok but unranked (the oracle, no ceilings), then not ok; lowest % first.
    const int rank = r.ok() && r.judged.percent ? 0 : r.ok() ? 1 : 2;
    return std::make_pair(rank, rank == 0 ? *r.judged.percent : 0.0);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return order;
}

std::string results_section(const ReportModel& model) {
  std::string out = "<section id=\"results\">\n<h2>All results</h2>\n";
  if (model.results.empty()) return out + "<p class=\"muted\">No results.</p>\n</section>\n";
  out += "<p class=\"muted\">Sorted by % of roofline, furthest from the limit first. Each case is judged against the "
         "ceiling named under its figure: the cache when its working set fits the last-level cache, else DRAM; the "
         "compute ceiling when arithmetic takes longer; the empty launch when even the roof's time is under it. The "
         "float64 reference is the oracle and is not ranked. Click a header to sort by it; hover a time for its "
         "repetitions and timer.</p>\n"
         "<input id=\"results-filter\" class=\"filter\" type=\"search\" placeholder=\"Filter: op, dtype, backend, device\u2026\" "
         "aria-label=\"Filter the results\">\n"
         "<div class=\"wrap\"><table id=\"results-table\" class=\"sortable data\"><thead><tr>"
         "<th data-type=\"text\">Case</th><th data-type=\"text\">Backend</th>"
         "<th class=\"num\" data-type=\"num\" aria-sort=\"ascending\">% of roofline</th>"
         "<th class=\"num\" data-type=\"num\">Median</th><th class=\"num\" data-type=\"num\">Bandwidth</th>"
         "<th class=\"num\" data-type=\"num\">Compute</th><th class=\"num\" data-type=\"num\">FLOP/B</th>"
         "<th class=\"num\" data-type=\"num\">CV</th>"
         "<th class=\"num\" data-type=\"num\">\xC3\x97 launch</th><th data-type=\"text\">Flags / reason</th></tr></thead><tbody>\n";
  for (size_t i : results_by_sol(model)) out += result_row(model.results[i], i);
  return out + "</tbody></table></div>\n</section>\n";
}

// Per hardware, one row per problem that ran on two backends or more; a column per
// backend/variant with its time and its ratio to the fastest, and the geometric mean of the
// ratios at the bottom.
std::string comparison_section(const ReportModel& model, const std::vector<HardwareGroup>& groups) {
  std::string out = "<section id=\"compare\">\n<h2>Backend vs backend</h2>\n"
                    "<p class=\"muted\">Results of the same problem on the same hardware (a CUDA device and the "
                    "OpenCL device of the same GPU; the CPU and OpenCL on that CPU). Bold: the fastest; the ratio is "
                    "time over the fastest.</p>\n";
  bool any = false;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<std::string> columns;
    std::map<std::string, std::map<std::string, size_t>> cells;  // problem -> column -> result
    for (size_t i = 0; i < model.results.size(); ++i) {
      const ResultRecord& r = model.results[i];
      if (group_of(groups, r.device) != g) continue;
      std::string column = r.backend_label();
      if (std::find(columns.begin(), columns.end(), column) == columns.end()) columns.push_back(column);
      cells[r.problem()][column] = i;
    }
    std::string rows;
    std::map<std::string, std::vector<double>> ratios;
    for (const auto& [problem, by_column] : cells) {
      double fastest = INFINITY;
      size_t ok = 0;
      for (const auto& [column, i] : by_column)
        if (model.results[i].ok()) {
          fastest = std::min(fastest, model.results[i].median_s);
          ++ok;
        }
      if (by_column.size() < 2 || ok == 0) continue;
      rows += "<tr><td class=\"mono\">" + html_escape(problem) + "</td>";
      for (const auto& column : columns) {
        auto it = by_column.find(column);
        if (it == by_column.end()) {
          rows += "<td class=\"num muted\">" + std::string(kDash) + "</td>";
          continue;
        }
        const ResultRecord& r = model.results[it->second];
        if (!r.ok()) {
          rows += "<td class=\"num\" title=\"" + html_escape(r.reason) + "\">" + status_badge(r.status) + "</td>";
          continue;
        }
        const double ratio = r.median_s / fastest;
        if (ok > 1) ratios[column].push_back(ratio);
        rows += std::string("<td class=\"num") + (ratio == 1 ? " best" : ratio > 2 ? " slow" : "") + "\" title=\"" +
                html_escape(r.case_id) + "\">" + html_escape(format_time(r.median_s)) + "<span class=\"ratio\">" +
                html_escape(format_ratio(ratio)) + "</span></td>";
      }
      rows += "</tr>\n";
    }
    if (rows.empty()) continue;
    any = true;
    out += "<h3>" + html_escape(groups[g].name) + "</h3>\n<div class=\"wrap\"><table class=\"cmp\"><thead><tr><th>Problem</th>";
    for (const auto& column : columns)
      out += "<th class=\"num\">" + backend_chip(column.substr(0, column.find('/')), column) + "</th>";
    out += "</tr></thead><tbody>\n" + rows + "<tr class=\"geomean\"><td>geometric mean of the ratio</td>";
    for (const auto& column : columns) {
      const auto& v = ratios[column];
      if (v.empty()) {
        out += "<td class=\"num\">" + std::string(kDash) + "</td>";
        continue;
      }
      double log_sum = 0;
      for (double ratio : v) log_sum += std::log(ratio);
      out += "<td class=\"num\">" + html_escape(format_ratio(std::exp(log_sum / static_cast<double>(v.size())))) +
             " <span class=\"ratio\">(" + std::to_string(v.size()) + ")</span></td>";
    }
    out += "</tr>\n</tbody></table></div>\n";
  }
  if (!any) out += "<p class=\"muted\">No problem ran on two backends of the same hardware.</p>\n";
  return out + "</section>\n";
}

std::string not_ok_section(const ReportModel& model) {
  std::string out = "<section id=\"not-ok\">\n<h2>Not measured</h2>\n";
  std::vector<const ResultRecord*> not_ok;
  for (const auto& r : model.results)
    if (!r.ok()) not_ok.push_back(&r);
  std::stable_sort(not_ok.begin(), not_ok.end(),
                   [](const ResultRecord* a, const ResultRecord* b) { return a->status < b->status; });
  if (not_ok.empty()) {
    out += model.results.empty() ? "<p class=\"muted\">No results.</p>\n" : "<p class=\"muted\">Every case was measured.</p>\n";
  } else {
    out += "<div class=\"wrap\"><table><thead><tr><th>Status</th><th>Case</th><th>Device</th><th>Reason</th></tr></thead><tbody>\n";
    for (const auto* r : not_ok)
      out += "<tr><td>" + status_badge(r->status) + "</td><td class=\"mono\">" + html_escape(r->case_id) +
             "</td><td class=\"mono\">" + html_escape(r->device) + "</td><td class=\"reason\">" +
             (r->reason.empty() ? std::string("(no reason given)") : html_escape(r->reason)) + "</td></tr>\n";
    out += "</tbody></table></div>\n";
  }
  out += "<h3 id=\"flags\">Flagged measurements</h3>\n";
  std::string rows;
  for (const auto& r : model.results)
    if (r.ok() && !r.warnings().empty())
      rows += "<tr><td class=\"mono\">" + html_escape(r.case_id) + "</td><td>" + flag_list(r.warnings()) + "</td></tr>\n";
  if (rows.empty()) return out + "<p class=\"muted\">No measurement carries a flag.</p>\n</section>\n";
  return out + "<p class=\"muted\">The bench flagged these: read their figures with care.</p>\n"
               "<div class=\"wrap\"><table><thead><tr><th>Case</th><th>Flags</th></tr></thead><tbody>\n" +
         rows + "</tbody></table></div>\n</section>\n";
}

// One column per input file, one row per key in the order of the first file that has it.
std::string fingerprint_footer(const ReportModel& model) {
  std::string out = "<footer id=\"build\">\n<h3>Build fingerprint</h3>\n";
  if (model.fingerprints.empty()) out += "<p>The input files carry no fingerprint.</p>\n";
  std::vector<std::string> keys;
  for (const auto& fingerprint : model.fingerprints)
    for (const auto& [key, value] : fingerprint.fields)
      if (!value.empty() && std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  if (!keys.empty()) {
    out += "<div class=\"wrap\"><table><thead><tr><td></td>";
    for (const auto& fingerprint : model.fingerprints) out += "<td class=\"mono\"><b>" + html_escape(fingerprint.file) + "</b></td>";
    out += "</tr></thead><tbody>\n";
    for (const auto& key : keys) {
      out += "<tr><td>" + html_escape(key) + "</td>";
      for (const auto& fingerprint : model.fingerprints) {
        auto it = std::find_if(fingerprint.fields.begin(), fingerprint.fields.end(),
                               [&](const auto& field) { return field.first == key; });
        out += "<td class=\"mono\">" + (it == fingerprint.fields.end() ? std::string() : html_escape(it->second)) + "</td>";
      }
      out += "</tr>\n";
    }
    out += "</tbody></table></div>\n";
  }
  return out + "<p>Made by <span class=\"mono\">dnnblocks report</span>; docs/report.md explains the page.</p>\n</footer>\n";
}

}  // namespace dnnb::report
