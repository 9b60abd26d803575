// The forward cross-entropy on OpenCL at the edges the suite's random fixtures do not reach, on
// every OpenCL device, for the default and the row-kernel path (variant "legacy", which every
// cached plan falls back on for short rows): an out-of-range target (C, and -1 with ignore_index
// -100), a NaN logit, a target on a -inf logit, each in the first, a middle and the last row;
// every row ignored. The loss must be NaN, +inf, NaN; clean inputs give a finite loss. Shapes:
// rows too short for a cached plan (33 columns, where a NaN in the last column was once the only
// value of its work-item besides -inf and was dropped by dnnb_softmax_merge: a finite loss), a
// partial last chunk (257, 1000 columns) and whole 8192-column rows.
// Built into dnnb_opencl_math_tests (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "core/device.h"
#include "core/host_device.h"
#include "core/problem.h"
#include "core/registry.h"
#include "devices/opencl/opencl_device.h"

namespace dnnb {
namespace {

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

// The loss of `variant` on `in`, or an error text.
Result<double> loss_of(OpenCLDevice& device, const std::string& variant, DType dtype, const Input& in) {
  auto problem = Problem::parse("cross_entropy:" + std::string(dtype_name(dtype)) + ":" + std::to_string(in.rows) + "x" +
                                std::to_string(in.cols) + ":ignore_index=" + std::to_string(kIgnore));
  if (!problem) return problem.status();
  const Implementation* impl = Registry::instance().find_implementation("cross_entropy", "opencl", variant);
  if (impl == nullptr) return Status::bad_input("no opencl/" + variant + " of cross_entropy");
  auto host_logits = empty_tensor(scratch_host(), dtype, {in.rows, in.cols});
  auto host_target = empty_tensor(scratch_host(), DType::i64, {in.rows});
  if (!host_logits) return host_logits.status();
  if (!host_target) return host_target.status();
  for (size_t i = 0; i < in.logits.size(); ++i)
    store_element(host_logits->host_data(), dtype, static_cast<int64_t>(i), in.logits[i]);
  for (int64_t r = 0; r < in.rows; ++r)
    static_cast<int64_t*>(host_target->host_data())[r] = in.target[static_cast<size_t>(r)];
  auto logits = empty_tensor(device, dtype, {in.rows, in.cols});
  auto target = empty_tensor(device, DType::i64, {in.rows});
  auto loss = empty_tensor(device, dtype, {});
  if (!logits) return logits.status();
  if (!target) return target.status();
  if (!loss) return loss.status();
  DNNB_TRY(copy_tensor(*logits, *host_logits));
  DNNB_TRY(copy_tensor(*target, *host_target));
  OpCall call{*problem, device, {*logits, *target}, {*loss}};
  DNNB_TRY(impl->run(call));
  auto out = to_host(*loss);
  if (!out) return out.status();
  return load_element(out->host_data(), dtype, 0);
}

TEST(OpenCLCrossEntropy, EdgeInputs) {
  std::vector<OpenCLDevice*> devices;
  for (DeviceRuntime* runtime : DeviceSet::instance().of_kind(DeviceKind::opencl))
    if (auto* device = dynamic_cast<OpenCLDevice*>(runtime)) devices.push_back(device);
  if (devices.empty())
    GTEST_SKIP() << "no OpenCL device: " << DeviceSet::instance().absence_reason(DeviceKind::opencl);
  const double inf = std::numeric_limits<double>::infinity();
  const std::pair<int64_t, int64_t> shapes[] = {{7, 33}, {3, 1000}, {13, 257}, {4, 8192}};
  for (OpenCLDevice* device : devices)
    for (DType dtype : {DType::f32, DType::bf16})
      for (const auto& [rows, cols] : shapes) {
        // (what, input, expected class: 0 finite, 1 NaN, 2 +inf)
        std::vector<std::tuple<std::string, Input, int>> cases;
        cases.emplace_back("clean", clean_input(rows, cols), 0);
        for (int64_t at : {int64_t{0}, rows / 2, rows - 1}) {
          const std::string where = " at row " + std::to_string(at);
          Input in = clean_input(rows, cols);
          in.target[at] = cols;
          cases.emplace_back("target C" + where, in, 1);
          in = clean_input(rows, cols);
          in.target[at] = -1;
          cases.emplace_back("target -1" + where, in, 1);
          in = clean_input(rows, cols);
          in.target[at] = cols / 3;
          in.logits[static_cast<size_t>(at * cols + cols - 1)] = std::nan("");
          cases.emplace_back("NaN logit in the last column" + where, in, 1);
          in = clean_input(rows, cols);
          in.target[at] = cols - 1;
          for (int64_t c = cols / 2; c < cols; ++c) in.logits[static_cast<size_t>(at * cols + c)] = -inf;
          cases.emplace_back("target on -inf" + where, in, 2);
        }
        Input all_ignored = clean_input(rows, cols);
        for (int64_t& t : all_ignored.target) t = kIgnore;
        cases.emplace_back("every row ignored", all_ignored, 1);
        for (const auto& [what, in, kind] : cases)
          for (const char* variant : {"", "legacy"}) {
            const std::string label = device->info().id + " opencl/" + variant + " " + dtype_name(dtype) + " " +
                                      std::to_string(rows) + "x" + std::to_string(cols) + " " + what;
            const Result<double> got = loss_of(*device, variant, dtype, in);
            ASSERT_TRUE(got.is_ok()) << label << ": " << got.status().message;
            const double g = got.value();
            if (kind == 1)
              EXPECT_TRUE(std::isnan(g)) << label << ": " << g;
            else if (kind == 2)
              EXPECT_EQ(g, inf) << label;
            else
              EXPECT_TRUE(std::isfinite(g)) << label << ": " << g;
          }
      }
}

}  // namespace
}  // namespace dnnb
