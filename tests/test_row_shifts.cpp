// softmax, cross_entropy and cross_entropy_bwd do not depend on a shift of a row's logits, but
// kernels that skip the max or take shortcuts around it can: the AVX-512 kernels try each plain
// row without the shift first and take the shifted form only when the row's sum of e^x leaves
// [1, 2^64] (exp_row_unshifted, kernels/avx512/softmax_row.h). The random fixtures of `check`
// hold logits near 0, where every row takes the unshifted path. So here every implementation,
// on every device of this machine, runs rows whose logits are offset by c from -120 to +100 in
// one tensor: rows each side of both bounds (c <= -30: every e^x below 1e-13; c >= 44: the sum
// past 2^64; c >= 88: e^x overflows f32) next to each other, against float64 on the rounded
// inputs, with each op's conformance tolerance (core/compare.h, docs/conformance.md). Shapes:
// 8192 columns (whole rows per thread) and 257 (a ragged tail), 65 rows (5 of each offset).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/compare.h"
#include "tests/backend_runners.h"

namespace dnnb {
namespace {

constexpr double kOffsets[] = {-120, -60, -30, -14, -8, 0, 8, 20, 34, 44, 60, 88, 100};
constexpr int64_t kRows = 65;  // 5 rows per offset

struct Rows {
  int64_t rows = 0, cols = 0;
  std::vector<double> logits;  // rounded to the dtype
  std::vector<int64_t> target;
};

// Row r: offset kOffsets[r % 13] plus a spread of about 1.5 (a sum of uniforms; deterministic).
Rows shifted_rows(DType dtype, int64_t cols) {
  Rows in{kRows, cols, std::vector<double>(static_cast<size_t>(kRows * cols)), std::vector<int64_t>(kRows)};
  uint64_t state = 0x2545f4914f6cdd1dull ^ static_cast<uint64_t>(cols);
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
  };
  constexpr int64_t kOffsetCount = sizeof(kOffsets) / sizeof(kOffsets[0]);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < cols; ++c)
      in.logits[static_cast<size_t>(r * cols + c)] = kOffsets[r % kOffsetCount] + 3.0 * (next() + next() + next() - 1.5);
    in.target[r] = static_cast<int64_t>(next() * static_cast<double>(cols)) % cols;
  }
  in.logits = testing::rounded_to(dtype, in.logits);
  return in;
}

// softmax of each row in float64.
std::vector<double> softmax_of(const Rows& in) {
  std::vector<double> p(in.logits.size());
  for (int64_t r = 0; r < in.rows; ++r) {
    const double* x = in.logits.data() + r * in.cols;
    const double lse = testing::row_logsumexp(x, in.cols);
    for (int64_t c = 0; c < in.cols; ++c) p[static_cast<size_t>(r * in.cols + c)] = std::exp(x[c] - lse);
  }
  return p;
}

Problem problem_of(const std::string& op, DType dtype, const Rows& in) {
  return *Problem::parse(op + ":" + std::string(dtype_name(dtype)) + ":" + std::to_string(in.rows) + "x" +
                         std::to_string(in.cols));
}

// Runs `impl` on `device` with inputs (logits[, targets]) and returns its one output on the host.
Result<Tensor> run_on(const testing::Runner& runner, const Problem& problem, const Rows& in, bool with_targets,
                      const Shape& out_shape) {
  std::vector<Tensor> inputs;
  auto logits = testing::device_tensor(*runner.device, problem.dtype, {in.rows, in.cols}, in.logits);
  if (!logits) return logits.status();
  inputs.push_back(*logits);
  if (with_targets) {
    auto target = testing::device_tensor(*runner.device, DType::i64, {in.rows},
                                         std::vector<double>(in.target.begin(), in.target.end()));
    if (!target) return target.status();
    inputs.push_back(*target);
  }
  auto out = empty_tensor(*runner.device, problem.dtype, out_shape);
  if (!out) return out.status();
  OpCall call{problem, *runner.device, inputs, {*out}};
  DNNB_TRY(runner.impl->run(call));
  return to_host(*out);
}

