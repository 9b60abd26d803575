// Measured ceilings of cpu:0 (core/ceilings.h, docs/roofline.md): DRAM copy and read streams
// over buffers far larger than the last-level cache, a read stream that stays in each core's
// L2, and the throughput of the vector units (AVX-512 FMA, AVX512_FP16 FMA, AVX512_BF16 dot
// products, AMX bf16 tiles). One thread per CPU this process may run on, each pinned to its
// CPU and released together (std::barrier); a sample runs from the first thread's start to
// the last one's end on the host steady clock, and samples in which another process took a
// thread's CPU are dropped (docs/roofline.md, "Disturbance").
//
// The file is compiled for the baseline ISA; functions that use wider instructions carry a
// target attribute (as kernels/avx512 does) and run only when cpu_features() says the CPU
// and the OS allow them.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized once inlined (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#define DNNB_CEIL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define DNNB_CEIL_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))
#define DNNB_CEIL_AVX512_FP16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512fp16,fma")))
#define DNNB_CEIL_AMX __attribute__((target("amx-tile,amx-bf16")))
#endif

#include "core/ceilings.h"
#include "core/host_device.h"
#include "core/registry.h"
#include "devices/cpu/amx_tiles.h"
#include "devices/cpu/cpu_features.h"

namespace dnnb {

namespace {

using Clock = std::chrono::steady_clock;

double thread_cpu_seconds() {
  timespec ts{};
  // NaN on failure: the share check below then ignores the repetition's CPU time.
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return std::nan("");
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Plan {
  int warmups;
  int samples;
  double sample_s;  // target length of one compute sample
};
Plan plan_for(const ProbeOptions& options) { return options.quick ? Plan{1, 7, 0.01} : Plan{3, 30, 0.05}; }

std::string format_mib(size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }
std::string format_kib(size_t bytes) { return std::to_string(bytes >> 10) + " KiB"; }

// ---- A team of pinned threads ---------------------------------------------------------

class PinnedTeam {
 public:
  PinnedTeam() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &allowed)) cpus_.push_back(cpu);
    } else {
      pin_note_ = std::string("sched_getaffinity failed (") + std::strerror(errno) + "): threads unpinned";
    }
    if (cpus_.empty()) cpus_.assign(std::max(1u, std::thread::hardware_concurrency()), -1);
  }
  int size() const { return static_cast<int>(cpus_.size()); }
  // "2 threads pinned", plus why pinning failed when it did.
  std::string describe() const {
    std::string text = std::to_string(size()) + (size() == 1 ? " thread" : " threads");
    if (!pin_note_.empty()) return text + " (" + pin_note_ + ")";
    return text + (cpus_.front() >= 0 ? " pinned" : " unpinned");
  }

  // Runs body(thread) on every thread, `reps` times in step. Threads read the clock
  // themselves: a waiting thread that is descheduled (2 CPUs, 2 busy threads) would otherwise
  // read it late. Each also reads its CPU time, which shows when another process took its CPU.
  struct Repetition {
    double seconds = 0;    // first thread's start to last thread's end
    double cpu_share = 1;  // least CPU time / wall time of any thread: < 1 when one was preempted
    double busiest_cpu_seconds = 0;  // the most CPU time any thread spent
  };
  Result<std::vector<Repetition>> run(int reps, const std::function<void(int thread)>& body) {
    const int n = size();
    std::barrier sync(n);
    std::atomic<bool> abort{false};
    std::atomic<int> pin_error{0};
    std::vector<Clock::time_point> starts(static_cast<size_t>(n) * reps), ends(starts.size());
    std::vector<double> cpu_seconds(starts.size());
    auto worker = [&](int t) {
      if (cpus_[t] >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus_[t], &one);
        if (int err = pthread_setaffinity_np(pthread_self(), sizeof one, &one); err != 0) pin_error = err;
      }
      for (int rep = 0; rep < reps; ++rep) {
        sync.arrive_and_wait();
        if (abort.load()) return;
        const size_t at = static_cast<size_t>(rep) * n + t;
        const double cpu0 = thread_cpu_seconds();
        starts[at] = Clock::now();
        body(t);
        ends[at] = Clock::now();
        cpu_seconds[at] = thread_cpu_seconds() - cpu0;
      }
    };
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (int t = 0; t < n; ++t) {
      try {
        threads.emplace_back(worker, t);
      } catch (const std::exception& e) {
        // Release the threads already started: the missing ones drop out of the barrier,
        // the started ones see `abort` once the first phase completes.
        abort = true;
        for (int missing = t; missing < n; ++missing) sync.arrive_and_drop();
        for (auto& th : threads) th.join();
        return Status::error(std::string("cannot start probe thread: ") + e.what());
      }
    }
    for (auto& th : threads) th.join();
    if (pin_error != 0 && pin_note_.empty())
      pin_note_ = std::string("pthread_setaffinity_np failed (") + std::strerror(pin_error) + "): threads unpinned";
    std::vector<Repetition> out;
    for (int rep = 0; rep < reps; ++rep) {
      const size_t first = static_cast<size_t>(rep) * n;
      Repetition r;
      r.seconds = std::chrono::duration<double>(*std::max_element(ends.begin() + first, ends.begin() + first + n) -
                                                *std::min_element(starts.begin() + first, starts.begin() + first + n))
                      .count();
      for (size_t at = first; at < first + n; ++at) {
        const double wall = std::chrono::duration<double>(ends[at] - starts[at]).count();
        if (wall > 0) r.cpu_share = std::min(r.cpu_share, cpu_seconds[at] / wall);
        r.busiest_cpu_seconds = std::max(r.busiest_cpu_seconds, cpu_seconds[at]);
      }
      out.push_back(r);
    }
    return out;
  }

 private:
  std::vector<int> cpus_;  // -1: run unpinned
  std::string pin_note_;
};

