// matmul_ggml (docs/ops-family4.md): y = x w^T with w in q8_0 or q4_0, as ggml computes it.
// Two launches on the device's stream, the second a programmatic dependent launch of the first.
//
// ggml_quantize_x: one warp per 32-value block of x (lane l holds value l), quantised as
// core's quantize_row (ggml's quantize_row_q8_0_ref): amax by a warp max, d = amax / 127 and
// id = 1 / d in IEEE f32 division (this file is not built with fast math), q = roundf(x id)
// (half away from zero) clamped to +-127 (NaN -> 0, only where id is Inf), d rounded to f16
// (__float2half_rn); a block with a NaN or an Inf gets a NaN d and q = 0. Into stream-ordered
// scratch: the 32 quants of a block in the order the matvec's B fragments take them (quants
// 4t .. 4t + 3 and 16 + 4t .. 16 + 4t + 3 as the 8 bytes at 8t), and d decoded to f32 as
// [row / 8][block][row % 8] (one 8-byte load gives a lane its two tokens), zero for the rows
// that pad M to the token tile. Every block of it lets the matvec start at once
// (griddepcontrol.launch_dependents).
//
// ggml_matvec, on the tensor cores: mma.sync m16n8k32 s8 x s8 -> s32 with A = 16 rows of w and
// B = 8 tokens of x over one 32-value block, so one mma gives the exact integer dots sumi of a
// block for 16 rows x 8 tokens (exact in s32 in any order of the 32 products). A block of 4
// warps owns 16 rows of w and 8 tokens (16 for M > 8, as two B tiles; the blocks of further
// tiles of 16 tokens come next to each other in launch order, so they read the rows' w from L2
// at about the same time); its warps take groups of 8 blocks of K in turn
// (warp i: groups i, i + 4, ...). A group is 272 (q8_0) or 144 (q4_0) bytes of a row, whole
// 16-byte chunks, so a row's groups all start at the row's offset in its 16-byte chunk: each
// warp copies a group's 16 rows with 16-byte cp.async (aligned down; the bytes read before or
// after a row lie in a 16-byte chunk holding a byte of w; w's last chunk, when it reaches past
// w's end, is copied byte by byte) into its ring of kStages groups in
// shared memory, kStages - 1 in flight while it computes one. The first kStages - 1 are issued
// before the wait for the quantiser (griddepcontrol.wait): w does not depend on it, so its
// launch and run hide under w's first loads. Rows past N repeat the last row (never stored).
// Fragments (PTX ISA, m16n8k32 .s8): lane (g, t) = (lane / 4, lane % 4) holds A's quants
// 4t .. 4t + 3 and 16 + 4t .. 16 + 4t + 3 of rows g and g + 8, each 4 bytes read from the staged
// row as two aligned 32-bit shared loads joined by a funnel shift (a block's quants start 2
// bytes in: 2-byte aligned); a row's slot is 76 (q8_0) or 44 (q4_0) words, 12 mod 32 banks, so
// the 8 rows x 4 lanes of a load hit 32 different banks. q4_0: bytes 4t .. 4t + 3 of a block hold
// codes q + 8 of quants 4t .. 4t + 3 (low nibbles) and 16 + 4t .. (high nibbles), made s8 per
// byte by (c + 0x78) ^ 0x80. B is 8 bytes of token g's quants at 8t (the quantiser's order).
// Each block then adds float(sumi) x (d_w x d_x) to its f32 sums by an FMA (d_w x d_x, a product
// of two f16 values, is exact in f32; float(sumi) is exact, |sumi| < 2^22, and taken by the
// 1.5 x 2^23 bias instead of the quarter-rate I2F). The warps' sums are added through shared
// memory in warp order (deterministic): the block terms are summed in f32 in another order
// than ggml's, within the dot_product bound over K / 32 terms.
//
// ggml_matvec_rows (kernels/cuda/matmul_ggml_rows.cu: q8_0, M <= 4, whole 8-block groups; a
// warp a row, w loaded into registers, dp4a) takes the q8_0 problems of M <= 4 it fits; x is
// then quantised in its order (rows_slot) instead of the fragment order. The ring kernel takes
// the rest.
#include <algorithm>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/gemm_mma.cuh"
#include "kernels/cuda/matmul_ggml_rows.h"
#include "suites/ops/matmul_ggml_desc.h"

