// `dnnblocks list`: the coverage table, op x backend x dtype, counted against the catalogue
// (suites/catalogue.json); `list --variants`: the alternatives with the sentence saying when
// to choose each.
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "core/cli/commands.h"
#include "core/registry.h"

namespace dnnb::cli {

namespace {

struct Catalogue {
  std::vector<std::string> required_backends;
  std::vector<std::pair<std::string, std::vector<std::string>>> families;  // family -> op names
};

std::string default_catalogue_path() { return std::string(DNNB_SOURCE_DIR) + "/suites/catalogue.json"; }

Result<Catalogue> load_catalogue(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::bad_input(path + ": cannot open the catalogue");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::bad_input(path + ": not a JSON object");
  Catalogue c;
  const auto& req = j["required_backends"];
  const auto& fams = j["families"];
  if (!req.is_array() || !fams.is_object())
    return Status::bad_input(path + ": needs \"required_backends\" (array) and \"families\" (object)");
  for (const auto& b : req) {
    if (!b.is_string() || !find_backend(b.get<std::string>()))
      return Status::bad_input(path + ": required_backends: " + b.dump() + " is not a backend");
    c.required_backends.push_back(b.get<std::string>());
  }
  for (const auto& [family, ops] : fams.items()) {
    if (!ops.is_array()) return Status::bad_input(path + ": family " + family + " is not an array of op names");
    std::vector<std::string> names;
    for (const auto& op : ops) {
      if (!op.is_string()) return Status::bad_input(path + ": family " + family + ": " + op.dump() + " is not a name");
      names.push_back(op.get<std::string>());
    }
    c.families.emplace_back(family, names);
  }
  return c;
}

// "f32 f16 bf16"
std::string dtypes_text(const std::vector<DType>& dtypes) {
  std::string s;
  for (DType d : dtypes) s += (s.empty() ? "" : " ") + std::string(dtype_name(d));
  return s;
}

constexpr int kOpWidth = 18;
constexpr int kCellWidth = 16;  // 18 + 6 x 17 = 120 columns

// `text` in lines of at most `width` columns, each after `indent` spaces.
void print_wrapped(const std::string& text, int indent, int width) {
  std::string line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && static_cast<int>(line.size() + 1 + word.size()) > width - indent) {
      std::printf("%*s%s\n", indent, "", line.c_str());
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) std::printf("%*s%s\n", indent, "", line.c_str());
}

int run_variants(const Registry& reg) {
  int n = 0;
  std::printf("%-*s %-24s %s\n    when to choose it over the default\n", kOpWidth, "op", "implementation", "dtypes");
  for (const auto& impl : reg.implementations()) {
    if (impl.is_default()) continue;
    ++n;
    std::printf("\n%-*s %-24s %s\n", kOpWidth, impl.op.c_str(), impl.label().c_str(), dtypes_text(impl.dtypes).c_str());
    print_wrapped(impl.when.empty() ? "(no sentence: a defect)" : impl.when, 4, 120);
  }
  std::printf("\n%d alternatives; everything else is its backend's default\n", n);
  return 0;
}

int run_list(bool json, bool variants, const std::string& catalogue_path) {
  const Registry& reg = Registry::instance();
  if (variants) return run_variants(reg);
  auto catalogue = load_catalogue(catalogue_path);
  if (!catalogue) {
    std::fprintf(stderr, "dnnblocks list: %s\n", catalogue.status().message.c_str());
    return 2;
  }
  std::set<std::string> built;  // backends with any implementation in this build
  for (const auto& impl : reg.implementations()) built.insert(impl.backend);
  auto default_of = [&](const std::string& op, const std::string& backend) {
    return reg.find_implementation(op, backend, "");
  };
  auto alternatives_of = [&](const std::string& op, const std::string& backend) {
    int n = 0;
    for (const auto& impl : reg.implementations()) n += impl.op == op && impl.backend == backend && !impl.is_default();
    return n;
  };

  // Cells of the catalogue's ops on its required backends that this build lacks.
  int missing = 0, not_built = 0, catalogue_ops = 0;
  std::vector<std::string> unregistered;
  std::map<std::string, int> missing_per_backend;
  for (const auto& [family, ops] : catalogue->families)
    for (const auto& op : ops) {
      ++catalogue_ops;
      if (!reg.find_op(op)) unregistered.push_back(op);
      for (const auto& b : catalogue->required_backends) {
        if (default_of(op, b)) continue;
        if (!built.count(b)) {
          ++not_built;
        } else {
          ++missing;
          ++missing_per_backend[b];
        }
      }
    }

  if (json) {
    nlohmann::json impls = nlohmann::json::array();
    for (const auto& impl : reg.implementations())
      for (DType d : impl.dtypes)
        impls.push_back({{"op", impl.op}, {"backend", impl.backend}, {"variant", impl.variant}, {"dtype", dtype_name(d)},
                         {"default", impl.is_default()}, {"when", impl.when}});
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& op : reg.ops()) {
      nlohmann::json dtypes = nlohmann::json::array();
      for (DType d : op.dtypes) dtypes.push_back(dtype_name(d));
      ops.push_back({{"op", op.name}, {"family", op.family}, {"torch", op.torch}, {"dtypes", dtypes},
                     {"tolerance_class", to_string(op.tolerance)}});
    }
    nlohmann::json coverage = {{"catalogue_ops", catalogue_ops},
                               {"required_backends", catalogue->required_backends},
                               {"missing_cells", missing},
                               {"cells_of_backends_not_built", not_built},
                               {"unregistered_ops", unregistered}};
    std::printf("%s\n", nlohmann::json({{"implementations", impls}, {"ops", ops}, {"coverage", coverage}}).dump(1).c_str());
    return 0;
  }

