// A block is a graph of registered ops (docs/blocks.md): nodes (an op at a problem, input and
// output values by name), weights by their state_dict names, views (reshape, transpose)
// that cost no copy. One description per block, built from its problem, serves every backend:
// the backend's default implementation runs each node, on one device, with every intermediate
// value and node workspace planned once into the block's workspace (allocated before timing).
// The float64 graph (each node's reference on f64 values) is the block's oracle, and its node
// values name the first node that diverges when a case fails.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/registry.h"

namespace dnnb {

// How an input is drawn for a random case: every node's output stays of order 1, so a wrong
// element shows. normal: normal(0, 1) (activations); matrix: normal(0, 1 / fan_in) (a
// projection keeps its input's scale); scale: 1 + 0.1 normal (norm weights); shift: 0.1 normal
// (biases); positions: pos[b, s] = s (a prompt from position 0).
enum class BlockInit { normal, matrix, scale, shift, positions };

struct BlockTensor {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  bool weight = false;
  BlockInit init = BlockInit::normal;
  int64_t fan_in = 1;  // matrix weights
  // A state input (a KV cache, TensorSpec::state): a node updates it in place at every step,
  // storing the value `stores` (a node's output) rounded to its dtype; its bound after the last
  // step is that value's allowance plus the rounding (docs/blocks.md, "The decode step").
  bool state = false;
  std::string stores;
};

struct BlockView {
  enum class Kind { reshape, transpose };
  Kind kind = Kind::reshape;
  std::string of;   // the viewed value
  Shape shape;      // reshape: the new shape (of must be contiguous)
};

struct BlockNode {
  std::string name;                  // the submodule it computes ("attn.c_attn") or its role
  Problem problem;                   // the node's op at its shape and params
  std::vector<std::string> inputs;   // values, in the op's signature order
  std::vector<std::string> outputs;  // values it defines, signature order
};

struct BlockValue {
  DType dtype = DType::f32;
  Shape shape;
};

struct BlockGraph {
  std::vector<BlockTensor> inputs;                 // activations, then weights: the signature's order
  std::vector<std::pair<std::string, BlockView>> views;
  std::vector<BlockNode> nodes;                    // in execution order
  std::vector<std::string> outputs;                // the block's outputs, signature order
  std::map<std::string, BlockValue> values;        // every named value, views included

  const BlockView* view_of(const std::string& name) const;
  bool is_input(const std::string& name) const;
  // Values a node writes that are neither block outputs nor views: the intermediates.
  bool is_output(const std::string& name) const;
};

// Declares a graph; every error (an unknown value, an operand whose shape or dtype differs
// from the node op's signature) is kept and returned by finish(), naming the node.
class BlockBuilder {
 public:
  explicit BlockBuilder(const Problem& block) : block_(block) {}
  DType dtype() const { return block_.dtype; }
  void input(const std::string& name, const Shape& shape, DType dtype, BlockInit init);
  void input(const std::string& name, const Shape& shape) { input(name, shape, block_.dtype, BlockInit::normal); }
  void weight(const std::string& name, const Shape& shape, BlockInit init, int64_t fan_in = 1);
  // A state input of the block dtype, drawn normal(0, 1) (the block's step hook may rewrite it);
  // `stores` names the value a node stores into it (declared later; finish() checks it).
  void state(const std::string& name, const Shape& shape, const std::string& stores);
  void reshape(const std::string& name, const std::string& of, const Shape& shape);
  void transpose(const std::string& name, const std::string& of);  // last two dims swapped
  // `problem` is "shape[:params]" of `op` at the block's dtype. An output named "" is kept in
  // the workspace under "<node>.<output name>" (sdpa's lse when nothing reads it).
  void node(const std::string& name, const std::string& op, const std::string& problem,
            const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);
  void output(const std::string& name);
  Result<BlockGraph> finish();
  // "<operand>.layout=<layout>" when the block's problem lays out its input `block_input` so
  // (x.layout=padded), for the nodes that read that input directly; "" otherwise.
  std::string layout_of(const std::string& block_input, const std::string& operand) const;

