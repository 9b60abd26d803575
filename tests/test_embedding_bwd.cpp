// embedding_bwd on every implementation: exact sums where f32 sums are exact (small integers in
// dy: any order gives the same value, so a token dropped, added twice or sent to the wrong row
// shows), rows no token takes set to 0 (dW is poisoned first), every token on one row, the same
// bits on a second run over random dy (the kernels sum each row in a fixed order), and ids
// outside the table reported as bad input naming the position and the id (at the device's next
// synchronize for CUDA and OpenCL, core/deferred_checks.h), also after thousands of launches
// with no synchronize in between.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "tests/backend_runners.h"

namespace dnnb {
namespace {

Status run_and_sync(const testing::Runner& r, OpCall& call) {
  Status ran = r.impl->run(call);
  Status synced = r.device->synchronize();
  return ran.is_ok() ? synced : ran;
}

// dW of one run, as doubles, after filling it with NaN.
Result<std::vector<double>> run_dw(const testing::Runner& r, const Problem& problem, const std::vector<double>& ids,
                                   const std::vector<double>& dy) {
  const int64_t tokens = problem.shape[0], vocab = problem.shape[1], dim = problem.shape[2];
  auto ids_d = testing::device_tensor(*r.device, DType::i32, {tokens}, ids);
  if (!ids_d) return ids_d.status();
  auto dy_d = testing::device_tensor(*r.device, problem.dtype, {tokens, dim}, dy);
  if (!dy_d) return dy_d.status();
  auto dw = testing::device_tensor(*r.device, problem.dtype, {vocab, dim},
                                   std::vector<double>(vocab * dim, std::nan("")));
  if (!dw) return dw.status();
  auto workspace = make_workspace(*r.impl, problem, *r.device);
  if (!workspace) return workspace.status();
  OpCall call{problem, *r.device, {*ids_d, *dy_d}, {*dw}, *workspace};
  DNNB_TRY(run_and_sync(r, call));
  auto host = empty_tensor(scratch_host(), problem.dtype, {vocab, dim});
  if (!host) return host.status();
  DNNB_TRY(copy_tensor(*host, *dw));
  std::vector<double> out(vocab * dim);
  for (int64_t i = 0; i < vocab * dim; ++i) out[i] = load_element(host->host_data(), problem.dtype, i);
  return out;
}

TEST(EmbeddingBwd, ExactSumsZeroRowsAndRepeatableBitsOnEveryBackend) {
  for (const char* text : {"embedding_bwd:f32:3000x7x40:ids.dt=i32", "embedding_bwd:bf16:500x1x1030:ids.dt=i32",
                           "embedding_bwd:f32:37x1000x24:ids.dt=i32"}) {
    auto problem = *Problem::parse(text);
    const int64_t tokens = problem.shape[0], vocab = problem.shape[1], dim = problem.shape[2];
    Rng rng(1234);
    std::vector<double> ids(tokens), small(tokens * dim), noisy(tokens * dim);
    // Rows 0 and vocab - 1 taken; with 7 rows, row 3 never (ids avoid it).
    for (int64_t t = 0; t < tokens; ++t) {
      int64_t id = t == 0 ? 0 : t == 1 ? vocab - 1 : rng.integer(0, vocab);
      if (vocab == 7 && id == 3) id = 4;
      ids[t] = static_cast<double>(id);
    }
    for (int64_t i = 0; i < tokens * dim; ++i) {
      small[i] = static_cast<double>(rng.integer(-8, 9));  // f32 sums exact: dW is their one rounding
      noisy[i] = rng.normal();
    }
    std::vector<double> want(vocab * dim, 0.0);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t c = 0; c < dim; ++c) want[static_cast<int64_t>(ids[t]) * dim + c] += small[t * dim + c];
    std::vector<std::string> skipped;
    std::string ran;
    for (const auto& r : testing::runners(problem, skipped)) {
      ran += " " + r.label;
      SCOPED_TRACE(r.label + " " + text);
      auto got = run_dw(r, problem, ids, small);
      ASSERT_TRUE(got.is_ok()) << got.status().message;
      const std::vector<double> expect = testing::rounded_to(problem.dtype, want);
      int bad = 0;
      for (int64_t i = 0; i < vocab * dim && bad < 5; ++i)
        if ((*got)[i] != expect[i]) {
          ++bad;
          ADD_FAILURE() << "dW[" << i / dim << ", " << i % dim << "] = " << (*got)[i] << ", expected " << expect[i];
        }
      if (r.impl->backend == "reference") continue;
      auto first = run_dw(r, problem, ids, noisy);
      auto second = run_dw(r, problem, ids, noisy);
      ASSERT_TRUE(first.is_ok() && second.is_ok());
      EXPECT_EQ(std::memcmp(first->data(), second->data(), first->size() * sizeof(double)), 0) << "two runs differ";
    }
    std::printf("  %s ran:%s\n", text, ran.c_str());
    testing::print_skipped(skipped);
  }
}

TEST(EmbeddingBwd, OutsideTheTableIsBadInputOnEveryBackend) {
  auto problem = *Problem::parse("embedding_bwd:f32:4x10x8:ids.dt=i32");
  std::vector<std::string> skipped;
  const auto runners = testing::runners(problem, skipped);
  ASSERT_FALSE(runners.empty());
  for (const auto& r : runners) {
    SCOPED_TRACE(r.label);
    auto workspace = make_workspace(*r.impl, problem, *r.device);
    ASSERT_TRUE(workspace.is_ok()) << workspace.status().message;
    auto good_ids = testing::device_tensor(*r.device, DType::i32, {4}, {9, 0, 3, 3});
    auto bad_ids = testing::device_tensor(*r.device, DType::i32, {4}, {9, 0, 10, -1});
    auto dy = testing::device_tensor(*r.device, DType::f32, {4, 8}, std::vector<double>(32, 1.0));
    auto dw = empty_tensor(*r.device, DType::f32, {10, 8});
    ASSERT_TRUE(good_ids.is_ok() && bad_ids.is_ok() && dy.is_ok() && dw.is_ok());
    OpCall bad{problem, *r.device, {*bad_ids, *dy}, {*dw}, *workspace};
    Status s = run_and_sync(r, bad);
    EXPECT_EQ(s.code, StatusCode::bad_input) << s.message;
    EXPECT_NE(s.message.find("ids[2] = 10"), std::string::npos) << s.message;
    OpCall good{problem, *r.device, {*good_ids, *dy}, {*dw}, *workspace};
    Status all = Status::ok();
    const int launches = r.impl->backend == "reference" ? 10 : 3000;
    for (int i = 0; i < launches && all.is_ok(); ++i) all = r.impl->run(good);
    if (all.is_ok()) all = r.device->synchronize();
    EXPECT_TRUE(all.is_ok()) << all.message;
    Status mixed = r.impl->run(good);
    if (mixed.is_ok()) mixed = run_and_sync(r, bad);
    EXPECT_EQ(mixed.code, StatusCode::bad_input) << mixed.message;
  }
  testing::print_skipped(skipped);
}

}  // namespace
}  // namespace dnnb
