#include "kernels/avx512/avx512_common.h"

#include <cstdio>
#include <cstdlib>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "devices/cpu/cpu_features.h"

namespace dnnb::avx512 {

const bool has_native_bf16 = cpu_features().avx512_bf16_usable();

const int prefetch_level = [] {
  const char* env = std::getenv("DNNB_AVX512_PREFETCH");
  return env == nullptr || *env == '\0' ? 1 : static_cast<int>(std::strtol(env, nullptr, 10));
}();

namespace {
// A prefetch distance from the environment variable `name` (bytes, rounded down to whole
// lines), `fallback` when unset; 0 when DNNB_AVX512_PREFETCH=0 turns prefetching off.
int64_t ahead_from_env(const char* name, int64_t fallback) {
  const char* env = std::getenv(name);
  const int64_t bytes = env == nullptr || *env == '\0' ? fallback : std::strtoll(env, nullptr, 10);
  return prefetch_level == 0 ? 0 : std::max<int64_t>(bytes, 0) / 64 * 64;
}
}  // namespace

const int64_t prefetch_ahead_bytes_16bit = ahead_from_env("DNNB_AVX512_PREFETCH_AHEAD", kDefaultPrefetchAhead16bit);
const int64_t prefetch_ahead_bytes_32bit = ahead_from_env("DNNB_AVX512_PREFETCH_AHEAD", kDefaultPrefetchAhead32bit);
const int64_t eltwise_ahead_bytes = ahead_from_env("DNNB_AVX512_ELTWISE_AHEAD", kDefaultEltwiseAhead);

Ahead ahead_of(const HostRows& t, int64_t r, int64_t c0, int64_t n, int64_t bytes) {
  Ahead ahead;
  if (bytes <= 0 || t.col_stride() != 1 || t.element_size == 0) return ahead;
  const int64_t elements = bytes / static_cast<int64_t>(t.element_size);
  // The rest of row r, and row r + 1 when it starts where row r ends (only that one: rows
  // further on need not follow, and the last row's end is the tensor's end).
  int64_t room = t.cols() - (c0 + n);
  if (r + 1 < t.rows() && t.index.row_offset(r + 1) == t.index.row_offset(r) + t.cols()) room += t.cols();
  ahead.bytes = bytes;
  ahead.limit = n + std::min(elements, std::max<int64_t>(room, 0));
  return ahead;
}

// Row r + 1 of t (and of `second`, e.g. a softmax mask), when prefetching is on, the row
// exists and its columns are unit-stride (a gathered row is read through scratch instead).
// Rows are given to threads in contiguous blocks (parallel_tasks), so r + 1 is the row this
// thread runs next except at the end of its block.
NextRow next_row_of(const HostRows& t, int64_t r, const HostRows* second, int min_level) {
  NextRow next;
  if (prefetch_level < min_level || r + 1 >= t.rows()) return next;
  next.col_bytes = static_cast<int64_t>(t.element_size);
  if (t.col_stride() == 1) next.base[next.count++] = t.data + t.index.row_offset(r + 1) * next.col_bytes;
  if (second != nullptr && second->col_stride() == 1 && second->element_size == t.element_size &&
      second->index.row_offset(r + 1) != second->index.row_offset(r))
    next.base[next.count++] = second->data + second->index.row_offset(r + 1) * next.col_bytes;
  return next;
}

Status cpu_status() {
  const CpuFeatures& f = cpu_features();
  std::string missing;
  auto need = [&](bool have, const char* name) {
    if (have) return;
    if (!missing.empty()) missing += '/';
    missing += name;
  };
  need(f.avx512f, "avx512f");
  need(f.avx512bw, "avx512bw");
  need(f.avx512vl, "avx512vl");
  need(f.avx512dq, "avx512dq");
  need(f.fma, "fma");
  need(f.f16c, "f16c");
  if (!missing.empty()) return Status::skipped("cpu lacks " + missing);
  if (!f.os_avx512) return Status::skipped("the OS does not save AVX-512 register state (XCR0)");
  return Status::ok();
}

Status common_supports(const Problem& problem, const DeviceRuntime& device,
                       const std::vector<DType>& dtypes) {
  DNNB_TRY(cpu_status());
  if (!device.host_accessible())
    return Status::unsupported("avx512 kernels run on host memory, not on " + device.info().id);
  if (std::find(dtypes.begin(), dtypes.end(), problem.dtype) == dtypes.end())
    return Status::unsupported(std::string("avx512 ") + problem.op + " has no " +
                               dtype_name(problem.dtype) + " kernel");
  return Status::ok();
}

namespace {
Result<HostRows> rows_of(const Tensor& t) {
  void* data = t.host_data();
  if (data == nullptr) return Status::bad_input("avx512: tensor " + t.describe() + " is not in host memory");
  auto index = row_index(t);
  if (!index) return index.status();
  HostRows h;
  h.data = static_cast<char*>(data);
  h.index = *index;
  h.index.offset = 0;  // data already points at the view's element 0
  h.element_size = dtype_size(t.dtype);
  return h;
}
}  // namespace

Result<HostRows> host_rows(const Tensor& t) { return rows_of(t); }

Result<HostRows> host_rows_broadcast(const Tensor& t, const Shape& shape) {
  auto view = t.broadcast_to(shape);
  if (!view) return view.status();
  return rows_of(*view);
}

Result<HostRows> host_elements(const Tensor& t) {
  Tensor column = t;
  column.shape.push_back(1);
  column.strides.push_back(1);
  return rows_of(column);
}

int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void parallel_tasks(int64_t tasks, int64_t total_elements, const std::function<void(int64_t)>& f) {
  const bool parallel = tasks > 1 && total_elements >= kMinParallelElements && max_threads() > 1;
  if (!parallel) {
    for (int64_t t = 0; t < tasks; ++t) f(t);
    _mm_sfence();
    return;
  }
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (int64_t t = 0; t < tasks; ++t) f(t);
    _mm_sfence();  // this thread's non-temporal stores, before the region's closing barrier
  }
}