 private:
  void fail(const std::string& why);
  const BlockValue* value(const std::string& name, const std::string& user);
  Problem block_;
  BlockGraph graph_;
  Status error_;
};

// One backend's way to run a graph: the default implementation of each node's op on that
// backend, and where each intermediate value and node workspace lies in the block workspace.
struct BlockPlan {
  struct Node {
    const Implementation* impl = nullptr;
    Signature sig;  // the node problem's, for the layout of each operand
    size_t workspace_offset = 0, workspace_bytes = 0;
  };
  std::vector<Node> nodes;
  std::map<std::string, size_t> offsets;  // intermediate value -> byte offset in the workspace
  size_t workspace_bytes = 0;
  std::vector<std::vector<size_t>> after;  // node_dependencies(graph), once per plan
};

// Why `backend` cannot run the graph ("node attn.sdpa: opencl has no sdpa"), or "".
std::string block_missing_op(const BlockGraph& graph, const std::string& backend);
// The plan on `device`: unsupported naming the node when its implementation refuses its problem.
Result<BlockPlan> plan_block(const BlockGraph& graph, const std::string& backend, const DeviceRuntime& device);
// Every value of the graph as a tensor on the call's device: inputs and outputs from the call,
// intermediates in its workspace, views of them.
Result<std::map<std::string, Tensor>> bind_block(const BlockGraph& graph, const BlockPlan& plan, const OpCall& call);
// For each node, the earlier nodes it must follow: it reads a value one of them writes, or
// writes a value one of them reads or writes (views resolved to the values they view; a state
// input counts as written by every node that takes it), or either node's op keeps device-wide
// counters (OpSpec::device_wide_counters).
std::vector<std::vector<size_t>> node_dependencies(const BlockGraph& graph);
// Each node's launches as a step of DeviceRuntime::run_recorded, with the plan's dependencies as
// its `after`; the steps hold `graph`, `plan` and `call`, which must outlive them.
Result<std::vector<LaunchStep>> block_steps(const BlockGraph& graph, const BlockPlan& plan, OpCall& call);
// Runs every node in order (no synchronisation).
Status run_block(const BlockGraph& graph, const BlockPlan& plan, OpCall& call);

// The float64 graph on host inputs (signature order, any dtype): every value, f64 where a node
// computed it (inputs as given).
Result<std::map<std::string, Tensor>> run_block_f64(const BlockGraph& graph, const std::vector<Tensor>& inputs);

// A node's own allowed error on its output `output` (signature order), relative to the rms of
// that output (docs/blocks.md): its op's tolerance class at the block dtype, with the length of
// that output's own sum (linear_bwd's dw sums the rows, its dx the outputs).
double node_allowance(const BlockNode& node, size_t output = 0);
// The allowance of every value: the largest sum of node allowances along a path from the block
// inputs to it (views keep their source's), every node passing its inputs' error on as it is.
std::map<std::string, double> value_allowances(const BlockGraph& graph);
// The same, with each norm's amplification of the error in the x it reads (norm_amplification
// of the float64 graph's value `f64` of x): what a case's bound and the divergence report use.
std::map<std::string, double> value_allowances(const BlockGraph& graph, const std::map<std::string, Tensor>& f64);
// How much a norm node (layernorm, rmsnorm) multiplies the error of its input x, relative to
// rms(x), into its output (docs/blocks.md, "The tolerance"): each row's error is divided by the
// row's own divisor, sqrt(var + eps) (rmsnorm: sqrt(mean x^2 + eps)), so rms(x) / the smallest
// divisor over the rows of `x` (the float64 graph's), at least 1; 1 for any other node.
double norm_amplification(const BlockNode& node, const Tensor& x);

// What a value's allowance multiplies (docs/blocks.md, "The tolerance"): the rms of its float64
// values `f64`, and for a gradient summed over the tokens (the weight and bias gradients of
// linear_bwd, layernorm_bwd and rmsnorm_bwd) at least a quarter of their largest magnitude.
double value_scale(const BlockGraph& graph, const std::string& value, const Tensor& f64);

// The first node (execution order) one of whose outputs in `ours` (host tensors, any dtype)
// is further from `f64` than its allowance x value_scale of the f64 value: a line naming it, its error
// and the repro line of the node alone on `where` ("avx512", "opencl:0.0"); "" when none is.
std::string first_divergence(const BlockGraph& graph, const std::map<std::string, Tensor>& ours,
                             const std::map<std::string, Tensor>& f64, const std::string& backend,
                             const std::string& device_index);

}  // namespace dnnb
