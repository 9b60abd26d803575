// The OpenCL runtime of one device: context, in-order profiling queue, buffers, and the built
// programs and kernel objects (programs also through the on-disk cache of
// opencl_program_cache.cpp). Discovery is in opencl_discovery.cpp.
#include "devices/opencl/opencl_device.h"

#include <cstdio>
#include <string>
#include <vector>

#include "core/deferred_checks.h"

namespace dnnb {

const char* opencl_error_name(cl_int err) {
  switch (err) {
    case 0: return "CL_SUCCESS";
    case -1: return "CL_DEVICE_NOT_FOUND";
    case -2: return "CL_DEVICE_NOT_AVAILABLE";
    case -3: return "CL_COMPILER_NOT_AVAILABLE";
    case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case -5: return "CL_OUT_OF_RESOURCES";
    case -6: return "CL_OUT_OF_HOST_MEMORY";
    case -7: return "CL_PROFILING_INFO_NOT_AVAILABLE";
    case -8: return "CL_MEM_COPY_OVERLAP";
    case -9: return "CL_IMAGE_FORMAT_MISMATCH";
    case -10: return "CL_IMAGE_FORMAT_NOT_SUPPORTED";
    case -11: return "CL_BUILD_PROGRAM_FAILURE";
    case -12: return "CL_MAP_FAILURE";
    case -13: return "CL_MISALIGNED_SUB_BUFFER_OFFSET";
    case -14: return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    case -15: return "CL_COMPILE_PROGRAM_FAILURE";
    case -16: return "CL_LINKER_NOT_AVAILABLE";
    case -17: return "CL_LINK_PROGRAM_FAILURE";
    case -18: return "CL_DEVICE_PARTITION_FAILED";
    case -19: return "CL_KERNEL_ARG_INFO_NOT_AVAILABLE";
    case -30: return "CL_INVALID_VALUE";
    case -31: return "CL_INVALID_DEVICE_TYPE";
    case -32: return "CL_INVALID_PLATFORM";
    case -33: return "CL_INVALID_DEVICE";
    case -34: return "CL_INVALID_CONTEXT";
    case -35: return "CL_INVALID_QUEUE_PROPERTIES";
    case -36: return "CL_INVALID_COMMAND_QUEUE";
    case -37: return "CL_INVALID_HOST_PTR";
    case -38: return "CL_INVALID_MEM_OBJECT";
    case -39: return "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR";
    case -40: return "CL_INVALID_IMAGE_SIZE";
    case -41: return "CL_INVALID_SAMPLER";
    case -42: return "CL_INVALID_BINARY";
    case -43: return "CL_INVALID_BUILD_OPTIONS";
    case -44: return "CL_INVALID_PROGRAM";
    case -45: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case -46: return "CL_INVALID_KERNEL_NAME";
    case -47: return "CL_INVALID_KERNEL_DEFINITION";
    case -48: return "CL_INVALID_KERNEL";
    case -49: return "CL_INVALID_ARG_INDEX";
    case -50: return "CL_INVALID_ARG_VALUE";
    case -51: return "CL_INVALID_ARG_SIZE";
    case -52: return "CL_INVALID_KERNEL_ARGS";
    case -53: return "CL_INVALID_WORK_DIMENSION";
    case -54: return "CL_INVALID_WORK_GROUP_SIZE";
    case -55: return "CL_INVALID_WORK_ITEM_SIZE";
    case -56: return "CL_INVALID_GLOBAL_OFFSET";
    case -57: return "CL_INVALID_EVENT_WAIT_LIST";
    case -58: return "CL_INVALID_EVENT";
    case -59: return "CL_INVALID_OPERATION";
    case -60: return "CL_INVALID_GL_OBJECT";
    case -61: return "CL_INVALID_BUFFER_SIZE";
    case -62: return "CL_INVALID_MIP_LEVEL";
    case -63: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case -64: return "CL_INVALID_PROPERTY";
    case -65: return "CL_INVALID_IMAGE_DESCRIPTOR";
    case -66: return "CL_INVALID_COMPILER_OPTIONS";
    case -67: return "CL_INVALID_LINKER_OPTIONS";
    case -68: return "CL_INVALID_DEVICE_PARTITION_COUNT";
    case -69: return "CL_INVALID_PIPE_SIZE";
    case -70: return "CL_INVALID_DEVICE_QUEUE";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "unknown OpenCL error";
  }
}

Status opencl_status(cl_int err, const char* call, const char* file, int line) {
  return error_at(file, line,
                  std::string(call) + " failed: " + opencl_error_name(err) + " (" + std::to_string(err) + ")");
}

OpenCLDevice::OpenCLDevice(cl_platform_id platform, cl_device_id device, DeviceInfo info)
    : platform_(platform), device_(device), info_(std::move(info)) {}

OpenCLDevice::~OpenCLDevice() {
  // Release order: kernels hold programs, programs and buffers hold the context.
  for (auto& entry : kernels_) clReleaseKernel(entry.second);
  for (auto& entry : programs_) clReleaseProgram(entry.second);
  if (scratch_ != nullptr) clReleaseMemObject(scratch_);
  if (queue_ != nullptr) clReleaseCommandQueue(queue_);
  if (context_ != nullptr) clReleaseContext(context_);
}

Status OpenCLDevice::init() {
  cl_int err = CL_SUCCESS;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                         reinterpret_cast<cl_context_properties>(platform_), 0};
  context_ = clCreateContext(props, 1, &device_, nullptr, nullptr, &err);
  DNNB_CL_TRY(err);
  // The 1.2 entry point (NVIDIA's OpenCL has no clCreateCommandQueueWithProperties).
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
  queue_ = clCreateCommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &err);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
  DNNB_CL_TRY(err);
  DNNB_CL_TRY(clGetDeviceInfo(device_, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(max_work_group_size_),
                              &max_work_group_size_, nullptr));
  cl_ulong local_mem = 0;
  DNNB_CL_TRY(clGetDeviceInfo(device_, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local_mem), &local_mem, nullptr));
  local_mem_size_ = static_cast<size_t>(local_mem);
  size_t ext_size = 0;
  DNNB_CL_TRY(clGetDeviceInfo(device_, CL_DEVICE_EXTENSIONS, 0, nullptr, &ext_size));
  std::string ext(ext_size, '\0');
  DNNB_CL_TRY(clGetDeviceInfo(device_, CL_DEVICE_EXTENSIONS, ext_size, ext.data(), nullptr));
  extensions_ = std::string(" ") + ext.c_str() + " ";
  binary_identity_ = opencl_binary_identity(platform_, device_);
  platform_caches_builds_ = opencl_platform_caches_builds(platform_);
  return Status::ok();
}

