// matmul_ggml (docs/ops-family4.md): y = x w^T with w in q8_0 or q4_0, as ggml computes it.
//
// 1. Each row of x is quantised to q8_0 exactly as core's quantize_row (ggml's
//    quantize_row_q8_0_ref): per 32-value block amax, d = amax / 127 and id = 1 / d in IEEE f32,
//    q = round(x * id) with ties away from zero (truncate, then step away where the remainder is
//    at least 1/2), clamped to +-127; d stored as f16 (VCVTPS2PH, nearest even). A block with a
//    NaN or Inf gets a NaN scale, as quantize_row's. Kept per block: the 32 quants, d as f32 and
//    bias x sum(q) (below).
// 2. Each task takes kRows rows of w and unpacks them once into unsigned bytes in element order:
//    q8_0 as q + 128 (an XOR of the sign bit), q4_0 as its 4-bit codes q + 8 (nibbles split by a
//    shift and a mask, put in order by one VPERMT2Q). VPDPBUSD multiplies those unsigned bytes by
//    x's signed quants and sums 4 products per 32-bit lane; a block's integer dot is then
//    sum(u x q_x) - bias x sum(q_x) with bias 128 or 8, exact in int32.
// 3. 16 blocks at a time: eight VPDPBUSD results (two blocks each, 8 lanes a block) are reduced
//    to one vector of 16 block sums by three unpack-and-add levels (21 instructions). The lanes
//    come out in the order kLaneBlock gives, and the per-block scales and corrections are stored
//    in that order, so nothing is permuted back. Then term = float(sumi) x (d_w x d_x) (the
//    product of two f16 values, exact in f32) added by an FMA into 16 f32 lanes, one lane per
//    block of the 16; the row's 16 lanes are summed at the end. K is padded to 16 blocks with
//    zero quants and zero scales, which add exact zeros.
// At M = 1 (decode) the unpacked copy of w would be read once: there each thread takes its rows
// one at a time straight from w's bytes (the same unsigned codes and lane-ordered scales in
// registers, so the same sums in the same order: bit-exact with the unpacking path), a single
// read stream with a software prefetch ahead of it. Unpacking rows first leaves DRAM idle while
// the unpacked rows are multiplied, which on a many-core Xeon (a core's share of the bandwidth
// needing its stream busy all the time) held the kernel near 40% of copy.
#include <array>
#include <cmath>

#include "devices/cpu/cpu_features.h"
#include "kernels/avx512/avx512_common.h"
#include "suites/ops/matmul_ggml_desc.h"

