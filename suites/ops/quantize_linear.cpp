// quantize_linear: y = clamp(nearbyint(x * (1 / scale)) + zero_point, qmin, qmax), per tensor or per
// channel along `axis=`, x f32, y i8 or u8 (`y.dt=`, default i8); bit-exact with torch 2.15's
// quantize_per_tensor / quantize_per_channel(...).int_repr() on CPU (docs/ops-family4.md,
// "quantize_linear and dequantize_linear": the rule, what torch does with NaN and with
// products past int32, which are outside the contract).
// Tolerance class selection: one right integer per element, demanded exactly.
// FLOP model: none (a multiply, a round and a clamp per element; the op is bound by its bytes).
// Bytes: x read once, y written once, the scales and zero points once.
#include "reference/quantize_linear.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"
#include "suites/ops/qlinear_desc.h"

namespace dnnb {
namespace {

OpSpec make_quantize_linear_spec() {
  OpSpec spec = ops::op_spec("4", "quantize_linear",
                             "torch.quantize_per_tensor(x, scale, zero_point, dtype).int_repr() "
                             "(per channel: torch.quantize_per_channel(x, scale, zero_point, axis, dtype).int_repr())",
                             {DType::f32}, ToleranceClass::selection);
  spec.check_problems = ops::qlinear_check_problems(true);
  spec.bench_problems = ops::qlinear_bench_problems(true);
  spec.signature = [](const Problem& p) { return ops::qlinear_signature(p, true); };
  spec.flops = [](const Problem&) { return 0.0; };
  spec.fill_inputs = [](const Problem& p, std::vector<Tensor>& inputs, Rng& rng) {
    return ops::fill_qlinear_inputs(p, inputs, rng, true);
  };
  spec.reference = reference::quantize_linear;
  return spec;
}

DNNB_REGISTER(register_op(make_quantize_linear_spec()));

}  // namespace
}  // namespace dnnb
