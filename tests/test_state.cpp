// State across steps (TensorSpec::state, OpSpec::steps): a case keeps an in/out tensor on the
// device over several steps, each step's outputs are compared, and the state after the last
// one. A small accumulating op (state acc += x, y = acc) defined here, not registered, runs
// through run_case from random inputs and from a fixture file.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/check.h"
#include "core/device.h"
#include "core/host_device.h"
#include "core/safetensors.h"
#include "core/sha256.h"

namespace dnnb {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kN = 37;
constexpr int kSteps = 3;

OpSpec accumulate_spec() {
  OpSpec spec;
  spec.name = "test_accumulate";
  spec.family = "test";
  spec.dtypes = {DType::f32};
  spec.tolerance = ToleranceClass::exact;
  spec.signature = [](const Problem&) -> Result<Signature> {
    Signature sig;
    TensorSpec acc{"acc", DType::f32, {kN}};
    acc.state = true;
    sig.inputs = {acc, TensorSpec{"x", DType::f32, {kN}}};
    sig.outputs = {TensorSpec{"y", DType::f32, {kN}}};
    return sig;
  };
  spec.steps = [](const Problem&) { return kSteps; };
  spec.step_inputs = [](const Problem&, int, std::vector<Tensor>& inputs, Rng& rng) {
    auto* x = static_cast<float*>(inputs[1].host_data());
    for (int64_t i = 0; i < kN; ++i) x[i] = static_cast<float>(rng.normal());
    return Status::ok();
  };
  spec.reference = [](const Problem&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
    auto* acc = static_cast<float*>(in[0].host_data());
    const auto* x = static_cast<const float*>(in[1].host_data());
    auto* y = static_cast<double*>(out[0].host_data());
    for (int64_t i = 0; i < kN; ++i) {
      acc[i] = acc[i] + x[i];  // the state in its own dtype
      y[i] = acc[i];
    }
    return Status::ok();
  };
  return spec;
}

// The kernel: acc += x in place; y = acc. `forget_state` leaves acc as it was.
Implementation accumulate_impl(bool forget_state) {
  Implementation impl;
  impl.op = "test_accumulate";
  impl.backend = "reference";
  impl.variant = forget_state ? "test_forgets" : "test";
  impl.dtypes = {DType::f32};
  impl.supports = [](const Problem&, const DeviceRuntime& d) {
    return d.host_accessible() ? Status::ok() : Status::unsupported("host only");
  };
  impl.run = [forget_state](OpCall& call) {
    auto* acc = static_cast<float*>(call.inputs[0].host_data());
    const auto* x = static_cast<const float*>(call.inputs[1].host_data());
    auto* y = static_cast<float*>(call.outputs[0].host_data());
    for (int64_t i = 0; i < kN; ++i) {
      const float next = acc[i] + x[i];
      y[i] = next;
      if (!forget_state) acc[i] = next;
    }
    return Status::ok();
  };
  return impl;
}

PlannedCase planned(const OpSpec& spec, const Implementation& impl, const std::string& problem) {
  PlannedCase pc;
  pc.id = *CaseId::parse(problem + "@reference/" + impl.variant + ":0");
  pc.spec = &spec;
  pc.impl = &impl;
  pc.device = DeviceSet::instance().first(DeviceKind::cpu);
  return pc;
}

TEST(State, EveryStepAndTheFinalStateAreCompared) {
  const OpSpec spec = accumulate_spec();
  const Implementation good = accumulate_impl(false), forgets = accumulate_impl(true);
  FixtureManifest manifest;
  CheckOptions options;
  CaseResult r = run_case(planned(spec, good, "test_accumulate:f32:37"), manifest, options);
  EXPECT_EQ(r.status, StatusCode::ok) << r.reason;
  ASSERT_EQ(r.outputs.size(), static_cast<size_t>(kSteps) + 1);
  EXPECT_EQ(r.outputs[0].name, "y");
  EXPECT_EQ(r.outputs[2].name, "y@2");
  EXPECT_NE(r.outputs[3].name.find("acc (state"), std::string::npos) << r.outputs[3].name;

  options.bitwise = true;  // each step twice: the state must not drift
  EXPECT_EQ(run_case(planned(spec, good, "test_accumulate:f32:37"), manifest, options).status, StatusCode::mismatch)
      << "an accumulate step is not idempotent, so running it twice must show";

  options.bitwise = false;
  CaseResult bad = run_case(planned(spec, forgets, "test_accumulate:f32:37"), manifest, options);
  EXPECT_EQ(bad.status, StatusCode::mismatch);
  EXPECT_NE(bad.reason.find("output 'y@1'"), std::string::npos) << bad.reason;
}

TEST(State, FixtureStepsAreReadByName) {
  const OpSpec spec = accumulate_spec();
  const Implementation good = accumulate_impl(false);
  const fs::path dir = fs::temp_directory_path() / ("dnnb-state-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  HostDevice& host = scratch_host();
  auto tensor = [&](DType dtype, double start, double step) {
    Tensor t = *empty_tensor(host, dtype, {kN});
    for (int64_t i = 0; i < kN; ++i) store_element(t.host_data(), dtype, i, start + step * i);
    return t;
  };
  auto write = [&](bool right_state) {
    SafetensorsWriter w;
    EXPECT_TRUE(w.add("acc", tensor(DType::f32, 1, 0)).is_ok());
    // x = 0.5 at every step: y = 1.5, 2, 2.5; the state ends at 2.5.
    for (int s = 0; s < kSteps; ++s) {
      const std::string at = s == 0 ? "" : "@" + std::to_string(s);
      EXPECT_TRUE(w.add("x" + at, tensor(DType::f32, 0.5, 0)).is_ok());
      EXPECT_TRUE(w.add("golden.y" + at, tensor(DType::f64, 1.5 + 0.5 * s, 0)).is_ok());
    }
    EXPECT_TRUE(w.add("golden.acc", tensor(DType::f32, right_state ? 2.5 : 3.0, 0)).is_ok());
    const std::string path = (dir / "case.safetensors").string();
    EXPECT_TRUE(w.write(path).is_ok());
    FixtureManifest m;
    m.dir = dir.string();
    m.entries.push_back({"case.safetensors", *sha256_file(path), "op", "test_accumulate:f32:37:fixture=steps"});
    return m;
  };
  CheckOptions options;
  for (bool right : {true, false}) {
    FixtureManifest manifest = write(right);
    PlannedCase pc = planned(spec, good, "test_accumulate:f32:37:fixture=steps");
    pc.fixture = &manifest.entries[0];
    CaseResult r = run_case(pc, manifest, options);
    if (right) {
      EXPECT_EQ(r.status, StatusCode::ok) << r.reason;
    } else {
      EXPECT_EQ(r.status, StatusCode::mismatch);
      EXPECT_NE(r.reason.find("state 'acc'"), std::string::npos) << r.reason;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dnnb
