// The one registry: op specs (what to compute, at which shapes, how much work it is) and
// implementations (who computes it). Folders register themselves from OBJECT libraries:
// adding an op is one spec + reference, one kernel file per backend; no central switch.
#pragma once
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb {

struct Implementation;

struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  // Storage layout for non-contiguous inputs: the harness allocates storage of
  // permuted shape `storage_order` (empty = row-major) and pads the last storage dim by
  // `row_padding` elements, then hands the kernel the logical view.
  std::vector<int> storage_order;
  int64_t row_padding = 0;
  // Dtypes a problem may give this operand through the param `<name>.dt=` (e.g. `y.dt=f32` for
  // a bf16 product with an f32 output); empty = it always has the dtype the op gave it.
  std::vector<DType> dtype_choices;
  // An input the op also updates in place (a KV cache): it stays on the device across the steps
  // of a case, the reference updates its host copy in place in the operand's own dtype, and
  // check compares it after the last step value for value (what the op stores is its inputs
  // rounded once into the state's dtype). A step's effect on the state depends on the step's inputs
  // only (writes at given positions), so running a step twice leaves what running it once
  // does: bench launches one step repeatedly, check --bitwise runs each step twice.
  bool state = false;
};

struct Signature {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
};

// What kernels receive: device tensors in signature order.
struct OpCall {
  const Problem& problem;
  DeviceRuntime& device;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  // Scratch memory on the device, Implementation::workspace_bytes long (a u8 tensor), allocated
  // before any timing and kept across the launches of one case; no buffer when none was asked.
  Tensor workspace;
};

// Tolerance classes; thresholds and their reasons live in core/tolerance.cpp and
// docs/conformance.md.
enum class ToleranceClass {
  selection,    // the output is one of the inputs, unchanged (max, relu): it must equal it
  exact,        // one correctly rounded operation per element (add, sub, mul)
  elementwise,  // transcendental per element (exp, tanh, erf, sigmoid)
  reduction,    // sums over a row
  normalization,// mean/variance then scale (layernorm, rmsnorm, softmax)
  loss,         // cross-entropy and its gradient
  dot_product,  // sums of K products (matmul, linear, dot): a bound growing with K, see below
  attention,    // softmax-weighted sums (sdpa): bounds from the problem and inputs, OpSpec::output_bounds
  block,        // a graph of ops (core/block.h): its nodes' allowances summed along its depth, docs/blocks.md
};

// How an output of a dot_product op is formed, for its tolerance (core/compare.h,
// docs/conformance.md): each element sums `length` products accumulated in f32; inputs the
// kernel may round first (tf32) add `input_unit_roundoff` per product. Products that the
// op's defining implementation sums in runs of `chunk_length` in a narrower accumulator before
// adding each run to f32 (Hopper's FP8 tensor cores, as torch._scaled_mm runs them) add
// `chunk_unit_roundoff` per addition inside a run.
struct DotProductError {
  int64_t length = 0;
  double input_unit_roundoff = 0;
  int64_t chunk_length = 0;
  double chunk_unit_roundoff = 0;
};

// The error bound of one output of an op whose bound comes from the problem and its inputs
// (attention): rtol and atol for random cases; with a torch output in a fixture and
// torch_factor > 0, the case passes when its max abs error is at most torch_factor x torch's
// own plus `floor` (FlashAttention's test rule).
struct OutputBound {
  double rtol = 0, atol = 0;
  double torch_factor = 0;
  double floor = 0;
};

// A problem of an op spec: "shape[:params]", run at every dtype of the op unless `only` lists
// the dtypes it applies to (a tf32 product is an f32 problem).
struct ProblemText {
  std::string text;
  std::vector<DType> only;
  ProblemText(const char* t) : text(t) {}
  ProblemText(std::string t) : text(std::move(t)) {}
  ProblemText(std::string t, std::vector<DType> dtypes) : text(std::move(t)), only(std::move(dtypes)) {}
  bool applies_to(DType dtype) const;
};
const char* to_string(ToleranceClass c);

struct OpSpec {
  std::string name;
  std::string family;      // "1"
  std::string torch;       // the PyTorch call that defines it
  std::vector<DType> dtypes;
  ToleranceClass tolerance = ToleranceClass::elementwise;
  // Problems checked against the reference on fresh random inputs and benchmarked;
  // each is "shape[:params]" and runs at every dtype above.
  std::vector<ProblemText> check_problems;
  std::vector<ProblemText> bench_problems;

