// CUDA kernel paths that the ops' default check problems do not reach: rows longer than the
// register capacity (shared-memory cache, streaming re-read, rows split over blocks), the
// block-per-row register kernel with many rows, each softmax/norm variant, reductions of one
// long row, multi-dim broadcasts. Each case runs through the conformance engine against the
// reference on random inputs. Skipped where there is no CUDA device or no CUDA kernels.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"

namespace dnnb {
namespace {

// Which kernel path each case reaches is noted beside it (kernels/cuda, docs/cuda.md).
const std::vector<std::string> kPathCases = {
    // softmax: registers, 32 per thread, block per row, many rows; vector mask
    "softmax:f32:300x3000:mask=300x3000,scale=0.125@cuda",
    // softmax: shared-memory cache (smem variant) with a row-broadcast mask
    "softmax:bf16:300x3000:mask=1x3000@cuda/smem",
    // softmax: streaming two-pass variant, column-broadcast mask, softcap
    "softmax:f16:64x4096:mask=64x1,softcap=30@cuda/two_pass",
    // softmax: long rows cached in shared memory, one row fully masked
    "softmax:f32:300x20000:mask=300x20000,masked_rows=1@cuda",
    // softmax: long rows beyond the cache: x re-read
    "softmax:bf16:300x60000:scale=0.5@cuda",
    // softmax: few long rows split over blocks (stats + write launches), a fully masked row
    "softmax:f32:3x70000:mask=3x70000,masked_rows=1@cuda",
    // softmax: long cached rows that are not 16-byte aligned (padded)
    "softmax:f16:2x5x20001:layout=padded@cuda",
    // layernorm / rmsnorm: register block per row, cached long rows, uncached long rows
    "layernorm:f32:300x3000@cuda",
    "layernorm:f16:300x3000@cuda/smem",
    "layernorm:f32:300x20000@cuda",
    "layernorm:bf16:3x60000@cuda",
    "rmsnorm:f16:300x3000@cuda/smem",
    "rmsnorm:bf16:300x20000:form=gemma@cuda",
    "rmsnorm:f32:3x60000@cuda",
    "rmsnorm:bf16:333x1000:layout=transposed@cuda",
    // reductions: one long row split over blocks + finalize; few long rows; padded long rows
    "sum:f32:1000000@cuda",
    "max:bf16:3x50000@cuda",
    "norm2:f16:3x50001:layout=padded@cuda",
    "mean:f32:4096x7@cuda",
    // cross-entropy: rows split over blocks (forward merges chunk statistics), long rows
    "cross_entropy:f32:4x40000:ignore_index=-100@cuda",
    "cross_entropy:bf16:300x60000:ignore_index=-100@cuda",
    "cross_entropy_bwd:f32:4x40000:ignore_index=-100@cuda",
    "cross_entropy_bwd:bf16:300x60000@cuda",
    "cross_entropy_bwd:f32:300x3000:ignore_index=-100@cuda",
    // elementwise: broadcasts over several non-collapsible outer dims, tensor and scalar lerp
    "add:bf16:2x3x4x5x33:b=3x1x5x1@cuda",
    "lerp:f16:64x4096:w=64x1@cuda",
    "lerp:f32:7x33:weight=0.75@cuda",
    "gelu:bf16:3x5x777:layout=transposed@cuda",
};

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

TEST(CudaSmoke, KernelPathsMatchReference) {
  bool compiled = false;
  for (const auto& impl : Registry::instance().implementations())
    compiled |= impl.backend == "cuda";
  if (!compiled)
    GTEST_SKIP() << "no CUDA device: the CUDA kernels are not compiled into this build";
  if (DeviceSet::instance().first(DeviceKind::cuda) == nullptr) {
    std::string why = DeviceSet::instance().absence_reason(DeviceKind::cuda);
    if (why.rfind("no CUDA device", 0) != 0) why = "no CUDA device: " + why;
    GTEST_SKIP() << why;
  }
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

}  // namespace
}  // namespace dnnb