namespace dnnb::cuda_kernels {
namespace {

constexpr int kWarps = 4;  // warps per block, splitting K
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 16;   // rows of w per block: the mma's M
constexpr int kTokens = 8;  // tokens per B tile: the mma's N
constexpr int kGroup = 8;   // blocks of K per warp step
constexpr int kRing = 3;    // groups in a warp's ring: kRing - 1 in flight while one is used

// A warp's stage: kGroup blocks of 16 rows, each row in a slot of whole 16-byte chunks.
template <bool kQ8>
struct Stage {
  static constexpr int kBlockBytes = kQ8 ? 34 : 18;
  static constexpr int kGroupBytes = kGroup * kBlockBytes;  // 272 / 144: whole 16-byte chunks
  static constexpr int kChunks = kGroupBytes / 16 + 1;      // cover a group at any row offset
  static constexpr int kSlot = (kChunks + 1) * 16;          // 304 / 176 bytes: 12 mod 32 words
  static constexpr int kBytes = kRows * kSlot;
  static constexpr int kPerLane = kRows * kChunks / 32;  // cp.async per lane per stage: 9 / 5
  static_assert(kGroupBytes % 16 == 0 && (kRows * kChunks) % 32 == 0 && (kSlot / 4) % 32 == 12);
};

struct QuantArgs {
  const void* x;
  int64_t x_row, x_col;  // strides in elements
  int64_t rows, rows_pad;
  int nb;
  int8_t* xq;    // rows x nb x 32, each block in fragment order (rows_order: rows_slot order)
  float* xd;     // rows_pad / 8 x nb x 8
  bool rows_order;  // for ggml_matvec_rows (kernels/cuda/matmul_ggml_rows.h)
};

// Where value l of a block is stored: quants 4t .. 4t + 3 and 16 + 4t .. 16 + 4t + 3 at 8t.
__device__ __forceinline__ int fragment_slot(int l) { return ((l & 15) >> 2) * 8 + (l >> 4) * 4 + (l & 3); }

template <typename T>
__global__ void __launch_bounds__(256) ggml_quantize_x(const QuantArgs a) {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  const int lane = threadIdx.x & 31;
  const int64_t block = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + (threadIdx.x >> 5);
  if (block >= a.rows_pad * a.nb) return;  // whole warps leave together
  const int64_t i = block / a.nb;
  const int b = static_cast<int>(block % a.nb);
  float* d_out = a.xd + ((i / kTokens) * a.nb + b) * kTokens + i % kTokens;
  if (i >= a.rows) {  // a padding token: zero scale, no quants (the matvec reads none)
    if (lane == 0) *d_out = 0.0f;
    return;
  }
  const T* src = static_cast<const T*>(a.x) + i * a.x_row + (static_cast<int64_t>(b) * 32 + lane) * a.x_col;
  const float v = to_float(*src);
  const bool finite = __all_sync(0xffffffffu, isfinite(v));
  float amax = fabsf(v);
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, s));
  int q = 0;
  float d_value = __int_as_float(0x7fc00000);  // the decoded f16 NaN of a non-finite block
  if (finite) {
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const float r = roundf(__fmul_rn(v, id));
    q = isnan(r) ? 0 : static_cast<int>(fminf(fmaxf(r, -127.0f), 127.0f));
    d_value = __half2float(__float2half_rn(d));
  }
  a.xq[block * 32 + (a.rows_order ? ggml_rows::rows_slot(lane, b) : fragment_slot(lane))] = static_cast<int8_t>(q);
  if (lane == 0) *d_out = d_value;
}

struct MatvecArgs {
  const unsigned char* w;
  int64_t w_row_bytes;
  int n, nb, m;
  const int8_t* xq;
  const float* xd;
  float* y;
  int64_t y_row;
};

