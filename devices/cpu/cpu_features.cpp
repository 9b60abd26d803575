// CPUID, XGETBV and the Linux AMX permission request; topology, caches and clocks from CPUID
// with sysfs and /proc/cpuinfo as fallbacks. Everything is read once and cached.
#include "devices/cpu/cpu_features.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#define DNNB_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace dnnb {

namespace {

struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

bool bit(unsigned reg, int n) { return ((reg >> n) & 1u) != 0; }

#ifdef DNNB_X86
// Leaves above the maximum return garbage on some CPUs, so every query checks the range.
CpuidRegs cpuid(unsigned leaf, unsigned subleaf = 0) {
  CpuidRegs r;
  unsigned max_leaf = __get_cpuid_max(leaf & 0x80000000u, nullptr);
  if (max_leaf == 0 || leaf > max_leaf) return r;
  __get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx);
  return r;
}

// XGETBV is only legal once the OS set CR4.OSXSAVE (CPUID.1:ECX bit 27); callers check.
__attribute__((target("xsave"))) unsigned long long read_xcr0() { return _xgetbv(0); }
#endif

std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c) && c != '\0'; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return trim(line);
}

// Number of CPUs in a sysfs list such as "0-3,8-11".
int count_cpu_list(const std::string& list) {
  int count = 0;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    auto dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        if (!trim(part).empty()) count += 1;
      } else {
        count += std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
      }
    } catch (const std::exception&) {
      return 0;
    }
  }
  return count;
}

// "48K" / "32768K" / "1M" -> bytes.
long long parse_sysfs_size(const std::string& text) {
  if (text.empty()) return 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == nullptr) return value;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case 'K': return value * 1024;
    case 'M': return value * 1024 * 1024;
    case 'G': return value * 1024 * 1024 * 1024;
    default: return value;
  }
}

#ifdef DNNB_X86
// Leaf 4 (Intel) and leaf 0x8000001D (AMD) share one layout: type, level, ways, partitions,
// line size and sets; size = ways x partitions x line x sets.
std::vector<CpuCache> caches_from_cpuid(unsigned leaf) {
  std::vector<CpuCache> caches;
  for (unsigned index = 0; index < 16; ++index) {
    CpuidRegs r = cpuid(leaf, index);
    unsigned type = r.eax & 0x1f;
    if (type == 0) break;
    CpuCache c;
    c.level = static_cast<int>((r.eax >> 5) & 0x7);
    c.type = type == 1 ? "data" : type == 2 ? "instruction" : "unified";
    c.line_bytes = static_cast<int>((r.ebx & 0xfff) + 1);
    int partitions = static_cast<int>(((r.ebx >> 12) & 0x3ff) + 1);
    c.ways = static_cast<int>(((r.ebx >> 22) & 0x3ff) + 1);
    long long sets = static_cast<long long>(r.ecx) + 1;
    c.size_bytes = static_cast<long long>(c.ways) * partitions * c.line_bytes * sets;
    c.shared_by_logical_cpus = static_cast<int>(((r.eax >> 14) & 0xfff) + 1);
    caches.push_back(c);
  }
  return caches;
}
#endif

std::vector<CpuCache> caches_from_sysfs() {
  std::vector<CpuCache> caches;
  for (int index = 0; index < 16; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::string level = read_first_line(dir + "level");
    if (level.empty()) break;
    CpuCache c;
    c.level = std::atoi(level.c_str());
    std::string type = read_first_line(dir + "type");
    c.type = type == "Data" ? "data" : type == "Instruction" ? "instruction" : "unified";
    c.size_bytes = parse_sysfs_size(read_first_line(dir + "size"));
    c.line_bytes = std::atoi(read_first_line(dir + "coherency_line_size").c_str());
    c.ways = std::atoi(read_first_line(dir + "ways_of_associativity").c_str());
    c.shared_by_logical_cpus = count_cpu_list(read_first_line(dir + "shared_cpu_list"));
    caches.push_back(c);
  }
  return caches;
}

