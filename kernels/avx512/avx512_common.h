// Shared pieces of the AVX-512 kernels: the target attribute, the three storage formats
// (f32, f16, bf16) as load/store traits, row access with gather/scatter for strided views,
// the CPU check every supports() starts with, and the OpenMP task loops.
//
// Files are compiled for the baseline ISA. Every function that touches a 512-bit register
// carries DNNB_AVX512, so the binary still starts on a CPU without AVX-512 and the kernels
// report SKIP there (avx512_cpu_status). Parallel loops live in plain functions that call
// DNNB_AVX512 functions per task: OpenMP's outlined bodies then never need the target.
#pragma once
// GCC 12's AVX-512 headers build masked results from _mm512_undefined_*(), which
// -W(maybe-)uninitialized reports once inlined (GCC bug 105593): silenced for the header only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/registry.h"
#include "core/status.h"
#include "core/tensor.h"

#define DNNB_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c")))
#define DNNB_AVX512_INLINE DNNB_AVX512 inline __attribute__((always_inline))
// For lambdas that touch 512-bit registers: `[&](int64_t i) DNNB_AVX512_LAMBDA { ... }`.
#define DNNB_AVX512_LAMBDA __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c"), always_inline))

namespace dnnb::avx512 {

// ok when this CPU and OS can run the kernels, else skipped naming what is missing.
Status cpu_status();
// cpu_status, then: the device is host memory and the dtype is one the kernel was built for.
Status common_supports(const Problem& problem, const DeviceRuntime& device,
                       const std::vector<DType>& dtypes);
// True when VCVTNEPS2BF16 may be used (read once; BF16::store checks it per vector).
extern const bool has_native_bf16;

inline __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// K vectors of 16 f32 lanes handled as one value. The vector math (avx512_math.h) is written
// on Vecs<K> one step at a time for all K vectors, so that K independent dependency chains
// sit side by side in program order: a transcendental is a chain of ~15-40 dependent
// 4-cycle operations, and with one vector per step the scheduler fills with uops that wait
// on their predecessor. Elementwise drivers pass K = 2 (32 elements, what one 64-byte line
// of a 16-bit tensor holds), K = 4 for the long transcendentals (kQuads, elementwise.h) and
// K = 1 for masked heads and tails.
template <int K>
struct Vecs {
  __m512 v[K];
};

// ---- Storage formats: 16 lanes in and out of f32 ---------------------------------------
// load2/store2/stream2 move 32 elements as a Vecs<2>: element i is lane i % 16 of v[i / 16].
// load2_any_order: the same 32 elements in a lane order of the format's choosing.

struct F32 {
  using storage = float;
  static constexpr DType dtype = DType::f32;
  DNNB_AVX512_INLINE static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
  DNNB_AVX512_INLINE static __m512 load(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
  DNNB_AVX512_INLINE static Vecs<2> load2(const float* p) { return {{load(p), load(p + 16)}}; }
  DNNB_AVX512_INLINE static Vecs<2> load2_any_order(const float* p) { return load2(p); }
  DNNB_AVX512_INLINE static void store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
  DNNB_AVX512_INLINE static void store(float* p, __m512 v, __mmask16 m) { _mm512_mask_storeu_ps(p, m, v); }
  DNNB_AVX512_INLINE static void store2(float* p, const Vecs<2>& v) {
    store(p, v.v[0]);
    store(p + 16, v.v[1]);
  }
  // 32 elements to a 64-byte aligned p, bypassing the caches (two lines).
  DNNB_AVX512_INLINE static void stream2(float* p, const Vecs<2>& v) {
    _mm512_stream_ps(p, v.v[0]);
    _mm512_stream_ps(p + 16, v.v[1]);
  }
  static float to_float(float v) { return v; }
  static float from_float(float v) { return v; }
};

struct F16 {
  using storage = uint16_t;
  static constexpr DType dtype = DType::f16;
  DNNB_AVX512_INLINE static __m512 load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  DNNB_AVX512_INLINE static __m512 load(const uint16_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
  DNNB_AVX512_INLINE static Vecs<2> load2(const uint16_t* p) { return {{load(p), load(p + 16)}}; }
  DNNB_AVX512_INLINE static Vecs<2> load2_any_order(const uint16_t* p) { return load2(p); }
  // Round to nearest even; overflow to Inf, subnormals kept, NaN stays NaN (as torch).
  DNNB_AVX512_INLINE static __m256i encode(__m512 v) {
    return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  DNNB_AVX512_INLINE static __m512i encode2(const Vecs<2>& v) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(encode(v.v[0])), encode(v.v[1]), 1);
  }
  DNNB_AVX512_INLINE static void store(uint16_t* p, __m512 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), encode(v));
  }
  DNNB_AVX512_INLINE static void store(uint16_t* p, __m512 v, __mmask16 m) {
    _mm256_mask_storeu_epi16(p, m, encode(v));
  }
  DNNB_AVX512_INLINE static void store2(uint16_t* p, const Vecs<2>& v) {
    store(p, v.v[0]);
    store(p + 16, v.v[1]);
  }
  DNNB_AVX512_INLINE static void stream2(uint16_t* p, const Vecs<2>& v) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), encode2(v));
  }
  static float to_float(uint16_t v) { return f16_to_f32(v); }
  static uint16_t from_float(float v) { return f32_to_f16(v); }
};

