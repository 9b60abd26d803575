// Planning and timing of `dnnblocks bench`. Each case is one Google Benchmark benchmark with
// manual time (device timers), a fixed launch count per repetition calibrated from the
// case's own launch time, and repetitions in rounds until the spread over repetitions is
// under the noise target or the case's time cap is spent.
#include "core/bench.h"

#include <fnmatch.h>

#include <cstdio>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include <benchmark/benchmark.h>

#include "core/bench_case.h"
#include "core/plan.h"

namespace dnnb {

namespace {

// Under this, also time back-to-back launches: a ~5 us kernel measures 6-8 us with events
// around a single launch, so the threshold sits above the issue's ~5 us.
constexpr double kTinyCaseS = 10e-6;
constexpr int kBatchedLaunches = 100;

std::vector<BenchHooks>& hooks_list() {
  static std::vector<BenchHooks> list;
  return list;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double cv_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return mean > 0 ? std::sqrt(ss / (v.size() - 1)) / mean : 0;
}

// Google Benchmark's JSON reporter, kept open over several RunSpecifiedBenchmarks calls (one
// per case and round): the context is written once, Finalize only at the very end, and the
// run name of the last benchmark is remembered for the result.
class SessionJsonReporter : public benchmark::JSONReporter {
 public:
  bool ReportContext(const Context& context) override {
    if (context_written_) return true;
    context_written_ = true;
    return JSONReporter::ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    if (!runs.empty()) last_run_name_ = runs.front().run_name.str();
    JSONReporter::ReportRuns(runs);
  }
  void Finalize() override {}
  void finish() {
    if (!context_written_) {
      GetOutputStream() << "{\"context\": {}, \"benchmarks\": [\n";
      context_written_ = true;
    }
    JSONReporter::Finalize();
  }
  const std::string& last_run_name() const { return last_run_name_; }

