// Each subcommand of the `dnnblocks` CLI lives in its own file and adds itself to the app.
// A handler stores its exit code in `exit_code`: 0 ok, 1 a case failed, 2 bad input.
#pragma once
#include <CLI/CLI.hpp>

namespace dnnb::cli {

void add_devices_command(CLI::App& app, int& exit_code);
void add_list_command(CLI::App& app, int& exit_code);
void add_check_command(CLI::App& app, int& exit_code);
void add_inspect_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_roofline_command(CLI::App& app, int& exit_code);
void add_report_command(CLI::App& app, int& exit_code);
void add_compare_command(CLI::App& app, int& exit_code);

// `--variants defaults|all` of check, bench and compare: sets `all_variants` for "all"; any
// other value is a parse error (exit 2). `what` says what the defaults are for this command.
inline CLI::Option* add_variants_option(CLI::App* cmd, bool& all_variants, const std::string& what) {
  return cmd
      ->add_option_function<std::string>(
          "--variants", [&all_variants](const std::string& v) { all_variants = v == "all"; },
          "defaults (default): " + what + "; all: the alternatives too")
      ->check(CLI::IsMember({"defaults", "all"}))
      ->type_name("defaults|all");
}

}  // namespace dnnb::cli
