// relu, sigmoid, tanh, exp, silu, gelu, gelu_tanh as oneDNN eltwise primitives (forward
// inference). In the 2.6 API one memory::desc describes both src and dst, so a
// non-contiguous x (layout=transposed/padded) next to the dense y is unsupported there.
#include "kernels/peers/onednn/onednn_common.h"

namespace dnnb::onednn {
namespace {

struct EltwiseEntry {
  const char* op;
  dnnl::algorithm algorithm;
  float alpha;  // relu: negative slope; swish: sigmoid argument scale
};

constexpr EltwiseEntry kEltwise[] = {
    {"relu", dnnl::algorithm::eltwise_relu, 0.0f},
    {"sigmoid", dnnl::algorithm::eltwise_logistic, 0.0f},
    {"tanh", dnnl::algorithm::eltwise_tanh, 0.0f},
    {"exp", dnnl::algorithm::eltwise_exp, 0.0f},
    {"silu", dnnl::algorithm::eltwise_swish, 1.0f},  // x * sigmoid(1 * x)
    {"gelu", dnnl::algorithm::eltwise_gelu_erf, 0.0f},
    {"gelu_tanh", dnnl::algorithm::eltwise_gelu_tanh, 0.0f},
};

bool register_eltwise(const EltwiseEntry& entry) {
  PeerOp op;
  op.op = entry.op;
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.make = [entry](const Problem&, const std::vector<Layout>& in, const std::vector<Layout>& out) -> Result<Prepared> {
    auto src = memory_desc(in.at(0));
    if (!src) return src.status();
    auto dst = memory_desc(out.at(0));
    if (!dst) return dst.status();
    if (*src != *dst)
      return Status::unsupported("onednn 2.6 eltwise takes one layout for src and dst; x is a non-contiguous view");
    dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, entry.algorithm, *src, entry.alpha, 0.0f);
    dnnl::eltwise_forward::primitive_desc pd(desc, cpu_engine());
    return Prepared{dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, *src}}, {{DNNL_ARG_DST, *dst}}};
  };
  return register_peer(std::move(op));
}

bool register_all() {
  bool ok = true;
  for (const auto& entry : kEltwise) ok = register_eltwise(entry) && ok;
  return ok;
}

DNNB_REGISTER(register_all());

}  // namespace
}  // namespace dnnb::onednn
