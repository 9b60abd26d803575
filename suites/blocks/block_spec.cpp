#include "suites/blocks/block_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "core/compare.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

// A graph and its plan on one backend and device, made once per problem: run() is timed, and
// parsing some twenty node problems per launch would add host time a GPU waits for.
struct Prepared {
  BlockGraph graph;
  BlockPlan plan;
  // No node keeps host state per launch (OpSpec::deferred_input_checks): the device may
  // record the block's launches once and replay them (DeviceRuntime::run_recorded).
  bool recordable = true;
};

// What a block's launches depend on besides the problem: every operand's buffer and offset.
std::string recording_key(const OpCall& call, const std::string& backend) {
  std::string key = call.problem.to_string() + "@" + backend;
  char at[48];
  auto add = [&](const Tensor& t) {
    std::snprintf(at, sizeof at, "|%p+%lld", t.buffer ? t.buffer->handle : nullptr, static_cast<long long>(t.offset));
    key += at;
  };
  for (const Tensor& t : call.inputs) add(t);
  for (const Tensor& t : call.outputs) add(t);
  add(call.workspace);
  return key;
}

Result<std::shared_ptr<const Prepared>> prepare(const BlockDef& def, const Problem& problem, const std::string& backend,
                                                const DeviceRuntime& device) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Prepared>> cache;
  char where[32];
  std::snprintf(where, sizeof where, "%p", static_cast<const void*>(&device));
  const std::string key = problem.to_string() + "@" + backend + "@" + where;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto graph = def.build(problem);
  if (!graph) return graph.status();
  auto plan = plan_block(*graph, backend, device);
  if (!plan) return plan.status();
  bool recordable = true;
  for (const BlockNode& n : graph->nodes) recordable = recordable && !Registry::instance().find_op(n.problem.op)->deferred_input_checks;
  auto made = std::make_shared<const Prepared>(Prepared{std::move(*graph), std::move(*plan), recordable});
  std::lock_guard<std::mutex> lock(mutex);
  cache[key] = made;
  return std::shared_ptr<const Prepared>(made);
}

double rms_of_f64(const Tensor& t) {
  const auto* d = static_cast<const double*>(t.host_data());
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += d[i] * d[i];
  return t.numel() ? std::sqrt(s / static_cast<double>(t.numel())) : 0;
}

Status fill_block_inputs(const BlockDef& def, const Problem& problem, std::vector<Tensor>& inputs, Rng& rng) {
  auto graph = def.build(problem);
  if (!graph) return graph.status();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BlockTensor& spec = graph->inputs[i];
    Tensor& t = inputs[i];
    void* data = t.host_data();
    for (int64_t e = 0; e < t.numel(); ++e) {
      double v = 0;
      switch (spec.init) {
        case BlockInit::normal: v = rng.normal(); break;
        case BlockInit::matrix: v = rng.normal() / std::sqrt(static_cast<double>(spec.fan_in)); break;
        case BlockInit::scale: v = 1 + 0.1 * rng.normal(); break;
        case BlockInit::shift: v = 0.1 * rng.normal(); break;
        case BlockInit::positions: v = static_cast<double>(e % t.shape.back()); break;
      }
      store_element(data, t.dtype, e, v);
    }
  }
  if (def.step_inputs) return def.step_inputs(problem, 0, inputs, rng);
  return Status::ok();
}

// The block's bound per output: its depth's allowance x the rms of the float64 graph's output
// for random cases; for fixtures at most 2x torch's own error against the float64 module plus
// that allowance (docs/blocks.md).
Result<std::vector<OutputBound>> block_bounds(const BlockDef& def, const Problem& problem, const std::vector<Tensor>& inputs) {
  auto graph = def.build(problem);
  if (!graph) return graph.status();
  auto values = run_block_f64(*graph, inputs);
  if (!values) return values.status();
  const auto allowance = value_allowances(*graph, *values);
  std::vector<OutputBound> bounds;
  for (const std::string& out : graph->outputs) {
    const double atol = allowance.at(out) * value_scale(*graph, out, values->at(out));
    bounds.push_back({0, atol, 2, atol});
  }
  return bounds;
}

// The bound of each state input after a step (docs/blocks.md, "The decode step"): the value the
// block stores into it is within its allowance x its rms of the float64 graph's, and each side
// is then rounded to the state's dtype (one eps relative). Inputs that are not state: exact.
Result<std::vector<OutputBound>> block_state_bounds(const BlockDef& def, const Problem& problem,
                                                    const std::vector<Tensor>& inputs) {
  auto graph = def.build(problem);
  if (!graph) return graph.status();
  auto values = run_block_f64(*graph, inputs);  // stores into the state as this step does: running it again leaves it so
  if (!values) return values.status();
  const auto allowance = value_allowances(*graph, *values);
  std::vector<OutputBound> bounds(graph->inputs.size());
  for (size_t i = 0; i < graph->inputs.size(); ++i) {
    const BlockTensor& t = graph->inputs[i];
    if (!t.state) continue;
    auto stored = to_host(values->at(t.stores));  // contiguous (a view's source may not be)
    if (!stored) return stored.status();
    bounds[i].rtol = dtype_epsilon(t.dtype);
    bounds[i].atol = allowance.at(t.stores) * rms_of_f64(*stored);
  }
  return bounds;
}