// A repetition in which a thread got less than this share of its CPU was disturbed by other
// work on the machine: it measures the scheduler, not the hardware.
constexpr double kUndisturbedCpuShare = 0.95;

struct Samples {
  std::vector<double> rates;
  std::string note;  // for the how line: what was dropped, or why the figure is unreliable
};

// Warm-up repetitions, then samples of amount / seconds. Samples in which a thread was
// preempted are dropped and more are taken, up to 2x plan.samples in all (the time budget);
// if other work holds a CPU throughout, every sample is kept and the note says the figure is
// low.
Result<Samples> rates(PinnedTeam& team, const Plan& plan, double amount, const std::function<void(int)>& body) {
  Samples out;
  std::vector<double> disturbed;
  int taken = 0;
  for (bool first = true; static_cast<int>(out.rates.size()) < plan.samples && taken < 2 * plan.samples;
       first = false) {
    auto reps = team.run((first ? plan.warmups : 0) + plan.samples, body);
    if (!reps) return reps.status();
    for (size_t i = first ? plan.warmups : 0; i < reps->size(); ++i, ++taken) {
      const double rate = amount / (*reps)[i].seconds;
      ((*reps)[i].cpu_share >= kUndisturbedCpuShare ? out.rates : disturbed).push_back(rate);
    }
  }
  if (static_cast<int>(out.rates.size()) < (plan.samples + 1) / 2) {
    out.note = "; WARNING " + std::to_string(disturbed.size()) + " of " + std::to_string(taken) +
               " samples had a preempted thread (other work on the CPUs): the figure is low";
    out.rates.insert(out.rates.end(), disturbed.begin(), disturbed.end());
  } else if (!disturbed.empty()) {
    out.note = "; " + std::to_string(disturbed.size()) + " samples with a preempted thread dropped";
  }
  return out;
}

// Iterations per thread so that one repetition of body(iterations) takes about target_s.
// Timed by the threads' CPU time, which a preemption does not inflate (wall time would, and
// a too-short sample follows).
Result<int64_t> calibrate(PinnedTeam& team, double target_s, const std::function<void(int, int64_t)>& body) {
  int64_t n = 1024;
  for (int round = 0; round < 40; ++round) {
    auto s = team.run(1, [&](int t) { body(t, n); });
    if (!s) return s.status();
    const PinnedTeam::Repetition& r = s->front();
    const double t = std::isfinite(r.busiest_cpu_seconds) && r.busiest_cpu_seconds > 0 ? r.busiest_cpu_seconds : r.seconds;
    if (t >= target_s / 8) return std::max<int64_t>(1, static_cast<int64_t>(n * target_s / t));
    n *= 8;
  }
  return Status::error("calibration: the loop did not take measurable time");
}

