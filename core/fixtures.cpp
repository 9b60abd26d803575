#include "core/fixtures.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/sha256.h"

namespace dnnb {

std::string default_fixtures_dir() { return std::string(DNNB_SOURCE_DIR) + "/suites/fixtures"; }

Result<FixtureManifest> FixtureManifest::load(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  std::ifstream in(path);
  if (!in) return Status::bad_input(path + ": cannot open the fixture manifest");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::bad_input(path + ": not a JSON object");
  FixtureManifest m;
  m.dir = dir;
  if (j.contains("torch_version") && j["torch_version"].is_string()) m.torch_version = j["torch_version"];
  if (!j.contains("files") || !j["files"].is_array()) return Status::bad_input(path + ": no \"files\" array");
  for (const auto& f : j["files"]) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("sha256") ||
        !f["sha256"].is_string())
      return Status::bad_input(path + ": an entry of \"files\" lacks a string path or sha256");
    FixtureEntry e;
    e.path = f["path"];
    e.sha256 = f["sha256"];
    if (f.contains("kind") && f["kind"].is_string()) e.kind = f["kind"];
    if (f.contains("problem") && f["problem"].is_string()) e.problem = f["problem"];
    if (e.path.find("..") != std::string::npos || (!e.path.empty() && e.path[0] == '/'))
      return Status::bad_input(path + ": entry path '" + e.path + "' leaves the fixtures directory");
    if (e.kind == "op" && e.problem.empty())
      return Status::bad_input(path + ": op entry '" + e.path + "' has no problem");
    m.entries.push_back(std::move(e));
  }
  return m;
}

std::vector<const FixtureEntry*> FixtureManifest::cases_for(const std::string& op, DType dtype) const {
  std::vector<const FixtureEntry*> out;
  for (const auto& e : entries) {
    if (e.kind != "op") continue;
    auto p = Problem::parse(e.problem);
    if (p && p->op == op && p->dtype == dtype) out.push_back(&e);
  }
  return out;
}

const FixtureEntry* FixtureManifest::find_problem(const std::string& problem) const {
  for (const auto& e : entries)
    if (e.kind == "op" && e.problem == problem) return &e;
  return nullptr;
}

Status FixtureManifest::verify(const FixtureEntry& e) const {
  auto hash = sha256_file(full_path(e));
  if (!hash) return hash.status();
  if (*hash != e.sha256)
    return Status::bad_input(full_path(e) + ": sha256 " + *hash + " differs from the manifest's " + e.sha256 +
                             " (file changed, truncated or not regenerated)");
  return Status::ok();
}

}  // namespace dnnb
