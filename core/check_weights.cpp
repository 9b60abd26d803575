// The --weights plan of check (core/check.h, plan_weight_check): cases whose weight operand is
// a tensor of a GGUF file (core/gguf_weights.h), each checked against the float64 reference.
#include <algorithm>
#include <set>

#include "core/check.h"
#include "core/plan.h"

namespace dnnb {

namespace {

// The case of `--case ID --weights FILE`: the case id's problem names its tensor.
Result<std::vector<PlannedCase>> plan_weight_case(const CheckOptions& options,
                                                  const std::shared_ptr<const GgufFile>& file) {
  auto id = CaseId::parse(options.case_id);
  if (!id) return id.status();
  auto source = weight_source(file, id->problem);
  if (!source) return source.status();
  if (!options.weights_tensors.empty() && options.weights_tensors != source->tensor->name)
    return Status::bad_input("--tensor " + options.weights_tensors + ": case '" + options.case_id + "' is on tensor " +
                             source->tensor->name);
  auto cell = plan_case_cell(*id);
  if (!cell) return cell.status();
  PlannedCase pc;
  pc.id = case_id_of(*cell, id->problem);
  pc.spec = cell->spec;
  pc.impl = cell->impl;
  pc.device = cell->device;
  pc.skip_reason = cell->absent_reason;
  pc.weights = *source;
  return std::vector<PlannedCase>{std::move(pc)};
}

}  // namespace

Result<std::vector<PlannedCase>> plan_weight_check(const CheckOptions& options, std::vector<SkippedTensor>* skipped_tensors) {
  auto file = open_weights(options.weights_path);
  if (!file) return file.status();
  if (!options.case_id.empty()) return plan_weight_case(options, *file);
  auto tensors = select_tensors(**file, options.weights_tensors);
  if (!tensors) return tensors.status();

  auto cells = plan_cells(check_plan_filter(options));
  if (!cells) return cells.status();
  std::vector<const PlanCell*> weight_cells;
  for (const PlanCell& cell : *cells)
    if (takes_weights(cell.spec->name)) weight_cells.push_back(&cell);
  if (weight_cells.empty())
    return Status::bad_input("--weights: --op " + options.op_glob +
                             " selects no op that takes weights from a GGUF file (matmul_ggml, dequantize_blocks, "
                             "quantize_blocks)");

  // Each selected op's problems per tensor, once; then a case per cell of the op's dtype.
  std::vector<PlannedCase> plan;
  std::set<std::string> listed;  // ops whose skipped tensors are listed
  for (const PlanCell* cell : weight_cells) {
    const std::string& op = cell->spec->name;
    const bool list_skips = listed.insert(op).second;
    for (const GgufTensorInfo* t : *tensors) {
      SkippedTensor skip;
      std::vector<Problem> problems = weight_problems(op, *t, skip);
      if (problems.empty() && list_skips && skipped_tensors != nullptr) skipped_tensors->push_back(skip);
      // The reference is what the cases are checked against (as random cases, docs/conformance.md).
      if (cell->impl->backend == "reference") continue;
      for (Problem& problem : problems) {
        if (problem.dtype != cell->dtype) continue;
        auto source = weight_source(*file, problem);
        if (!source) return source.status();
        PlannedCase pc;
        pc.id = case_id_of(*cell, problem);
        pc.spec = cell->spec;
        pc.impl = cell->impl;
        pc.device = cell->device;
        pc.skip_reason = cell->absent_reason;
        pc.weights = *source;
        if (pc.device != nullptr && cell->spec->flops && cell->spec->flops(problem) > kReferenceMaxFlops) {
          pc.device = nullptr;
          pc.skip_reason = "not checked: the float64 reference is not run above " + reference_limit_text() +
                           " FLOP (docs/ops-family2.md)";
        }
        plan.push_back(std::move(pc));
      }
    }
  }
  return plan;
}

}  // namespace dnnb
