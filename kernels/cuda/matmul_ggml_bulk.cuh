// matmul_ggml's "bulk" matvec (DNNB_CUDA_GGML_VARIANT=bulk; docs/ops-family4.md): the same
// integer dots, scales and sums as ggml_matvec in matmul_ggml.cu (mma.sync m16n8k32 s8 per
// 32-value block, float(sumi) x (d_w x d_x) by an FMA), with w staged by the bulk-copy engine
// and the grid one wave. Included by matmul_ggml.cu inside its namespace, after the fragment
// helpers it uses (QuantReader, staged_u32, q4_signed, mma_block, exact_float, MatvecArgs).
//
// For M <= 16 (one token tile of 8 or 16 tokens) and rows of w whose bytes are whole 16-byte
// chunks at a 16-byte aligned address (K / 32 a multiple of 8; the caller checks): the grid is
// one block an SM (at most one per 16-row tile), and block c owns the tiles
// [c T / G, (c + 1) T / G) of the T 16-row tiles, so no SM has more than one tile above the
// mean. A block's stream is its tiles' stages in order, a stage being 16 rows x kBlocks blocks
// of K (1088 bytes a row for q8_0, 1152 for q4_0, fewer at the end of a row: still whole
// 16-byte chunks, since K / 32 is a multiple of 8). A producer warp fills a ring of kBulkStages
// stages: per stage, lane 0 arms the stage's "full" mbarrier with the stage's bytes and lanes
// 0 .. 15 each copy one row (rows past N repeat the last row, never stored) with one
// cp.async.bulk into the row's slot; it refills a stage once the stage's "empty" mbarrier says
// every compute warp is done with it. The kBulkWarps compute warps take the blocks of a stage
// in turn (warp i: blocks i, i + kBulkWarps, ...; kBlocks is a multiple of 8 so every warp has
// the same count), each loading its B fragments and d_x from x's scratch before it waits for
// the stage, then one mma per block. A row's slot is 1104 or 1168 bytes (4 mod 8 words) so the
// 8 rows x 4 lanes of a fragment load hit 32 different banks; a row starts 16-byte aligned, so
// block j's quants start at byte 34 j + 2 (q8_0) / 18 j + 2 (q4_0): the parity of j, and with
// it the funnel shift, is the warp's own (kBulkWarps is even). At the end of each tile the
// warps' sums go through shared memory (two buffers, by tile parity, so one barrier a tile
// suffices) and are added in warp order (deterministic), then stored.
// matmul_ggml.cu includes bulk_copy.cuh (mbarriers and cp.async.bulk) at file scope.
#pragma once

constexpr int kBulkWarps = 8;   // compute warps a block
constexpr int kBulkStages = 8;  // stages in the ring
constexpr int kBulkThreads = (kBulkWarps + 1) * 32;

template <bool kQ8>
struct BulkStage {
  static constexpr int kBlockBytes = kQ8 ? 34 : 18;
  static constexpr int kBlocks = kQ8 ? 32 : 64;              // blocks of K a stage
  static constexpr int kRowBytes = kBlocks * kBlockBytes;    // 1088 / 1152
  static constexpr int kSlot = kRowBytes + 16;               // room for the last fragment's over-read
  static constexpr int kBytes = kRows * kSlot;
  static constexpr int kPerWarp = kBlocks / kBulkWarps;      // blocks of a full stage a warp takes
  static_assert(kRowBytes % 16 == 0 && kSlot % 16 == 0 && (kSlot / 4) % 8 == 4);
  static_assert(kBlocks % 8 == 0 && kBlocks % kBulkWarps == 0 && kBulkWarps % 2 == 0);
};

template <bool kQ8, int kNT>
constexpr int bulk_smem_bytes() {
  return kBulkStages * BulkStage<kQ8>::kBytes + 2 * kBulkWarps * kNT * 32 * 16 + 2 * kBulkStages * 8;
}