// Runs every implementation of `op` on every device here over the shifted rows of each dtype
// and shape; the output is shaped as the logits (per_element) or 0-d. judge_of(in, dtype) is
// called once per (dtype, shape) and returns the check of one output: judge(label, got).
template <class JudgeOf>
void run_every_implementation(const std::string& op, bool with_targets, bool per_element,
                              const JudgeOf& judge_of) {
  setenv("DNNB_OPENCL_WARP_EMULATE", "1", 1);
  std::vector<std::string> skipped;
  testing::RanPairs ran;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16})
    for (int64_t cols : {int64_t{8192}, int64_t{257}}) {
      const Rows in = shifted_rows(dtype, cols);
      const Shape out_shape = per_element ? Shape{in.rows, in.cols} : Shape{};
      auto judge = judge_of(in, dtype);
      const Problem problem = problem_of(op, dtype, in);
      for (const testing::Runner& runner : testing::runners(problem, skipped)) {
        const std::string label = runner.label + " " + problem.to_string();
        Result<Tensor> got = ran.time(runner.label, problem.to_string(),
                                      [&] { return run_on(runner, problem, in, with_targets, out_shape); });
        ASSERT_TRUE(got.is_ok()) << label << ": " << got.status().message;
        judge(label, *got);
      }
    }
  testing::print_skipped(skipped);
  ran.print();
  EXPECT_FALSE(ran.empty()) << "no implementation ran: the reference at least must";
}

// Every implementation's output of `op` (shaped as the logits) against `want` (float64,
// row-major) within tolerance class c.
void expect_rows_match(const std::string& op, ToleranceClass c, bool with_targets,
                       std::vector<double> (*want_of)(const Rows&)) {
  run_every_implementation(op, with_targets, true, [&](const Rows& in, DType dtype) {
    const std::vector<double> want = want_of(in);
    auto expected = empty_tensor(scratch_host(), DType::f64, {in.rows, in.cols});
    EXPECT_TRUE(expected.is_ok()) << expected.status().message;
    double sum_sq = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (expected.is_ok()) store_element(expected->host_data(), DType::f64, static_cast<int64_t>(i), want[i]);
      sum_sq += want[i] * want[i];
    }
    const Tolerance tol = tolerance_for(c, dtype, std::sqrt(sum_sq / static_cast<double>(want.size())));
    return [expected, tol](const std::string& label, const Tensor& got) mutable {
      ASSERT_TRUE(expected.is_ok());
      const Metrics m = compare_outputs(got, *expected, tol);
      std::string why;
      EXPECT_TRUE(metrics_pass(m, &why)) << label << ": " << why << " (worst at " << m.worst_coord << ": got "
                                         << m.worst_got << ", expected " << m.worst_expected << ")";
    };
  });
}

TEST(RowShifts, Softmax) {
  expect_rows_match("softmax", ToleranceClass::normalization, false, softmax_of);
}

// d logits of the mean loss: (softmax - onehot(target)) / rows (no row ignored).
TEST(RowShifts, CrossEntropyBackward) {
  expect_rows_match("cross_entropy_bwd", ToleranceClass::loss, true,
                    [](const Rows& in) {
                      std::vector<double> g = softmax_of(in);
                      for (int64_t r = 0; r < in.rows; ++r) g[static_cast<size_t>(r * in.cols + in.target[r])] -= 1.0;
                      for (double& v : g) v /= static_cast<double>(in.rows);
                      return g;
                    });
}

// The mean loss, logsumexp(row) - row[target], to the tolerance of CrossEntropyEdges'
// RowsMatchReference (f32 sums: 1e-5; 16-bit: the loss's own rounding and the fast exp).
TEST(RowShifts, CrossEntropy) {
  run_every_implementation("cross_entropy", true, false, [](const Rows& in, DType dtype) {
    double total = 0;
    for (int64_t r = 0; r < in.rows; ++r)
      total += testing::row_logsumexp(in.logits.data() + r * in.cols, in.cols) - in.logits[r * in.cols + in.target[r]];
    const double want = total / static_cast<double>(in.rows);
    const double tol = (dtype == DType::f32 ? 1e-5 : 0x1p-8) * std::fabs(want);
    return [want, tol, dtype](const std::string& label, const Tensor& got) {
      EXPECT_NEAR(load_element(got.host_data(), dtype, 0), want, tol) << label;
    };
  });
}

}  // namespace
}  // namespace dnnb
