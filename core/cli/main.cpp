// dnnblocks: devices, list, check, inspect (bench, roofline, report, compare follow).
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/check.h"
#include "core/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"dnnblocks: conformance and performance suite for deep-learning ops and blocks"};
  app.require_subcommand(1);
  int exit_code = 0;
  dnnb::cli::add_devices_command(app, exit_code);
  dnnb::cli::add_list_command(app, exit_code);
  dnnb::cli::add_check_command(app, exit_code);
  dnnb::cli::add_inspect_command(app, exit_code);
  dnnb::cli::add_bench_command(app, exit_code);
  dnnb::cli::add_roofline_command(app, exit_code);
  dnnb::cli::add_report_command(app, exit_code);
  dnnb::cli::add_compare_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // bad flags are bad input
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dnnblocks: internal error: %s\n", e.what());
    return 3;
  }
  // A case that timed out left its worker thread inside the stuck kernel: end the process
  // without running static destructors, which would wait on (or free) what that kernel uses;
  // the driver ends a kernel still running on a GPU with the process.
  if (dnnb::abandoned_case_workers() > 0) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(exit_code);
  }
  return exit_code;
}