// ---- Buffers ----------------------------------------------------------------------------

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using HostMemory = std::unique_ptr<char, FreeDeleter>;

// DRAM stream buffers (`pages` given) are asked for on 2 MiB pages (allocate_host_memory,
// core/host_device.h; cpu:0's tensors only with DNNB_HOST_HUGE_PAGES=1): with 4 KiB pages a
// stream also pays a page walk every 4 KiB, and in VMs the first passes over fresh 4 KiB pages
// can run up to 40% slower, so two runs would differ by more than the 2% target. `pages` says
// what was asked for, for the how line.
Result<HostMemory> allocate(size_t bytes, std::string* pages = nullptr) {
  auto p = allocate_host_memory(bytes, pages != nullptr, pages);
  if (!p) return Status::error("cannot allocate " + format_mib(bytes) + " of host memory: " + p.status().message);
  return HostMemory(static_cast<char*>(*p));
}

// The last-level cache of the whole machine: the size of the highest-level data/unified cache
// times the number of its instances (logical CPUs / CPUs sharing one).
size_t last_level_cache_bytes() {
  const CpuDescription& d = cpu_description();
  const CpuCache* last = nullptr;
  for (const CpuCache& c : d.caches)
    if (c.type != "instruction" && c.size_bytes > 0 && (!last || c.level > last->level)) last = &c;
  if (!last) return size_t(32) << 20;  // unknown: assume a common server L3 slice
  const int logical = std::max(1, d.logical_cpus);
  const int sharing = last->shared_by_logical_cpus > 0 ? last->shared_by_logical_cpus : logical;
  const int instances = std::max(1, (logical + sharing - 1) / sharing);
  return static_cast<size_t>(last->size_bytes) * instances;
}

size_t l2_bytes_per_core() {
  for (const CpuCache& c : cpu_description().caches)
    if (c.level == 2 && c.type != "instruction" && c.size_bytes > 0) return static_cast<size_t>(c.size_bytes);
  return size_t(1) << 20;
}

// Bytes of each DRAM stream buffer: many times the LLC (so no sample is served from it), at
// most a quarter of the free memory.
size_t dram_buffer_bytes(const ProbeOptions& options, int buffers) {
  const size_t llc = last_level_cache_bytes();
  size_t bytes = options.quick ? std::max<size_t>(4 * llc, size_t(64) << 20) : std::max<size_t>(16 * llc, size_t(512) << 20);
  bytes = std::min(bytes, options.quick ? size_t(512) << 20 : size_t(4) << 30);
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) bytes = std::min(bytes, static_cast<size_t>(pages) * page / (4 * buffers));
  return bytes / 4096 * 4096;
}

// Thread t's part [begin, end) of `bytes`, in whole 4 KiB pages.
std::pair<size_t, size_t> chunk(size_t bytes, int t, int threads) {
  const size_t per = (bytes / threads) / 4096 * 4096;
  const size_t begin = per * t;
  return {begin, t == threads - 1 ? bytes : begin + per};
}

// Combined per-thread results land here so no reduction can be dropped by the compiler.
std::atomic<uint64_t> g_sink{0};
void sink(uint64_t v) { g_sink.fetch_xor(v, std::memory_order_relaxed); }
void sink(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  sink(static_cast<uint64_t>(bits));
}

// ---- Streaming kernels ------------------------------------------------------------------

bool has_avx512() { return cpu_features().avx512_core_usable(); }

// How far ahead of its loads the second method of each DRAM stream prefetches (bytes). The
// AVX-512 elementwise kernels prefetch 4 KiB ahead (kDefaultEltwiseAhead, avx512_common.h),
// which on a CPU whose hardware streamer stops at every 4 KiB page takes them above a plain
// copy stream: a ceiling that a kernel beats is not the ceiling. So the DRAM probes time both
// methods and keep the faster (better_of).
constexpr size_t kStreamAhead = 4096;

