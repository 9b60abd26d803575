// `dnnblocks report FILE... [--html FILE] [--md FILE]`: bench results files (docs/bench-json.md)
// merged into one self-contained HTML page and a Markdown summary (docs/report.md). With
// neither flag the Markdown goes to stdout. Exit 0, or 2 on bad input (a malformed file, named
// with its key) and on an output that cannot be written.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/cli/commands.h"
#include "core/report/report_model.h"
#include "core/report/report_writers.h"

namespace dnnb::cli {

namespace {

struct ReportArgs {
  std::vector<std::string> inputs;
  std::string html_path, md_path;
};

bool write_file(const std::string& path, const std::string& text, const char* what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (out) out.close();
  if (!out) {
    std::fprintf(stderr, "dnnblocks report: %s: cannot write '%s'\n", what, path.c_str());
    return false;
  }
  return true;
}

int run_report(const ReportArgs& args) {
  auto model = report::load_report(args.inputs);
  if (!model) {
    std::fprintf(stderr, "dnnblocks report: %s\n", model.status().message.c_str());
    return model.status().code == StatusCode::bad_input ? 2 : 3;
  }
  for (const auto& note : model->notes) std::fprintf(stderr, "dnnblocks report: note: %s\n", note.c_str());
  if (!args.html_path.empty() && !write_file(args.html_path, report::html_page(*model), "--html")) return 2;
  if (!args.md_path.empty() && !write_file(args.md_path, report::markdown_summary(*model), "--md")) return 2;
  if (args.html_path.empty() && args.md_path.empty()) {
    const std::string summary = report::markdown_summary(*model);
    if (std::fwrite(summary.data(), 1, summary.size(), stdout) != summary.size() || std::fflush(stdout) != 0) {
      std::fprintf(stderr, "dnnblocks report: cannot write to stdout\n");
      return 2;
    }
  }
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto* command = app.add_subcommand(
      "report", "Bench results files -> one self-contained HTML page (rooflines, tables, sweeps) and a Markdown summary");
  auto args = std::make_shared<ReportArgs>();
  command->add_option("files", args->inputs, "Bench results files (`dnnblocks bench --out`); later ones win on duplicates")
      ->required();
  command->add_option("--html", args->html_path, "Write the HTML page here");
  command->add_option("--md", args->md_path, "Write the Markdown summary here (without --html or --md: to stdout)");
  command->callback([args, &exit_code] { exit_code = run_report(*args); });
}

}  // namespace dnnb::cli
