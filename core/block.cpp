#include "core/block.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include "core/compare.h"
#include "core/host_device.h"

namespace dnnb {

const BlockView* BlockGraph::view_of(const std::string& name) const {
  for (const auto& [n, v] : views)
    if (n == name) return &v;
  return nullptr;
}

bool BlockGraph::is_input(const std::string& name) const {
  return std::any_of(inputs.begin(), inputs.end(), [&](const BlockTensor& t) { return t.name == name; });
}

bool BlockGraph::is_output(const std::string& name) const {
  return std::find(outputs.begin(), outputs.end(), name) != outputs.end();
}

// ---------------------------------------------------------------- declaring

void BlockBuilder::fail(const std::string& why) {
  if (error_.is_ok()) error_ = Status::bad_input(block_.op + ": " + why);
}

const BlockValue* BlockBuilder::value(const std::string& name, const std::string& user) {
  auto it = graph_.values.find(name);
  if (it == graph_.values.end()) {
    fail(user + " reads '" + name + "', which nothing defines before it");
    return nullptr;
  }
  return &it->second;
}

void BlockBuilder::input(const std::string& name, const Shape& shape, DType dtype, BlockInit init) {
  if (graph_.values.count(name)) fail("value '" + name + "' defined twice");
  graph_.inputs.push_back({name, dtype, shape, false, init, 1, false, ""});
  graph_.values[name] = {dtype, shape};
}

void BlockBuilder::weight(const std::string& name, const Shape& shape, BlockInit init, int64_t fan_in) {
  if (graph_.values.count(name)) fail("value '" + name + "' defined twice");
  graph_.inputs.push_back({name, block_.dtype, shape, true, init, fan_in, false, ""});
  graph_.values[name] = {block_.dtype, shape};
}

void BlockBuilder::state(const std::string& name, const Shape& shape, const std::string& stores) {
  if (graph_.values.count(name)) fail("value '" + name + "' defined twice");
  graph_.inputs.push_back({name, block_.dtype, shape, false, BlockInit::normal, 1, true, stores});
  graph_.values[name] = {block_.dtype, shape};
}

void BlockBuilder::reshape(const std::string& name, const std::string& of, const Shape& shape) {
  const BlockValue* v = value(of, "view " + name);
  if (!v) return;
  if (shape_numel(shape) != shape_numel(v->shape))
    fail("view " + name + ": " + shape_to_string(v->shape) + " does not reshape to " + shape_to_string(shape));
  graph_.views.push_back({name, {BlockView::Kind::reshape, of, shape}});
  graph_.values[name] = {v->dtype, shape};
}

void BlockBuilder::transpose(const std::string& name, const std::string& of) {
  const BlockValue* v = value(of, "view " + name);
  if (!v) return;
  if (v->shape.size() < 2) {
    fail("view " + name + ": " + of + " has fewer than 2 dims");
    return;
  }
  Shape s = v->shape;
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  graph_.views.push_back({name, {BlockView::Kind::transpose, of, {}}});
  graph_.values[name] = {v->dtype, s};
}

void BlockBuilder::node(const std::string& name, const std::string& op, const std::string& problem,
                        const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  const OpSpec* spec = Registry::instance().find_op(op);
  if (!spec) return fail("node " + name + ": no registered op '" + op + "'");
  auto p = Problem::parse(op + ":" + dtype_name(block_.dtype) + ":" + problem);
  if (!p) return fail("node " + name + ": " + p.status().message);
  auto sig = spec->signature(*p);
  if (!sig) return fail("node " + name + ": " + sig.status().message);
  if (inputs.size() != sig->inputs.size() || outputs.size() != sig->outputs.size())
    return fail("node " + name + ": " + op + " takes " + std::to_string(sig->inputs.size()) + " inputs and gives " +
                std::to_string(sig->outputs.size()) + " outputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BlockValue* v = value(inputs[i], "node " + name);
    if (!v) return;
    const TensorSpec& want = sig->inputs[i];
    if (v->shape != want.shape || v->dtype != want.dtype)
      return fail("node " + name + ": operand " + want.name + " of " + p->to_string() + " is " + dtype_name(want.dtype) +
                  " " + shape_to_string(want.shape) + ", value '" + inputs[i] + "' is " + dtype_name(v->dtype) + " " +
                  shape_to_string(v->shape));
  }
  BlockNode n{name, *p, inputs, outputs};
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (n.outputs[i].empty()) n.outputs[i] = name + "." + sig->outputs[i].name;
    if (graph_.values.count(n.outputs[i])) return fail("node " + name + ": value '" + n.outputs[i] + "' defined twice");
    graph_.values[n.outputs[i]] = {sig->outputs[i].dtype, sig->outputs[i].shape};
  }
  graph_.nodes.push_back(std::move(n));
}

