// The CUDA runtime of one device: memory through cudaMalloc, copies on the device's own
// stream, and a release path that survives a dead context (buffers can outlive the CUDA
// runtime at process exit). Discovery is in cuda_discovery.cpp.
#include "devices/cuda/cuda_device.h"

#include <cstdio>
#include <utility>

#include "core/deferred_checks.h"

namespace dnnb {

Status cuda_status(cudaError_t err, const char* call, const char* file, int line) {
  std::string what = std::string(call) + " failed: " + cudaGetErrorName(err) + " (" +
                     cudaGetErrorString(err) + ")";
  return error_at(file, line, what);
}

CudaDevice::CudaDevice(int ordinal, DeviceInfo info) : ordinal_(ordinal), info_(std::move(info)) {
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal_) == cudaSuccess) sm_count_ = sms;
  dram_peak_bytes_per_s_ = peak_bandwidth_bytes_per_s(info_);
  // A constructor cannot return a Status: if the stream cannot be made, work goes to the
  // legacy default stream (correct, only less concurrent) and the info says so.
  cudaError_t err = cudaSetDevice(ordinal_);
  if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  if (err != cudaSuccess) {
    stream_ = nullptr;
    info_.capabilities["stream"] = std::string("legacy default stream: creating a stream failed with ") +
                                   cudaGetErrorName(err);
    cudaGetLastError();  // clear it so the next checked call does not report it
  }
}

CudaDevice::~CudaDevice() {
  // At exit the runtime may already be torn down (cudaErrorCudartUnloading): ignore.
  if (stream_ != nullptr && cudaSetDevice(ordinal_) == cudaSuccess) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

Status CudaDevice::activate() const {
  DNNB_CUDA_TRY(cudaSetDevice(ordinal_));
  return Status::ok();
}

Result<BufferPtr> CudaDevice::allocate(size_t bytes) {
  DNNB_TRY(activate());
  void* pointer = nullptr;
  // cudaMalloc(0) returns nullptr, which ~Buffer would treat as nothing to free; allocate at
  // least one byte so every buffer has a real address.
  cudaError_t err = cudaMalloc(&pointer, bytes == 0 ? 1 : bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return error_at(__FILE__, __LINE__,
                    "cudaMalloc of " + std::to_string(bytes) + " bytes on " + info_.id + " failed: " +
                        cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
  }
  auto buffer = std::make_shared<Buffer>();
  buffer->device = this;
  buffer->handle = pointer;
  buffer->bytes = bytes;
  return buffer;
}

Status CudaDevice::upload(Buffer& dst, size_t dst_offset, const void* src, size_t bytes) {
  if (dst.device != this) return DNNB_ERROR("upload to a buffer of another device than " + info_.id);
  if (dst_offset > dst.bytes || bytes > dst.bytes - dst_offset)
    return DNNB_ERROR("upload of " + std::to_string(bytes) + " bytes at offset " + std::to_string(dst_offset) +
                      " past the end of a " + std::to_string(dst.bytes) + "-byte buffer on " + info_.id);
  if (bytes == 0) return Status::ok();
  DNNB_TRY(activate());
  DNNB_CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(dst.handle) + dst_offset, src, bytes,
                                cudaMemcpyHostToDevice, stream_));
  DNNB_CUDA_TRY(cudaStreamSynchronize(stream_));
  return Status::ok();
}

Status CudaDevice::download(void* dst, const Buffer& src, size_t src_offset, size_t bytes) {
  if (src.device != this) return DNNB_ERROR("download from a buffer of another device than " + info_.id);
  if (src_offset > src.bytes || bytes > src.bytes - src_offset)
    return DNNB_ERROR("download of " + std::to_string(bytes) + " bytes at offset " + std::to_string(src_offset) +
                      " past the end of a " + std::to_string(src.bytes) + "-byte buffer on " + info_.id);
  if (bytes == 0) return Status::ok();
  DNNB_TRY(activate());
  DNNB_CUDA_TRY(cudaMemcpyAsync(dst, static_cast<const char*>(src.handle) + src_offset, bytes,
                                cudaMemcpyDeviceToHost, stream_));
  DNNB_CUDA_TRY(cudaStreamSynchronize(stream_));
  return Status::ok();
}

Status CudaDevice::synchronize() {
  DNNB_TRY(activate());
  DNNB_CUDA_TRY(cudaStreamSynchronize(stream_));
  return run_deferred_checks(*this);  // what launches left to report (core/deferred_checks.h)
}

void CudaDevice::release(Buffer& buffer) noexcept {
  if (buffer.handle == nullptr) return;
  // Errors here (a context destroyed by an earlier fault, the runtime unloading at exit) leave
  // nothing to free and nobody to tell: drop them, and clear the error so it does not surface
  // in the next checked call.
  if (cudaSetDevice(ordinal_) == cudaSuccess) cudaFree(buffer.handle);
  cudaGetLastError();
  buffer.handle = nullptr;
}

}  // namespace dnnb
