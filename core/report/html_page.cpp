// The HTML page: the verdict, one section per physical device (its devices' capabilities,
// ceilings measured against theoretical, the roofline), then the results table, the
// backend-vs-backend tables, the size sweeps, what did not run and the build fingerprint.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/report/html_parts.h"
#include "core/report/report_blocks.h"
#include "core/report/report_charts.h"
#include "core/report/report_text.h"
#include "core/report/report_writers.h"
#include "core/report/svg_chart.h"
#include "core/sha256.h"

namespace dnnb::report {

namespace {

// Notes can be many (a thousand duplicated cases): the page shows the first ones and a count.
constexpr size_t kMaxNotesShown = 100;
const char* const kDash = "\xE2\x80\x93";

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The median % of roofline per backend, one column per bound (DRAM, cache, compute, launch
// are never pooled: a launch-bound case's % is of the empty launch, not of a bandwidth). The
// oracle has a row that says why it has no figure.
std::string headline_table(const std::vector<BackendSummary>& summaries) {
  std::vector<Bound> bounds;
  for (Bound bound : {Bound::dram, Bound::cache, Bound::compute, Bound::launch})
    if (std::any_of(summaries.begin(), summaries.end(), [&](const BackendSummary& s) { return s.by_bound.count(bound); }))
      bounds.push_back(bound);
  if (bounds.empty()) return "";
  std::string out = "<table class=\"headline\"><thead><tr><th>median % of roofline</th>";
  for (Bound bound : bounds)
    out += "<th class=\"num\">" + std::string(bound_name(bound)) + "-bound</th>";
  out += "</tr></thead><tbody>";
  for (const auto& s : summaries) {
    if (s.ok == 0) continue;
    out += "<tr><td>" + backend_chip(s.backend, s.backend) + "</td>";
    if (s.oracle) {
      out += "<td colspan=\"" + std::to_string(bounds.size()) +
             "\" class=\"muted\">the float64 oracle: listed, not ranked</td></tr>";
      continue;
    }
    for (Bound bound : bounds) {
      auto it = s.by_bound.find(bound);
      out += it == s.by_bound.end() ? "<td class=\"num muted\">" + std::string(kDash) + "</td>"
                                    : "<td class=\"num\"><b>" + format_percent(it->second.median) +
                                          "</b> <span class=\"muted\">(" + std::to_string(it->second.count) + ")</span></td>";
    }
    out += "</tr>";
  }
  out += "</tbody></table>";
  if (std::find(bounds.begin(), bounds.end(), Bound::launch) != bounds.end())
    out += "<div class=\"muted\">Launch-bound: the case's time at the roofline is under the device's empty launch; "
           "its % is the empty launch over its time. <a href=\"#results\">All results</a> name each case's ceiling.</div>";
  return out;
}

std::string header_section(const ReportModel& model, const std::vector<HardwareGroup>& groups) {
  const size_t ok = model.ok_count();
  std::map<std::string, size_t> not_ok;
  size_t flagged = 0;
  for (const auto& r : model.results) {
    if (!r.ok()) ++not_ok[r.status];
    if (r.ok() && !r.warnings().empty()) ++flagged;
  }
  std::string out = "<header>\n<h1>dnnblocks report</h1>\n<div class=\"verdict\">";
  if (model.results.empty()) {
    out += "<span class=\"big\">No results.</span> The input holds no bench case: nothing was measured.";
  } else {
    out += "<span class=\"big\">" + std::to_string(ok) + " / " + std::to_string(model.results.size()) +
           "</span> cases measured";
    if (ok < model.results.size()) {
      out += " \xC2\xB7 <a href=\"#not-ok\">" + std::to_string(model.results.size() - ok) + " not measured</a> (";
      bool first = true;
      for (const auto& [status, count] : not_ok) {
        out += (first ? "" : ", ") + std::to_string(count) + " " + html_escape(status);
        first = false;
      }
      out += ")";
    }
    if (flagged > 0) out += " \xC2\xB7 <a href=\"#flags\">" + std::to_string(flagged) + " flagged</a>";
  }
  out += " \xC2\xB7 " + std::to_string(model.devices.size()) + " device" + (model.devices.size() == 1 ? "" : "s") +
         " on " + std::to_string(groups.size()) + " processor" + (groups.size() == 1 ? "" : "s");
  out += headline_table(backend_summaries(model));
  out += "</div>\n<p class=\"muted\">From ";
  for (size_t i = 0; i < model.files.size(); ++i)
    out += (i ? ", " : "") + std::string("<span class=\"mono\">") + html_escape(model.files[i]) + "</span>";
  out += ".</p>\n<nav class=\"toc\">";
  for (const auto& group : groups)
    out += "<a href=\"#" + group.anchor + "\">" + html_escape(group.name) + "</a>";
  out += "<a href=\"#results\">All results</a><a href=\"#compare\">Backend vs backend</a>"
         "<a href=\"#sweeps\">Size sweeps</a><a href=\"#not-ok\">Not measured</a><a href=\"#build\">Build</a></nav>\n";
  if (!model.notes.empty()) {
    out += "<div class=\"notes\"><b>Notes on the input</b><ul>";
    for (size_t i = 0; i < model.notes.size() && i < kMaxNotesShown; ++i)
      out += "<li>" + html_escape(model.notes[i]) + "</li>";
    if (model.notes.size() > kMaxNotesShown)
      out += "<li>and " + std::to_string(model.notes.size() - kMaxNotesShown) + " more</li>";
    out += "</ul></div>\n";
  }
  return out + "</header>\n";
}

std::string device_card(const ReportModel& model, const std::string& id) {
  std::string out = "<div class=\"card\"><div class=\"head\"><span class=\"mono\">" + html_escape(id) +
                    "</span><span class=\"kind\">" + html_escape(model.device_kind(id)) + "</span><span class=\"name\">" +
                    html_escape(model.device_name(id)) + "</span></div>";
  auto it = model.devices.find(id);
  if (it == model.devices.end())
    return out + "<p class=\"muted\">not described in the input's <code>devices</code>: no capabilities, no ceilings</p></div>";
  const DeviceRecord& d = it->second;
  if (!d.summary.empty()) out += "<p>" + html_escape(d.summary) + "</p>";
  if (!d.ceilings_source.empty() || !d.ceilings_date.empty())
    out += "<p class=\"muted\">ceilings: " + html_escape(d.ceilings_source) +
           (d.ceilings_date.empty() ? "" : ", " + html_escape(d.ceilings_date)) + "</p>";
  return out + "</div>";
}

std::string unit_of_probe(const std::string& probe) {
  if (ends_with(probe, "_bytes_per_s")) return "B/s";
  if (ends_with(probe, "_flops_per_s")) return "FLOP/s";
  return "s";
}

std::string probe_title(const std::string& probe) {
  static const std::map<std::string, std::string> kNames = {
      {"dram_copy_bytes_per_s", "DRAM copy"}, {"dram_read_bytes_per_s", "DRAM read"},
      {"cache_read_bytes_per_s", "cache read"}, {"empty_launch_s", "empty launch"},
      {"graph_launch_s", "empty launch in a CUDA graph"},
      {"host_launch_s", "host time per launch"}};
  auto it = kNames.find(probe);
  if (it != kNames.end()) return it->second;
  if (ends_with(probe, "_flops_per_s")) return probe.substr(0, probe.size() - 12);
  return probe;
}

std::string ceiling_row(const std::string& device, const std::string& title, const std::string& measured,
                        const std::string& spread, double measured_value, double theoretical, const std::string& unit,
                        const std::string& how, const std::string& formula) {
  std::string out = "<tr><td class=\"mono\">" + html_escape(device) + "</td><td>" + html_escape(title) +
                    "</td><td class=\"num\"><b>" + measured + "</b></td><td class=\"num muted\">" + spread +
                    "</td><td class=\"num\">" + (theoretical > 0 ? html_escape(si(theoretical, unit.c_str())) : "\xE2\x80\x93") +
                    "</td><td class=\"num\">";
  if (measured_value > 0 && theoretical > 0) out += format_percent(100 * measured_value / theoretical);
  out += "</td><td class=\"reason\">" + html_escape(how);
  if (!formula.empty()) out += (how.empty() ? "" : "<br>") + std::string("<span class=\"muted\">peak: ") + html_escape(formula) + "</span>";
  return out + "</td></tr>\n";
}

// Measured against theoretical, per device of the hardware: bandwidths, then arithmetic, then
// peaks nothing measured, the launch cost, and the probes that failed with their reasons.
std::string ceilings_table(const ReportModel& model, const HardwareGroup& group) {
  std::string rows;
  for (const auto& id : group.device_ids) {
    auto it = model.devices.find(id);
    if (it == model.devices.end()) continue;
    const DeviceRecord& d = it->second;
    auto formula = [&](const std::string& key) {
      auto f = d.theoretical_formula.find(key);
      if (f != d.theoretical_formula.end()) return f->second;
      f = d.theoretical_formula.find("flops_per_s");
      return f != d.theoretical_formula.end() && key != "memory_bandwidth_bytes_per_s" ? f->second : std::string();
    };
    std::set<std::string> dtypes_measured;
    std::vector<std::string> order;
    for (const char* probe : {"dram_copy_bytes_per_s", "dram_read_bytes_per_s", "cache_read_bytes_per_s"})
      if (d.measured.count(probe)) order.push_back(probe);
    for (const auto& [probe, value] : d.measured)
      if (ends_with(probe, "_flops_per_s")) order.push_back(probe);
    for (const auto& [probe, value] : d.measured)
      if (std::find(order.begin(), order.end(), probe) == order.end() && probe != "empty_launch_s" && probe != "graph_launch_s" &&
          probe != "host_launch_s")
        order.push_back(probe);
    for (const char* probe : {"empty_launch_s", "graph_launch_s", "host_launch_s"})
      if (d.measured.count(probe)) order.push_back(probe);
    for (const auto& probe : order) {
      const CeilingValue& value = d.measured.at(probe);
      const std::string unit = unit_of_probe(probe);
      double theoretical = 0;
      std::string peak_formula;
      if (ends_with(probe, "_bytes_per_s") && probe.rfind("dram_", 0) == 0) {
        theoretical = d.theoretical_bandwidth;
        peak_formula = formula("memory_bandwidth_bytes_per_s");
      } else if (unit == "FLOP/s") {
        const std::string dtype = probe.substr(0, probe.find('_'));
        dtypes_measured.insert(dtype);
        auto peak = d.theoretical_flops.find(dtype);
        if (peak != d.theoretical_flops.end()) theoretical = peak->second;
        peak_formula = formula(dtype);
      }
      const std::string spread = value.spread > 0 ? "\xC2\xB1" + format_percent(100 * value.spread / 2) : "";
      const std::string how = value.how + (value.samples > 0 ? " (" + std::to_string(value.samples) + " samples)" : "");
      rows += ceiling_row(id, probe_title(probe), html_escape(si(value.value, unit.c_str())), spread, value.value,
                          theoretical, unit, how, peak_formula);
    }
    if (!d.measured.count("dram_copy_bytes_per_s") && !d.measured.count("dram_read_bytes_per_s"))
      rows += ceiling_row(id, "DRAM", kDash, "", 0, d.theoretical_bandwidth, "B/s", "not measured",
                          formula("memory_bandwidth_bytes_per_s"));
    std::string peaks_only;
    for (const auto& [dtype, peak] : d.theoretical_flops)
      if (!dtypes_measured.count(dtype)) {
        if (!peaks_only.empty()) peaks_only += ", ";
        peaks_only += dtype + ' ' + si(peak, "FLOP/s");
      }
    if (!peaks_only.empty())
      rows += "<tr><td class=\"mono\">" + html_escape(id) + "</td><td>other peaks</td><td class=\"num\">" + kDash +
              "</td><td></td><td colspan=\"3\" class=\"reason\">theoretical, not measured: " + html_escape(peaks_only) +
              "</td></tr>\n";
    for (const auto& [probe, why] : d.failed)
      rows += "<tr><td class=\"mono\">" + html_escape(id) + "</td><td>" + html_escape(probe_title(probe)) +
              "</td><td class=\"num\"><span class=\"badge error\">failed</span></td><td></td><td></td><td></td>"
              "<td class=\"reason\">" + html_escape(why) + "</td></tr>\n";
  }
  if (rows.empty()) return "<p class=\"muted\">No ceilings: the input does not describe these devices.</p>\n";
  return "<div class=\"wrap\"><table class=\"ceilings\"><thead><tr><th>Device</th><th>Ceiling</th>"
         "<th class=\"num\">Measured</th><th class=\"num\">Spread</th><th class=\"num\">Theoretical</th>"
         "<th class=\"num\">Of theoretical</th><th>How measured / peak formula</th></tr></thead><tbody>\n" +
         rows + "</tbody></table></div>\n";
}

std::string roofline_legend(const RooflineChart& chart) {
  std::string out = "<div class=\"legend\">";
  for (const auto& backend : chart.backends) out += "<span class=\"chip\">" + backend_chip(backend, backend) + "</span>";
  for (const auto& dtype : chart.dtypes)
    out += "<span class=\"chip\">" + dtype_swatch(dtype, "#57606a") + html_escape(dtype) + "</span>";
  out += "<span class=\"chip\"><svg width=\"26\" height=\"8\" aria-hidden=\"true\"><line x1=\"0\" y1=\"4\" x2=\"26\" y2=\"4\" "
         "stroke=\"#24292f\" stroke-width=\"2.2\"/></svg>measured</span>"
         "<span class=\"chip\"><svg width=\"26\" height=\"8\" aria-hidden=\"true\"><line x1=\"0\" y1=\"4\" x2=\"26\" y2=\"4\" "
         "stroke=\"#6e7781\" stroke-width=\"1.5\" stroke-dasharray=\"7 5\"/></svg>theoretical</span>"
         "<span class=\"chip\"><svg width=\"26\" height=\"8\" aria-hidden=\"true\"><line x1=\"0\" y1=\"4\" x2=\"26\" y2=\"4\" "
         "stroke=\"#6e7781\" stroke-width=\"1.5\" stroke-dasharray=\"2 4\"/></svg>cache</span>"
         "<span class=\"chip\"><svg width=\"14\" height=\"14\" aria-hidden=\"true\"><circle cx=\"7\" cy=\"7\" r=\"5.5\" "
         "fill=\"none\" stroke=\"#cf222e\" stroke-width=\"1.8\"/></svg>flagged</span>";
  return out + "</div>\n";
}

std::string hardware_section(const ReportModel& model, const HardwareGroup& group) {
  std::string out = "<section id=\"" + group.anchor + "\">\n<h2>" + html_escape(group.name) + " <span class=\"kind\">" +
                    html_escape(group.kind) + "</span></h2>\n<div class=\"cards\">";
  for (const auto& id : group.device_ids) out += device_card(model, id);
  out += "</div>\n<h3>Ceilings: measured and theoretical</h3>\n" + ceilings_table(model, group);
  const RooflineChart chart = roofline_chart(model, group);
  out += "<h3>Roofline</h3>\n<figure>" + roofline_legend(chart) + chart.svg +
         "<figcaption>" + std::to_string(chart.points) + " point" + (chart.points == 1 ? "" : "s") +
         ", one per measured result on this hardware. Under the sloped line a kernel is limited by memory, under a flat "
         "one by arithmetic; the gap to the roof is what is left. Hover a point for its case, click it to find its row.";
  if (chart.not_plottable > 0)
    out += " " + std::to_string(chart.not_plottable) +
           " result(s) without a FLOP model (intensity 0) cannot be placed on a log axis: they are in the table.";
  return out + "</figcaption></figure>\n</section>\n";
}

std::string sweeps_section(const ReportModel& model, const std::vector<HardwareGroup>& groups) {
  std::string out = "<section id=\"sweeps\">\n<h2>Size sweeps</h2>\n";
  const auto charts = sweep_charts(model, groups);
  if (charts.empty())
    return out + "<p class=\"muted\">No op ran at more than one size on one backend: nothing to sweep.</p>\n</section>\n";
  out += "<p class=\"muted\">Ops that stay memory- or launch-bound: median time against the minimal bytes per "
         "launch; a line along the dashed floor (bytes at the measured DRAM bandwidth) is at the memory limit, one "
         "flat on the dotted floor is launch-bound. Sweeps that become compute-bound (products): achieved FLOP/s "
         "against arithmetic intensity, each size named on the top axis, and in the series' colour, dashed, each "
         "point's roofline bound, min(compute ceiling, intensity \xC3\x97 bandwidth); the dotted line is the ridge. "
         "Where a line leaves its bound is where that backend stops reaching the limit.</p>\n<div class=\"sweeps\">\n";
  for (const auto& chart : charts) {
    out += "<figure><h3>" + html_escape(chart.op) + " \xC2\xB7 " + html_escape(chart.dtype) +
           " <span class=\"muted\">on " + html_escape(chart.hardware) +
           (chart.roofline ? ": roofline of the sweep" : "") + "</span></h3><div class=\"legend\">";
    for (const auto& s : chart.series)
      out += "<span class=\"chip\"><svg width=\"26\" height=\"8\" aria-hidden=\"true\"><line x1=\"0\" y1=\"4\" x2=\"26\" "
             "y2=\"4\" stroke=\"" + s.color + "\" stroke-width=\"2.4\"" +
             (s.dash.empty() ? "" : " stroke-dasharray=\"" + s.dash + "\"") + "/></svg>" + html_escape(s.label) + "</span>";
    if (chart.roofline)
      out += "<span class=\"chip\"><svg width=\"26\" height=\"8\" aria-hidden=\"true\"><line x1=\"0\" y1=\"4\" x2=\"26\" "
             "y2=\"4\" stroke=\"#57606a\" stroke-width=\"1.4\" stroke-dasharray=\"5 3\"/></svg>bound</span>";
    out += "</div>" + chart.svg + "</figure>\n";
  }
  return out + "</div>\n</section>\n";
}

}  // namespace

std::string html_page(const ReportModel& model) {
  const auto groups = hardware_groups(model);
  std::string body = header_section(model, groups);
  for (const auto& group : groups) body += hardware_section(model, group);
  body += results_section(model);
  body += comparison_section(model, groups);
  body += blocks_section(model);
  body += sweeps_section(model, groups);
  body += not_ok_section(model);

  // The policy allows this one script by its hash and nothing from the network: even text
  // that escaped escaping could not run or fetch.
  const std::string script = page_script();
  const std::string script_hash = base64_of_hex(sha256_hex(script.data(), script.size()));
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "img-src data:; script-src 'sha256-" + script_hash + "'\">\n"
      "<title>dnnblocks report</title>\n<style>" + std::string(page_css()) + "</style>\n</head>\n<body>\n<main>\n";
  page += body + fingerprint_footer(model) + "</main>\n<script>" + script + "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace dnnb::report
