// Conformance per backend, op and dtype, so `ci/test.sh` gates on it: every fixture case and every
// random case of the ci tier must pass, for the default implementation and every alternative (an
// alternative that is kept must stay correct). One test per (backend, op, dtype), which ctest
// spreads over the machine's cores. A backend whose device is absent here is skipped with the
// reason (e.g. "no CUDA device: ..."), one without an implementation of the op in that dtype says
// so, and one whose implementations declare every case unsupported is skipped with their reason.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/dtype.h"
#include "core/registry.h"

namespace dnnb {
namespace {

struct BackendOp {
  std::string backend;
  std::string op;
  std::string dtype;
};

// Evaluated when gtest registers the tests (after static initialisation filled the registry).
std::vector<BackendOp> backend_ops() {
  std::vector<BackendOp> list;
  for (const char* backend : {"reference", "avx512", "cuda", "opencl", "onednn"})
    for (const OpSpec& spec : Registry::instance().ops())
      for (DType dtype : spec.dtypes) list.push_back({backend, spec.name, dtype_name(dtype)});
  return list;
}

// What gtest prints for a parameter (test listings, failures): "opencl/softmax/bf16".
void PrintTo(const BackendOp& p, std::ostream* os) { *os << p.backend << "/" << p.op << "/" << p.dtype; }

class Conformance : public ::testing::TestWithParam<BackendOp> {};

TEST_P(Conformance, AllCasesPass) {
  const std::string& backend = GetParam().backend;
  const std::string& op = GetParam().op;
  const std::string& dtype = GetParam().dtype;
  if (Registry::instance().implementations().empty()) GTEST_FAIL() << "no implementation registered";
  bool any = false, of_op = false;
  for (const auto& impl : Registry::instance().implementations()) {
    any |= impl.backend == backend;
    if (impl.backend == backend && impl.op == op)
      for (DType d : impl.dtypes) of_op |= dtype == dtype_name(d);
  }
  if (!any) GTEST_SKIP() << "backend " << backend << " is not compiled into this build";
  if (!of_op) GTEST_SKIP() << "backend " << backend << " has no implementation of " << op << " in " << dtype;

  CheckOptions options;
  options.backend = backend;
  options.op_glob = op;  // op names hold no glob characters
  options.dtype = dtype;
  options.all_variants = true;
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
  std::printf("[ conformance %s %s %s ] %d passed, %d failed, %d xfail, %d skipped, %d unsupported, %d bad input\n",
              backend.c_str(), op.c_str(), dtype.c_str(), s.passed, s.failed, s.expected_failures, s.skipped, s.unsupported, s.bad_input);
  for (const auto& r : results)
    if (r.expected_failure()) std::printf("  XFAIL %s: %s\n", r.case_id.c_str(), r.known_deviation.c_str());
  if (s.passed == 0 && s.failed == 0 && s.bad_input == 0 && s.skipped > 0)
    GTEST_SKIP() << "skipped: " << skip_reason;
  // Every case declared unsupported by the implementation itself, e.g. a peer library whose
  // installed version lacks the op (oneDNN 2.6 has no RMS normalisation): a skip that prints the
  // implementation's reason, not a pass.
  if (s.passed == 0 && s.failed == 0 && s.bad_input == 0 && s.skipped == 0 && s.unsupported > 0) {
    std::string reason;
    for (const auto& r : results)
      if (r.status == StatusCode::unsupported) { reason = r.reason; break; }
    GTEST_SKIP() << "every case unsupported: " << reason;
  }
  EXPECT_GT(s.passed, 0) << "no case of " << op << " " << dtype << " on backend " << backend << " ran";
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance, ::testing::ValuesIn(backend_ops()),
                         [](const auto& info) { return info.param.backend + "_" + info.param.op + "_" + info.param.dtype; });

}  // namespace
}  // namespace dnnb
