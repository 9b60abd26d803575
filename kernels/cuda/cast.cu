// CUDA cast: y = x.to(dtype) between f32, f16, bf16, f8_e4m3fn and f8_e5m2, every pair, bit for
// bit as core/dtype.cpp converts (docs/ops-family4.md, "cast"; docs/cuda.md, "Family 4").
//
// Conversions (the `conversion` namespace below: integer code and one exact f32 add or subtract,
// __host__ __device__, so the host can run them over every input against the core): source ->
// f32 bits (exact) -> target, one rounding, to nearest even. No cvt instruction: the fp8 ones
// (cvt.rn.satfinite.e4m3x2/e5m2x2.f32) saturate e5m2's overflow, which torch sends to Inf, and
// give NaN without its sign; the f16/bf16 ones give a canonical NaN instead of the core's quiet
// NaN with the input's sign. The integer forms cost ~15 instructions an element at most, inside
// what the copy rate leaves per element.
//  - Decode f16/e5m2/e4m3fn: the bits shifted into an f32 and the exponent rebiased; a subnormal
//    as (2^(1-B) + m 2^(1-B-M)) - 2^(1-B), exact; Inf/NaN as the core (NaN quiet, payload kept;
//    e4m3fn's S.1111.111 0x7FC00000). bf16: a 16-bit shift.
//  - Encode f16/fp8: a normal result by rebiasing the exponent and adding half an ulp less one
//    plus the lowest kept bit before the shift (round to nearest even, a carry moving into the
//    exponent); below the smallest normal |x| + 2^(1-B-M+23), an f32 whose ulp is the target's
//    quantum, so the IEEE add rounds to nearest even and the quanta are the sum's low bits. Past
//    the largest finite: f16/e5m2 Inf, e4m3fn +-448 (torch 2.15 saturates). bf16: the same
//    rounding add on the top 16 bits (its exponent range is f32's). f16 -> e5m2 rounds the f16
//    bits directly (e5m2 is f16's top byte).
//  - Same dtype: the bits copied.
// Kernels: cast_flat_kernel for contiguous, 16-byte aligned x and y: each thread converts chunks
// of E = 16 / (smaller element size) elements, one 16-byte access on the narrower side and 2 or 4
// on the wider one, two chunks' loads issued before either is stored; a grid-stride loop over
// SMs x 8 blocks. cast_rows_kernel for any other layout: a block's threads along the columns of
// its rows, element by element (padded rows coalesce; transposed ones do not). An 8-bit source
// reads its result from a 256-entry table in shared memory that each block fills first (one entry
// per thread), one load an element instead of a decode and an encode.
#include <algorithm>

#include "kernels/cuda/cuda_common.cuh"
#include "suites/ops/cast_desc.h"

