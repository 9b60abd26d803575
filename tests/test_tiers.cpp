// Implementation tiers (a default per op and backend, alternatives only with a reason) and check
// tiers (smoke, ci, full): what each plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "core/check.h"
#include "core/registry.h"

namespace dnnb {
namespace {

TEST(ImplementationTiers, EveryAlternativeSaysWhenToChooseItAndHasADefault) {
  const Registry& reg = Registry::instance();
  for (const auto& impl : reg.implementations()) {
    if (impl.is_default()) {
      EXPECT_TRUE(impl.when.empty()) << impl.op << "@" << impl.label() << ": a default needs no 'when'";
      continue;
    }
    EXPECT_FALSE(impl.when.empty()) << impl.op << "@" << impl.label()
                                    << ": an alternative must say in one sentence when a user would choose it";
    EXPECT_NE(reg.find_implementation(impl.op, impl.backend, ""), nullptr)
        << impl.op << "@" << impl.label() << ": an alternative without a default on its backend";
  }
}

TEST(ImplementationTiers, AtMostThreeImplementationsPerOpAndBackend) {
  std::map<std::string, int> count;
  for (const auto& impl : Registry::instance().implementations()) ++count[impl.op + "@" + impl.backend];
  for (const auto& [where, n] : count) EXPECT_LE(n, 3) << where << " has " << n << " implementations";
}

struct PlanCounts {
  size_t cases = 0, fixture_cases = 0, random_cases = 0, alternatives = 0;
  std::set<std::string> op_dtypes;
};

PlanCounts plan_counts(CheckOptions options) {
  FixtureManifest manifest;
  auto plan = plan_check(options, manifest);
  EXPECT_TRUE(plan.is_ok()) << plan.status().message;
  PlanCounts c;
  if (!plan) return c;
  for (const auto& pc : *plan) {
    ++c.cases;
    if (pc.fixture) ++c.fixture_cases;
    else ++c.random_cases;
    c.alternatives += !pc.impl->is_default();
    c.op_dtypes.insert(pc.id.problem.op + ":" + dtype_name(pc.id.problem.dtype));
  }
  return c;
}

TEST(CheckTiers, SmokeIsOneFixturePerOpAndDtypeAndBackend) {
  CheckOptions options;
  options.backend = "reference";
  options.tier = CheckTier::smoke;
  PlanCounts smoke = plan_counts(options);
  EXPECT_EQ(smoke.random_cases, 0u);
  EXPECT_EQ(smoke.fixture_cases, smoke.op_dtypes.size());
  size_t op_dtypes = 0;
  for (const auto& spec : Registry::instance().ops()) op_dtypes += spec.dtypes.size();
  EXPECT_EQ(smoke.op_dtypes.size(), op_dtypes);
}

TEST(CheckTiers, CiRunsDefaultsAndFullAddsAlternativesAndBenchProblems) {
  CheckOptions options;
  options.op_glob = "softmax";
  options.dtype = "f32";
  PlanCounts ci = plan_counts(options);
  EXPECT_EQ(ci.alternatives, 0u);
  EXPECT_GT(ci.random_cases, 0u);

  options.all_variants = true;
  PlanCounts all = plan_counts(options);
  size_t alternatives = 0;
  for (const auto* impl : Registry::instance().implementations_of("softmax"))
    alternatives += !impl->is_default() && std::find(impl->dtypes.begin(), impl->dtypes.end(), DType::f32) != impl->dtypes.end();
  EXPECT_EQ(all.alternatives > 0, alternatives > 0);

  options.all_variants = false;
  options.tier = CheckTier::full;
  PlanCounts full = plan_counts(options);
  EXPECT_EQ(full.alternatives, all.alternatives);
  EXPECT_GT(full.random_cases, all.random_cases);  // the bench problems
  EXPECT_EQ(full.fixture_cases, all.fixture_cases);
}

TEST(CheckTiers, NamedVariantRunsInAnyTier) {
  for (const auto& impl : Registry::instance().implementations()) {
    if (impl.is_default()) continue;
    CheckOptions options;
    options.op_glob = impl.op;
    options.backend = impl.label();
    PlanCounts c = plan_counts(options);
    EXPECT_GT(c.cases, 0u) << impl.label();
    EXPECT_EQ(c.alternatives, c.cases) << impl.label();
    return;  // one is enough
  }
  GTEST_SKIP() << "no alternative implementation in this build";
}

TEST(CheckTiers, ParseAndPrint) {
  for (CheckTier t : {CheckTier::smoke, CheckTier::ci, CheckTier::full}) {
    auto parsed = parse_check_tier(to_string(t));
    ASSERT_TRUE(parsed.is_ok());
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(parse_check_tier("nightly").status().code, StatusCode::bad_input);
}

}  // namespace
}  // namespace dnnb
