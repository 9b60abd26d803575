// matmul_i8 (torch._int_mm): y i32 = a i8 @ b i8 on VPDPBUSD (AVX512_VNNI), through the 8-bit
// product engine (matmul_q8.h: a and b packed once through their strides, 8 x 32 register tiles
// over the whole K).
//
// VPDPBUSD multiplies unsigned bytes by signed bytes, four per 32-bit lane. a is packed as
// a + 128 (each byte XOR 0x80: 0..255, exact), so the tile sums (a + 128) b, and the finish
// subtracts 128 x (column sum of b). Both the lane sums and the correction wrap modulo 2^32
// (VPDPBUSD is the non-saturating form): the true result fits int32 (K <= 131071, the spec's
// bound), so the wrapped arithmetic gives it exactly, even where (a + 128) b alone would not fit.
// Padding: K steps past K are zero in b, so a's padding bytes add nothing.
//
// Where the CPU has AMX-INT8 and the OS grants the tile state (cpu_features().amx_int8_usable;
// DNNB_AVX512_AMX=0 turns it off, as for the bf16 GEMM), the product runs on TDPBSSD instead
// (matmul_q8.h, multiply_amx): s8 x s8 in 32 x 32 blocks of four s32 tiles, no offset needed.
#include <cstdlib>
#include <cstring>

#include "devices/cpu/cpu_features.h"
#include "kernels/avx512/matmul_q8.h"
#include "kernels/avx512/gemm.h"
#include "suites/ops/matmul_q_desc.h"

namespace dnnb::avx512 {
namespace {

const bool has_amx_i8 = [] {
  const char* env = std::getenv("DNNB_AVX512_AMX");
  const bool allowed = env == nullptr || std::strcmp(env, "0") != 0;
  return allowed && cpu_features().amx_int8_usable();
}();

// The hardware's tile instructions (devices/cpu/amx_tiles.h) and TDPBSSD.
struct HwTiles {
  static void load_config(const amx::TileConfig& config) { amx::load_config(config); }
  static void release() { amx::release(); }
  template <int T>
  static void zero() { amx::zero<T>(); }
  template <int T>
  static void load(const void* base, int64_t stride) { amx::load<T>(base, stride); }
  template <int T>
  static void store(void* base, int64_t stride) { amx::store<T>(base, stride); }
  // Tile C (s32) += tile A (rows of 4 s8) times tile B (word rows x columns of 4 s8). AT&T order B, A, C.
  template <int C, int A, int B>
  static void dpbssd() {
    asm volatile("tdpbssd %%tmm%c0, %%tmm%c1, %%tmm%c2" : : "i"(B), "i"(A), "i"(C));
  }
};

struct Vnni {
  using Acc = __m512i;
  DNNB_AVX512_Q8 static inline __attribute__((always_inline)) __m512i zero() { return _mm512_setzero_si512(); }
  DNNB_AVX512_Q8 static inline __attribute__((always_inline)) __m512i dot(__m512i acc, __m512i a_u8, __m512i b_s8) {
    return _mm512_dpbusd_epi32(acc, a_u8, b_s8);
  }
};

Status matmul_i8_supports(const Problem& p, const DeviceRuntime& device) {
  DNNB_TRY(common_supports(p, device, {DType::i8}));
  if (!cpu_features().avx512_vnni_usable()) return Status::skipped("avx512 matmul_i8: the CPU has no AVX512_VNNI");
  auto d = ops::matmul_i8_desc(p);
  return d ? Status::ok() : d.status();
}

Status run_matmul_i8(OpCall& call) {
  auto d = ops::matmul_i8_desc(call.problem);
  if (!d) return d.status();
  const MatrixView a = matrix_view(call.inputs.at(0)), b = matrix_view(call.inputs.at(1));
  Tensor& y = call.outputs.at(0);
  if (y.strides.back() != 1) return Status::unsupported("avx512 matmul_i8: y's columns are not unit-stride");
  const MatrixView yv = matrix_view(y);
  const auto* pa = static_cast<const uint8_t*>(a.data);
  const auto* pb = static_cast<const int8_t*>(b.data);
  const int64_t k = d->k, words = (k + 3) / 4;
  auto word_a = [&](int64_t i, int64_t w) {
    uint32_t word = 0;
    for (int64_t s = 0; s < 4 && 4 * w + s < k; ++s)
      word |= static_cast<uint32_t>(pa[i * a.row_stride + (4 * w + s) * a.col_stride] ^ 0x80u) << (8 * s);
    return word;
  };
  auto word_b = [&](int64_t w, int64_t j) {
    uint32_t word = 0;
    for (int64_t s = 0; s < 4 && 4 * w + s < k; ++s)
      word |= static_cast<uint32_t>(static_cast<uint8_t>(pb[(4 * w + s) * b.row_stride + j * b.col_stride])) << (8 * s);
    return word;
  };
  auto* out = static_cast<int32_t*>(y.host_data());
  if (has_amx_i8) {
    auto word_a_s8 = [&](int64_t i, int64_t w) { return word_a(i, w) ^ 0x80808080u; };
    const q8::Packed packed = q8::pack(d->m, d->n, words, word_a_s8, word_b, q8::kAmxRows, q8::kAmxWords);
    q8::multiply_amx<HwTiles>(packed, [&](int64_t i, int64_t j0, const int32_t* sums, int64_t cols) {
      std::memcpy(out + i * yv.row_stride + j0, sums, static_cast<size_t>(cols) * sizeof(int32_t));
    });
    return Status::ok();
  }
  const q8::Packed packed = q8::pack(d->m, d->n, words, word_a, word_b);
  // 128 x the column sums of b, modulo 2^32: VPDPBUSD of all-ones bytes with b's packed words.
  std::vector<int32_t> correction(static_cast<size_t>(packed.panels * q8::kQ8NR), 0);
  parallel_tasks(packed.panels, d->n * k, [&](int64_t q) DNNB_AVX512_Q8 {
    const uint32_t* panel = packed.b.data() + q * packed.words * q8::kQ8NR;
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
    for (int64_t w = 0; w < packed.words; ++w) {
      s0 = _mm512_dpbusd_epi32(s0, ones, _mm512_loadu_si512(panel + w * q8::kQ8NR));
      s1 = _mm512_dpbusd_epi32(s1, ones, _mm512_loadu_si512(panel + w * q8::kQ8NR + 16));
    }
    _mm512_storeu_si512(correction.data() + q * q8::kQ8NR, _mm512_slli_epi32(s0, 7));
    _mm512_storeu_si512(correction.data() + q * q8::kQ8NR + 16, _mm512_slli_epi32(s1, 7));
  });
  q8::multiply<Vnni>(packed, [&](int64_t i, int64_t j0, __m512i acc, __mmask16 m) DNNB_AVX512_Q8 {
    const __m512i c = _mm512_loadu_si512(correction.data() + j0);
    _mm512_mask_storeu_epi32(out + i * yv.row_stride + j0, m, _mm512_sub_epi32(acc, c));
  });
  return Status::ok();
}

DNNB_REGISTER(register_kernel("matmul_i8", {DType::i8}, matmul_i8_supports, run_matmul_i8, "", "",
                              [](const Problem&, const DeviceRuntime&) { return std::string(has_amx_i8 ? "i8_amx" : "i8_vnni"); }));

}  // namespace
}  // namespace dnnb::avx512
