// CUDA embedding: y[t] = table[ids[t]] (F.embedding), ids i64 or i32 (ids.dt=i32), the table
// and y f32, f16 or bf16, copied bit-exactly as 4- or 2-byte patterns.
//
// Rows of at least kGatherMinRowBytes whose table and y rows are 16-byte aligned with unit
// column stride (a model's embedding: 8 KB bf16 rows at hidden size 4096) go through the
// bulk-copy engine (bulk_copy.cuh): the unit of work is a piece of a token's row of up to
// kGatherPiece bytes, and one thread per block streams its pieces through a ring of
// kGatherStages shared-memory stages: the piece's table bytes in by one `cp.async.bulk` (an
// mbarrier per stage), out to y by another, the stage refilled with the piece kGatherStages
// ahead once the store has read it. No registers hold the data, so each block keeps
// kGatherStages - 1 pieces of loads in flight whatever its occupancy, and the dependent id load
// is off the copy's critical path except in the first pieces. The register kernel holds 2 KB a
// warp for one segment and then waits (DRAM at 75% of peak on the H100, docs/cuda.md).
//
// Other rows: one warp per (token, segment): a segment is 32 lanes x kEmbedUnroll chunks of 16
// bytes (2 KB, a whole row up to 512 f32 / 1024 f16 values), so long rows spread over several
// warps and a single token (decode) still keeps many loads in flight. Each lane reads the token's
// id (one broadcast load per warp), loads its kEmbedUnroll chunks of the table row, then stores
// them: 16-byte accesses when every table row and y row starts 16-byte aligned with unit column
// stride, one access per element otherwise.
//
// An id outside [0, V) is never read through: the kernels skip its row and record the token
// position in a per-device report state (atomicMax of ~0 - position, so the lowest position
// wins; 0 = none). The block of the launch that finishes last (a counter in the same state)
// writes the lowest bad position and its id, or "none", into a slot of a ring in mapped pinned
// host memory and resets the state for the next launch: one kernel per launch, nothing else
// queued. The launch does not wait for any of it: a check deferred to the device's next
// synchronize() (core/deferred_checks.h) reads the slot and returns bad_input naming the first
// bad position and its id, as the reference returns and as torch's device-side assert surfaces
// at its next synchronisation. The ring holds kReportSlots pending reports; a launch that would
// reuse a slot still pending synchronises the device first (once per kReportSlots launches
// without a synchronize, e.g. in bench).
#include <cstdlib>
#include <map>
#include <mutex>

#include "core/deferred_checks.h"
#include "kernels/cuda/bulk_copy.cuh"
#include "kernels/cuda/copy_common.cuh"
#include "suites/ops/layout_desc.h"

