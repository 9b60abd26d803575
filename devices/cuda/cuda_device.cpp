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
  current_ = stream_;
}

CudaDevice::~CudaDevice() {
  // At exit the runtime may already be torn down (cudaErrorCudartUnloading): ignore.
  if (cudaSetDevice(ordinal_) == cudaSuccess) {
    for (const Recording& r : recordings_) cudaGraphExecDestroy(r.exec);
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    for (int i = 1; i < kLanes; ++i)
      if (lanes_[i] != nullptr) cudaStreamDestroy(lanes_[i]);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  cudaGetLastError();
}

Status CudaDevice::record_steps(const std::vector<LaunchStep>& steps) {
  lanes_[0] = stream_;
  for (int i = 1; i < kLanes; ++i)
    if (lanes_[i] == nullptr) DNNB_CUDA_TRY(cudaStreamCreateWithFlags(&lanes_[i], cudaStreamNonBlocking));
  while (events_.size() < steps.size() + 1) {
    cudaEvent_t e = nullptr;
    DNNB_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
  }
  // Every lane joins the capture behind a fork event of stream_, and stream_ joins each lane's
  // last step at the end, so the graph starts and ends with stream_.
  cudaEvent_t fork = events_[steps.size()];
  DNNB_CUDA_TRY(cudaEventRecord(fork, stream_));
  for (int i = 1; i < kLanes; ++i) DNNB_CUDA_TRY(cudaStreamWaitEvent(lanes_[i], fork, 0));
  std::vector<int> lane_of(steps.size(), 0);
  std::vector<long long> last(kLanes, -1);  // the step each lane ran last
  for (size_t s = 0; s < steps.size(); ++s) {
    int lane = -1;
    for (size_t d : steps[s].after)  // continue a lane whose last step this one follows
      if (d < s && last[lane_of[d]] == static_cast<long long>(d)) lane = lane_of[d];
    for (int i = 0; i < kLanes && lane < 0; ++i)
      if (last[i] < 0) lane = i;
    if (lane < 0) lane = steps[s].after.empty() ? 0 : lane_of[steps[s].after.back()];
    for (size_t d : steps[s].after) {
      if (d >= s) return Status::error("run_recorded: step " + std::to_string(s) + " follows a later step " + std::to_string(d));
      if (lane_of[d] != lane) DNNB_CUDA_TRY(cudaStreamWaitEvent(lanes_[lane], events_[d], 0));
    }
    current_ = lanes_[lane];
    const Status ran = steps[s].enqueue();
    current_ = stream_;
    DNNB_TRY(ran);
    DNNB_CUDA_TRY(cudaEventRecord(events_[s], lanes_[lane]));
    lane_of[s] = lane;
    last[lane] = static_cast<long long>(s);
  }
  for (int i = 1; i < kLanes; ++i)
    DNNB_CUDA_TRY(cudaStreamWaitEvent(stream_, last[i] >= 0 ? events_[last[i]] : fork, 0));
  return Status::ok();
}

Status CudaDevice::run_recorded(const std::string& key, const std::vector<LaunchStep>& steps) {
  if (stream_ == nullptr) return DeviceRuntime::run_recorded(key, steps);  // the legacy stream cannot be captured
  DNNB_TRY(activate());
  std::lock_guard<std::mutex> lock(recordings_mutex_);
  for (auto it = recordings_.begin(); it != recordings_.end(); ++it) {
    if (it->key != key) continue;
    recordings_.splice(recordings_.begin(), recordings_, it);
    DNNB_CUDA_TRY(cudaGraphLaunch(recordings_.front().exec, stream_));
    return Status::ok();
  }
  for (const LaunchStep& step : steps) DNNB_TRY(step.enqueue());
  // Relaxed: first-use calls that are not stream work (cudaFuncSetAttribute, occupancy queries)
  // stay legal while the streams record.
  DNNB_CUDA_TRY(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
  const Status recorded = record_steps(steps);
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
  if (!recorded.is_ok()) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    return Status{recorded.code, "recording the launches as a CUDA graph: " + recorded.message};
  }
  if (ended != cudaSuccess) return cuda_status(ended, "cudaStreamEndCapture (recording the launches as a CUDA graph)", __FILE__, __LINE__);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (made != cudaSuccess) return cuda_status(made, "cudaGraphInstantiate", __FILE__, __LINE__);
  recordings_.push_front({key, exec});
  if (recordings_.size() > kRecordings) {
    cudaGraphExecDestroy(recordings_.back().exec);  // one still running is freed when it completes
    recordings_.pop_back();
  }
  DNNB_CUDA_TRY(cudaGraphLaunch(exec, stream_));
  return Status::ok();
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
