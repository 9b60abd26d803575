#include "suites/ops/qlinear_desc.h"

#include <cstring>
#include <limits>

#include "suites/ops/op_common.h"

namespace dnnb::ops {
namespace {

// Scales the random problems cycle through: powers of two (1 / scale exact, so x = (k + 1/2)
// scale is an exact tie after the multiply), ones whose reciprocal rounds (near-ties decided by
// the f32 product, fbgemm's example), and tiny and large ones (1 / scale stays a normal f32).
constexpr float kScales[] = {0x1p-7f, 0.0372f, 1e-30f, 3.1e29f, 1.0f, 0.25f, 7.3e-5f, 0x1p-20f, 0.1f, 12.5f};
constexpr int kScaleCount = sizeof(kScales) / sizeof(kScales[0]);

// The zero point of pick p (0..3): the type's two ends, its middle, or a random value.
int32_t pick_zero_point(const QlinearDesc& d, int p, Rng& rng) {
  switch (p % 4) {
    case 0: return d.qmin;
    case 1: return d.qmax;
    case 2: return (d.qmin + d.qmax + 1) / 2;
    default: return static_cast<int32_t>(rng.integer(d.qmin, int64_t{d.qmax} + 1));
  }
}

// One quantize input for a channel of scale s and zero point zp: mostly values whose result
// lands in [qmin - 8, qmax + 8] before the clamp (exact ties, values just beside a tie, any
// fraction), some normal values, and the saturating ones (+-Inf, +-3e38, far past either end).
float quantize_input(const QlinearDesc& d, float s, int32_t zp, Rng& rng) {
  const int64_t k = rng.integer(int64_t{d.qmin} - zp - 8, int64_t{d.qmax} - zp + 9);
  const double u = rng.uniform();
  if (u < 0.40) return static_cast<float>((static_cast<double>(k) + 0.5) * s);  // a tie (exact for 2^n scales)
  if (u < 0.50) {
    const float tie = static_cast<float>((static_cast<double>(k) + 0.5) * s);
    return std::nextafter(tie, rng.uniform() < 0.5 ? -INFINITY : INFINITY);
  }
  if (u < 0.80) return static_cast<float>((static_cast<double>(k) + rng.uniform()) * s);
  if (u < 0.95) return static_cast<float>(rng.normal() * 50.0 * s);
  constexpr float kSpecials[] = {INFINITY, -INFINITY, 3e38f, -3e38f, 0.0f, -0.0f};
  const float special = kSpecials[rng.integer(0, 6)];
  if (special != 0.0f || rng.uniform() < 0.5) return special;
  return static_cast<float>(std::min(1e38, 1e6 * s)) * (rng.uniform() < 0.5 ? -1.0f : 1.0f);  // far past an end
}

}  // namespace

const std::vector<DType>& qlinear_int_dtypes() {
  static const std::vector<DType> dtypes = {DType::i8, DType::u8};
  return dtypes;
}

const std::vector<std::string>& qlinear_param_keys() {
  static const std::vector<std::string> keys = {"axis"};
  return keys;
}

Result<QlinearDesc> qlinear_desc(const Problem& p, bool quantize) {
  QlinearDesc d;
  d.qtype = quantize ? DType::i8 : p.dtype;
  if (quantize && p.has("y.dt")) {
    auto dt = parse_dtype(p.get("y.dt"));
    if (!dt || (*dt != DType::i8 && *dt != DType::u8))
      return Status::bad_input(p.op + ": y.dt=" + p.get("y.dt") + " is not one of i8, u8");
    d.qtype = *dt;
  }
  if (d.qtype != DType::i8 && d.qtype != DType::u8)
    return Status::bad_input(p.op + ": the integer side is " + dtype_name(d.qtype) + ", not i8 or u8");
  d.qmin = d.qtype == DType::i8 ? -128 : 0;
  d.qmax = d.qtype == DType::i8 ? 127 : 255;
  const int64_t rank = static_cast<int64_t>(p.shape.size());
  d.inner = shape_numel(p.shape);
  if (p.has("axis")) {
    auto axis = p.get_int("axis", 0);
    if (!axis || *axis < -rank || *axis >= rank)
      return Status::bad_input(p.op + ": parameter axis=" + p.get("axis") + " is not a dim of " +
                               shape_to_string(p.shape) + " (-" + std::to_string(rank) + ".." +
                               std::to_string(rank - 1) + ")");
    d.axis = static_cast<int>(*axis < 0 ? *axis + rank : *axis);
    d.channels = p.shape[d.axis];
    d.inner = 1;
    for (int64_t i = d.axis + 1; i < rank; ++i) d.inner *= p.shape[i];
  }
  return d;
}

Result<Signature> qlinear_signature(const Problem& p, bool quantize) {
  DNNB_TRY(check_problem(p, quantize ? std::vector<DType>{DType::f32} : qlinear_int_dtypes(), qlinear_param_keys()));
  auto d = qlinear_desc(p, quantize);
  if (!d) return d.status();
  Signature sig;
  sig.inputs = {tensor_spec("x", p.dtype, p.shape), tensor_spec("scale", DType::f32, {d->channels}),
                tensor_spec("zero_point", DType::i32, {d->channels})};
  TensorSpec y = tensor_spec("y", quantize ? DType::i8 : DType::f32, p.shape);
  if (quantize) y.dtype_choices = {DType::u8};
  sig.outputs = {y};
  DNNB_TRY(apply_layout(p, sig.inputs[0]));
  return sig;
}

std::vector<ProblemText> qlinear_check_problems(bool quantize) {
  // Per tensor: odd lengths, every encoding (dequantize's 4x256), padded and transposed x. Per
  // channel: along the first, a middle and the last dim (also written -1), channel counts that
  // are not multiples of any vector width, with padded and transposed x. Quantize runs each for
  // i8 and u8 (y.dt); dequantize runs each at both problem dtypes. Parameters sorted (the texts
  // round-trip).
  const std::vector<std::string> shapes = {"4x256", "100003", "333x1000:layout=padded", "64x4096:layout=transposed",
                                           "7x300:axis=0", "3x5x257:axis=1", "3x5x257:axis=2", "3x5x257:axis=-1",
                                           "300x7:axis=1,layout=transposed", "257x33:axis=0,layout=padded",
                                           "64x4096:axis=0,layout=transposed"};
  std::vector<ProblemText> out;
  for (const std::string& s : shapes) {
    if (!quantize) {
      out.push_back({s, qlinear_int_dtypes()});
      continue;
    }
    out.push_back({s, {DType::f32}});
    out.push_back({s + (s.find(':') == std::string::npos ? ":" : ",") + "y.dt=u8", {DType::f32}});
  }
  return out;
}

std::vector<ProblemText> qlinear_bench_problems(bool quantize) {
  // 256 MiB of source each (issue 28): per tensor and per output channel of an [8192, 8192]
  // weight-shaped tensor (axis 0, as torch's per-channel weight observers use).
  if (quantize)
    return {{"8192x8192", {DType::f32}}, {"8192x8192:axis=0", {DType::f32}}, {"8192x8192:y.dt=u8", {DType::f32}}};
  return {{"16384x16384", {DType::i8, DType::u8}}, {"16384x16384:axis=0", {DType::i8}}};
}

Status fill_qlinear_inputs(const Problem& p, std::vector<Tensor>& inputs, Rng& rng, bool quantize) {
  auto d = qlinear_desc(p, quantize);
  if (!d) return d.status();
  if (inputs.size() != 3) return Status::bad_input(p.op + ": expects inputs x, scale, zero_point");
  auto* scale = static_cast<float*>(inputs[1].host_data());
  auto* zp = static_cast<int32_t*>(inputs[2].host_data());
  const int64_t scale_start = rng.integer(0, kScaleCount), zp_start = rng.integer(0, 4);
  for (int64_t c = 0; c < d->channels; ++c) {
    scale[c] = kScales[(scale_start + c) % kScaleCount];
    zp[c] = pick_zero_point(*d, static_cast<int>((zp_start + c) % 4), rng);
  }
  const int64_t n = inputs[0].numel();
  if (!quantize) {  // every encoding in order
    auto* x = static_cast<uint8_t*>(inputs[0].host_data());
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<uint8_t>(i & 0xFF);
    return Status::ok();
  }
  auto* x = static_cast<float*>(inputs[0].host_data());
  // Large problems (bench sizes) repeat a drawn block of 64Ki values per channel pattern: the
  // values only need to be ordinary there, and drawing 67M of them takes seconds.
  constexpr int64_t kDrawn = 1 << 16;
  for (int64_t i = 0; i < std::min(n, kDrawn); ++i) {
    const int64_t c = d->channel_of(i);
    x[i] = quantize_input(*d, scale[c], zp[c], rng);
  }
  for (int64_t i = kDrawn; i < n; ++i) {
    const int64_t c = d->channel_of(i);
    // The drawn value of the same position within a 64Ki block, rescaled to this channel.
    const int64_t j = i % kDrawn, cj = d->channel_of(j);
    x[i] = cj == c ? x[j] : static_cast<float>(static_cast<double>(x[j]) / scale[cj] * scale[c]);
  }
  return Status::ok();
}

}  // namespace dnnb::ops
