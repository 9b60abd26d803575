// Measured ceilings (core/ceilings.h): quick probes on every device found here give finite
// positive figures in a sane range, every registered probe is either measured or explained,
// the JSON round-trips, and load_ceilings turns any malformed file into bad_input naming the
// file and the key instead of crashing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/ceilings.h"
#include "core/device.h"
#include "devices/cpu/cpu_features.h"

namespace dnnb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Quick ceilings of a device, measured once per test binary (each set takes seconds).
const DeviceCeilings& quick_ceilings(DeviceRuntime& device) {
  static std::map<std::string, DeviceCeilings> measured;
  auto it = measured.find(device.info().id);
  if (it == measured.end()) it = measured.emplace(device.info().id, measure_ceilings(device, ProbeOptions{true})).first;
  return it->second;
}

// "no CUDA device: <why>" (discovery's reasons often start with those words already).
std::string absence(DeviceKind kind, const std::string& what) {
  const std::string reason = DeviceSet::instance().absence_reason(kind);
  return reason.rfind(what, 0) == 0 ? reason : what + ": " + reason;
}

std::string failures(const DeviceCeilings& c) {
  std::string text;
  for (const auto& [probe, reason] : c.failed) text += "\n  " + probe + ": " + reason;
  return text;
}

void expect_every_probe_accounted_for(const DeviceCeilings& c, DeviceKind kind) {
  const std::vector<std::string> names = ceiling_probe_names(kind);
  EXPECT_FALSE(names.empty());
  for (const std::string& name : names) {
    const bool measured = c.measured.count(name) > 0, failed = c.failed.count(name) > 0;
    EXPECT_NE(measured, failed) << name << " must be either measured or failed";
    if (failed) {
      EXPECT_FALSE(c.failed.at(name).empty()) << name << " failed without a reason";
    }
  }
  for (const auto& [name, r] : c.measured) {
    EXPECT_TRUE(std::isfinite(r.value) && r.value > 0) << name << " = " << r.value;
    EXPECT_TRUE(std::isfinite(r.spread) && r.spread >= 0) << name << " spread " << r.spread;
    EXPECT_GE(r.samples, 3) << name;
    EXPECT_FALSE(r.how.empty()) << name;
  }
  EXPECT_GT(c.seconds, 0);
  EXPECT_EQ(c.date.size(), 20u) << "ISO 8601 UTC, e.g. 2026-11-21T10:00:00Z: " << c.date;
}

TEST(Ceilings, CpuQuickProbesArePositiveAndSane) {
  DeviceRuntime* cpu = DeviceSet::instance().find("cpu:0");
  ASSERT_NE(cpu, nullptr);
  const DeviceCeilings& c = quick_ceilings(*cpu);
  EXPECT_EQ(c.device, "cpu:0");
  expect_every_probe_accounted_for(c, DeviceKind::cpu);
  for (const char* probe : {"dram_copy_bytes_per_s", "dram_read_bytes_per_s", "cache_read_bytes_per_s"})
    ASSERT_TRUE(c.measured.count(probe)) << probe << failures(c);
  // Any machine this runs on streams between 0.5 GB/s (one slow core) and 10 TB/s.
  for (const char* probe : {"dram_copy_bytes_per_s", "dram_read_bytes_per_s"}) {
    EXPECT_GT(c.value(probe), 0.5e9) << probe;
    EXPECT_LT(c.value(probe), 1e13) << probe;
  }
  // A core-local L2 working set is served faster than DRAM. Best samples, not medians: CI runs
  // tests side by side on two cores, and a neighbour only ever lowers a rate.
  EXPECT_GT(c.measured.at("cache_read_bytes_per_s").best, c.measured.at("dram_read_bytes_per_s").best);
  EXPECT_EQ(c.bandwidth_bytes_per_s(),
            std::max(c.value("dram_copy_bytes_per_s"), c.value("dram_read_bytes_per_s")));
}

