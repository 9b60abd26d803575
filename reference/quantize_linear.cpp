#include "reference/quantize_linear.h"

#include <cstdint>
#include <string>

#include "reference/access.h"
#include "suites/ops/qlinear_desc.h"

namespace dnnb::reference {
namespace {

// The scales and zero points, checked: a zero point outside the integer type's range is bad input
// (torch refuses it: checkZeroPoint), as is a scale whose reciprocal is not a finite normal f32.
Status load_params(const Problem& p, const ops::QlinearDesc& d, const std::vector<Tensor>& inputs,
                   std::vector<float>& scale, std::vector<int32_t>& zp) {
  auto s = dense_f64(inputs[1], p.op + " scale");
  if (!s) return s.status();
  auto z = dense_f64(inputs[2], p.op + " zero_point");
  if (!z) return z.status();
  if (static_cast<int64_t>(s->size()) != d.channels || static_cast<int64_t>(z->size()) != d.channels)
    return Status::bad_input(p.op + ": scale and zero_point need " + std::to_string(d.channels) + " elements");
  for (int64_t c = 0; c < d.channels; ++c) {
    scale.push_back(static_cast<float>((*s)[c]));
    zp.push_back(static_cast<int32_t>((*z)[c]));
    if (zp.back() < d.qmin || zp.back() > d.qmax)
      return Status::bad_input(p.op + ": zero_point[" + std::to_string(c) + "]=" + std::to_string(zp.back()) +
                               " is outside " + dtype_name(d.qtype) + "'s range");
    const float inv = ops::qlinear_inv_scale(scale.back());
    if (!(scale.back() > 0.0f) || !std::isnormal(inv) || !std::isnormal(scale.back()))
      return Status::bad_input(p.op + ": scale[" + std::to_string(c) + "]=" + std::to_string(scale.back()) +
                               " is not a positive normal f32 with a normal reciprocal");
  }
  return Status::ok();
}

Status run(const Problem& p, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, bool quantize) {
  DNNB_TRY(expect_arity(inputs, 3, outputs, 1, p.op));
  auto d = ops::qlinear_desc(p, quantize);
  if (!d) return d.status();
  std::vector<float> scale;
  std::vector<int32_t> zp;
  DNNB_TRY(load_params(p, *d, inputs, scale, zp));
  auto x = dense_f64(inputs[0], p.op + " x");
  if (!x) return x.status();
  auto y = f64_output(outputs[0], inputs[0].shape, p.op + " y");
  if (!y) return y.status();
  for (int64_t i = 0; i < static_cast<int64_t>(x->size()); ++i) {
    const int64_t c = d->channel_of(i);
    const double v = (*x)[i];
    (*y)[i] = quantize ? ops::quantize_value(static_cast<float>(v), ops::qlinear_inv_scale(scale[c]), zp[c], d->qmin, d->qmax)
                       : ops::dequantize_value(static_cast<int32_t>(v), scale[c], zp[c]);
  }
  return Status::ok();
}

}  // namespace

Status quantize_linear(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  return run(problem, inputs, outputs, true);
}

Status dequantize_linear(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  return run(problem, inputs, outputs, false);
}

}  // namespace dnnb::reference
