// softmax over the last dim as oneDNN's softmax_v2 (softmax_accurate, forward inference).
// oneDNN 2.6 softmax has no input scale, additive mask or softcap: problems with any of
// them are unsupported, so the peer only times the plain op.
#include "kernels/peers/onednn/onednn_common.h"

namespace dnnb::onednn {
namespace {

Status softmax_expressible(const Problem& p) {
  if (p.has("mask") || p.has("softcap"))
    return Status::unsupported("onednn softmax has no additive mask/softcap");
  auto scale = p.get_double("scale", 1.0);
  if (!scale) return scale.status();
  if (*scale != 1.0) return Status::unsupported("onednn softmax has no input scale (scale=" + p.get("scale") + ")");
  return Status::ok();
}

Result<Prepared> make_softmax(const Problem&, const std::vector<Layout>& in, const std::vector<Layout>& out) {
  auto src = memory_desc(in.at(0));
  if (!src) return src.status();
  auto dst = memory_desc(out.at(0));
  if (!dst) return dst.status();
  const int axis = std::max(0, static_cast<int>(in[0].shape.size()) - 1);
  dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, *src,
                                      *dst, axis);
  dnnl::softmax_v2_forward::primitive_desc pd(desc, cpu_engine());
  return Prepared{dnnl::softmax_v2_forward(pd), {{DNNL_ARG_SRC, *src}}, {{DNNL_ARG_DST, *dst}}};
}

PeerOp softmax_peer() {
  PeerOp op;
  op.op = "softmax";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.expressible = softmax_expressible;
  op.make = make_softmax;
  return op;
}

DNNB_REGISTER(register_peer(softmax_peer()));

}  // namespace
}  // namespace dnnb::onednn