namespace dnnb::avx512 {
namespace {

// DNNB_AVX512's instruction sets and VNNI (VPDPBUSD), for the one function that uses it.
#define DNNB_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c,avx512vnni")))

constexpr int kRows = 4;         // rows of w per task
constexpr int64_t kChunk = 16;   // blocks per reduction step
// Lane L of the reduced vector holds block kLaneBlock[L] of its 16 (see step 3).
constexpr int kLaneBlock[16] = {0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};

// Bytes from one row of x's quants, or of the unpacked rows of w, to the next: nbp x 32 and a
// line more. With K a multiple of 4096 (nbp x 32 = K) the rows would sit a multiple of 4 KiB
// apart, so a chunk of every x row and every unpacked row would fall in the same L1 sets (4 KiB
// per way): the 8 rows of x and 4 of w at M = 8 and K = 4096 fill the 12 ways and evict each
// other.
inline int64_t row_stride(int64_t nbp) { return nbp * 32 + 64; }

// x quantised: per row, nbp (blocks padded to kChunk) blocks of 32 quants, and per block d (f32)
// and bias x sum(q) in lane order.
struct QuantX {
  int64_t nbp = 0;
  std::vector<int8_t> q;      // rows x row_stride(nbp) bytes
  std::vector<float> d;       // rows x nbp, lane order
  std::vector<int32_t> corr;  // rows x nbp, lane order
};

// Position of block b in the lane-ordered per-block arrays.
inline int64_t lane_slot(int64_t b) {
  static const auto inverse = [] {
    std::array<int, 16> inv{};
    for (int l = 0; l < 16; ++l) inv[kLaneBlock[l]] = l;
    return inv;
  }();
  return b / kChunk * kChunk + inverse[b % kChunk];
}

// round(s) with ties away from zero (C's roundf), for |s| of any size, Inf kept.
DNNB_AVX512_INLINE __m512 round_away(__m512 s) {
  const __m512 t = _mm512_roundscale_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 rem = _mm512_abs_ps(_mm512_sub_ps(s, t));
  const __mmask16 up = _mm512_cmp_ps_mask(rem, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 one = _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_and_ps(s, _mm512_set1_ps(-0.0f)));
  return _mm512_mask_add_ps(t, up, t, one);
}

// One block of 32 f32 values -> 32 quants at q, returns d's f16 bits; sum_q the quants' sum.
DNNB_AVX512 uint16_t quantize_block(const float* v, int8_t* q, int32_t& sum_q) {
  const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
  constexpr int kNonFinite = 0x01 | 0x08 | 0x10 | 0x80;  // QNaN, +Inf, -Inf, SNaN
  if ((_mm512_fpclass_ps_mask(v0, kNonFinite) | _mm512_fpclass_ps_mask(v1, kNonFinite)) != 0) {
    std::memset(q, 0, 32);
    sum_q = 0;
    return 0x7E00;  // quantize_row's NaN block
  }
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  __m512i qi[2];
  const __m512 vs[2] = {v0, v1};
  for (int h = 0; h < 2; ++h) {
    const __m512 s = _mm512_mul_ps(vs[h], _mm512_set1_ps(id));
    __m512 r = _mm512_min_ps(_mm512_max_ps(round_away(s), lo), hi);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(s, s, _CMP_UNORD_Q), _mm512_setzero_ps());  // 0 x Inf
    qi[h] = _mm512_cvtps_epi32(r);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 * h), _mm512_cvtepi32_epi8(qi[h]));
  }
  sum_q = _mm512_reduce_add_epi32(_mm512_add_epi32(qi[0], qi[1]));
  return f32_to_f16(d);
}

// Row i of x (any float dtype, any strides) as f32 values, then its blocks.
template <class Fmt>
DNNB_AVX512 void quantize_x_row(const Tensor& x, int64_t i, int64_t K, int32_t bias, QuantX& out, float* row) {
  using T = typename Fmt::storage;
  const T* src = static_cast<const T*>(x.host_data()) + i * x.strides[0];
  const int64_t cs = x.strides[1];
  if (cs == 1) {
    for (int64_t k = 0; k < K; k += 16) _mm512_storeu_ps(row + k, Fmt::load(src + k));
  } else {
    for (int64_t k = 0; k < K; ++k) row[k] = Fmt::to_float(src[k * cs]);
  }
  int8_t* q = out.q.data() + i * row_stride(out.nbp);
  for (int64_t b = 0; b < K / 32; ++b) {
    int32_t sum_q = 0;
    const uint16_t dh = quantize_block(row + b * 32, q + b * 32, sum_q);
    out.d[i * out.nbp + lane_slot(b)] = f16_to_f32(dh);
    out.corr[i * out.nbp + lane_slot(b)] = bias * sum_q;
  }
}

// kRows rows of w unpacked: unsigned codes in element order, d in lane order; padded with zeros.
struct UnpackedW {
  std::vector<uint8_t> u;  // kRows x row_stride(nbp) bytes
  std::vector<float> d;    // kRows x nbp
};