#if defined(__x86_64__)
// Prefetches (into L1) the `lines` 64-byte lines at base + i + kStreamAhead that lie below
// base + bytes (offsets compared, never pointers past the buffer).
DNNB_CEIL_AVX512 inline void prefetch_ahead(const char* base, size_t i, size_t bytes, int lines) {
  for (size_t off = i + kStreamAhead, k = 0; k < static_cast<size_t>(lines) && off < bytes; ++k, off += 64)
    _mm_prefetch(base + off, _MM_HINT_T0);
}

// 256 bytes per iteration, non-temporal stores: the destination is not read first (no RFO),
// so the traffic is exactly the bytes counted. bytes is a multiple of 4096, pointers aligned.
// kAhead: software prefetch kStreamAhead in front of the loads, within [src, src + bytes).
template <bool kAhead>
DNNB_CEIL_AVX512 void copy_avx512(char* dst, const char* src, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 256) {
    if constexpr (kAhead) prefetch_ahead(src, i, bytes, 4);
    const __m512i a = _mm512_load_si512(src + i), b = _mm512_load_si512(src + i + 64);
    const __m512i c = _mm512_load_si512(src + i + 128), d = _mm512_load_si512(src + i + 192);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 64), b);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 128), c);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 192), d);
  }
  _mm_sfence();
}

// Sum (64-bit integer adds) of every 64-byte line into 8 independent accumulators: one-cycle
// adds on any vector ALU port, so loads are the only limit. (With XOR and a final ternlog,
// GCC 12 adds a register move per load.)
template <bool kAhead>
DNNB_CEIL_AVX512 uint64_t read_avx512(const char* p, size_t bytes) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (size_t i = 0; i < bytes; i += 512) {
    if constexpr (kAhead) prefetch_ahead(p, i, bytes, 8);
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
    a4 = _mm512_add_epi64(a4, _mm512_load_si512(p + i + 256));
    a5 = _mm512_add_epi64(a5, _mm512_load_si512(p + i + 320));
    a6 = _mm512_add_epi64(a6, _mm512_load_si512(p + i + 384));
    a7 = _mm512_add_epi64(a7, _mm512_load_si512(p + i + 448));
  }
  a0 = _mm512_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)),
                        _mm512_add_epi64(_mm512_add_epi64(a4, a5), _mm512_add_epi64(a6, a7)));
  // Lane sum in unsigned arithmetic: the sum wraps (it only keeps the loads alive), and
  // _mm512_reduce_add_epi64 adds as signed long long, which UBSan reports as overflow.
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, a0);
  uint64_t sum = 0;
  for (uint64_t lane : lanes) sum += lane;
  return sum;
}
#endif

// ahead: the prefetching method (AVX-512 only; better_of asks for it only there).
void copy_stream(char* dst, const char* src, size_t bytes, bool ahead = false) {
#if defined(__x86_64__)
  if (has_avx512()) return ahead ? copy_avx512<true>(dst, src, bytes) : copy_avx512<false>(dst, src, bytes);
#endif
  (void)ahead;
  std::memcpy(dst, src, bytes);
}

