// Host side of the GEMMs: the operands' strides into one struct argument, the batch on the
// grid's third dim; gemm_tiled (gemm.cl, a work-group of 8 x 8 items per 64 x 64 tile of y), or
// for f16/bf16 on NVIDIA gemm_mma (gemm_mma.cl, 256 items per 128 x 128 tile).
#include "kernels/opencl/gemm.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/opencl/dot_cl.h"
#include "kernels/opencl/gemm_cl.h"
#include "kernels/opencl/gemm_mma_cl.h"
#include "kernels/opencl/gemv_cl.h"
#include "kernels/opencl/product_body_cl.h"

namespace dnnb::opencl {
namespace {

// dnnb_gemm in gemm.cl, field for field.
struct ClGemm {
  cl_long m, n, k;
  cl_long a_offset, a_batch, a_row, a_col;
  cl_long b_offset, b_batch, b_row, b_col;
  cl_long y_offset, y_batch, y_row, y_col;
  cl_long bias_offset, bias_stride;
  cl_long a_k_fast, b_n_fast, has_bias, y_f32;
};
static_assert(sizeof(ClGemm) == 21 * sizeof(cl_long), "ClGemm must match dnnb_gemm in gemm.cl");

constexpr int64_t kTile = 64;            // gemm_tiled: DNNB_GEMM_TILE, rows and columns of y per work-group
constexpr size_t kItems = 8;             // gemm_tiled: work-items per dim of a work-group (8 x 8)
constexpr int64_t kMmaTile = 128;        // gemm_mma: DNNB_MMA_TILE
constexpr size_t kMmaWorkGroup = 256;    // gemm_mma: DNNB_MMA_WG
constexpr int64_t kMaxGroupsYZ = 65535;  // some drivers' limit on the grid's dims 1 and 2

// How f16/bf16 products run: gemm_tiled (f32 FMA), or gemm_mma on the tensor cores: on an NVIDIA
// device of compute capability 8.0 or more (the condition of the bf16 PTX tier, bf16_nv_ptx), or
// emulated anywhere under the test switch DNNB_OPENCL_MMA_EMULATE=1 (read on every call, so a
// test may set it; PoCL runs the kernel's tiling and fragment code that way).
enum class MmaMode { none, hardware, emulated };
MmaMode mma_mode(const OpenCLDevice& device, DType dtype) {
  if (dtype != DType::f16 && dtype != DType::bf16) return MmaMode::none;
  const char* emulate = std::getenv("DNNB_OPENCL_MMA_EMULATE");
  if (emulate != nullptr && std::strcmp(emulate, "1") == 0) return MmaMode::emulated;
  return bf16_nv_ptx(device) ? MmaMode::hardware : MmaMode::none;
}

const std::string& mma_source() {
  static const std::string source = program_source({opencl_source::product_body, opencl_source::gemm_mma});
  return source;
}

// The operand's dtype must be the program's: one program per problem dtype.
Status same_dtype(const Tensor& t, DType dtype, const char* name, const std::string& what) {
  if (t.dtype == dtype) return Status::ok();
  return Status::unsupported("opencl " + what + ": operand " + name + " is " + dtype_name(t.dtype) +
                             ", the kernel reads every input as the problem dtype " + dtype_name(dtype));
}

}  // namespace

const std::string& product_source() {
  static const std::string source = program_source(
      {opencl_source::product_body, opencl_source::gemm, opencl_source::gemv, opencl_source::dot});
  return source;
}

MatrixView matrix_view(const Tensor& t) {
  MatrixView v;
  v.tensor = &t;
  const int n = t.ndim();
  v.row = n >= 2 ? t.strides[n - 2] : 0;
  v.col = n >= 1 ? t.strides[n - 1] : 1;
  v.batch = n == 3 ? t.strides[0] : 0;
  return v;
}

MatrixView transposed(MatrixView v) {
  std::swap(v.row, v.col);
  return v;
}

Status run_gemm(OpCall& call, const ops::GemmDesc& desc, const MatrixView& a, const MatrixView& b, const Tensor* bias,
                const MatrixView& y, const std::string& what) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  const DType dtype = call.problem.dtype;
  DNNB_TRY(same_dtype(*a.tensor, dtype, "a", what));
  DNNB_TRY(same_dtype(*b.tensor, dtype, "b", what));
  if (bias != nullptr) DNNB_TRY(same_dtype(*bias, dtype, "bias", what));
  const DType y_dtype = y.tensor->dtype;
  if (y_dtype != dtype && y_dtype != DType::f32)
    return Status::unsupported("opencl " + what + ": output y of " + dtype_name(y_dtype) + " (the kernel writes " +
                               dtype_name(dtype) + " or f32)");
  const MmaMode mma = mma_mode(**device, dtype);
  const int64_t tile = mma == MmaMode::none ? kTile : kMmaTile;
  const int64_t row_tiles = (desc.m + tile - 1) / tile;
  if (row_tiles > kMaxGroupsYZ || desc.batch > kMaxGroupsYZ)
    return Status::unsupported("opencl " + what + ": " + std::to_string(desc.batch) + " batches of " +
                               std::to_string(desc.m) + " rows need more than 65535 work-groups in a grid dim");

