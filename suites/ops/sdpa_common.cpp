#include "suites/ops/sdpa_common.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/host_device.h"
#include "reference/sdpa.h"
#include "suites/ops/op_common.h"
#include "suites/ops/sdpa_desc.h"

namespace dnnb::ops {

Result<Signature> sdpa_signature(const Problem& p, bool backward) {
  DNNB_TRY(check_problem(p, float_dtypes(), sdpa_param_keys(), 4));
  auto d = sdpa_desc(p);
  if (!d) return d.status();
  Signature sig;
  sig.inputs = {tensor_spec("q", p.dtype, sdpa_q_shape(*d)), tensor_spec("k", p.dtype, sdpa_k_shape(*d)),
                tensor_spec("v", p.dtype, sdpa_v_shape(*d))};
  if (d->mask) sig.inputs.push_back(tensor_spec("mask", p.dtype, sdpa_mask_shape(*d)));
  if (backward) {
    sig.inputs.push_back(tensor_spec("o", p.dtype, sdpa_o_shape(*d)));
    sig.inputs.push_back(tensor_spec("do", p.dtype, sdpa_o_shape(*d)));
    sig.inputs.push_back(tensor_spec("lse", DType::f32, sdpa_lse_shape(*d)));
    sig.outputs = {tensor_spec("dq", p.dtype, sdpa_q_shape(*d)), tensor_spec("dk", p.dtype, sdpa_k_shape(*d)),
                   tensor_spec("dv", p.dtype, sdpa_v_shape(*d))};
  } else {
    sig.outputs = {tensor_spec("o", p.dtype, sdpa_o_shape(*d)), tensor_spec("lse", DType::f32, sdpa_lse_shape(*d))};
  }
  DNNB_TRY(apply_layout(p, sig.inputs[0]));
  return sig;
}

namespace {

// The backward's o and lse where the float64 forward would take minutes (bench sizes, which
// check does not run against the reference): o normal(0, 1), and for each row the log of its
// visible keys plus 1/2, the lse of scores drawn from normal(0, 1) (E exp(s) = e^(1/2)); so p =
// exp(s - lse) stays in range and the kernels do the work of a real backward.
Status fill_standin_forward(const SdpaDesc& d, Tensor& o, Tensor& lse, Rng& rng) {
  for (int64_t i = 0; i < o.numel(); ++i) store_element(o.host_data(), o.dtype, i, rng.normal());
  // The value depends on the query row alone: once per row, then every (batch, head).
  std::vector<double> row_lse(d.sq);
  for (int64_t i = 0; i < d.sq; ++i) {
    int64_t visible = 0;
    for (int64_t j = 0; j < d.sk; ++j) visible += d.visible(i, j) ? 1 : 0;
    row_lse[i] = visible > 0 ? std::log(static_cast<double>(visible)) + 0.5 : -std::numeric_limits<double>::infinity();
  }
  for (int64_t r = 0; r < lse.numel(); ++r) store_element(lse.host_data(), lse.dtype, r, row_lse[r % d.sq]);
  return Status::ok();
}

}  // namespace

Status fill_sdpa_inputs(const Problem& p, std::vector<Tensor>& inputs, Rng& rng) {
  auto d = sdpa_desc(p);
  if (!d) return d.status();
  const bool backward = p.op == "sdpa_bwd";
  const size_t n_qkv = 3 + (d->mask ? 1 : 0);
  auto normal = [&](Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i) store_element(t.host_data(), t.dtype, i, rng.normal());
  };
  for (size_t i = 0; i < 3; ++i) normal(inputs[i]);
  if (d->mask) {
    Tensor& m = inputs[3];
    for (int64_t i = 0; i < d->sq; ++i)
      for (int64_t j = 0; j < d->sk; ++j) {
        const bool masked = (i == 1) || (i * 7 + j * 3) % 11 == 0;
        store_element(m.host_data(), m.dtype, i * d->sk + j,
                      masked ? -std::numeric_limits<double>::infinity() : rng.normal());
      }
  }
  if (!backward) return Status::ok();
  normal(inputs[n_qkv + 1]);  // do
  if (sdpa_forward_flops(*d) > kReferenceMaxFlops) return fill_standin_forward(*d, inputs[n_qkv], inputs[n_qkv + 2], rng);
  HostDevice& host = scratch_host();
  auto o = empty_tensor(host, DType::f64, sdpa_o_shape(*d));
  auto lse = empty_tensor(host, DType::f64, sdpa_lse_shape(*d));
  if (!o) return o.status();
  if (!lse) return lse.status();
  std::vector<Tensor> forward_inputs(inputs.begin(), inputs.begin() + n_qkv);
  std::vector<Tensor> forward_outputs{*o, *lse};
  Problem forward = p;
  forward.op = "sdpa";
  DNNB_TRY(reference::sdpa(forward, forward_inputs, forward_outputs));
  for (auto [src, dst] : {std::pair{&*o, &inputs[n_qkv]}, {&*lse, &inputs[n_qkv + 2]}}) {
    const auto* values = static_cast<const double*>(src->host_data());
    for (int64_t i = 0; i < dst->numel(); ++i) store_element(dst->host_data(), dst->dtype, i, values[i]);
  }
  return Status::ok();
}

std::vector<ProblemText> sdpa_check_problems() {
  return {"1x2x37x64",                          // no tile multiple anywhere
          "2x4x65x64:causal=1",
          "1x8x33x128:causal=1,kv=2",           // GQA
          "1x2x17x64:causal=1,sk=50",           // query shorter than keys, top-left causal
          "2x4x1x128:kv=1,sk=300",              // a decode row against 300 keys, MQA
          "1x2x40x64:mask=1",                   // additive mask with -inf and a fully masked row
          "1x2x100x64:causal=1,softcap=50,window=16",  // Gemma 2 local layer
          "1x2x24x256:causal=1,kv=1",           // head dim 256
          "1x2x20x64:dv=32",                    // v head dim unlike q's
          "1x2x96x128:causal=1,scale=0.0625",
          "1x2x29x64:layout=padded",
          "1x4x700x128:causal=1,kv=2"};         // more key tiles than a pipelined kernel has stages
}

std::vector<ProblemText> sdpa_bench_problems() {
  return {"4x32x4096x128", "4x32x4096x128:causal=1", "4x32x4096x128:causal=1,kv=8"};
}

}  // namespace dnnb::ops
