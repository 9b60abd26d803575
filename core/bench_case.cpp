#include "core/bench_case.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/host_device.h"

namespace dnnb {

namespace {

constexpr int64_t kFilledRows = 256;
constexpr double kDrawnBytes = 256.0 * 1024 * 1024;
constexpr int kMaxRotationSets = 1024;

// Fills `dst` (contiguous host) with `src`'s bytes repeated; used when dst has more rows.
void tile_bytes(const Tensor& src, Tensor& dst) {
  const size_t src_bytes = storage_bytes(src.dtype, src.numel());
  const size_t dst_bytes = storage_bytes(dst.dtype, dst.numel());
  auto* out = static_cast<uint8_t*>(dst.host_data());
  const auto* in = static_cast<const uint8_t*>(src.host_data());
  for (size_t done = 0; done < dst_bytes; done += src_bytes) std::memcpy(out + done, in, std::min(src_bytes, dst_bytes - done));
}

}  // namespace

Result<std::vector<Tensor>> make_bench_inputs(const OpSpec& spec, const Problem& problem, const Signature& sig) {
  if (problem.shape.empty() || problem.shape[0] <= 1) return make_random_inputs(spec, problem, sig);
  // A problem of more than kFilledRows rows (dim 0) draws kFilledRows of them at random and
  // repeats them; one of at most kFilledRows rows whose inputs pass kDrawnBytes (the 1 GB of an
  // mlstm problem at 65,536 tokens, drawn on one thread) draws one row and repeats it.
  double input_bytes = 0;
  for (const auto& in : sig.inputs) input_bytes += static_cast<double>(storage_bytes(in.dtype, shape_numel(in.shape)));
  const int64_t drawn = problem.shape[0] > kFilledRows ? kFilledRows : (input_bytes > kDrawnBytes ? 1 : 0);
  if (drawn == 0) return make_random_inputs(spec, problem, sig);
  Problem small = problem;
  small.shape[0] = drawn;
  // A shape parameter that follows the rows (a broadcast operand b=16384x1 of a 16384x8192 a)
  // shrinks with them; otherwise the small problem would not broadcast and all 10^8 elements
  // would be filled at random (seconds a case).
  for (auto& [key, value] : small.params) {
    auto shape = parse_shape(value);
    if (shape && shape->size() == problem.shape.size() && shape->size() >= 2 && (*shape)[0] == problem.shape[0]) {
      (*shape)[0] = drawn;
      value = shape_to_string(*shape);
    }
  }
  auto small_sig = spec.signature(small);
  if (!small_sig || small_sig->inputs.size() != sig.inputs.size()) return make_random_inputs(spec, problem, sig);
  // Integer inputs that grow are indices (embedding's ids, positions): repeated, they would send
  // every launch to the same few rows, which then live in the cache.
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    if (!is_floating(sig.inputs[i].dtype) && small_sig->inputs[i].shape != sig.inputs[i].shape)
      return make_random_inputs(spec, problem, sig);
  // Tiling is only sound when each input either keeps its shape or grows along dim 0 alone.
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const Shape& a = small_sig->inputs[i].shape;
    const Shape& b = sig.inputs[i].shape;
    if (a == b) continue;
    if (a.size() != b.size() || a.empty() || !std::equal(a.begin() + 1, a.end(), b.begin() + 1))
      return make_random_inputs(spec, problem, sig);
  }
  auto small_inputs = make_random_inputs(spec, small, *small_sig);
  if (!small_inputs) return small_inputs.status();
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    if ((*small_inputs)[i].shape == sig.inputs[i].shape) {
      inputs.push_back((*small_inputs)[i]);
      continue;
    }
    auto t = empty_tensor(scratch_host(), sig.inputs[i].dtype, sig.inputs[i].shape);
    if (!t) return t.status();
    tile_bytes((*small_inputs)[i], *t);
    inputs.push_back(*t);
  }
  return inputs;
}

double last_level_cache_bytes(const DeviceInfo& info) {
  const auto& caps = info.capabilities;
  auto number = [&](const char* key) { return caps.contains(key) && caps[key].is_number() ? caps[key].get<double>() : 0.0; };
  switch (info.kind) {
    case DeviceKind::cuda:
      return number("l2_cache_bytes");
    case DeviceKind::opencl:
      return number("global_mem_cache_bytes");
    case DeviceKind::cpu: {
      if (!caps.contains("caches") || !caps["caches"].is_array()) return 0;
      const double cpus = std::max(1.0, number("logical_cpus"));
      double best = 0;
      int best_level = 0;
      for (const auto& c : caps["caches"]) {
        if (!c.is_object() || !c.contains("level") || !c.contains("size_bytes")) continue;
        if (c.value("type", "") == "instruction") continue;
        const int level = c["level"].get<int>();
        const double sharers = std::max(1.0, c.value("shared_by_logical_cpus", 1.0));
        // Every instance of the level together: size x (cpus / cpus sharing one instance).
        const double total = c["size_bytes"].get<double>() * std::max(1.0, cpus / sharers);
        if (level > best_level) best_level = level, best = total;
      }
      return best;
    }
  }
  return 0;
}

