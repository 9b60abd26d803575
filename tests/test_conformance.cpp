// Conformance per backend, so `ci/test.sh` gates on it: every fixture case and every random
// case of the backend must pass. A backend whose device is absent here is skipped with the
// reason (e.g. "no CUDA device: ..."); one whose cases are all unsupported fails.
#include <gtest/gtest.h>

#include "core/check.h"

namespace dnnb {
namespace {

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, AllCasesPass) {
  const std::string backend = GetParam();
  if (Registry::instance().implementations().empty()) GTEST_FAIL() << "no implementation registered";
  bool any = false;
  for (const auto& impl : Registry::instance().implementations()) any |= impl.backend == backend;
  if (!any) GTEST_SKIP() << "backend " << backend << " is not compiled into this build";

  CheckOptions options;
  options.backend = backend;
  FixtureManifest manifest;
  auto plan = plan_check(options, manifest);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message;
  ASSERT_FALSE(plan->empty());

  std::vector<CaseResult> results;
  std::string skip_reason;
  for (const auto& pc : *plan) {
    results.push_back(run_case(pc, manifest, options));
    const CaseResult& r = results.back();
    if (r.status == StatusCode::skipped && skip_reason.empty()) skip_reason = r.reason;
    if (r.failed() || r.status == StatusCode::bad_input)
      ADD_FAILURE() << r.verdict() << " " << r.case_id << "\n  " << r.reason << "\n  rerun: " << repro_command(r, options);
  }
  CheckSummary s = summarize(results);
  std::printf("[ conformance %s ] %d passed, %d failed, %d xfail, %d skipped, %d unsupported, %d bad input\n",
              backend.c_str(), s.passed, s.failed, s.expected_failures, s.skipped, s.unsupported, s.bad_input);
  for (const auto& r : results)
    if (r.expected_failure()) std::printf("  XFAIL %s: %s\n", r.case_id.c_str(), r.known_deviation.c_str());
  if (s.passed == 0 && s.failed == 0 && s.bad_input == 0 && s.skipped > 0)
    GTEST_SKIP() << "skipped: " << skip_reason;
  EXPECT_GT(s.passed, 0) << "no case of backend " << backend << " ran";
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance,
                         ::testing::Values("reference", "avx512", "cuda", "opencl", "onednn"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dnnb