struct BF16 {
  using storage = uint16_t;
  static constexpr DType dtype = DType::bf16;
  DNNB_AVX512_INLINE static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  DNNB_AVX512_INLINE static __m512 load(const uint16_t* p) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  DNNB_AVX512_INLINE static __m512 load(const uint16_t* p, __mmask16 m) {
    return widen(_mm256_maskz_loadu_epi16(m, p));
  }
  DNNB_AVX512_INLINE static Vecs<2> load2(const uint16_t* p) { return {{load(p), load(p + 16)}}; }
  // The 32 elements in another lane order (even elements in v[0], odd in v[1]), for
  // reductions, where order does not matter: one 64-byte load, a shift and an AND (2 ALU
  // uops for 32 elements, where load2 takes 4: two VPMOVZXWD and two shifts).
  DNNB_AVX512_INLINE static Vecs<2> load2_any_order(const uint16_t* p) {
    const __m512i w = _mm512_loadu_si512(p);
    return {{_mm512_castsi512_ps(_mm512_slli_epi32(w, 16)),
             _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xffff0000u))))}};
  }
  // Integer round-to-nearest-even on the top 16 bits, NaN made quiet: torch's encoder.
  DNNB_AVX512_INLINE static __m256i encode_integer(__m512 v) {
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i bias = _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff));
    __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, bias), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
    rounded = _mm512_mask_mov_epi32(rounded, nan, quiet);
    return _mm512_cvtepi32_epi16(rounded);
  }
  // VCVTNEPS2BF16 rounds to nearest even and quiets NaN like torch, but flushes subnormal
  // inputs to zero (as Intel documents it, and as AMD cores do): those lanes, rare, are
  // redone with the integer encoder so that results match torch bit for bit.
  DNNB_AVX512_INLINE static __m256i encode(__m512 v) {
    if (!has_native_bf16) return encode_integer(v);
    __m256i native = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
    const __mmask16 subnormal = _mm512_fpclass_ps_mask(v, 0x20);
    if (__builtin_expect(subnormal != 0, 0))
      native = _mm256_mask_mov_epi16(native, subnormal, encode_integer(v));
    return native;
  }
  // 32 elements in one VCVTNE2PS2BF16 (one instruction for both halves, in element order),
  // with one subnormal test for both (KORTEST of the two classes); the same results as encode.
  DNNB_AVX512_INLINE static __m512i encode2(const Vecs<2>& v) {
    if (has_native_bf16) {
      const __mmask16 sub0 = _mm512_fpclass_ps_mask(v.v[0], 0x20), sub1 = _mm512_fpclass_ps_mask(v.v[1], 0x20);
      if (__builtin_expect(_kortestz_mask16_u8(sub0, sub1), 1))
        return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(v.v[1], v.v[0]));
    }
    return _mm512_inserti64x4(_mm512_castsi256_si512(encode(v.v[0])), encode(v.v[1]), 1);
  }
  DNNB_AVX512_INLINE static void store(uint16_t* p, __m512 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), encode(v));
  }
  DNNB_AVX512_INLINE static void store(uint16_t* p, __m512 v, __mmask16 m) {
    _mm256_mask_storeu_epi16(p, m, encode(v));
  }
  DNNB_AVX512_INLINE static void store2(uint16_t* p, const Vecs<2>& v) {
    _mm512_storeu_si512(p, encode2(v));
  }
  DNNB_AVX512_INLINE static void stream2(uint16_t* p, const Vecs<2>& v) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), encode2(v));
  }
  static float to_float(uint16_t v) { return bf16_to_f32(v); }
  static uint16_t from_float(float v) { return f32_to_bf16(v); }
};

