// dequantize_blocks on AVX-512: x in a block format -> y (f32, f16, bf16), each value decoded
// exactly (kernels/avx512/quantize_blocks.h's decode_block) and rounded once to y's dtype by the
// format's store (VCVTPS2PH; BF16::encode) (docs/ops-family4.md, "dequantize_blocks"). y is
// contiguous; a contiguous x is one long run of blocks, cut into tiles of 256 blocks for the
// threads, a large output written with non-temporal stores; padded rows of x go row by row.
#include "kernels/avx512/quantize_blocks.h"
#include "suites/ops/blocks_desc.h"

namespace dnnb::avx512 {
namespace {

constexpr int64_t kTileBlocks = 256;

// Blocks [b0, b1) of x to y (values 32 b0 onwards); stream: 64-byte aligned y, non-temporal.
template <DType F, class D>
DNNB_AVX512 void dequantize_span(const uint8_t* in, typename D::storage* out, int64_t b0, int64_t b1, bool stream) {
  const int64_t bb = block_bytes(F);
  for (int64_t b = b0; b < b1; ++b) {
    const Vecs<2> v = blocks::decode_block<F>(in + b * bb);
    // 32 values are 128 bytes of f32 or 64 of f16/bf16: whole lines when y is 64-byte aligned.
    if (stream)
      D::stream2(out + b * 32, v);
    else
      D::store2(out + b * 32, v);
  }
}

template <DType F, class D>
Status run(const Tensor& x, Tensor& y) {
  using TD = typename D::storage;
  const auto* in = static_cast<const uint8_t*>(x.host_data());
  auto* out = static_cast<TD*>(y.host_data());
  const int64_t blocks = x.numel() / 32;
  const bool stream = stream_output(tensor_bytes(y), tensor_bytes(x)) && reinterpret_cast<uintptr_t>(out) % 64 == 0;
  if (!blocks::dense(x)) {  // padded rows: each row a run of blocks of its own
    auto ri = row_index(x);
    if (!ri) return ri.status();
    const int64_t cols = ri->cols, row_blocks = cols / 32;
    parallel_tasks(ri->rows, x.numel(), [&](int64_t r) {
      dequantize_span<F, D>(in + storage_bytes(F, ri->row_offset(r)), out + r * cols, 0, row_blocks, false);
    });
    return Status::ok();
  }
  const int64_t tiles = (blocks + kTileBlocks - 1) / kTileBlocks;
  parallel_tasks(tiles, x.numel(), [&](int64_t t) {
    dequantize_span<F, D>(in, out, t * kTileBlocks, std::min(blocks, (t + 1) * kTileBlocks), stream);
  });
  return Status::ok();
}

Status run_dequantize(OpCall& call) {
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input("avx512 dequantize_blocks: expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  Tensor& y = call.outputs[0];
  if (x.shape != y.shape) return Status::bad_input("avx512 dequantize_blocks: x and y differ in shape");
  if (x.host_data() == nullptr || y.host_data() == nullptr)
    return Status::bad_input("avx512 dequantize_blocks: tensors not in host memory");
  if (!blocks::dense(y)) return Status::unsupported("avx512 dequantize_blocks: y " + y.describe() + " is not contiguous");
  return blocks::with_block_format(x.dtype, [&](auto f) {
    return with_format(y.dtype, [&](auto d) { return run<decltype(f)::value, decltype(d)>(x, y); });
  });
}

Status dequantize_supports(const Problem& problem, const DeviceRuntime& device) {
  DNNB_TRY(common_supports(problem, device, ops::block_formats()));
  auto target = ops::dequantize_target(problem);
  return target ? Status::ok() : target.status();
}

DNNB_REGISTER(register_kernel("dequantize_blocks", ops::block_formats(), dequantize_supports, run_dequantize));

}  // namespace
}  // namespace dnnb::avx512
