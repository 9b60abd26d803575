// The bf16 lookup tables of kernels/avx512/unary.cpp (the bf16 default of sigmoid, silu, gelu
// and gelu_tanh: y looked up in a table of the vector function's results for all 65536
// inputs) against the computed results (variant `math`, the same function evaluated per
// element): every bf16 bit pattern, bit for bit (NaN outputs: NaN on both, the payload free,
// as torch leaves it). Two layouts: all codes in one dense tensor, and the codes after the
// first seven in a tensor whose length is odd (masked heads and tails of the driver).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/problem.h"
#include "core/registry.h"
#include "kernels/avx512/avx512_common.h"

namespace dnnb {
namespace {

// y of `variant` for x = codes[first..], as 16-bit codes, or an error text.
Result<std::vector<uint16_t>> run_on_codes(const std::string& op, const std::string& variant, DType dtype, int64_t first) {
  const Implementation* impl = Registry::instance().find_implementation(op, "avx512", variant);
  if (impl == nullptr) return Status::error("no avx512/" + variant + " implementation of " + op);
  const int64_t n = 65536 - first;
  auto problem = Problem::parse(op + ":" + dtype_name(dtype) + ":" + std::to_string(n));
  if (!problem) return problem.status();
  const std::vector<DeviceRuntime*> cpus = DeviceSet::instance().of_kind(DeviceKind::cpu);
  if (cpus.empty()) return Status::error("no cpu device");
  DeviceRuntime& cpu = *cpus.front();
  DNNB_TRY(impl->supports(*problem, cpu));
  auto x = empty_tensor(cpu, dtype, {n});
  auto y = empty_tensor(cpu, dtype, {n});
  if (!x) return x.status();
  if (!y) return y.status();
  auto* xs = static_cast<uint16_t*>(x->host_data());
  for (int64_t i = 0; i < n; ++i) xs[i] = static_cast<uint16_t>(first + i);
  OpCall call{*problem, cpu, {*x}, {*y}};
  DNNB_TRY(impl->run(call));
  const auto* ys = static_cast<const uint16_t*>(y->host_data());
  return std::vector<uint16_t>(ys, ys + n);
}

void expect_table_matches_math(const std::string& op) {
  if (!avx512::cpu_status().is_ok()) GTEST_SKIP() << avx512::cpu_status().message;
  for (int64_t first : {int64_t{0}, int64_t{7}}) {
    auto want = run_on_codes(op, "math", DType::bf16, first);
    auto got = run_on_codes(op, "", DType::bf16, first);
    ASSERT_TRUE(want.is_ok()) << op << " computed: " << want.status().message;
    ASSERT_TRUE(got.is_ok()) << op << " table: " << got.status().message;
    int wrong = 0;
    for (size_t i = 0; i < want->size(); ++i) {
      const uint16_t w = (*want)[i], g = (*got)[i];
      const double wv = load_element(&w, DType::bf16, 0), gv = load_element(&g, DType::bf16, 0);
      const bool same = std::isnan(wv) ? std::isnan(gv) : w == g;
      if (!same && ++wrong <= 5)
        ADD_FAILURE() << op << " bf16 x code 0x" << std::hex << first + static_cast<int64_t>(i) << ": table 0x" << g
                      << ", computed 0x" << w << std::dec << " (" << gv << " vs " << wv << ")";
    }
    EXPECT_EQ(wrong, 0) << op << " bf16: codes from " << first << " differ";
  }
}

TEST(Avx512UnaryTable, Sigmoid) { expect_table_matches_math("sigmoid"); }
TEST(Avx512UnaryTable, Silu) { expect_table_matches_math("silu"); }
TEST(Avx512UnaryTable, Gelu) { expect_table_matches_math("gelu"); }
TEST(Avx512UnaryTable, GeluTanh) { expect_table_matches_math("gelu_tanh"); }

}  // namespace
}  // namespace dnnb
