// matmul_ggml's "split" matvec (DNNB_CUDA_GGML_VARIANT=split; docs/ops-family4.md): the ring
// kernel's warp program (a 3-deep cp.async ring of 16-row x 8-block groups a warp, the same
// mma.sync m16n8k32 s8 dots, scales and FMA sums) on a grid that is one wave with equal work
// for every warp. Included by matmul_ggml.cu inside its namespace, after the ring kernel's
// helpers (Stage, QuantReader, staged_u32, q4_signed, mma_block, exact_float, MatvecArgs).
//
// For M <= 16 (one token tile of 8 or 16 tokens) and rows of w that are whole 16-byte chunks at
// 16-byte aligned addresses with K / 32 a multiple of 8 (the caller checks): the work is the
// U = T x G units (16-row tile, group of 8 blocks of K) of the T tiles and G groups a row, in
// tile-major order, and warp w of the W warps of the grid (every resident warp slot of the
// device, at most U) owns the contiguous units [w U / W, (w + 1) U / W), so no warp has more
// than one unit above the mean and no SM waits for a partial last wave. A warp streams its units
// through its ring in order, from one tile into the next. Every group is 272 (q8_0) or 144
// (q4_0) bytes of a row starting 16-byte aligned: 17 / 9 whole chunks a row, copied at slot
// offset 0 with no bounds tests (rows past N repeat the last row, never stored).
//
// At the end of a tile, or of its range, a warp that holds the whole tile stores its 16 x 8
// (or x 16) sums to y. A tile split between warps wa .. wb (the owners of its first and last
// unit) is reduced through scratch: each of them writes its fragment sums to its slot
// (0 for the warp's first tile, 1 for its last), fences, and counts itself in the tile's
// counter (zeroed by the quantiser, which runs wholly before griddepcontrol.wait returns);
// the warp that brings the count to wb - wa + 1 fences and adds the slots in warp order
// (deterministic, in L2: __ldcg) and stores y. No warp waits for another.
//
// q8_0 fragments without funnel shifts: a group's block j starts at byte 34 j of its slot, so
// its quants start 4-byte aligned when j is odd (A takes words t and 4 + t of them, the natural
// order) and at 2 mod 4 when j is even. For even j the aligned words V0 .. V8 at 34 j hold
// (d, q0, q1), q2 .. q29 in V1 .. V7 and (q30, q31, ..) in V8: lane t takes V(1 + t) as quants
// 2 + 4t .. 5 + 4t and V(5 + t) as 18 + 4t .. 21 + 4t, and lane 3, whose V(5 + t) is V8, makes
// (q0, q1, q30, q31) of V0 and V8 by a byte permute; d is V0's low half. The quantiser stores an
// even block of x in that order (split_slot in matmul_ggml.cu), so the mma's k order agrees for
// A and B and the integer dot is the same. q4_0 takes the ring kernel's reads (QuantReader).
//
// kOne (M = 1): only token 0 is stored, so the FMAs of the odd tokens (c1, c3) are left out.
#pragma once

template <bool kQ8>
struct SplitStage {
  static constexpr int kBlockBytes = kQ8 ? 34 : 18;
  static constexpr int kGroupBytes = kGroup * kBlockBytes;  // 272 / 144
  static constexpr int kChunks = kGroupBytes / 16;          // 17 / 9 chunks a row, none partial
  static constexpr int kSlot = Stage<kQ8>::kSlot;           // 304 / 176: room for the last over-read
  static constexpr int kBytes = kRows * kSlot;
  static constexpr int kCopies = kRows * kChunks;        // 272 / 144 chunks a stage
  static constexpr int kPerLane = (kCopies + 31) / 32;  // 9 / 5: the last for lanes < 16 only
  static_assert(kGroupBytes % 16 == 0 && kCopies % 32 == 16 && kGroupBytes + 4 <= kSlot);
};

struct SplitArgs {
  MatvecArgs mv;
  int64_t units;    // T x G
  int warps;        // W
  float4* part;     // [W][2][kNT][32]: a warp's sums of its first (0) and last (1) tile
  unsigned* count;  // [T]: warps done with a split tile
};

// An aligned 32-bit word of a stage.
__device__ __forceinline__ uint32_t staged_word(const unsigned char* stage, int byte) {
  return *reinterpret_cast<const uint32_t*>(stage + byte);
}

// The first unit of warp w, and the warp owning unit u: the w with start(w) <= u < start(w + 1).
__device__ __forceinline__ int64_t split_start(int64_t w, const SplitArgs& a) { return w * a.units / a.warps; }
__device__ __forceinline__ int split_owner(int64_t u, const SplitArgs& a) {
  return static_cast<int>(((u + 1) * a.warps - 1) / a.units);
}

