// quantize_blocks on AVX-512: x (f32, f16, bf16; any layout) -> y in a block format, bit for bit
// as core/dtype.cpp's quantize_row (docs/ops-family4.md, "quantize_blocks"). Each 32-value block
// is two f32 vectors: a finiteness test (a NaN or Inf makes the NaN block), the block's amax by
// one reduction, then the format's encoder (kernels/avx512/quantize_blocks.h). Work goes to
// threads in tiles of 128 blocks of a row; a row that is not unit-stride (transposed x) is
// gathered into per-thread scratch first.
#include "kernels/avx512/quantize_blocks.h"
#include "suites/ops/blocks_desc.h"

namespace dnnb::avx512 {
namespace {

constexpr int64_t kTileValues = 128 * 32;

// n_blocks blocks of contiguous source values at `src` into `dst`.
template <class S, DType F>
DNNB_AVX512 void quantize_span(const typename S::storage* src, uint8_t* dst, int64_t n_blocks) {
  const int64_t bb = block_bytes(F);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const Vecs<2> v = S::load2(src + 32 * b);
    uint8_t* block = dst + b * bb;
    if (!blocks::all_finite(v)) {
      blocks::write_nan_block(F, block);
    } else if constexpr (F == DType::q8_0) {
      blocks::quantize_q8_0(v, block);
    } else if constexpr (F == DType::q4_0) {
      blocks::quantize_q4_0(v, block);
    } else {
      blocks::quantize_mx<F>(v, block);
    }
  }
}

template <class S, DType F>
Status run(const Tensor& x, Tensor& y) {
  using TS = typename S::storage;
  auto xr = host_rows(x);
  if (!xr) return xr.status();
  const HostRows in = *xr;
  const int64_t rows = in.rows(), cols = in.cols();
  const int64_t bb = block_bytes(F);
  const int64_t row_bytes = cols / 32 * bb;
  auto* out = static_cast<uint8_t*>(y.host_data());
  const int64_t tiles = (cols + kTileValues - 1) / kTileValues;
  parallel_tasks(rows * tiles, rows * cols, [&](int64_t task) {
    const int64_t r = task / tiles, c0 = (task % tiles) * kTileValues, n = std::min(kTileValues, cols - c0);
    quantize_span<S, F>(read_span<TS>(in, r, c0, n, 0), out + r * row_bytes + c0 / 32 * bb, n / 32);
  });
  return Status::ok();
}

Status run_quantize(OpCall& call) {
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input("avx512 quantize_blocks: expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  Tensor& y = call.outputs[0];
  if (x.shape != y.shape) return Status::bad_input("avx512 quantize_blocks: x and y differ in shape");
  if (x.host_data() == nullptr || y.host_data() == nullptr)
    return Status::bad_input("avx512 quantize_blocks: tensors not in host memory");
  if (!blocks::dense(y)) return Status::unsupported("avx512 quantize_blocks: y " + y.describe() + " is not contiguous");
  return with_format(x.dtype, [&](auto s) {
    return blocks::with_block_format(y.dtype, [&](auto f) { return run<decltype(s), decltype(f)::value>(x, y); });
  });
}

Status quantize_supports(const Problem& problem, const DeviceRuntime& device) {
  DNNB_TRY(common_supports(problem, device, {DType::f32, DType::f16, DType::bf16}));
  auto target = ops::quantize_target(problem);
  return target ? Status::ok() : target.status();
}

DNNB_REGISTER(register_kernel("quantize_blocks", {DType::f32, DType::f16, DType::bf16}, quantize_supports, run_quantize));

}  // namespace
}  // namespace dnnb::avx512