// Distinct (physical id, core id) pairs; SMT siblings share FMA units, so peaks use these.
std::pair<int, std::string> count_physical_cores() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, package = "0";
  while (std::getline(cpuinfo, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    std::string value = trim(line.substr(colon + 1));
    if (key == "physical id") package = value;
    if (key == "core id") cores.insert({package, value});
  }
  if (!cores.empty()) return {static_cast<int>(cores.size()), "/proc/cpuinfo (physical id, core id)"};

  std::set<std::pair<std::string, std::string>> sysfs_cores;
  for (int cpu = 0; cpu < 4096; ++cpu) {
    std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::string core = read_first_line(dir + "core_id");
    if (core.empty()) break;
    sysfs_cores.insert({read_first_line(dir + "physical_package_id"), core});
  }
  if (!sysfs_cores.empty())
    return {static_cast<int>(sysfs_cores.size()), "sysfs topology (physical_package_id, core_id)"};
  return {0, "unknown"};
}

#if defined(__x86_64__)
// The clock this core runs at now, measured: a chain of dependent 64-bit register-register
// adds retires one per cycle on every x86 core since the P6, so adds per second is cycles per
// second (add-immediate chains are not used: newer renamers fold them, running faster than 1
// per cycle; a dependent imul chain, 3 cycles each, gives the same clock). Run on one core
// with the others idle it reads the turbo clock, which a VM hides when it reports only the
// base clock in /proc/cpuinfo. The best of 5 runs of ~4 ms each (preemption only lowers
// a run), so ~20 ms once per process. 0 when the clock cannot be read.
double measured_core_clock_hz() {
  constexpr long kBlocks = 1 << 17;  // x 32 adds: ~4.2M cycles, 1-4 ms at 1-4 GHz
  double best = 0;
  for (int run = 0; run < 5; ++run) {
    uint64_t x = 0, one = 1;
    asm volatile("" : "+r"(one));  // an unknown register, not an immediate (below)
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < kBlocks; ++i) {
      asm volatile(
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
          : "+r"(x)
          : "r"(one));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The loop's own increment and branch run in parallel with the chain (other ports).
    if (seconds > 0 && x == 32ull * kBlocks) best = std::max(best, 32.0 * kBlocks / seconds);
  }
  return best;
}
#endif

std::pair<double, std::string> detect_frequency(const std::string& brand) {
  std::string khz = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  if (!khz.empty() && std::atof(khz.c_str()) > 0)
    return {std::atof(khz.c_str()) * 1e3, "sysfs cpufreq/cpuinfo_max_freq (maximum, may include boost)"};

  // CPUID leaf 0x16 (Intel since Skylake): base and maximum (turbo) clock in MHz. Many VMs
  // pass it through where they hide cpufreq; "cpu MHz" there is the base clock, which an
  // all-core AVX-512 FMA loop can beat by 30% or more, so a base-clock peak is no ceiling.
#if defined(DNNB_X86)
  const CpuidRegs clocks = cpuid(0x16);
  if ((clocks.ebx & 0xffff) > 0)
    return {(clocks.ebx & 0xffff) * 1e6, "CPUID leaf 0x16 maximum clock (one-core turbo; all-core "
                                         "AVX-512 clocks are lower)"};
#endif

#if defined(__x86_64__)
  const double measured = measured_core_clock_hz();
  if (measured > 0)
    return {measured, "measured: a dependent-add chain on one core (one add per cycle), best of 5 "
                      "runs: the clock one busy core reaches (turbo), an upper bound for all-core "
                      "AVX-512 clocks"};
#endif

  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    auto colon = line.find(':');
    double mhz = colon == std::string::npos ? 0 : std::atof(line.c_str() + colon + 1);
    if (mhz > 0)
      return {mhz * 1e6, "/proc/cpuinfo \"cpu MHz\" of cpu0 (the clock when read; the nominal "
                         "clock in most VMs; boost may be higher)"};
    break;
  }

  // Intel brand strings end with "@ 2.60GHz".
  auto at = brand.find('@');
  if (at != std::string::npos) {
    double ghz = std::atof(brand.c_str() + at + 1);
    if (ghz > 0) return {ghz * 1e9, "CPUID brand string (nominal clock)"};
  }
  return {0, "unknown: no cpufreq, no \"cpu MHz\" and no clock in the brand string"};
}