namespace dnnb::cuda_kernels {
namespace {

#define DNNB_CAST_HD __host__ __device__ __forceinline__

// ---- conversion ---------------------------------------------------------------------------------
namespace conversion {

enum Format : int { kF32, kF16, kBF16, kE4M3, kE5M2 };

template <int F>
struct Storage {
  using type = uint8_t;
};
template <>
struct Storage<kF32> {
  using type = uint32_t;
};
template <>
struct Storage<kF16> {
  using type = uint16_t;
};
template <>
struct Storage<kBF16> {
  using type = uint16_t;
};

DNNB_CAST_HD float as_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, 4);
  return f;
#endif
}
DNNB_CAST_HD uint32_t as_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
#endif
}
// Round-to-nearest-even f32 add and subtract (no contraction: none could apply, stated anyway).
DNNB_CAST_HD float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
DNNB_CAST_HD float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// A narrow float (sign, E exponent bits, M mantissa bits, bias B) to f32 bits, exactly. kIeee:
// the all-ones exponent is Inf (mantissa 0) or NaN; otherwise (e4m3fn) only S.1..1.1..1 is NaN.
template <int E, int M, int B, bool kIeee>
DNNB_CAST_HD uint32_t decode_narrow(uint32_t code) {
  constexpr uint32_t kMagMask = (1u << (E + M)) - 1;
  const uint32_t sign = ((code >> (E + M)) & 1u) << 31;
  const uint32_t mag = code & kMagMask;
  const uint32_t shifted = mag << (23 - M);
  const uint32_t exponent = mag >> M;
  // Both forms computed and one selected (no branch: lanes of a warp take different ones).
  constexpr uint32_t kOne = (128u - B) << 23;  // 2^(1-B)
  const uint32_t normal = shifted + ((127u - B) << 23);
  // Zero or subnormal: m 2^(1-B-M) = (2^(1-B) + m 2^(1-B-M)) - 2^(1-B), exact.
  const uint32_t small = as_bits(sub_rn(as_float(shifted + kOne), as_float(kOne)));
  uint32_t out = exponent == 0 ? small : normal;
  if constexpr (kIeee) {  // Inf, or a NaN made quiet with its payload kept
    const uint32_t mantissa = (mag & ((1u << M) - 1)) << (23 - M);
    const uint32_t special = 0x7F800000u | mantissa | (mantissa != 0 ? 0x00400000u : 0u);
    out = exponent == (1u << E) - 1 ? special : out;
  } else {
    out = mag == kMagMask ? 0x7FC00000u : out;
  }
  return out | sign;
}

// f32 bits to a narrow float with M mantissa bits and bias B (exponent range as wide as the
// target's field allows), round to nearest even; codes past kTop (finite overflow, Inf) become
// kTop; NaN kNan; the sign at bit kSignBit.
template <int M, int B, uint32_t kTop, uint32_t kNan, int kSignBit>
DNNB_CAST_HD uint32_t encode_narrow(uint32_t bits) {
  const uint32_t a = bits & 0x7FFFFFFFu;
  constexpr uint32_t kMagic = (151u - B - M) << 23;  // 2^(1-B-M+23): its ulp is the quantum
  const uint32_t small = as_bits(add_rn(as_float(a), as_float(kMagic))) - kMagic;
  const uint32_t normal = (a - ((127u - B) << 23) + ((1u << (22 - M)) - 1) + ((a >> (23 - M)) & 1u)) >> (23 - M);
  uint32_t code = a < ((128u - B) << 23) ? small : normal;  // below the smallest normal 2^(1-B)?
  code = code < kTop ? code : kTop;
  code = a > 0x7F800000u ? kNan : code;
  return code | ((bits >> (31 - kSignBit)) & (1u << kSignBit));
}

// bf16 (f32's exponent range): the rounding add on the top 16 bits; overflow reaches 0x7F80.
DNNB_CAST_HD uint32_t encode_bf16(uint32_t bits) {
  const uint32_t a = bits & 0x7FFFFFFFu;
  const uint32_t code = a > 0x7F800000u ? 0x7FC0u : (a + 0x7FFFu + ((a >> 16) & 1u)) >> 16;
  return code | ((bits >> 16) & 0x8000u);
}

template <int F>
DNNB_CAST_HD uint32_t to_f32(uint32_t code) {
  if constexpr (F == kF32) return code;
  if constexpr (F == kF16) return decode_narrow<5, 10, 15, true>(code);
  if constexpr (F == kBF16) return code << 16;
  if constexpr (F == kE4M3) return decode_narrow<4, 3, 7, false>(code);
  if constexpr (F == kE5M2) return decode_narrow<5, 2, 15, true>(code);
  return 0;
}

template <int F>
DNNB_CAST_HD uint32_t from_f32(uint32_t bits) {
  if constexpr (F == kF32) return bits;
  if constexpr (F == kF16) return encode_narrow<10, 15, 0x7C00u, 0x7E00u, 15>(bits);
  if constexpr (F == kBF16) return encode_bf16(bits);
  if constexpr (F == kE4M3) return encode_narrow<3, 7, 0x7Eu, 0x7Fu, 7>(bits);  // saturates at 448
  if constexpr (F == kE5M2) return encode_narrow<2, 15, 0x7Cu, 0x7Fu, 7>(bits);  // overflow -> Inf
  return 0;
}

