#include "reference/register.h"

#include "core/host_device.h"
#include "reference/fill.h"

namespace dnnb {

Status store_f64_into(const Tensor& values, Tensor& dst) {
  if (values.dtype != DType::f64 || !values.is_contiguous() || values.shape != dst.shape)
    return Status::bad_input("store_f64_into: " + values.describe() + " does not fit output " + dst.describe());
  if (!dst.buffer || dst.device() == nullptr || !dst.device()->host_accessible())
    return Status::bad_input("store_f64_into: output " + dst.describe() + " is not in host memory");
  auto index = row_index(dst);
  if (!index) return index.status();
  const auto* src = static_cast<const double*>(values.host_data());
  for (int64_t r = 0; r < index->rows; ++r) {
    const int64_t row_start = index->offset + index->row_offset(r);
    for (int64_t c = 0; c < index->cols; ++c)
      store_element(dst.buffer->handle, dst.dtype, row_start + c * index->col_stride, src[r * index->cols + c]);
  }
  return Status::ok();
}

Implementation reference_implementation(const OpSpec& spec) {
  Implementation impl;
  impl.op = spec.name;
  impl.backend = "reference";
  impl.variant = "";
  impl.dtypes = spec.dtypes;
  impl.supports = [flops = spec.flops](const Problem& problem, const DeviceRuntime& device) {
    if (device.info().kind != DeviceKind::cpu || !device.host_accessible())
      return Status::unsupported("the reference runs on the host (cpu) only, not on " + device.info().id);
    if (flops && flops(problem) > kReferenceMaxFlops)
      return Status::unsupported("the float64 reference is not run above " + reference_limit_text() +
                                 " FLOP (minutes on one core)");
    return Status::ok();
  };
  impl.run = [name = spec.name, reference = spec.reference](OpCall& call) -> Status {
    if (!reference) return Status::error("op " + name + " has no reference function");
    std::vector<Tensor> expected;
    for (const Tensor& out : call.outputs) {
      auto t = empty_tensor(scratch_host(), DType::f64, out.shape);
      if (!t) return t.status();
      expected.push_back(*t);
    }
    DNNB_TRY(reference(call.problem, call.inputs, expected));
    for (size_t i = 0; i < expected.size(); ++i) DNNB_TRY(store_f64_into(expected[i], call.outputs[i]));
    return Status::ok();
  };
  return impl;
}

bool register_op(OpSpec spec) {
  if (!spec.fill_inputs) spec.fill_inputs = fill_normal_inputs;
  Implementation impl = reference_implementation(spec);
  const bool op_added = Registry::instance().add_op(std::move(spec));
  const bool reference_added = Registry::instance().add_implementation(std::move(impl));
  return op_added && reference_added;
}

}  // namespace dnnb
