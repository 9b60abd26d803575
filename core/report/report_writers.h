// The two outputs of `dnnblocks report`: one self-contained HTML page (inline SVG, CSS and
// script; nothing fetched) and a Markdown summary for a CI job ($GITHUB_STEP_SUMMARY).
// docs/report.md says what they show. Every string from the input is escaped.
#pragma once
#include <string>

#include "core/report/report_model.h"

namespace dnnb::report {

std::string html_page(const ReportModel& model);
std::string markdown_summary(const ReportModel& model);

}  // namespace dnnb::report
