// Device discovery: cpu:0 is always there and agrees with what Linux reports; CUDA is either
// present and usable or absent with a reason; the `devices --json` document has its keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device.h"
#include "devices/cpu/cpu_features.h"
#include "devices/cpu/device_report.h"

namespace dnnb {
namespace {

using nlohmann::json;

// Flags of the first processor in /proc/cpuinfo; empty where Linux does not report them.
std::set<std::string> linux_cpu_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string word;
    while (words >> word) flags.insert(word);
    break;
  }
  return flags;
}

const DeviceRuntime& cpu0() {
  const DeviceRuntime* cpu = DeviceSet::instance().find("cpu:0");
  if (cpu == nullptr) throw std::runtime_error("cpu:0 missing");
  return *cpu;
}

TEST(CpuDevice, AlwaysPresentWithNameAndTopology) {
  const DeviceRuntime* cpu = DeviceSet::instance().find("cpu:0");
  ASSERT_NE(cpu, nullptr) << "cpu:0 must always be discovered";
  EXPECT_EQ(cpu->info().kind, DeviceKind::cpu);
  EXPECT_TRUE(cpu->host_accessible());
  EXPECT_FALSE(cpu->info().name.empty());
  EXPECT_EQ(DeviceSet::instance().first(DeviceKind::cpu), cpu) << "cpu:0 is the first device";

  const json& caps = cpu->info().capabilities;
  int logical = caps.at("logical_cpus").get<int>();
  int physical = caps.at("physical_cores").get<int>();
  EXPECT_GE(logical, 1);
  EXPECT_GE(physical, 1);
  EXPECT_LE(physical, logical);
  EXPECT_FALSE(caps.at("physical_cores_source").get<std::string>().empty());
  EXPECT_FALSE(caps.at("frequency_source").get<std::string>().empty());
  if (caps.at("frequency_hz").is_number()) {
    double hz = caps.at("frequency_hz").get<double>();
    EXPECT_GT(hz, 2e8);
    EXPECT_LT(hz, 1e10);
  }
}

TEST(CpuDevice, CachesAreSane) {
  const CpuDescription& d = cpu_description();
  ASSERT_FALSE(d.caches.empty()) << "no caches found (source: " << d.caches_source << ")";
  bool has_l1d = false;
  long long previous_level_size = 0;
  int previous_level = 0;
  for (const CpuCache& c : d.caches) {
    EXPECT_GE(c.level, 1);
    EXPECT_LE(c.level, 4);
    EXPECT_TRUE(c.type == "data" || c.type == "instruction" || c.type == "unified") << c.type;
    EXPECT_GE(c.line_bytes, 32);
    EXPECT_LE(c.line_bytes, 256);
    EXPECT_GE(c.size_bytes, 4 * 1024) << "L" << c.level << " " << c.type;
    EXPECT_LE(c.size_bytes, 4ll << 30) << "L" << c.level << " " << c.type;
    if (c.level == 1 && c.type == "data") {
      has_l1d = true;
      EXPECT_LE(c.size_bytes, 1 << 20);
    }
    if (c.type != "instruction" && c.level > previous_level) {
      EXPECT_GT(c.size_bytes, previous_level_size) << "L" << c.level << " not larger than L" << previous_level;
      previous_level_size = c.size_bytes;
      previous_level = c.level;
    }
  }
  EXPECT_TRUE(has_l1d);
}

// On x86 Linux, sysfs cache sizes come from the same CPUID leaves, so both must agree.
TEST(CpuDevice, CachesAgreeWithSysfs) {
  const CpuDescription& d = cpu_description();
  std::ifstream probe("/sys/devices/system/cpu/cpu0/cache/index0/size");
  if (!probe) GTEST_SKIP() << "no /sys/devices/system/cpu/cpu0/cache on this system";
  for (int index = 0; index < 8; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), size_file(dir + "size");
    if (!level_file) break;
    int level = 0;
    std::string size;
    level_file >> level;
    size_file >> size;
    long long kib = std::atoll(size.c_str());
    bool found = false;
    for (const CpuCache& c : d.caches)
      if (c.level == level && c.size_bytes == kib * 1024) found = true;
    EXPECT_TRUE(found) << "sysfs index" << index << ": L" << level << " " << size
                       << " not among the caches from " << d.caches_source;
  }
}

TEST(CpuFeatures, AgreeWithProcCpuinfo) {
  std::set<std::string> flags = linux_cpu_flags();
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo (not Linux)";
  const CpuFeatures& f = cpu_features();
  // Flags every kernel of the last decade knows: CPUID and Linux must agree both ways. Newer
  // flags may be missing from an older kernel's list, so only "Linux has it => we have it".
  const std::set<std::string> long_known = {"avx2", "fma", "f16c", "avx512f", "avx512cd",
                                            "avx512bw", "avx512dq", "avx512vl"};
  for (const CpuFlagName& name : cpu_flag_names()) {
    bool ours = f.*(name.member);
    bool linux_has = flags.count(name.linux_flag) != 0;
    if (linux_has) { EXPECT_TRUE(ours) << name.linux_flag << " is in /proc/cpuinfo but not detected"; }
    if (long_known.count(name.linux_flag)) { EXPECT_EQ(ours, linux_has) << name.linux_flag; }
  }
  // Linux lists AVX-512 only when it saves the state, so the flag implies the XCR0 bits.
  if (flags.count("avx512f")) { EXPECT_TRUE(f.os_avx512); }
  if (flags.count("avx")) { EXPECT_TRUE(f.os_avx); }
}