// One element: source code to target code.
template <int S, int D>
DNNB_CAST_HD uint32_t cast_code(uint32_t code) {
  if constexpr (S == D) {
    return code;
  } else if constexpr (S == kF16 && D == kE5M2) {  // the top byte of the f16, rounded to even
    const uint32_t a = code & 0x7FFFu;
    const uint32_t out = a > 0x7C00u ? 0x7Fu : (a + 0x7Fu + ((a >> 8) & 1u)) >> 8;
    return out | ((code >> 8) & 0x80u);
  } else if constexpr (S == kF16 && D != kF32) {
#ifdef __CUDA_ARCH__
    // On the device the f16 decode is the cvt.f32.f16 instruction (exact, subnormals kept; one
    // instruction on the FMA pipe where the integer form takes ~12 on the integer pipe, which
    // would bind f16 -> fp8). Its NaN is canonical, so the f16's sign is ORed back in (the
    // encoders read only a NaN's sign); an f32 target keeps the integer decode for the core's
    // NaN payload. tests/test_cast.cpp checks this path on the GPU.
    const uint32_t bits = __float_as_uint(__half2float(__ushort_as_half(static_cast<unsigned short>(code))));
    return from_f32<D>(bits | ((code & 0x8000u) << 16));
#else
    return from_f32<D>(to_f32<S>(code));
#endif
  } else {
    return from_f32<D>(to_f32<S>(code));
  }
}

}  // namespace conversion
// ---- end of conversion ----------------------------------------------------------------------

using namespace conversion;

inline constexpr int kThreads = 256;  // also the table's size: one entry per thread
inline constexpr int kBlocksPerSm = 8;

// The 256 results of an 8-bit source, in shared memory; blockDim.x must be 256.
template <int S, int D>
__device__ __forceinline__ void fill_table(uint32_t* table) {
  table[threadIdx.x] = cast_code<S, D>(threadIdx.x);
  __syncthreads();
}

template <int S, int D>
__device__ __forceinline__ uint32_t convert(uint32_t code, const uint32_t* table) {
  if constexpr (sizeof(typename Storage<S>::type) == 1 && S != D) {
    return table[code];
  } else {
    return cast_code<S, D>(code);
  }
}

// Chunks of the flat kernel: kE elements as 32-bit words (kE * size / 4 of them), element e of a
// type of `size` bytes in bits [8 size (e % (4 / size)), ...) of word e / (4 / size), little-endian
// as the memory it came from. Every index is a compile-time constant once unrolled, so the words
// stay in registers.
template <typename T>
__device__ __forceinline__ uint32_t word_element(const uint32_t* words, int e) {
  constexpr int kPer = 4 / static_cast<int>(sizeof(T));
  if constexpr (kPer == 1)
    return words[e];
  else
    return (words[e / kPer] >> (8 * static_cast<int>(sizeof(T)) * (e % kPer))) & ((1u << (8 * sizeof(T))) - 1);
}

template <int S, int D, int kE>
__device__ __forceinline__ void convert_chunk(const uint32_t* in, uint32_t* out, const uint32_t* table) {
  using TS = typename Storage<S>::type;
  using TD = typename Storage<D>::type;
  constexpr int kPer = 4 / static_cast<int>(sizeof(TD));
#pragma unroll
  for (int w = 0; w < kE / kPer; ++w) {
    uint32_t word = 0;
#pragma unroll
    for (int k = 0; k < kPer; ++k)
      word |= convert<S, D>(word_element<TS>(in, w * kPer + k), table) << (kPer == 1 ? 0 : 8 * static_cast<int>(sizeof(TD)) * k);
    out[w] = word;
  }
}

