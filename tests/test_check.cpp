// The conformance engine's promises to users: a damaged fixture is bad input naming the file,
// a case id reruns exactly that case, JSON and JUnit hold every case, and a wrong kernel fails
// with its coordinate (through an implementation registered here that is deliberately off).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"

namespace dnnb {
namespace {

namespace fs = std::filesystem;

// A private copy of the fixtures with one file cut short.
std::string truncated_fixture_copy(const std::string& victim, std::string* victim_path) {
  const fs::path src = default_fixtures_dir();
  const fs::path dst = fs::temp_directory_path() / ("dnnb_fixtures_" + std::to_string(::getpid()));
  fs::remove_all(dst);
  fs::create_directories(dst / fs::path(victim).parent_path());
  fs::copy_file(src / "manifest.json", dst / "manifest.json");
  fs::copy_file(src / victim, dst / victim);
  fs::resize_file(dst / victim, fs::file_size(dst / victim) / 2);
  *victim_path = (dst / victim).string();
  return dst.string();
}

TEST(Check, TruncatedFixtureIsBadInputNamingTheFile) {
  std::string victim_path;
  CheckOptions options;
  options.op_glob = "softmax";
  options.backend = "reference";
  options.dtype = "f32";
  options.random = false;
  options.fixtures_dir = truncated_fixture_copy("family1/softmax/basic.f32.safetensors", &victim_path);
  FixtureManifest manifest;
  auto plan = plan_check(options, manifest);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message;
  std::vector<CaseResult> results;
  for (const auto& pc : *plan)
    if (pc.fixture && pc.fixture->path == "family1/softmax/basic.f32.safetensors")
      results.push_back(run_case(pc, manifest, options));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, StatusCode::bad_input);
  EXPECT_NE(results[0].reason.find(victim_path), std::string::npos) << results[0].reason;
  EXPECT_EQ(summarize(results).exit_code(), 2);
  fs::remove_all(options.fixtures_dir);
}

TEST(Check, UnknownOpAndBackendAreBadInput) {
  FixtureManifest manifest;
  CheckOptions options;
  options.op_glob = "no_such_op";
  EXPECT_EQ(plan_check(options, manifest).status().code, StatusCode::bad_input);
  options.op_glob = "*";
  options.backend = "tpu";
  EXPECT_EQ(plan_check(options, manifest).status().code, StatusCode::bad_input);
  options.backend = "";
  options.case_id = "relu:f32:4x4@reference/none";
  EXPECT_EQ(plan_check(options, manifest).status().code, StatusCode::bad_input);
}

// A known backend with nothing to run (a variant no op has, or a backend this build lacks) is an
// error naming the flag, not a run of zero cases that passes.
TEST(Check, BackendWithNothingToRunIsBadInput) {
  FixtureManifest manifest;
  CheckOptions options;
  options.op_glob = "relu";
  options.backend = "reference/no_such_variant";
  auto plan = plan_check(options, manifest);
  EXPECT_EQ(plan.status().code, StatusCode::bad_input);
  EXPECT_NE(plan.status().message.find("--backend reference/no_such_variant"), std::string::npos);
}

TEST(Check, CaseIdRerunsExactlyThatCase) {
  FixtureManifest manifest;
  CheckOptions options;
  options.case_id = "softmax:f32:4x64:fixture=basic@reference:0";
  auto plan = plan_check(options, manifest);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message;
  ASSERT_EQ(plan->size(), 1u);
  CaseResult r = run_case((*plan)[0], manifest, options);
  EXPECT_EQ(r.status, StatusCode::ok) << r.reason;
  EXPECT_EQ(r.case_id, options.case_id);
  EXPECT_EQ(repro_command(r, options), "dnnblocks check --case '" + options.case_id + "'");
}

// A deliberately wrong kernel (relu that returns x for x < -1), planned by hand (not
// registered, so other tests never see it): check must fail it with the coordinate.
Status sloppy_relu(OpCall& call) {
  const Tensor& x = call.inputs[0];
  Tensor& y = call.outputs[0];
  auto rx = *row_index(x);
  auto ry = *row_index(y);
  for (int64_t r = 0; r < rx.rows; ++r)
    for (int64_t c = 0; c < rx.cols; ++c) {
      const double v = load_element(x.buffer->handle, x.dtype, rx.offset + rx.row_offset(r) + c * rx.col_stride);
      store_element(y.buffer->handle, y.dtype, ry.offset + ry.row_offset(r) + c * ry.col_stride,
                    v < -1 ? v : (v > 0 ? v : 0));
    }
  return Status::ok();
}

TEST(Check, WrongKernelFailsWithCoordinateAndJsonJunitRecordIt) {
  Implementation impl;
  impl.op = "relu";
  impl.backend = "reference";
  impl.variant = "test_sloppy";
  impl.dtypes = {DType::f32};
  impl.supports = [](const Problem&, const DeviceRuntime& d) {
    return d.host_accessible() ? Status::ok() : Status::unsupported("host only");
  };
  impl.run = sloppy_relu;
  PlannedCase pc;
  pc.id = *CaseId::parse("relu:f32:64x4096@reference/test_sloppy:0");
  pc.spec = Registry::instance().find_op("relu");
  pc.impl = &impl;
  pc.device = DeviceSet::instance().first(DeviceKind::cpu);
  ASSERT_NE(pc.spec, nullptr);
  ASSERT_NE(pc.device, nullptr);
  FixtureManifest manifest;
  CheckOptions options;
  CaseResult r = run_case(pc, manifest, options);
  EXPECT_EQ(r.status, StatusCode::mismatch);
  EXPECT_NE(r.reason.find("worst at ["), std::string::npos) << r.reason;
  std::vector<CaseResult> results{r};
  EXPECT_EQ(summarize(results).exit_code(), 1);
  auto json = results_to_json(results);
  EXPECT_EQ(json["summary"]["failed"], 1);
  EXPECT_EQ(json["cases"][0]["verdict"], "FAIL");
  EXPECT_NE(results_to_junit(results).find("<failure message="), std::string::npos);
}

}  // namespace
}  // namespace dnnb