bool OpenCLDevice::has_extension(const std::string& name) const {
  return extensions_.find(" " + name + " ") != std::string::npos;
}

Result<BufferPtr> OpenCLDevice::allocate(size_t bytes) {
  // clCreateBuffer rejects size 0; an empty tensor still gets a valid (small) buffer.
  size_t request = bytes == 0 ? 64 : bytes;
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, request, nullptr, &err);
  if (err != CL_SUCCESS)
    return opencl_status(err, ("clCreateBuffer(" + std::to_string(bytes) + " bytes)").c_str(), __FILE__, __LINE__);
  auto buffer = std::make_shared<Buffer>();
  buffer->device = this;
  buffer->handle = mem;
  buffer->bytes = bytes;
  return buffer;
}

Status OpenCLDevice::upload(Buffer& dst, size_t dst_offset, const void* src, size_t bytes) {
  if (bytes == 0) return Status::ok();
  if (dst_offset + bytes > dst.bytes)
    return DNNB_ERROR("OpenCL upload of " + std::to_string(bytes) + " bytes at " + std::to_string(dst_offset) +
                      " past the end of a " + std::to_string(dst.bytes) + "-byte buffer");
  DNNB_CL_TRY(clEnqueueWriteBuffer(queue_, static_cast<cl_mem>(dst.handle), CL_TRUE, dst_offset, bytes, src,
                                   0, nullptr, nullptr));
  return Status::ok();
}

Status OpenCLDevice::download(void* dst, const Buffer& src, size_t src_offset, size_t bytes) {
  if (bytes == 0) return Status::ok();
  if (src_offset + bytes > src.bytes)
    return DNNB_ERROR("OpenCL download of " + std::to_string(bytes) + " bytes at " + std::to_string(src_offset) +
                      " past the end of a " + std::to_string(src.bytes) + "-byte buffer");
  DNNB_CL_TRY(clEnqueueReadBuffer(queue_, static_cast<cl_mem>(src.handle), CL_TRUE, src_offset, bytes, dst,
                                  0, nullptr, nullptr));
  return Status::ok();
}

Status OpenCLDevice::synchronize() {
  DNNB_CL_TRY(clFinish(queue_));
  return run_deferred_checks(*this);  // what launches left to report (core/deferred_checks.h)
}

void OpenCLDevice::release(Buffer& buffer) noexcept {
  if (buffer.handle != nullptr) clReleaseMemObject(static_cast<cl_mem>(buffer.handle));
  buffer.handle = nullptr;
}

