#include "kernels/opencl/program_dump.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <set>

namespace dnnb::opencl {
namespace {

std::string platform_vendor(const OpenCLDevice& device) {
  cl_platform_id platform = nullptr;
  if (clGetDeviceInfo(device.device_id(), CL_DEVICE_PLATFORM, sizeof(platform), &platform, nullptr) != CL_SUCCESS)
    return "";
  size_t size = 0;
  if (clGetPlatformInfo(platform, CL_PLATFORM_VENDOR, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  if (clGetPlatformInfo(platform, CL_PLATFORM_VENDOR, size, text.data(), nullptr) != CL_SUCCESS) return "";
  return text.c_str();
}

// Letters, digits, '-' and '_' kept; anything else (':' and '.' of "opencl:1.0") becomes '_'.
std::string file_safe(const std::string& text) {
  std::string out = text;
  for (char& ch : out)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_') ch = '_';
  return out;
}

void report(const std::string& what) { std::cerr << "dnnblocks: DNNB_OPENCL_DUMP: " << what << "\n"; }

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) report("cannot write " + path);
}

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  cl_int err = clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  if (err != CL_SUCCESS) return std::string("(clGetProgramBuildInfo failed: ") + opencl_error_name(err) + ")";
  std::string log(size, '\0');
  err = clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  if (err != CL_SUCCESS) return std::string("(clGetProgramBuildInfo failed: ") + opencl_error_name(err) + ")";
  return log.c_str();
}

// Writes DIR/<device>-<program>-<hash of options>.{options.txt,log.txt,ptx|bin}.
void dump_program(OpenCLDevice& device, const std::string& program_name, const std::string& options,
                  Result<cl_program> built) {
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016zx", std::hash<std::string>{}(options));
  const std::string base = dump_dir() + "/" + file_safe(device.info().id) + "-" + file_safe(program_name) + "-" + hash;
  write_file(base + ".options.txt", options + "\n");
  if (!built) {
    // The error holds the complete build log (OpenCLDevice::program).
    write_file(base + ".log.txt", built.status().message + "\n");
    return;
  }
  write_file(base + ".log.txt", build_log(*built, device.device_id()));
  auto binary = opencl_program_binary(*built, device.device_id());
  if (!binary) {
    report("no binary for " + base + ": " + binary.status().message);
    return;
  }
  write_file(base + (is_nvidia(device) ? ".ptx" : ".bin"), *binary);
}

}  // namespace

bool is_nvidia(const OpenCLDevice& device) { return platform_vendor(device).find("NVIDIA") != std::string::npos; }

const std::string& dump_dir() {
  static const std::string dir = [] {
    const char* value = std::getenv("DNNB_OPENCL_DUMP");
    return std::string(value != nullptr ? value : "");
  }();
  return dir;
}

std::string dump_build_options(const OpenCLDevice& device) {
  return !dump_dir().empty() && is_nvidia(device) ? " -cl-nv-verbose" : "";
}

Result<cl_kernel> opencl_kernel(OpenCLDevice& device, const std::string& program_name, const std::string& source,
                                const std::string& kernel_name, const std::string& options) {
  if (!dump_dir().empty()) {
    static std::mutex mutex;
    static std::set<std::string> dumped;
    const std::string key = device.info().id + "|" + program_name + "|" + options;
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      first = dumped.insert(key).second;
    }
    // Built from source (not from the on-disk cache), so the log is the compiler's.
    if (first)
      dump_program(device, program_name, options, device.program(program_name, source, options, /*from_source=*/true));
  }
  return device.kernel(program_name, source, kernel_name, options);
}

}  // namespace dnnb::opencl
