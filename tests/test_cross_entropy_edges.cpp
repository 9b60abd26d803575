// The forward cross-entropy at the edges the suite's random fixtures do not reach, for every
// implementation of every backend on every device of this machine (each default and variant the
// device supports; the others are listed with their reasons): an out-of-range target (C, and -1
// with ignore_index -100), a NaN logit, a target on a -inf logit, each in the first, a middle and
// the last row; a NaN among -inf logits (the running max stays -inf, so a kernel that only adds
// exps once it has a finite max drops the NaN); every row ignored. The
// loss must be NaN, +inf, NaN; clean inputs give a finite loss. Shapes: rows too short for the
// OpenCL cached plans (33 columns, where a NaN in the last column was once the only value of its
// work-item besides -inf and was dropped by dnnb_softmax_merge: a finite loss), a partial last
// chunk (257, 1000 columns), whole 8192-column rows, and 70 rows, so that the persistent warp
// plans walk several rows per warp and their last iteration has dead warps.
// The OpenCL warp variants (kernels/opencl/cross_entropy_warp.cl) run natively on NVIDIA and
// elsewhere (PoCL) with DNNB_OPENCL_WARP_EMULATE=1, which these tests set (the shuffles through
// local memory; every other line of the kernel as on NVIDIA).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "tests/backend_runners.h"