template <bool kQ8, int kNT>
__global__ void __launch_bounds__(kBulkThreads, 1) ggml_matvec_bulk(const MatvecArgs p) {
  using S = BulkStage<kQ8>;
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* ring = smem;
  float4* part = reinterpret_cast<float4*>(smem + kBulkStages * S::kBytes);  // [2][warp][nt][lane]
  const uint32_t full0 = smem_addr(part + 2 * kBulkWarps * kNT * 32), empty0 = full0 + 8 * kBulkStages;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  const int tiles = (p.n + kRows - 1) / kRows;
  const int tile_begin = static_cast<int>(static_cast<int64_t>(blockIdx.x) * tiles / gridDim.x);
  const int tile_end = static_cast<int>(static_cast<int64_t>(blockIdx.x + 1) * tiles / gridDim.x);
  const int per_tile = (p.nb + S::kBlocks - 1) / S::kBlocks;
  const int steps = (tile_end - tile_begin) * per_tile;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kBulkStages; ++s) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, kBulkWarps);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warp == kBulkWarps) {  // the producer: w does not depend on the quantiser, no wait for it
    for (int i = 0; i < steps; ++i) {
      const int slot = i % kBulkStages;
      if (i >= kBulkStages) mbar_wait(empty0 + 8 * slot, static_cast<uint32_t>(i / kBulkStages - 1) & 1u);
      const int tile = tile_begin + i / per_tile, b0 = (i % per_tile) * S::kBlocks;
      const uint32_t bytes = static_cast<uint32_t>(min(S::kBlocks, p.nb - b0) * S::kBlockBytes);
      if (lane == 0) mbar_arrive_expect_tx(full0 + 8 * slot, kRows * bytes);
      __syncwarp();
      if (lane < kRows) {
        const int row = min(tile * kRows + lane, p.n - 1);
        bulk_load(smem_addr(ring + slot * S::kBytes + lane * S::kSlot),
                  p.w + static_cast<int64_t>(row) * p.w_row_bytes + static_cast<int64_t>(b0) * S::kBlockBytes, bytes,
                  full0 + 8 * slot);
      }
    }
    return;
  }

  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // x's quants and scales are written
  const int g = lane >> 2, t = lane & 3;
  // Block j = warp + kBulkWarps i of a stage: row g's scale at slot byte g kSlot + j block bytes,
  // its quant word at that + the reader's word for j's parity (= the warp's).
  const QuantReader reader(2, t);
  const bool odd = warp & 1;  // constant indices only: the reader stays in registers
  const int q_word = odd ? reader.word[1] : reader.word[0], q_shift = odd ? reader.shift[1] : reader.shift[0];
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
  float acc[kNT][4];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[nt][c] = 0.0f;

  for (int i = 0; i < steps; ++i) {
    const int slot = i % kBulkStages, local_tile = i / per_tile, kstep = i % per_tile;
    const int b0 = kstep * S::kBlocks, count = min(S::kBlocks, p.nb - b0);  // a multiple of 8
    // B fragments and d_x of this warp's blocks (L1/L2: x is small), loaded while w lands.
    uint2 xb[S::kPerWarp][kNT];
    float2 xd[S::kPerWarp][kNT];
#pragma unroll
    for (int u = 0; u < S::kPerWarp; ++u) {
      const int b = b0 + warp + kBulkWarps * u;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        const bool on = warp + kBulkWarps * u < count;
        xb[u][nt] = on && tok_on[nt] ? __ldg(reinterpret_cast<const uint2*>(xq_lane[nt] + static_cast<int64_t>(b) * 32))
                                     : make_uint2(0, 0);
        xd[u][nt] = on ? __ldg(reinterpret_cast<const float2*>(xd_lane[nt] + static_cast<int64_t>(b) * kTokens))
                       : make_float2(0.0f, 0.0f);
      }
    }
    mbar_wait(full0 + 8 * slot, static_cast<uint32_t>(i / kBulkStages) & 1u);
    const unsigned char* stage = ring + slot * S::kBytes;
