// linear as oneDNN's matmul primitive: x as src, w [N, K] as the K x N weights (its desc
// with the strides swapped: the same memory, no copy), b as a 1 x N bias, y as dst.
// oneDNN refuses (unsupported, with its status) the dtypes its CPU kernels lack on this
// machine, e.g. f16 without AVX512-FP16 or AMX-FP16.
#include "kernels/peers/onednn/onednn_common.h"

namespace dnnb::onednn {
namespace {

Result<Prepared> make_linear(const Problem&, const std::vector<Layout>& in, const std::vector<Layout>& out) {
  auto x = memory_desc(in.at(0));
  if (!x) return x.status();
  const Layout& w = in.at(1);
  auto weights = memory_desc(Layout{w.dtype, {w.shape.at(1), w.shape.at(0)}, {w.strides.at(1), w.strides.at(0)}});
  if (!weights) return weights.status();
  auto y = memory_desc(out.at(0));
  if (!y) return y.status();
  std::vector<std::pair<int, dnnl::memory::desc>> inputs = {{DNNL_ARG_SRC, *x}, {DNNL_ARG_WEIGHTS, *weights}};
  if (in.size() > 2) {
    auto bias = memory_desc(in.at(2), 2);  // [N] as 1 x N, broadcast over the rows
    if (!bias) return bias.status();
    inputs.emplace_back(DNNL_ARG_BIAS, *bias);
    dnnl::matmul::desc desc(*x, *weights, *bias, *y);
    dnnl::matmul::primitive_desc pd(desc, cpu_engine());
    return Prepared{dnnl::matmul(pd), inputs, {{DNNL_ARG_DST, *y}}};
  }
  dnnl::matmul::desc desc(*x, *weights, *y);
  dnnl::matmul::primitive_desc pd(desc, cpu_engine());
  return Prepared{dnnl::matmul(pd), inputs, {{DNNL_ARG_DST, *y}}};
}

PeerOp linear_peer() {
  PeerOp op;
  op.op = "linear";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.make = make_linear;
  op.compute_unit_for = product_unit;
  return op;
}

DNNB_REGISTER(register_peer(linear_peer()));

}  // namespace
}  // namespace dnnb::onednn
