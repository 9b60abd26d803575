// The per-case watchdog (run_plan): an implementation that does not return is reported TIMEOUT
// with its repro line, counted as a failure (exit code 1), and the run goes on with the next
// case. The implementations here are the test's own (never registered), spinning until the test
// releases them so the process can end cleanly: on the CPU, and as a CUDA kernel on a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "core/check.h"
#include "core/registry.h"
#ifdef DNNB_TEST_CUDA_HANG
#include "tests/watchdog/hang_kernel.h"
#endif

namespace dnnb {
namespace {

// The smoke-tier cases of relu f32 on every backend, one per device.
std::vector<PlannedCase> smoke_plan(FixtureManifest& manifest) {
  CheckOptions options;
  options.op_glob = "relu";
  options.dtype = "f32";
  options.tier = CheckTier::smoke;
  auto plan = plan_check(options, manifest);
  EXPECT_TRUE(plan.is_ok()) << plan.status().message;
  return plan ? *plan : std::vector<PlannedCase>{};
}

// The case of `backend` in the plan, or null when that backend or its device is not here.
const PlannedCase* case_of(const std::vector<PlannedCase>& plan, const std::string& backend) {
  for (const auto& pc : plan)
    if (pc.id.backend == backend && pc.device != nullptr) return &pc;
  return nullptr;
}

// The same case run by `impl` instead (its id names the variant, so the repro line does too).
PlannedCase with_implementation(PlannedCase pc, const Implementation& impl) {
  pc.impl = &impl;
  pc.id.variant = impl.variant;
  return pc;
}

// What a stuck case's worker reads (the plan, the manifest, the options, the implementation)
// must outlive it, and it may finish after the test has returned: each hang test keeps its
// state here, allocated once and never freed.
struct HangState {
  FixtureManifest manifest;
  CheckOptions options;
  Implementation hang;
  std::vector<PlannedCase> plan;
};

// `base` run by `run` instead, as variant never_returns.
Implementation& hang_like(HangState& state, const Implementation& base, std::function<Status(OpCall&)> run) {
  state.hang = base;
  state.hang.variant = "never_returns";
  state.hang.when = "test only: does not return until the test releases it";
  state.hang.run = std::move(run);
  return state.hang;
}

std::atomic<bool> g_cpu_release{false};
std::atomic<bool> g_cpu_returned{false};

TEST(CheckWatchdog, CpuCaseThatNeverReturnsIsTimeoutAndTheRunGoesOn) {
  auto* state = new HangState;  // never freed: see HangState
  FixtureManifest& manifest = state->manifest;
  std::vector<PlannedCase> all = smoke_plan(manifest);
  const PlannedCase* cpu = case_of(all, "reference");
  ASSERT_NE(cpu, nullptr);

  Implementation& hang = hang_like(*state, *cpu->impl, [](OpCall&) {
    while (!g_cpu_release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    g_cpu_returned = true;
    return Status::ok();
  });
  std::vector<PlannedCase>& plan = state->plan;
  plan = {with_implementation(*cpu, hang), *cpu};
  CheckOptions& options = state->options;
  options.case_timeout_s = 0.5;
  const int abandoned_before = abandoned_case_workers();
  std::vector<std::string> seen;
  const auto start = std::chrono::steady_clock::now();
  std::vector<CaseResult> results =
      run_plan(plan, manifest, options, [&](size_t, const CaseResult& r) { seen.push_back(r.verdict()); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].timed_out);
  EXPECT_STREQ(results[0].verdict(), "TIMEOUT");
  EXPECT_TRUE(results[0].failed());
  EXPECT_NE(results[0].reason.find("0.5 s"), std::string::npos) << results[0].reason;
  EXPECT_EQ(repro_command(results[0], options),
            "dnnblocks check --case '" + results[0].case_id + "'");
  EXPECT_NE(results[0].case_id.find("@reference/never_returns"), std::string::npos) << results[0].case_id;
  // The host CPU is not held by the stuck case: the next case ran on a fresh worker.
  EXPECT_STREQ(results[1].verdict(), "PASS") << results[1].reason;
  EXPECT_EQ(seen, (std::vector<std::string>{"TIMEOUT", "PASS"}));
  EXPECT_EQ(summarize(results).failed, 1);
  EXPECT_EQ(summarize(results).exit_code(), 1);
  EXPECT_EQ(abandoned_case_workers(), abandoned_before + 1);
  EXPECT_LT(seconds, 30.0);

  g_cpu_release = true;
  for (int i = 0; i < 5000 && !g_cpu_returned; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(g_cpu_returned.load());
}

TEST(CheckWatchdog, NoLimitWaitsForTheCase) {
  FixtureManifest manifest;
  std::vector<PlannedCase> all = smoke_plan(manifest);
  const PlannedCase* cpu = case_of(all, "reference");
  ASSERT_NE(cpu, nullptr);
  Implementation slow = *cpu->impl;
  slow.variant = "slow";
  auto reference_run = cpu->impl->run;
  slow.run = [reference_run](OpCall& call) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return reference_run(call);
  };
  CheckOptions options;
  options.case_timeout_s = 0;  // no limit
  std::vector<CaseResult> results = run_plan({with_implementation(*cpu, slow)}, manifest, options);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_STREQ(results[0].verdict(), "PASS") << results[0].reason;
}

#ifdef DNNB_TEST_CUDA_HANG
TEST(CheckWatchdog, CudaKernelThatNeverReturnsIsTimeoutAndTheRunGoesOn) {
  auto* state = new HangState;  // never freed: see HangState
  FixtureManifest& manifest = state->manifest;
  std::vector<PlannedCase> all = smoke_plan(manifest);
  const PlannedCase* gpu = case_of(all, "cuda");
  if (gpu == nullptr) GTEST_SKIP() << "skipped: no CUDA device";
  const PlannedCase* cpu = case_of(all, "reference");
  ASSERT_NE(cpu, nullptr);

  Implementation& hang =
      hang_like(*state, *gpu->impl, [](OpCall& call) { return testing::cuda_hang_launch(call.device); });
  // The stuck kernel holds the GPU's stream: the next CUDA case is reported not run, and the
  // CPU case after it runs.
  std::vector<PlannedCase>& plan = state->plan;
  plan = {with_implementation(*gpu, hang), *gpu, *cpu};
  CheckOptions& options = state->options;
  options.case_timeout_s = 2;
  std::vector<CaseResult> results = run_plan(plan, manifest, options, [](size_t, const CaseResult& r) {
    std::printf("%s %s %s\n", r.verdict(), r.case_id.c_str(), r.reason.c_str());
  });
  ASSERT_EQ(results.size(), 3u);
  EXPECT_STREQ(results[0].verdict(), "TIMEOUT");
  EXPECT_STREQ(results[1].verdict(), "SKIP");
  EXPECT_NE(results[1].reason.find("not run: cuda:"), std::string::npos) << results[1].reason;
  EXPECT_NE(results[1].reason.find(results[0].case_id), std::string::npos) << results[1].reason;
  EXPECT_STREQ(results[2].verdict(), "PASS") << results[2].reason;
  EXPECT_EQ(summarize(results).exit_code(), 1);

  // Let the kernel end, and wait for it, so the process exits cleanly.
  testing::cuda_hang_release();
  EXPECT_TRUE(gpu->device->synchronize().is_ok());
}
#endif

}  // namespace
}  // namespace dnnb