Implementation block_implementation(const BlockDef& def, const std::string& backend, std::vector<DType> dtypes) {
  Implementation impl;
  impl.op = def.name;
  impl.backend = backend;
  impl.dtypes = std::move(dtypes);
  impl.supports = [def, backend](const Problem& p, const DeviceRuntime& device) -> Status {
    auto prepared = prepare(def, p, backend, device);
    return prepared.status();
  };
  impl.workspace_bytes = [def, backend](const Problem& p, const DeviceRuntime& device) -> Result<size_t> {
    auto prepared = prepare(def, p, backend, device);
    if (!prepared) return prepared.status();
    return (*prepared)->plan.workspace_bytes;
  };
  impl.run = [def, backend](OpCall& call) -> Status {
    auto prepared = prepare(def, call.problem, backend, call.device);
    if (!prepared) return prepared.status();
    const Prepared& p = **prepared;
    if (!p.recordable) return run_block(p.graph, p.plan, call);
    auto steps = block_steps(p.graph, p.plan, call);
    if (!steps) return steps.status();
    return call.device.run_recorded(recording_key(call, backend), *steps);
  };
  // The unit of the node with the most FLOPs (a projection: the tensor cores at bf16 on CUDA).
  impl.compute_unit_for = [def, backend](const Problem& p, const DeviceRuntime& device) -> std::string {
    auto prepared = prepare(def, p, backend, device);
    if (!prepared) return "f32_fma";
    std::string unit = "f32_fma";
    double most = -1;
    const auto& g = (*prepared)->graph;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const OpSpec* spec = Registry::instance().find_op(g.nodes[n].problem.op);
      const double flops = spec->flops ? spec->flops(g.nodes[n].problem) : 0;
      if (flops > most) {
        most = flops;
        unit = (*prepared)->plan.nodes[n].impl->unit_for(g.nodes[n].problem, device);
      }
    }
    return unit;
  };
  return impl;
}

// After static registration: an implementation on every backend with all of the graph's ops,
// an absence naming the missing node and op elsewhere (backends of this build only).
void derive_implementations(const BlockDef& def, Registry& reg) {
  std::set<std::string> built;
  for (const auto& impl : reg.implementations()) built.insert(impl.backend);
  auto example = problem_at(*reg.find_op(def.name), def.check_problems.front(), def.dtypes.front());
  if (!example || !*example) return;
  auto graph = def.build(**example);
  if (!graph) {
    std::fprintf(stderr, "dnnblocks: block %s: %s\n", def.name.c_str(), graph.status().message.c_str());
    return;
  }
  for (const BackendInfo& b : backends()) {
    if (b.name == "reference" || !built.count(b.name)) continue;
    if (reg.find_implementation(def.name, b.name, "")) continue;  // a fused default registered as the block's own
    const std::string missing = block_missing_op(*graph, b.name);
    if (!missing.empty()) {
      reg.add_absence({def.name, b.name, missing});
      continue;
    }
    // The dtypes every node's implementation takes.
    std::vector<DType> dtypes;
    for (DType d : def.dtypes) {
      bool all = true;
      for (const BlockNode& n : graph->nodes) {
        const auto& nd = reg.find_implementation(n.problem.op, b.name, "")->dtypes;
        all = all && std::find(nd.begin(), nd.end(), d) != nd.end();
      }
      if (all) dtypes.push_back(d);
    }
    if (dtypes.empty()) {
      reg.add_absence({def.name, b.name, "no dtype of the block that every node's implementation takes"});
      continue;
    }
    reg.add_implementation(block_implementation(def, b.name, dtypes));
  }
}

std::map<std::string, std::function<Result<BlockGraph>(const Problem&)>>& builders() {
  static std::map<std::string, std::function<Result<BlockGraph>(const Problem&)>> map;
  return map;
}

}  // namespace

Result<BlockGraph> block_graph(const Problem& problem) {
  auto it = builders().find(problem.op);
  if (it == builders().end()) return Status::bad_input(problem.op + " is not a block");
  return it->second(problem);
}

