// CUDA embedding_bwd: dW[v] = sum of dy[t] over the tokens with ids[t] = v (zero for rows no
// token takes), f32 accumulation, each element of dW rounded once. Deterministic: every row is
// owned by one warp per column segment, which adds its tokens' dy rows in increasing token
// position, so the order of the additions (and the bits of dW) depends on ids alone, never on
// scheduling; no float atomics.
//
// Four launches on the device's stream, with scratch from the stream-ordered pool
// (StreamScratch):
//  1. embedding_bwd_keys: key t = ids[t] (a bad id gets the key V, so it sorts after every row
//     and no row reads through it, and its position goes to the report: atomicMin), value t = t;
//  2. cub::DeviceRadixSort::SortPairs over the bits of V: a stable sort, so the tokens of a row
//     come out in increasing position;
//  3. embedding_bwd_starts: start[v] = the first sorted position whose key is >= v (a binary
//     search per v, v = 0..V); its first thread also writes the bad-id report (below);
//  4. embedding_bwd_rows: one warp per (row v, segment of 32 lanes x one 16-byte vector of dy),
//     each lane summing its columns over the row's tokens start[v] .. start[v + 1], four dy rows'
//     loads in flight before their adds (in order), then one rounded store; rows without tokens
//     store zeros (the kernel writes every element of dW, so no memset pass).
// Work is O(T log T + V D + T D); memory: 4 T + 4 (V + 1) words and cub's temporary storage.
//
// Bad ids: reported as the forward embedding reports them (kernels/cuda/embedding.cu): the
// lowest bad position and its id land in a slot of a per-device ring in mapped pinned host
// memory, and a check deferred to the device's next synchronize() (core/deferred_checks.h)
// reads it, so the launch never waits for the device. A launch that would reuse a slot still
// pending synchronises first (once per kReportSlots launches without a synchronize, as in bench).
#include <cub/device/device_radix_sort.cuh>

#include <map>
#include <mutex>

#include "core/deferred_checks.h"
#include "kernels/cuda/cuda_common.cuh"
#include "suites/ops/layout_desc.h"

namespace dnnb::cuda_kernels {
namespace {

inline constexpr unsigned long long kNoBadId = ~0ull;
inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kTokenUnroll = 4;  // dy rows whose loads are in flight before their adds

template <typename Id>
__global__ void __launch_bounds__(kThreads)
    embedding_bwd_keys(const Id* ids, int64_t id_stride, int64_t tokens, int64_t vocab, uint32_t* keys,
                       uint32_t* values, unsigned long long* lowest_bad) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= tokens) return;
  const int64_t id = static_cast<int64_t>(ids[t * id_stride]);
  const bool bad = id < 0 || id >= vocab;
  if (bad) atomicMin(lowest_bad, static_cast<unsigned long long>(t));
  keys[t] = static_cast<uint32_t>(bad ? vocab : id);
  values[t] = static_cast<uint32_t>(t);
}

// start[v] for v in [0, vocab]: the first position of `sorted` (ascending, `tokens` long) whose
// key is >= v. Thread 0 also writes the report: slot[0] the lowest bad position (kNoBadId:
// none), slot[1] its id.
template <typename Id>
__global__ void __launch_bounds__(kThreads)
    embedding_bwd_starts(const uint32_t* sorted, int64_t tokens, int64_t vocab, uint32_t* start,
                         const unsigned long long* lowest_bad, const Id* ids, int64_t id_stride,
                         unsigned long long* slot) {
  const int64_t v = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (v == 0) {
    const unsigned long long bad = *lowest_bad;
    slot[0] = bad;
    if (bad != kNoBadId)
      slot[1] = static_cast<unsigned long long>(static_cast<int64_t>(ids[static_cast<int64_t>(bad) * id_stride]));
  }
  if (v > vocab) return;
  int64_t lo = 0, hi = tokens;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (sorted[mid] < static_cast<uint32_t>(v)) lo = mid + 1;
    else hi = mid;
  }
  start[v] = static_cast<uint32_t>(lo);
}

template <typename T>
struct RowsArgs {
  RowView<const T> dy;
  RowView<T> dw;
  const uint32_t* start;
  const uint32_t* order;  // token positions sorted by id
  int64_t vocab, dim, segs_per_row;
};