  ClGemm g{};
  g.m = desc.m;
  g.n = desc.n;
  g.k = desc.k;
  g.a_offset = a.tensor->offset;
  g.a_batch = a.batch;
  g.a_row = a.row;
  g.a_col = a.col;
  g.b_offset = b.tensor->offset;
  g.b_batch = b.batch;
  g.b_row = b.row;
  g.b_col = b.col;
  g.y_offset = y.tensor->offset;
  g.y_batch = y.batch;
  g.y_row = y.row;
  g.y_col = y.col;
  if (bias != nullptr) {
    g.has_bias = 1;
    g.bias_offset = bias->offset;
    g.bias_stride = bias->strides.empty() ? 1 : bias->strides[0];
  }
  // Each tile load walks the operand's unit-stride dim fastest (coalesced); with no unit stride,
  // the smaller one.
  g.a_k_fast = a.col == 1 || (a.row != 1 && a.col <= a.row);
  g.b_n_fast = b.col == 1 || (b.row != 1 && b.col <= b.row);
  g.y_f32 = y_dtype == DType::f32 && dtype != DType::f32;

  auto kernel =
      mma == MmaMode::none
          ? opencl_kernel(**device, kProductProgram, product_source(), "gemm_tiled", build_options(**device, dtype))
          : opencl_kernel(**device, "gemm_mma", mma_source(), "gemm_mma",
                          build_options(**device, dtype, mma == MmaMode::emulated ? "-DDNNB_MMA_EMULATE=1" : ""));
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(*a.tensor)).add(cl_buffer(*b.tensor)).add(cl_buffer(bias != nullptr ? *bias : *a.tensor));
  args.add(cl_buffer(*y.tensor)).add(g);
  DNNB_TRY(args.status());
  const size_t col_tiles = static_cast<size_t>((desc.n + tile - 1) / tile);
  if (mma != MmaMode::none) {
    const size_t global[3] = {col_tiles * kMmaWorkGroup, static_cast<size_t>(row_tiles),
                              static_cast<size_t>(desc.batch)};
    const size_t local[3] = {kMmaWorkGroup, 1, 1};
    return enqueue(**device, *kernel, 3, global, local, what + "/gemm_mma");
  }
  const size_t global[3] = {col_tiles * kItems, static_cast<size_t>(row_tiles) * kItems,
                            static_cast<size_t>(desc.batch)};
  const size_t local[3] = {kItems, kItems, 1};
  return enqueue(**device, *kernel, 3, global, local, what + "/gemm_tiled");
}

}  // namespace dnnb::opencl