namespace dnnb::cuda_kernels {
namespace {

using layout::Chunk;
using layout::FastDivmod;
using layout::kCopyThreads;

inline constexpr int kEmbedUnroll = 4;  // 16-byte chunks per lane per segment
inline constexpr int kEmbedWarps = kCopyThreads / 32;
inline constexpr unsigned long long kNoBadId = ~0ull;

// The bad-id report of the launch in progress (device memory, zero between launches) and where
// its last block writes the outcome: slot[0] the lowest bad position (kNoBadId: none), slot[1]
// that position's id.
struct ReportState {
  unsigned long long lowest;  // ~0 - the lowest bad position seen; 0 = none
  unsigned int blocks_done;
};
struct ReportTarget {
  ReportState* state = nullptr;
  unsigned long long* slot = nullptr;  // mapped pinned host memory, 2 words
  const void* ids = nullptr;
  int64_t id_stride = 1;
};

__device__ __forceinline__ void record_bad_id(ReportState* state, uint32_t token) {
  atomicMax(&state->lowest, ~0ull - token);
}

// Once per block, by one thread, after the block's work: the block that finishes last writes the
// launch's report and resets the state.
template <typename Id>
__device__ void finish_report(const ReportTarget& r) {
  __threadfence();  // this block's record_bad_id before its arrival
  if (atomicAdd(&r.state->blocks_done, 1u) + 1 != gridDim.x) return;
  __threadfence();
  const unsigned long long lowest = atomicExch(&r.state->lowest, 0ull);
  atomicExch(&r.state->blocks_done, 0u);
  if (lowest == 0) {
    r.slot[0] = kNoBadId;
    return;
  }
  const unsigned long long token = ~0ull - lowest;
  r.slot[0] = token;
  r.slot[1] = static_cast<unsigned long long>(
      static_cast<int64_t>(static_cast<const Id*>(r.ids)[static_cast<int64_t>(token) * r.id_stride]));
}

struct EmbeddingArgs {
  const void* ids = nullptr;
  int64_t id_stride = 1;
  const void* table = nullptr;
  int64_t row_stride = 0, col_stride = 1;
  void* y = nullptr;
  int64_t y_row_stride = 0;
  int64_t vocab = 0;
  uint32_t dim = 0;
  FastDivmod segs;  // segments per token
  uint32_t slots = 0;  // tokens * segments
  ReportTarget report;
};

template <typename E, typename Id, bool kVector>
__device__ __forceinline__ void embedding_thread(const EmbeddingArgs& a, uint32_t block, uint32_t thread) {
  constexpr int V = 16 / static_cast<int>(sizeof(E));
  constexpr uint32_t kSegElems = 32 * kEmbedUnroll * V;
  using C = Chunk<E, V>;
  const uint32_t slot = block * kEmbedWarps + thread / 32, lane = thread % 32;
  if (slot >= a.slots) return;
  uint32_t seg;
  const uint32_t token = a.segs.divmod(slot, seg);
  const int64_t id = static_cast<int64_t>(static_cast<const Id*>(a.ids)[static_cast<int64_t>(token) * a.id_stride]);
  if (id < 0 || id >= a.vocab) {
    if (lane == 0 && seg == 0) record_bad_id(a.report.state, token);
    return;
  }
  const E* src = static_cast<const E*>(a.table) + id * a.row_stride;
  E* dst = static_cast<E*>(a.y) + static_cast<int64_t>(token) * a.y_row_stride;
  C buf[kEmbedUnroll];
  uint32_t n[kEmbedUnroll];
DNNB_COPY_UNROLL
  for (int u = 0; u < kEmbedUnroll; ++u) {
    const uint32_t c = seg * kSegElems + (u * 32 + lane) * V;
    n[u] = c >= a.dim ? 0 : a.dim - c < static_cast<uint32_t>(V) ? a.dim - c : V;
    if (kVector && n[u] == V) {
      buf[u] = *reinterpret_cast<const C*>(src + c);
    } else {
DNNB_COPY_UNROLL
      for (int k = 0; k < V; ++k)
        buf[u].v[k] = static_cast<uint32_t>(k) < n[u] ? src[static_cast<int64_t>(c + k) * a.col_stride] : E{0};
    }
  }
DNNB_COPY_UNROLL
  for (int u = 0; u < kEmbedUnroll; ++u) {
    const uint32_t c = seg * kSegElems + (u * 32 + lane) * V;
    if (kVector && n[u] == V) {
      *reinterpret_cast<C*>(dst + c) = buf[u];
    } else {
DNNB_COPY_UNROLL
      for (int k = 0; k < V; ++k)
        if (static_cast<uint32_t>(k) < n[u]) dst[c + k] = buf[u].v[k];
    }
  }
}

template <typename E, typename Id, bool kVector>
__global__ void __launch_bounds__(kCopyThreads) embedding_kernel(EmbeddingArgs a) {
  embedding_thread<E, Id, kVector>(a, blockIdx.x, threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) finish_report<Id>(a.report);
}

inline constexpr uint32_t kGatherPiece = 4096;  // bytes of a row per bulk copy (a ring stage)
inline constexpr int kGatherStages = 4;
inline constexpr int64_t kGatherMinRowBytes = 1024;

struct GatherArgs {
  const void* ids = nullptr;
  int64_t id_stride = 1;
  const char* table = nullptr;
  int64_t table_row_bytes = 0;  // the table's row stride in bytes
  char* y = nullptr;
  int64_t y_row_bytes = 0;  // y's row stride in bytes
  int64_t vocab = 0;
  uint32_t row_bytes = 0;  // bytes of one row's values (a multiple of 16)
  FastDivmod pieces;       // pieces per row
  uint64_t units = 0;      // tokens * pieces
  ReportTarget report;
};

// Block b takes units b, b + gridDim.x, ...; its i-th unit uses stage i % kGatherStages, whose
// mbarrier completes phase i / kGatherStages when the unit's load has landed (or at once, by a
// plain arrival, for a bad id, which is neither loaded nor stored). One thread issues every copy;
// each store is a bulk group of its own (empty for a bad id), so bulk_wait_read<1> after
// committing unit i means unit i - 1's stage may be refilled.
template <typename Id>
__global__ void __launch_bounds__(32) embedding_bulk_kernel(GatherArgs a) {
  __shared__ __align__(128) unsigned char ring[kGatherStages][kGatherPiece];
  __shared__ __align__(8) uint64_t full[kGatherStages];
  if (threadIdx.x != 0) return;
  const uint64_t first = blockIdx.x, stride = gridDim.x;
  const uint64_t count = first < a.units ? (a.units - first + stride - 1) / stride : 0;
  for (int s = 0; s < kGatherStages; ++s) mbar_init(smem_addr(&full[s]), 1);
  fence_mbarrier_init();

  // The unit of iteration i: its token, its piece's byte offset and size, and whether its id is
  // inside the table (src is then the piece's first table byte).
  struct Unit {
    uint32_t token, offset, bytes;
    const char* src;
  };
  const auto unit_of = [&a, first, stride](uint64_t i) {
    uint32_t piece;
    const uint32_t token = a.pieces.divmod(static_cast<uint32_t>(first + i * stride), piece);
    const int64_t id = static_cast<int64_t>(static_cast<const Id*>(a.ids)[static_cast<int64_t>(token) * a.id_stride]);
    Unit u{token, piece * kGatherPiece, 0, nullptr};
    u.bytes = a.row_bytes - u.offset < kGatherPiece ? a.row_bytes - u.offset : kGatherPiece;
    if (id >= 0 && id < a.vocab) u.src = a.table + id * a.table_row_bytes + u.offset;
    return u;
  };
  const auto issue = [&](uint64_t i) {
    if (i >= count) return;
    const int stage = static_cast<int>(i % kGatherStages);
    const uint32_t bar = smem_addr(&full[stage]);
    const Unit u = unit_of(i);
    if (!u.src) {
      if (u.offset == 0) record_bad_id(a.report.state, u.token);
      mbar_arrive(bar);
      return;
    }
    mbar_arrive_expect_tx(bar, u.bytes);
    bulk_load(smem_addr(ring[stage]), u.src, u.bytes, bar);
  };

  for (int s = 0; s < kGatherStages; ++s) issue(s);
  for (uint64_t i = 0; i < count; ++i) {
    const int stage = static_cast<int>(i % kGatherStages);
    mbar_wait(smem_addr(&full[stage]), static_cast<uint32_t>(i / kGatherStages) & 1u);
    const Unit u = unit_of(i);
    if (u.src) bulk_store(a.y + static_cast<int64_t>(u.token) * a.y_row_bytes + u.offset, smem_addr(ring[stage]), u.bytes);
    bulk_commit();
    if (i >= 1) {
      bulk_wait_read<1>();
      issue(i - 1 + kGatherStages);
    }
  }
  bulk_wait<0>();
  finish_report<Id>(a.report);
}

// Per device: the report state (device memory, zeroed once) and the ring of mapped pinned host
// slots the launches' reports land in, allocated at the first launch.
inline constexpr size_t kReportSlots = 1024;
struct ReportRing {
  ReportState* state = nullptr;
  unsigned long long* slots = nullptr;  // kReportSlots x 2 words, host address
  unsigned long long* device_slots = nullptr;  // the same memory, device address
  size_t next = 0;
};
std::mutex& report_mutex() {
  static std::mutex m;
  return m;
}
std::map<const CudaDevice*, ReportRing>& report_rings() {
  static std::map<const CudaDevice*, ReportRing> rings;
  return rings;
}

// DNNB_CUDA_EMBEDDING_BULK=0 sends every row through the register kernel (to compare the two).
bool bulk_gather_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("DNNB_CUDA_EMBEDDING_BULK");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

template <typename E, typename Id>
void launch_embedding(bool vec, uint32_t blocks, cudaStream_t s, const EmbeddingArgs& a) {
  if (vec) {
    embedding_kernel<E, Id, true><<<blocks, kCopyThreads, 0, s>>>(a);
  } else {
    embedding_kernel<E, Id, false><<<blocks, kCopyThreads, 0, s>>>(a);
  }
}

Status run_embedding(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cuda embedding: expected inputs ids, table and output y");
  auto d = ops::embedding_desc(call.problem);
  if (!d) return d.status();
  const Tensor& ids = call.inputs[0];
  const Tensor& table = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (ids.dtype != DType::i64 && ids.dtype != DType::i32)
    return Status::unsupported(std::string("cuda embedding takes i64 or i32 ids, not ") + dtype_name(ids.dtype));
  DNNB_TRY(expect_tensor(ids, ids.dtype, "ids"));
  DNNB_TRY(expect_tensor(table, call.problem.dtype, "table"));
  DNNB_TRY(expect_tensor(y, call.problem.dtype, "y"));
  if (ids.shape != Shape{d->tokens} || table.shape != Shape{d->vocab, d->dim} || y.shape != Shape{d->tokens, d->dim})
    return Status::bad_input("cuda embedding: ids " + ids.describe() + ", table " + table.describe() + ", y " +
                             y.describe() + " do not match " + call.problem.to_string());
  if (y.strides[1] != 1) return Status::unsupported("cuda embedding writes unit-stride rows of y, got " + y.describe());
  if (d->tokens == 0) return Status::ok();

  // The slot this launch reports into: the next of the ring, once no pending check still reads
  // it. The first launch on a device allocates the state and the ring (outside any timing: bench
  // warms up first).
  if (deferred_check_count(**device) >= kReportSlots) DNNB_TRY(call.device.synchronize());
  ReportTarget report;
  unsigned long long* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(report_mutex());
    ReportRing& ring = report_rings()[*device];
    if (!ring.slots) {
      void* state = nullptr;
      DNNB_CUDA_TRY(cudaMalloc(&state, sizeof(ReportState)));
      DNNB_CUDA_TRY(cudaMemset(state, 0, sizeof(ReportState)));
      void* p = nullptr;
      DNNB_CUDA_TRY(cudaHostAlloc(&p, kReportSlots * 2 * sizeof(unsigned long long), cudaHostAllocMapped));
      void* dp = nullptr;
      DNNB_CUDA_TRY(cudaHostGetDevicePointer(&dp, p, 0));
      ring.state = static_cast<ReportState*>(state);
      ring.slots = static_cast<unsigned long long*>(p);
      ring.device_slots = static_cast<unsigned long long*>(dp);
    }
    const size_t at = 2 * (ring.next++ % kReportSlots);
    slot = ring.slots + at;
    report.state = ring.state;
    report.slot = ring.device_slots + at;
  }
  report.ids = data_ptr<char>(ids);
  report.id_stride = ids.strides[0];