// Calls f(F32{}), f(F16{}) or f(BF16{}) for the dtype: one instantiation per format.
template <class F>
Status with_format(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f(F32{});
    case DType::f16: return f(F16{});
    case DType::bf16: return f(BF16{});
    default: return Status::unsupported(std::string("avx512: no kernel for dtype ") + dtype_name(dtype));
  }
}

// ---- Writing a span: regular or non-temporal stores -----------------------------------

// True when an op that reads `input_bytes` and writes `output_bytes` should write its output
// with non-temporal stores: when inputs and output together (the op's footprint) are at
// least the last-level cache's size (cpu_description(), 32 MiB when unknown). At that point
// the read-for-ownership that every regular store costs (output_bytes of extra reads) is at
// least what regular stores could leave in the cache for the consumer (about LLC x output /
// footprint bytes, the output's share of the lines still cached at the end), so streaming
// wins; below it everything stays cached and regular stores win. The output alone is not
// the measure: with a 300 MiB LLC a 16384 x 8192 16-bit output (256 MiB) is under the LLC,
// but an add's 768 MiB footprint has evicted its first lines long before anyone reads them.
// DNNB_AVX512_STREAM_MIN_BYTES=N replaces the LLC size (0: always).
bool stream_output(int64_t output_bytes, int64_t input_bytes);

// Bytes of t's elements: what an op reads of an input, however it is broadcast.
inline int64_t tensor_bytes(const Tensor& t) { return static_cast<int64_t>(storage_bytes(t.dtype, t.numel())); }

// Writes y[0, n): gen2(i) returns the 32 values of columns [i, i + 32) as a Vecs<2>,
// gen(i, m) the 16 values of columns [i, i + 16) (lanes outside mask m are ignored) for
// heads and tails. Regular stores when !stream; otherwise masked regular stores up to the
// first 64-byte boundary, 64-byte non-temporal stores (32 elements per step) after it, and a
// masked tail: every element is written once and nothing outside y[0, n). The caller fences
// (parallel_tasks ends each thread with SFENCE). Each column is generated exactly once, in
// increasing order.
// gen4(i), when given, returns the 64 values of columns [i, i + 64) as a Vecs<4> and takes
// the body of the span 64 columns per step (elementwise ops with kQuads, elementwise.h).
template <class Fmt, class Gen, class Gen2, class Gen4 = std::nullptr_t>
DNNB_AVX512_INLINE void write_span_pairs(typename Fmt::storage* y, int64_t n, bool stream, const Gen& gen,
                                         const Gen2& gen2, const Gen4& gen4 = nullptr) {
  using T = typename Fmt::storage;
  constexpr bool kQuads = !std::is_same_v<Gen4, std::nullptr_t>;
  auto halves = [](const auto& q, int h) DNNB_AVX512_LAMBDA { return Vecs<2>{{q.v[2 * h], q.v[2 * h + 1]}}; };
  int64_t i = 0;
  if (stream && reinterpret_cast<uintptr_t>(y) % sizeof(T) == 0) {
    const int64_t misaligned = static_cast<int64_t>((reinterpret_cast<uintptr_t>(y) % 64) / sizeof(T));
    int64_t head = misaligned == 0 ? 0 : static_cast<int64_t>(64 / sizeof(T)) - misaligned;
    head = std::min(head, n);
    for (; i < head; i += 16) {
      const int64_t k = std::min<int64_t>(16, head - i);
      const __mmask16 m = tail_mask(k);
      Fmt::store(y + i, gen(i, m), m);
    }
    i = head;
    if constexpr (kQuads) {
      for (; i + 64 <= n; i += 64) {
        const auto q = gen4(i);
        Fmt::stream2(y + i, halves(q, 0));
        Fmt::stream2(y + i + 32, halves(q, 1));
      }
    }
    for (; i + 32 <= n; i += 32) Fmt::stream2(y + i, gen2(i));
  }
  if constexpr (kQuads) {
    for (; i + 64 <= n; i += 64) {
      const auto q = gen4(i);
      Fmt::store2(y + i, halves(q, 0));
      Fmt::store2(y + i + 32, halves(q, 1));
    }
  }
  for (; i + 32 <= n; i += 32) Fmt::store2(y + i, gen2(i));
  for (; i + 16 <= n; i += 16) Fmt::store(y + i, gen(i, 0xffff));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    Fmt::store(y + i, gen(i, m), m);
  }
}