void BlockBuilder::output(const std::string& name) {
  if (!value(name, "the block's output")) return;
  if (graph_.view_of(name) || graph_.is_input(name)) return fail("output '" + name + "' must be a node's output");
  graph_.outputs.push_back(name);
}

std::string BlockBuilder::layout_of(const std::string& block_input, const std::string& operand) const {
  const std::string layout = block_.get(block_input + ".layout");
  return layout.empty() ? "" : operand + ".layout=" + layout;
}

Result<BlockGraph> BlockBuilder::finish() {
  if (!error_.is_ok()) return error_;
  if (graph_.outputs.empty()) return Status::bad_input(block_.op + ": a block without outputs");
  for (const BlockTensor& t : graph_.inputs)
    if (t.state && !graph_.values.count(t.stores))
      return Status::bad_input(block_.op + ": state '" + t.name + "' stores '" + t.stores + "', which nothing defines");
  return graph_;
}

// ---------------------------------------------------------------- planning and running

namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// A view of `t` as the graph declares it.
Result<Tensor> apply_view(const BlockView& v, const Tensor& t) {
  switch (v.kind) {
    case BlockView::Kind::reshape: return t.reshape(v.shape);
    case BlockView::Kind::transpose: return t.transpose(t.ndim() - 2, t.ndim() - 1);
  }
  return Status::error("unknown view kind");
}

// Whether `t`'s strides are the storage its operand spec describes (contiguous, permuted by
// `<operand>.layout=transposed`, rows padded by `layout=padded`): what the node's problem says
// it reads, so that the problem is the node's exact repro.
bool layout_matches(const Tensor& t, const TensorSpec& spec) {
  const int n = t.ndim();
  if (n == 0) return true;
  std::vector<int> order = spec.storage_order;
  if (order.empty())
    for (int i = 0; i < n; ++i) order.push_back(i);
  if (static_cast<int>(order.size()) != n) return false;
  Shape storage(n);
  for (int i = 0; i < n; ++i) storage[i] = t.shape[order[i]];
  storage[n - 1] += spec.row_padding;
  const Shape strides = contiguous_strides(storage);
  for (int i = 0; i < n; ++i)
    if (t.shape[order[i]] > 1 && t.strides[order[i]] != strides[i]) return false;
  return true;
}

// Every value from the inputs, views and `define` (a node output's tensor).
template <typename Define>
Result<std::map<std::string, Tensor>> bind_values(const BlockGraph& graph, const std::vector<Tensor>& inputs,
                                                  Define define) {
  if (inputs.size() != graph.inputs.size())
    return Status::error("block: " + std::to_string(inputs.size()) + " inputs for " + std::to_string(graph.inputs.size()));
  std::map<std::string, Tensor> t;
  for (size_t i = 0; i < inputs.size(); ++i) t[graph.inputs[i].name] = inputs[i];
  size_t views_done = 0;
  auto resolve_views = [&]() -> Status {
    for (; views_done < graph.views.size(); ++views_done) {
      const auto& [name, view] = graph.views[views_done];
      auto src = t.find(view.of);
      if (src == t.end()) return Status::ok();  // its source is a later node's output
      auto made = apply_view(view, src->second);
      if (!made) return Status::error("block view " + name + ": " + made.status().message);
      t[name] = *made;
    }
    return Status::ok();
  };
  DNNB_TRY(resolve_views());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (const std::string& out : graph.nodes[n].outputs) {
      auto made = define(n, out);
      if (!made) return made.status();
      t[out] = *made;
    }
    DNNB_TRY(resolve_views());
  }
  return t;
}