uint64_t read_stream(const char* p, size_t bytes, bool ahead = false) {
#if defined(__x86_64__)
  if (has_avx512()) return ahead ? read_avx512<true>(p, bytes) : read_avx512<false>(p, bytes);
#endif
  (void)ahead;
  uint64_t acc[8] = {};
  const auto* words = reinterpret_cast<const uint64_t*>(p);
  for (size_t i = 0; i < bytes / 8; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += words[i + k];
  uint64_t all = 0;
  for (uint64_t a : acc) all += a;
  return all;
}

std::string stream_isa() { return has_avx512() ? "AVX-512" : "baseline (no usable AVX-512)"; }

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// A DRAM stream timed without, then with software prefetch (body(t, ahead)); the faster
// method's samples (by median) are kept, and `method` says which, with the other's median as
// a share of it. Without AVX-512 only the plain method exists (memcpy or the scalar sum).
Result<Samples> better_of(PinnedTeam& team, const Plan& plan, double amount,
                          const std::function<void(int, bool)>& body, std::string* method) {
  auto plain = rates(team, plan, amount, [&](int t) { body(t, false); });
  if (!plain) return plain.status();
  if (!has_avx512()) return plain;
  auto ahead = rates(team, plan, amount, [&](int t) { body(t, true); });
  if (!ahead) return ahead.status();
  const double m_plain = median_of(plain->rates), m_ahead = median_of(ahead->rates);
  const bool use_ahead = m_ahead > m_plain;
  const std::string ahead_text = "software prefetch " + std::to_string(kStreamAhead / 1024) + " KiB ahead";
  *method = (use_ahead ? ahead_text : "no software prefetch") + " (kept; " +
            (use_ahead ? "without prefetch" : ahead_text) + " reached " +
            std::to_string(static_cast<int>(std::lround(100 * (use_ahead ? m_plain / m_ahead : m_ahead / m_plain)))) +
            "% of it)";
  return use_ahead ? ahead : plain;
}

// ---- Memory probes ----------------------------------------------------------------------

Result<ProbeResult> dram_copy(DeviceRuntime&, const ProbeOptions& options) {
  PinnedTeam team;
  const Plan plan = plan_for(options);
  const size_t bytes = dram_buffer_bytes(options, 2);
  std::string pages;
  auto src = allocate(bytes, &pages);
  if (!src) return src.status();
  auto dst = allocate(bytes, &pages);
  if (!dst) return dst.status();
  const int n = team.size();
  // First touch by the thread that streams each part, so pages sit on its NUMA node.
  auto touched = team.run(1, [&](int t) {
    auto [b, e] = chunk(bytes, t, n);
    std::memset(src->get() + b, 1, e - b);
    std::memset(dst->get() + b, 0, e - b);
  });
  if (!touched) return touched.status();
  std::string method;
  auto samples = better_of(team, plan, 2.0 * bytes, [&](int t, bool ahead) {
    auto [b, e] = chunk(bytes, t, n);
    copy_stream(dst->get() + b, src->get() + b, e - b, ahead);
  }, &method);
  if (!samples) return samples.status();
  return probe_result_from_samples(
      std::move(samples->rates),
      "copy " + format_mib(bytes) + " -> " + format_mib(bytes) + " (" +
          std::to_string(bytes / last_level_cache_bytes()) + "x LLC), " +
          (has_avx512() ? "AVX-512 loads + non-temporal stores, " + method : "memcpy") + ", " + pages + ", " +
          team.describe() + ", bytes read + written" + samples->note);
}

Result<ProbeResult> dram_read(DeviceRuntime&, const ProbeOptions& options) {
  PinnedTeam team;
  const Plan plan = plan_for(options);
  const size_t bytes = dram_buffer_bytes(options, 1);
  std::string pages;
  auto src = allocate(bytes, &pages);
  if (!src) return src.status();
  const int n = team.size();
  auto touched = team.run(1, [&](int t) {
    auto [b, e] = chunk(bytes, t, n);
    std::memset(src->get() + b, 1, e - b);
  });
  if (!touched) return touched.status();
  std::string method;
  auto samples = better_of(team, plan, static_cast<double>(bytes), [&](int t, bool ahead) {
    auto [b, e] = chunk(bytes, t, n);
    sink(read_stream(src->get() + b, e - b, ahead));
  }, &method);
  if (!samples) return samples.status();
  return probe_result_from_samples(std::move(samples->rates),
                                   "sum-reduce " + format_mib(bytes) + " (" + std::to_string(bytes / last_level_cache_bytes()) +
                                       "x LLC), " + stream_isa() + (method.empty() ? "" : ", " + method) + ", " + pages +
                                       ", " + team.describe() + samples->note);
}

// Each thread re-reads its own buffer of half its core's L2: the cache bandwidth a kernel
// with a hot, core-local working set sees.
Result<ProbeResult> cache_read(DeviceRuntime&, const ProbeOptions& options) {
  PinnedTeam team;
  const Plan plan = plan_for(options);
  const size_t per_thread = std::max<size_t>(l2_bytes_per_core() / 2 / 4096 * 4096, 4096);
  const int n = team.size();
  std::vector<HostMemory> buffers;
  for (int t = 0; t < n; ++t) {
    auto b = allocate(per_thread);
    if (!b) return b.status();
    buffers.push_back(std::move(*b));
  }
  auto touched = team.run(1, [&](int t) { std::memset(buffers[t].get(), 1, per_thread); });
  if (!touched) return touched.status();
  auto passes = calibrate(team, plan.sample_s, [&](int t, int64_t reps) {
    for (int64_t r = 0; r < reps; ++r) sink(read_stream(buffers[t].get(), per_thread));
  });
  if (!passes) return passes.status();
  auto samples = rates(team, plan, static_cast<double>(per_thread) * *passes * n, [&](int t) {
    for (int64_t r = 0; r < *passes; ++r) sink(read_stream(buffers[t].get(), per_thread));
  });
  if (!samples) return samples.status();
  return probe_result_from_samples(std::move(samples->rates),
                                   "sum-reduce " + format_kib(per_thread) + " per thread (1/2 of L2 " +
                                       format_kib(l2_bytes_per_core()) + "), " + std::to_string(*passes) + " passes, " +
                                       stream_isa() + ", " + team.describe() + samples->note);
}

// ---- Arithmetic probes --------------------------------------------------------------------
// Each kernel runs `chains` independent accumulator chains (more than latency x pipes) on
// register operands, so the execution units are the only limit. FLOP counts 2 per
// multiply-add.

constexpr int kChains = 16;

#if defined(__x86_64__)
DNNB_CEIL_AVX512 float f32_fma_kernel(int64_t iterations) {
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(1.0f + 0.01f * k);
  const __m512 mul = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-6f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], mul, add);
  }
  for (int k = 1; k < kChains; ++k) acc[0] = _mm512_add_ps(acc[0], acc[k]);
  return _mm512_reduce_add_ps(acc[0]);
}