  std::function<Result<Signature>(const Problem&)> signature;
  // dot_product ops: how output `index` of a problem is formed. The checker also runs the
  // reference on the inputs' absolute values to get each output's magnitude sum |a||b|.
  std::function<DotProductError(const Problem&, size_t index)> dot_product_error;
  // Ops whose bound comes from the problem and the inputs (docs/conformance.md): one bound per
  // output, from one step's host inputs (before the reference updates any state). Unset: the
  // tolerance class's rule.
  std::function<Result<std::vector<OutputBound>>(const Problem&, const std::vector<Tensor>& inputs)> output_bounds;
  std::function<double(const Problem&)> flops;
  // Minimal bytes moved, for ops that need not read every input whole (embedding reads T rows
  // of a V-row table); unset = every input read once and every output written once.
  std::function<double(const Problem&)> bytes;
  // Its device implementations report bad input (ids outside a table) through checks deferred
  // to the next synchronize() (core/deferred_checks.h), which keep host state for each launch:
  // a recording of the launches (DeviceRuntime::run_recorded) would replay them without it, so
  // a block holding such a node runs its launches each time.
  bool deferred_input_checks = false;
  // Its device kernels keep counters in device-wide memory between their blocks (CUDA's
  // GridCounters): two launches of it must not overlap, so in a recorded block it runs apart
  // from every other node.
  bool device_wide_counters = false;
  // Fills host inputs (contiguous, signature dtypes) for a random case. Default: normal(0,1)
  // rounded to each input's dtype.
  std::function<Status(const Problem&, std::vector<Tensor>& inputs, Rng& rng)> fill_inputs;
  // Ops with state (TensorSpec::state) may run several steps per case (a decode loop): how many
  // for a problem (unset: 1), and the host inputs of step `step` >= 1 (the new token's q, k, v
  // and position), rewriting the inputs that are not state; fill_inputs gives step 0's. check
  // compares every step's outputs, and the state after the last. Fixture files hold step s's
  // inputs and outputs as `<name>@<s>` and `golden.<name>@<s>` (docs/conformance.md).
  std::function<int(const Problem&)> steps;
  std::function<Status(const Problem&, int step, std::vector<Tensor>& inputs, Rng& rng)> step_inputs;
  // Ops whose state may differ from the reference's by more than its dtype's one rounding (a
  // block's KV cache holds a node's output, itself within that node's allowance of the float64
  // graph, then rounded: docs/conformance.md, "Steps and state"): the tolerance of each input
  // (signature order; ignored for inputs that are not state), from one step's host inputs as
  // output_bounds gets them; only rtol and atol are read. check takes, per state input, the
  // largest rtol and atol over the steps. Unset: every state compares exactly.
  std::function<Result<std::vector<OutputBound>>(const Problem&, const std::vector<Tensor>& inputs)> state_bounds;
  // The oracle: reads inputs of any dtype and layout on the host, writes f64 outputs
  // (contiguous host tensors of dtype f64 shaped as the signature's outputs), and updates state
  // inputs in place (one step).
  std::function<Status(const Problem&, const std::vector<Tensor>& inputs,
                       std::vector<Tensor>& outputs)> reference;
  // A quantising op (quantize_blocks): output 0 holds input `*quantizes_input` in a lossy
  // format. check then reports each case's quantisation error, output 0's decoded values minus
  // that input, as llama.cpp's quantize-stats does (CaseResult::quantize_stats).
  std::optional<size_t> quantizes_input;
  // Tokens a problem processes (blocks: batch x sequence); bench reports tokens/s when set.
  std::function<double(const Problem&)> tokens;
  // Blocks: each node of a problem's graph (its name and its own problem, execution order), so
  // `bench --nodes` can time every node as a case of its own op.
  std::function<Result<std::vector<std::pair<std::string, Problem>>>(const Problem&)> nodes;
  // Blocks (core/block.h): called by check when a case fails, with the implementation's call
  // after its run (the workspace holds every node's output) and the step's host inputs; one line
  // naming the first node whose output diverges, its error and the node's own repro line.
  std::function<std::string(const Implementation&, const OpCall&, const std::vector<Tensor>& inputs)> explain_mismatch;
};

// A documented way a peer library differs from PyTorch (e.g. flushing subnormals). A case
// whose problem matches the glob and fails is reported XFAIL with the reason, never hidden;
// our own kernels have none.
struct KnownDeviation {
  std::string problem_glob;  // fnmatch over the problem string, e.g. "*:bf16:*fixture=denormal*"
  std::string reason;
};