// write_span_pairs for a single-vector generator gen(i, m).
template <class Fmt, class Gen>
DNNB_AVX512_INLINE void write_span_values(typename Fmt::storage* y, int64_t n, bool stream, const Gen& gen) {
  write_span_pairs<Fmt>(y, n, stream, gen, [&](int64_t i) DNNB_AVX512_LAMBDA {
    const __m512 v0 = gen(i, 0xffff);
    return Vecs<2>{{v0, gen(i + 16, 0xffff)}};
  });
}

// ---- Prefetching the next row -----------------------------------------------------------

// Row kernels read a row from DRAM once, then work on it in cache (exponentials, the write
// pass). During that work the core issues no DRAM reads: the hardware prefetchers follow
// demand misses only, so a core's share of the bandwidth sits idle for most of each row.
// NextRow spreads software prefetches (into L2) of the row this thread takes next over a
// pass with other work (64 columns per step, or pieces of a write pass: write_prefetching),
// so the next row's first pass finds it in L2 and the DRAM stream stays busy.
// DNNB_AVX512_PREFETCH picks where (to time either choice on a given machine): 0 nowhere; 1
// (the default) in the row ops that work on a row in cache (softmax, layernorm, rmsnorm,
// cross_entropy, cross_entropy_bwd); 2 also in the single-pass reductions (sum, mean, max,
// norm2). Those have no compute phase to hide it behind, so there it only adds a second read
// stream per core, which is no faster where timed: opt-in.
extern const int prefetch_level;
// Bytes the single-pass reductions prefetch ahead of their read stream (Ahead, below), by the
// input's element size: DNNB_AVX512_PREFETCH_AHEAD=N sets both (0: off); 0 also when
// DNNB_AVX512_PREFETCH=0. 1 KiB for 16-bit inputs: the hardware streamer restarts at every
// 4 KiB page, and a 16-bit reduction is fast enough per byte to wait at each restart, so the
// prefetch makes all four faster on a many-core Xeon (docs/avx512.md). Off for f32, where it
// makes some of them faster and sum slower.
extern const int64_t prefetch_ahead_bytes_16bit;
extern const int64_t prefetch_ahead_bytes_32bit;
constexpr int64_t kDefaultPrefetchAhead16bit = 1024;
constexpr int64_t kDefaultPrefetchAhead32bit = 0;
inline int64_t reduce_ahead_bytes(size_t element_size) {
  return element_size == 2 ? prefetch_ahead_bytes_16bit : prefetch_ahead_bytes_32bit;
}
// The same for the elementwise ops' unit-stride inputs (elementwise.h):
// DNNB_AVX512_ELTWISE_AHEAD=N (0: off); 0 also when DNNB_AVX512_PREFETCH=0. 4 KiB by default:
// while a core computes a vector it issues no new misses, so without a prefetch the
// transcendental ops leave the core's share of DRAM bandwidth idle. 4 KiB gains more than
// 1 KiB for exp, sigmoid and gelu on a many-core Xeon and costs add nothing (docs/avx512.md).
extern const int64_t eltwise_ahead_bytes;
constexpr int64_t kDefaultEltwiseAhead = 4096;

struct NextRow {
  const char* base[2] = {nullptr, nullptr};  // the first `count` are set: up to two tensors' rows
  int count = 0;
  int64_t col_bytes = 0;                     // bytes per column (the same for both)

  bool empty() const { return count == 0; }
  // Prefetches columns [c0, c0 + cols) of the next row (whole 64-byte lines from there on).
  DNNB_AVX512_INLINE void fetch(int64_t c0, int64_t cols) const {
    for (int k = 0; k < count; ++k) {
      const char* p = base[k] + c0 * col_bytes;
      for (int64_t off = 0; off < cols * col_bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
    }
  }
};

// Runs write(c0, n) over columns [0, cols) in pieces, prefetching the same columns of `next`
// before each piece: for write passes, which go 16 columns at a time, where a check per
// vector costs ~8% on rows in cache, and where prefetching a whole row at once would only
// queue up behind the core's miss buffers. Pieces of 1024 columns keep 64-byte alignment.
template <class Write>
DNNB_AVX512 void write_prefetching(int64_t cols, const NextRow& next, Write&& write) {
  if (next.empty()) {
    write(int64_t{0}, cols);
    return;
  }
  constexpr int64_t kPiece = 1024;
  for (int64_t c = 0; c < cols; c += kPiece) {
    const int64_t n = std::min(kPiece, cols - c);
    next.fetch(c, n);
    write(c, n);
  }
}

// Forward declaration: NextRow for a HostRows is built below, after HostRows.
struct HostRows;
// NextRow of row r + 1 of t (and of `second`), or none when prefetch_level < min_level.
NextRow next_row_of(const HostRows& t, int64_t r, const HostRows* second = nullptr, int min_level = 1);

// ---- Rows of a host tensor ---------------------------------------------------------------

// One tensor as kernels address it: element (r, c) is at data + row_offset(r) + c*col_stride.
struct HostRows {
  char* data = nullptr;   // element 0 of the view (offset applied)
  RowIndex index;
  size_t element_size = 0;