  const int esize = static_cast<int>(storage_bytes(table.dtype, 1));
  const int vec_elems = 16 / esize;
  EmbeddingArgs a;
  a.ids = data_ptr<char>(ids);
  a.id_stride = ids.strides[0];
  a.table = data_ptr<char>(table);
  a.row_stride = table.strides[0];
  a.col_stride = table.strides[1];
  a.y = data_ptr<char>(y);
  a.y_row_stride = y.strides[0];
  a.vocab = d->vocab;
  a.dim = static_cast<uint32_t>(d->dim);
  const int64_t seg_elems = int64_t{32} * kEmbedUnroll * vec_elems;
  const int64_t segs = std::max<int64_t>(1, ceil_div(d->dim, seg_elems));  // 1 checks the ids of D = 0
  if (d->dim > UINT32_MAX || d->tokens * segs > UINT32_MAX)
    return Status::unsupported("cuda embedding: " + std::to_string(d->tokens) + " tokens of " + std::to_string(d->dim) +
                               " values exceed its 32-bit indexing");
  a.segs = FastDivmod::of(static_cast<uint32_t>(segs));
  a.slots = static_cast<uint32_t>(d->tokens * segs);
  a.report = report;
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec = aligned(a.table) && aligned(a.y) && a.col_stride == 1 && a.row_stride % vec_elems == 0 &&
                   a.y_row_stride % vec_elems == 0;
  const auto blocks = static_cast<uint32_t>(ceil_div(a.slots, kEmbedWarps));  // >= 1