  std::printf("%-*s", kOpWidth, "op");
  for (const auto& b : backends()) std::printf(" %-*s", kCellWidth, b.name.c_str());
  std::printf("\n");
  for (const auto& op : reg.ops()) {
    std::printf("%-*s", kOpWidth, op.name.c_str());
    for (const auto& b : backends()) {
      const Implementation* impl = default_of(op.name, b.name);
      std::string cell = impl ? dtypes_text(impl->dtypes) : "-";
      const int alt = alternatives_of(op.name, b.name);
      const std::string alt_text = alt > 0 ? " +" + std::to_string(alt) : "";
      // A cell too narrow for every dtype name (casts between five formats) gives the count;
      // `list --json` names them.
      if (impl && static_cast<int>(cell.size() + alt_text.size()) > kCellWidth)
        cell = std::to_string(impl->dtypes.size()) + " dtypes";
      cell += alt_text;
      std::printf(" %-*s", kCellWidth, cell.c_str());
    }
    std::printf("\n");
  }
  std::printf("\nCells: the default's dtypes (their count where the names do not fit); +N: N alternatives\n"
              "(`dnnblocks list --variants`); -: none.\n");
  for (const auto& b : backends())
    if (!built.count(b.name)) std::printf("%s: no implementation in this build\n", b.name.c_str());
  // Blocks a backend cannot run: the node whose op it lacks.
  for (const Absence& a : reg.absences()) std::printf("%s on %s: none (%s)\n", a.op.c_str(), a.backend.c_str(), a.reason.c_str());
  std::printf("%zu ops registered, %zu implementations; the catalogue has %d ops\n", reg.ops().size(),
              reg.implementations().size(), catalogue_ops);
  std::printf("missing: %d op x backend cells of the catalogue on", missing);
  for (const auto& b : catalogue->required_backends)
    if (built.count(b)) std::printf(" %s (%d)", b.c_str(), missing_per_backend[b]);
    else std::printf(" %s (not built)", b.c_str());
  if (not_built > 0) std::printf(";\n         %d more on backends not in this build", not_built);
  std::printf("\nnot registered yet:");
  int width = 19;
  for (const auto& op : unregistered) {
    if (width + op.size() + 1 > 118) {
      std::printf("\n   ");
      width = 3;
    }
    std::printf(" %s", op.c_str());
    width += static_cast<int>(op.size()) + 1;
  }
  std::printf("\n");
  return 0;
}

}  // namespace

void add_list_command(CLI::App& app, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  auto variants = std::make_shared<bool>(false);
  auto catalogue = std::make_shared<std::string>(default_catalogue_path());
  CLI::App* cmd = app.add_subcommand("list", "Print the coverage table (op x backend x dtype) against the catalogue");
  cmd->add_flag("--json", *json, "Print {implementations: [{op, backend, variant, dtype, default, when}], ops, coverage}");
  cmd->add_flag("--variants", *variants, "List the alternative implementations and when to choose each");
  cmd->add_option("--catalogue", *catalogue, "The catalogue file (default: suites/catalogue.json of the source tree)");
  cmd->callback([json, variants, catalogue, &exit_code] { exit_code = run_list(*json, *variants, *catalogue); });
}

}  // namespace dnnb::cli
