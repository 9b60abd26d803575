// The blocks section of the page and the summary (docs/report.md, "Blocks"): per block problem,
// each backend's time, tokens/s and % of roofline beside torch eager and torch.compile of the
// same module (results of backends torch-eager and torch-compile, written by
// suites/blocks/bench_torch.py --out), then, where `bench --nodes` timed them, the block's
// nodes: each node problem's time (times the nodes that share it), its share of the sum, its %
// of roofline, and the sum of the nodes against the block's own time.
#include "core/report/report_blocks.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/report/html_parts.h"
#include "core/report/report_text.h"

namespace dnnb::report {

namespace {

constexpr const char* kDash = "\u2014";

bool is_torch(const ResultRecord& r) { return r.backend == "torch-eager" || r.backend == "torch-compile"; }

// A problem as op:dtype:shape:params with the params sorted by key and numbers in one form
// (torch's script writes eps=1e-05 where a problem text says eps=1e-5), so torch's results meet
// ours.
std::string canonical_problem(const ResultRecord& r) {
  std::vector<std::pair<std::string, std::string>> params;
  size_t start = 0;
  while (start < r.params.size()) {
    size_t end = r.params.find(',', start);
    if (end == std::string::npos) end = r.params.size();
    const std::string item = r.params.substr(start, end - start);
    const size_t eq = item.find('=');
    std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    char* stop = nullptr;
    const double number = std::strtod(value.c_str(), &stop);
    if (!value.empty() && stop && *stop == '\0') {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, "%.12g", number);
      value = buffer;
    }
    if (!item.empty()) params.emplace_back(key, value);
    start = end + 1;
  }
  std::sort(params.begin(), params.end());
  std::string text = r.op + ":" + r.dtype + ":" + r.shape;
  for (size_t i = 0; i < params.size(); ++i) text += (i ? "," : ":") + params[i].first + "=" + params[i].second;
  return text;
}

std::string percent_text(const ResultRecord& r) {
  if (!r.ok()) return r.status;
  return r.judged.percent ? format_percent(*r.judged.percent) : std::string(kDash);
}

double node_time(const ResultRecord& r) { return r.median_s * static_cast<double>(std::max<size_t>(1, r.nodes.size())); }

std::string node_names(const ResultRecord& r) {
  std::string names;
  for (const auto& n : r.nodes) names += (names.empty() ? "" : ", ") + n;
  return names;
}

// A node case's time for all its nodes, "(2x)" where several share the problem; else its status.
std::string node_time_text(const ResultRecord& r) {
  if (!r.ok()) return r.status;
  return format_time(node_time(r)) + (r.nodes.size() > 1 ? " (" + std::to_string(r.nodes.size()) + "x)" : "");
}

// torch's time over ours for `backend` (torch-eager, torch-compile) of the block's problem. torch
// runs on the GPU: compared only with our results on the same device.
std::string torch_ratio(const ReportModel& model, const BlockTable& t, const char* backend, const ResultRecord& ours) {
  auto it = t.torch.find(backend);
  if (it == t.torch.end() || !ours.ok() || !model.results[it->second].ok() || model.results[it->second].device != ours.device)
    return kDash;
  return format_ratio(model.results[it->second].median_s / ours.median_s);
}

}  // namespace

std::vector<BlockTable> block_tables(const ReportModel& model) {
  std::vector<BlockTable> tables;
  auto table_of = [&](const ResultRecord& r) -> BlockTable& {
    const std::string key = canonical_problem(r);
    for (auto& t : tables)
      if (t.key == key) return t;
    tables.push_back({key, r.problem(), {}, {}, {}});
    return tables.back();
  };
  std::map<std::string, size_t> by_case;  // block case id -> result
  for (size_t i = 0; i < model.results.size(); ++i) {
    const ResultRecord& r = model.results[i];
    if (!r.block.empty() || !(r.family == "blocks" || r.tokens > 0)) continue;
    BlockTable& t = table_of(r);
    if (is_torch(r)) {
      t.torch[r.backend] = i;
    } else {
      t.ours.push_back(i);
      by_case[r.case_id] = i;
    }
  }
  for (size_t i = 0; i < model.results.size(); ++i) {
    const ResultRecord& r = model.results[i];
    if (r.block.empty()) continue;
    auto block = by_case.find(r.block);
    if (block == by_case.end()) continue;  // its block case is not in these files: listed with the results only
    table_of(model.results[block->second]).nodes[block->second].push_back(i);
  }
  return tables;
}

double nodes_sum_s(const ReportModel& model, const std::vector<size_t>& nodes) {
  double sum = 0;
  for (size_t i : nodes)
    if (model.results[i].ok()) sum += node_time(model.results[i]);
  return sum;
}