DNNB_CEIL_AVX512_FP16 float f16_fma_kernel(int64_t iterations) {
  __m512h acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ph(static_cast<_Float16>(1.0f + 0.01f * k));
  const __m512h mul = _mm512_set1_ph(static_cast<_Float16>(0.999f)), add = _mm512_set1_ph(static_cast<_Float16>(1e-3f));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ph(acc[k], mul, add);
  }
  for (int k = 1; k < kChains; ++k) acc[0] = _mm512_add_ph(acc[0], acc[k]);
  return static_cast<float>(_mm512_reduce_add_ph(acc[0]));
}

// VDPBF16PS: per f32 lane, two bf16 products added to the accumulator (4 FLOP per lane).
DNNB_CEIL_AVX512_BF16 float bf16_dot_kernel(int64_t iterations) {
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(0.01f * k);
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.001f), _mm512_set1_ps(0.002f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.003f), _mm512_set1_ps(-0.001f));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_dpbf16_ps(acc[k], a, b);
  }
  for (int k = 1; k < kChains; ++k) acc[0] = _mm512_add_ps(acc[0], acc[k]);
  return _mm512_reduce_add_ps(acc[0]);
}

// AMX: tiles 0-3 accumulate (16x16 f32), 4-5 hold A (16 rows x 32 bf16), 6-7 hold B
// (16 rows of 32 bf16 pairs); a 2x2 block of TDPBF16PS per iteration, each 16x16x32 MACs.
// The tile configuration and instructions: devices/cpu/amx_tiles.h.
constexpr double kAmxFlopPerTdp = 16.0 * 16 * 32 * 2;

DNNB_CEIL_AMX float bf16_amx_kernel(int64_t iterations) {
  const amx::TileConfig config = amx::full_tiles(8);
  alignas(64) uint16_t operand[16 * 32];
  for (auto& v : operand) v = 0x3c23;  // bf16 0.01
  alignas(64) float result[16 * 16];
  amx::load_config(config);
  amx::zero<0>();
  amx::zero<1>();
  amx::zero<2>();
  amx::zero<3>();
  amx::load<4>(operand, 64);
  amx::load<5>(operand, 64);
  amx::load<6>(operand, 64);
  amx::load<7>(operand, 64);
  for (int64_t i = 0; i < iterations; ++i) {
    amx::dpbf16ps<0, 4, 6>();
    amx::dpbf16ps<1, 4, 7>();
    amx::dpbf16ps<2, 5, 6>();
    amx::dpbf16ps<3, 5, 7>();
  }
  amx::store<0>(result, 64);
  amx::release();
  return result[0];
}
#endif