#if defined(__linux__) && defined(DNNB_X86)
// Linux (5.16+) keeps the 8 KiB AMX tile state off until a process asks for it; without the
// grant the first tile instruction faults with SIGILL.
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool request_amx_permission(std::string& note) {
  unsigned long long permitted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) == 0 &&
      ((permitted >> kXfeatureXtiledata) & 1ull) != 0)
    return true;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0) return true;
  note = std::string("arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) failed: ") +
         std::strerror(errno) + " (Linux 5.16 or later is needed for AMX)";
  return false;
}
#endif

struct Detected {
  CpuFeatures features;
  CpuDescription description;
};

Detected detect() {
  Detected d;
  CpuFeatures& f = d.features;
  CpuDescription& desc = d.description;
  desc.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());

#ifdef DNNB_X86
  CpuidRegs leaf0 = cpuid(0);
  char vendor[13] = {};
  std::memcpy(vendor + 0, &leaf0.ebx, 4);
  std::memcpy(vendor + 4, &leaf0.edx, 4);
  std::memcpy(vendor + 8, &leaf0.ecx, 4);
  desc.vendor = vendor;

  CpuidRegs leaf1 = cpuid(1);
  int base_family = static_cast<int>((leaf1.eax >> 8) & 0xf);
  int base_model = static_cast<int>((leaf1.eax >> 4) & 0xf);
  desc.stepping = static_cast<int>(leaf1.eax & 0xf);
  desc.family = base_family == 0xf ? base_family + static_cast<int>((leaf1.eax >> 20) & 0xff) : base_family;
  desc.model = (base_family == 0x6 || base_family == 0xf)
                   ? base_model + (static_cast<int>((leaf1.eax >> 16) & 0xf) << 4)
                   : base_model;
  f.fma = bit(leaf1.ecx, 12);
  f.f16c = bit(leaf1.ecx, 29);
  bool osxsave = bit(leaf1.ecx, 27);

  CpuidRegs leaf7 = cpuid(7, 0);
  f.avx2 = bit(leaf7.ebx, 5);
  f.avx512f = bit(leaf7.ebx, 16);
  f.avx512dq = bit(leaf7.ebx, 17);
  f.avx512_ifma = bit(leaf7.ebx, 21);
  f.avx512cd = bit(leaf7.ebx, 28);
  f.avx512bw = bit(leaf7.ebx, 30);
  f.avx512vl = bit(leaf7.ebx, 31);
  f.avx512_vbmi = bit(leaf7.ecx, 1);
  f.avx512_vbmi2 = bit(leaf7.ecx, 6);
  f.avx512_vnni = bit(leaf7.ecx, 11);
  f.avx512_bitalg = bit(leaf7.ecx, 12);
  f.avx512_vpopcntdq = bit(leaf7.ecx, 14);
  f.avx512_vp2intersect = bit(leaf7.edx, 8);
  f.amx_bf16 = bit(leaf7.edx, 22);
  f.avx512_fp16 = bit(leaf7.edx, 23);
  f.amx_tile = bit(leaf7.edx, 24);
  f.amx_int8 = bit(leaf7.edx, 25);
  if (leaf7.eax >= 1) {
    CpuidRegs leaf7_1 = cpuid(7, 1);
    f.avx_vnni = bit(leaf7_1.eax, 4);
    f.avx512_bf16 = bit(leaf7_1.eax, 5);
    f.amx_fp16 = bit(leaf7_1.eax, 21);
  }

  if (osxsave) {
    unsigned long long xcr0 = read_xcr0();
    // bit 1 SSE, 2 AVX; 5 opmask, 6 ZMM_Hi256, 7 Hi16_ZMM; 17 XTILECFG, 18 XTILEDATA.
    f.os_avx = (xcr0 & 0x6) == 0x6;
    f.os_avx512 = (xcr0 & 0xe6) == 0xe6;
    bool xcr0_amx = ((xcr0 >> 17) & 3ull) == 3ull;
    if (f.amx_tile) {
      if (!xcr0_amx) {
        desc.amx_permission_note = "XCR0 does not enable the AMX tile state (XTILECFG, XTILEDATA)";
      } else {
#if defined(__linux__)
        f.os_amx = request_amx_permission(desc.amx_permission_note);
#else
        f.os_amx = true;
#endif
      }
    }
  }

  CpuidRegs ext0 = cpuid(0x80000000u);
  if (ext0.eax >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      CpuidRegs r = cpuid(0x80000002u + i);
      std::memcpy(brand + 16 * i + 0, &r.eax, 4);
      std::memcpy(brand + 16 * i + 4, &r.ebx, 4);
      std::memcpy(brand + 16 * i + 8, &r.ecx, 4);
      std::memcpy(brand + 16 * i + 12, &r.edx, 4);
    }
    desc.brand = trim(brand);
  }

  bool amd_topology_leaf = ext0.eax >= 0x8000001du && bit(cpuid(0x80000001u).ecx, 22);
  if (desc.vendor == "AuthenticAMD" || desc.vendor == "HygonGenuine") {
    if (amd_topology_leaf) {
      desc.caches = caches_from_cpuid(0x8000001du);
      desc.caches_source = "cpuid leaf 0x8000001d";
    }
  } else if (leaf0.eax >= 4) {
    desc.caches = caches_from_cpuid(4);
    desc.caches_source = "cpuid leaf 4";
  }
