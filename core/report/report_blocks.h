// The blocks section (report_blocks.cpp; docs/report.md, "Blocks").
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/report/report_model.h"

namespace dnnb::report {

// One block problem (op:dtype:shape:params): our results on each backend, torch's (backend ->
// result), and for a block result that `bench --nodes` timed, its node results.
struct BlockTable {
  std::string key;      // the problem with its params sorted and numbers in one form
  std::string problem;  // as the first result of it says it
  std::vector<size_t> ours;
  std::map<std::string, size_t> torch;              // "torch-eager" | "torch-compile" -> result
  std::map<size_t, std::vector<size_t>> nodes;      // block result -> node results, graph order
};
std::vector<BlockTable> block_tables(const ReportModel& model);
// The sum of node times (a shared problem counts once per node), ok results only.
double nodes_sum_s(const ReportModel& model, const std::vector<size_t>& nodes);

std::string blocks_markdown(const ReportModel& model);  // "" when there is no block
std::string blocks_section(const ReportModel& model);   // HTML; "" when there is no block

}  // namespace dnnb::report
