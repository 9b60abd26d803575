// Bench hooks for the CPU: a busy-wait for the gate's injected-slowdown test (the host clock
// times CPU backends, so a delay on this thread inside the timed region is a real one).
#include <chrono>

#include "core/bench.h"
#include "core/registry.h"

namespace dnnb {

namespace {

Status cpu_delay(DeviceRuntime&, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
  }
  return Status::ok();
}

}  // namespace

DNNB_REGISTER(register_bench_hooks({DeviceKind::cpu, nullptr, cpu_delay}));

}  // namespace dnnb
