#include "suites/ops/blocks_desc.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace dnnb::ops {
namespace {

constexpr int64_t kBlock = 32;

// Significant bits of a float source (the "just below a power of two" edge).
int significant_bits(DType dtype) { return dtype == DType::f16 ? 11 : dtype == DType::bf16 ? 8 : 24; }

double largest_finite(DType dtype) {
  switch (dtype) {
    case DType::f16: return 65504.0;
    case DType::bf16: return std::ldexp(255.0, 120);  // 0x7F7F
    default: return std::numeric_limits<float>::max();
  }
}

// One edge block (kind 0..15), 32 values before rounding to the source dtype.
void edge_block(int kind, DType src, Rng& rng, double* v) {
  const int pos = static_cast<int>(rng.next() % kBlock);
  const int pos2 = (pos + 1 + static_cast<int>(rng.next() % (kBlock - 1))) % kBlock;
  for (int j = 0; j < kBlock; ++j) v[j] = rng.normal();
  switch (kind) {
    case 0: std::fill(v, v + kBlock, 0.0); break;  // all zeros
    case 1:                                         // one huge value among small ones
      for (int j = 0; j < kBlock; ++j) v[j] = std::ldexp(v[j], -10);
      v[pos] = pos % 2 ? -1000.0 : 1000.0;
      break;
    case 2:  // amax exactly a power of two
      for (int j = 0; j < kBlock; ++j) v[j] *= 0.5;
      v[pos] = 8.0;
      break;
    case 3:  // amax the source's largest value below a power of two
      for (int j = 0; j < kBlock; ++j) v[j] *= 0.5;
      v[pos] = -(8.0 - std::ldexp(8.0, -significant_bits(src)));
      break;
    case 4:  // every magnitude in [1.9375, 2) x 4: scaled values round up past the element's largest
      for (int j = 0; j < kBlock; ++j) v[j] = std::copysign(4.0 * (2.0 - std::ldexp(rng.uniform(), -4)), v[j]);
      break;
    case 5:  // amax 1, the rest 2^-6 .. 2^-30: subnormal (and vanishing) elements
      for (int j = 0; j < kBlock; ++j) v[j] = std::copysign(std::ldexp(1.0 + rng.uniform(), -6 - static_cast<int>(rng.next() % 25)), v[j]);
      v[pos] = 1.0;
      break;
    case 6:  // subnormals of the source dtype
      for (int j = 0; j < kBlock; ++j) v[j] = std::ldexp(v[j], src == DType::f16 ? -20 : src == DType::bf16 ? -130 : -140);
      break;
    case 7:  // q8_0 ties: d = 127 / 127 = 1, the rest half-integers (roundf: away from zero)
      for (int j = 0; j < kBlock; ++j) v[j] = static_cast<double>(static_cast<int>(rng.next() % 253) - 126) + 0.5;
      v[pos] = 127.0;
      break;
    case 8:  // q4_0 ties: max = -8 gives d = 1, the rest half-integers in [-7.5, 7.5]
      for (int j = 0; j < kBlock; ++j) v[j] = static_cast<double>(static_cast<int>(rng.next() % 16) - 8) + 0.5;
      v[pos] = -8.0;
      break;
    case 9:  // two values of the largest magnitude, opposite signs (q4_0 takes the first)
      for (int j = 0; j < kBlock; ++j) v[j] = std::clamp(v[j], -4.0, 4.0);
      v[std::min(pos, pos2)] = -5.0;
      v[std::max(pos, pos2)] = 5.0;
      break;
    case 10: v[pos] = std::numeric_limits<double>::quiet_NaN(); break;
    case 11: v[pos] = HUGE_VAL; break;
    case 12: v[pos] = -HUGE_VAL; break;
    case 13: std::fill(v, v + kBlock, 0.3); break;  // a constant block
    case 14:  // magnitudes 2^-30 .. 2^30 in one block
      for (int j = 0; j < kBlock; ++j) v[j] = std::ldexp(v[j], static_cast<int>(rng.next() % 61) - 30);
      break;
    default:  // the source's largest finite value (q8_0's f16 d overflows to Inf)
      v[pos] = largest_finite(src);
      break;
  }
}

}  // namespace

const std::vector<DType>& block_formats() {
  static const std::vector<DType> formats = {DType::q8_0, DType::q4_0, DType::mxfp8, DType::mxfp4, DType::mxfp8_e5m2};
  return formats;
}

Result<DType> quantize_target(const Problem& problem) {
  if (!problem.has("y.dt")) return DType::q8_0;
  auto dtype = parse_dtype(problem.get("y.dt"));
  const auto& all = block_formats();
  if (!dtype || std::find(all.begin(), all.end(), *dtype) == all.end())
    return Status::bad_input(problem.op + ": y.dt=" + problem.get("y.dt") +
                             " is not one of q8_0, q4_0, mxfp8, mxfp4, mxfp8_e5m2");
  return *dtype;
}

Result<DType> dequantize_target(const Problem& problem) {
  if (!problem.has("y.dt")) return DType::f32;
  auto dtype = parse_dtype(problem.get("y.dt"));
  if (!dtype || (*dtype != DType::f32 && *dtype != DType::f16 && *dtype != DType::bf16))
    return Status::bad_input(problem.op + ": y.dt=" + problem.get("y.dt") + " is not one of f32, f16, bf16");
  return *dtype;
}

Status check_block_shape(const Problem& problem) {
  if (problem.shape.empty() || problem.shape.back() % kBlock != 0)
    return Status::bad_input(problem.op + ": shape " + shape_to_string(problem.shape) +
                             ": the last dim must be a multiple of 32 (rows of whole 32-value blocks)");
  return Status::ok();
}

Status fill_quantize_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng) {
  if (inputs.size() != 1) return Status::bad_input(problem.op + ": one input (x) expected");
  Tensor& x = inputs[0];
  void* data = x.host_data();
  const int64_t blocks = x.numel() / kBlock;
  // f16 keeps its normals below 2^16: the sweep stays inside it.
  const int lo = x.dtype == DType::f16 ? -14 : -24, hi = x.dtype == DType::f16 ? 10 : 24;
  double v[kBlock];
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t slot = b % 512;
    if (slot < 16) {
      edge_block(static_cast<int>(slot), x.dtype, rng, v);
    } else {
      const int k = lo + static_cast<int>(b % (hi - lo + 1));
      for (int j = 0; j < kBlock; ++j) v[j] = std::ldexp(rng.normal(), k);
    }
    for (int j = 0; j < kBlock; ++j) store_element(data, x.dtype, b * kBlock + j, v[j]);
  }
  return Status::ok();
}

Status fill_dequantize_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng) {
  if (inputs.size() != 1) return Status::bad_input(problem.op + ": one input (x) expected");
  Tensor& x = inputs[0];
  auto* bytes = static_cast<uint8_t*>(x.host_data());
  const int64_t blocks = x.numel() / kBlock;
  const size_t size = static_cast<size_t>(block_bytes(x.dtype));
  float v[kBlock];
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* block = bytes + b * size;
    if (b % 4 == 0) {
      const int k = static_cast<int>(b / 4 % 41) - 20;
      for (int j = 0; j < kBlock; ++j) v[j] = static_cast<float>(std::ldexp(rng.normal(), k));
      DNNB_TRY(quantize_row(x.dtype, v, kBlock, block));
    } else {
      for (size_t i = 0; i < size; ++i) block[i] = static_cast<uint8_t>(rng.next() >> 56);
    }
  }
  return Status::ok();
}

}  // namespace dnnb::ops