  int64_t rows() const { return index.rows; }
  int64_t cols() const { return index.cols; }
  int64_t col_stride() const { return index.col_stride; }
  template <class T>
  T* row(int64_t r) const {
    return reinterpret_cast<T*>(data) + index.row_offset(r);
  }
};

// ---- Prefetching ahead of a read stream --------------------------------------------------

// Software prefetch `bytes` in front of a read stream (into L1, each line once), for kernels
// that stream through a span: the single-pass reductions (reduce.cpp) and the elementwise ops
// (elementwise.h). A core's read rate is the number of misses it keeps in flight. The hardware
// streamer stops at every 4 KiB page and restarts only after demand misses in the next one (a
// 16-bit row of 8192 is 4 pages), and a core that is computing issues no demand misses at all;
// a prefetch far enough ahead crosses into the next page before the loads get there.
// `limit`: prefetch only below p + limit elements (the span, or further when what follows it
// in memory is what the thread reads next), so padded or gathered rows never prefetch bytes
// nobody reads.
struct Ahead {
  int64_t bytes = 0;  // 0: off
  int64_t limit = 0;  // in elements from p
};

// The prefetches of step i (columns [i, i + cols)) that lie below the limit.
// Offsets are compared, never pointers past the span.
template <class T>
DNNB_AVX512_INLINE void fetch_ahead(const T* p, int64_t i, const Ahead& ahead, int64_t cols = 64) {
  constexpr int64_t size = static_cast<int64_t>(sizeof(T));
  const int64_t first = i * size + ahead.bytes, end = std::min(first + cols * size, ahead.limit * size);
  for (int64_t off = first; off < end; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p) + off, _MM_HINT_T0);
}

// Ahead for columns [c0, c0 + n) of row r of t, `bytes` ahead (0: off): the limit runs to the
// end of the row, and on to the end of row r + 1 when that follows in memory (rows go to
// threads in contiguous blocks, so it is what this thread reads next but at the end of its
// block); never past `bytes`. Off for a strided row, which is gathered into scratch.
Ahead ahead_of(const HostRows& t, int64_t r, int64_t c0, int64_t n, int64_t bytes);

// stream_output for an output addressed as rows, which every kernel asks once per call:
// only a unit-stride output streams (a strided one is scattered from scratch, regular stores).
bool stream_rows(const HostRows& out, int64_t input_bytes);

// Rows of `t` (a host tensor); unsupported if row_index cannot describe it.
Result<HostRows> host_rows(const Tensor& t);
// Rows of `t` broadcast to `shape` (stride 0 where repeated).
Result<HostRows> host_rows_broadcast(const Tensor& t, const Shape& shape);
// Every element of `t` as its own row (row(r)[0] is element r in row-major order): for
// per-row outputs of reductions and for 1-D index tensors.
Result<HostRows> host_elements(const Tensor& t);

// A per-thread scratch area; `slot` separates buffers used at the same time.
template <class T>
T* scratch(int slot, int64_t count) {
  thread_local std::vector<char> buffers[4];
  std::vector<char>& b = buffers[slot];
  const size_t bytes = static_cast<size_t>(count) * sizeof(T) + 64;
  if (b.size() < bytes) b.resize(bytes);
  return reinterpret_cast<T*>(b.data());
}