TEST(Ceilings, CpuArithmeticProbesFollowCpuid) {
  DeviceRuntime* cpu = DeviceSet::instance().find("cpu:0");
  ASSERT_NE(cpu, nullptr);
  const DeviceCeilings& c = quick_ceilings(*cpu);
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(c.measured.count("f32_fma_flops_per_s") > 0, f.avx512_core_usable()) << failures(c);
  EXPECT_EQ(c.measured.count("f16_fma_flops_per_s") > 0, f.avx512_fp16_usable()) << failures(c);
  EXPECT_EQ(c.measured.count("bf16_dot_flops_per_s") > 0, f.avx512_bf16_usable()) << failures(c);
  EXPECT_EQ(c.measured.count("bf16_amx_flops_per_s") > 0, f.amx_bf16_usable()) << failures(c);
  if (f.avx512_core_usable()) {
    // At least 1 GFLOP/s, and no more than 64 FLOP per cycle per logical CPU at 6 GHz.
    const double f32 = c.flops_per_s("f32_fma");
    EXPECT_GT(f32, 1e9);
    EXPECT_LT(f32, 64 * 6e9 * std::max(1, cpu_description().logical_cpus));
  }
}

TEST(Ceilings, OpenCLQuickProbes) {
  DeviceRuntime* device = DeviceSet::instance().first(DeviceKind::opencl);
  if (device == nullptr) GTEST_SKIP() << absence(DeviceKind::opencl, "no OpenCL device");
  const DeviceCeilings& c = quick_ceilings(*device);
  expect_every_probe_accounted_for(c, DeviceKind::opencl);
  for (const char* probe : {"empty_launch_s", "dram_copy_bytes_per_s", "dram_read_bytes_per_s", "f32_fma_flops_per_s"})
    EXPECT_TRUE(c.measured.count(probe)) << probe << failures(c);
  EXPECT_LT(c.value("empty_launch_s"), 0.01) << "an empty launch under 10 ms";
  EXPECT_GT(c.bandwidth_bytes_per_s(), 0.5e9);
  EXPECT_GT(c.flops_per_s("f32_fma"), 1e8);
}

TEST(Ceilings, CudaQuickProbes) {
  DeviceRuntime* device = DeviceSet::instance().first(DeviceKind::cuda);
  if (device == nullptr) GTEST_SKIP() << absence(DeviceKind::cuda, "no CUDA device");
  const DeviceCeilings& c = quick_ceilings(*device);
  expect_every_probe_accounted_for(c, DeviceKind::cuda);
  for (const std::string& probe : ceiling_probe_names(DeviceKind::cuda))
    EXPECT_TRUE(c.measured.count(probe)) << probe << failures(c);
  EXPECT_GT(c.value("cache_read_bytes_per_s"), c.value("dram_read_bytes_per_s"));
  EXPECT_GT(c.flops_per_s("bf16_tensor"), c.flops_per_s("f32_fma")) << "tensor cores beat FFMA";
}

DeviceCeilings sample_ceilings() {
  DeviceCeilings c;
  c.device = "cuda:0";
  c.name = "NVIDIA H200";
  c.source = "measured in this run";
  c.date = "2026-11-21T10:00:00Z";
  c.seconds = 12.5;
  c.measured["dram_copy_bytes_per_s"] = {4.2e12, 0.004, 20, "copy kernel"};
  c.measured["dram_read_bytes_per_s"] = {4.4e12, 0.01, 20, "read kernel"};
  c.measured["bf16_tensor_flops_per_s"] = {6.6e14, 0.002, 30, "mma.sync"};
  c.measured["empty_launch_s"] = {2.5e-6, 0.05, 30, "empty kernel"};
  c.failed["f16_fma_flops_per_s"] = "skipped: no AVX512_FP16";
  return c;
}

TEST(Ceilings, Accessors) {
  const DeviceCeilings c = sample_ceilings();
  EXPECT_DOUBLE_EQ(c.bandwidth_bytes_per_s(), 4.4e12) << "max of copy and read";
  EXPECT_DOUBLE_EQ(c.flops_per_s("bf16_tensor"), 6.6e14);
  EXPECT_EQ(c.flops_per_s("f32_fma"), 0) << "absent unit";
  EXPECT_EQ(c.value("cache_read_bytes_per_s"), 0);
  EXPECT_EQ(DeviceCeilings{}.bandwidth_bytes_per_s(), 0);
}

