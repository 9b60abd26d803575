// The one registry: op specs (what to compute, at which shapes, how much work it is) and
// implementations (who computes it). Folders register themselves from OBJECT libraries:
// adding an op is one spec + reference, one kernel file per backend; no central switch.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb {

struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  // Storage layout for non-contiguous inputs: the harness allocates storage of
  // permuted shape `storage_order` (empty = row-major) and pads the last storage dim by
  // `row_padding` elements, then hands the kernel the logical view.
  std::vector<int> storage_order;
  int64_t row_padding = 0;
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
  std::vector<std::string> check_problems;
  std::vector<std::string> bench_problems;

  std::function<Result<Signature>(const Problem&)> signature;
  std::function<double(const Problem&)> flops;
  // Fills host inputs (contiguous, signature dtypes) for a random case. Default: normal(0,1)
  // rounded to each input's dtype.
  std::function<Status(const Problem&, std::vector<Tensor>& inputs, Rng& rng)> fill_inputs;
  // The oracle: reads inputs of any dtype and layout on the host, writes f64 outputs
  // (contiguous host tensors of dtype f64 shaped as the signature's outputs).
  std::function<Status(const Problem&, const std::vector<Tensor>& inputs,
                       std::vector<Tensor>& outputs)> reference;
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
  std::vector<KnownDeviation> known_deviations;
  // The arithmetic unit the kernel computes on, naming the ceiling bench judges FLOP/s
  // against (core/ceilings.h): family-1 kernels compute in f32 whatever the storage dtype.
  std::string compute_unit = "f32_fma";

  bool is_default() const { return variant.empty(); }
  std::string label() const { return variant.empty() ? backend : backend + "/" + variant; }
};

class Registry {
 public:
  static Registry& instance();
  bool add_op(OpSpec spec);
  bool add_implementation(Implementation impl);
  const OpSpec* find_op(const std::string& name) const;
  const std::vector<OpSpec>& ops() const { return ops_; }
  const std::vector<Implementation>& implementations() const { return impls_; }
  std::vector<const Implementation*> implementations_of(const std::string& op) const;
  const Implementation* find_implementation(const std::string& op, const std::string& backend,
                                            const std::string& variant) const;

 private:
  std::vector<OpSpec> ops_;
  std::vector<Implementation> impls_;
};

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
