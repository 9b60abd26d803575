// What the tests that run every implementation of an op share (test_cross_entropy_edges.cpp,
// test_row_shifts.cpp): each implementation paired with each device of its backend's kind on
// this machine, the pairs that cannot run listed with their reasons (a backend is never left
// out silently), and host <-> device tensors from and to doubles, and a float64 logsumexp.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/host_device.h"
#include "core/problem.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace dnnb::testing {

struct Runner {
  DeviceRuntime* device;
  const Implementation* impl;
  std::string label;  // "backend/variant@device"
};

// Every implementation of problem.op in problem.dtype, with each device of its backend's kind
// here. What a device does not support for `problem` (no device of that kind, no AVX-512, no
// NVIDIA inline PTX, ...) is added to `skipped` with its reason.
inline std::vector<Runner> runners(const Problem& problem, std::vector<std::string>& skipped) {
  std::vector<Runner> out;
  for (const Implementation* impl : Registry::instance().implementations_of(problem.op)) {
    if (std::find(impl->dtypes.begin(), impl->dtypes.end(), problem.dtype) == impl->dtypes.end()) continue;
    const BackendInfo* backend = find_backend(impl->backend);
    if (backend == nullptr) continue;
    const std::vector<DeviceRuntime*> devices = DeviceSet::instance().of_kind(backend->device_kind);
    if (devices.empty())
      skipped.push_back(impl->label() + ": " + DeviceSet::instance().absence_reason(backend->device_kind));
    for (DeviceRuntime* device : devices) {
      const std::string label = impl->label() + "@" + device->info().id;
      const Status support = impl->supports(problem, *device);
      if (support.is_ok())
        out.push_back({device, impl, label});
      else
        skipped.push_back(label + " " + problem.to_string() + ": " + support.message);
    }
  }
  return out;
}

// Prints the skipped pairs once each (their reasons repeat over cases).
inline void print_skipped(std::vector<std::string> skipped) {
  std::sort(skipped.begin(), skipped.end());
  skipped.erase(std::unique(skipped.begin(), skipped.end()), skipped.end());
  for (const std::string& line : skipped) std::printf("  skipped: %s\n", line.c_str());
}

// The implementation@device pairs that ran, with the seconds each took in all (program builds
// included: a slow pair shows which), printed on one line; a single run over 2 s is printed
// as it ends.
class RanPairs {
 public:
  // Runs f() and adds its time to `label`'s; `what` names the run if it is slow.
  template <class F>
  auto time(const std::string& label, const std::string& what, F&& f) {
    const auto start = std::chrono::steady_clock::now();
    auto out = f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds_[label] += s;
    if (s > kSlowSeconds) {  // now, so a run cut off by a time cap still shows where it was
      std::printf("  slow: %s %s took %.1fs\n", label.c_str(), what.c_str(), s);
      std::fflush(stdout);
    }
    return out;
  }
  bool empty() const { return seconds_.empty(); }
  void print() const {
    std::string line;
    for (const auto& [label, s] : seconds_) {
      char t[32];
      std::snprintf(t, sizeof(t), " %.1fs", s);
      line += (line.empty() ? "" : ", ") + label + t;
    }
    std::printf("  ran %zu: %s\n", seconds_.size(), line.c_str());
  }

 private:
  static constexpr double kSlowSeconds = 2.0;
  std::map<std::string, double> seconds_;
};

// A tensor of `dtype` on `device` holding `values` (row-major over `shape`), each rounded to
// the dtype once.
inline Result<Tensor> device_tensor(DeviceRuntime& device, DType dtype, const Shape& shape,
                                    const std::vector<double>& values) {
  auto host = empty_tensor(scratch_host(), dtype, shape);
  if (!host) return host.status();
  for (size_t i = 0; i < values.size(); ++i) store_element(host->host_data(), dtype, static_cast<int64_t>(i), values[i]);
  auto out = empty_tensor(device, dtype, shape);
  if (!out) return out.status();
  DNNB_TRY(copy_tensor(*out, *host));
  return out;
}

// `values` as `dtype` would hold them (what a kernel reads after device_tensor).
inline std::vector<double> rounded_to(DType dtype, std::vector<double> values) {
  std::vector<uint64_t> slot(values.size());  // wide enough for any dtype's element
  for (size_t i = 0; i < values.size(); ++i) {
    store_element(slot.data(), dtype, static_cast<int64_t>(i), values[i]);
    values[i] = load_element(slot.data(), dtype, static_cast<int64_t>(i));
  }
  return values;
}

// log sum_c e^x[c] over n values, in float64 (shifted by the max): the tests' reference.
inline double row_logsumexp(const double* x, int64_t n) {
  double m = x[0], s = 0;
  for (int64_t c = 1; c < n; ++c) m = std::max(m, x[c]);
  for (int64_t c = 0; c < n; ++c) s += std::exp(x[c] - m);
  return m + std::log(s);
}

}  // namespace dnnb::testing