// At least 3 blocks an SM (q8_0: what its 58 KB of rings allow) or 4 (q4_0): a register cap
// of 170 / 128 a thread, under which nothing spills.
template <bool kQ8, int kNT, bool kOne>
__global__ void __launch_bounds__(kThreads, kQ8 ? 3 : 4) ggml_matvec_split(const SplitArgs a) {
  using S = SplitStage<kQ8>;
  constexpr int kStages = kRing;
  extern __shared__ __align__(16) unsigned char smem[];
  const MatvecArgs& p = a.mv;
  const int lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
  const int warp = static_cast<int>(blockIdx.x) * kWarps + wib;
  if (warp >= a.warps) return;  // whole warps; no block-wide barrier follows
  const int g = lane >> 2, t = lane & 3;
  const int groups = p.nb / kGroup;
  const int64_t u_begin = split_start(warp, a);
  const int n_units = static_cast<int>(split_start(warp + 1, a) - u_begin);
  unsigned char* ring = smem + wib * kStages * S::kBytes;
  const uint32_t ring_s = gemm::smem_addr(ring);

  // Copies: chunk i = lane + 32 j of a stage is chunk c of row r (i = r kChunks + c), read from
  // the issue group's row 0 + src[j] into ring slot 0's byte dst[j]. Both are kept in registers
  // (an empty asm hides how they were computed, so they are not recomputed from the lane index
  // at every issue): a copy is then two adds and the cp.async.
  uint32_t src[S::kPerLane], dst[S::kPerLane];
#pragma unroll
  for (int j = 0; j < S::kPerLane; ++j) {
    const int i = lane + 32 * j, r = min(i / S::kChunks, kRows - 1), c = i - (i / S::kChunks) * S::kChunks;
    dst[j] = ring_s + static_cast<uint32_t>(r * S::kSlot + 16 * c);
    asm volatile("" : "+r"(dst[j]));
  }
  int i_tile = static_cast<int>(u_begin / groups), i_grp = static_cast<int>(u_begin % groups), i_slot = 0;
  const unsigned char* i_ptr = nullptr;  // the next group's row 0
  auto set_tile = [&](int tile) {        // rows past N repeat the last row (offsets >= 0)
    const int row0 = tile * kRows;
    i_ptr = p.w + static_cast<int64_t>(row0) * p.w_row_bytes + static_cast<int64_t>(i_grp) * S::kGroupBytes;
#pragma unroll
    for (int j = 0; j < S::kPerLane; ++j) {
      const int i = lane + 32 * j, r = min(i / S::kChunks, kRows - 1), c = i - (i / S::kChunks) * S::kChunks;
      src[j] = static_cast<uint32_t>((min(row0 + r, p.n - 1) - row0) * static_cast<int>(p.w_row_bytes) + 16 * c);
      asm volatile("" : "+r"(src[j]));
    }
  };
  auto issue = [&]() {  // the next unit in order, into the next slot
    const uint32_t stage = static_cast<uint32_t>(i_slot * S::kBytes);
#pragma unroll
    for (int j = 0; j < S::kPerLane; ++j)
      if (j < S::kPerLane - 1 || lane + 32 * j < S::kCopies) gemm::cp_async_16(dst[j] + stage, i_ptr + src[j], 16);
    i_slot = i_slot == kStages - 1 ? 0 : i_slot + 1;
    i_ptr += S::kGroupBytes;
    if (++i_grp == groups) {
      i_grp = 0;
      set_tile(++i_tile);
    }
  };
  set_tile(i_tile);
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_units) issue();
    gemm::cp_async_commit();
  }
  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // x's quants, scales and the counters are written

  // This lane's A rows g and g + 8: block 0 of a group at these slot offsets (rows start at 0).
  const int blk_lo = g * S::kSlot, blk_hi = (g + 8) * S::kSlot;
  const QuantReader read_lo(blk_lo + 2, t), read_hi(blk_hi + 2, t);  // q4_0
  const uint32_t even_sel = t == 3 ? 0x5432u : 0x7654u;                // q8_0, even blocks: see split_slot
  float acc[kNT][4];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[nt][c] = 0.0f;
  const int8_t* xq_lane[kNT];
  const float* xd_lane[kNT];
  bool tok_on[kNT];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const int tok = nt * kTokens + g;
    tok_on[nt] = tok < p.m;
    xq_lane[nt] = p.xq + static_cast<int64_t>(min(tok, p.m - 1)) * p.nb * 32 + 8 * t;
    xd_lane[nt] = p.xd + static_cast<int64_t>(nt) * p.nb * kTokens + 2 * t;
  }

  // The tile's sums: to y when this warp holds the whole tile, else through its slot.
  const int first_tile = static_cast<int>(u_begin / groups);
  auto finish = [&](int tile, bool whole) {
    const int row0 = tile * kRows;
    if (!whole) {
      float4* mine = a.part + (static_cast<int64_t>(warp) * 2 + (tile == first_tile ? 0 : 1)) * kNT * 32;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) mine[nt * 32 + lane] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
      const int64_t u0 = static_cast<int64_t>(tile) * groups;
      const int wa = split_owner(u0, a), wb = split_owner(u0 + groups - 1, a);
      // Release: the lanes' stores are ordered before lane 0's fence by the warp barrier, and
      // the fence before its count. Acquire: the last warp's lane 0 fences after its count,
      // and the warp barrier orders that before every lane's loads.
      __syncwarp();
      unsigned arrived = 0;
      if (lane == 0) {
        asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
        arrived = atomicAdd(a.count + tile, 1u);
        if (arrived == static_cast<unsigned>(wb - wa)) asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
      }
      arrived = __shfl_sync(0xffffffffu, arrived, 0);
      __syncwarp();
      if (arrived != static_cast<unsigned>(wb - wa)) return;  // a later warp adds the slots
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[nt][c] = 0.0f;
      for (int w = wa; w <= wb; ++w) {
        const int slot = tile == static_cast<int>(split_start(w, a) / groups) ? 0 : 1;
        const float4* theirs = a.part + (static_cast<int64_t>(w) * 2 + slot) * kNT * 32;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const float4 v = __ldcg(theirs + nt * 32 + lane);
          acc[nt][0] += v.x;
          acc[nt][1] += v.y;
          acc[nt][2] += v.z;
          acc[nt][3] += v.w;
        }
      }
    }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) {  // c0, c1: row g, tokens 2t, 2t + 1; c2, c3: row g + 8
        const int row = row0 + g + (c >> 1) * 8, tok = nt * kTokens + 2 * t + (c & 1);
        if (row < p.n && tok < p.m) p.y[static_cast<int64_t>(tok) * p.y_row + row] = acc[nt][c];
      }
  };

  int c_tile = first_tile, c_grp = static_cast<int>(u_begin % groups), c_slot = 0;
  bool from_start = c_grp == 0;  // this warp holds the current tile's first group
  for (int it = 0; it < n_units; ++it) {
    if (it + kStages - 1 < n_units) issue();
    gemm::cp_async_commit();
    const int b0 = c_grp * kGroup;
    // B fragments and d_x of the group (L1/L2: x is small), loaded while w's stage lands.
    uint2 xb[kGroup][kNT];
    float2 xd[kGroup][kNT];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const uint2* xq_group = reinterpret_cast<const uint2*>(xq_lane[nt] + b0 * 32);
      const float* xd_group = xd_lane[nt] + b0 * kTokens;
#pragma unroll
      for (int j = 0; j < kGroup; ++j) {
        xb[j][nt] = tok_on[nt] ? __ldg(xq_group + 4 * j) : make_uint2(0, 0);
        if constexpr (kOne)
          xd[j][nt] = make_float2(__ldg(xd_group + kTokens * j), 0.0f);
        else
          xd[j][nt] = __ldg(reinterpret_cast<const float2*>(xd_group + kTokens * j));
      }
    }
    gemm::cp_async_wait<kStages - 1>();
    __syncwarp();  // every lane's chunks of this stage have landed
    const unsigned char* stage = ring + c_slot * S::kBytes;
    c_slot = c_slot == kStages - 1 ? 0 : c_slot + 1;
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const int lo = blk_lo + j * S::kBlockBytes, hi = blk_hi + j * S::kBlockBytes;
      float dw_lo, dw_hi;
      uint32_t a4[4];
      if constexpr (kQ8) {
        if (j & 1) {  // quants at lo + 2, 4-byte aligned: natural order, words t and 4 + t
          dw_lo = __half2float(*reinterpret_cast<const __half*>(stage + lo));
          dw_hi = __half2float(*reinterpret_cast<const __half*>(stage + hi));
          a4[0] = staged_word(stage, lo + 2 + 4 * t);
          a4[1] = staged_word(stage, hi + 2 + 4 * t);
          a4[2] = staged_word(stage, lo + 18 + 4 * t);
          a4[3] = staged_word(stage, hi + 18 + 4 * t);
        } else {  // words V0 .. V8 at lo: V0 = d, q0, q1; V1 .. V7 = q2 .. q29; V8 = q30, q31, ...
          const uint32_t v0_lo = staged_word(stage, lo), v0_hi = staged_word(stage, hi);
          dw_lo = __half2float(__ushort_as_half(static_cast<unsigned short>(v0_lo & 0xffffu)));
          dw_hi = __half2float(__ushort_as_half(static_cast<unsigned short>(v0_hi & 0xffffu)));
          a4[0] = staged_word(stage, lo + 4 + 4 * t);  // V(1 + t)
          a4[1] = staged_word(stage, hi + 4 + 4 * t);
          a4[2] = __byte_perm(v0_lo, staged_word(stage, lo + 20 + 4 * t), even_sel);  // V(5 + t) / q0 q1 q30 q31
          a4[3] = __byte_perm(v0_hi, staged_word(stage, hi + 20 + 4 * t), even_sel);
        }
      } else {
        dw_lo = __half2float(*reinterpret_cast<const __half*>(stage + lo));
        dw_hi = __half2float(*reinterpret_cast<const __half*>(stage + hi));
        const int w_lo = read_lo.word[j & 1] + j * S::kBlockBytes, w_hi = read_hi.word[j & 1] + j * S::kBlockBytes;
        const int sh_lo = read_lo.shift[j & 1], sh_hi = read_hi.shift[j & 1];
        const uint32_t c_lo = staged_u32(stage, w_lo, sh_lo), c_hi = staged_u32(stage, w_hi, sh_hi);
        a4[0] = q4_signed(c_lo & 0x0f0f0f0fu);
        a4[1] = q4_signed(c_hi & 0x0f0f0f0fu);
        a4[2] = q4_signed((c_lo >> 4) & 0x0f0f0f0fu);
        a4[3] = q4_signed((c_hi >> 4) & 0x0f0f0f0fu);
      }
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        int s[4];
        mma_block(s, a4, xb[j][nt].x, xb[j][nt].y);
        acc[nt][0] = fmaf(exact_float(s[0]), dw_lo * xd[j][nt].x, acc[nt][0]);
        acc[nt][2] = fmaf(exact_float(s[2]), dw_hi * xd[j][nt].x, acc[nt][2]);
        if constexpr (!kOne) {
          acc[nt][1] = fmaf(exact_float(s[1]), dw_lo * xd[j][nt].y, acc[nt][1]);
          acc[nt][3] = fmaf(exact_float(s[3]), dw_hi * xd[j][nt].y, acc[nt][3]);
        }
      }
    }
    __syncwarp();  // the slot is refilled next step
    if (++c_grp == groups || it + 1 == n_units) {
      finish(c_tile, from_start && c_grp == groups);
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[nt][c] = 0.0f;
      ++c_tile;
      c_grp = 0;
      from_start = true;
    }
  }
  gemm::cp_async_wait<0>();
}

