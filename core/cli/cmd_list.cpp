// `dnnblocks list`: the coverage matrix, op x backend x dtype.
#include <cstdio>
#include <set>

#include "core/cli/commands.h"
#include "core/registry.h"

namespace dnnb::cli {

namespace {

int run_list(bool json) {
  const Registry& reg = Registry::instance();
  if (json) {
    nlohmann::json impls = nlohmann::json::array();
    for (const auto& impl : reg.implementations())
      for (DType d : impl.dtypes)
        impls.push_back({{"op", impl.op}, {"backend", impl.backend}, {"variant", impl.variant}, {"dtype", dtype_name(d)}});
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& op : reg.ops()) {
      nlohmann::json dtypes = nlohmann::json::array();
      for (DType d : op.dtypes) dtypes.push_back(dtype_name(d));
      ops.push_back({{"op", op.name}, {"family", op.family}, {"torch", op.torch}, {"dtypes", dtypes},
                     {"tolerance_class", to_string(op.tolerance)}});
    }
    std::printf("%s\n", nlohmann::json({{"implementations", impls}, {"ops", ops}}).dump(1).c_str());
    return 0;
  }
  // Columns: every backend label (backend/variant) that has at least one implementation,
  // in backend order, plus the plain backends with none, so gaps show.
  std::vector<std::string> columns;
  for (const auto& b : backends()) {
    std::set<std::string> labels;
    for (const auto& impl : reg.implementations())
      if (impl.backend == b.name) labels.insert(impl.label());
    if (labels.empty()) labels.insert(b.name);
    for (const auto& l : labels) columns.push_back(l);
  }
  std::printf("%-20s", "op");
  for (const auto& c : columns) std::printf(" %-14s", c.c_str());
  std::printf("\n");
  int missing = 0;
  for (const auto& op : reg.ops()) {
    std::printf("%-20s", op.name.c_str());
    for (const auto& c : columns) {
      std::string cell;
      for (const auto& impl : reg.implementations())
        if (impl.op == op.name && impl.label() == c)
          for (DType d : impl.dtypes) cell += (cell.empty() ? "" : ",") + std::string(dtype_name(d));
      if (cell.empty()) {
        cell = "-";
        ++missing;
      }
      std::printf(" %-14s", cell.c_str());
    }
    std::printf("\n");
  }
  std::printf("\n%zu ops, %zu implementations, %d op x backend cells missing ('-')\n", reg.ops().size(),
              reg.implementations().size(), missing);
  return 0;
}

}  // namespace

void add_list_command(CLI::App& app, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("list", "Print the coverage matrix: op x backend x dtype");
  cmd->add_flag("--json", *json, "Print {\"implementations\": [{op, backend, variant, dtype}...]}");
  cmd->callback([json, &exit_code] { exit_code = run_list(*json); });
}

}  // namespace dnnb::cli