TEST(Ceilings, ProbeResultFromSamples) {
  auto r = probe_result_from_samples({4, 1, 2, 3}, "how");
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_DOUBLE_EQ(r->value, 2.5);
  EXPECT_DOUBLE_EQ(r->spread, 3 / 2.5);
  EXPECT_EQ(r->samples, 4);
  EXPECT_DOUBLE_EQ(r->best, 4) << "rates: the highest sample";
  auto t = probe_result_from_samples({4, 1, 2, 3}, "how", SampleKind::time);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->best, 1) << "times: the shortest sample";
  EXPECT_DOUBLE_EQ(t->value, 2.5);
  EXPECT_FALSE(probe_result_from_samples({}, "none"));
  EXPECT_FALSE(probe_result_from_samples({1, NAN}, "nan"));
  EXPECT_FALSE(probe_result_from_samples({1, 0}, "zero"));
}

fs::path temp_file(const std::string& name, const std::string& content) {
  const fs::path path = fs::temp_directory_path() / ("dnnb_ceilings_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(Ceilings, JsonRoundTrip) {
  const DeviceCeilings c = sample_ceilings();
  const json j = c.to_json();
  for (const char* key : {"device", "name", "source", "date", "seconds", "measured", "failed"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["measured"]["dram_copy_bytes_per_s"]["samples"], 20);

  auto back = DeviceCeilings::from_json(j, "test");
  ASSERT_TRUE(back) << back.status().to_string();
  json expected = j;
  expected["source"] = "test";  // from_json records where the ceilings came from
  EXPECT_EQ(back->to_json(), expected);

  // Through a file as `dnnblocks roofline --out` writes it.
  const json document = {{"schema_version", 1}, {"kind", "ceilings"}, {"devices", {{"cuda:0", j}}}};
  const fs::path path = temp_file("roundtrip.json", document.dump(2));
  auto loaded = load_ceilings(path.string());
  ASSERT_TRUE(loaded) << loaded.status().to_string();
  ASSERT_EQ(loaded->size(), 1u);
  const DeviceCeilings& l = loaded->at("cuda:0");
  EXPECT_EQ(l.source, "file " + path.string());
  EXPECT_EQ(l.measured.size(), c.measured.size());
  EXPECT_DOUBLE_EQ(l.value("empty_launch_s"), 2.5e-6);
  EXPECT_EQ(l.measured.at("dram_read_bytes_per_s").how, "read kernel");
  EXPECT_EQ(l.failed, c.failed);
  fs::remove(path);
}

// What `roofline --out` writes from a real measurement loads back unchanged.
TEST(Ceilings, MeasuredCeilingsLoadBack) {
  DeviceRuntime* cpu = DeviceSet::instance().find("cpu:0");
  ASSERT_NE(cpu, nullptr);
  const DeviceCeilings& c = quick_ceilings(*cpu);
  const json document = {{"schema_version", 1}, {"kind", "ceilings"}, {"devices", {{c.device, c.to_json()}}}};
  const fs::path path = temp_file("measured.json", document.dump(2));
  auto loaded = load_ceilings(path.string());
  ASSERT_TRUE(loaded) << loaded.status().to_string();
  json expected = c.to_json();
  expected["source"] = "file " + path.string();
  EXPECT_EQ(loaded->at("cpu:0").to_json(), expected);
  fs::remove(path);
}

// Every malformed file is bad_input naming the file and (where there is one) the key.
TEST(Ceilings, LoadRejectsMalformedFiles) {
  const json good = sample_ceilings().to_json();
  auto with = [&](const std::string& pointer, const json& value) {
    json doc = {{"schema_version", 1}, {"kind", "ceilings"}, {"devices", {{"cuda:0", good}}}};
    doc[json::json_pointer(pointer)] = value;
    return doc.dump();
  };
  auto without = [&](const std::string& pointer) {
    json doc = {{"schema_version", 1}, {"kind", "ceilings"}, {"devices", {{"cuda:0", good}}}};
    json::json_pointer p(pointer);
    doc[p.parent_pointer()].erase(p.back());
    return doc.dump();
  };
  const std::string copy = "/devices/cuda:0/measured/dram_copy_bytes_per_s";
  struct Case {
    std::string name, content, key;
  };
  const std::vector<Case> cases = {
      {"empty", "", ""},
      {"not_json", "{\"schema_version\": 1, ", ""},
      {"nan_literal", with("/schema_version", 1).replace(0, 1, "{\"x\": NaN, "), ""},
      {"array", "[1, 2]", "(top level)"},
      {"no_version", without("/schema_version"), "schema_version"},
      {"version_2", with("/schema_version", 2), "schema_version"},
      {"version_string", with("/schema_version", "1"), "schema_version"},
      {"wrong_kind", with("/kind", "bench"), "kind"},
      {"no_devices", without("/devices"), "devices"},
      {"devices_array", with("/devices", json::array()), "devices"},
      {"device_not_object", with("/devices/cuda:0", 3), "devices.cuda:0"},
      {"device_id_mismatch", with("/devices/cuda:0/device", "cuda:1"), "devices.cuda:0.device"},
      {"device_id_number", with("/devices/cuda:0/device", 0), "devices.cuda:0.device"},
      {"no_measured", without("/devices/cuda:0/measured"), "devices.cuda:0.measured"},
      {"measured_array", with("/devices/cuda:0/measured", json::array()), "devices.cuda:0.measured"},
      {"probe_not_object", with(copy, 4.2e12), "dram_copy_bytes_per_s"},
      {"missing_value", without(copy + "/value"), "dram_copy_bytes_per_s.value"},
      {"negative_value", with(copy + "/value", -4.2e12), "dram_copy_bytes_per_s.value"},
      {"zero_value", with(copy + "/value", 0), "dram_copy_bytes_per_s.value"},
      {"null_value (NaN as JSON writes it)", with(copy + "/value", nullptr), "dram_copy_bytes_per_s.value"},
      {"string_value", with(copy + "/value", "4.2e12"), "dram_copy_bytes_per_s.value"},
      {"negative_spread", with(copy + "/spread", -0.1), "dram_copy_bytes_per_s.spread"},
      {"fractional_samples", with(copy + "/samples", 2.5), "dram_copy_bytes_per_s.samples"},
      {"zero_samples", with(copy + "/samples", 0), "dram_copy_bytes_per_s.samples"},
      {"how_number", with(copy + "/how", 7), "dram_copy_bytes_per_s.how"},
      {"seconds_string", with("/devices/cuda:0/seconds", "12"), "devices.cuda:0.seconds"},
      {"failed_reason_number", with("/devices/cuda:0/failed/x", 1), "devices.cuda:0.failed.x"},
  };
  // An overflowing literal: nlohmann rejects it as a number overflow (were it read as
  // infinity, the finiteness check would reject it with the key).
  std::string infinite = with(copy + "/value", 12345.0);
  infinite.replace(infinite.find("12345.0"), 7, "1e999");
  std::vector<Case> all = cases;
  all.push_back({"infinite_value", infinite, ""});
  for (const Case& c : all) {
    const fs::path path = temp_file("bad.json", c.content);
    auto loaded = load_ceilings(path.string());
    ASSERT_FALSE(loaded) << c.name << " was accepted";
    EXPECT_EQ(loaded.status().code, StatusCode::bad_input) << c.name << ": " << loaded.status().to_string();
    EXPECT_NE(loaded.status().message.find(path.string()), std::string::npos)
        << c.name << " does not name the file: " << loaded.status().message;
    if (!c.key.empty()) {
      EXPECT_NE(loaded.status().message.find(c.key), std::string::npos)
          << c.name << " does not name the key '" << c.key << "': " << loaded.status().message;
    }
    fs::remove(path);
  }
  auto missing = load_ceilings("/nonexistent/dnnb_ceilings.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code, StatusCode::bad_input);
  EXPECT_NE(missing.status().message.find("/nonexistent/dnnb_ceilings.json"), std::string::npos);
}

TEST(Ceilings, FromJsonRejectsWrongTypesWithoutThrowing) {
  for (const json& j : {json(nullptr), json(1), json::array(), json{{"device", 1}}, json{{"device", "x"}},
                        json{{"device", "x"}, {"measured", {{"p", {{"value", true}}}}}}}) {
    auto c = DeviceCeilings::from_json(j, "unit test");
    ASSERT_FALSE(c) << j.dump();
    EXPECT_EQ(c.status().code, StatusCode::bad_input);
    EXPECT_NE(c.status().message.find("unit test"), std::string::npos) << c.status().message;
  }
}

}  // namespace
}  // namespace dnnb
