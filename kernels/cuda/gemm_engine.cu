// The GEMM engine's dispatch (gemm.cuh): which kernel takes a product, and the registration
// helper of the product ops.
#include <algorithm>
#include <cstdio>

#include "kernels/cuda/gemm.cuh"

namespace dnnb::cuda_kernels {
namespace {

Status check_dims(const GemmCall& g) {
  if (g.batch < 1 || g.m < 1 || g.n < 1 || g.k < 1)
    return Status::bad_input("cuda gemm: empty product " + std::to_string(g.batch) + "x" + std::to_string(g.m) + "x" +
                             std::to_string(g.n) + "x" + std::to_string(g.k));
  if (g.batch > 65535)
    return Status::unsupported("cuda gemm: batch " + std::to_string(g.batch) + " exceeds the grid's z dim (65535)");
  if (std::max({g.m, g.n, g.k}) > INT32_MAX)
    return Status::unsupported("cuda gemm: dims beyond 2^31 - 1 elements");
  return Status::ok();
}

}  // namespace

Status launch_gemm(const CudaDevice& device, const GemmCall& g) {
  DNNB_TRY(check_dims(g));
  if (g.in_dtype == DType::f32) return launch_gemm_f32(device, g);
  if (g.tf32) return Status::bad_input("cuda gemm: tf32 is a mode of f32 products");
  if (gemm_wgmma_applies(g, device)) return launch_gemm_wgmma(device, g);
  return launch_gemm_mma(device, g);
}

Status expect_product_output(const Tensor& y, DType in_dtype) {
  if (!y.buffer || y.buffer->handle == nullptr) return Status::bad_input("tensor y has no device buffer");
  const bool widened = y.dtype == DType::f32 && (in_dtype == DType::f16 || in_dtype == DType::bf16);
  if (y.dtype != in_dtype && !widened)
    return Status::bad_input(std::string("tensor y is ") + dtype_name(y.dtype) + ", a product of " +
                             dtype_name(in_dtype) + " writes " + dtype_name(in_dtype) + " or f32");
  if (y.ndim() > 0 && y.shape.back() > 1 && y.strides.back() != 1)
    return Status::unsupported("cuda products write y with unit stride along its last dim, got " + y.describe());
  return Status::ok();
}

MatrixStrides matrix_strides(const Tensor& t) {
  const int n = t.ndim();
  MatrixStrides s;
  if (n >= 2) {
    s.row = t.strides[n - 2];
    s.col = t.strides[n - 1];
  } else if (n == 1) {
    s.col = t.strides[0];
  }
  if (n == 3) s.batch = t.strides[0];
  return s;
}

bool register_product(ProductImplementation p) {
  if (p.variant.empty() != p.when.empty()) {
    std::fprintf(stderr, "dnnblocks: %s %s%s%s: %s\n", p.backend.c_str(), p.op.c_str(), p.variant.empty() ? "" : "/",
                 p.variant.c_str(),
                 p.variant.empty() ? "a default has no 'when' sentence, not registered"
                                   : "an alternative needs its 'when' sentence, not registered");
    return false;
  }
  Implementation impl;
  impl.op = p.op;
  impl.backend = p.backend;
  impl.variant = std::move(p.variant);
  impl.when = std::move(p.when);
  impl.dtypes = {DType::f32, DType::f16, DType::bf16};
  impl.compute_unit = p.compute_unit;
  // The tensor-core kernels run f32 problems on the FMA units (or tf32 tensor cores).
  if (p.compute_unit == "bf16_tensor")
    impl.compute_unit_for = [](const Problem& problem, const DeviceRuntime&) { return ops::tensor_core_unit(problem); };
  const std::string backend = p.backend;
  auto extra = std::move(p.extra);
  impl.supports = [backend, extra](const Problem& problem, const DeviceRuntime& device) {
    if (device.info().kind != DeviceKind::cuda)
      return Status::unsupported(backend + " kernels run on CUDA devices, not " + device.info().id);
    if (problem.dtype != DType::f32 && problem.dtype != DType::f16 && problem.dtype != DType::bf16)
      return Status::unsupported(backend + " " + problem.op + " has no " + dtype_name(problem.dtype) + " kernel");
    return extra ? extra(problem) : Status::ok();
  };
  impl.run = std::move(p.run);
  impl.workspace_bytes = std::move(p.workspace_bytes);
  return Registry::instance().add_implementation(std::move(impl));
}

}  // namespace dnnb::cuda_kernels
