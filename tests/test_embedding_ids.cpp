// An embedding id outside the table is bad input on every backend (torch raises IndexError),
// reported by run() or, for a kernel that must not make its launch wait for the device (CUDA, OpenCL), by
// the device's next synchronize() (core/deferred_checks.h): either way the case ends
// bad_input naming the position and the id. And launches back to back, with no synchronize in
// between (what bench and a model step do), all succeed, past any ring of pending reports.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "tests/backend_runners.h"

namespace dnnb {
namespace {

// run() then synchronize(): the first failure.
Status run_and_sync(const testing::Runner& r, OpCall& call) {
  Status ran = r.impl->run(call);
  Status synced = r.device->synchronize();
  return ran.is_ok() ? synced : ran;
}

TEST(EmbeddingIds, OutsideTheTableIsBadInputOnEveryBackend) {
  auto problem = *Problem::parse("embedding:f32:4x10x8:ids.dt=i32");
  std::vector<std::string> skipped;
  const auto runners = testing::runners(problem, skipped);
  ASSERT_FALSE(runners.empty());
  for (const auto& r : runners) {
    SCOPED_TRACE(r.label);
    auto workspace = make_workspace(*r.impl, problem, *r.device);
    ASSERT_TRUE(workspace.is_ok()) << workspace.status().message;
    std::vector<double> table(80);
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<double>(i);
    auto good_ids = testing::device_tensor(*r.device, DType::i32, {4}, {9, 0, 3, 3});
    auto bad_ids = testing::device_tensor(*r.device, DType::i32, {4}, {9, 0, 10, -1});
    auto t = testing::device_tensor(*r.device, DType::f32, {10, 8}, table);
    auto y = empty_tensor(*r.device, DType::f32, {4, 8});
    ASSERT_TRUE(good_ids.is_ok() && bad_ids.is_ok() && t.is_ok() && y.is_ok());
    OpCall bad{problem, *r.device, {*bad_ids, *t}, {*y}, *workspace};
    Status s = run_and_sync(r, bad);
    EXPECT_EQ(s.code, StatusCode::bad_input) << s.message;
    EXPECT_NE(s.message.find("ids[2] = 10"), std::string::npos) << s.message;
    // Many launches before one synchronize: every one fine, and nothing left over from the bad
    // call above.
    OpCall good{problem, *r.device, {*good_ids, *t}, {*y}, *workspace};
    Status all = Status::ok();
    for (int i = 0; i < 3000 && all.is_ok(); ++i) all = r.impl->run(good);
    if (all.is_ok()) all = r.device->synchronize();
    EXPECT_TRUE(all.is_ok()) << all.message;
    // A bad call among good ones is still reported.
    Status mixed = r.impl->run(good);
    if (mixed.is_ok()) mixed = run_and_sync(r, bad);
    EXPECT_EQ(mixed.code, StatusCode::bad_input) << mixed.message;
  }
  testing::print_skipped(skipped);
}

}  // namespace
}  // namespace dnnb
