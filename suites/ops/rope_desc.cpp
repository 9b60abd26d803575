#include "suites/ops/rope_desc.h"

#include <cmath>

#include "suites/ops/op_common.h"

namespace dnnb::ops {

const char* to_string(RopeForm form) { return form == RopeForm::half ? "half" : "interleaved"; }

const std::vector<std::string>& rope_param_keys() {
  static const std::vector<std::string> keys = {"theta", "rot", "form"};
  return keys;
}

Result<RopeDesc> rope_desc(const Problem& problem) {
  const std::string& op = problem.op;
  DNNB_TRY(expect_shape(problem, 4, "BxHxSxD"));
  RopeDesc d;
  d.batch = problem.shape[0];
  d.heads = problem.shape[1];
  d.seq = problem.shape[2];
  d.dim = problem.shape[3];

  auto theta = problem.get_double("theta", 10000.0);
  if (!theta) return Status::bad_input(op + ": " + theta.status().message);
  // theta is taken as f32 (HF's `base ** f32 tensor`): it must be a positive finite f32.
  if (!(*theta > 0) || !std::isfinite(static_cast<float>(*theta)) || static_cast<float>(*theta) <= 0)
    return Status::bad_input(op + ": parameter theta=" + problem.get("theta") + " is not a positive finite f32");
  d.theta = *theta;

  auto rot = problem.get_int("rot", d.dim);
  if (!rot) return Status::bad_input(op + ": " + rot.status().message);
  if (*rot < 2 || *rot > d.dim || *rot % 2 != 0)
    return Status::bad_input(op + ": parameter rot=" + std::to_string(*rot) + " must be even and in [2, D = " +
                             std::to_string(d.dim) + "]");
  d.rot = *rot;

  const std::string form = problem.get("form", "half");
  if (form == "half") {
    d.form = RopeForm::half;
  } else if (form == "interleaved") {
    d.form = RopeForm::interleaved;
  } else {
    return Status::bad_input(op + ": parameter form='" + form + "' is not half or interleaved");
  }
  return d;
}

std::vector<float> rope_inv_freq(const RopeDesc& desc) {
  const double theta = static_cast<double>(static_cast<float>(desc.theta));
  std::vector<float> inv(static_cast<size_t>(desc.pairs()));
  for (int64_t i = 0; i < desc.pairs(); ++i) {
    // 2i and rot are exact in double; the double quotient rounded to f32 is the f32 quotient.
    const float exponent = static_cast<float>(static_cast<double>(2 * i) / static_cast<double>(desc.rot));
    const float power = static_cast<float>(std::pow(theta, static_cast<double>(exponent)));
    inv[static_cast<size_t>(i)] = static_cast<float>(1.0 / static_cast<double>(power));
  }
  return inv;
}

Result<Signature> rope_signature(const Problem& problem, const char* in_name, const char* out_name) {
  DNNB_TRY(check_problem(problem, float_dtypes(), rope_param_keys(), 4));
  auto d = rope_desc(problem);
  if (!d) return d.status();
  Signature sig;
  TensorSpec pos = tensor_spec("pos", DType::i64, d->pos_shape());
  pos.dtype_choices = {DType::i32};
  sig.inputs = {tensor_spec(in_name, problem.dtype, d->x_shape()), pos};
  sig.outputs = {tensor_spec(out_name, problem.dtype, d->x_shape())};
  DNNB_TRY(apply_layout(problem, sig.inputs[0]));
  return sig;
}

Status fill_rope_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng) {
  auto d = rope_desc(problem);
  if (!d) return d.status();
  if (inputs.size() != 2) return Status::bad_input(problem.op + ": expected two inputs and pos");
  void* x = inputs[0].host_data();
  for (int64_t i = 0; i < inputs[0].numel(); ++i) store_element(x, inputs[0].dtype, i, rng.normal());
  void* pos = inputs[1].host_data();
  for (int64_t b = 0; b < d->batch; ++b) {
    const int64_t offset = rng.integer(0, 4096);
    for (int64_t s = 0; s < d->seq; ++s)
      store_element(pos, inputs[1].dtype, b * d->seq + s, static_cast<double>(offset + s));
  }
  return Status::ok();
}

double rope_flops(const Problem& problem) {
  auto d = rope_desc(problem);
  if (!d) return 0.0;
  return 3.0 * static_cast<double>(d->batch * d->heads * d->seq * d->rot);
}

std::vector<ProblemText> rope_check_problems(const std::string& in_name) {
  return {"2x4x37x64",                     // odd S
          "1x8x1x128",                     // decode: one position per sequence
          "2x3x17x80:rot=32",              // partial rotary (GPT-NeoX, Phi), 48 columns passed through
          "2x4x37x64:form=interleaved",
          "2x3x17x80:form=interleaved,rot=32",
          "1x8x33x128:theta=500000",       // Llama 3's base
          "3x2x5x256",
          "2x4x37x64:pos.dt=i32",
          "2x4x37x64:" + in_name + ".layout=padded",
          "1x2x9x16:" + in_name + ".layout=transposed",
          "1x1x1x2"};
}

std::vector<ProblemText> rope_bench_problems() {
  // Llama-3-8B's queries at prefill (4 x 2048 tokens, 32 heads of 128: 128 MiB of f32 in, 128
  // out) and its 8 KV heads' keys at decode for a batch of 64.
  return {"4x32x2048x128", "64x8x1x128"};
}

}  // namespace dnnb::ops
