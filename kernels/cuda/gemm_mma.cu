// Launches of the f16/bf16 mma.sync GEMM (gemm_mma.cuh): the fast path's four operand orders
// and the general path, for __half and __nv_bfloat16.
#include <cstdlib>
#include <optional>

#include "kernels/cuda/gemm_mma.cuh"

namespace dnnb::cuda_kernels {
namespace {

using gemm::TileOrder;


// A stride the fast path can step rows by: whole 16-byte chunks (8 elements), or unused
// because the dim has one element.
bool chunk_stride(int64_t stride, int64_t extent) { return extent == 1 || stride % 8 == 0; }

// The fast path's order of an operand with rows along `rows` (M for A, N for B) and the other
// dim K: k_inner when K has unit stride, k_outer when the rows do; nullopt when neither, or when
// the other strides are not whole chunks.
std::optional<TileOrder> fast_order(const void* base, int64_t batch, int64_t s_batch, int64_t rows, int64_t s_rows,
                                    int64_t k, int64_t s_k) {
  if (!aligned16(base) || !chunk_stride(s_batch, batch)) return std::nullopt;
  if (s_k == 1 && chunk_stride(s_rows, rows)) return TileOrder::k_inner;
  if (s_rows == 1 && chunk_stride(s_k, k)) return TileOrder::k_outer;
  return std::nullopt;
}

template <typename T, TileOrder kA, TileOrder kB, bool kGeneral>
Status launch(const CudaDevice& device, const gemm::MmaArgs& args, int64_t batch) {
  constexpr int kSmem = (kGeneral ? gemm::kMmaGeneralStages : gemm::kMmaFastStages) * gemm::kMmaStageBytes;
  auto kernel = gemm::gemm_mma_kernel<T, kA, kB, kGeneral>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  const dim3 grid(static_cast<unsigned>(args.tiles_m * args.tiles_n), 1, static_cast<unsigned>(batch));
  kernel<<<grid, gemm::kMmaThreads, kSmem, device.stream()>>>(args);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <typename T>
Status launch_typed(const CudaDevice& device, const gemm::MmaArgs& args, const GemmCall& g) {
  const auto oa = fast_order(g.a, g.batch, g.a_batch, g.m, g.a_m, g.k, g.a_k);
  const auto ob = fast_order(g.b, g.batch, g.b_batch, g.n, g.b_n, g.k, g.b_k);
  if (!oa || !ob) return launch<T, TileOrder::k_inner, TileOrder::k_inner, true>(device, args, g.batch);
  const bool ai = *oa == TileOrder::k_inner, bi = *ob == TileOrder::k_inner;
  if (ai && bi) return launch<T, TileOrder::k_inner, TileOrder::k_inner, false>(device, args, g.batch);
  if (ai) return launch<T, TileOrder::k_inner, TileOrder::k_outer, false>(device, args, g.batch);
  if (bi) return launch<T, TileOrder::k_outer, TileOrder::k_inner, false>(device, args, g.batch);
  return launch<T, TileOrder::k_outer, TileOrder::k_outer, false>(device, args, g.batch);
}

}  // namespace

bool gemm_mma_fast_path(const GemmCall& g) {
  return fast_order(g.a, g.batch, g.a_batch, g.m, g.a_m, g.k, g.a_k) &&
         fast_order(g.b, g.batch, g.b_batch, g.n, g.b_n, g.k, g.b_k);
}

Status launch_gemm_mma(const CudaDevice& device, const GemmCall& g) {
  gemm::MmaArgs args{};
  args.a = static_cast<const uint16_t*>(g.a);
  args.a_batch = g.a_batch;
  args.a_m = g.a_m;
  args.a_k = g.a_k;
  args.b = static_cast<const uint16_t*>(g.b);
  args.b_batch = g.b_batch;
  args.b_k = g.b_k;
  args.b_n = g.b_n;
  args.bias = static_cast<const uint16_t*>(g.bias);
  args.bias_stride = g.bias_stride;
  args.y = g.y;
  args.y_batch = g.y_batch;
  args.y_m = g.y_m;
  args.m = static_cast<int>(g.m);
  args.n = static_cast<int>(g.n);
  args.k = static_cast<int>(g.k);
  args.tiles_m = static_cast<int>(ceil_div(g.m, gemm::kMmaBM));
  args.tiles_n = static_cast<int>(ceil_div(g.n, gemm::kMmaBN));
  args.out_f32 = g.out_dtype == DType::f32;
  const int64_t out_size = args.out_f32 ? 4 : 2;
  // Pairs of adjacent columns start at even columns: one access when every row and batch
  // starts at an even element of a 2-element-aligned y.
  args.y_pairs = reinterpret_cast<uintptr_t>(g.y) % (2 * out_size) == 0 && g.y_m % 2 == 0 &&
                 (g.batch == 1 || g.y_batch % 2 == 0);
  args.a_k_fast = std::llabs(g.a_k) <= std::llabs(g.a_m);
  args.b_k_fast = std::llabs(g.b_k) <= std::llabs(g.b_n);
  if (static_cast<int64_t>(args.tiles_m) * args.tiles_n > INT32_MAX)
    return Status::unsupported("cuda gemm: " + std::to_string(args.tiles_m) + " x " + std::to_string(args.tiles_n) +
                               " output tiles exceed the grid");
  if (g.in_dtype == DType::bf16) return launch_typed<__nv_bfloat16>(device, args, g);
  if (g.in_dtype == DType::f16) return launch_typed<__half>(device, args, g);
  return Status::unsupported(std::string("cuda mma.sync gemm has no ") + dtype_name(g.in_dtype) + " kernel");
}

}  // namespace dnnb::cuda_kernels