// Columns [c, c + n) of dy's row t into x (n <= kVec<T>; the rest 0).
template <typename T>
__device__ __forceinline__ void load_dy(const RowsArgs<T>& a, uint32_t t, int64_t c, int n, float (&x)[kVec<T>]) {
  const T* row = a.dy.row(t);
  if (a.dy.vec && n == kVec<T>) {
    const Vec16<T> v = *reinterpret_cast<const Vec16<T>*>(row + c);
#pragma unroll
    for (int e = 0; e < kVec<T>; ++e) x[e] = element_float(v, e);
  } else {
#pragma unroll
    for (int e = 0; e < kVec<T>; ++e) x[e] = e < n ? to_float(row[(c + e) * a.dy.ri.col_stride]) : 0.f;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) embedding_bwd_rows(RowsArgs<T> a) {
  constexpr int W = kVec<T>;
  const int lane = threadIdx.x & 31;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (item >= a.vocab * a.segs_per_row) return;
  const int64_t v = item / a.segs_per_row;
  const int64_t c = ((item % a.segs_per_row) * 32 + lane) * W;
  if (c >= a.dim) return;
  const int n = a.dim - c < W ? static_cast<int>(a.dim - c) : W;
  const uint32_t first = a.start[v], last = a.start[v + 1];
  float acc[W];
#pragma unroll
  for (int e = 0; e < W; ++e) acc[e] = 0.f;
  uint32_t j = first;
  for (; j + kTokenUnroll <= last; j += kTokenUnroll) {
    float x[kTokenUnroll][W];
#pragma unroll
    for (int u = 0; u < kTokenUnroll; ++u) load_dy(a, a.order[j + u], c, n, x[u]);
#pragma unroll
    for (int u = 0; u < kTokenUnroll; ++u)
#pragma unroll
      for (int e = 0; e < W; ++e) acc[e] += x[u][e];
  }
  for (; j < last; ++j) {
    float x[W];
    load_dy(a, a.order[j], c, n, x);
#pragma unroll
    for (int e = 0; e < W; ++e) acc[e] += x[e];
  }
  T* out = a.dw.row(v);
  if (a.dw.vec && n == W) {
    Vec16<T> o;
#pragma unroll
    for (int e = 0; e < W; ++e) o.v[e] = from_float<T>(acc[e]);
    *reinterpret_cast<Vec16<T>*>(out + c) = o;
  } else {
    for (int e = 0; e < n; ++e) out[(c + e) * a.dw.ri.col_stride] = from_float<T>(acc[e]);
  }
}

// Per device: a ring of kReportSlots two-word slots in mapped pinned host memory.
inline constexpr size_t kReportSlots = 1024;
struct ReportRing {
  unsigned long long* host = nullptr;
  unsigned long long* device = nullptr;
  size_t next = 0;
};
std::mutex& ring_mutex() {
  static std::mutex m;
  return m;
}

// The next slot of the device's ring: {host address, device address}.
Result<std::pair<unsigned long long*, unsigned long long*>> next_report_slot(const CudaDevice& device) {
  static std::map<const CudaDevice*, ReportRing> rings;
  std::lock_guard<std::mutex> lock(ring_mutex());
  ReportRing& ring = rings[&device];
  if (!ring.host) {
    void* p = nullptr;
    DNNB_CUDA_TRY(cudaHostAlloc(&p, kReportSlots * 2 * sizeof(unsigned long long), cudaHostAllocMapped));
    void* dp = nullptr;
    DNNB_CUDA_TRY(cudaHostGetDevicePointer(&dp, p, 0));
    ring.host = static_cast<unsigned long long*>(p);
    ring.device = static_cast<unsigned long long*>(dp);
  }
  const size_t at = 2 * (ring.next++ % kReportSlots);
  return std::make_pair(ring.host + at, ring.device + at);
}

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

template <typename Id, typename T>
Status launch(const CudaDevice& device, const Tensor& ids, const Tensor& dy, const Tensor& dw, int64_t tokens,
              int64_t vocab, int64_t dim, unsigned long long* slot) {
  const cudaStream_t stream = device.stream();
  int end_bit = 1;
  while (end_bit < 32 && (uint64_t{1} << end_bit) <= static_cast<uint64_t>(vocab)) ++end_bit;  // keys <= vocab
  size_t sort_bytes = 0;
  DNNB_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const uint32_t*>(nullptr),
                                                static_cast<uint32_t*>(nullptr), static_cast<const uint32_t*>(nullptr),
                                                static_cast<uint32_t*>(nullptr), static_cast<int>(tokens), 0, end_bit,
                                                stream));
  const size_t words = align256(static_cast<size_t>(tokens) * sizeof(uint32_t));
  const size_t start_bytes = align256(static_cast<size_t>(vocab + 1) * sizeof(uint32_t));
  auto scratch = StreamScratch::allocate(device, 256 + 4 * words + start_bytes + sort_bytes);
  if (!scratch) return scratch.status();
  char* base = scratch->as<char>();
  auto* lowest_bad = reinterpret_cast<unsigned long long*>(base);
  auto* keys = reinterpret_cast<uint32_t*>(base + 256);
  auto* values = reinterpret_cast<uint32_t*>(base + 256 + words);
  auto* sorted_keys = reinterpret_cast<uint32_t*>(base + 256 + 2 * words);
  auto* order = reinterpret_cast<uint32_t*>(base + 256 + 3 * words);
  auto* start = reinterpret_cast<uint32_t*>(base + 256 + 4 * words);
  void* sort_temp = base + 256 + 4 * words + start_bytes;

  const Id* id_data = data_ptr<const Id>(ids);
  const int64_t id_stride = ids.strides[0];
  DNNB_CUDA_TRY(cudaMemsetAsync(lowest_bad, 0xff, sizeof(unsigned long long), stream));
  embedding_bwd_keys<Id><<<static_cast<unsigned>(ceil_div(tokens, kThreads)), kThreads, 0, stream>>>(
      id_data, id_stride, tokens, vocab, keys, values, lowest_bad);
  DNNB_CUDA_CHECK_LAUNCH();
  DNNB_CUDA_TRY(cub::DeviceRadixSort::SortPairs(sort_temp, sort_bytes, keys, sorted_keys, values, order,
                                                static_cast<int>(tokens), 0, end_bit, stream));
  embedding_bwd_starts<Id><<<static_cast<unsigned>(ceil_div(vocab + 1, kThreads)), kThreads, 0, stream>>>(
      sorted_keys, tokens, vocab, start, lowest_bad, id_data, id_stride, slot);
  DNNB_CUDA_CHECK_LAUNCH();

  RowsArgs<T> a;
  auto dy_view = make_row_view<const T>(dy);
  if (!dy_view) return dy_view.status();
  auto dw_view = make_row_view<T>(dw);
  if (!dw_view) return dw_view.status();
  a.dy = *dy_view;
  a.dw = *dw_view;
  a.start = start;
  a.order = order;
  a.vocab = vocab;
  a.dim = dim;
  a.segs_per_row = ceil_div(dim, 32 * kVec<T>);
  const int64_t blocks = ceil_div(vocab * a.segs_per_row, kWarps);
  if (blocks > INT32_MAX) return Status::unsupported("cuda embedding_bwd: dW too large for one launch");
  embedding_bwd_rows<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  DNNB_CUDA_CHECK_LAUNCH();
  return scratch->release();
}