template <int S, int D>
__global__ void __launch_bounds__(kThreads)
    cast_flat_kernel(const typename Storage<S>::type* __restrict__ x, typename Storage<D>::type* __restrict__ y,
                     int64_t n) {
  using TS = typename Storage<S>::type;
  using TD = typename Storage<D>::type;
  constexpr int kE = 16 / static_cast<int>(sizeof(TS) < sizeof(TD) ? sizeof(TS) : sizeof(TD));
  constexpr int kLoads = kE * static_cast<int>(sizeof(TS)) / 16;
  constexpr int kStores = kE * static_cast<int>(sizeof(TD)) / 16;
  __shared__ uint32_t table[kThreads];
  if constexpr (sizeof(TS) == 1 && S != D) fill_table<S, D>(table);
  const int64_t chunks = n / kE;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const uint4* in = reinterpret_cast<const uint4*>(x);
  uint4* out = reinterpret_cast<uint4*>(y);
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; c < chunks; c += 2 * stride) {
    const int64_t c1 = c + stride;
    const bool second = c1 < chunks;
    uint4 a[kLoads], b[kLoads];  // both chunks' loads before any store
#pragma unroll
    for (int k = 0; k < kLoads; ++k) a[k] = in[c * kLoads + k];
    if (second) {
#pragma unroll
      for (int k = 0; k < kLoads; ++k) b[k] = in[c1 * kLoads + k];
    }
    uint4 r[kStores];
    convert_chunk<S, D, kE>(reinterpret_cast<const uint32_t*>(a), reinterpret_cast<uint32_t*>(r), table);
#pragma unroll
    for (int k = 0; k < kStores; ++k) out[c * kStores + k] = r[k];
    if (second) {
      convert_chunk<S, D, kE>(reinterpret_cast<const uint32_t*>(b), reinterpret_cast<uint32_t*>(r), table);
#pragma unroll
      for (int k = 0; k < kStores; ++k) out[c1 * kStores + k] = r[k];
    }
  }
  if (blockIdx.x == 0) {  // the n % kE elements after the last whole chunk
    for (int64_t i = chunks * kE + threadIdx.x; i < n; i += kThreads)
      y[i] = static_cast<TD>(convert<S, D>(x[i], table));
  }
}

// Start of row r of a view (RowIndex::row_offset with the loop over its at most four outer dims
// unrolled: indexing the view's arrays by a run-time dim would copy them to local memory).
__device__ __forceinline__ int64_t row_begin(const RowIndex& ri, int64_t r) {
  if (ri.outer_dims <= 1) return ri.outer_dims == 0 ? 0 : r * ri.stride[0];
  int64_t off = 0;
#pragma unroll
  for (int d = RowIndex::kMaxOuterDims - 1; d >= 0; --d)
    if (d < ri.outer_dims) {
      off += (r % ri.size[d]) * ri.stride[d];
      r /= ri.size[d];
    }
  return off;
}

