// OpenCL discovery: every device of every platform becomes "opencl:P.D". A machine without an
// ICD loader configuration, without platforms or without devices is an absence with the reason.
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "core/registry.h"
#include "devices/opencl/opencl_device.h"

namespace dnnb {

namespace {

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string value(size, '\0');
  if (clGetPlatformInfo(platform, what, size, value.data(), nullptr) != CL_SUCCESS) return "";
  return std::string(value.c_str());
}

std::string device_string(cl_device_id device, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string value(size, '\0');
  if (clGetDeviceInfo(device, what, size, value.data(), nullptr) != CL_SUCCESS) return "";
  return std::string(value.c_str());
}

// A scalar device property, or `fallback` when the query fails (optional 1.2 queries).
template <typename T>
T device_value(cl_device_id device, cl_device_info what, T fallback = T{}) {
  T value{};
  if (clGetDeviceInfo(device, what, sizeof(T), &value, nullptr) != CL_SUCCESS) return fallback;
  return value;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  std::string word;
  while (in >> word) words.push_back(word);
  return words;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  for (const auto& s : list)
    if (s == item) return true;
  return false;
}

std::string device_type_name(cl_device_type type) {
  std::string name;
  auto add = [&](cl_device_type bit, const char* label) {
    if (type & bit) name.append(name.empty() ? "" : "|").append(label);
  };
  add(CL_DEVICE_TYPE_CPU, "cpu");
  add(CL_DEVICE_TYPE_GPU, "gpu");
  add(CL_DEVICE_TYPE_ACCELERATOR, "accelerator");
  add(CL_DEVICE_TYPE_CUSTOM, "custom");
  return name.empty() ? "unknown" : name;
}

bool has_text(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Lanes per compute unit for the FLOP/s estimate: OpenCL does not report it, so it is
// assumed per vendor/type; the JSON records which assumption was made.
std::pair<int, std::string> assumed_lanes(cl_device_type type, const std::string& vendor,
                                          const std::string& device_name, cl_uint native_width_float) {
  if ((type & CL_DEVICE_TYPE_GPU) && has_text(vendor, "NVIDIA"))
    return {128, "NVIDIA GPU: a compute unit is an SM with 128 f32 lanes (Ampere and later)"};
  if ((type & CL_DEVICE_TYPE_GPU) && (has_text(vendor, "Advanced Micro Devices") || has_text(vendor, "AMD")))
    return {64, "AMD GPU: a compute unit has 64 f32 lanes"};
  if (type & CL_DEVICE_TYPE_CPU) {
    if (has_text(device_name, "avx512"))
      return {16, "CPU device: one 512-bit FMA pipe per compute unit (16 f32 lanes, AVX-512)"};
    return {16, "CPU device: assumed AVX-512 width (16 f32 lanes) per compute unit"};
  }
  int lanes = native_width_float == 0 ? 1 : static_cast<int>(native_width_float);
  return {lanes, "unknown device: CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT lanes per compute unit (likely low)"};
}

void discover_device(cl_platform_id platform, cl_uint platform_index, cl_device_id device, cl_uint device_index,
                     DiscoveryResult& result) {
  const std::string id = "opencl:" + std::to_string(platform_index) + "." + std::to_string(device_index);
  const std::string extensions_text = device_string(device, CL_DEVICE_EXTENSIONS);
  const std::vector<std::string> extensions = split_words(extensions_text);
  const auto type = device_value<cl_device_type>(device, CL_DEVICE_TYPE);
  const auto compute_units = device_value<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS);
  const auto clock_mhz = device_value<cl_uint>(device, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  const auto native_float = device_value<cl_uint>(device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT);
  const auto preferred_float = device_value<cl_uint>(device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
  const std::string device_name = device_string(device, CL_DEVICE_NAME);
  const std::string device_vendor = device_string(device, CL_DEVICE_VENDOR);

  DeviceInfo info;
  info.id = id;
  info.kind = DeviceKind::opencl;
  info.name = device_name;
  auto& caps = info.capabilities;
  caps["platform_name"] = platform_string(platform, CL_PLATFORM_NAME);
  caps["platform_vendor"] = platform_string(platform, CL_PLATFORM_VENDOR);
  caps["platform_version"] = platform_string(platform, CL_PLATFORM_VERSION);
  caps["device_name"] = device_name;
  caps["device_vendor"] = device_vendor;
  caps["device_version"] = device_string(device, CL_DEVICE_VERSION);
  caps["driver_version"] = device_string(device, CL_DRIVER_VERSION);
  caps["opencl_c_version"] = device_string(device, CL_DEVICE_OPENCL_C_VERSION);
  caps["device_type"] = device_type_name(type);
  caps["compute_units"] = compute_units;
  caps["max_clock_mhz"] = clock_mhz;
  caps["global_mem_bytes"] = device_value<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE);
  caps["local_mem_bytes"] = device_value<cl_ulong>(device, CL_DEVICE_LOCAL_MEM_SIZE);
  caps["max_work_group_size"] = device_value<size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  caps["max_alloc_bytes"] = device_value<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  caps["global_mem_cache_bytes"] = device_value<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
  caps["global_mem_cacheline_bytes"] = device_value<cl_uint>(device, CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE);
  caps["mem_base_addr_align_bits"] = device_value<cl_uint>(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN);
  caps["address_bits"] = device_value<cl_uint>(device, CL_DEVICE_ADDRESS_BITS);
  caps["preferred_vector_width_float"] = preferred_float;
  caps["native_vector_width_float"] = native_float;
  caps["extensions"] = extensions;
  caps["fp16"] = contains(extensions, "cl_khr_fp16");
  caps["fp64"] = contains(extensions, "cl_khr_fp64");
  caps["subgroups"] = contains(extensions, "cl_khr_subgroups") || contains(extensions, "cl_intel_subgroups");
  caps["integer_dot_product"] = contains(extensions, "cl_khr_integer_dot_product");

  // FLOP/s estimate: compute units x clock x assumed lanes x 2 (an FMA is two flops). Our
  // OpenCL kernels compute f16/bf16 in f32, so those peaks equal the f32 one.
  auto [lanes, lanes_reason] = assumed_lanes(type, device_vendor, device_name, native_float);
  const double f32_flops = static_cast<double>(compute_units) * clock_mhz * 1e6 * lanes * 2.0;
  info.peaks["flops_per_s"] = {{"f32", f32_flops}, {"f16", f32_flops}, {"bf16", f32_flops}};
  info.peaks["memory_bandwidth_bytes_per_s"] = nullptr;
  info.peaks["formula"] = {
      {"flops_per_s", "estimate: compute_units (" + std::to_string(compute_units) + ") x max_clock (" +
                          std::to_string(clock_mhz) + " MHz) x lanes (" + std::to_string(lanes) +
                          ") x 2 flops per FMA; f16/bf16 computed in f32 by our OpenCL kernels"},
      {"lanes_assumption", lanes_reason},
      {"memory_bandwidth_bytes_per_s",
       "unknown: OpenCL reports neither memory clock nor bus width (measure with a copy kernel)"},
  };

  auto runtime = std::make_unique<OpenCLDevice>(platform, device, std::move(info));
  Status init = runtime->init();
  if (!init.is_ok()) {
    result.absences.push_back({DeviceKind::opencl, id + " (" + device_name + ") unusable: " + init.message});
    return;
  }
  result.devices.push_back(std::move(runtime));
}

void discover_opencl(DiscoveryResult& result) {
  cl_uint platform_count = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &platform_count);
  if (err != CL_SUCCESS || platform_count == 0) {
    const char* vendors = std::getenv("OCL_ICD_VENDORS");
    std::string where = vendors ? std::string("OCL_ICD_VENDORS=") + vendors : "/etc/OpenCL/vendors";
    std::string reason = err != CL_SUCCESS
                             ? std::string("clGetPlatformIDs returned ") + opencl_error_name(err) + " (" +
                                   std::to_string(err) + ")"
                             : std::string("clGetPlatformIDs found no platform");
    result.absences.push_back({DeviceKind::opencl, "no OpenCL platform: " + reason +
                                                       "; no usable ICD file in " + where +
                                                       " (see docs/opencl.md)"});
    return;
  }
  std::vector<cl_platform_id> platforms(platform_count);
  err = clGetPlatformIDs(platform_count, platforms.data(), nullptr);
  if (err != CL_SUCCESS) {
    result.absences.push_back({DeviceKind::opencl, std::string("clGetPlatformIDs returned ") +
                                                       opencl_error_name(err)});
    return;
  }
  for (cl_uint p = 0; p < platform_count; ++p) {
    cl_uint device_count = 0;
    err = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &device_count);
    if (err != CL_SUCCESS || device_count == 0) {
      result.absences.push_back({DeviceKind::opencl, "OpenCL platform " + std::to_string(p) + " (" +
                                                         platform_string(platforms[p], CL_PLATFORM_NAME) +
                                                         ") has no device: clGetDeviceIDs returned " +
                                                         opencl_error_name(err)});
      continue;
    }
    std::vector<cl_device_id> devices(device_count);
    err = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, device_count, devices.data(), nullptr);
    if (err != CL_SUCCESS) {
      result.absences.push_back({DeviceKind::opencl, "OpenCL platform " + std::to_string(p) +
                                                         ": clGetDeviceIDs returned " + opencl_error_name(err)});
      continue;
    }
    for (cl_uint d = 0; d < device_count; ++d) discover_device(platforms[p], p, devices[d], d, result);
  }
}

}  // namespace

DNNB_REGISTER(register_device_provider({DeviceKind::opencl, discover_opencl}));

}  // namespace dnnb