bool register_block(BlockDef def) {
  builders()[def.name] = def.build;
  OpSpec spec = ops::op_spec("blocks", def.name, def.torch, def.dtypes, ToleranceClass::block);
  spec.check_problems = def.check_problems;
  spec.bench_problems = def.bench_problems;
  spec.signature = [def](const Problem& p) -> Result<Signature> {
    DNNB_TRY(ops::check_problem(p, def.dtypes, def.param_keys, 3));
    DNNB_TRY(ops::expect_shape(p, 3, "BxSxE (batch, sequence, hidden)"));
    auto graph = def.build(p);
    if (!graph) return graph.status();
    Signature sig;
    for (const BlockTensor& t : graph->inputs) {
      sig.inputs.push_back(ops::tensor_spec(t.name, t.dtype, t.shape));
      sig.inputs.back().state = t.state;
    }
    for (const std::string& out : graph->outputs) {
      const BlockValue& v = graph->values.at(out);
      sig.outputs.push_back(ops::tensor_spec(out, v.dtype, v.shape));
    }
    return sig;
  };
  spec.flops = [def](const Problem& p) {
    auto graph = def.build(p);
    double total = 0;
    if (!graph) return total;
    for (const BlockNode& n : graph->nodes) {
      const OpSpec* node = Registry::instance().find_op(n.problem.op);
      if (node->flops) total += node->flops(n.problem);
    }
    return total;
  };
  spec.tokens = [](const Problem& p) { return static_cast<double>(p.shape.at(0) * p.shape.at(1)); };
  spec.nodes = [def](const Problem& p) -> Result<std::vector<std::pair<std::string, Problem>>> {
    auto graph = def.build(p);
    if (!graph) return graph.status();
    std::vector<std::pair<std::string, Problem>> nodes;
    for (const BlockNode& n : graph->nodes) nodes.emplace_back(n.name, n.problem);
    return nodes;
  };
  spec.fill_inputs = [def](const Problem& p, std::vector<Tensor>& inputs, Rng& rng) {
    return fill_block_inputs(def, p, inputs, rng);
  };
  spec.output_bounds = [def](const Problem& p, const std::vector<Tensor>& inputs) { return block_bounds(def, p, inputs); };
  spec.steps = def.steps;
  spec.step_inputs = def.step_inputs;
  // check asks only for a block with state inputs.
  spec.state_bounds = [def](const Problem& p, const std::vector<Tensor>& inputs) {
    return block_state_bounds(def, p, inputs);
  };
  if (def.bytes) spec.bytes = def.bytes;
  spec.reference = [def](const Problem& p, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) -> Status {
    auto graph = def.build(p);
    if (!graph) return graph.status();
    auto values = run_block_f64(*graph, inputs);
    if (!values) return values.status();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& v = values->at(graph->outputs[i]);
      std::memcpy(outputs[i].host_data(), v.host_data(), storage_bytes(DType::f64, v.numel()));
    }
    return Status::ok();
  };
  spec.explain_mismatch = [def](const Implementation& impl, const OpCall& call, const std::vector<Tensor>& inputs) {
    if (impl.backend == "reference") return std::string();
    auto prepared = prepare(def, call.problem, impl.backend, call.device);
    if (!prepared) return "no node report: " + prepared.status().message;
    const BlockGraph& graph = (*prepared)->graph;
    auto device_values = bind_block(graph, (*prepared)->plan, call);
    if (!device_values) return "no node report: " + device_values.status().message;
    std::map<std::string, Tensor> ours;
    for (const BlockNode& n : graph.nodes)
      for (const std::string& out : n.outputs) {
        auto host = to_host(device_values->at(out));
        if (!host) return "no node report: " + host.status().message;
        ours[out] = *host;
      }
    auto f64 = run_block_f64(graph, inputs);
    if (!f64) return "no node report: " + f64.status().message;
    const std::string& id = call.device.info().id;
    const size_t colon = id.find(':');
    const std::string line =
        first_divergence(graph, ours, *f64, impl.backend, colon == std::string::npos ? "" : id.substr(colon + 1));
    return line.empty() ? "every node's output is within its allowance of the float64 graph" : line;
  };
  const bool added = register_op(std::move(spec));
  Registry::instance().add_deriver([def](Registry& reg) { derive_implementations(def, reg); });
  return added;
}

Result<HeadsKvFfn> parse_heads_kv_ffn(const Problem& p) {
  auto heads = p.get_int("heads", 0);
  if (!heads) return heads.status();
  auto kv_heads = p.get_int("kv", *heads);
  if (!kv_heads) return kv_heads.status();
  auto ffn = p.get_int("ffn", 0);
  if (!ffn) return ffn.status();
  return HeadsKvFfn{*heads, *kv_heads, *ffn};
}

Status check_kv_ffn(const Problem& p, const HeadsKvFfn& w) {
  if (w.kv < 1 || w.h % w.kv != 0)
    return Status::bad_input(p.op + ": kv=" + std::to_string(w.kv) + " does not divide heads=" + std::to_string(w.h));
  if (w.f < 1) return Status::bad_input(p.op + ": ffn=" + std::to_string(w.f) + ": the MLP width must be given (ffn=F >= 1)");
  return Status::ok();
}

}  // namespace dnnb