  const cudaStream_t stream = (*device)->stream();
  const bool ids64 = ids.dtype == DType::i64;
  const int64_t row_bytes = d->dim * esize;
  if (vec && row_bytes >= kGatherMinRowBytes && row_bytes % 16 == 0 && bulk_gather_enabled()) {
    GatherArgs g;
    g.ids = a.ids;
    g.id_stride = a.id_stride;
    g.table = static_cast<const char*>(a.table);
    g.table_row_bytes = a.row_stride * esize;
    g.y = static_cast<char*>(a.y);
    g.y_row_bytes = a.y_row_stride * esize;
    g.vocab = a.vocab;
    g.row_bytes = static_cast<uint32_t>(row_bytes);
    const int64_t pieces = ceil_div(row_bytes, static_cast<int64_t>(kGatherPiece));
    if (d->tokens * pieces > UINT32_MAX)
      return Status::unsupported("cuda embedding: " + std::to_string(d->tokens) + " tokens of " +
                                 std::to_string(pieces) + " pieces exceed its 32-bit indexing");
    g.pieces = FastDivmod::of(static_cast<uint32_t>(pieces));
    g.units = static_cast<uint64_t>(d->tokens * pieces);
    g.report = report;
    auto kernel = ids64 ? embedding_bulk_kernel<int64_t> : embedding_bulk_kernel<int32_t>;
    int per_sm = 0;
    DNNB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32, 0));
    const int64_t grid = std::min<int64_t>(static_cast<int64_t>(g.units),
                                           static_cast<int64_t>(std::max(per_sm, 1)) * (*device)->sm_count());
    kernel<<<static_cast<unsigned>(grid), 32, 0, stream>>>(g);
  } else if (esize == 4) {
    ids64 ? launch_embedding<uint32_t, int64_t>(vec, blocks, stream, a)
          : launch_embedding<uint32_t, int32_t>(vec, blocks, stream, a);
  } else {
    ids64 ? launch_embedding<uint16_t, int64_t>(vec, blocks, stream, a)
          : launch_embedding<uint16_t, int32_t>(vec, blocks, stream, a);
  }
  DNNB_CUDA_CHECK_LAUNCH();
  defer_until_synchronize(**device, [slot, vocab = d->vocab]() -> Status {
    if (slot[0] == kNoBadId) return Status::ok();
    return Status::bad_input("embedding: ids[" + std::to_string(slot[0]) + "] = " +
                             std::to_string(static_cast<int64_t>(slot[1])) + " is outside the table's " +
                             std::to_string(vocab) + " rows");
  });
  return Status::ok();
}

DNNB_REGISTER(register_cuda("embedding", "", "", {DType::f32, DType::f16, DType::bf16}, run_embedding));

}  // namespace
}  // namespace dnnb::cuda_kernels
