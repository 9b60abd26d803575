// The AMX path of the AVX-512 GEMM (kernels/avx512/gemm_amx.h) against the engine's f32 FMA
// path (bf16 converted to f32 exactly, FMA) on odd shapes, transposed and strided operands,
// bias, several K blocks, a batch, and f32 and bf16 outputs.
//
// Two runs of the same cases:
// - EmulatedTiles: the path's packing, tile indexing and blocking on a software model of the
//   tile instructions (EmuTiles: the SDM's TILELOADD, TILESTORED, TILEZERO, TDPBF16PS, with
//   its shape checks), so that a CPU without AMX tests everything but the silicon.
// - HardwareTiles: gemm() as matmul and linear call it (GemmCall::amx), where the CPU and OS
//   run AMX; skipped elsewhere with the reason.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "core/host_device.h"
#include "core/registry.h"
#include "devices/cpu/cpu_features.h"
#include "kernels/avx512/gemm_amx.h"

namespace dnnb::avx512 {
namespace {

using gemm_detail::amx_path_of;
using gemm_detail::gemm_with_path;

// ---- A model of the tile instructions ------------------------------------------------------

std::atomic<int64_t> g_emu_errors{0}, g_emu_configs{0}, g_emu_releases{0}, g_emu_dps{0};
std::mutex g_emu_message_lock;
std::string g_emu_message;

void emu_error(const std::string& what) {
  if (g_emu_errors++ == 0) {
    std::lock_guard<std::mutex> lock(g_emu_message_lock);
    g_emu_message = what;
  }
}

float bf16_daz(uint16_t bits) {
  if ((bits & 0x7f80u) == 0) bits &= 0x8000u;  // subnormal (or zero) input: a signed zero
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

float ftz(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }

// Per thread, as the hardware's tile state: the configuration and 8 tiles of 16 x 64 bytes.
struct EmuTiles {
  struct State {
    amx::TileConfig config;
    bool configured = false;
    uint8_t tile[8][16][64] = {};
  };
  static State& state() {
    thread_local State s;
    return s;
  }
  // A tile an instruction may name: configured, and its shape within palette 1.
  static bool usable(int t, const char* op) {
    const State& s = state();
    if (!s.configured) {
      emu_error(std::string(op) + " without LDTILECFG");
      return false;
    }
    if (s.config.rows[t] == 0 || s.config.rows[t] > 16 || s.config.colsb[t] == 0 || s.config.colsb[t] > 64) {
      emu_error(std::string(op) + " on unconfigured tile " + std::to_string(t));
      return false;
    }
    return true;
  }

  static void load_config(const amx::TileConfig& config) {
    State& s = state();
    if (s.configured) emu_error("LDTILECFG while configured (an enter without leave)");
    if (config.palette != 1) emu_error("palette is not 1");
    for (int t = 0; t < 16; ++t)
      if (config.rows[t] > 16 || config.colsb[t] > 64 || config.colsb[t] % 4 != 0 || (t >= 8 && config.rows[t] != 0))
        emu_error("bad shape of tile " + std::to_string(t));
    s.config = config;
    s.configured = true;
    std::memset(s.tile, 0, sizeof s.tile);  // LDTILECFG zeroes the tiles
    ++g_emu_configs;
  }
  static void release() {
    State& s = state();
    if (!s.configured) emu_error("TILERELEASE without LDTILECFG");
    s = State{};
    ++g_emu_releases;
  }
  template <int T>
  static void zero() {
    if (usable(T, "TILEZERO")) std::memset(state().tile[T], 0, sizeof state().tile[T]);
  }
  template <int T>
  static void load(const void* base, int64_t stride) {
    if (!usable(T, "TILELOADD")) return;
    State& s = state();
    std::memset(s.tile[T], 0, sizeof s.tile[T]);
    for (int r = 0; r < s.config.rows[T]; ++r)
      std::memcpy(s.tile[T][r], static_cast<const char*>(base) + r * stride, s.config.colsb[T]);
  }
  template <int T>
  static void store(void* base, int64_t stride) {
    if (!usable(T, "TILESTORED")) return;
    const State& s = state();
    for (int r = 0; r < s.config.rows[T]; ++r)
      std::memcpy(static_cast<char*>(base) + r * stride, s.tile[T][r], s.config.colsb[T]);
  }
  // The SDM's TDPBF16PS: for each row m of C and pair k, C[m][n] += a[m].pair[k].lo * b[k].pair[n].lo,
  // then += the high halves' product; inputs DAZ, results FTZ, round to nearest even.
  template <int C, int A, int B>
  static void dpbf16ps() {
    if (!usable(C, "TDPBF16PS") || !usable(A, "TDPBF16PS") || !usable(B, "TDPBF16PS")) return;
    State& s = state();
    const amx::TileConfig& cf = s.config;
    if (C == A || C == B || A == B) emu_error("TDPBF16PS names a tile twice");
    if (cf.rows[C] != cf.rows[A] || cf.colsb[C] != cf.colsb[B] || cf.colsb[A] / 4 != cf.rows[B])
      emu_error("TDPBF16PS shapes do not match");
    ++g_emu_dps;
    const int M = cf.rows[C], N = cf.colsb[C] / 4, K = cf.colsb[A] / 4;
    for (int m = 0; m < M; ++m) {
      float tmp[16];
      std::memcpy(tmp, s.tile[C][m], sizeof tmp);
      for (int k = 0; k < K; ++k) {
        uint16_t a[2];
        std::memcpy(a, s.tile[A][m] + 4 * k, sizeof a);
        for (int n = 0; n < N; ++n) {
          uint16_t b[2];
          std::memcpy(b, s.tile[B][k] + 4 * n, sizeof b);
          tmp[n] = ftz(tmp[n] + bf16_daz(a[0]) * bf16_daz(b[0]));
          tmp[n] = ftz(tmp[n] + bf16_daz(a[1]) * bf16_daz(b[1]));
        }
      }
      std::memcpy(s.tile[C][m], tmp, sizeof tmp);
    }
  }
};

// ---- Cases ----------------------------------------------------------------------------------

struct Case {
  const char* name;
  int64_t m, n, k;
  // r: row-major, p: row-major with 3 elements of padding per row, c: column-major (a
  // transposed view; for b, linear's w [N, K] row-major), s: neither stride 1.
  char a_layout = 'r';
  char b_layout = 'r';
  bool bias = false;
  DType y = DType::f32;
  int64_t batch = 1;
  int64_t y_pad = 0;  // extra elements per row of y
};

const Case kCases[] = {
    {"1x1x1", 1, 1, 1},
    {"1x1x1_bf16", 1, 1, 1, 'r', 'r', true, DType::bf16},
    {"17x33x65_bf16_bias", 17, 33, 65, 'r', 'r', true, DType::bf16},
    {"17x33x65_bT", 17, 33, 65, 'r', 'c'},
    {"17x33x65_bT_bf16_bias", 17, 33, 65, 'r', 'c', true, DType::bf16},
    {"64x4096x128_bf16", 64, 4096, 128, 'r', 'r', false, DType::bf16},
    {"64x4096x128_bT_bias", 64, 4096, 128, 'r', 'c', true, DType::f32},
    {"33x40x70_aT", 33, 40, 70, 'c', 'r', false, DType::bf16},
    {"33x40x71_aT_bT", 33, 40, 71, 'c', 'c', true, DType::f32},
    {"17x33x65_padded", 17, 33, 65, 'p', 'p', false, DType::bf16},
    {"19x21x37_strided", 19, 21, 37, 's', 's', true, DType::f32},
    {"31x31x31", 31, 31, 31}, {"32x32x32", 32, 32, 32}, {"33x33x33", 33, 33, 33},
    // K over one K block (512): partial sums in y (f32) or in the engine's buffer (bf16),
    // whole 32 x 32 blocks through the tiles and edge blocks through zmm.
    {"64x64x1100", 64, 64, 1100},
    {"64x64x1100_bf16_bias", 64, 64, 1100, 'r', 'c', true, DType::bf16},
    {"40x50x1100", 40, 50, 1100, 'r', 'r', true, DType::f32, 1, 3},
    {"40x50x1100_bf16", 40, 50, 1100, 'c', 'c', false, DType::bf16},
    {"batch3_35x47x99", 35, 47, 99, 'r', 'c', true, DType::bf16, 3, 5},
    {"batch2_96x96x600", 96, 96, 600, 'r', 'r', false, DType::f32, 2},
};

uint16_t to_bf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// A rows x cols operand per batch item in the given layout; element (i, r, c) at
// i * batch_stride + r * rs + c * cs. Every other element, and 64 past the end, is NaN: a
// pack that reads past an operand's K or rows (even where zero padding on the other side
// would cancel a finite value) makes NaN sums.
struct Operand {
  std::vector<uint16_t> data;
  int64_t rs = 0, cs = 0, batch_stride = 0;
  float at(int64_t i, int64_t r, int64_t c) const { return from_bf16(data[i * batch_stride + r * rs + c * cs]); }
};

Operand make_operand(int64_t batch, int64_t rows, int64_t cols, char layout, std::mt19937& rng) {
  Operand o;
  if (layout == 'r' || layout == 'p') {
    o.rs = layout == 'p' ? cols + 3 : cols;
    o.cs = 1;
  } else if (layout == 'c') {
    o.rs = 1;
    o.cs = rows;
  } else {
    o.rs = 3 * cols + 1;  // neither stride is 1
    o.cs = 3;
  }
  o.batch_stride = layout == 's' || layout == 'p' ? rows * o.rs : rows * cols;
  o.data.assign(static_cast<size_t>(batch * o.batch_stride + 64), 0x7fc0);  // bf16 quiet NaN
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) o.data[i * o.batch_stride + r * o.rs + c * o.cs] = to_bf16(dist(rng));
  return o;
}

struct Problem3 {
  Operand a, b;
  std::vector<uint16_t> bias;
  int64_t y_rs = 0, y_bs = 0;
};

GemmCall call_of(const Case& c, const Problem3& p, void* y) {
  GemmCall g;
  g.batch = c.batch;
  g.m = c.m;
  g.n = c.n;
  g.k = c.k;
  g.a = {p.a.data.data(), DType::bf16, p.a.rs, p.a.cs, p.a.batch_stride};
  g.b = {p.b.data.data(), DType::bf16, p.b.rs, p.b.cs, p.b.batch_stride};
  g.y = y;
  g.y_dtype = c.y;
  g.y_row_stride = p.y_rs;
  g.y_batch_stride = p.y_bs;
  if (c.bias) {
    g.bias = p.bias.data();
    g.bias_dtype = DType::bf16;
  }
  return g;
}

// Runs `run` (which fills y through a GemmCall) and the f32 FMA path on case c, and compares:
// each element within its f32 summation-order bound (1e-5 of the sum of |products|, about
// 170 ulps of it) plus, for a bf16 y, one bf16 rounding step (2^-7 of the value).
template <class Run>
void compare_with_fma(const Case& c, Run run) {
  SCOPED_TRACE(c.name);
  std::mt19937 rng(static_cast<unsigned>(c.m * 7919 + c.n * 131 + c.k));
  Problem3 p;
  p.a = make_operand(c.batch, c.m, c.k, c.a_layout, rng);
  // b's layout 'c' is linear's w: [N, K] row-major, read as K x N with its strides swapped.
  p.b = make_operand(c.batch, c.k, c.n, c.b_layout, rng);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t j = 0; j < c.n; ++j) p.bias.push_back(to_bf16(dist(rng)));
  p.y_rs = c.n + c.y_pad;
  p.y_bs = c.m * p.y_rs;
  const size_t y_elems = static_cast<size_t>(c.batch * p.y_bs);
  const size_t y_bytes = y_elems * dtype_size(c.y);
  std::vector<char> y_ref(y_bytes, 0), y_amx(y_bytes, 0);