namespace dnnb {
namespace {

using testing::Runner;
using testing::print_skipped;
using testing::runners;

constexpr int64_t kIgnore = -100;

// One input: logits as doubles (rounded to the dtype on upload) and targets.
struct Input {
  int64_t rows = 0, cols = 0;
  std::vector<double> logits;
  std::vector<int64_t> target;
};

// Normal-ish logits (a sum of uniforms; deterministic), targets in range, every fifth row ignored.
Input clean_input(int64_t rows, int64_t cols) {
  Input in{rows, cols, std::vector<double>(static_cast<size_t>(rows * cols)), std::vector<int64_t>(rows)};
  uint64_t state = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(rows * 1000003 + cols);
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
  };
  for (double& v : in.logits) v = 3.0 * (next() + next() + next() - 1.5);
  for (int64_t r = 0; r < rows; ++r)
    in.target[r] = r % 5 == 4 ? kIgnore : static_cast<int64_t>(next() * static_cast<double>(cols)) % cols;
  return in;
}

// The loss of `impl` on `in` on `device`, or an error text.
Result<double> loss_of(DeviceRuntime& device, const Implementation& impl, DType dtype, const Input& in) {
  auto problem = Problem::parse("cross_entropy:" + std::string(dtype_name(dtype)) + ":" + std::to_string(in.rows) + "x" +
                                std::to_string(in.cols) + ":ignore_index=" + std::to_string(kIgnore));
  if (!problem) return problem.status();
  auto logits = testing::device_tensor(device, dtype, {in.rows, in.cols}, in.logits);
  if (!logits) return logits.status();
  auto target = testing::device_tensor(device, DType::i64, {in.rows},
                                       std::vector<double>(in.target.begin(), in.target.end()));
  if (!target) return target.status();
  auto loss = empty_tensor(device, dtype, {});
  if (!loss) return loss.status();
  OpCall call{*problem, device, {*logits, *target}, {*loss}};
  DNNB_TRY(impl.run(call));
  auto out = to_host(*loss);
  if (!out) return out.status();
  return load_element(out->host_data(), dtype, 0);
}

Problem problem_of(DType dtype, int64_t rows, int64_t cols) {
  return *Problem::parse("cross_entropy:" + std::string(dtype_name(dtype)) + ":" + std::to_string(rows) + "x" +
                         std::to_string(cols) + ":ignore_index=" + std::to_string(kIgnore));
}

TEST(CrossEntropyEdges, EdgeInputs) {
  const double inf = std::numeric_limits<double>::infinity();
  setenv("DNNB_OPENCL_WARP_EMULATE", "1", 1);
  const std::pair<int64_t, int64_t> shapes[] = {{7, 33}, {3, 1000}, {13, 257}, {4, 8192}, {70, 257}};
  std::vector<std::string> skipped;
  int runs = 0;
  for (DType dtype : {DType::f32, DType::bf16})
    for (const auto& [rows, cols] : shapes) {
      // (what, input, expected class: 0 finite, 1 NaN, 2 +inf, 3 an out-of-range target: NaN from
      // a kernel, or the reference's bad-input error naming the target, as torch raises one)
      std::vector<std::tuple<std::string, Input, int>> cases;
      cases.emplace_back("clean", clean_input(rows, cols), 0);
      for (int64_t at : {int64_t{0}, rows / 2, rows - 1}) {
        const std::string where = " at row " + std::to_string(at);
        Input in = clean_input(rows, cols);
        in.target[at] = cols;
        cases.emplace_back("target C" + where, in, 3);
        in = clean_input(rows, cols);
        in.target[at] = -1;
        cases.emplace_back("target -1" + where, in, 3);
        in = clean_input(rows, cols);
        in.target[at] = cols / 3;
        in.logits[static_cast<size_t>(at * cols + cols - 1)] = std::nan("");
        cases.emplace_back("NaN logit in the last column" + where, in, 1);
        // Every logit -inf but the first (the target) and the NaN: each lane, thread or
        // work-item but the first sees nothing else, whatever its share of the row.
        in.target[at] = 0;
        for (int64_t c = 1; c < cols - 1; ++c) in.logits[static_cast<size_t>(at * cols + c)] = -inf;
        cases.emplace_back("NaN among -inf logits" + where, in, 1);
        in = clean_input(rows, cols);
        in.target[at] = cols - 1;
        for (int64_t c = cols / 2; c < cols; ++c) in.logits[static_cast<size_t>(at * cols + c)] = -inf;
        cases.emplace_back("target on -inf" + where, in, 2);
      }
      Input all_ignored = clean_input(rows, cols);
      for (int64_t& t : all_ignored.target) t = kIgnore;
      cases.emplace_back("every row ignored", all_ignored, 1);
      const Problem problem = problem_of(dtype, rows, cols);
      for (const Runner& runner : runners(problem, skipped))
        for (const auto& [what, in, kind] : cases) {
          const std::string label = runner.label + " " + problem.to_string() + " " + what;
          const Result<double> got = loss_of(*runner.device, *runner.impl, dtype, in);
          ++runs;
          if (kind == 3 && !got.is_ok()) {
            EXPECT_EQ(got.status().code, StatusCode::bad_input) << label << ": " << got.status().message;
            EXPECT_NE(got.status().message.find("target"), std::string::npos) << label << ": " << got.status().message;
            continue;
          }
          ASSERT_TRUE(got.is_ok()) << label << ": " << got.status().message;
          const double g = got.value();
          if (kind == 1 || kind == 3)
            EXPECT_TRUE(std::isnan(g)) << label << ": " << g;
          else if (kind == 2)
            EXPECT_EQ(g, inf) << label;
          else
            EXPECT_TRUE(std::isfinite(g)) << label << ": " << g;
        }
    }
  print_skipped(skipped);
  EXPECT_GT(runs, 0) << "no implementation ran: the reference at least must";
}

// Each variant's loss against a double-precision reference on the rounded inputs, with per-row
// losses spread far apart (the target's logit lowered by 0, 4, ..., 24 by row), so a row taken
// twice or skipped, another row's target, or an ignored row counted moves the mean by far more than
// the rounding (random rows, as the suite's, have nearly equal losses, so a wrong walk over the
// rows can pass there). Shapes: short rows, ragged rows, whole warp chunks (2048, 8192 columns),
// and enough rows for several per warp of the persistent warp plans, the last iteration ragged.
TEST(CrossEntropyEdges, RowsMatchReference) {
  setenv("DNNB_OPENCL_WARP_EMULATE", "1", 1);
  const std::pair<int64_t, int64_t> shapes[] = {{5, 33}, {70, 257}, {300, 2056}, {133, 2048}, {45, 8192}};
  std::vector<std::string> skipped;
  int runs = 0;
  for (DType dtype : {DType::f32, DType::bf16})
    for (const auto& [rows, cols] : shapes) {
      Input in = clean_input(rows, cols);
      for (int64_t r = 0; r < rows; ++r)
        if (in.target[r] != kIgnore) in.logits[static_cast<size_t>(r * cols + in.target[r])] -= 4.0 * (r % 7);
      in.logits = testing::rounded_to(dtype, in.logits);
      double sum = 0.0, kept = 0.0;
      for (int64_t r = 0; r < rows; ++r) {
        if (in.target[r] == kIgnore) continue;
        const double* x = in.logits.data() + r * cols;
        sum += testing::row_logsumexp(x, cols) - x[in.target[r]];
        kept += 1.0;
      }
      const double want = sum / kept;
      // f32: the kernels' f32 sums; bf16: the loss's own rounding (2^-9 relative) and the fast exp.
      const double tol = (dtype == DType::bf16 ? 0x1p-8 : 1e-5) * std::fabs(want);
      const Problem problem = problem_of(dtype, rows, cols);
      for (const Runner& runner : runners(problem, skipped)) {
        const std::string label = runner.label + " " + problem.to_string();
        const Result<double> got = loss_of(*runner.device, *runner.impl, dtype, in);
        ASSERT_TRUE(got.is_ok()) << label << ": " << got.status().message;
        ++runs;
        EXPECT_NEAR(got.value(), want, tol) << label;
      }
    }
  print_skipped(skipped);
  EXPECT_GT(runs, 0) << "no implementation ran: the reference at least must";
}

}  // namespace
}  // namespace dnnb