Tensor workspace_view(const Tensor& workspace, size_t byte_offset, DType dtype, const Shape& shape) {
  Tensor v;
  v.dtype = dtype;
  v.shape = shape;
  v.strides = contiguous_strides(shape);
  v.buffer = workspace.buffer;
  v.offset = static_cast<int64_t>((storage_bytes(DType::u8, workspace.offset) + byte_offset) / dtype_size(dtype));
  return v;
}

}  // namespace

std::string block_missing_op(const BlockGraph& graph, const std::string& backend) {
  for (const BlockNode& n : graph.nodes)
    if (!Registry::instance().find_implementation(n.problem.op, backend, ""))
      return "node " + n.name + ": " + backend + " has no " + n.problem.op;
  return "";
}

Result<BlockPlan> plan_block(const BlockGraph& graph, const std::string& backend, const DeviceRuntime& device) {
  BlockPlan plan;
  size_t at = 0;
  for (const BlockNode& n : graph.nodes) {
    BlockPlan::Node pn;
    pn.impl = Registry::instance().find_implementation(n.problem.op, backend, "");
    if (!pn.impl) return Status::unsupported("node " + n.name + ": " + backend + " has no " + n.problem.op);
    Status s = pn.impl->supports(n.problem, device);
    if (!s.is_ok()) return Status{s.code, "node " + n.name + " (" + n.problem.to_string() + "): " + s.message};
    auto sig = Registry::instance().find_op(n.problem.op)->signature(n.problem);
    if (!sig) return sig.status();
    pn.sig = std::move(*sig);
    if (pn.impl->workspace_bytes) {
      auto bytes = pn.impl->workspace_bytes(n.problem, device);
      if (!bytes) return bytes.status();
      pn.workspace_bytes = *bytes;
    }
    if (pn.workspace_bytes) {
      pn.workspace_offset = at;
      at = align_up(at + pn.workspace_bytes);
    }
    for (const std::string& out : n.outputs) {
      if (graph.is_output(out)) continue;
      const BlockValue& v = graph.values.at(out);
      plan.offsets[out] = at;
      at = align_up(at + storage_bytes(v.dtype, shape_numel(v.shape)));
    }
    plan.nodes.push_back(pn);
  }
  plan.workspace_bytes = at;
  plan.after = node_dependencies(graph);
  return plan;
}

Result<std::map<std::string, Tensor>> bind_block(const BlockGraph& graph, const BlockPlan& plan, const OpCall& call) {
  if (plan.workspace_bytes > 0 &&
      (!call.workspace.buffer || storage_bytes(call.workspace.dtype, call.workspace.numel()) < plan.workspace_bytes))
    return Status::error("block " + call.problem.op + ": the workspace is smaller than the plan's " +
                         std::to_string(plan.workspace_bytes) + " bytes");
  return bind_values(graph, call.inputs, [&](size_t, const std::string& out) -> Result<Tensor> {
    for (size_t i = 0; i < graph.outputs.size(); ++i)
      if (graph.outputs[i] == out) return call.outputs.at(i);
    const BlockValue& v = graph.values.at(out);
    return workspace_view(call.workspace, plan.offsets.at(out), v.dtype, v.shape);
  });
}

