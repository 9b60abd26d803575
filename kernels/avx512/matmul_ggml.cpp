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
// At M <= 8 (decode) the unpacked copy of w would be read once: there each thread reads w's
// blocks straight into registers (the same unsigned codes and lane-ordered scales, so the same
// sums in the same order: bit-exact with the unpacking path) and applies each chunk of w to
// every row of x (from M = 2, through transpose_blocks: no per-row reduction). A task is a
// group of rows of w, walked in K segments (every row of the group over one segment, then the
// next), so x's segment stays in L1 while the group's pieces of w stream past it; a software
// prefetch runs a fixed distance ahead in that read order, across pieces and on into the
// thread's next task, because the hardware prefetchers lose a stream that jumps between rows
// (and, past K ~ 11264 with one row at a time, one whose L1 also holds all of x).
#include <array>
#include <cmath>
#include <atomic>
#include <cstdlib>
#include <functional>

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

// reduce_blocks without its adds: eight vectors whose lane-wise sum is reduce_blocks(v), each
// lane L holding one 4-byte group of block kLaneBlock[L] (24 shuffles). Applied alike to a chunk
// of w and of x, VPDPBUSD still pairs the same bytes, and a chain of eight VPDPBUSD over the
// outputs gives the 16 block dots with no reduction after it: for M rows of x against one chunk
// of w the shuffles are paid once for w (x is transposed once, when quantised) instead of
// 21 instructions per row.
DNNB_AVX512_INLINE void transpose_blocks(__m512i (&v)[8]) {
  __m512i a[4], b[4];  // level 1: unpacklo / unpackhi of 32-bit lanes over pairs
  for (int p = 0; p < 4; ++p) {
    a[p] = _mm512_unpacklo_epi32(v[2 * p], v[2 * p + 1]);
    b[p] = _mm512_unpackhi_epi32(v[2 * p], v[2 * p + 1]);
  }
  const __m512i* lv[2] = {a, b};
  for (int h = 0; h < 2; ++h) {
    const __m512i* x = lv[h];
    const __m512i lo0 = _mm512_unpacklo_epi64(x[0], x[1]), hi0 = _mm512_unpackhi_epi64(x[0], x[1]);
    const __m512i lo1 = _mm512_unpacklo_epi64(x[2], x[3]), hi1 = _mm512_unpackhi_epi64(x[2], x[3]);
    v[4 * h + 0] = _mm512_shuffle_i32x4(lo0, lo1, _MM_SHUFFLE(2, 0, 2, 0));
    v[4 * h + 1] = _mm512_shuffle_i32x4(lo0, lo1, _MM_SHUFFLE(3, 1, 3, 1));
    v[4 * h + 2] = _mm512_shuffle_i32x4(hi0, hi1, _MM_SHUFFLE(2, 0, 2, 0));
    v[4 * h + 3] = _mm512_shuffle_i32x4(hi0, hi1, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

// x's quants of rows [0, M) in transpose_blocks order, chunk by chunk, in place.
DNNB_AVX512 void transpose_x(QuantX& xq, int64_t M) {
  for (int64_t i = 0; i < M; ++i) {
    int8_t* row = xq.q.data() + i * row_stride(xq.nbp);
    for (int64_t c = 0; c < xq.nbp; c += kChunk) {
      __m512i v[8];
      for (int p = 0; p < 8; ++p) v[p] = _mm512_loadu_si512(row + (c + 2 * p) * 32);
      transpose_blocks(v);
      for (int p = 0; p < 8; ++p) _mm512_storeu_si512(row + (c + 2 * p) * 32, v[p]);
    }
  }
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

// One task's read order of w in run_direct: segment by segment, within a segment row by row,
// piece q = (segment q / rows, row q % rows), each piece blocks [s x seg, (s + 1) x seg) of a row.
struct ReadOrder {
  const uint8_t* first;  // the task's first row
  int64_t rb, rows, nb, seg, nseg, bytes;  // row bytes, rows, blocks a row, blocks a segment, segments, block bytes
  int64_t pieces() const { return rows * nseg; }
  const uint8_t* start(int64_t q) const { return first + q % rows * rb + q / rows * seg * bytes; }
  int64_t blocks(int64_t q) const { return std::min(nb, (q / rows + 1) * seg) - q / rows * seg; }
};

// Software prefetch (into L2, as NextRow's) a fixed distance ahead of the read, in read order:
// across the pieces' ends, so that interleaved rows are fetched as one stream would be, and on
// into the thread's next task (a static schedule gives each thread consecutive tasks), so the
// stream does not restart, with a burst of `ahead` bytes, at every task.
struct Prefetcher {
  const std::function<ReadOrder(int64_t)>* order_of = nullptr;
  int64_t tasks = 0, task = -1;  // task of the next byte to prefetch
  ReadOrder order{};
  int64_t q = 0;                 // piece of the next byte to prefetch
  const uint8_t* p = nullptr;    // that byte, nullptr past the last task
  int64_t left = 0;              // bytes left in piece q from p
  int64_t call = -1, next_task = -1;  // the run_direct call and the task this thread reads next
  void start(const std::function<ReadOrder(int64_t)>& f, int64_t n, int64_t t, int64_t ahead) {
    order_of = &f;
    tasks = n;
    p = nullptr;
    if (ahead <= 0) return;
    enter(t);
    run(ahead);  // the first `ahead` bytes at once, then as much as is read
  }
  void enter(int64_t t) {
    task = t;
    order = (*order_of)(t);
    q = 0;
    p = order.start(0);
    left = order.blocks(0) * order.bytes;
  }
  void run(int64_t n) {
    while (n > 0 && p != nullptr) {
      const int64_t m = std::min(n, left);
      for (int64_t off = 0; off < m; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T1);
      p += m;
      left -= m;
      n -= m;
      if (left == 0) {
        if (++q < order.pieces()) {
          p = order.start(q);
          left = order.blocks(q) * order.bytes;
        } else if (task + 1 < tasks) {
          enter(task + 1);
        } else {
          p = nullptr;
        }
      }
    }
  }
};


// acc[i] += rows i0 .. i0 + MR of x times blocks [c0, c1) of one row of w, read from w's bytes
// (M <= kDirectRows; see the top). Each x row's 16 lanes take the chunks in order, as dot_rows'
// do, so any split of K into pieces gives the same sums. The last partial chunk of 16 blocks
// goes through unpack_w_row, which pads it with zeros.
template <bool kQ8, int MR, bool kT>
DNNB_AVX512_VNNI void dot_piece_direct(const QuantX& xq, const ReadOrder& order, int64_t q, Prefetcher& pf,
                                       float* acc_io) {
  constexpr int64_t kBytes = kQ8 ? 34 : 18;
  const __m512i lanes = _mm512_setr_epi32(kLaneBlock[0], kLaneBlock[1], kLaneBlock[2], kLaneBlock[3], kLaneBlock[4],
                                          kLaneBlock[5], kLaneBlock[6], kLaneBlock[7], kLaneBlock[8], kLaneBlock[9],
                                          kLaneBlock[10], kLaneBlock[11], kLaneBlock[12], kLaneBlock[13],
                                          kLaneBlock[14], kLaneBlock[15]);
  const int64_t stride = row_stride(xq.nbp), nb = order.nb;
  const int8_t* xrow = xq.q.data();
  const float* xd = xq.d.data();
  const int32_t* xc = xq.corr.data();
  __m512 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_loadu_ps(acc_io + 16 * i);
  const int64_t full = nb / kChunk * kChunk;
  const int64_t c0 = q / order.rows * order.seg, c1 = c0 + order.blocks(q);
  const uint8_t* row = order.first + q % order.rows * order.rb;
  for (int64_t c = c0; c < c1; c += kChunk) {
    const uint8_t* blocks = row + c * kBytes;
    pf.run(std::min(kChunk, c1 - c) * kBytes);
    __m512i u[8];
    __m512 dw;
    if (c < full) {
      load_w_chunk<kQ8>(blocks, u, dw, lanes);
    } else {
      alignas(64) uint8_t tail[kChunk * 32];
      alignas(64) float tail_d[kChunk];
      unpack_w_row(kQ8 ? DType::q8_0 : DType::q4_0, blocks, nb - full, kChunk, tail, tail_d);
      for (int p = 0; p < 8; ++p) u[p] = _mm512_load_si512(tail + p * 64);
      dw = _mm512_load_ps(tail_d);
    }
    if constexpr (kT) transpose_blocks(u);
    for (int i = 0; i < MR; ++i) {
      const int8_t* xi = xrow + i * stride + c * 32;
      __m512i blocks_dot;
      if constexpr (kT) {
        blocks_dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[0], _mm512_loadu_si512(xi));
        for (int p = 1; p < 8; ++p) blocks_dot = _mm512_dpbusd_epi32(blocks_dot, u[p], _mm512_loadu_si512(xi + p * 64));
      } else {
        __m512i dot[8];
        for (int p = 0; p < 8; ++p) dot[p] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[p], _mm512_loadu_si512(xi + p * 64));
        blocks_dot = reduce_blocks(dot);
      }
      const __m512i sumi = _mm512_sub_epi32(blocks_dot, _mm512_loadu_si512(xc + i * xq.nbp + c));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(dw, _mm512_loadu_ps(xd + i * xq.nbp + c)), acc[i]);
    }
  }
  for (int i = 0; i < MR; ++i) _mm512_storeu_ps(acc_io + 16 * i, acc[i]);
}

// The 16 lanes' sum, as _mm512_reduce_add_ps of the accumulator.
DNNB_AVX512 float sum_lanes(const float* v) { return _mm512_reduce_add_ps(_mm512_loadu_ps(v)); }

constexpr int kDirectRows = 8;  // M up to this reads w straight from its bytes
// The direct path's read order (docs/ops-family4.md, measured on the 16-core host): prefetch
// this far ahead in the read order, rows of w a task, bytes of x's segment kept in L1, and the
// M from which x is transposed.
constexpr int64_t kAheadBytes = 16384, kGroupRows = 8, kXSegmentBytes = 16384, kTransposeFromM = 2;

// M <= kDirectRows: each task takes `group` rows of w and walks K in segments (whole chunks):
// every row of the group over segment 0, then every row over segment 1, ... so the segment of
// x's quants, scales and corrections (MR x 40 bytes a block) is read group times while only
// the group's pieces of w stream past it, instead of a whole row of w between two reads of it.
template <bool kQ8, int MR, bool kT>
void run_direct(const QuantX& xq, const uint8_t* wp, int64_t rb, int64_t N, int64_t nb, float* yp, int64_t ys,
                int64_t ahead, int64_t group, int64_t seg_chunks) {
  const int64_t chunks = (nb + kChunk - 1) / kChunk;
  const int64_t nseg = seg_chunks > 0 ? (chunks + seg_chunks - 1) / seg_chunks : 1;
  const int64_t seg = (chunks + nseg - 1) / nseg * kChunk;  // blocks per segment
  const int64_t tasks = (N + group - 1) / group;
  const std::function<ReadOrder(int64_t)> order_of = [&](int64_t task) {
    const int64_t j0 = task * group;
    return ReadOrder{wp + j0 * rb, rb, std::min(N, j0 + group) - j0, nb, seg, nseg, kQ8 ? 34 : 18};
  };
  static std::atomic<int64_t> calls{0};
  const int64_t call = calls++;
  parallel_tasks(tasks, N * nb * 32 * MR / 4, [&](int64_t task) {
    const int64_t j0 = task * group, j1 = std::min(N, j0 + group);
    // 16 f32 lanes per (row of w, row of x): a stack array up to 16 rows of w a group.
    alignas(64) float acc[kDirectRows * 16 * 16];
    std::vector<float> big;
    float* accs = acc;
    if ((j1 - j0) * MR > kDirectRows * 16) {
      big.resize(static_cast<size_t>((j1 - j0) * MR * 16));
      accs = big.data();
    }
    std::fill(accs, accs + (j1 - j0) * MR * 16, 0.0f);
    const ReadOrder order = order_of(task);
    thread_local Prefetcher pf;
    if (pf.call != call || pf.next_task != task) pf.start(order_of, tasks, task, ahead);
    pf.call = call;
    pf.next_task = task + 1;
    for (int64_t q = 0; q < order.pieces(); ++q)
      dot_piece_direct<kQ8, MR, kT>(xq, order, q, pf, accs + q % order.rows * MR * 16);
    for (int64_t j = j0; j < j1; ++j)
      for (int i = 0; i < MR; ++i) yp[i * ys + j] = sum_lanes(accs + ((j - j0) * MR + i) * 16);
  });
}

template <bool kQ8, bool kT>
void run_direct_m(int64_t M, const QuantX& xq, const uint8_t* wp, int64_t rb, int64_t N, int64_t nb, float* yp,
                  int64_t ys, int64_t ahead, int64_t group, int64_t seg_chunks) {
  switch (M) {
    case 1: return run_direct<kQ8, 1, kT>(xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
    case 2: return run_direct<kQ8, 2, kT>(xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
    case 3: return run_direct<kQ8, 3, kT>(xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
    case 4: return run_direct<kQ8, 4, kT>(xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
    case 5: return run_direct<kQ8, 5, kT>(xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
    case 6: return run_direct<kQ8, 6, kT>(xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
    case 7: return run_direct<kQ8, 7, kT>(xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
    default: return run_direct<kQ8, 8, kT>(xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
  }
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
  if (M <= kDirectRows) {
    // The software prefetch runs kAheadBytes ahead in the read order (the hardware streamer
    // loses a stream that jumps between rows); DNNB_AVX512_PREFETCH=0 turns it off.
    const int64_t group = kGroupRows;
    // Chunks of 16 blocks per K segment: x's segment (M x 40 bytes a block) within kXSegmentBytes.
    const int64_t seg_chunks = std::max<int64_t>(1, kXSegmentBytes / (M * kChunk * 40));
    const int64_t ahead = prefetch_level == 0 ? 0 : kAheadBytes;
    const auto rb = static_cast<int64_t>(row_bytes);
    // x transposed (transpose_blocks) from this many rows on.
    const bool t = M >= kTransposeFromM;
    if (t) transpose_x(xq, M);
    const bool q8 = d->w == DType::q8_0;
    if (q8 && t) run_direct_m<true, true>(M, xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
    else if (q8) run_direct_m<true, false>(M, xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
    else if (t) run_direct_m<false, true>(M, xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
    else run_direct_m<false, false>(M, xq, wp, rb, N, nb, yp, ys, ahead, group, seg_chunks);
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
