// matmul_i8: y = torch._int_mm(a, b) (docs/ops-family4.md, "matmul_i8").
// Inputs a i8 [M, K], b i8 [K, N] (either may be stored transposed or padded: a.layout=,
// b.layout=; b.layout=transposed is the column-major b that cuBLASLt's int8 product wants);
// output y i32 [M, N], the exact sums. K is at most 131071 (kMatmulI8MaxK: beyond it
// (-128) x (-128) products overflow int32); a larger K is bad input.
// Tolerance class selection: an integer product has one right answer, so every element must
// equal the reference exactly (rtol = atol = 0).
// FLOP model: 2 M N K (one multiply and one add per product, integer operations counted as FLOP).
#include "reference/matmul_i8.h"
#include "reference/register.h"
#include "suites/ops/matmul_q_desc.h"
#include "suites/ops/op_common.h"

#include <cstring>

namespace dnnb {
namespace {

Result<Signature> matmul_i8_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, {DType::i8}, {}, 3));
  auto d = ops::matmul_i8_desc(p);
  if (!d) return d.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("a", DType::i8, {d->m, d->k}), ops::tensor_spec("b", DType::i8, {d->k, d->n})};
  sig.outputs = {ops::tensor_spec("y", DType::i32, {d->m, d->n})};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

// a and b uniform over all 256 int8 values (-128 included, the value whose product with itself
// is the largest).
Status fill_matmul_i8_inputs(const Problem&, std::vector<Tensor>& inputs, Rng& rng) {
  if (inputs.size() != 2) return Status::bad_input("matmul_i8: two inputs (a, b) expected");
  for (Tensor& t : inputs) {
    auto* data = static_cast<int8_t*>(t.host_data());
    for (int64_t i = 0; i < t.numel(); ++i) data[i] = static_cast<int8_t>(static_cast<uint8_t>(rng.next() >> 56));
  }
  return Status::ok();
}

OpSpec make_matmul_i8_spec() {
  OpSpec spec = ops::op_spec("4", "matmul_i8", "torch._int_mm(a, b)", {DType::i8}, ToleranceClass::selection);
  spec.check_problems = {"1x1x1", "17x13x1", "31x37x41", "1x257x129", "5x3x7", "128x128x128", "256x512x384",
                         // K not a multiple of 4 (the dot4 group), 16, 64 (the AMX tile's depth).
                         "40x24x70", "33x65x67", "64x48x4099",
                         "24x40x67:b.layout=transposed", "40x24x56:a.layout=transposed",
                         "40x24x56:a.layout=transposed,b.layout=transposed", "16x24x40:a.layout=padded,b.layout=padded",
                         "130x96x200:b.layout=transposed",
                         // tall and wide-and-skinny
                         "2000x16x96", "16x2000x96", "3000x3x64",
                         // long K, up to the largest K that cannot overflow int32
                         "16x16x16385", "8x8x131071:b.layout=transposed"};
  spec.bench_problems = {"8192x8192x8192", "8192x8192x8192:b.layout=transposed", "4096x4096x4096:b.layout=transposed",
                         // an LLM MLP at 4096 tokens, weights as F.linear's (b = W^T, column-major):
                         // up projection 4096 -> 14336, down projection 14336 -> 4096
                         "4096x14336x4096:b.layout=transposed", "4096x4096x14336:b.layout=transposed"};
  spec.signature = matmul_i8_signature;
  spec.flops = [](const Problem& p) {
    auto d = ops::matmul_i8_desc(p);
    return d ? ops::gemm_flops(*d) : 0.0;
  };
  spec.fill_inputs = fill_matmul_i8_inputs;
  spec.reference = reference::matmul_i8;
  return spec;
}

DNNB_REGISTER(register_op(make_matmul_i8_spec()));

}  // namespace
}  // namespace dnnb