// The split kernel for (q8, token tiles, M = 1) and its shared memory.
struct SplitKernel {
  void (*fn)(SplitArgs);
  int smem;
};
inline SplitKernel split_kernel(bool q8, int nt, bool one) {
  constexpr int kQ8Smem = kWarps * kRing * SplitStage<true>::kBytes, kQ4Smem = kWarps * kRing * SplitStage<false>::kBytes;
  if (q8) {
    if (nt == 2) return {&ggml_matvec_split<true, 2, false>, kQ8Smem};
    return {one ? &ggml_matvec_split<true, 1, true> : &ggml_matvec_split<true, 1, false>, kQ8Smem};
  }
  if (nt == 2) return {&ggml_matvec_split<false, 2, false>, kQ4Smem};
  return {one ? &ggml_matvec_split<false, 1, true> : &ggml_matvec_split<false, 1, false>, kQ4Smem};
}

// Warps of the split grid: every resident warp slot of the device (blocks an SM by the
// occupancy calculator, with the largest shared-memory carveout), at most one a unit.
inline Result<int> split_warps(const CudaDevice& device, const SplitKernel& k, int64_t units) {
  DNNB_CUDA_TRY(cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, k.smem));
  DNNB_CUDA_TRY(cudaFuncSetAttribute(k.fn, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  int per_sm = 0;
  DNNB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.fn, kThreads, k.smem));
  if (per_sm < 1) return Status::unsupported("cuda matmul_ggml: the split matvec does not fit an SM");
  return static_cast<int>(std::min<int64_t>(units, static_cast<int64_t>(per_sm) * device.sm_count() * kWarps));
}

inline Status launch_matvec_split(const CudaDevice& device, const SplitKernel& k, const SplitArgs& a) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(ceil_div(a.warps, kWarps)));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = k.smem;
  config.stream = device.stream();
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  DNNB_CUDA_TRY(cudaLaunchKernelEx(&config, k.fn, a));
  return Status::ok();
}