std::vector<std::vector<size_t>> node_dependencies(const BlockGraph& graph) {
  // The value whose memory a name is: views resolved to what they view.
  auto root = [&](std::string name) {
    while (const BlockView* v = graph.view_of(name)) name = v->of;
    return name;
  };
  std::set<std::string> state;
  for (const BlockTensor& t : graph.inputs)
    if (t.state) state.insert(t.name);
  std::vector<std::set<std::string>> reads(graph.nodes.size()), writes(graph.nodes.size());
  std::vector<std::vector<size_t>> after(graph.nodes.size());
  for (size_t j = 0; j < graph.nodes.size(); ++j) {
    for (const std::string& in : graph.nodes[j].inputs) {
      const std::string r = root(in);
      reads[j].insert(r);
      if (state.count(r)) writes[j].insert(r);  // updated in place
    }
    for (const std::string& out : graph.nodes[j].outputs) writes[j].insert(root(out));
    const OpSpec* spec = Registry::instance().find_op(graph.nodes[j].problem.op);
    const bool alone = spec && spec->device_wide_counters;
    for (size_t i = 0; i < j; ++i) {
      const OpSpec* earlier = Registry::instance().find_op(graph.nodes[i].problem.op);
      bool follows = alone || (earlier && earlier->device_wide_counters);
      for (const std::string& w : writes[i]) follows = follows || reads[j].count(w) || writes[j].count(w);
      for (const std::string& r : reads[i]) follows = follows || writes[j].count(r);
      if (follows) after[j].push_back(i);
    }
  }
  return after;
}

Result<std::vector<LaunchStep>> block_steps(const BlockGraph& graph, const BlockPlan& plan, OpCall& call) {
  auto bound = bind_block(graph, plan, call);
  if (!bound) return bound.status();
  auto values = std::make_shared<const std::map<std::string, Tensor>>(std::move(*bound));
  if (plan.after.size() != graph.nodes.size() || plan.nodes.size() != graph.nodes.size())
    return Status::error("block " + call.problem.op + ": the plan is not this graph's");
  std::vector<LaunchStep> steps;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    LaunchStep step;
    step.after = plan.after[n];
    step.enqueue = [&graph, &plan, &call, values, n]() -> Status {
      const BlockNode& node = graph.nodes[n];
      const BlockPlan::Node& pn = plan.nodes[n];
      Tensor ws;
      if (pn.workspace_bytes) ws = workspace_view(call.workspace, pn.workspace_offset, DType::u8, {static_cast<int64_t>(pn.workspace_bytes)});
      OpCall node_call{node.problem, call.device, {}, {}, ws};
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const Tensor& t = values->at(node.inputs[i]);
        if (!layout_matches(t, pn.sig.inputs[i]))
          return Status::error("node " + node.name + ": value '" + node.inputs[i] + "' (" + t.describe() +
                               ") is not laid out as operand " + pn.sig.inputs[i].name + " of " + node.problem.to_string());
        node_call.inputs.push_back(t);
      }
      for (const std::string& out : node.outputs) node_call.outputs.push_back(values->at(out));
      Status s = pn.impl->run(node_call);
      if (!s.is_ok()) return Status{s.code, "node " + node.name + " (" + node.problem.to_string() + "): " + s.message};
      return Status::ok();
    };
    steps.push_back(std::move(step));
  }
  return steps;
}

Status run_block(const BlockGraph& graph, const BlockPlan& plan, OpCall& call) {
  auto steps = block_steps(graph, plan, call);
  if (!steps) return steps.status();
  for (const LaunchStep& step : *steps) DNNB_TRY(step.enqueue());
  return Status::ok();
}

Result<std::map<std::string, Tensor>> run_block_f64(const BlockGraph& graph, const std::vector<Tensor>& inputs) {
  // Every node output is allocated first, then the nodes fill them in order.
  auto values = bind_values(graph, inputs, [&](size_t, const std::string& out) -> Result<Tensor> {
    const BlockValue& v = graph.values.at(out);
    return empty_tensor(scratch_host(), DType::f64, v.shape);
  });
  if (!values) return values.status();
  for (const BlockNode& node : graph.nodes) {
    const OpSpec* spec = Registry::instance().find_op(node.problem.op);
    std::vector<Tensor> in, out;
    for (const std::string& name : node.inputs) in.push_back(values->at(name));
    for (const std::string& name : node.outputs) out.push_back(values->at(name));
    Status s = spec->reference(node.problem, in, out);
    if (!s.is_ok()) return Status{s.code, "node " + node.name + " (" + node.problem.to_string() + "), float64: " + s.message};
  }
  return values;
}

// ---------------------------------------------------------------- tolerance and divergence