// Columns [c0, c0 + n) of row r as a contiguous array: the tensor itself when its columns
// are unit-stride, else a gather into scratch `slot` (non-contiguous and broadcast views).
template <class T>
const T* read_span(const HostRows& t, int64_t r, int64_t c0, int64_t n, int slot) {
  const T* p = t.row<const T>(r) + c0 * t.col_stride();
  if (t.col_stride() == 1) return p;
  T* s = scratch<T>(slot, n);
  const int64_t stride = t.col_stride();
  for (int64_t i = 0; i < n; ++i) s[i] = p[i * stride];
  return s;
}

// Where to write columns [c0, c0 + n) of row r; commit_span() scatters when that was scratch.
template <class T>
T* write_span(const HostRows& t, int64_t r, int64_t c0, int64_t n, int slot) {
  if (t.col_stride() == 1) return t.row<T>(r) + c0;
  return scratch<T>(slot, n);
}
template <class T>
void commit_span(const HostRows& t, int64_t r, int64_t c0, int64_t n, const T* written) {
  if (t.col_stride() == 1) return;
  T* p = t.row<T>(r) + c0 * t.col_stride();
  for (int64_t i = 0; i < n; ++i) p[i * t.col_stride()] = written[i];
}

// ---- Threads -----------------------------------------------------------------------------

// Below this many elements a kernel runs on the calling thread: waking the team costs more.
constexpr int64_t kMinParallelElements = 32 * 1024;

int max_threads();
// f(task) for task in [0, tasks), over OpenMP threads when total_elements is large enough.
// Contiguous blocks of tasks per thread (schedule static); every thread ends with SFENCE so
// that non-temporal stores (write_span_values) are ordered before the join.
void parallel_tasks(int64_t tasks, int64_t total_elements, const std::function<void(int64_t)>& f);

// How a row-wise kernel cuts rows x cols into tasks: whole rows when there are enough rows
// for every thread, otherwise each row in `chunks` column ranges of `chunk_cols` (a multiple
// of 16) so that one long row still uses every core.
struct RowChunks {
  int64_t rows = 0, cols = 0, chunks = 1, chunk_cols = 0;
  int64_t begin(int64_t chunk) const { return chunk * chunk_cols; }
  int64_t size(int64_t chunk) const { return std::min(cols, begin(chunk) + chunk_cols) - begin(chunk); }
};
RowChunks plan_row_chunks(int64_t rows, int64_t cols);

// A row reduction followed by a per-chunk finish: partial(r, c0, n) -> Stats for a column
// range, merge(a, b) combines two (in column order, so results do not depend on timing),
// finish(r, c0, n, total) runs once per chunk with the whole row's Stats (write passes).
template <class Stats, class Partial, class Merge, class Finish>
void for_each_row(int64_t rows, int64_t cols, Partial&& partial, Merge&& merge, Finish&& finish) {
  const RowChunks plan = plan_row_chunks(rows, cols);
  const int64_t total = rows * std::max<int64_t>(cols, 1);
  if (plan.chunks == 1) {
    parallel_tasks(rows, total, [&](int64_t r) { finish(r, 0, cols, partial(r, 0, cols)); });
    return;
  }
  std::vector<Stats> parts(static_cast<size_t>(rows * plan.chunks));
  parallel_tasks(rows * plan.chunks, total, [&](int64_t t) {
    const int64_t c = t % plan.chunks;
    parts[t] = partial(t / plan.chunks, plan.begin(c), plan.size(c));
  });
  for (int64_t r = 0; r < rows; ++r) {
    Stats& whole = parts[r * plan.chunks];
    for (int64_t c = 1; c < plan.chunks; ++c) whole = merge(whole, parts[r * plan.chunks + c]);
  }
  parallel_tasks(rows * plan.chunks, total, [&](int64_t t) {
    const int64_t r = t / plan.chunks, c = t % plan.chunks;
    finish(r, plan.begin(c), plan.size(c), parts[r * plan.chunks]);
  });
}

// Registration helper: an Implementation of backend "avx512". variant "" is the op's default;
// an alternative names its variant and says in `when` (one sentence, Implementation::when)
// when a user would choose it. An alternative without `when`, or a default with one, is not
// registered (false, with a message on stderr). `compute_unit_for` names the ceiling per problem
// when it is not f32_fma (Implementation::compute_unit_for).
bool register_kernel(const std::string& op, std::vector<DType> dtypes,
                     std::function<Status(const Problem&, const DeviceRuntime&)> supports,
                     std::function<Status(OpCall&)> run, std::string variant = "", std::string when = "",
                     std::function<std::string(const Problem&, const DeviceRuntime&)> compute_unit_for = {});

}  // namespace dnnb::avx512