  GemmCall ref = call_of(c, p, y_ref.data());
  ref.bf16_pairs = false;
  ASSERT_TRUE(gemm(ref).is_ok());
  GemmCall g = call_of(c, p, y_amx.data());
  ASSERT_NO_FATAL_FAILURE(run(g));

  auto value = [&](const std::vector<char>& y, int64_t idx) {
    if (c.y == DType::bf16) {
      uint16_t b;
      std::memcpy(&b, y.data() + idx * 2, 2);
      return from_bf16(b);
    }
    float f;
    std::memcpy(&f, y.data() + idx * 4, 4);
    return f;
  };
  int64_t bad = 0;
  for (int64_t i = 0; i < c.batch; ++i)
    for (int64_t r = 0; r < c.m; ++r)
      for (int64_t col = 0; col < c.n; ++col) {
        double absum = c.bias ? std::fabs(from_bf16(p.bias[col])) : 0.0;
        for (int64_t k = 0; k < c.k; ++k) absum += std::fabs(double(p.a.at(i, r, k)) * p.b.at(i, k, col));
        const int64_t idx = i * p.y_bs + r * p.y_rs + col;
        const float want = value(y_ref, idx), got = value(y_amx, idx);
        const double tol = 1e-5 * absum + (c.y == DType::bf16 ? std::ldexp(std::fabs(want), -7) : 0.0);
        if (!(std::fabs(double(got) - want) <= tol) && bad++ < 5)
          ADD_FAILURE() << "y[" << i << "][" << r << "][" << col << "] = " << got << ", the FMA path gives " << want
                        << " (tolerance " << tol << ")";
      }
  EXPECT_EQ(bad, 0) << "elements out of tolerance";
  // The padding between rows of y is never written.
  for (int64_t i = 0; i < c.batch; ++i)
    for (int64_t r = 0; r < c.m; ++r)
      for (int64_t col = c.n; col < p.y_rs; ++col) ASSERT_EQ(value(y_amx, i * p.y_bs + r * p.y_rs + col), 0.0f);
}

TEST(AvxAmx, EmulatedTilesMatchFma) {
  if (!cpu_status().is_ok()) GTEST_SKIP() << "no AVX-512";
  const gemm_detail::Path path = amx_path_of<EmuTiles>();
  for (const Case& c : kCases) {
    g_emu_errors = 0;
    g_emu_configs = 0;
    g_emu_releases = 0;
    g_emu_dps = 0;
    compare_with_fma(c, [&](const GemmCall& g) { ASSERT_TRUE(gemm_with_path(g, path).is_ok()); });
    EXPECT_EQ(g_emu_errors.load(), 0) << c.name << ": " << g_emu_message;
    EXPECT_GT(g_emu_configs.load(), 0) << c.name;
    EXPECT_EQ(g_emu_configs.load(), g_emu_releases.load()) << c.name << ": every LDTILECFG is released";
    // At least one TDPBF16PS per 32 x 32 block and 32 K steps (more where a block spans K blocks).
    const int64_t blocks = c.batch * ((c.m + 31) / 32) * ((c.n + 31) / 32) * ((c.k + 31) / 32);
    EXPECT_GE(g_emu_dps.load(), 4 * blocks) << c.name;
  }
}

std::string amx_absent_reason() {
  const CpuFeatures& f = cpu_features();
  if (!f.amx_tile || !f.amx_bf16) return "no AMX on this CPU";
  if (!f.os_amx) return "AMX not permitted by the OS: " + cpu_description().amx_permission_note;
  if (!has_amx_bf16) return "DNNB_AVX512_AMX=0 turns AMX off";
  return "";
}

TEST(AvxAmx, HardwareTilesMatchFma) {
  if (!cpu_status().is_ok()) GTEST_SKIP() << "no AVX-512";
  const std::string absent = amx_absent_reason();
  if (!absent.empty()) GTEST_SKIP() << absent;
  ASSERT_TRUE(has_native_bf16) << "AMX without AVX512_BF16: gemm() would not pick AMX";
  for (const Case& c : kCases)
    compare_with_fma(c, [](GemmCall g) {
      g.amx = true;  // as matmul and linear call it
      ASSERT_TRUE(gemm(g).is_ok());
    });
}

// matmul's and linear's default report the unit of the path gemm() takes: bf16_amx where
// AMX runs, so bench judges them against the AMX ceiling.
TEST(AvxAmx, ComputeUnitFollowsThePath) {
  if (!cpu_status().is_ok()) GTEST_SKIP() << "no AVX-512";
  if (std::getenv("DNNB_AVX512_AMX") == nullptr) {
    EXPECT_EQ(has_amx_bf16, cpu_features().amx_bf16_usable());
  }
  const std::string bf16_unit = !has_native_bf16 ? "f32_fma" : has_amx_bf16 ? "bf16_amx" : "bf16_dot";
  for (const char* op : {"matmul", "linear"}) {
    const Implementation* impl = Registry::instance().find_implementation(op, "avx512", "");
    ASSERT_NE(impl, nullptr) << op;
    auto bf16 = Problem::parse(std::string(op) + ":bf16:64x64x64");
    auto f32 = Problem::parse(std::string(op) + ":f32:64x64x64");
    ASSERT_TRUE(bf16 && f32);
    EXPECT_EQ(impl->unit_for(*bf16, scratch_host()), bf16_unit) << op;
    EXPECT_EQ(impl->unit_for(*f32, scratch_host()), "f32_fma") << op;
  }
}

}  // namespace
}  // namespace dnnb::avx512