DNNB_AVX512 void unpack_w_row(DType dtype, const uint8_t* row, int64_t nb, int64_t nbp, uint8_t* u, float* d) {
  const int64_t bytes = block_bytes(dtype);
  const __m512i lanes = _mm512_setr_epi32(kLaneBlock[0], kLaneBlock[1], kLaneBlock[2], kLaneBlock[3], kLaneBlock[4],
                                          kLaneBlock[5], kLaneBlock[6], kLaneBlock[7], kLaneBlock[8], kLaneBlock[9],
                                          kLaneBlock[10], kLaneBlock[11], kLaneBlock[12], kLaneBlock[13],
                                          kLaneBlock[14], kLaneBlock[15]);
  // One pass in address order (the hardware prefetchers follow it): each block's quants, and its
  // f16 d into a 16-entry array that VCVTPH2PS and one permute put in lane order per 16 blocks.
  for (int64_t c = 0; c < nbp; c += kChunk) {
    alignas(32) uint16_t dh[kChunk] = {};
    const int64_t end = std::min(nb, c + kChunk);
    for (int64_t b = c; b < end; ++b) {
      const uint8_t* block = row + b * bytes;
      std::memcpy(&dh[b - c], block, 2);
      if (dtype == DType::q8_0) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + b * 32), _mm256_xor_si256(q, _mm256_set1_epi8(-128)));
      } else {
        // Byte j holds element j (low nibble) and element j + 16 (high nibble).
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
        const __m128i mask = _mm_set1_epi8(0x0F);
        const __m128i low = _mm_and_si128(packed, mask), high = _mm_and_si128(_mm_srli_epi16(packed, 4), mask);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + b * 32), _mm256_set_m128i(high, low));
      }
    }
    const __m512 scales = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(dh)));
    _mm512_storeu_ps(d + c, _mm512_permutexvar_ps(lanes, scales));
  }
  std::memset(u + nb * 32, 0, static_cast<size_t>((nbp - nb) * 32));
}

// Blocks [c, c + 16) of one row of w (all inside the row) as unpack_w_row leaves them, in
// registers: eight vectors of two blocks' unsigned codes, and the 16 scales in lane order.
template <bool kQ8>
DNNB_AVX512_INLINE void load_w_chunk(const uint8_t* blocks, __m512i (&u)[8], __m512& d, const __m512i lanes) {
  constexpr int64_t kBytes = kQ8 ? 34 : 18;
  alignas(32) uint16_t dh[kChunk];
  for (int p = 0; p < 8; ++p) {
    __m256i half[2];
    for (int h = 0; h < 2; ++h) {
      const uint8_t* block = blocks + (2 * p + h) * kBytes;
      std::memcpy(&dh[2 * p + h], block, 2);
      if constexpr (kQ8) {
        half[h] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2)), _mm256_set1_epi8(-128));
      } else {
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
        const __m128i mask = _mm_set1_epi8(0x0F);
        half[h] = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask), _mm_and_si128(packed, mask));
      }
    }
    u[p] = _mm512_inserti64x4(_mm512_castsi256_si512(half[0]), half[1], 1);
  }
  d = _mm512_permutexvar_ps(lanes, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(dh))));
}

// The 16 block sums of eight VPDPBUSD results (two blocks each), in kLaneBlock order.
DNNB_AVX512_INLINE __m512i reduce_blocks(const __m512i (&v)[8]) {
  __m512i s[4];
  for (int p = 0; p < 4; ++p)
    s[p] = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * p], v[2 * p + 1]), _mm512_unpackhi_epi32(v[2 * p], v[2 * p + 1]));
  const __m512i t0 = _mm512_add_epi32(_mm512_unpacklo_epi64(s[0], s[1]), _mm512_unpackhi_epi64(s[0], s[1]));
  const __m512i t1 = _mm512_add_epi32(_mm512_unpacklo_epi64(s[2], s[3]), _mm512_unpackhi_epi64(s[2], s[3]));
  return _mm512_add_epi32(_mm512_shuffle_i32x4(t0, t1, _MM_SHUFFLE(2, 0, 2, 0)),
                          _mm512_shuffle_i32x4(t0, t1, _MM_SHUFFLE(3, 1, 3, 1)));
}

