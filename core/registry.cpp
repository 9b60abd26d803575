#include "core/registry.h"

#include <algorithm>
#include <cstdio>
#include <fnmatch.h>
#include <numeric>

namespace dnnb {

const char* to_string(ToleranceClass c) {
  switch (c) {
    case ToleranceClass::selection: return "selection";
    case ToleranceClass::exact: return "exact";
    case ToleranceClass::elementwise: return "elementwise";
    case ToleranceClass::reduction: return "reduction";
    case ToleranceClass::normalization: return "normalization";
    case ToleranceClass::loss: return "loss";
    case ToleranceClass::dot_product: return "dot_product";
    case ToleranceClass::attention: return "attention";
    case ToleranceClass::block: return "block";
  }
  return "?";
}

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

Status apply_layout_param(const std::string& op, const std::string& key, const std::string& value,
                          TensorSpec& operand) {
  const int n = static_cast<int>(operand.shape.size());
  if (value == "padded") {
    // A block format's rows stay whole blocks (core/tensor.h): one block of padding.
    operand.row_padding = is_block_format(operand.dtype) ? block_values(operand.dtype) : 3;
  } else if (value == "transposed" && n >= 2 && is_block_format(operand.dtype)) {
    return Status::bad_input(op + ": parameter " + key + "=transposed: operand " + operand.name + " is " +
                             dtype_name(operand.dtype) + ", whose rows are whole contiguous blocks");
  } else if (value == "transposed" && n >= 2) {
    operand.storage_order.resize(n);
    std::iota(operand.storage_order.begin(), operand.storage_order.end(), 0);
    std::swap(operand.storage_order[n - 1], operand.storage_order[n - 2]);
  } else {
    return Status::bad_input(op + ": parameter " + key + "=" + value +
                             (value == "transposed" ? ": operand " + operand.name + " has fewer than 2 dims (" +
                                                          shape_to_string(operand.shape) + ")"
                                                    : ": a layout is transposed or padded"));
  }
  return Status::ok();
}

Status apply_operand_params(const Problem& problem, Signature& sig) {
  for (const auto& [key, value] : problem.params) {
    // The attribute follows the key's last dot: an operand's name may have dots (a block's
    // state_dict names, model.embed_tokens.weight), an attribute never does.
    const size_t dot = key.rfind('.');
    if (dot == std::string::npos) continue;
    const std::string name = key.substr(0, dot), attr = key.substr(dot + 1);
    TensorSpec* operand = nullptr;
    bool is_output = false;
    for (auto* list : {&sig.inputs, &sig.outputs})
      for (auto& t : *list)
        if (t.name == name) {
          operand = &t;
          is_output = list == &sig.outputs;
        }
    if (!operand) {
      std::string names;
      for (auto* list : {&sig.inputs, &sig.outputs})
        for (auto& t : *list) names += (names.empty() ? "" : ", ") + t.name;
      return Status::bad_input(problem.op + ": parameter '" + key + "' names no operand (operands: " + names + ")");
    }
    if (attr == "dt") {
      auto dtype = parse_dtype(value);
      if (!dtype) return Status::bad_input(problem.op + ": parameter " + key + "=" + value + ": unknown dtype");
      const auto& choices = operand->dtype_choices;
      if (*dtype != operand->dtype && std::find(choices.begin(), choices.end(), *dtype) == choices.end()) {
        std::string allowed = dtype_name(operand->dtype);
        for (DType d : choices) allowed += std::string(", ") + dtype_name(d);
        return Status::bad_input(problem.op + ": parameter " + key + "=" + value + ": operand " + name + " of a " +
                                 dtype_name(problem.dtype) + " problem takes " + allowed);
      }
      operand->dtype = *dtype;
    } else if (attr == "layout") {
      if (is_output)
        return Status::bad_input(problem.op + ": parameter " + key + ": outputs are written contiguous");
      DNNB_TRY(apply_layout_param(problem.op, key, value, *operand));
    } else {
      return Status::bad_input(problem.op + ": parameter '" + key + "': an operand parameter is <operand>.dt or <operand>.layout");
    }
  }
  return Status::ok();
}

bool Registry::add_op(OpSpec spec) {
  if (find_op(spec.name) != nullptr) {
    std::fprintf(stderr, "dnnblocks: op '%s' registered twice; keeping the first\n", spec.name.c_str());
    return false;
  }
  // Every op's operands take `<operand>.dt` and `<operand>.layout` the same way.
  if (spec.signature)
    spec.signature = [inner = std::move(spec.signature)](const Problem& problem) -> Result<Signature> {
      auto sig = inner(problem);
      if (!sig) return sig;
      DNNB_TRY(apply_operand_params(problem, *sig));
      return sig;
    };
  ops_.push_back(std::move(spec));
  return true;
}

void Registry::add_deriver(std::function<void(Registry&)> derive) { derivers_.push_back(std::move(derive)); }

// Derived implementations are made on the first query, single-threaded (check and bench plan
// before they start threads); a deriver's own queries see the registry as it stands.
void Registry::complete() const {
  if (completing_) return;
  std::call_once(completed_, [this] {
    completing_ = true;
    auto& self = const_cast<Registry&>(*this);
    for (auto& derive : self.derivers_) derive(self);
    completing_ = false;
  });
}

bool Registry::add_implementation(Implementation impl) {
  if (find_registered(impl.op, impl.backend, impl.variant) != nullptr) {
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
  complete();
  std::vector<const Implementation*> out;
  for (const auto& impl : impls_)
    if (impl.op == op) out.push_back(&impl);
  return out;
}

const Implementation* Registry::find_implementation(const std::string& op, const std::string& backend,
                                                    const std::string& variant) const {
  complete();
  return find_registered(op, backend, variant);
}

const Implementation* Registry::find_registered(const std::string& op, const std::string& backend,
                                                const std::string& variant) const {
  for (const auto& impl : impls_)
    if (impl.op == op && impl.backend == backend && impl.variant == variant) return &impl;
  return nullptr;
}

bool op_selected(const std::string& op_filter, const std::string& op) {
  size_t start = 0;
  while (start <= op_filter.size()) {
    size_t comma = op_filter.find(',', start);
    if (comma == std::string::npos) comma = op_filter.size();
    const std::string glob = op_filter.substr(start, comma - start);
    if (!glob.empty() && fnmatch(glob.c_str(), op.c_str(), 0) == 0) return true;
    start = comma + 1;
  }
  return false;
}

std::string reference_limit_text() {
  char text[32];
  std::snprintf(text, sizeof text, "%g", kReferenceMaxFlops);
  return text;
}

bool ProblemText::applies_to(DType dtype) const {
  return only.empty() || std::find(only.begin(), only.end(), dtype) != only.end();
}

Result<std::optional<Problem>> problem_at(const OpSpec& spec, const ProblemText& text, DType dtype) {
  if (!text.applies_to(dtype)) return std::optional<Problem>();
  auto p = Problem::parse(spec.name + ":" + dtype_name(dtype) + ":" + text.text);
  if (!p) return Status::bad_input("op " + spec.name + ": problem '" + text.text + "': " + p.status().message);
  return std::optional<Problem>(std::move(*p));
}

Result<double> minimal_bytes(const OpSpec& spec, const Problem& problem) {
  auto sig = spec.signature(problem);
  if (!sig) return sig.status();
  if (spec.bytes) return spec.bytes(problem);
  double bytes = 0;
  for (const auto& t : sig->inputs) bytes += static_cast<double>(storage_bytes(t.dtype, shape_numel(t.shape)));
  for (const auto& t : sig->outputs) bytes += static_cast<double>(storage_bytes(t.dtype, shape_numel(t.shape)));
  return bytes;
}

}  // namespace dnnb
