// The cuda device provider: one CudaDevice per device the runtime reports, described with
// cudaDeviceGetAttribute (CUDA 13 dropped the clock fields of cudaDeviceProp), and peaks from
// the per-architecture tables below. Formulas and sources: docs/devices.md.
#include <cstdio>
#include <string>
#include <vector>

#include "core/registry.h"
#include "devices/cuda/cuda_device.h"

namespace dnnb {

namespace {

using nlohmann::json;

// Per-SM per-clock throughput of one architecture. Tensor rates are dense (no 2:4
// sparsity), in FLOP (2 per FMA) or integer ops, per SM per clock; 0 = no tensor-core support
// for that type (or not tabulated). Sources, per row: NVIDIA's architecture whitepapers
// (V100, Turing, A100, GA102, Ada, H100); each row's check against a datasheet peak is in
// docs/devices.md.
struct ArchTable {
  int sm;                    // compute capability x 10
  const char* architecture;
  int fp32_lanes;            // FP32 FMA lanes per SM
  int fp64_lanes;            // FP64 FMA lanes per SM
  int f16, bf16, tf32, fp8, i8, i4, f64;  // dense tensor FLOP (ops) per SM per clock
  const char* tensor_dtypes; // input types the tensor cores take, space-separated
  const char* tensor_instructions;
};

constexpr ArchTable kArchTables[] = {
    {70, "Volta", 64, 32, 1024, 0, 0, 0, 0, 0, 0, "f16", "mma.sync (HMMA)"},
    {75, "Turing", 64, 2, 1024, 0, 0, 0, 2048, 4096, 0, "f16 i8 i4", "mma.sync"},
    {80, "Ampere (GA100)", 64, 32, 2048, 2048, 1024, 0, 4096, 8192, 128, "f16 bf16 tf32 f64 i8 i4",
     "mma.sync"},
    {86, "Ampere (GA10x)", 128, 2, 1024, 1024, 512, 0, 2048, 4096, 0, "f16 bf16 tf32 i8 i4", "mma.sync"},
    {89, "Ada Lovelace", 128, 2, 1024, 1024, 512, 2048, 2048, 4096, 0,
     "f16 bf16 tf32 fp8_e4m3 fp8_e5m2 i8 i4", "mma.sync"},
    {90, "Hopper", 128, 64, 4096, 4096, 2048, 8192, 8192, 0, 256,
     "f16 bf16 tf32 f64 fp8_e4m3 fp8_e5m2 i8", "wgmma.mma_async (full rate), mma.sync"},
    // Blackwell: FP32/FP64 lanes only; tensor rates and types are not tabulated yet.
    {100, "Blackwell (GB100)", 128, 64, 0, 0, 0, 0, 0, 0, 0, "", "not tabulated"},
    {120, "Blackwell (GB20x)", 128, 2, 0, 0, 0, 0, 0, 0, 0, "", "not tabulated"},
};

const ArchTable* find_arch(int sm) {
  for (const ArchTable& t : kArchTables)
    if (t.sm == sm) return &t;
  return nullptr;
}

std::string version_text(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string cuda_error_text(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
}

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", x);
  return text;
}

std::string bytes_text(long long bytes) {
  char text[32];
  if (bytes >= (1ll << 30)) std::snprintf(text, sizeof text, "%.0f GiB", bytes / double(1ll << 30));
  else if (bytes >= (1ll << 20)) std::snprintf(text, sizeof text, "%.0f MiB", bytes / double(1ll << 20));
  else std::snprintf(text, sizeof text, "%lld KiB", bytes >> 10);
  return text;
}

// The attributes of one device; a failed query stops the description with its reason.
struct Attributes {
  int ordinal;
  std::string failure;
  int get(cudaDeviceAttr attr, const char* name) {
    int value = 0;
    if (!failure.empty()) return 0;
    cudaError_t err = cudaDeviceGetAttribute(&value, attr, ordinal);
    if (err != cudaSuccess) {
      failure = std::string("cudaDeviceGetAttribute(") + name + ") returned " + cuda_error_text(err);
      cudaGetLastError();
    }
    return value;
  }
};
#define DNNB_ATTR(attrs, name) (attrs).get(name, #name)

json describe_peaks(const json& caps, const ArchTable* arch) {
  json peaks, flops = json::object(), formula = json::object();
  int sms = caps["sm_count"].get<int>();
  double clock = caps["clock_rate_hz"].get<double>();
  double mem_clock = caps["memory_clock_rate_hz"].get<double>();
  int bus = caps["memory_bus_width_bits"].get<int>();

  if (mem_clock > 0 && bus > 0) {
    double bandwidth = 2.0 * mem_clock * bus / 8.0;
    peaks["memory_bandwidth_bytes_per_s"] = bandwidth;
    formula["memory_bandwidth_bytes_per_s"] =
        "2 (double data rate) x memory_clock_rate_hz x memory_bus_width_bits / 8 = 2 x " + number(mem_clock) +
        " x " + std::to_string(bus) + " / 8 = " + number(bandwidth) +
        " (for HBM compare with the datasheet, e.g. H200 4.8e12)";
  } else {
    peaks["memory_bandwidth_bytes_per_s"] = nullptr;
    formula["memory_bandwidth_bytes_per_s"] = "unknown: the driver reports no memory clock or bus width";
  }

  std::string sm_name = "sm_" + std::to_string(caps["sm"].get<int>());
  auto set_peak = [&](const char* key, int per_sm_per_clock, const std::string& what) {
    if (arch == nullptr || per_sm_per_clock == 0 || clock <= 0) {
      flops[key] = nullptr;
      formula[key] = arch == nullptr ? "unknown: " + sm_name + " is not in the architecture table"
                                     : "unknown: " + sm_name + " has no " + what + " in the table";
      return;
    }
    double peak = static_cast<double>(sms) * per_sm_per_clock * clock;
    flops[key] = peak;
    formula[key] = "sm_count x " + what + " per SM per clock x clock_rate_hz = " + std::to_string(sms) +
                   " x " + std::to_string(per_sm_per_clock) + " x " + number(clock) + " = " + number(peak);
  };
  set_peak("f32", arch ? arch->fp32_lanes * 2 : 0, "FP32 lanes x 2 (FMA)");
  // f64: the tensor-core rate where there is one (it is twice the FP64 lanes on sm_80/sm_90).
  if (arch && arch->f64 > arch->fp64_lanes * 2)
    set_peak("f64", arch->f64, "dense FP64 tensor-core FLOP");
  else
    set_peak("f64", arch ? arch->fp64_lanes * 2 : 0, "FP64 lanes x 2 (FMA)");
  set_peak("tf32", arch ? arch->tf32 : 0, "dense TF32 tensor-core FLOP");
  set_peak("f16", arch ? arch->f16 : 0, "dense F16 tensor-core FLOP");
  set_peak("bf16", arch ? arch->bf16 : 0, "dense BF16 tensor-core FLOP");
  set_peak("fp8", arch ? arch->fp8 : 0, "dense FP8 tensor-core FLOP");
  set_peak("i8", arch ? arch->i8 : 0, "dense INT8 tensor-core ops");
  set_peak("i4", arch ? arch->i4 : 0, "dense INT4 tensor-core ops");

  peaks["flops_per_s"] = flops;
  peaks["formula"] = formula;
  peaks["inputs"] = {{"sm_count", sms},
                     {"clock_rate_hz", clock},
                     {"memory_clock_rate_hz", mem_clock},
                     {"memory_bus_width_bits", bus},
                     {"table_row", arch ? json(arch->architecture) : json(nullptr)}};
  peaks["note"] =
      "theoretical upper bound: cudaDevAttrClockRate is the maximum boost clock, which tensor-core "
      "work rarely sustains (H100/H200 datasheet tensor figures correspond to 1.83 GHz, the "
      "reported clock is 1.98 GHz). Tensor rates are dense (no 2:4 sparsity) with f32 "
      "accumulation; sources in docs/devices.md (NVIDIA architecture whitepapers).";
  return peaks;
}

// Describes device `ordinal`, or returns the reason it cannot be used.
Result<DeviceInfo> describe_device(int ordinal, int runtime_version, int driver_version) {
  cudaDeviceProp prop{};
  cudaError_t err = cudaGetDeviceProperties(&prop, ordinal);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return Status::skipped("cuda:" + std::to_string(ordinal) + ": cudaGetDeviceProperties returned " +
                           cuda_error_text(err));
  }
  Attributes a{ordinal, {}};
  json caps;
  int major = DNNB_ATTR(a, cudaDevAttrComputeCapabilityMajor);
  int minor = DNNB_ATTR(a, cudaDevAttrComputeCapabilityMinor);
  caps["compute_capability"] = std::to_string(major) + "." + std::to_string(minor);
  caps["sm"] = major * 10 + minor;
  caps["sm_count"] = DNNB_ATTR(a, cudaDevAttrMultiProcessorCount);
  caps["clock_rate_hz"] = 1e3 * DNNB_ATTR(a, cudaDevAttrClockRate);
  caps["memory_clock_rate_hz"] = 1e3 * DNNB_ATTR(a, cudaDevAttrMemoryClockRate);
  caps["memory_bus_width_bits"] = DNNB_ATTR(a, cudaDevAttrGlobalMemoryBusWidth);
  caps["total_memory_bytes"] = static_cast<long long>(prop.totalGlobalMem);
  caps["l2_cache_bytes"] = DNNB_ATTR(a, cudaDevAttrL2CacheSize);
  caps["shared_memory_per_block_bytes"] = DNNB_ATTR(a, cudaDevAttrMaxSharedMemoryPerBlock);
  caps["shared_memory_per_block_optin_bytes"] = DNNB_ATTR(a, cudaDevAttrMaxSharedMemoryPerBlockOptin);
  caps["shared_memory_per_sm_bytes"] = DNNB_ATTR(a, cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  caps["registers_per_block"] = DNNB_ATTR(a, cudaDevAttrMaxRegistersPerBlock);
  caps["registers_per_sm"] = DNNB_ATTR(a, cudaDevAttrMaxRegistersPerMultiprocessor);
  caps["max_threads_per_block"] = DNNB_ATTR(a, cudaDevAttrMaxThreadsPerBlock);
  caps["max_threads_per_sm"] = DNNB_ATTR(a, cudaDevAttrMaxThreadsPerMultiProcessor);
  caps["warp_size"] = DNNB_ATTR(a, cudaDevAttrWarpSize);
  caps["async_engine_count"] = DNNB_ATTR(a, cudaDevAttrAsyncEngineCount);
  caps["ecc_enabled"] = DNNB_ATTR(a, cudaDevAttrEccEnabled) != 0;
  if (!a.failure.empty()) return Status::skipped("cuda:" + std::to_string(ordinal) + ": " + a.failure);

  char pci[32] = {};
  if (cudaDeviceGetPCIBusId(pci, sizeof pci, ordinal) == cudaSuccess) caps["pci_bus_id"] = pci;
  cudaGetLastError();
  char uuid[40] = {};
  for (int i = 0; i < 16; ++i)
    std::snprintf(uuid + 2 * i, 3, "%02x", static_cast<unsigned char>(prop.uuid.bytes[i]));
  caps["uuid"] = uuid;

  const ArchTable* arch = find_arch(major * 10 + minor);
  caps["architecture"] = arch ? arch->architecture : "unknown";
  json dtypes = json::array();
  if (arch) {
    std::string list = arch->tensor_dtypes, word;
    for (char c : list + " ") {
      if (c != ' ') word += c;
      else if (!word.empty()) dtypes.push_back(word), word.clear();
    }
  }
  caps["tensor_core_dtypes"] = dtypes;
  caps["tensor_core_instructions"] = arch ? arch->tensor_instructions : "unknown";
  caps["runtime_version"] = version_text(runtime_version);
  caps["driver_version"] = version_text(driver_version);

  char summary[256];
  std::snprintf(summary, sizeof summary,
                "sm_%d %s, %d SMs @ %.3g GHz, %s memory (%d-bit bus), L2 %s, smem %s/block opt-in, "
                "tensor: %s, driver %s, runtime %s",
                major * 10 + minor, arch ? arch->architecture : "(unknown arch)", caps["sm_count"].get<int>(),
                caps["clock_rate_hz"].get<double>() / 1e9, bytes_text(prop.totalGlobalMem).c_str(),
                caps["memory_bus_width_bits"].get<int>(), bytes_text(caps["l2_cache_bytes"].get<int>()).c_str(),
                bytes_text(caps["shared_memory_per_block_optin_bytes"].get<int>()).c_str(),
                arch && *arch->tensor_dtypes ? arch->tensor_dtypes : "not tabulated", version_text(driver_version).c_str(),
                version_text(runtime_version).c_str());
  caps["summary"] = summary;

  DeviceInfo info;
  info.id = "cuda:" + std::to_string(ordinal);
  info.kind = DeviceKind::cuda;
  info.name = prop.name;
  info.peaks = describe_peaks(caps, arch);
  info.capabilities = std::move(caps);
  return info;
}

void discover_cuda(DiscoveryResult& result) {
  int runtime_version = 0, driver_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  cudaDriverGetVersion(&driver_version);  // 0 when no driver is installed
  std::string versions = "CUDA runtime " + version_text(runtime_version) + ", driver " +
                         (driver_version > 0 ? version_text(driver_version) : "not installed");

  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    result.absences.push_back({DeviceKind::cuda, "no CUDA device: cudaGetDeviceCount returned " +
                                                     cuda_error_text(err) + "; " + versions});
    return;
  }
  if (count == 0) {
    result.absences.push_back({DeviceKind::cuda, "no CUDA device: cudaGetDeviceCount found 0 devices; " + versions});
    return;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    Result<DeviceInfo> info = describe_device(ordinal, runtime_version, driver_version);
    if (!info) {
      result.absences.push_back({DeviceKind::cuda, info.status().message});
      continue;
    }
    // Create the context now, so an unusable device (exclusive mode held elsewhere, a
    // failing GPU) is reported here rather than failing in the middle of a run.
    err = cudaSetDevice(ordinal);
    if (err == cudaSuccess) err = cudaFree(nullptr);
    if (err != cudaSuccess) {
      cudaGetLastError();
      result.absences.push_back({DeviceKind::cuda, info->id + " (" + info->name +
                                                       ") is present but its context cannot be created: " +
                                                       cuda_error_text(err)});
      continue;
    }
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
      info->capabilities["free_memory_bytes_at_discovery"] = static_cast<long long>(free_bytes);
    cudaGetLastError();
    result.devices.push_back(std::make_unique<CudaDevice>(ordinal, std::move(info.value())));
  }
}

}  // namespace

DNNB_REGISTER(register_device_provider(DeviceProvider{DeviceKind::cuda, discover_cuda}));

}  // namespace dnnb