double node_allowance(const BlockNode& node, size_t output) {
  const OpSpec* spec = Registry::instance().find_op(node.problem.op);
  const DType dtype = node.problem.dtype;
  const double eps = dtype_epsilon(dtype), u = 0x1p-24;
  const bool f32 = dtype == DType::f32;
  // The norms' dw and db: f32 sums over R rows (docs/ops-family1.md's 8 (sqrt(R) + 4) u of
  // sum_rows |terms|, whose rms is at most sqrt(R) x the sum's for terms of independent signs),
  // plus the output's rounding.
  if (output > 0 && (node.problem.op == "layernorm_bwd" || node.problem.op == "rmsnorm_bwd")) {
    const double cols = static_cast<double>(node.problem.shape.back());
    const double rows = static_cast<double>(shape_numel(node.problem.shape)) / cols;
    return 8 * (rows + 4 * std::sqrt(rows)) * u + eps;
  }
  switch (spec->tolerance) {
    case ToleranceClass::selection: return 0;
    case ToleranceClass::exact: return eps;
    case ToleranceClass::elementwise: return (f32 ? 32 : 1) * eps;
    case ToleranceClass::reduction:
    case ToleranceClass::normalization:
    case ToleranceClass::loss: return (f32 ? 64 : 2) * eps;
    case ToleranceClass::dot_product: {
      // 8 sqrt(K) u of sum |a||b|, whose rms is at most sqrt(K) x the output's for inputs of
      // independent signs, plus the output's rounding.
      const double k = static_cast<double>(spec->dot_product_error(node.problem, output).length);
      return 8 * k * u + eps;
    }
    case ToleranceClass::attention: {
      // One rounding of p and of o, and the f32 sum over the keys, in units of max sum p|v|;
      // the rms of o over a causal row of L keys is about that over sqrt(L).
      const double sk = static_cast<double>(node.problem.get_int("sk", node.problem.shape.size() > 2 ? node.problem.shape[2] : 1).value());
      return (3 * eps + 8 * std::sqrt(sk) * u) * std::sqrt(sk);
    }
    case ToleranceClass::block: return 0;  // a block is not a node
  }
  return eps;
}

namespace {
bool is_norm(const BlockNode& node) { return node.problem.op == "layernorm" || node.problem.op == "rmsnorm"; }
}  // namespace

double norm_amplification(const BlockNode& node, const Tensor& x) {
  if (!is_norm(node)) return 1;
  const bool layernorm = node.problem.op == "layernorm";
  auto given = node.problem.get_double("eps", layernorm ? 1e-5 : 1e-6);
  const double eps = given ? *given : 0;
  auto host = to_host(x);
  if (!host || x.ndim() == 0) return 1;
  const void* d = host->host_data();
  const int64_t cols = x.shape.back(), rows = cols ? x.numel() / cols : 0;
  double all = 0, smallest = INFINITY;
  int64_t counted = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, squares = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double v = load_element(d, host->dtype, r * cols + c);
      sum += v;
      squares += v * v;
    }
    const double n = static_cast<double>(cols), mean = sum / n;
    // The divisor of the row: sqrt(var + eps), var the biased variance (sum (x - mean)^2 / n,
    // formed in two passes), or sqrt(mean x^2 + eps).
    double moment = squares / n;
    if (layernorm) {
      moment = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double centred = load_element(d, host->dtype, r * cols + c) - mean;
        moment += centred * centred / n;
      }
    }
    const double divisor = std::sqrt(moment + eps);
    if (!std::isfinite(squares) || !(divisor > 0)) continue;  // a row torch's module makes NaN or inf too
    smallest = std::min(smallest, divisor);
    all += squares;
    counted += cols;
  }
  if (counted == 0 || !std::isfinite(smallest)) return 1;
  return std::max(1.0, std::sqrt(all / static_cast<double>(counted)) / smallest);
}