#pragma unroll
    for (int u = 0; u < S::kPerWarp; ++u) {
      const int j = warp + kBulkWarps * u;
      if (j < count) {  // warp-uniform
        const int lo = g * S::kSlot + j * S::kBlockBytes, hi = lo + 8 * S::kSlot;
        const float dw_lo = __half2float(*reinterpret_cast<const __half*>(stage + lo));
        const float dw_hi = __half2float(*reinterpret_cast<const __half*>(stage + hi));
        uint32_t a[4];
        if constexpr (kQ8) {
          a[0] = staged_u32(stage, lo + q_word, q_shift);
          a[1] = staged_u32(stage, hi + q_word, q_shift);
          a[2] = staged_u32(stage, lo + q_word + 16, q_shift);  // quants 16 + 4t .. 16 + 4t + 3
          a[3] = staged_u32(stage, hi + q_word + 16, q_shift);
        } else {
          const uint32_t c_lo = staged_u32(stage, lo + q_word, q_shift), c_hi = staged_u32(stage, hi + q_word, q_shift);
          a[0] = q4_signed(c_lo & 0x0f0f0f0fu);
          a[1] = q4_signed(c_hi & 0x0f0f0f0fu);
          a[2] = q4_signed((c_lo >> 4) & 0x0f0f0f0fu);
          a[3] = q4_signed((c_hi >> 4) & 0x0f0f0f0fu);
        }
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          int s[4];
          mma_block(s, a, xb[u][nt].x, xb[u][nt].y);
          acc[nt][0] = fmaf(exact_float(s[0]), dw_lo * xd[u][nt].x, acc[nt][0]);
          acc[nt][1] = fmaf(exact_float(s[1]), dw_lo * xd[u][nt].y, acc[nt][1]);
          acc[nt][2] = fmaf(exact_float(s[2]), dw_hi * xd[u][nt].x, acc[nt][2]);
          acc[nt][3] = fmaf(exact_float(s[3]), dw_hi * xd[u][nt].y, acc[nt][3]);
        }
      }
    }
    __syncwarp();  // every lane's reads of the stage are done
    if (lane == 0) mbar_arrive(empty0 + 8 * slot);

    if (kstep == per_tile - 1) {  // the tile's last stage: its sums, added in warp order
      float4* buf = part + (local_tile & 1) * kBulkWarps * kNT * 32;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        buf[(warp * kNT + nt) * 32 + lane] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[nt][c] = 0.0f;
      }
      // The compute warps only (barrier 1; the producer never waits here). The other buffer
      // was last read before this barrier's previous use, so it is free to be written next.
      asm volatile("bar.sync 1, %0;\n" ::"n"(kBulkWarps * 32) : "memory");
      const float* parts = reinterpret_cast<const float*>(buf);
      const int row0 = (tile_begin + local_tile) * kRows;
      for (int o = threadIdx.x; o < kNT * 128; o += kBulkWarps * 32) {
        const int nt = o / 128, l = (o / 4) % 32, c = o % 4;
        float v = 0.0f;
#pragma unroll
        for (int wi = 0; wi < kBulkWarps; ++wi) v += parts[((wi * kNT + nt) * 32 + l) * 4 + c];
        const int row = row0 + (l >> 2) + (c >> 1) * 8, tok = nt * kTokens + (l & 3) * 2 + (c & 1);
        if (row < p.n && tok < p.m) p.y[static_cast<int64_t>(tok) * p.y_row + row] = v;
      }
    }
  }
}

template <bool kQ8, int kNT>
Status launch_matvec_bulk(const CudaDevice& device, const MatvecArgs& p) {
  const auto kernel = &ggml_matvec_bulk<kQ8, kNT>;
  constexpr int kSmem = bulk_smem_bytes<kQ8, kNT>();
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(std::min<int64_t>(ceil_div(p.n, kRows), device.sm_count())));
  config.blockDim = dim3(kBulkThreads);
  config.dynamicSmemBytes = kSmem;
  config.stream = device.stream();
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  DNNB_CUDA_TRY(cudaLaunchKernelEx(&config, kernel, p));
  return Status::ok();
}
