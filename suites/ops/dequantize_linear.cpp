// dequantize_linear: y = f32(x - zero_point) * scale, per tensor or per channel along `axis=`, x
// i8 or u8 (the problem dtype), y f32; bit-exact with torch 2.15's dequantize() of the quantized
// tensor torch._make_per_tensor_quantized_tensor / _make_per_channel_quantized_tensor build from
// x on CPU (docs/ops-family4.md, "quantize_linear and dequantize_linear").
// Tolerance class selection: the difference is exact and the product rounds once, so each
// element has one right f32 value, demanded exactly.
// FLOP model: none (a subtract and a multiply per element; bound by its bytes).
// Bytes: x read once, y written once, the scales and zero points once.
#include "reference/quantize_linear.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"
#include "suites/ops/qlinear_desc.h"

namespace dnnb {
namespace {

OpSpec make_dequantize_linear_spec() {
  OpSpec spec = ops::op_spec("4", "dequantize_linear",
                             "torch._make_per_tensor_quantized_tensor(x, scale, zero_point).dequantize() "
                             "(per channel: torch._make_per_channel_quantized_tensor(x, scale, zero_point, axis).dequantize())",
                             ops::qlinear_int_dtypes(), ToleranceClass::selection);
  spec.check_problems = ops::qlinear_check_problems(false);
  spec.bench_problems = ops::qlinear_bench_problems(false);
  spec.signature = [](const Problem& p) { return ops::qlinear_signature(p, false); };
  spec.flops = [](const Problem&) { return 0.0; };
  spec.fill_inputs = [](const Problem& p, std::vector<Tensor>& inputs, Rng& rng) {
    return ops::fill_qlinear_inputs(p, inputs, rng, false);
  };
  spec.reference = reference::dequantize_linear;
  return spec;
}

DNNB_REGISTER(register_op(make_dequantize_linear_spec()));

}  // namespace
}  // namespace dnnb