// y[i, j0 + r] for r < rows: x row i against the unpacked rows (zeros past `rows`).
DNNB_AVX512_VNNI void dot_rows(const QuantX& xq, int64_t i, const UnpackedW& w, int rows, float* y) {
  const int64_t nbp = xq.nbp;
  const int8_t* xrow = xq.q.data() + i * row_stride(nbp);
  const float* xd = xq.d.data() + i * nbp;
  const int32_t* xc = xq.corr.data() + i * nbp;
  __m512 acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t c = 0; c < nbp; c += kChunk) {
    __m512i xv[8];
    for (int p = 0; p < 8; ++p) xv[p] = _mm512_loadu_si512(xrow + (c + 2 * p) * 32);
    const __m512i corr = _mm512_loadu_si512(xc + c);
    const __m512 dx = _mm512_loadu_ps(xd + c);
    for (int r = 0; r < kRows; ++r) {  // rows past `rows` are zeros: a fixed count keeps acc in registers
      const uint8_t* u = w.u.data() + r * row_stride(nbp) + c * 32;
      __m512i dot[8];
      for (int p = 0; p < 8; ++p)
        dot[p] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(u + p * 64), xv[p]);
      const __m512i sumi = _mm512_sub_epi32(reduce_blocks(dot), corr);
      const __m512 dd = _mm512_mul_ps(_mm512_loadu_ps(w.d.data() + r * nbp + c), dx);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), dd, acc[r]);
    }
  }
  for (int r = 0; r < rows; ++r) y[r] = _mm512_reduce_add_ps(acc[r]);
}

// *y = x's row 0 times one row of w, read from w's bytes (M = 1; see the top). Prefetches
// `ahead` bytes ahead of the read (0: none), into L2 as NextRow does. The last partial chunk of
// 16 blocks goes through unpack_w_row, which pads it with zeros.
template <bool kQ8>
DNNB_AVX512_VNNI void dot_row_direct(const QuantX& xq, const uint8_t* row, int64_t nb, int64_t ahead, float* y) {
  constexpr int64_t kBytes = kQ8 ? 34 : 18;
  const __m512i lanes = _mm512_setr_epi32(kLaneBlock[0], kLaneBlock[1], kLaneBlock[2], kLaneBlock[3], kLaneBlock[4],
                                          kLaneBlock[5], kLaneBlock[6], kLaneBlock[7], kLaneBlock[8], kLaneBlock[9],
                                          kLaneBlock[10], kLaneBlock[11], kLaneBlock[12], kLaneBlock[13],
                                          kLaneBlock[14], kLaneBlock[15]);
  const int8_t* xrow = xq.q.data();
  __m512 acc = _mm512_setzero_ps();
  const int64_t full = nb / kChunk * kChunk;
  for (int64_t c = 0; c < nb; c += kChunk) {
    __m512i xv[8];
    for (int p = 0; p < 8; ++p) xv[p] = _mm512_loadu_si512(xrow + (c + 2 * p) * 32);
    const __m512i corr = _mm512_loadu_si512(xq.corr.data() + c);
    const __m512 dx = _mm512_loadu_ps(xq.d.data() + c);
    const uint8_t* blocks = row + c * kBytes;
    __m512i u[8];
    __m512 dw;
    if (c < full) {
      if (ahead > 0)
        for (int64_t off = 0; off < kChunk * kBytes; off += 64)
          _mm_prefetch(reinterpret_cast<const char*>(blocks + ahead + off), _MM_HINT_T1);
      load_w_chunk<kQ8>(blocks, u, dw, lanes);
    } else {
      alignas(64) uint8_t tail[kChunk * 32];
      alignas(64) float tail_d[kChunk];
      unpack_w_row(kQ8 ? DType::q8_0 : DType::q4_0, blocks, nb - full, kChunk, tail, tail_d);
      for (int p = 0; p < 8; ++p) u[p] = _mm512_load_si512(tail + p * 64);
      dw = _mm512_load_ps(tail_d);
    }
    __m512i dot[8];
    for (int p = 0; p < 8; ++p) dot[p] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[p], xv[p]);
    const __m512i sumi = _mm512_sub_epi32(reduce_blocks(dot), corr);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(dw, dx), acc);
  }
  *y = _mm512_reduce_add_ps(acc);
}

