// The cpu device provider: one HostDevice, cpu:0, described from CPUID. Peaks are
// theoretical and their formulas travel with them in the JSON (docs/devices.md).
#include <cstdio>
#include <string>

#include "core/device.h"
#include "core/host_device.h"
#include "core/registry.h"
#include "devices/cpu/cpu_features.h"

namespace dnnb {

namespace {

using nlohmann::json;

std::string format_bytes(long long bytes) {
  char text[32];
  if (bytes >= (1ll << 20) && bytes % (1ll << 20) == 0)
    std::snprintf(text, sizeof text, "%lld MiB", bytes >> 20);
  else
    std::snprintf(text, sizeof text, "%lld KiB", bytes >> 10);
  return text;
}

std::string format_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", x);
  return text;
}

// Vector width and FMA pipes per core used by the f32 peak. The pipe count is not in CPUID:
// it is an assumption per microarchitecture family, stated in the JSON next to the number.
struct VectorThroughput {
  const char* isa;
  int f32_lanes;
  int fma_units;
  const char* assumption;
};

VectorThroughput vector_throughput(const CpuFeatures& f, const CpuDescription& d) {
  if (f.avx512f && f.os_avx512) {
    if (d.vendor == "AuthenticAMD" && d.family == 0x19)
      return {"AVX-512", 16, 1,
              "AMD family 0x19 (Zen 4) executes a 512-bit FMA as two halves on its two 256-bit "
              "FMA pipes: counted as 1 full-width FMA unit per core"};
    return {"AVX-512", 16, 2,
            "assumed 2 x 512-bit FMA units per core (Intel Xeon Gold/Platinum, AMD Zen 5 server); "
            "some Xeon Silver/Bronze and client parts have 1: halve the peaks there"};
  }
  if (f.avx2_usable())
    return {"AVX2+FMA", 8, 2, "assumed 2 x 256-bit FMA units per core (Haswell and later, Zen 2 and later)"};
  return {"SSE", 4, 1, "no FMA: assumed one 128-bit multiply and one add per cycle (counted as 1 FMA unit)"};
}

json describe_capabilities(const CpuFeatures& f, const CpuDescription& d) {
  json caps;
  caps["vendor"] = d.vendor;
  caps["brand"] = d.brand;
  caps["family"] = d.family;
  caps["model"] = d.model;
  caps["stepping"] = d.stepping;
  char family_model[48];
  std::snprintf(family_model, sizeof family_model, "family 0x%x model 0x%x stepping %d", d.family,
                d.model, d.stepping);
  caps["family_model_stepping"] = family_model;
  caps["logical_cpus"] = d.logical_cpus;
  caps["physical_cores"] = d.physical_cores;
  caps["physical_cores_source"] = d.physical_cores_source;
  caps["frequency_hz"] = d.frequency_hz > 0 ? json(d.frequency_hz) : json(nullptr);
  caps["frequency_source"] = d.frequency_source;

  json caches = json::array();
  for (const CpuCache& c : d.caches)
    caches.push_back({{"level", c.level}, {"type", c.type}, {"size_bytes", c.size_bytes},
                      {"line_bytes", c.line_bytes}, {"ways", c.ways},
                      {"shared_by_logical_cpus", c.shared_by_logical_cpus}});
  caps["caches"] = caches;
  caps["caches_source"] = d.caches_source;

  json features = json::object();
  for (const CpuFlagName& name : cpu_flag_names()) features[name.linux_flag] = f.*(name.member);
  caps["features"] = features;
  caps["os_state"] = {{"avx", f.os_avx}, {"avx512", f.os_avx512}, {"amx", f.os_amx}};
  if (!d.amx_permission_note.empty()) caps["os_state"]["amx_note"] = d.amx_permission_note;
  caps["usable"] = {{"avx2", f.avx2_usable()},
                    {"avx512_core", f.avx512_core_usable()},
                    {"avx512_bf16", f.avx512_bf16_usable()},
                    {"avx512_fp16", f.avx512_fp16_usable()},
                    {"avx512_vnni", f.avx512_vnni_usable()},
                    {"amx_bf16", f.amx_bf16_usable()},
                    {"amx_int8", f.amx_int8_usable()}};

  // One line for the `dnnblocks devices` table.
  std::string summary = std::to_string(d.physical_cores) + " cores/" + std::to_string(d.logical_cpus) +
                        " threads";
  if (d.frequency_hz > 0) summary += ", " + format_number(d.frequency_hz / 1e9) + " GHz";
  std::string avx512;
  for (const CpuFlagName& name : cpu_flag_names()) {
    std::string flag = name.linux_flag;
    if (flag.rfind("avx512", 0) != 0 || !(f.*(name.member))) continue;
    flag = flag.substr(6);
    if (!flag.empty() && flag[0] == '_') flag = flag.substr(1);
    avx512 += (avx512.empty() ? "" : " ") + flag;
  }
  if (f.os_avx512 && !avx512.empty()) summary += ", AVX-512 {" + avx512 + "}";
  else if (f.avx2_usable()) summary += ", AVX2+FMA";
  if (f.os_amx) summary += ", AMX";
  for (const CpuCache& c : d.caches) {
    if (c.type == "instruction") continue;
    summary += ", L" + std::to_string(c.level) + (c.type == "data" ? "d " : " ") + format_bytes(c.size_bytes);
  }
  caps["summary"] = summary;
  return caps;
}

json describe_peaks(const CpuFeatures& f, const CpuDescription& d) {
  json peaks;
  json formula = json::object();
  peaks["memory_bandwidth_bytes_per_s"] = nullptr;
  formula["memory_bandwidth_bytes_per_s"] =
      "unknown: CPUID does not describe the memory system (channels, DIMM speed); "
      "`dnnblocks roofline` measures it";

  VectorThroughput v = vector_throughput(f, d);
  json flops = json::object();
  if (d.frequency_hz <= 0) {
    flops["f32"] = flops["bf16"] = flops["i8"] = nullptr;
    formula["f32"] = formula["bf16"] = formula["i8"] = "unknown: no clock frequency found";
  } else {
    double per_core_cycle = static_cast<double>(v.fma_units) * v.f32_lanes * 2;
    double f32 = d.physical_cores * d.frequency_hz * per_core_cycle;
    flops["f32"] = f32;
    formula["f32"] = "physical_cores x frequency_hz x fma_units_per_core x f32_lanes x 2 = " +
                     std::to_string(d.physical_cores) + " x " + format_number(d.frequency_hz) +
                     " x " + std::to_string(v.fma_units) + " x " + std::to_string(v.f32_lanes) +
                     " x 2 = " + format_number(f32);
    if (f.avx512_bf16_usable()) {
      flops["bf16"] = 2 * f32;
      formula["bf16"] = "2 x f32: VDPBF16PS does 2 bf16 products and their sum per f32 lane per "
                        "instruction, assumed at the FMA throughput = " + format_number(2 * f32);
    } else {
      flops["bf16"] = nullptr;
      formula["bf16"] = "unknown: no usable AVX512_BF16 (bf16 runs through f32 conversion)";
    }
    if (f.avx512_vnni_usable()) {
      flops["i8"] = 4 * f32;
      formula["i8"] = "4 x f32: VPDPBUSD does 4 u8 x s8 products and their sum per 32-bit lane, "
                      "assumed at the FMA throughput (integer ops/s) = " + format_number(4 * f32);
    } else {
      flops["i8"] = nullptr;
      formula["i8"] = "unknown: no usable AVX512_VNNI";
    }
  }
  peaks["flops_per_s"] = flops;
  peaks["formula"] = formula;
  peaks["inputs"] = {{"physical_cores", d.physical_cores},
                     {"frequency_hz", d.frequency_hz},
                     {"frequency_source", d.frequency_source},
                     {"vector_isa", v.isa},
                     {"f32_lanes", v.f32_lanes},
                     {"fma_units_per_core", v.fma_units},
                     {"fma_units_assumption", v.assumption}};
  peaks["note"] = "theoretical upper bound: all cores at the reported clock; AVX-512 licence "
                  "clocks are often lower. AMX peaks are not modelled.";
  return peaks;
}

void discover_cpu(DiscoveryResult& result) {
  const CpuFeatures& f = cpu_features();
  const CpuDescription& d = cpu_description();
  DeviceInfo info;
  info.id = "cpu:0";
  info.kind = DeviceKind::cpu;
  info.name = d.brand;
  info.capabilities = describe_capabilities(f, d);
  info.peaks = describe_peaks(f, d);
  result.devices.push_back(std::make_unique<HostDevice>(std::move(info)));
}

}  // namespace

DNNB_REGISTER(register_device_provider(DeviceProvider{DeviceKind::cpu, discover_cpu}));

}  // namespace dnnb