// 4 staged bytes from the 8 at `word` (4-byte aligned), `shift` bits in: two shared loads and a
// funnel shift.
__device__ __forceinline__ uint32_t staged_u32(const unsigned char* stage, int word, int shift) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(stage + word);
  return __funnelshift_r(w[0], w[1], shift);
}

// Where lane t's quant bytes 4t .. 4t + 3 of block j of a staged row lie, for a row whose block
// 0 quants start at slot offset q0 (even): the aligned word at word[j % 2] + j x block bytes,
// shifted by shift[j % 2] bits. A block is 34 or 18 bytes, 2 mod 4, so the alignment flips from
// block to block; both cases are set up once, and every load is a register plus a constant.
struct QuantReader {
  int word[2], shift[2];
  __device__ __forceinline__ QuantReader(int q0, int t) {
    const int e = q0 & 2, base = q0 - e + 4 * t;
    word[0] = base;              // j even: j x block bytes = 0 mod 4
    word[1] = base - 2 + 2 * e;  // j odd: 2 mod 4 more
    shift[0] = 8 * e;
    shift[1] = 16 - 8 * e;
  }
};

// q4_0 codes c = q + 8 (4 per word, one per byte) -> the s8 quants.
__device__ __forceinline__ uint32_t q4_signed(uint32_t codes) { return (codes + 0x78787878u) ^ 0x80808080u; }