TEST(CpuFeatures, UsableImpliesFeatureAndOsState) {
  const CpuFeatures& f = cpu_features();
  if (f.avx512_core_usable()) { EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.os_avx512); }
  if (f.avx512_bf16_usable()) { EXPECT_TRUE(f.avx512_bf16); }
  if (f.avx512_fp16_usable()) { EXPECT_TRUE(f.avx512_fp16); }
  if (f.os_avx512) { EXPECT_TRUE(f.os_avx); }
  if (f.os_amx) { EXPECT_TRUE(f.amx_tile); }
  if (f.amx_tile && !f.os_amx) { EXPECT_FALSE(cpu_description().amx_permission_note.empty()); }
  EXPECT_EQ(&cpu_features(), &cpu_features()) << "detected once";
  std::set<std::string> names;
  for (const CpuFlagName& name : cpu_flag_names()) EXPECT_TRUE(names.insert(name.linux_flag).second);
}

TEST(CpuDevice, PeaksFollowTheirFormula) {
  const json& peaks = cpu0().info().peaks;
  EXPECT_TRUE(peaks.at("memory_bandwidth_bytes_per_s").is_null()) << "cpuid cannot know memory bandwidth";
  EXPECT_EQ(peaks.at("formula").at("memory_bandwidth_bytes_per_s").get<std::string>().rfind("unknown", 0), 0u);
  const json& flops = peaks.at("flops_per_s");
  if (flops.at("f32").is_null()) GTEST_SKIP() << "no clock frequency: " << peaks.at("formula").at("f32");
  const json& in = peaks.at("inputs");
  double expected = in.at("physical_cores").get<double>() * in.at("frequency_hz").get<double>() *
                    in.at("fma_units_per_core").get<double>() * in.at("f32_lanes").get<double>() * 2;
  EXPECT_DOUBLE_EQ(flops.at("f32").get<double>(), expected);
  EXPECT_FALSE(in.at("fma_units_assumption").get<std::string>().empty());
  if (cpu_features().avx512_bf16_usable()) {
    EXPECT_DOUBLE_EQ(flops.at("bf16").get<double>(), 2 * expected);
  } else {
    EXPECT_TRUE(flops.at("bf16").is_null());
  }
}

// Every device, whatever its kind: peaks are null or positive, and each has a formula entry.
TEST(Devices, EveryPeakHasAFormulaOrReason) {
  for (const auto& device : DeviceSet::instance().devices()) {
    const json& peaks = device->info().peaks;
    SCOPED_TRACE(device->info().id);
    ASSERT_TRUE(peaks.contains("flops_per_s"));
    ASSERT_TRUE(peaks.contains("memory_bandwidth_bytes_per_s"));
    EXPECT_TRUE(peaks.value("formula", json::object()).contains("memory_bandwidth_bytes_per_s"));
    const json& formula = peaks.value("formula", json::object());
    for (auto item = peaks["flops_per_s"].begin(); item != peaks["flops_per_s"].end(); ++item) {
      EXPECT_TRUE(item->is_null() || (item->is_number() && item->get<double>() > 0)) << item.key();
      // One formula per dtype, or one "flops_per_s" formula covering all of them.
      EXPECT_TRUE(formula.contains(item.key()) || formula.contains("flops_per_s")) << "no formula for " << item.key();
    }
  }
}