#endif

  if (desc.caches.empty()) {
    desc.caches = caches_from_sysfs();
    desc.caches_source = desc.caches.empty() ? "none" : "sysfs /sys/devices/system/cpu/cpu0/cache";
  }
  if (desc.brand.empty()) {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line))
      if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
        desc.brand = trim(line.substr(line.find(':') + 1));
        break;
      }
  }
  if (desc.brand.empty()) desc.brand = desc.vendor.empty() ? "unknown CPU" : desc.vendor + " CPU";

  auto [cores, cores_source] = count_physical_cores();
  if (cores <= 0 || (desc.logical_cpus > 0 && cores > desc.logical_cpus)) {
    cores = desc.logical_cpus;
    cores_source = "unknown: assumed equal to the logical CPUs";
  }
  desc.physical_cores = cores;
  desc.physical_cores_source = cores_source;
  std::tie(desc.frequency_hz, desc.frequency_source) = detect_frequency(desc.brand);
  return d;
}

const Detected& detected() {
  static const Detected d = detect();
  return d;
}

}  // namespace

const CpuFeatures& cpu_features() { return detected().features; }
const CpuDescription& cpu_description() { return detected().description; }

const std::vector<CpuFlagName>& cpu_flag_names() {
  static const std::vector<CpuFlagName> names = {
      {"avx2", &CpuFeatures::avx2},
      {"fma", &CpuFeatures::fma},
      {"f16c", &CpuFeatures::f16c},
      {"avx_vnni", &CpuFeatures::avx_vnni},
      {"avx512f", &CpuFeatures::avx512f},
      {"avx512cd", &CpuFeatures::avx512cd},
      {"avx512bw", &CpuFeatures::avx512bw},
      {"avx512dq", &CpuFeatures::avx512dq},
      {"avx512vl", &CpuFeatures::avx512vl},
      {"avx512ifma", &CpuFeatures::avx512_ifma},
      {"avx512vbmi", &CpuFeatures::avx512_vbmi},
      {"avx512_vbmi2", &CpuFeatures::avx512_vbmi2},
      {"avx512_vnni", &CpuFeatures::avx512_vnni},
      {"avx512_bitalg", &CpuFeatures::avx512_bitalg},
      {"avx512_vpopcntdq", &CpuFeatures::avx512_vpopcntdq},
      {"avx512_bf16", &CpuFeatures::avx512_bf16},
      {"avx512_fp16", &CpuFeatures::avx512_fp16},
      {"avx512_vp2intersect", &CpuFeatures::avx512_vp2intersect},
      {"amx_tile", &CpuFeatures::amx_tile},
      {"amx_int8", &CpuFeatures::amx_int8},
      {"amx_bf16", &CpuFeatures::amx_bf16},
      {"amx_fp16", &CpuFeatures::amx_fp16},
  };
  return names;
}

}  // namespace dnnb