Status run_matmul_ggml(OpCall& call) {
  auto d = ops::matmul_ggml_desc(call.problem);
  if (!d) return d.status();
  const Tensor& w = call.inputs.at(0);
  const Tensor& x = call.inputs.at(1);
  Tensor& y = call.outputs.at(0);
  const auto* wp = static_cast<const uint8_t*>(w.host_data());
  auto* yp = static_cast<float*>(y.host_data());
  if (wp == nullptr || yp == nullptr || x.host_data() == nullptr)
    return Status::bad_input("avx512 matmul_ggml: a tensor is not in host memory");
  if (w.strides[1] != 1 || y.strides[1] != 1)
    return Status::unsupported("avx512 matmul_ggml: w's or y's columns are not unit-stride");
  const int64_t M = d->m, N = d->n, K = d->k, nb = d->blocks();
  const int32_t bias = d->w == DType::q8_0 ? 128 : 8;
  QuantX xq;
  xq.nbp = (nb + kChunk - 1) / kChunk * kChunk;
  xq.q.assign(static_cast<size_t>(M * row_stride(xq.nbp)), 0);
  xq.d.assign(static_cast<size_t>(M * xq.nbp), 0.0f);
  xq.corr.assign(static_cast<size_t>(M * xq.nbp), 0);
  Status fmt = with_format(x.dtype, [&](auto f) {
    using F = decltype(f);
    parallel_tasks(M, M * K, [&](int64_t i) {
      std::vector<float> row(static_cast<size_t>(K));
      quantize_x_row<F>(x, i, K, bias, xq, row.data());
    });
    return Status::ok();
  });
  if (!fmt.is_ok()) return fmt;

  const size_t row_bytes = storage_bytes(w.dtype, w.strides[0]);
  const int64_t ys = y.strides[0];
  if (M == 1) {
    // 1 KiB ahead: the hardware streamer restarts at every 4 KiB page (as the reductions',
    // kDefaultPrefetchAhead16bit); DNNB_AVX512_PREFETCH=0 turns it off.
    const int64_t ahead = prefetch_level == 0 ? 0 : 1024;
    const bool q8 = d->w == DType::q8_0;
    const auto rb = static_cast<int64_t>(row_bytes);
    parallel_tasks((N + kRows - 1) / kRows, N * K / 4, [&](int64_t task) {
      for (int64_t j = task * kRows; j < std::min<int64_t>(N, (task + 1) * kRows); ++j) {
        float* yj = yp + j;
        const uint8_t* row = wp + j * rb;
        q8 ? dot_row_direct<true>(xq, row, nb, ahead, yj) : dot_row_direct<false>(xq, row, nb, ahead, yj);
      }
    });
    return Status::ok();
  }
  parallel_tasks((N + kRows - 1) / kRows, N * K * std::max<int64_t>(M, 1) / 4, [&](int64_t task) {
    const int64_t j0 = task * kRows;
    const int rows = static_cast<int>(std::min<int64_t>(kRows, N - j0));
    // One buffer per thread, reused by its tasks (kRows x K bytes: it stays in L1/L2).
    thread_local UnpackedW u;
    u.u.resize(static_cast<size_t>(kRows * row_stride(xq.nbp)));
    u.d.resize(static_cast<size_t>(kRows * xq.nbp));
    for (int r = 0; r < kRows; ++r) {
      uint8_t* ur = u.u.data() + r * row_stride(xq.nbp);
      float* dr = u.d.data() + r * xq.nbp;
      if (r < rows) {
        unpack_w_row(w.dtype, wp + (j0 + r) * row_bytes, nb, xq.nbp, ur, dr);
      } else {
        std::memset(ur, 0, static_cast<size_t>(xq.nbp * 32));
        std::fill(dr, dr + xq.nbp, 0.0f);
      }
    }
    float out[kRows];
    for (int64_t i = 0; i < M; ++i) {
      dot_rows(xq, i, u, rows, out);
      for (int r = 0; r < rows; ++r) yp[i * ys + j0 + r] = out[r];
    }
  });
  return Status::ok();
}

Status matmul_ggml_supports(const Problem& p, const DeviceRuntime&) {
  auto d = ops::matmul_ggml_desc(p);
  if (!d) return d.status();
  if (!cpu_features().avx512_vnni_usable()) return Status::skipped("cpu lacks avx512_vnni (VPDPBUSD)");
  return Status::ok();
}

// The products run on VPDPBUSD: the ceiling is i8_vnni's (matmul_i8's unit), not f32_fma's.
DNNB_REGISTER(register_kernel("matmul_ggml", {DType::q8_0, DType::q4_0}, matmul_ggml_supports, run_matmul_ggml, "", "",
                              [](const Problem&, const DeviceRuntime&) { return std::string("i8_vnni"); }));

}  // namespace
}  // namespace dnnb::avx512
