// `dnnblocks devices [--json]`: what this machine offers and why anything is missing.
// Always exits 0: an absent device is a fact to report, not a failure.
#include <cstdio>
#include <memory>

#include "core/cli/commands.h"
#include "core/device.h"
#include "devices/cpu/device_report.h"

namespace dnnb::cli {

void add_devices_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("devices", "List the devices found, their capabilities and theoretical peaks");
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "Print JSON (schema in docs/devices.md) instead of a table");
  cmd->callback([as_json, &exit_code] {
    const DeviceSet& set = DeviceSet::instance();
    if (*as_json)
      std::printf("%s\n", devices_json(set).dump(2).c_str());
    else
      std::printf("%s", devices_table(set).c_str());
    std::fflush(stdout);
    exit_code = 0;
  });
}

}  // namespace dnnb::cli
