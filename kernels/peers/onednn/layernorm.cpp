// layernorm as oneDNN's layer_normalization_forward (inference, use_scale | use_shift).
// oneDNN 2.6 takes scale and shift as f32 arrays, so w and b are converted on each run (N
// values, small next to the rows x N of the op); one memory::desc serves src and dst, so a
// non-contiguous x is unsupported there.
#include "kernels/peers/onednn/onednn_common.h"

namespace dnnb::onednn {
namespace {

constexpr int kConverted = -1;  // bound by execute_layernorm, not from the tensor as is

Result<Prepared> make_layernorm(const Problem& p, const std::vector<Layout>& in, const std::vector<Layout>& out) {
  auto eps = p.get_double("eps", 1e-5);
  if (!eps) return eps.status();
  // oneDNN normalises over the last dim of a tensor with at least 2 dims: 1-D x is 1 x N.
  const int ndims = std::max<int>(2, static_cast<int>(in.at(0).shape.size()));
  auto src = memory_desc(in.at(0), ndims);
  if (!src) return src.status();
  auto dst = memory_desc(out.at(0), ndims);
  if (!dst) return dst.status();
  if (*src != *dst)
    return Status::unsupported("onednn 2.6 layer normalization takes one layout for src and dst; x is non-contiguous");
  const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, *src, static_cast<float>(*eps),
                                               flags);
  dnnl::layer_normalization_forward::primitive_desc pd(desc, cpu_engine());
  return Prepared{dnnl::layer_normalization_forward(pd),
                  {{DNNL_ARG_SRC, *src}, {kConverted, {}}, {kConverted, {}}},
                  {{DNNL_ARG_DST, *dst}}};
}

Status execute_layernorm(OpCall& call, const Prepared& prepared) {
  std::vector<std::vector<float>> converted;
  std::vector<std::pair<int, dnnl::memory>> extra;
  const int args[] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
  for (int k = 0; k < 2; ++k) {
    const Tensor& t = call.inputs.at(1 + k);
    auto host = to_host(t);  // contiguous host copy (no copy cost beyond N elements)
    if (!host) return host.status();
    std::vector<float>& values = converted.emplace_back(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i)
      values[i] = static_cast<float>(load_element(host->host_data(), t.dtype, i));
    auto md = memory_desc(DType::f32, {t.numel()});
    if (!md) return md.status();
    extra.emplace_back(args[k], dnnl::memory(*md, cpu_engine(), values.data()));
  }
  return execute_bound(call, prepared, extra);
}

PeerOp layernorm_peer() {
  PeerOp op;
  op.op = "layernorm";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.make = make_layernorm;
  op.execute = execute_layernorm;
  // Seen on oneDNN 2.6 with the `constant` fixtures (rows of one repeated value, zero variance).
  op.known_deviations = {{"layernorm:f32:*fixture=constant*",
                          "oneDNN 2.6 f32 layer normalization does not give y = b on a row of one repeated "
                          "value: its mean is off by an ulp of x, which 1/sqrt(var + eps) amplifies (torch "
                          "gives b exactly)"}};
  return op;
}

DNNB_REGISTER(register_peer(layernorm_peer()));

}  // namespace
}  // namespace dnnb::onednn