template <int S, int D>
__global__ void __launch_bounds__(kThreads, 4)  // up to 64 registers: the row division then does not spill
    cast_rows_kernel(RowView<const typename Storage<S>::type> x, RowView<typename Storage<D>::type> y) {
  using TD = typename Storage<D>::type;
  __shared__ uint32_t table[kThreads];
  if constexpr (sizeof(typename Storage<S>::type) == 1 && S != D) fill_table<S, D>(table);
  const int64_t rows = y.ri.rows, cols = y.ri.cols;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const auto* xr = x.data + row_begin(x.ri, r);
    TD* yr = y.data + row_begin(y.ri, r);
    for (int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; c < cols;
         c += static_cast<int64_t>(gridDim.x) * kThreads)
      yr[c * y.ri.col_stride] = static_cast<TD>(convert<S, D>(xr[c * x.ri.col_stride], table));
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <int S, int D>
Status launch(const CudaDevice& device, const Tensor& x, const Tensor& y) {
  using TS = typename Storage<S>::type;
  using TD = typename Storage<D>::type;
  const int64_t n = y.numel();
  if (n == 0) return Status::ok();
  const TS* xp = data_ptr<const TS>(x);
  TD* yp = data_ptr<TD>(y);
  const int64_t max_blocks = static_cast<int64_t>(device.sm_count()) * kBlocksPerSm;
  if (x.is_contiguous() && y.is_contiguous() && aligned16(xp) && aligned16(yp)) {
    constexpr int64_t kE = 16 / std::min(sizeof(TS), sizeof(TD));
    const int64_t blocks = std::clamp<int64_t>(ceil_div(n / kE, 2 * kThreads), 1, max_blocks);
    cast_flat_kernel<S, D><<<static_cast<unsigned>(blocks), kThreads, 0, device.stream()>>>(xp, yp, n);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  auto xv = make_row_view<const TS>(x);
  if (!xv) return xv.status();
  auto yv = make_row_view<TD>(y);
  if (!yv) return yv.status();
  if (xv->ri.rows != yv->ri.rows || xv->ri.cols != yv->ri.cols)
    return Status::unsupported("cuda cast: x " + x.describe() + " and y " + y.describe() +
                               " do not split into the same rows");
  const int64_t col_blocks = std::min<int64_t>(ceil_div(yv->ri.cols, kThreads), max_blocks);
  const int64_t row_blocks = std::min<int64_t>({yv->ri.rows, 65535, std::max<int64_t>(1, max_blocks * 4 / col_blocks)});
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(row_blocks));
  cast_rows_kernel<S, D><<<grid, kThreads, 0, device.stream()>>>(*xv, *yv);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

Result<int> format_of(DType dtype) {
  switch (dtype) {
    case DType::f32: return kF32;
    case DType::f16: return kF16;
    case DType::bf16: return kBF16;
    case DType::f8_e4m3fn: return kE4M3;
    case DType::f8_e5m2: return kE5M2;
    default: return Status::unsupported(std::string("cuda cast: no format ") + dtype_name(dtype));
  }
}

// launch<S, D> for the runtime pair: one instantiation per pair.
template <int S>
Status launch_to(int d, const CudaDevice& device, const Tensor& x, const Tensor& y) {
  switch (d) {
    case kF32: return launch<S, kF32>(device, x, y);
    case kF16: return launch<S, kF16>(device, x, y);
    case kBF16: return launch<S, kBF16>(device, x, y);
    case kE4M3: return launch<S, kE4M3>(device, x, y);
    default: return launch<S, kE5M2>(device, x, y);
  }
}

Status run_cast(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input("cuda cast: expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  auto target = ops::cast_target(call.problem);
  if (!target) return target.status();
  DNNB_TRY(expect_tensor(x, call.problem.dtype, "x"));
  DNNB_TRY(expect_tensor(y, *target, "y"));
  if (x.shape != y.shape) return Status::bad_input("cuda cast: x " + x.describe() + " and y " + y.describe() + " differ in shape");
  auto s = format_of(x.dtype);
  if (!s) return s.status();
  auto d = format_of(y.dtype);
  if (!d) return d.status();
  switch (*s) {
    case kF32: return launch_to<kF32>(*d, **device, x, y);
    case kF16: return launch_to<kF16>(*d, **device, x, y);
    case kBF16: return launch_to<kBF16>(*d, **device, x, y);
    case kE4M3: return launch_to<kE4M3>(*d, **device, x, y);
    default: return launch_to<kE5M2>(*d, **device, x, y);
  }
}

DNNB_REGISTER(register_cuda("cast", "", "",
                            {DType::f32, DType::f16, DType::bf16, DType::f8_e4m3fn, DType::f8_e5m2}, run_cast,
                            [](const Problem& problem) {
                              auto target = ops::cast_target(problem);
                              return target ? Status::ok() : target.status();
                            }));

}  // namespace
}  // namespace dnnb::cuda_kernels