namespace {
int64_t last_level_cache_bytes() {
  long long llc = 0;
  int level = 0;
  for (const CpuCache& c : cpu_description().caches) {
    if (c.type == "instruction") continue;
    if (c.level > level || (c.level == level && c.size_bytes > llc)) {
      level = c.level;
      llc = c.size_bytes;
    }
  }
  return llc > 0 ? llc : 32ll << 20;
}

// DNNB_AVX512_STREAM_MIN_BYTES overrides the threshold on the footprint (0: always stream),
// so that `check` can exercise the non-temporal path on its small cases.
int64_t stream_threshold() {
  if (const char* env = std::getenv("DNNB_AVX512_STREAM_MIN_BYTES"); env != nullptr && *env != '\0')
    return std::strtoll(env, nullptr, 10);
  return last_level_cache_bytes();
}
}  // namespace

bool stream_output(int64_t output_bytes, int64_t input_bytes) {
  static const int64_t threshold = stream_threshold();
  return output_bytes + input_bytes >= threshold;
}

bool stream_rows(const HostRows& out, int64_t input_bytes) {
  const int64_t output_bytes = out.rows() * out.cols() * static_cast<int64_t>(out.element_size);
  return out.col_stride() == 1 && stream_output(output_bytes, input_bytes);
}

RowChunks plan_row_chunks(int64_t rows, int64_t cols) {
  RowChunks plan;
  plan.rows = rows;
  plan.cols = cols;
  plan.chunk_cols = cols;
  const int64_t threads = max_threads();
  // Split only when rows alone leave threads idle and each piece is still worth a task.
  constexpr int64_t kMinChunkCols = 8 * 1024;
  if (rows >= threads || cols < 2 * kMinChunkCols || rows * cols < kMinParallelElements) return plan;
  int64_t chunks = std::min((threads + rows - 1) / rows, cols / kMinChunkCols);
  int64_t chunk_cols = (cols + chunks - 1) / chunks;
  chunk_cols = (chunk_cols + 15) / 16 * 16;
  plan.chunk_cols = chunk_cols;
  plan.chunks = (cols + chunk_cols - 1) / chunk_cols;
  return plan;
}

bool register_kernel(const std::string& op, std::vector<DType> dtypes,
                     std::function<Status(const Problem&, const DeviceRuntime&)> supports,
                     std::function<Status(OpCall&)> run, std::string variant, std::string when,
                     std::function<std::string(const Problem&, const DeviceRuntime&)> compute_unit_for) {
  if (variant.empty() != when.empty()) {
    std::fprintf(stderr, "dnnblocks: avx512 %s%s%s: %s\n", op.c_str(), variant.empty() ? "" : "/", variant.c_str(),
                 variant.empty() ? "a default carries no `when` sentence" : "an alternative needs its `when` sentence");
    return false;
  }
  Implementation impl;
  impl.op = op;
  impl.backend = "avx512";
  impl.variant = std::move(variant);
  impl.when = std::move(when);
  impl.dtypes = dtypes;
  impl.supports = [dtypes, supports = std::move(supports)](const Problem& p, const DeviceRuntime& d) {
    DNNB_TRY(common_supports(p, d, dtypes));
    return supports ? supports(p, d) : Status::ok();
  };
  impl.run = std::move(run);
  impl.compute_unit_for = std::move(compute_unit_for);
  return Registry::instance().add_implementation(std::move(impl));
}

}  // namespace dnnb::avx512
