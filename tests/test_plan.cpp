// The one planner (core/plan.h): what check and bench enumerate comes from plan_cells, so both
// see the same cells of the registry; filters and absent devices behave as the CLI documents.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/bench.h"
#include "core/check.h"
#include "core/device.h"
#include "core/plan.h"

namespace dnnb {
namespace {

std::string cell_key(const PlanCell& c) { return c.spec->name + ":" + dtype_name(c.dtype) + "@" + c.impl->label(); }

TEST(Plan, EveryDefaultImplementationHasItsCellsAtEveryDtypeItShares) {
  auto cells = plan_cells(PlanFilter{});
  ASSERT_TRUE(cells.is_ok()) << cells.status().message;
  std::set<std::string> keys;
  for (const auto& c : *cells) keys.insert(cell_key(c));
  for (const auto& impl : Registry::instance().implementations()) {
    if (!impl.is_default()) continue;
    const OpSpec* spec = Registry::instance().find_op(impl.op);
    ASSERT_NE(spec, nullptr) << impl.op;
    for (DType d : impl.dtypes) {
      const bool op_has = std::find(spec->dtypes.begin(), spec->dtypes.end(), d) != spec->dtypes.end();
      EXPECT_EQ(keys.count(impl.op + ":" + dtype_name(d) + "@" + impl.label()), op_has ? 1u : 0u)
          << impl.op << "@" << impl.label() << " " << dtype_name(d);
    }
  }
}

TEST(Plan, CheckPlansExactlyTheCellsOfTheFilter) {
  PlanFilter filter;
  filter.op_glob = "softmax,matmul";
  filter.backends = "reference,avx512";
  filter.dtype = "bf16";
  auto cells = plan_cells(filter);
  ASSERT_TRUE(cells.is_ok()) << cells.status().message;
  std::set<std::string> expected;
  for (const auto& c : *cells) expected.insert(cell_key(c));
  EXPECT_EQ(expected.size(), 4u);  // two ops, two backends, one dtype

  CheckOptions options;
  options.op_glob = filter.op_glob;
  options.backend = filter.backends;
  options.dtype = filter.dtype;
  FixtureManifest manifest;
  auto plan = plan_check(options, manifest);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message;
  std::set<std::string> planned;
  for (const auto& pc : *plan)
    planned.insert(pc.spec->name + ":" + dtype_name(pc.id.problem.dtype) + "@" + pc.impl->label());
  EXPECT_EQ(planned, expected);
}

TEST(Plan, BadFiltersAreBadInputNamingTheFlag) {
  PlanFilter f;
  f.op_glob = "no_such_op";
  EXPECT_NE(plan_cells(f).status().message.find("--op"), std::string::npos);
  f = PlanFilter{};
  f.backends = "avx512,nope";
  EXPECT_NE(plan_cells(f).status().message.find("unknown backend 'nope'"), std::string::npos);
  f = PlanFilter{};
  f.dtype = "f65";
  EXPECT_NE(plan_cells(f).status().message.find("--dtype"), std::string::npos);
  f = PlanFilter{};
  f.devices = {"cuda0"};
  EXPECT_EQ(plan_cells(f).status().code, StatusCode::bad_input);
  f = PlanFilter{};
  f.op_glob = "softmax";
  f.backends = "avx512/no_such_variant";
  EXPECT_NE(plan_cells(f).status().message.find("no implementation"), std::string::npos);
}

TEST(Plan, AnAbsentDeviceGivesCellsWithTheReasonNotAnError) {
  PlanFilter f;
  f.op_glob = "softmax";
  f.backends = "avx512";
  f.devices = {"cpu:7"};
  auto cells = plan_cells(f);
  ASSERT_TRUE(cells.is_ok()) << cells.status().message;
  ASSERT_FALSE(cells->empty());
  for (const auto& c : *cells) {
    EXPECT_EQ(c.device, nullptr);
    EXPECT_NE(c.absent_reason.find("cpu:7"), std::string::npos) << c.absent_reason;
  }
  // A device of another kind: this backend is not planned at all.
  f.devices = {"cuda:0"};
  EXPECT_EQ(plan_cells(f).status().code, StatusCode::bad_input);
}

TEST(Plan, EveryDeviceOrTheFirst) {
  PlanFilter f;
  f.op_glob = "add";
  f.backends = "reference";
  f.dtype = "f32";
  auto every = plan_cells(f);
  f.every_device = false;
  auto first = plan_cells(f);
  ASSERT_TRUE(every.is_ok() && first.is_ok());
  EXPECT_EQ(first->size(), 1u);
  EXPECT_EQ(every->size(), DeviceSet::instance().of_kind(DeviceKind::cpu).size());
}

TEST(Plan, CaseIdNamesOneCell) {
  auto id = CaseId::parse("matmul:bf16:8x8x8@avx512");
  ASSERT_TRUE(id.is_ok());
  auto cell = plan_case_cell(*id);
  ASSERT_TRUE(cell.is_ok()) << cell.status().message;
  EXPECT_EQ(cell->spec->name, "matmul");
  EXPECT_EQ(cell->impl->backend, "avx512");
  EXPECT_EQ(case_id_of(*cell, id->problem).to_string(), "matmul:bf16:8x8x8@avx512:0");
  auto bad = CaseId::parse("matmul:bf16:8x8x8@avx512/nope");
  ASSERT_TRUE(bad.is_ok());
  EXPECT_EQ(plan_case_cell(*bad).status().code, StatusCode::bad_input);
}

}  // namespace
}  // namespace dnnb
