// cast: y = x.to(dtype) between f32, f16, bf16, f8_e4m3fn and f8_e5m2, every pair
// (docs/ops-family4.md, "cast"). x has the problem's dtype and shape, any layout (`layout=`);
// y is contiguous in the target dtype, `y.dt=` (default: the source's, a copy).
// Tolerance class selection: a cast is one correctly rounded conversion with one right answer
// (core/dtype.cpp's, bit-exact with torch), so every element must equal it exactly; check
// compares values (NaN by NaN-ness), tests/test_cast.cpp the bit patterns (the sign of zero
// and the NaN encodings too).
// FLOP model: none. Bytes: x read once, y written once.
#include "reference/cast.h"
#include "reference/register.h"
#include "suites/ops/cast_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> cast_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::cast_dtypes(), {}));
  auto target = ops::cast_target(p);
  if (!target) return target.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("x", p.dtype, p.shape)};
  TensorSpec y = ops::tensor_spec("y", p.dtype, p.shape);
  for (DType d : ops::cast_dtypes())
    if (d != p.dtype) y.dtype_choices.push_back(d);
  sig.outputs = {y};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

// Every (source, target) pair at shapes that hold every encoding of an 8- or 16-bit source
// (or the f32 edge set), contiguous, padded and transposed, and an odd length. A text shared by
// several sources is listed once, with each of them.
std::vector<ProblemText> cast_check_problems() {
  std::vector<ProblemText> out;
  auto add = [&out](const std::string& text, DType from) {
    for (ProblemText& p : out)
      if (p.text == text) {
        p.only.push_back(from);
        return;
      }
    out.push_back({text, {from}});
  };
  for (DType from : ops::cast_dtypes()) {
    std::vector<std::string> shapes;
    if (from == DType::f32)
      shapes = {"512x512", "64x4096:layout=transposed", "333x1000:layout=padded", "4097"};
    else if (dtype_size(from) == 2)
      shapes = {"65536", "256x256:layout=transposed", "333x1000:layout=padded", "4097"};
    else
      shapes = {"4x256", "300x7:layout=transposed", "7x300:layout=padded", "100003"};
    for (DType to : ops::cast_dtypes())
      for (const std::string& shape : shapes) {
        std::string text = shape;
        if (to != from) text += std::string(shape.find(':') == std::string::npos ? ":" : ",") + "y.dt=" + dtype_name(to);
        add(text, from);
      }
  }
  return out;
}

OpSpec make_cast_spec() {
  OpSpec spec = ops::op_spec("4", "cast", "x.to(dtype)", ops::cast_dtypes(), ToleranceClass::selection);
  spec.check_problems = cast_check_problems();
  // 256 MiB of source each: the casts around a mixed-precision step (f32 master weights to
  // bf16, bf16 activations to f32 and to fp8 for an fp8 GEMM, f16 to f32) and fp8 weights
  // widened to bf16.
  spec.bench_problems = {{"8192x8192:y.dt=bf16", {DType::f32}},
                         {"8192x8192:y.dt=f16", {DType::f32}},
                         {"8192x8192:y.dt=f8_e4m3fn", {DType::f32}},
                         {"16384x8192:y.dt=f32", {DType::bf16, DType::f16}},
                         {"16384x8192:y.dt=f8_e4m3fn", {DType::bf16}},
                         {"32768x8192:y.dt=bf16", {DType::f8_e4m3fn}}};
  spec.signature = cast_signature;
  spec.flops = [](const Problem&) { return 0.0; };
  spec.fill_inputs = ops::fill_cast_inputs;
  spec.reference = reference::cast;
  return spec;
}

DNNB_REGISTER(register_op(make_cast_spec()));

}  // namespace
}  // namespace dnnb
