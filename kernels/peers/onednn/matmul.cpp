// matmul as oneDNN's matmul primitive: a as src, b as weights, y as dst, each described by
// its strides (a transposed or padded operand is a memory::desc, not a copy); batched
// problems are 3-D descs. tf32=1 is computed in full f32. oneDNN refuses (unsupported, with
// its status) the dtypes its CPU kernels lack on this machine, e.g. f16 without
// AVX512-FP16 or AMX-FP16.
#include "kernels/peers/onednn/onednn_common.h"

namespace dnnb::onednn {
namespace {

Result<Prepared> make_matmul(const Problem&, const std::vector<Layout>& in, const std::vector<Layout>& out) {
  auto a = memory_desc(in.at(0));
  if (!a) return a.status();
  auto b = memory_desc(in.at(1));
  if (!b) return b.status();
  auto y = memory_desc(out.at(0));
  if (!y) return y.status();
  dnnl::matmul::desc desc(*a, *b, *y);
  dnnl::matmul::primitive_desc pd(desc, cpu_engine());
  return Prepared{dnnl::matmul(pd), {{DNNL_ARG_SRC, *a}, {DNNL_ARG_WEIGHTS, *b}}, {{DNNL_ARG_DST, *y}}};
}

PeerOp matmul_peer() {
  PeerOp op;
  op.op = "matmul";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.make = make_matmul;
  op.compute_unit_for = product_unit;
  return op;
}

DNNB_REGISTER(register_peer(matmul_peer()));

}  // namespace
}  // namespace dnnb::onednn
