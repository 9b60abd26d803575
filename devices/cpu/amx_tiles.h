// AMX tiles, shared by the bf16_amx ceiling probe (devices/cpu/cpu_ceilings.cpp) and the AMX
// path of the AVX-512 GEMM (kernels/avx512/gemm_amx.cpp): the 64-byte configuration LDTILECFG
// reads, and the tile instructions as asm statements.
//
// Run them only where cpu_features().amx_bf16_usable() is true. That call has also asked
// Linux for the tile data state (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), which
// grants it to the whole process, threads started before or after alike); without the grant
// the first tile instruction raises SIGILL.
//
// Why asm of our own: GCC 12's tile intrinsics are asm statements that name no memory (only
// TILESTORED has a "memory" clobber, and LDTILECFG's operand covers 8 of its 64 bytes), so the
// compiler may move the stores a TILELOADD or LDTILECFG reads past it. Each statement here
// that touches memory clobbers "memory"; all are volatile, so they keep their order.
#pragma once
#include <cstdint>

namespace dnnb::amx {

constexpr int kMaxRows = 16;       // rows of a tile (palette 1)
constexpr int kMaxRowBytes = 64;   // bytes of a tile row: 16 f32, 16 bf16 pairs

// LDTILECFG's operand, palette 1: tile t has rows[t] rows of colsb[t] bytes; a tile with 0
// rows is unconfigured (using it faults).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

// Tiles 0 .. tiles-1 of 16 rows x 64 bytes, the rest unconfigured.
inline TileConfig full_tiles(int tiles) {
  TileConfig config;
  for (int t = 0; t < tiles; ++t) {
    config.rows[t] = kMaxRows;
    config.colsb[t] = kMaxRowBytes;
  }
  return config;
}

#if defined(__x86_64__)
inline void load_config(const TileConfig& config) { asm volatile("ldtilecfg %0" : : "m"(config) : "memory"); }
// Returns the tiles to their initial state, so the OS need not save 8 KiB per switch.
inline void release() { asm volatile("tilerelease" : : : "memory"); }

template <int T>
inline void zero() {
  asm volatile("tilezero %%tmm%c0" : : "i"(T));
}
// Tile T's rows from base, base + stride, ... (stride in bytes).
template <int T>
inline void load(const void* base, int64_t stride) {
  asm volatile("tileloadd (%0,%1,1), %%tmm%c2" : : "r"(base), "r"(stride), "i"(T) : "memory");
}
template <int T>
inline void store(void* base, int64_t stride) {
  asm volatile("tilestored %%tmm%c2, (%0,%1,1)" : : "r"(base), "r"(stride), "i"(T) : "memory");
}
// TDPBF16PS: tile C (f32) += tile A (rows of bf16 pairs) times tile B (pair rows x columns).
// AT&T operand order is B, A, C.
template <int C, int A, int B>
inline void dpbf16ps() {
  asm volatile("tdpbf16ps %%tmm%c0, %%tmm%c1, %%tmm%c2" : : "i"(B), "i"(A), "i"(C));
}
#endif

}  // namespace dnnb::amx
