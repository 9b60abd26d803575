#include "core/registry.h"

#include <cstdio>

namespace dnnb {

const char* to_string(ToleranceClass c) {
  switch (c) {
    case ToleranceClass::selection: return "selection";
    case ToleranceClass::exact: return "exact";
    case ToleranceClass::elementwise: return "elementwise";
    case ToleranceClass::reduction: return "reduction";
    case ToleranceClass::normalization: return "normalization";
    case ToleranceClass::loss: return "loss";
  }
  return "?";
}

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

bool Registry::add_op(OpSpec spec) {
  if (find_op(spec.name) != nullptr) {
    std::fprintf(stderr, "dnnblocks: op '%s' registered twice; keeping the first\n", spec.name.c_str());
    return false;
  }
  ops_.push_back(std::move(spec));
  return true;
}

bool Registry::add_implementation(Implementation impl) {
  if (find_implementation(impl.op, impl.backend, impl.variant) != nullptr) {
    std::fprintf(stderr, "dnnblocks: implementation %s@%s registered twice; keeping the first\n",
                 impl.op.c_str(), impl.label().c_str());
    return false;
  }
  impls_.push_back(std::move(impl));
  return true;
}

const OpSpec* Registry::find_op(const std::string& name) const {
  for (const auto& op : ops_)
    if (op.name == name) return &op;
  return nullptr;
}

std::vector<const Implementation*> Registry::implementations_of(const std::string& op) const {
  std::vector<const Implementation*> out;
  for (const auto& impl : impls_)
    if (impl.op == op) out.push_back(&impl);
  return out;
}

const Implementation* Registry::find_implementation(const std::string& op, const std::string& backend,
                                                    const std::string& variant) const {
  for (const auto& impl : impls_)
    if (impl.op == op && impl.backend == backend && impl.variant == variant) return &impl;
  return nullptr;
}

Result<double> minimal_bytes(const OpSpec& spec, const Problem& problem) {
  auto sig = spec.signature(problem);
  if (!sig) return sig.status();
  double bytes = 0;
  for (const auto& t : sig->inputs) bytes += static_cast<double>(shape_numel(t.shape)) * dtype_size(t.dtype);
  for (const auto& t : sig->outputs) bytes += static_cast<double>(shape_numel(t.shape)) * dtype_size(t.dtype);
  return bytes;
}

}  // namespace dnnb
