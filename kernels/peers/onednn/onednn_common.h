// oneDNN (2.6 API: op descriptors) as a peer backend. Each op file describes how a problem
// becomes one primitive (`make`) and which of its parameters oneDNN cannot express
// (`expressible`); this file supplies the rest: dtype and layout translation, the per-problem
// primitive cache (so timing measures execution, not creation), and registration.
// A primitive_desc that oneDNN refuses makes the problem unsupported, with oneDNN's status.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/registry.h"

namespace dnnb::onednn {

// A tensor's dtype and logical layout, without memory: what a memory::desc needs.
struct Layout {
  DType dtype = DType::f32;
  Shape shape;
  Shape strides;
};
Layout layout_of(const Tensor& t);
// The view the harness builds for a TensorSpec (registry.h: storage_order, row_padding).
Layout layout_of(const TensorSpec& spec);

// Shapes padded on the left with 1s to `ndims` dims (0-d becomes {1}); unsupported dtypes
// give unsupported. Size-1 dims keep a stride that oneDNN accepts as dense.
Result<dnnl::memory::desc> memory_desc(const Layout& layout, int ndims = 0);
Result<dnnl::memory::desc> memory_desc(DType dtype, const Shape& shape);  // dense

dnnl::engine& cpu_engine();

// What a problem became: the primitive and the memory descriptors of its arguments.
struct Prepared {
  dnnl::primitive primitive;
  std::vector<std::pair<int, dnnl::memory::desc>> inputs;   // DNNL_ARG_*, desc; in OpCall order
  std::vector<std::pair<int, dnnl::memory::desc>> outputs;
};

struct PeerOp {
  std::string op;
  std::vector<DType> dtypes;
  // ok, or unsupported naming what oneDNN cannot express: a parameter, or (matmul_i8) exact
  // results on this CPU.
  std::function<Status(const Problem&)> expressible;
  // Builds the primitive for these input/output layouts. oneDNN exceptions are caught by
  // the caller and become unsupported (creation) with oneDNN's message and status.
  std::function<Result<Prepared>(const Problem&, const std::vector<Layout>& inputs,
                                 const std::vector<Layout>& outputs)> make;
  // Runs it; default: binds every OpCall tensor to its argument as it is in memory.
  std::function<Status(OpCall&, const Prepared&)> execute;
  // "" for the op's default onednn implementation; an alternative names its variant and says
  // in `when` (one sentence, Implementation::when) when a user would choose it.
  std::string variant;
  std::string when;
  // The ceiling bench judges it against (Implementation::compute_unit_for); unset: f32_fma.
  std::function<std::string(const Problem&, const DeviceRuntime&)> compute_unit_for;
  // Ways this op differs from PyTorch beyond those every peer op has (register_peer).
  std::vector<KnownDeviation> known_deviations;
};

// Registers `op` as backend "onednn". An alternative without `when`, or a default with one,
// is not registered (false, with a message on stderr).
bool register_peer(PeerOp op);

// The unit oneDNN's products run on: bf16 on AMX tiles where the CPU has them usable, else on
// AVX512_BF16 dot products (bf16_dot); everything else on the f32 FMA units.
std::string product_unit(const Problem& problem, const DeviceRuntime& device);

// Binds call.inputs[i] / outputs[i] to prepared.inputs[i] / outputs[i] (host pointers),
// plus `extra` arguments, executes on the CPU stream and waits.
Status execute_bound(OpCall& call, const Prepared& prepared,
                     const std::vector<std::pair<int, dnnl::memory>>& extra = {});

// "oneDNN: <what> (<dnnl status>)" for a caught dnnl::error.
std::string describe(const dnnl::error& e);

}  // namespace dnnb::onednn
