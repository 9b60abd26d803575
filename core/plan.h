// The one planner: check, bench (and so the gate, which runs bench) and the tests enumerate
// the cells (op, implementation, dtype, device) and their problems through these functions,
// from the registry, so a new op, backend or variant needs no list edited anywhere.
#pragma once
#include <string>
#include <vector>

#include "core/registry.h"

namespace dnnb {

struct PlanFilter {
  std::string op_glob = "*";         // comma-separated names or globs
  std::string backends;              // "" = every backend; "cuda,opencl/local": backend[/variant]
  bool all_variants = false;         // alternatives too (a backend item naming a variant selects it anyway)
  std::string dtype;                 // "" = every dtype of the op and implementation
  std::vector<std::string> devices;  // device ids ("cuda:0", "opencl:1.0"); empty: see every_device
  bool every_device = true;          // every device of the backend's kind (check); false: the first (bench)
};

struct PlanCell {
  const OpSpec* spec = nullptr;
  const Implementation* impl = nullptr;
  DType dtype = DType::f32;
  DeviceRuntime* device = nullptr;  // null: absent on this machine, see absent_reason
  std::string absent_reason;
};

// The cells the filter selects, op by op in registry order, then implementation, device and
// dtype. A device the filter names that this machine lacks gives cells with a null device and
// the reason (a machine without a GPU skips with the reason, it does not fail); a backend with
// no device here likewise. bad_input (naming the flag) for an unknown op, backend, dtype, a
// malformed device id, or a backend filter that selects nothing.
Result<std::vector<PlanCell>> plan_cells(const PlanFilter& filter);

// One cell from a case id ("op:dtype:shape[:params]@backend[/variant][:device]"): bad_input for
// an unknown op or implementation; an absent device as above.
Result<PlanCell> plan_case_cell(const CaseId& id);

// The problems of `texts` that apply at `dtype` (ProblemText::only), parsed; bad_input naming
// the op and the text when one does not parse.
Result<std::vector<Problem>> problems_at(const OpSpec& spec, const std::vector<ProblemText>& texts, DType dtype);

// The case id of a cell at a problem (the device index filled in when the device is present).
CaseId case_id_of(const PlanCell& cell, Problem problem);

}  // namespace dnnb