struct Implementation {
  std::string op;
  std::string backend;
  // "" for the backend's default implementation of the op; otherwise an alternative, which
  // check, bench and the gate run only when asked (`--variants all` or by name).
  std::string variant;
  // An alternative's one sentence saying when a user would choose it over the default (a
  // device, shape or accuracy trade-off); `dnnblocks list --variants` prints it. Empty for a
  // default.
  std::string when;
  std::vector<DType> dtypes;
  // ok, or unsupported/skipped with the reason (ISA missing, shape not handled...).
  std::function<Status(const Problem&, const DeviceRuntime&)> supports;
  std::function<Status(OpCall&)> run;
  // Device scratch bytes the implementation needs for a problem (split-K partial sums, a
  // vendor library's workspace); unset or 0 = none. The harness allocates it before timing.
  std::function<Result<size_t>(const Problem&, const DeviceRuntime&)> workspace_bytes;
  std::vector<KnownDeviation> known_deviations;
  // The arithmetic unit the kernel computes on, naming the ceiling bench judges FLOP/s
  // against (core/ceilings.h): family-1 kernels compute in f32 whatever the storage dtype.
  std::string compute_unit = "f32_fma";
  // When the unit depends on the problem or the device (a product on tensor cores at bf16 and
  // on the FMA units at f32): it, instead of compute_unit.
  std::function<std::string(const Problem&, const DeviceRuntime&)> compute_unit_for;
  std::string unit_for(const Problem& problem, const DeviceRuntime& device) const {
    return compute_unit_for ? compute_unit_for(problem, device) : compute_unit;
  }

  bool is_default() const { return variant.empty(); }
  std::string label() const { return variant.empty() ? backend : backend + "/" + variant; }
};

// Why an op has no implementation on a backend that has others (a block whose node op the
// backend lacks); `dnnblocks list` prints them.
struct Absence {
  std::string op, backend, reason;
};

class Registry {
 public:
  static Registry& instance();
  bool add_op(OpSpec spec);
  bool add_implementation(Implementation impl);
  // Implementations made from others (a block runs on each backend that has all of its nodes'
  // ops): `derive` runs once, after static registration, on the first query of the
  // implementations (by then every op file has registered).
  void add_deriver(std::function<void(Registry&)> derive);
  void add_absence(Absence absence) { absences_.push_back(std::move(absence)); }
  const std::vector<Absence>& absences() const {
    complete();
    return absences_;
  }
  const OpSpec* find_op(const std::string& name) const;
  const std::vector<OpSpec>& ops() const { return ops_; }
  const std::vector<Implementation>& implementations() const {
    complete();
    return impls_;
  }
  std::vector<const Implementation*> implementations_of(const std::string& op) const;
  const Implementation* find_implementation(const std::string& op, const std::string& backend,
                                            const std::string& variant) const;

 private:
  void complete() const;
  const Implementation* find_registered(const std::string& op, const std::string& backend,
                                        const std::string& variant) const;
  std::vector<OpSpec> ops_;
  std::vector<Implementation> impls_;
  std::vector<std::function<void(Registry&)>> derivers_;
  std::vector<Absence> absences_;
  mutable std::once_flag completed_;
  mutable std::atomic<bool> completing_{false};
};

// A layout parameter (`key`=`value`) applied to one operand's storage: transposed stores the last
// two dims swapped (needs >= 2 dims; refused for a block format), padded pads each row by 3
// elements (a block format by one 32-value block); bad_input naming the key otherwise.
Status apply_layout_param(const std::string& op, const std::string& key, const std::string& value,
                          TensorSpec& operand);

// Applies the operand params of a problem to its signature: `<operand>.dt=<dtype>` (one of the
// operand's dtype_choices) and `<operand>.layout=transposed|padded` (inputs only); the key splits
// at its last dot, so an operand name may have dots (model.embed_tokens.weight.layout). bad_input
// names the key when it names no operand, a dtype the operand does not take, or another
// attribute. Registry::add_op wraps every op's signature with it.
Status apply_operand_params(const Problem& problem, Signature& sig);

// The problem `text` of `spec` at `dtype`: nullopt when the text does not apply to that dtype,
// bad_input naming the op and the text when it does not parse.
Result<std::optional<Problem>> problem_at(const OpSpec& spec, const ProblemText& text, DType dtype);

// `--op` of check and bench: a comma-separated list of names or globs ("matmul,linear", "*norm*").
bool op_selected(const std::string& op_filter, const std::string& op);

// The float64 references are written for clarity, on one core: above this many FLOP (minutes)
// the reference backend reports a problem unsupported and check does not plan it as a random
// case (products at real model sizes are checked on smaller shapes).
inline constexpr double kReferenceMaxFlops = 2e10;
std::string reference_limit_text();  // "2e+10"

// Minimal bytes of a problem: every input read once, every output written once, inputs at
// their own (possibly broadcast) sizes.
Result<double> minimal_bytes(const OpSpec& spec, const Problem& problem);

#define DNNB_CONCAT_INNER(a, b) a##b
#define DNNB_CONCAT(a, b) DNNB_CONCAT_INNER(a, b)
// Register at static-initialisation time; the folder must be an OBJECT library so the
// linker keeps the object.
#define DNNB_REGISTER(expr) \
  static const bool DNNB_CONCAT(dnnb_registered_, __LINE__) = (expr)

}  // namespace dnnb
