// matmul_i8 as oneDNN's int8 matmul primitive: a (s8) as src, b (s8) as weights, y (s32) as dst,
// each described by its strides (a transposed or padded operand is a memory::desc, not a copy).
// No scales or zero points. oneDNN (2.6, x64 CPU with AVX-512 VNNI) converts the s32 sum through
// f32 on its way to an s32 dst, so sums above 2^24 in magnitude come back rounded to 24
// significant bits (at K = 131071, 127 x 127 everywhere gives 2114044160 for 2114044159): a
// known deviation on the largest-K problems, where such sums occur.
//
// On a CPU without VNNI (AVX-512 VNNI or AMX-INT8) oneDNN multiplies s8 x s8 as (a + 128) x b
// with VPMADDUBSW, whose int16 sums of two products saturate ("Nuances of int8 Computations",
// https://oneapi-src.github.io/oneDNN/dev_guide_int8_computations.html): on an AVX2 CPU its
// results are off by thousands on ordinary inputs (26492 of the 32000 outputs of the check
// case 2000x16x96). Such a result is not a peer figure, so the peer is unsupported there
// and says why.
#include "devices/cpu/cpu_features.h"
#include "kernels/peers/onednn/onednn_common.h"

namespace dnnb::onednn {
namespace {

Result<Prepared> make_matmul_i8(const Problem&, const std::vector<Layout>& in, const std::vector<Layout>& out) {
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

Status exact_on_this_cpu(const Problem&) {
  const CpuFeatures& cpu = cpu_features();
  if (cpu.avx512_vnni_usable() || cpu.amx_int8_usable()) return Status::ok();
  return Status::unsupported(
      "onednn matmul_i8 needs AVX-512 VNNI or AMX-INT8: without them oneDNN's s8 products go through "
      "VPMADDUBSW, whose int16 pair sums saturate");
}

PeerOp matmul_i8_peer() {
  PeerOp op;
  op.op = "matmul_i8";
  op.dtypes = {DType::i8};
  op.expressible = exact_on_this_cpu;
  op.make = make_matmul_i8;
  op.known_deviations = {{"matmul_i8:i8:*x131071*",
                          "oneDNN's s8 matmul passes the s32 sum through f32: sums above 2^24 round to 24 bits"}};
  op.compute_unit_for = [](const Problem&, const DeviceRuntime&) { return std::string("i8_vnni"); };
  return op;
}

DNNB_REGISTER(register_peer(matmul_i8_peer()));

}  // namespace
}  // namespace dnnb::onednn
