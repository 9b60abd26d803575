// What the host CPU can execute, read once from CPUID (plus XGETBV and, on Linux, the AMX
// permission request). AVX-512 and AMX kernels call cpu_features() in their supports() to
// decide at run time; `dnnblocks devices` reports cpu_description().
#pragma once
#include <string>
#include <vector>

namespace dnnb {

// Raw CPUID feature bits. A set bit means the silicon has the instructions; whether the OS
// saves the wider register state is separate (os_avx512, os_amx): a kernel needs both, so
// use the *_usable() helpers below rather than the raw bits.
struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx_vnni = false;
  bool avx512f = false;
  bool avx512cd = false;
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512_ifma = false;
  bool avx512_vbmi = false;
  bool avx512_vbmi2 = false;
  bool avx512_vnni = false;
  bool avx512_bitalg = false;
  bool avx512_vpopcntdq = false;
  bool avx512_bf16 = false;
  bool avx512_fp16 = false;
  bool avx512_vp2intersect = false;
  bool amx_tile = false;
  bool amx_int8 = false;
  bool amx_bf16 = false;
  bool amx_fp16 = false;
  // XCR0 has the AVX (YMM) state enabled.
  bool os_avx = false;
  // XCR0 has opmask, ZMM_Hi256 and Hi16_ZMM enabled: the OS saves AVX-512 state.
  bool os_avx512 = false;
  // XCR0 has XTILECFG and XTILEDATA enabled and (Linux) arch_prctl(ARCH_REQ_XCOMP_PERM)
  // granted this process the tile data state. Only then may AMX instructions run.
  bool os_amx = false;

  bool avx2_usable() const { return avx2 && fma && os_avx; }
  // The subset every AVX-512 kernel in this project assumes (Skylake-SP and later, Zen 4+).
  bool avx512_core_usable() const { return avx512f && avx512bw && avx512vl && avx512dq && os_avx512; }
  bool avx512_bf16_usable() const { return avx512_core_usable() && avx512_bf16; }
  bool avx512_fp16_usable() const { return avx512_core_usable() && avx512_fp16; }
  bool avx512_vnni_usable() const { return avx512_core_usable() && avx512_vnni; }
  bool amx_bf16_usable() const { return amx_tile && amx_bf16 && os_amx; }
  bool amx_int8_usable() const { return amx_tile && amx_int8 && os_amx; }
};

// Features of this process's CPU, detected on first call (thread-safe).
const CpuFeatures& cpu_features();

struct CpuCache {
  int level = 0;
  std::string type;        // "data", "instruction", "unified"
  long long size_bytes = 0;
  int line_bytes = 0;
  int ways = 0;
  int shared_by_logical_cpus = 0;
};

// Identity, topology and clocks of the host CPU, for reporting.
struct CpuDescription {
  std::string vendor;      // "GenuineIntel", "AuthenticAMD"
  std::string brand;       // CPUID brand string, trimmed
  int family = 0;          // display family (base + extended)
  int model = 0;           // display model (extended model folded in)
  int stepping = 0;
  int logical_cpus = 0;    // std::thread::hardware_concurrency
  int physical_cores = 0;  // distinct (package, core) pairs; == logical_cpus if unknown
  std::string physical_cores_source;
  std::vector<CpuCache> caches;
  std::string caches_source;    // "cpuid leaf 4", "cpuid leaf 0x8000001d", "sysfs", "none"
  double frequency_hz = 0;  // max clock if cpufreq reports it, else the current; 0 if unknown
  std::string frequency_source;
  // Why os_amx is false although the CPU has AMX ("" otherwise).
  std::string amx_permission_note;
};

const CpuDescription& cpu_description();

// Linux /proc/cpuinfo flag name of each CpuFeatures bit, for reports and tests:
// {"avx512f", &CpuFeatures::avx512f}, ...
struct CpuFlagName {
  const char* linux_flag;
  bool CpuFeatures::*member;
};
const std::vector<CpuFlagName>& cpu_flag_names();

}  // namespace dnnb