Result<std::unique_ptr<PreparedCase>> PreparedCase::prepare(const OpSpec& spec, const Implementation& impl,
                                                            DeviceRuntime& device, const Problem& problem,
                                                            const std::vector<Tensor>& host_inputs,
                                                            const BenchOptions& options, BenchResult& result) {
  auto sig = spec.signature(problem);
  if (!sig) return sig.status();
  auto bytes = minimal_bytes(spec, problem);
  if (!bytes) return bytes.status();
  result.bytes = *bytes;
  result.flops = spec.flops ? spec.flops(problem) : 0;
  result.compute_unit = impl.unit_for(problem, device);
  result.cache = options.cache;
  result.cache_bytes = last_level_cache_bytes(device.info());
  double set_bytes = 0;
  for (const auto& in : sig->inputs) {
    Shape storage = in.shape;
    if (!storage.empty()) storage.back() += in.row_padding;
    set_bytes += static_cast<double>(storage_bytes(in.dtype, shape_numel(storage)));
  }
  for (const auto& out : sig->outputs) set_bytes += static_cast<double>(storage_bytes(out.dtype, shape_numel(out.shape)));
  result.working_set_bytes = set_bytes;
  // Cold: enough sets that consecutive launches of one set are separated by twice the cache.
  int sets = 1;
  if (options.cache == CachePolicy::cold && result.cache_bytes > 0 && set_bytes > 0)
    sets = static_cast<int>(std::clamp(std::ceil(2 * result.cache_bytes / set_bytes), 1.0, double(kMaxRotationSets)));
  result.rotation_sets = sets;
  if (options.cache == CachePolicy::cold && sets * set_bytes < 2 * result.cache_bytes)
    result.flags.push_back("rotation capped at " + std::to_string(sets) + " sets: the rotated working set is under twice the last-level cache");

  std::unique_ptr<PreparedCase> prepared(new PreparedCase(impl, device));
  prepared->problem_ = problem;
  // One scratch buffer serves every set: launches run one after another.
  auto workspace = make_workspace(impl, problem, device);
  if (!workspace) return workspace.status();
  for (int s = 0; s < sets; ++s) {
    OpCall call{prepared->problem_, device, {}, {}, *workspace};
    for (size_t i = 0; i < sig->inputs.size(); ++i) {
      auto t = make_device_input(device, sig->inputs[i]);
      if (!t) return t.status();
      DNNB_TRY(copy_tensor(*t, host_inputs[i]));
      call.inputs.push_back(*t);
    }
    for (const auto& out : sig->outputs) {
      auto t = empty_tensor(device, out.dtype, out.shape);
      if (!t) return t.status();
      call.outputs.push_back(*t);
    }
    prepared->calls_.push_back(std::move(call));
  }
  auto timer = device.make_timer();
  if (!timer) return timer.status();
  prepared->timer_ = std::move(*timer);
  result.timer = prepared->timer_->source();
  return prepared;
}

Status PreparedCase::launch_next() {
  OpCall& call = calls_[next_];
  next_ = (next_ + 1) % calls_.size();
  return impl_.run(call);
}

Status PreparedCase::warm_up(int launches_per_set) {
  // Every set launched `launches_per_set` times, unless that takes over kWarmUpCapS (slow
  // backends with many sets, e.g. the float64 reference): the uploads already touched every
  // buffer, so warm-up only needs the code paths, caches of code and clocks settled.
  constexpr double kWarmUpCapS = 0.25;
  // On a device that records a block's launches (DeviceRuntime::run_recorded) each set's first
  // launch records them, so every set is launched before the cap may stop the warm-up.
  const auto started = std::chrono::steady_clock::now();
  const size_t launches = calls_.size() * std::max(1, launches_per_set);
  const size_t least = std::max(static_cast<size_t>(std::max(1, launches_per_set)), *device_.recording() ? calls_.size() : 0);
  for (size_t i = 0; i < launches; ++i) {
    DNNB_TRY(launch_next());
    if (i + 1 >= least && (i & 15) == 15) {
      DNNB_TRY(device_.synchronize());
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() > kWarmUpCapS) break;
    }
  }
  return device_.synchronize();
}

Result<double> PreparedCase::timed_launch_s() {
  DNNB_TRY(timer_->start());
  DNNB_TRY(launch_next());
  if (delay_s_ > 0) {
    const BenchHooks* hooks = bench_hooks(device_.info().kind);
    if (!hooks || !hooks->enqueue_delay)
      return Status::unsupported(std::string("--slowdown: no device-side delay for ") + to_string(device_.info().kind) + " devices");
    DNNB_TRY(hooks->enqueue_delay(device_, delay_s_));
  }
  DNNB_TRY(timer_->stop());
  auto ms = timer_->elapsed_ms();
  if (!ms) return ms.status();
  return *ms * 1e-3;
}

Result<double> PreparedCase::batched_launch_s(int launches) {
  DNNB_TRY(timer_->start());
  for (int i = 0; i < launches; ++i) DNNB_TRY(launch_next());
  DNNB_TRY(timer_->stop());
  auto ms = timer_->elapsed_ms();
  if (!ms) return ms.status();
  return *ms * 1e-3 / launches;
}

}  // namespace dnnb