TEST(CudaDevice, AbsentWithReasonOrPresentAndUsable) {
  const DeviceSet& set = DeviceSet::instance();
  DeviceRuntime* gpu = set.first(DeviceKind::cuda);
  bool built_with_cuda = build_backends_json().at("cuda").get<bool>();
  if (gpu == nullptr) {
    std::string reason = set.absence_reason(DeviceKind::cuda);
    EXPECT_FALSE(reason.empty());
    std::string reported;
    for (const DeviceAbsence& a : reported_absences(set.devices(), set.absences()))
      if (a.kind == DeviceKind::cuda) reported += a.reason;
    if (built_with_cuda) {
      EXPECT_NE(reported.find("no CUDA device"), std::string::npos) << reported;
    } else {
      EXPECT_NE(reported.find("this build has no CUDA support"), std::string::npos) << reported;
    }
    GTEST_SKIP() << (reported.rfind("no CUDA device", 0) == 0 ? "" : "no CUDA device: ") << reported;
  }
  for (DeviceRuntime* device : set.of_kind(DeviceKind::cuda)) {
    const DeviceInfo& info = device->info();
    SCOPED_TRACE(info.id);
    EXPECT_EQ(info.id.rfind("cuda:", 0), 0u);
    EXPECT_FALSE(info.name.empty());
    EXPECT_FALSE(device->host_accessible());
    const json& caps = info.capabilities;
    EXPECT_GT(caps.at("sm_count").get<int>(), 0);
    EXPECT_EQ(caps.at("warp_size").get<int>(), 32);
    EXPECT_GT(caps.at("total_memory_bytes").get<double>(), 0);
    EXPECT_GE(caps.at("shared_memory_per_block_optin_bytes").get<int>(),
              caps.at("shared_memory_per_block_bytes").get<int>());
    EXPECT_GT(caps.at("clock_rate_hz").get<double>(), 1e8);
    EXPECT_GT(info.peaks.at("memory_bandwidth_bytes_per_s").get<double>(), 1e10);
    if (caps.at("sm").get<int>() >= 80) {
      const json& dtypes = caps.at("tensor_core_dtypes");
      EXPECT_NE(std::find(dtypes.begin(), dtypes.end(), "bf16"), dtypes.end()) << dtypes.dump();
    }

    // A round trip through device memory at an offset, and the bounds check.
    std::vector<float> src(1000), dst(1000, 0.0f);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.5f;
    auto buffer = device->allocate(2000 * sizeof(float));
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
    ASSERT_TRUE(device->upload(**buffer, 4000, src.data(), 4000).is_ok());
    ASSERT_TRUE(device->synchronize().is_ok());
    ASSERT_TRUE(device->download(dst.data(), **buffer, 4000, 4000).is_ok());
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), 4000), 0);
    EXPECT_FALSE(device->upload(**buffer, 4004, src.data(), 4000).is_ok()) << "past the end must fail";
    auto empty = device->allocate(0);
    ASSERT_TRUE(empty.is_ok()) << empty.status().to_string();
    EXPECT_NE((*empty)->handle, nullptr);
  }
}

TEST(DevicesJson, HasTheDocumentedKeys) {
  json doc = devices_json(DeviceSet::instance());
  EXPECT_EQ(doc.at("schema_version").get<int>(), 1);
  for (const char* key : {"cuda", "opencl", "onednn"}) EXPECT_TRUE(doc.at("build").at(key).is_boolean()) << key;
  ASSERT_TRUE(doc.at("devices").is_array());
  ASSERT_FALSE(doc.at("devices").empty());
  EXPECT_EQ(doc["devices"][0].at("id"), "cpu:0");
  std::set<std::string> kinds_present;
  for (const json& d : doc["devices"]) {
    for (const char* key : {"id", "kind", "name"}) EXPECT_TRUE(d.at(key).is_string()) << key;
    EXPECT_TRUE(d.at("capabilities").is_object());
    EXPECT_TRUE(d.at("peaks").is_object());
    kinds_present.insert(d["kind"].get<std::string>());
  }
  std::set<std::string> kinds_absent;
  for (const json& a : doc.at("absent")) {
    EXPECT_TRUE(a.at("kind").is_string());
    EXPECT_FALSE(a.at("reason").get<std::string>().empty());
    kinds_absent.insert(a["kind"].get<std::string>());
  }
  for (const char* kind : {"cpu", "cuda", "opencl"})
    EXPECT_TRUE(kinds_present.count(kind) || kinds_absent.count(kind)) << kind << " neither present nor absent";
  EXPECT_EQ(json::parse(doc.dump()), doc) << "round-trips through text";
}

TEST(DevicesJson, KindsWithoutProviderAreReportedAbsent) {
  std::vector<std::unique_ptr<DeviceRuntime>> none;
  std::vector<DeviceAbsence> recorded = {{DeviceKind::opencl, "no OpenCL platform: test"}};
  json doc = devices_json(none, recorded);
  std::map<std::string, std::string> reasons;
  for (const json& a : doc["absent"]) reasons[a["kind"]] += a["reason"].get<std::string>();
  EXPECT_EQ(reasons["opencl"], "no OpenCL platform: test") << "a recorded reason is kept as is";
  EXPECT_FALSE(reasons["cpu"].empty());
  if (!doc["build"]["cuda"].get<bool>()) {
    EXPECT_EQ(reasons["cuda"].rfind("this build has no CUDA support", 0), 0u) << reasons["cuda"];
  } else {
    EXPECT_NE(reasons["cuda"].find("provider gave no reason"), std::string::npos) << reasons["cuda"];
  }
}

TEST(DevicesTable, ListsDevicesAndAbsences) {
  const DeviceSet& set = DeviceSet::instance();
  std::string table = devices_table(set);
  for (const auto& d : set.devices()) EXPECT_NE(table.find(d->info().id), std::string::npos) << d->info().id;
  for (const DeviceAbsence& a : reported_absences(set.devices(), set.absences()))
    EXPECT_NE(table.find(a.reason), std::string::npos) << a.reason;
  EXPECT_EQ(si_prefixed(3.32e11), "332 G");
  EXPECT_EQ(si_prefixed(4.8e12), "4.8 T");
}

}  // namespace
}  // namespace dnnb