 private:
  bool context_written_ = false;
  std::string last_run_name_;
};

struct PlannedBench {
  const OpSpec* spec;
  const Implementation* impl;
  DeviceRuntime* device;  // null: absent, see absent_reason
  std::string absent_reason;
  Problem problem;
  std::string block;               // node cases (--nodes): the block's case id
  std::vector<std::string> nodes;  // and the nodes with this problem
};

// The node cases of one block case (`bench --nodes`): each distinct node problem once, on the
// block's backend (that backend's default implementation of the node's op) and device, in the
// graph's order. A node whose op the backend lacks is planned absent with the reason.
Status plan_nodes(const OpSpec& spec, const PlanCell& cell, const Problem& problem, std::vector<PlannedBench>& planned) {
  auto nodes = spec.nodes(problem);
  if (!nodes) return nodes.status();
  const std::string block = case_id_of(cell, problem).to_string();
  std::vector<PlannedBench> mine;
  for (const auto& node : *nodes) {
    const std::string& name = node.first;
    const Problem& node_problem = node.second;  // not a structured binding: the lambda below captures it
    auto same = std::find_if(mine.begin(), mine.end(), [&](const PlannedBench& b) { return b.problem.to_string() == node_problem.to_string(); });
    if (same != mine.end()) {
      same->nodes.push_back(name);
      continue;
    }
    const OpSpec* node_spec = Registry::instance().find_op(node_problem.op);
    const Implementation* impl = Registry::instance().find_implementation(node_problem.op, cell.impl->backend, "");
    if (!node_spec) return Status::error("block " + block + ": node " + name + ": no op " + node_problem.op);
    if (!impl) {
      // Planned on the block's own implementation so the result names the backend; never run.
      mine.push_back({node_spec, cell.impl, nullptr, cell.impl->backend + " has no " + node_problem.op, node_problem, block, {name}});
      continue;
    }
    mine.push_back({node_spec, impl, cell.device, cell.absent_reason, node_problem, block, {name}});
  }
  planned.insert(planned.end(), mine.begin(), mine.end());
  return Status::ok();
}

// rows 1, 4, 16, ... up to the problem's rows (always including it), same columns/params.
std::vector<ProblemText> sweep_sizes(const std::vector<ProblemText>& bench_problems) {
  std::vector<ProblemText> out;
  for (const auto& problem : bench_problems) {
    const std::string& text = problem.text;
    const auto colon = text.find(':');
    auto shape = parse_shape(text.substr(0, colon));
    if (!shape || shape->size() < 2) continue;
    const std::string rest = text.substr(shape_to_string(*shape).size());
    for (int64_t rows = 1;; rows *= 4) {
      Shape s = *shape;
      s[0] = std::min(rows, (*shape)[0]);
      const std::string size = shape_to_string(s) + rest;
      const bool seen = std::any_of(out.begin(), out.end(), [&](const ProblemText& p) { return p.text == size; });
      if (!seen) out.push_back(ProblemText(size, problem.only));
      if (rows >= (*shape)[0]) break;
    }
  }
  return out;
}

Result<std::vector<PlannedBench>> plan(const BenchOptions& options) {
  std::vector<PlannedBench> planned;
  if (!options.case_ids.empty()) {
    for (const auto& text : options.case_ids) {
      auto id = CaseId::parse(text);
      if (!id) return Status::bad_input("--case '" + text + "': " + id.status().message);
      auto cell = plan_case_cell(*id);
      if (!cell) return Status::bad_input("--" + cell.status().message);
      planned.push_back({cell->spec, cell->impl, cell->device, cell->absent_reason, id->problem, "", {}});
    }
    return planned;
  }

  PlanFilter filter;
  filter.op_glob = options.op_glob;
  filter.backends = options.backend;
  filter.all_variants = options.all_variants;
  filter.dtype = options.dtype;
  filter.devices = options.devices;
  filter.every_device = false;
  auto cells = plan_cells(filter);
  if (!cells) return cells.status();
  // Cases in the order op, dtype, size, then implementation and device, so the backends of one
  // problem are timed (and printed) side by side.
  std::set<std::string> said_not_benched;
  for (const auto& spec : Registry::instance().ops()) {
    std::vector<ProblemText> sizes = options.size.empty() ? spec.bench_problems : std::vector<ProblemText>{options.size};
    if (options.sweep) sizes = sweep_sizes(sizes);
    for (DType d : spec.dtypes) {
      if (std::none_of(cells->begin(), cells->end(), [&](const PlanCell& c) { return c.spec == &spec && c.dtype == d; }))
        continue;
      auto problems = problems_at(spec, sizes, d);
      if (!problems) return Status::bad_input("--size: " + problems.status().message);
      for (const Problem& problem : *problems) {
        // One --size for many ops (`--size 64x8192` over every row op) passes over the ops it is
        // no problem of (a product needs MxNxK), saying so; the spec's own problems must fit.
        if (!options.size.empty()) {
          if (auto sig = spec.signature(problem); !sig) {
            if (!said_not_benched.insert(spec.name).second) continue;
            std::fprintf(stderr, "bench: --size %s is not a %s problem, %s not benched: %s\n", options.size.c_str(),
                         spec.name.c_str(), spec.name.c_str(), sig.status().message.c_str());
            continue;
          }
        }
        for (const PlanCell& cell : *cells)
          if (cell.spec == &spec && cell.dtype == d) {
            planned.push_back({cell.spec, cell.impl, cell.device, cell.absent_reason, problem, "", {}});
            if (options.nodes && spec.nodes) DNNB_TRY(plan_nodes(spec, cell, problem, planned));
          }
      }
    }
  }
  return planned;
}

// Times one prepared case through Google Benchmark, in rounds of `repetitions`.
Status time_case(PreparedCase& prepared, const BenchOptions& options, SessionJsonReporter& reporter, BenchResult& r) {
  DNNB_TRY(prepared.warm_up(options.warmup));
  std::vector<double> calibration;
  for (int i = 0; i < 5; ++i) {
    auto t = prepared.timed_launch_s();
    if (!t) return t.status();
    calibration.push_back(*t);
  }
  const double launch_s = std::max(median_of(calibration), 1e-9);
  if (!options.slowdown_glob.empty() && fnmatch(options.slowdown_glob.c_str(), r.id.to_string().c_str(), 0) == 0) {
    prepared.set_delay_s(launch_s * options.slowdown_percent / 100);
    r.flags.push_back("slowdown injected: +" + std::to_string(options.slowdown_percent) + "% of the launch time (--slowdown)");
    auto first = prepared.timed_launch_s();  // untimed: the delay's own first-use setup
    if (!first) return first.status();
  }
  r.iterations = static_cast<int>(std::clamp(std::ceil(options.min_time_s / launch_s), 1.0, 100000.0));
  // Slow cases (the reference at large shapes) get fewer repetitions, never under 3.
  int repetitions = options.repetitions;
  if (launch_s * r.iterations * repetitions > options.max_time_s)
    repetitions = std::max(3, static_cast<int>(options.max_time_s / (launch_s * r.iterations)));
  const BenchHooks* hooks = bench_hooks(prepared.device().info().kind);
  const auto started = std::chrono::steady_clock::now();
  Status failure;
  for (int round = 0; round < options.max_rounds; ++round) {
    auto* bm = benchmark::RegisterBenchmark(r.id.to_string().c_str(), [&](benchmark::State& state) {
      double sum = 0;
      for (auto _ : state) {
        auto t = prepared.timed_launch_s();
        if (!t) {
          failure = t.status();
          state.SkipWithError(failure.message.c_str());
          break;
        }
        state.SetIterationTime(*t);
        sum += *t;
      }
      if (!failure.is_ok()) return;
      r.repetition_times_s.push_back(sum / static_cast<double>(state.iterations()));
      state.SetBytesProcessed(static_cast<int64_t>(r.bytes * state.iterations()));
      // No FLOP counter for ops without arithmetic (copies): Google Benchmark's coefficient of
      // variation of an all-zero counter is 0/0, which its JSON writer prints as an invalid nan.
      if (r.flops > 0)
        state.counters["FLOP/s"] = benchmark::Counter(r.flops * state.iterations(), benchmark::Counter::kIsRate);
      // Blocks: the tokens a launch processes (OpSpec::tokens), as tokens/s.
      if (const OpSpec* spec = Registry::instance().find_op(r.id.problem.op); spec && spec->tokens)
        state.counters["tokens/s"] =
            benchmark::Counter(spec->tokens(r.id.problem) * state.iterations(), benchmark::Counter::kIsRate);
      if (hooks && hooks->read_clock) {
        auto clock = hooks->read_clock(prepared.device());
        if (clock) {
          r.clocks.push_back(*clock);
          state.counters["sm_mhz"] = clock->sm_mhz;
        }
      }
    });
    bm->UseManualTime()->Iterations(r.iterations)->Repetitions(repetitions)->Unit(benchmark::kMicrosecond);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::ClearRegisteredBenchmarks();
    if (!failure.is_ok()) return failure;
    r.benchmark_name = reporter.last_run_name();
    r.cv = cv_of(r.repetition_times_s);
    r.noise_target_met = r.cv <= options.noise_target;
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (r.noise_target_met || spent >= options.max_time_s) break;
  }
  r.median_s = median_of(r.repetition_times_s);
  r.min_s = *std::min_element(r.repetition_times_s.begin(), r.repetition_times_s.end());
  if (!r.noise_target_met)
    r.flags.push_back("noise target missed: cv " + std::to_string(r.cv * 100).substr(0, 4) + "% after the time cap");
  if (r.median_s < kTinyCaseS && prepared.device().info().kind != DeviceKind::cpu) {
    std::vector<double> batched;
    for (int i = -1; i < 5; ++i) {  // the first fits a GPU timer's lead to the batch (cuda_timer.cpp)
      auto t = prepared.batched_launch_s(kBatchedLaunches);
      if (!t) return t.status();
      if (i >= 0) batched.push_back(*t);
    }
    r.batched_s = median_of(batched);
  }
  int throttled = 0;
  for (const auto& c : r.clocks) throttled += c.throttled;
  if (throttled > 0) r.flags.push_back("throttled: " + std::to_string(throttled) + " of " + std::to_string(r.clocks.size()) + " repetitions saw a power or thermal slowdown");
  return Status::ok();
}

}  // namespace

void flag_impossible_figures(const DeviceCeilings* ceilings, BenchResult& r) {
  const double bw = ceilings ? ceilings->bandwidth_bytes_per_s() : 0;
  if (bw <= 0 || r.bytes_per_s() <= 1.05 * bw) return;
  const double touched = r.working_set_bytes * r.rotation_sets;
  if (r.cache == CachePolicy::hot)
    r.flags.push_back("hot cache: above the DRAM ceiling, a cache figure");
  else if (touched < r.cache_bytes * 2)
    r.flags.push_back("measurement error: above the DRAM ceiling with a rotated working set under twice the cache");
}

const char* to_string(CachePolicy policy) { return policy == CachePolicy::cold ? "cold" : "hot"; }

bool register_bench_hooks(BenchHooks hooks) {
  hooks_list().push_back(std::move(hooks));
  return true;
}

const BenchHooks* bench_hooks(DeviceKind kind) {
  for (const auto& h : hooks_list())
    if (h.kind == kind) return &h;
  return nullptr;
}

Result<BenchRun> run_bench(const BenchOptions& options, const BenchCallback& on_result) {
  if (options.repetitions < 2) return Status::bad_input("--repetitions: at least 2 (the spread needs two)");
  if (options.slowdown_percent < 0) return Status::bad_input("--slowdown: the percentage must be >= 0");
  auto planned = plan(options);
  if (!planned) return planned.status();
  BenchRun run;
  if (!options.ceilings_path.empty()) {
    auto loaded = load_ceilings(options.ceilings_path);
    if (!loaded) return loaded.status();
    run.ceilings = std::move(*loaded);
  }
  std::ostringstream gb_stream, gb_messages;  // the JSON, and warnings kept out of it
  SessionJsonReporter reporter;
  reporter.SetOutputStream(&gb_stream);
  reporter.SetErrorStream(&gb_messages);
  BenchInputCache cache;
  for (const auto& p : *planned) {
    BenchResult r;
    r.id = CaseId{p.problem, p.impl->backend, p.impl->variant, ""};
    r.block = p.block;
    r.nodes = p.nodes;
    if (!p.device) {
      r.status = StatusCode::skipped;
      r.reason = p.absent_reason;
      if (on_result) on_result(r, nullptr, run.results.size() + 1, planned->size());
      run.results.push_back(std::move(r));
      continue;
    }
    const DeviceInfo& info = p.device->info();
    r.id.device_index = info.id.substr(info.id.find(':') + 1);
    r.device = info.id;
    r.device_name = info.name;
    auto finish = [&](const Status& s) {
      if (!s.is_ok()) r.status = s.code, r.reason = s.message;
      auto c = run.ceilings.find(r.device);
      if (on_result) on_result(r, c == run.ceilings.end() ? nullptr : &c->second, run.results.size() + 1, planned->size());
      run.results.push_back(std::move(r));
    };
    Status support = p.impl->supports(p.problem, *p.device);
    if (!support.is_ok()) {
      finish(support);
      continue;
    }
    if (!run.ceilings.count(info.id)) run.ceilings[info.id] = measure_ceilings(*p.device, ProbeOptions{true});
    if (cache.problem != p.problem.to_string()) {
      cache = {};
      auto sig = p.spec->signature(p.problem);
      if (!sig) {
        finish(sig.status());
        continue;
      }
      auto inputs = make_bench_inputs(*p.spec, p.problem, *sig);
      if (!inputs) {
        finish(inputs.status());
        continue;
      }
      cache = {p.problem.to_string(), std::move(*inputs)};
    }
    auto prepared = PreparedCase::prepare(*p.spec, *p.impl, *p.device, p.problem, cache.inputs, options, r);
    if (!prepared) {
      finish(prepared.status());
      continue;
    }
    Status timed = time_case(**prepared, options, reporter, r);
    if (timed.is_ok()) flag_impossible_figures(&run.ceilings[info.id], r);
    finish(timed);
  }
  reporter.finish();
  try {
    run.google_benchmark = nlohmann::json::parse(gb_stream.str());
  } catch (const std::exception& e) {
    return Status::error(std::string("Google Benchmark's JSON output did not parse: ") + e.what());
  }
  return run;
}

}  // namespace dnnb