std::string blocks_markdown(const ReportModel& model) {
  const auto tables = block_tables(model);
  if (tables.empty()) return "";
  std::string out =
      "\n### Blocks\n\nEach block on each backend; torch eager and torch.compile of the same transformers module "
      "where the files hold them (ratio: torch's time over ours, above 1 is faster than torch).\n\n"
      "| Block | Backend | Median | tokens/s | % of roofline | vs torch eager | vs torch.compile | Sum of nodes |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& t : tables) {
    for (size_t i : t.ours) {
      const ResultRecord& r = model.results[i];
      auto nodes = t.nodes.find(i);
      const std::string sum = nodes == t.nodes.end() ? kDash : format_time(nodes_sum_s(model, nodes->second));
      out += "| " + md_escape(t.problem) + " | " + md_escape(r.backend_label()) + " | " +
             (r.ok() ? format_time(r.median_s) : md_escape(r.status)) + " | " +
             (r.ok() && r.tokens > 0 ? si(r.tokens / r.median_s, "") : std::string(kDash)) + " | " + percent_text(r) +
             " | " + torch_ratio(model, t, "torch-eager", r) + " | " + torch_ratio(model, t, "torch-compile", r) + " | " + sum + " |\n";
    }
    for (const auto& [backend, i] : t.torch) {
      const ResultRecord& r = model.results[i];
      out += "| " + md_escape(t.problem) + " | " + md_escape(backend) + " | " +
             (r.ok() ? format_time(r.median_s) : md_escape(r.status)) + " | " +
             (r.ok() && r.tokens > 0 ? si(r.tokens / r.median_s, "") : std::string(kDash)) + " | " + kDash + " | | | |\n";
    }
  }
  for (const auto& t : tables)
    for (const auto& [block, nodes] : t.nodes) {
      const ResultRecord& b = model.results[block];
      const double sum = nodes_sum_s(model, nodes);
      out += "\n**Nodes of " + md_escape(b.case_id) + "** (block " + (b.ok() ? format_time(b.median_s) : b.status) +
             ", nodes timed alone " + format_time(sum) + ")\n\n| Node | Case | Time | Share | % of roofline |\n|---|---|---:|---:|---:|\n";
      for (size_t i : nodes) {
        const ResultRecord& r = model.results[i];
        const std::string names = node_names(r), time = node_time_text(r);
        out += "| " + md_escape(names) + " | " + md_escape(r.case_id) + " | " + md_escape(time) + " | " +
               (r.ok() && sum > 0 ? format_percent(100 * node_time(r) / sum) : std::string(kDash)) + " | " +
               percent_text(r) + " |\n";
      }
    }
  return out;
}

std::string blocks_section(const ReportModel& model) {
  const auto tables = block_tables(model);
  if (tables.empty()) return "";
  std::string out =
      "<section id=\"blocks\">\n<h2>Blocks</h2>\n<p class=\"muted\">Each block (a model layer run as a graph of the "
      "suite's ops) on each backend, beside torch eager and torch.compile of the same transformers module where the "
      "files hold them; the ratio is torch's time over ours (above 1: faster than torch). Where <code>bench "
      "--nodes</code> timed them, each node's own time follows, with its share of the nodes' sum.</p>\n"
      "<table class=\"results\"><thead><tr><th>Block</th><th>Backend</th><th>Median</th><th>tokens/s</th>"
      "<th>% of roofline</th><th>vs torch eager</th><th>vs torch.compile</th><th>Sum of nodes</th></tr></thead>"
      "<tbody>\n";
  auto row = [&](const BlockTable& t, const ResultRecord& r, bool torch) {
    auto nodes = t.nodes.end();
    for (auto it = t.nodes.begin(); it != t.nodes.end(); ++it)
      if (&model.results[it->first] == &r) nodes = it;
    std::string cells = "<tr><td class=\"mono\">" + html_escape(t.problem) + "</td><td>" +
                        backend_chip(r.backend, r.backend_label()) + "</td>";
    cells += r.ok() ? "<td class=\"num\">" + html_escape(format_time(r.median_s)) + "</td>"
                    : "<td class=\"num\" title=\"" + html_escape(r.reason) + "\">" + status_badge(r.status) + "</td>";
    cells += "<td class=\"num\">" + (r.ok() && r.tokens > 0 ? html_escape(si(r.tokens / r.median_s, "")) : kDash) + "</td>";
    cells += "<td class=\"num\" title=\"" + html_escape(r.judged.describe()) + "\">" + html_escape(torch ? kDash : percent_text(r)) + "</td>";
    cells += "<td class=\"num\">" + html_escape(torch ? "" : torch_ratio(model, t, "torch-eager", r)) + "</td>";
    cells += "<td class=\"num\">" + html_escape(torch ? "" : torch_ratio(model, t, "torch-compile", r)) + "</td>";
    cells += "<td class=\"num\">" +
             html_escape(nodes == t.nodes.end() ? std::string(torch ? "" : kDash) : format_time(nodes_sum_s(model, nodes->second))) +
             "</td></tr>\n";
    return cells;
  };
  for (const auto& t : tables) {
    for (size_t i : t.ours) out += row(t, model.results[i], false);
    for (const auto& [backend, i] : t.torch) out += row(t, model.results[i], true);
  }
  out += "</tbody></table>\n";
  for (const auto& t : tables)
    for (const auto& [block, nodes] : t.nodes) {
      const ResultRecord& b = model.results[block];
      const double sum = nodes_sum_s(model, nodes);
      out += "<h3 class=\"mono\">Nodes of " + html_escape(b.case_id) + "</h3>\n<p class=\"muted\">The block " +
             html_escape(b.ok() ? format_time(b.median_s) : b.status) + "; its nodes timed alone " +
             html_escape(format_time(sum)) + ".</p>\n<table class=\"results\"><thead><tr><th>Node</th><th>Case</th>"
             "<th>Time</th><th>Share</th><th>% of roofline</th></tr></thead><tbody>\n";
      for (size_t i : nodes) {
        const ResultRecord& r = model.results[i];
        const std::string names = node_names(r), time = node_time_text(r);
        out += "<tr><td>" + html_escape(names) + "</td><td class=\"mono\">" + html_escape(r.case_id) +
               "</td><td class=\"num\">" + html_escape(time) + "</td><td class=\"num\">" +
               html_escape(r.ok() && sum > 0 ? format_percent(100 * node_time(r) / sum) : std::string(kDash)) +
               "</td><td class=\"num\" title=\"" + html_escape(r.judged.describe()) + "\">" + html_escape(percent_text(r)) +
               "</td></tr>\n";
      }
      out += "</tbody></table>\n";
    }
  return out + "</section>\n";
}

}  // namespace dnnb::report