namespace {

// Allowances along the graph: a node's output carries the largest allowance of its inputs, plus
// its own, plus for a norm what it adds to the error of its x (`amplification(node)`, 1 for
// other nodes): the part of x's error that does not scale with its row, min(allowance(x),
// 2 eps), grown by amplification - 1 (docs/blocks.md, "The tolerance").
template <typename Amplification>
std::map<std::string, double> propagate_allowances(const BlockGraph& graph, Amplification amplification) {
  std::map<std::string, double> a;
  for (const BlockTensor& t : graph.inputs) a[t.name] = 0;
  auto resolve = [&]() {
    for (const auto& [name, view] : graph.views)
      if (a.count(view.of)) a[name] = a[view.of];
  };
  resolve();
  for (const BlockNode& n : graph.nodes) {
    double in = 0;
    for (const std::string& i : n.inputs) in = std::max(in, a[i]);
    const double x = a[n.inputs.front()];
    const double grown = x > 0 ? std::min(x, 2 * dtype_epsilon(n.problem.dtype)) * (amplification(n) - 1) : 0;
    for (size_t o = 0; o < n.outputs.size(); ++o) a[n.outputs[o]] = in + grown + node_allowance(n, o);
    resolve();
  }
  return a;
}

}  // namespace

std::map<std::string, double> value_allowances(const BlockGraph& graph) {
  return propagate_allowances(graph, [](const BlockNode&) { return 1.0; });
}

std::map<std::string, double> value_allowances(const BlockGraph& graph, const std::map<std::string, Tensor>& f64) {
  return propagate_allowances(graph, [&](const BlockNode& n) {
    auto x = f64.find(n.inputs.front());
    return is_norm(n) && x != f64.end() ? norm_amplification(n, x->second) : 1.0;
  });
}

double value_scale(const BlockGraph& graph, const std::string& value, const Tensor& f64) {
  const auto* d = static_cast<const double*>(f64.host_data());
  double s = 0, largest = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < f64.numel(); ++i)
    if (std::isfinite(d[i])) {
      s += d[i] * d[i];
      largest = std::max(largest, std::fabs(d[i]));
      ++n;
    }
  const double rms = n ? std::sqrt(s / static_cast<double>(n)) : 0;
  // A weight or bias gradient sums x_t dy_t over the B S tokens: with few tokens its elements
  // are heavy-tailed (max / rms up to 15 at 7 tokens, where activations stay within 3 to 5),
  // and the largest carry the relative rounding errors of their few products, allowance x
  // their own size rather than x the rms.
  for (const BlockNode& node : graph.nodes)
    for (size_t o = 1; o < node.outputs.size(); ++o)
      if (node.outputs[o] == value &&
          (node.problem.op == "linear_bwd" || node.problem.op == "layernorm_bwd" || node.problem.op == "rmsnorm_bwd"))
        return std::max(rms, largest / 4);
  return rms;
}

std::string first_divergence(const BlockGraph& graph, const std::map<std::string, Tensor>& ours,
                             const std::map<std::string, Tensor>& f64, const std::string& backend,
                             const std::string& device_index) {
  const auto allowance = value_allowances(graph, f64);
  for (const BlockNode& n : graph.nodes) {
    for (const std::string& out : n.outputs) {
      auto got = ours.find(out);
      auto want = f64.find(out);
      if (got == ours.end() || want == f64.end()) continue;
      const double rms = value_scale(graph, out, want->second);
      Tolerance tol{0, allowance.at(out) * rms};
      Metrics m = compare_outputs(got->second, want->second, tol);
      std::string why;
      if (metrics_pass(m, &why)) continue;
      CaseId repro{n.problem, backend, "", device_index};
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "first divergent node: %s (%s), output '%s': max abs error %.3g at %s (got %.6g, float64 graph %.6g), "
                    "allowed %.3g (%.3g x scale %.3g); the node alone: dnnblocks check --case '%s'",
                    n.name.c_str(), n.problem.op.c_str(), out.c_str(), m.max_abs, m.worst_coord.c_str(), m.worst_got,
                    m.worst_expected, tol.atol, allowance.at(out), rms, repro.to_string().c_str());
      return buf;
    }
  }
  return "";
}

}  // namespace dnnb
