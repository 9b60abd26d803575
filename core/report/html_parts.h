// Pieces of the HTML page (report_writers.h), one file per kind of content.
#pragma once
#include <string>
#include <vector>

#include "core/report/report_model.h"

namespace dnnb::report {

const char* page_css();
const char* page_script();

// html_tables.cpp
std::string results_section(const ReportModel& model);
std::string comparison_section(const ReportModel& model, const std::vector<HardwareGroup>& groups);
std::string not_ok_section(const ReportModel& model);
std::string fingerprint_footer(const ReportModel& model);
// A status badge, a backend chip (coloured dot and label), the flags of a result.
std::string status_badge(const std::string& status);
std::string backend_chip(const std::string& backend, const std::string& label);
std::string flag_list(const std::vector<std::string>& flags);
// Ranked results first, by % of roofline ascending (furthest from the limit first), then ok
// results without a figure (the oracle, no ceilings), then the rest.
std::vector<size_t> results_by_sol(const ReportModel& model);

}  // namespace dnnb::report
