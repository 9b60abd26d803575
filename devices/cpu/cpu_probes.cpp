// CPU probes for bench: memory copy bandwidth with one thread per hardware thread over
// 1 GiB (far beyond the last-level cache), bytes read + written, median of 5 after warm-up.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/bench.h"
#include "core/registry.h"

namespace dnnb {

namespace {

Result<double> cpu_copy_bytes_per_s(DeviceRuntime&) {
  constexpr size_t bytes = size_t(1) << 30;
  char* src = static_cast<char*>(std::aligned_alloc(4096, bytes));
  char* dst = static_cast<char*>(std::aligned_alloc(4096, bytes));
  if (!src || !dst) {
    std::free(src);
    std::free(dst);
    return Status::error("cpu copy probe: cannot allocate 2 GiB");
  }
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t chunk = (bytes / threads + 4095) / 4096 * 4096;
  auto parallel = [&](auto&& body) {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      const size_t begin = std::min(bytes, t * chunk), end = std::min(bytes, begin + chunk);
      pool.emplace_back([&, begin, end] { body(begin, end); });
    }
    for (auto& th : pool) th.join();
  };
  // First touch from the same threads that copy, so pages land near them.
  parallel([&](size_t b, size_t e) {
    std::memset(src + b, 1, e - b);
    std::memset(dst + b, 0, e - b);
  });
  std::vector<double> seconds;
  for (int rep = 0; rep < 6; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    parallel([&](size_t b, size_t e) { std::memcpy(dst + b, src + b, e - b); });
    auto t1 = std::chrono::steady_clock::now();
    if (rep > 0) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::free(src);
  std::free(dst);
  std::sort(seconds.begin(), seconds.end());
  return 2.0 * bytes / seconds[seconds.size() / 2];
}

}  // namespace

DNNB_REGISTER(register_device_probe({DeviceKind::cpu, "copy_bytes_per_s", cpu_copy_bytes_per_s}));

}  // namespace dnnb
