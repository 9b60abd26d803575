// sum, mean, max, norm2 over the last dim as oneDNN reduction primitives: dst is src's
// shape with the last dim 1. norm2 is reduction_norm_lp_sum with p = 2, eps = 0
// (sqrt(sum |x|^2 + eps)).
#include "kernels/peers/onednn/onednn_common.h"

namespace dnnb::onednn {
namespace {

bool register_reduction(const char* name, dnnl::algorithm algorithm, float p) {
  PeerOp op;
  op.op = name;
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.make = [algorithm, p](const Problem&, const std::vector<Layout>& in, const std::vector<Layout>& out) -> Result<Prepared> {
    if (in.at(0).shape.empty() || in[0].shape.back() == 1)
      return Status::unsupported("onednn reduction refuses src and dst of equal dims (last dim of size 1)");
    auto src = memory_desc(in.at(0));
    if (!src) return src.status();
    // y (x's shape without the last dim) seen with a trailing dim of 1.
    Layout reduced = out.at(0);
    reduced.shape.push_back(1);
    reduced.strides.push_back(1);
    auto dst = memory_desc(reduced, static_cast<int>(in[0].shape.size()));
    if (!dst) return dst.status();
    dnnl::reduction::desc desc(algorithm, *src, *dst, p, 0.0f);
    dnnl::reduction::primitive_desc pd(desc, cpu_engine());
    return Prepared{dnnl::reduction(pd), {{DNNL_ARG_SRC, *src}}, {{DNNL_ARG_DST, *dst}}};
  };
  return register_peer(std::move(op));
}

DNNB_REGISTER(register_reduction("sum", dnnl::algorithm::reduction_sum, 0.0f));
DNNB_REGISTER(register_reduction("mean", dnnl::algorithm::reduction_mean, 0.0f));
DNNB_REGISTER(register_reduction("max", dnnl::algorithm::reduction_max, 0.0f));
DNNB_REGISTER(register_reduction("norm2", dnnl::algorithm::reduction_norm_lp_sum, 2.0f));

}  // namespace
}  // namespace dnnb::onednn
