// add, sub, mul, div as a oneDNN binary primitive: a is src0, b src1, both padded with
// leading 1s to y's rank; oneDNN broadcasts size-1 dims (of either, in 2.6 as installed).
// A layout or broadcast it refuses is reported unsupported with its status.
#include "kernels/peers/onednn/onednn_common.h"

namespace dnnb::onednn {
namespace {

bool register_binary(const char* name, dnnl::algorithm algorithm) {
  PeerOp op;
  op.op = name;
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.make = [algorithm](const Problem&, const std::vector<Layout>& in, const std::vector<Layout>& out) -> Result<Prepared> {
    const int ndims = static_cast<int>(out.at(0).shape.size());
    auto a = memory_desc(in.at(0), ndims);
    if (!a) return a.status();
    auto b = memory_desc(in.at(1), ndims);
    if (!b) return b.status();
    auto y = memory_desc(out.at(0), ndims);
    if (!y) return y.status();
    dnnl::binary::desc desc(algorithm, *a, *b, *y);
    dnnl::binary::primitive_desc pd(desc, cpu_engine());
    return Prepared{dnnl::binary(pd), {{DNNL_ARG_SRC_0, *a}, {DNNL_ARG_SRC_1, *b}}, {{DNNL_ARG_DST, *y}}};
  };
  return register_peer(std::move(op));
}

DNNB_REGISTER(register_binary("add", dnnl::algorithm::binary_add));
DNNB_REGISTER(register_binary("sub", dnnl::algorithm::binary_sub));
DNNB_REGISTER(register_binary("mul", dnnl::algorithm::binary_mul));
DNNB_REGISTER(register_binary("div", dnnl::algorithm::binary_div));

}  // namespace
}  // namespace dnnb::onednn