// s = the 16 x 8 integer dots of one 32-value block (PTX ISA mma.m16n8k32, .row.col, s8 x s8).
__device__ __forceinline__ void mma_block(int (&s)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %10, %10, %10};\n"
      : "=r"(s[0]), "=r"(s[1]), "=r"(s[2]), "=r"(s[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
}

template <bool kQ8, int kNT, int kStages>
__global__ void __launch_bounds__(kThreads) ggml_matvec(const MatvecArgs p) {
  using S = Stage<kQ8>;
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int token_tiles = (p.m + kTokens * kNT - 1) / (kTokens * kNT);
  const int row0 = static_cast<int>(blockIdx.x / token_tiles) * kRows;
  const int tok0 = static_cast<int>(blockIdx.x % token_tiles) * kTokens * kNT;
  const unsigned char* w_tile = p.w + static_cast<int64_t>(row0) * p.w_row_bytes;
  // One past w's last byte: a chunk reaching past it is copied byte by byte.
  const unsigned char* w_end = p.w + static_cast<int64_t>(p.n - 1) * p.w_row_bytes + p.nb * S::kBlockBytes;
  const uintptr_t tile_addr = reinterpret_cast<uintptr_t>(w_tile);
  unsigned char* ring = smem + warp * kStages * S::kBytes;
  const uint32_t ring_s = gemm::smem_addr(ring);

  // Row r's offset from w_tile (rows past N repeat the last row) and its offset in a chunk.
  auto row_offset = [&](int r) { return static_cast<int64_t>(min(row0 + r, p.n - 1) - row0) * p.w_row_bytes; };
  // This lane's chunks of a stage: chunk i = lane + 32 j is chunk c of row r (i = r kChunks + c),
  // read from w_tile + src[j] + the group's offset into slot byte dst[j]; it is read when it
  // holds a byte of the group (lim[j] < the group's bytes).
  int src[S::kPerLane], lim[S::kPerLane], dst[S::kPerLane];
#pragma unroll
  for (int j = 0; j < S::kPerLane; ++j) {
    const int i = lane + 32 * j, r = i / S::kChunks, c = i - r * S::kChunks;
    const int64_t off = row_offset(r);
    const int o = static_cast<int>((tile_addr + off) & 15);
    src[j] = static_cast<int>(off - o + 16 * c);
    lim[j] = 16 * c - o;
    dst[j] = r * S::kSlot + 16 * c;
  }
  // This lane's A rows g and g + 8: block 0 of a group at these slot offsets.
  const int blk_lo = g * S::kSlot + static_cast<int>((tile_addr + row_offset(g)) & 15);
  const int blk_hi = (g + 8) * S::kSlot + static_cast<int>((tile_addr + row_offset(g + 8)) & 15);
  const QuantReader read_lo(blk_lo + 2, t), read_hi(blk_hi + 2, t);

  const int groups = (p.nb + kGroup - 1) / kGroup;
  auto issue = [&](int q, int slot) {
    const int bytes = min(kGroup, p.nb - q * kGroup) * S::kBlockBytes;
    const unsigned char* base = w_tile + static_cast<int64_t>(q) * S::kGroupBytes;
    const uint32_t stage = ring_s + slot * S::kBytes;
#pragma unroll
    for (int j = 0; j < S::kPerLane; ++j)
      if (lim[j] < bytes) {
        const unsigned char* chunk = base + src[j];
        if (w_end - chunk >= 16) {
          gemm::cp_async_16(stage + dst[j], chunk, 16);
        } else {  // w's last chunk, short: byte by byte, the rest zero (read after the __syncwarp)
          unsigned char* to = ring + slot * S::kBytes + dst[j];
          for (int b = 0; b < 16; ++b) to[b] = b < w_end - chunk ? chunk[b] : 0;
        }
      }
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (warp + s * kWarps < groups) issue(warp + s * kWarps, s);
    gemm::cp_async_commit();
  }
  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // x's quants and scales are written

  float acc[kNT][4];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[nt][c] = 0.0f;
  // This lane's B bytes and d_x pair of block 0 (a group's block j is 32 j bytes / 8 j floats on).
  const int8_t* xq_lane[kNT];
  const float* xd_lane[kNT];
  bool tok_on[kNT];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const int tok = tok0 + nt * kTokens + g;
    tok_on[nt] = tok < p.m;
    xq_lane[nt] = p.xq + static_cast<int64_t>(min(tok, p.m - 1)) * p.nb * 32 + 8 * t;
    xd_lane[nt] = p.xd + (static_cast<int64_t>(tok0) / kTokens + nt) * p.nb * kTokens + 2 * t;
  }

  int it = 0;
  for (int q = warp; q < groups; q += kWarps, ++it) {
    const int ahead = q + (kStages - 1) * kWarps;
    if (ahead < groups) issue(ahead, (it + kStages - 1) % kStages);
    gemm::cp_async_commit();
    const int b0 = q * kGroup, count = min(kGroup, p.nb - b0);
    // B fragments and d_x of the group (L1/L2: x is small), loaded while w's stage lands. The
    // blocks past K of a last, partial group (j >= count) are computed too, without branches,
    // with zero B, d_x and d_w: they add exact zeros.
    uint2 xb[kGroup][kNT];
    float2 xd[kGroup][kNT];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const uint2* xq_group = reinterpret_cast<const uint2*>(xq_lane[nt] + b0 * 32);
      const float2* xd_group = reinterpret_cast<const float2*>(xd_lane[nt] + b0 * kTokens);
#pragma unroll
      for (int j = 0; j < kGroup; ++j) {
        xb[j][nt] = j < count && tok_on[nt] ? __ldg(xq_group + 4 * j) : make_uint2(0, 0);
        xd[j][nt] = j < count ? __ldg(xd_group + 4 * j) : make_float2(0.0f, 0.0f);
      }
    }
    gemm::cp_async_wait<kStages - 1>();
    __syncwarp();  // every lane's chunks of this stage have landed
    const unsigned char* stage = ring + (it % kStages) * S::kBytes;
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const int lo = blk_lo + j * S::kBlockBytes, hi = blk_hi + j * S::kBlockBytes;
      // Past K the staged bytes are stale: any f16 there, an Inf or NaN too, becomes 0.
      const float dw_lo = j < count ? __half2float(*reinterpret_cast<const __half*>(stage + lo)) : 0.0f;
      const float dw_hi = j < count ? __half2float(*reinterpret_cast<const __half*>(stage + hi)) : 0.0f;
      const int w_lo = read_lo.word[j & 1] + j * S::kBlockBytes, w_hi = read_hi.word[j & 1] + j * S::kBlockBytes;
      const int sh_lo = read_lo.shift[j & 1], sh_hi = read_hi.shift[j & 1];
      uint32_t a[4];
      if constexpr (kQ8) {
        a[0] = staged_u32(stage, w_lo, sh_lo);
        a[1] = staged_u32(stage, w_hi, sh_hi);
        a[2] = staged_u32(stage, w_lo + 16, sh_lo);  // quants 16 + 4t .. 16 + 4t + 3
        a[3] = staged_u32(stage, w_hi + 16, sh_hi);
      } else {
        const uint32_t c_lo = staged_u32(stage, w_lo, sh_lo), c_hi = staged_u32(stage, w_hi, sh_hi);
        a[0] = q4_signed(c_lo & 0x0f0f0f0fu);
        a[1] = q4_signed(c_hi & 0x0f0f0f0fu);
        a[2] = q4_signed((c_lo >> 4) & 0x0f0f0f0fu);
        a[3] = q4_signed((c_hi >> 4) & 0x0f0f0f0fu);
      }
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        int s[4];
        mma_block(s, a, xb[j][nt].x, xb[j][nt].y);
        // c0, c1: row g, tokens 2t, 2t + 1; c2, c3: row g + 8.
        acc[nt][0] = fmaf(exact_float(s[0]), dw_lo * xd[j][nt].x, acc[nt][0]);
        acc[nt][1] = fmaf(exact_float(s[1]), dw_lo * xd[j][nt].y, acc[nt][1]);
        acc[nt][2] = fmaf(exact_float(s[2]), dw_hi * xd[j][nt].x, acc[nt][2]);
        acc[nt][3] = fmaf(exact_float(s[3]), dw_hi * xd[j][nt].y, acc[nt][3]);
      }
    }
    __syncwarp();  // the slot is refilled next step
  }

  // The warps' sums, added in warp order through the (now idle) ring.
  gemm::cp_async_wait<0>();
  __syncthreads();
  float4* part = reinterpret_cast<float4*>(smem);
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
    part[(warp * kNT + nt) * 32 + lane] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
  __syncthreads();
  const float* parts = reinterpret_cast<const float*>(smem);
  for (int i = threadIdx.x; i < kNT * 128; i += kThreads) {
    const int nt = i / 128, l = (i / 4) % 32, c = i % 4;
    float v = 0.0f;
#pragma unroll
    for (int wi = 0; wi < kWarps; ++wi) v += parts[((wi * kNT + nt) * 32 + l) * 4 + c];
    const int row = row0 + (l >> 2) + (c >> 1) * 8, tok = tok0 + nt * kTokens + (l & 3) * 2 + (c & 1);
    if (row < p.n && tok < p.m) p.y[static_cast<int64_t>(tok) * p.y_row + row] = v;
  }
}