Result<cl_mem> OpenCLDevice::scratch(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes == 0) bytes = 64;
  if (scratch_ != nullptr && scratch_bytes_ >= bytes) return scratch_;
  if (scratch_ != nullptr) {
    // The queue may still read the old one: finish before freeing it.
    DNNB_CL_TRY(clFinish(queue_));
    clReleaseMemObject(scratch_);
    scratch_ = nullptr;
    scratch_bytes_ = 0;
  }
  cl_int err = CL_SUCCESS;
  scratch_ = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  DNNB_CL_TRY(err);
  scratch_bytes_ = bytes;
  return scratch_;
}

namespace {
std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS)
    return "(build log unavailable)";
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) != CL_SUCCESS)
    return "(build log unavailable)";
  return std::string(log.c_str());
}
}  // namespace

cl_program OpenCLDevice::program_from_binary(const std::string& binary, const std::string& options) {
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(binary.data());
  const size_t length = binary.size();
  cl_int binary_status = CL_SUCCESS;
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithBinary(context_, 1, &device_, &length, &bytes, &binary_status, &err);
  if (err != CL_SUCCESS || binary_status != CL_SUCCESS) {
    if (program != nullptr) clReleaseProgram(program);
    return nullptr;
  }
  // The same options as the source build: some of them act when the binary is finalized (NVIDIA's
  // -cl-nv-maxrregcount reaches ptxas only here).
  if (clBuildProgram(program, 1, &device_, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(program);
    return nullptr;
  }
  return program;
}

Result<cl_program> OpenCLDevice::program(const std::string& name, const std::string& source,
                                         const std::string& options, bool from_source) {
  std::lock_guard<std::mutex> lock(mutex_);
  // A lookup per launch: name, options and the source's length, no hash of the source.
  const std::string key = name + "|" + options + "|" + std::to_string(source.size());
  auto found = programs_.find(key);
  if (found != programs_.end()) return found->second;

  const std::string cache_dir = opencl_program_cache_dir(platform_caches_builds_);
  const std::string cache_key =
      cache_dir.empty() ? std::string() : opencl_program_cache_key(binary_identity_, source, options);
  if (!cache_dir.empty() && !from_source) {
    const ProgramCacheEntry entry = read_program_cache_entry(cache_dir, cache_key);
    if (entry.state == ProgramCacheEntry::State::ok) {
      if (cl_program cached = program_from_binary(entry.binary, options)) {
        ++cache_stats_.disk_hits;
        programs_.emplace(key, cached);
        return cached;
      }
    }
    // A bad entry is rebuilt from source and written again below.
    if (entry.state != ProgramCacheEntry::State::missing) ++cache_stats_.disk_rejected;
  }

  cl_int err = CL_SUCCESS;
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_program program = clCreateProgramWithSource(context_, 1, &text, &length, &err);
  DNNB_CL_TRY(err);
  err = clBuildProgram(program, 1, &device_, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log = build_log(program, device_);
    clReleaseProgram(program);
    return DNNB_ERROR("OpenCL program '" + name + "' failed to build on " + info_.id + " (" + info_.name +
                      ") with options '" + options + "': clBuildProgram returned " + opencl_error_name(err) +
                      "; build log:\n" + log);
  }
  ++cache_stats_.source_builds;
  programs_.emplace(key, program);
  if (!cache_dir.empty()) {
    // The cache only saves time: a binary it cannot get or write costs a warning, once.
    auto binary = opencl_program_binary(program, device_);
    Status written = binary ? write_program_cache_entry(cache_dir, cache_key, *binary) : binary.status();
    if (written.is_ok()) {
      ++cache_stats_.disk_writes;
    } else {
      static std::once_flag warned;
      std::call_once(warned, [&] {
        std::fprintf(stderr, "dnnblocks: OpenCL program cache: %s (programs are built from source)\n",
                     written.message.c_str());
      });
    }
  }
  return program;
}

ProgramCacheStats OpenCLDevice::program_cache_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_stats_;
}

Result<cl_kernel> OpenCLDevice::kernel(const std::string& program_name, const std::string& source,
                                       const std::string& kernel_name, const std::string& options) {
  auto built = program(program_name, source, options);
  if (!built) return built.status();
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string key = program_name + "|" + options + "|" + std::to_string(source.size()) + "|" + kernel_name;
  auto found = kernels_.find(key);
  if (found != kernels_.end()) return found->second;
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(*built, kernel_name.c_str(), &err);
  if (err != CL_SUCCESS)
    return opencl_status(err, ("clCreateKernel(" + program_name + ", " + kernel_name + ")").c_str(), __FILE__,
                         __LINE__);
  kernels_.emplace(key, k);
  return k;
}

}  // namespace dnnb