Status run_embedding_bwd(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto d = ops::embedding_bwd_operands(call, "cuda embedding_bwd");
  if (!d) return d.status();
  const Problem& p = call.problem;
  const int64_t tokens = d->tokens, vocab = d->vocab, dim = d->dim;
  const Tensor& ids = call.inputs[0];
  const Tensor& dy = call.inputs[1];
  const Tensor& dw = call.outputs[0];
  DNNB_TRY(expect_tensor(ids, ids.dtype, "ids"));
  DNNB_TRY(expect_tensor(dy, p.dtype, "dy"));
  DNNB_TRY(expect_tensor(dw, p.dtype, "dW"));
  if (tokens >= INT32_MAX || vocab >= INT32_MAX)
    return Status::unsupported("cuda embedding_bwd: its 32-bit sort keys and positions need T and V below 2^31 - 1");
  if (deferred_check_count(**device) >= kReportSlots) DNNB_TRY(call.device.synchronize());
  auto slot = next_report_slot(**device);
  if (!slot) return slot.status();
  const bool ids64 = ids.dtype == DType::i64;
  DNNB_TRY(dispatch_float<false>(p.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    return ids64 ? launch<int64_t, T>(**device, ids, dy, dw, tokens, vocab, dim, slot->second)
                 : launch<int32_t, T>(**device, ids, dy, dw, tokens, vocab, dim, slot->second);
  }));
  defer_until_synchronize(**device, [host = slot->first, vocab]() -> Status {
    if (host[0] == kNoBadId) return Status::ok();
    return Status::bad_input("embedding_bwd: ids[" + std::to_string(host[0]) + "] = " +
                             std::to_string(static_cast<int64_t>(host[1])) + " is outside the table's " +
                             std::to_string(vocab) + " rows");
  });
  return Status::ok();
}

DNNB_REGISTER(register_cuda("embedding_bwd", "", "", {DType::f32, DType::bf16}, run_embedding_bwd));

}  // namespace
}  // namespace dnnb::cuda_kernels
