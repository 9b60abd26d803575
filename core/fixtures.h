// The fixture manifest (suites/fixtures/manifest.json): every committed fixture file with
// its sha256 and the problem it holds. A file whose hash differs is reported, not used.
#pragma once
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/status.h"

namespace dnnb {

struct FixtureEntry {
  std::string path;      // relative to the fixtures directory
  std::string sha256;
  std::string kind;      // "op", "casts", "observed"
  std::string problem;   // problem string for kind "op"
};

struct FixtureManifest {
  std::string dir;       // absolute or as given
  std::string torch_version;
  std::vector<FixtureEntry> entries;

  static Result<FixtureManifest> load(const std::string& dir);
  std::string full_path(const FixtureEntry& e) const { return dir + "/" + e.path; }
  // Entries of kind "op" for one op and dtype.
  std::vector<const FixtureEntry*> cases_for(const std::string& op, DType dtype) const;
  const FixtureEntry* find_problem(const std::string& problem) const;
  // Hash check: ok, or bad_input naming the file and both hashes.
  Status verify(const FixtureEntry& e) const;
};

// The repository's own fixtures (DNNB_SOURCE_DIR/suites/fixtures), used when no --fixtures.
std::string default_fixtures_dir();

}  // namespace dnnb