template <bool kQ8, int kNT, int kStages>
Status launch_matvec(const CudaDevice& device, const MatvecArgs& p) {
  const auto kernel = &ggml_matvec<kQ8, kNT, kStages>;
  constexpr int kSmem = kWarps * kStages * Stage<kQ8>::kBytes;
  static_assert(kSmem >= kWarps * kNT * 32 * 16, "the reduction reuses the ring");
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  return launch_after_quantiser(device, kernel, static_cast<unsigned>(ceil_div(p.n, kRows) * ceil_div(p.m, kTokens * kNT)),
                                kThreads, kSmem, p);
}

Status run_matmul_ggml(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto d = ops::matmul_ggml_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cuda matmul_ggml: expected inputs w, x and output y");
  const Tensor& w = call.inputs[0];
  const Tensor& x = call.inputs[1];
  const Tensor& y = call.outputs[0];
  DNNB_TRY(expect_tensor(w, d->w, "w"));
  DNNB_TRY(expect_tensor(y, DType::f32, "y"));
  if (w.shape != Shape{d->n, d->k} || x.shape != Shape{d->m, d->k} || y.shape != Shape{d->m, d->n})
    return Status::bad_input("cuda matmul_ggml: operands " + w.describe() + ", " + x.describe() + ", " + y.describe() +
                             " do not match " + call.problem.to_string());
  if (w.strides[1] != 1 || y.strides[1] != 1)
    return Status::unsupported("cuda matmul_ggml: w's or y's columns are not unit-stride");
  const int64_t w_row_bytes = static_cast<int64_t>(storage_bytes(w.dtype, w.strides[0]));
  // src offsets of a 16-row tile are int32; blocks' scales are read as 2-byte halves.
  if (d->n > INT32_MAX || d->blocks() > INT32_MAX || d->m > INT32_MAX || w_row_bytes * kRows > INT32_MAX)
    return Status::unsupported("cuda matmul_ggml: dims beyond 2^31 - 1 bytes");
  if (reinterpret_cast<uintptr_t>(data_ptr<unsigned char>(w)) % 2 != 0)
    return Status::unsupported("cuda matmul_ggml: w is not 2-byte aligned");
  const int nt = d->m <= kTokens ? 1 : 2;
  if (ceil_div(d->n, kRows) * ceil_div(d->m, kTokens * nt) > INT32_MAX)
    return Status::unsupported("cuda matmul_ggml: more than 2^31 - 1 tiles of 16 rows x 16 tokens");
  // q8_0 at M <= 4 with whole 8-block groups: ggml_matvec_rows.
  const bool q8 = d->w == DType::q8_0;
  const bool by_rows = ggml_rows::fits(q8, d->m, d->blocks(), reinterpret_cast<uintptr_t>(data_ptr<unsigned char>(w)), w_row_bytes);
  const int64_t rows_pad = round_up(d->m, kTokens * nt);
  // Scratch: quants (32 bytes a block) first, so every block's are 16-byte aligned, then d.
  auto scratch = StreamScratch::allocate(**device, static_cast<size_t>(d->m * d->blocks() * 32 + rows_pad * d->blocks() * 4));
  if (!scratch) return scratch.status();
  auto* xq = scratch->as<int8_t>();
  auto* xd = reinterpret_cast<float*>(xq + d->m * d->blocks() * 32);

  QuantArgs qa{data_ptr<unsigned char>(x), x.strides[0], x.strides[1], d->m, rows_pad, static_cast<int>(d->blocks()), xq, xd, by_rows};
  const unsigned q_grid = static_cast<unsigned>(ceil_div(rows_pad * d->blocks(), 8));
  Status quantized = dispatch_float(x.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    ggml_quantize_x<T><<<q_grid, 256, 0, (*device)->stream()>>>(qa);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  });
  if (!quantized.is_ok()) return quantized;

  MatvecArgs p{};
  p.w = data_ptr<unsigned char>(w);
  p.w_row_bytes = w_row_bytes;
  p.n = static_cast<int>(d->n);
  p.nb = static_cast<int>(d->blocks());
  p.m = static_cast<int>(d->m);
  p.xq = xq;
  p.xd = xd;
  p.y = data_ptr<float>(y);
  p.y_row = y.strides[0];
  if (by_rows) {
    const ggml_rows::Args a{p.w, p.w_row_bytes, p.n, p.nb, p.m, p.xq, p.xd, p.y, p.y_row};
    DNNB_TRY(ggml_rows::launch(**device, a));
    return scratch->release();
  }
  Status launched = nt == 1 ? (q8 ? launch_matvec<true, 1, kRing>(**device, p) : launch_matvec<false, 1, kRing>(**device, p))
                            : (q8 ? launch_matvec<true, 2, kRing>(**device, p) : launch_matvec<false, 2, kRing>(**device, p));
  if (!launched.is_ok()) return launched;
  return scratch->release();
}

DNNB_REGISTER(register_cuda("matmul_ggml", "", "", {DType::q8_0, DType::q4_0}, run_matmul_ggml));

}  // namespace
}  // namespace dnnb::cuda_kernels
