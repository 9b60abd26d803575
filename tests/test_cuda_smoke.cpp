// CUDA kernel paths that the ops' default check problems do not reach: rows longer than the
// register capacity (shared-memory cache, streaming re-read, rows split over blocks), the
// block-per-row register and occupancy kernels, the alternatives, reductions of one long row,
// multi-dim broadcasts. Each case runs through the conformance engine against the reference on
// random inputs. Then layernorm on rows with little or no variance at every kernel's lengths,
// and the registrations' rule (every alternative says when, at most two per op). The cases skip
// where there is no CUDA device; the registration test runs wherever the CUDA kernels are built.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/compare.h"
#include "tests/backend_runners.h"

namespace dnnb {
namespace {

// Which kernel path each case reaches is noted beside it (kernels/cuda, docs/cuda.md).
const std::vector<std::string> kPathCases = {
    // softmax: the pipe kernel with a full mask and a scale
    "softmax:f32:300x3000:mask=300x3000,scale=0.125@cuda",
    // softmax: the occupancy kernel (3001 columns: not whole 16-byte vectors), 2-instruction exp
    "softmax:bf16:300x3001@cuda",
    // softmax: the occupancy kernel with expf (variant expf), a row-broadcast mask
    "softmax:bf16:300x3000:mask=1x3000@cuda/expf",
    // softmax: the pipe kernel with a column-broadcast mask and softcap
    "softmax:f16:64x4096:mask=64x1,softcap=30@cuda",
    // softmax: long rows cached in shared memory, one row fully masked
    "softmax:f32:300x20000:mask=300x20000,masked_rows=1@cuda",
    // softmax: long rows beyond the cache: x re-read
    "softmax:bf16:300x60000:scale=0.5@cuda",
    // softmax: few long rows split over blocks (stats + write launches), a fully masked row
    "softmax:f32:3x70000:mask=3x70000,masked_rows=1@cuda",
    // softmax: long cached rows that are not 16-byte aligned (padded)
    "softmax:f16:2x5x20001:layout=padded@cuda",
    // layernorm / rmsnorm: packed (f32; unaligned 16-bit), cached long rows, uncached long rows
    "layernorm:f32:300x3000@cuda",
    "layernorm:f16:300x3001@cuda",
    "layernorm:f32:300x20000@cuda",
    "layernorm:bf16:3x60000@cuda",
    "rmsnorm:f16:300x3001@cuda",
    "rmsnorm:bf16:300x20000:form=gemma@cuda",
    "rmsnorm:f32:3x60000@cuda",
    "rmsnorm:bf16:333x1000:layout=transposed@cuda",
    // reductions: one long row split over blocks + finalize; few long rows; padded long rows
    "sum:f32:1000000@cuda",
    "max:bf16:3x50000@cuda",
    "norm2:f16:3x50001:layout=padded@cuda",
    "mean:f32:4096x7@cuda",
    // cross-entropy: rows split over blocks (forward merges chunk statistics), long rows, the
    // warp kernel with expf (variant expf)
    "cross_entropy:f32:4x40000:ignore_index=-100@cuda",
    "cross_entropy:bf16:300x60000:ignore_index=-100@cuda",
    "cross_entropy:bf16:2000x1000:ignore_index=-100@cuda/expf",
    "cross_entropy_bwd:f32:4x40000:ignore_index=-100@cuda",
    "cross_entropy_bwd:bf16:300x60000@cuda",
    "cross_entropy_bwd:f32:300x3000:ignore_index=-100@cuda",
    // cross_entropy_bwd: the occupancy kernel with expf after the count kernel (variant expf)
    "cross_entropy_bwd:bf16:300x3000:ignore_index=-100@cuda/expf",
    // elementwise: broadcasts over several non-collapsible outer dims, tensor and scalar lerp,
    // gelu through erff (variant erff)
    "add:bf16:2x3x4x5x33:b=3x1x5x1@cuda",
    "lerp:f16:64x4096:w=64x1@cuda",
    "lerp:f32:7x33:weight=0.75@cuda",
    "gelu:bf16:3x5x777:layout=transposed@cuda",
    "gelu:f16:64x4096@cuda/erff",
    // matmul_i8, matmul_f8 (gemm8_mma.cuh): the wgmma kernel reading a and b as they are (K a
    // multiple of 16, b column-major; M and N not multiples of its 128 x 256 tile, K past whole k
    // tiles), an e5m2 a with an f32 y, row-wise scales; the mma.sync kernel's fast path (M below
    // 64, K-contiguous 16-byte rows). The check problems reach the packed wgmma and the general
    // mma.sync paths.
    "matmul_i8:i8:300x520x1040:b.layout=transposed@cuda",
    "matmul_f8:f8_e4m3fn:300x520x1040:b.layout=transposed,scale=row@cuda",
    "matmul_f8:f8_e4m3fn:200x300x528:a.dt=f8_e5m2,b.layout=transposed,y.dt=f32@cuda",
    "matmul_i8:i8:40x300x1040:b.layout=transposed@cuda",
    "matmul_f8:f8_e4m3fn:40x300x1040:b.layout=transposed,y.dt=f16@cuda",
};

bool cuda_kernels_built() {
  for (const auto& impl : Registry::instance().implementations())
    if (impl.backend == "cuda") return true;
  return false;
}

// Empty when a CUDA device is here; else why not.
std::string cuda_absence() {
  if (!cuda_kernels_built()) return "no CUDA device: the CUDA kernels are not compiled into this build";
  if (DeviceSet::instance().first(DeviceKind::cuda) != nullptr) return "";
  std::string why = DeviceSet::instance().absence_reason(DeviceKind::cuda);
  if (why.rfind("no CUDA device", 0) != 0) why = "no CUDA device: " + why;
  return why;
}

// Runs everywhere: every case names a registered op and a problem its spec accepts.
TEST(CudaSmoke, CasesAreValidProblems) {
  for (const std::string& text : kPathCases) {
    auto id = CaseId::parse(text);
    ASSERT_TRUE(id.is_ok()) << text << ": " << id.status().message;
    const OpSpec* spec = Registry::instance().find_op(id->problem.op);
    ASSERT_NE(spec, nullptr) << text << ": no op spec registered";
    auto sig = spec->signature(id->problem);
    EXPECT_TRUE(sig.is_ok()) << text << ": " << sig.status().message;
  }
}

// Every CUDA alternative carries its one sentence saying when to choose it, a default none, and
// no op has more than two alternatives; every variant the cases above name is registered.
TEST(CudaSmoke, EveryAlternativeSaysWhen) {
  if (!cuda_kernels_built()) GTEST_SKIP() << "the CUDA kernels are not compiled into this build";
  std::map<std::string, int> defaults, alternatives;
  for (const auto& impl : Registry::instance().implementations()) {
    if (impl.backend != "cuda") continue;
    if (impl.is_default()) {
      ++defaults[impl.op];
      EXPECT_TRUE(impl.when.empty()) << impl.op << "@" << impl.label() << ": a default has no 'when'";
    } else {
      ++alternatives[impl.op];
      EXPECT_FALSE(impl.when.empty()) << impl.op << "@" << impl.label() << ": no 'when' sentence";
      if (!impl.when.empty()) EXPECT_EQ(impl.when.back(), '.') << impl.op << "@" << impl.label();
    }
  }
  for (const auto& [op, n] : alternatives) {
    EXPECT_LE(n, 2) << "cuda " << op << " has " << n << " alternatives";
    EXPECT_EQ(defaults[op], 1) << "cuda " << op << ": alternatives without a default";
  }
  for (const std::string& text : kPathCases) {
    auto id = CaseId::parse(text);
    ASSERT_TRUE(id.is_ok()) << text;
    EXPECT_NE(Registry::instance().find_implementation(id->problem.op, "cuda", id->variant), nullptr)
        << text << ": no such CUDA implementation";
  }
}

TEST(CudaSmoke, KernelPathsMatchReference) {
  const std::string absent = cuda_absence();
  if (!absent.empty()) GTEST_SKIP() << absent;
  int passed = 0;
  for (const std::string& id : kPathCases) {
    CheckOptions options;
    options.case_id = id;
    FixtureManifest manifest;
    auto plan = plan_check(options, manifest);
    ASSERT_TRUE(plan.is_ok()) << id << ": " << plan.status().message;
    ASSERT_EQ(plan->size(), 1u) << id;
    const CaseResult r = run_case(plan->front(), manifest, options);
    if (r.status == StatusCode::ok) {
      ++passed;
    } else {
      ADD_FAILURE() << r.verdict() << " " << r.case_id << "\n  " << r.reason
                    << "\n  rerun: " << repro_command(r, options);
    }
  }
  EXPECT_EQ(passed, static_cast<int>(kPathCases.size()));
}

// ---------------------------------------------------------------------------------------------
// Layernorm on rows whose variance is zero or far below their squared mean, and rows whose first
// element is an outlier (the shift of norm_rows.cuh's statistics), at the lengths of every CUDA
// layernorm kernel: a warp per row (64), a block per row (1000), the pipe kernel (3000, 16-bit)
// or the packed one (3000 f32, 3001), the register kernel at 32 per thread (12000), the long
// kernel cached (20000) and uncached (60000). Against float64 on the rounded inputs with the
// normalization tolerance; a constant row must give b exactly, as torch does.

// Row r of a `cols`-column tensor: kind r % 6.
double layernorm_input(int64_t r, int64_t c, uint64_t noise) {
  const double u = static_cast<double>(noise >> 11) / 9007199254740992.0 - 0.5;  // [-0.5, 0.5)
  switch (r % 6) {
    case 0: return 0.1234567;                      // constant
    case 1: return -3.3;                           // constant
    case 2: return 1000.0 + 0.04 * u;              // variance far below the squared mean
    case 3: return -5e4 + 0.4 * u;                 // the same, negative, f16's range
    case 4: return c == 0 ? 1e4 : 4.0 * u;         // an outlier in the shift's column
    default: return 100.0 + 16.0 * u;              // the mean_offset fixture's kind
  }
}

// "" when every constant row of `got` (kinds 0 and 1) equals b exactly; else the first that does
// not.
std::string first_constant_row_miss(const Tensor& got, DType dtype, int64_t rows, int64_t cols,
                                    const std::vector<double>& b) {
  for (int64_t r = 0; r < rows; ++r) {
    if (r % 6 > 1) continue;
    for (int64_t c = 0; c < cols; ++c) {
      const double y = load_element(got.host_data(), dtype, r * cols + c);
      if (y != b[c]) {
        char why[160];
        std::snprintf(why, sizeof(why), "constant row %lld column %lld gives %.9g, not b = %.9g",
                      static_cast<long long>(r), static_cast<long long>(c), y, b[c]);
        return why;
      }
    }
  }
  return "";
}

TEST(CudaLayerNorm, RowsOfLittleOrNoVarianceMatchTheReference) {
  const std::string absent = cuda_absence();
  if (!absent.empty()) GTEST_SKIP() << absent;
  const double eps = 1e-5;
  int ran = 0;
  std::vector<std::string> skipped;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16})
    for (int64_t cols : {int64_t{64}, int64_t{1000}, int64_t{3000}, int64_t{3001}, int64_t{12000},
                         int64_t{20000}, int64_t{60000}}) {
      const int64_t rows = cols >= 20000 ? 12 : 300;  // several rows per persistent block
      uint64_t state = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(cols);
      const auto next = [&state] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return state;
      };
      std::vector<double> x(static_cast<size_t>(rows * cols)), w(cols), b(cols);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = layernorm_input(r, c, next());
      for (int64_t c = 0; c < cols; ++c) {
        w[c] = 0.5 + static_cast<double>(next() >> 11) / 9007199254740992.0;
        b[c] = static_cast<double>(next() >> 11) / 9007199254740992.0 - 0.5;
      }
      x = testing::rounded_to(dtype, x);
      w = testing::rounded_to(dtype, w);
      b = testing::rounded_to(dtype, b);
      auto expected = empty_tensor(scratch_host(), DType::f64, {rows, cols});
      ASSERT_TRUE(expected.is_ok()) << expected.status().message;
      double sum_sq = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const double* xr = x.data() + r * cols;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; ++c) mean += xr[c];
        mean /= static_cast<double>(cols);
        for (int64_t c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
        var /= static_cast<double>(cols);
        for (int64_t c = 0; c < cols; ++c) {
          const double y = (xr[c] - mean) / std::sqrt(var + eps) * w[c] + b[c];
          store_element(expected->host_data(), DType::f64, r * cols + c, y);
          sum_sq += y * y;
        }
      }
      const Tolerance tol = tolerance_for(ToleranceClass::normalization, dtype,
                                          std::sqrt(sum_sq / static_cast<double>(rows * cols)));
      const Problem problem = *Problem::parse("layernorm:" + std::string(dtype_name(dtype)) + ":" +
                                              std::to_string(rows) + "x" + std::to_string(cols));
      for (const testing::Runner& runner : testing::runners(problem, skipped)) {
        if (runner.impl->backend != "cuda") continue;
        const std::string label = runner.label + " " + problem.to_string();
        std::vector<Tensor> inputs;
        for (const auto& [values, shape] : {std::pair{&x, Shape{rows, cols}}, std::pair{&w, Shape{cols}},
                                            std::pair{&b, Shape{cols}}}) {
          auto t = testing::device_tensor(*runner.device, dtype, shape, *values);
          ASSERT_TRUE(t.is_ok()) << label << ": " << t.status().message;
          inputs.push_back(*t);
        }
        auto out = empty_tensor(*runner.device, dtype, {rows, cols});
        ASSERT_TRUE(out.is_ok()) << label << ": " << out.status().message;
        OpCall call{problem, *runner.device, inputs, {*out}};
        const Status st = runner.impl->run(call);
        ASSERT_TRUE(st.is_ok()) << label << ": " << st.message;
        auto got = to_host(*out);
        ASSERT_TRUE(got.is_ok()) << label << ": " << got.status().message;
        const Metrics m = compare_outputs(*got, *expected, tol);
        std::string why;
        EXPECT_TRUE(metrics_pass(m, &why)) << label << ": " << why << " (worst at " << m.worst_coord
                                           << ": got " << m.worst_got << ", expected " << m.worst_expected << ")";
        const std::string first_miss = first_constant_row_miss(*got, dtype, rows, cols, b);
        EXPECT_TRUE(first_miss.empty()) << label << ": " << first_miss;
        ++ran;
      }
    }
  testing::print_skipped(skipped);
  EXPECT_GT(ran, 0) << "no CUDA layernorm ran";
}

}  // namespace
}  // namespace dnnb