using FlopKernel = float (*)(int64_t iterations);

// Runs `kernel` on every thread: calibrated iterations, then samples in FLOP/s.
Result<ProbeResult> measure_flops(const ProbeOptions& options, FlopKernel kernel, double flop_per_iteration,
                                  const std::string& what) {
  PinnedTeam team;
  const Plan plan = plan_for(options);
  auto iterations = calibrate(team, plan.sample_s, [&](int, int64_t n) { sink(kernel(n)); });
  if (!iterations) return iterations.status();
  auto samples = rates(team, plan, flop_per_iteration * static_cast<double>(*iterations) * team.size(),
                       [&](int) { sink(kernel(*iterations)); });
  if (!samples) return samples.status();
  return probe_result_from_samples(std::move(samples->rates), what + ", " + std::to_string(*iterations) +
                                                                   " iterations per thread, " + team.describe() +
                                                                   samples->note);
}

std::string missing_isa(const char* what) {
  return std::string("this CPU/OS cannot run ") + what + " (cpu_features(): see `dnnblocks devices`)";
}

Result<ProbeResult> f32_fma(DeviceRuntime&, const ProbeOptions& options) {
#if defined(__x86_64__)
  if (has_avx512())
    return measure_flops(options, f32_fma_kernel, kChains * 16 * 2.0,
                         "AVX-512 VFMADD " + std::to_string(kChains) + " independent zmm chains x 16 f32 lanes");
#endif
  return Status::skipped(missing_isa("AVX-512 (F+BW+VL+DQ with the OS saving ZMM state)"));
}

Result<ProbeResult> f16_fma(DeviceRuntime&, const ProbeOptions& options) {
#if defined(__x86_64__)
  if (cpu_features().avx512_fp16_usable())
    return measure_flops(options, f16_fma_kernel, kChains * 32 * 2.0,
                         "AVX512_FP16 VFMADD..PH " + std::to_string(kChains) + " independent zmm chains x 32 f16 lanes");
#endif
  return Status::skipped(missing_isa("AVX512_FP16"));
}

Result<ProbeResult> bf16_dot(DeviceRuntime&, const ProbeOptions& options) {
#if defined(__x86_64__)
  if (cpu_features().avx512_bf16_usable())
    return measure_flops(options, bf16_dot_kernel, kChains * 16 * 4.0,
                         "AVX512_BF16 VDPBF16PS " + std::to_string(kChains) +
                             " independent zmm chains x 16 f32 lanes x 2 bf16 products");
#endif
  return Status::skipped(missing_isa("AVX512_BF16"));
}

Result<ProbeResult> bf16_amx(DeviceRuntime&, const ProbeOptions& options) {
  const CpuFeatures& f = cpu_features();
  if (!f.amx_tile || !f.amx_bf16) return Status::skipped("this CPU has no AMX_BF16");
  if (!f.os_amx) {
    const std::string& note = cpu_description().amx_permission_note;
    return Status::skipped("AMX not permitted by the OS" + (note.empty() ? std::string() : ": " + note));
  }
#if defined(__x86_64__)
  return measure_flops(options, bf16_amx_kernel, 4 * kAmxFlopPerTdp,
                       "AMX TDPBF16PS 2x2 tile block (4 x 16x16x32 per iteration), operands in tiles");
#else
  return Status::skipped(missing_isa("AMX"));
#endif
}

}  // namespace

DNNB_REGISTER(register_ceiling_probe({DeviceKind::cpu, "dram_copy_bytes_per_s", dram_copy}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cpu, "dram_read_bytes_per_s", dram_read}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cpu, "cache_read_bytes_per_s", cache_read}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cpu, "f32_fma_flops_per_s", f32_fma}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cpu, "f16_fma_flops_per_s", f16_fma}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cpu, "bf16_dot_flops_per_s", bf16_dot}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cpu, "bf16_amx_flops_per_s", bf16_amx}));

}  // namespace dnnb
