#include "suites/ops/gemm_desc.h"

#include <string>

namespace dnnb::ops {
namespace {

Result<bool> flag_param(const Problem& problem, const std::string& key) {
  const std::string value = problem.get(key, "0");
  if (value != "0" && value != "1")
    return Status::bad_input(problem.op + ": parameter " + key + "=" + value + " is not 0 or 1");
  return value == "1";
}

Status positive_dims(const Problem& problem) {
  for (int64_t d : problem.shape)
    if (d < 1) return Status::bad_input(problem.op + ": shape " + shape_to_string(problem.shape) + " has an empty dim");
  return Status::ok();
}

}  // namespace

Result<GemmDesc> matmul_desc(const Problem& problem) {
  const auto& s = problem.shape;
  if (s.size() != 3 && s.size() != 4)
    return Status::bad_input("matmul: shape " + shape_to_string(s) + " is not MxNxK or BxMxNxK");
  DNNB_TRY(positive_dims(problem));
  GemmDesc d;
  const size_t o = s.size() - 3;
  d.batch = o ? s[0] : 1;
  d.m = s[o];
  d.n = s[o + 1];
  d.k = s[o + 2];
  auto tf32 = flag_param(problem, "tf32");
  if (!tf32) return tf32.status();
  d.tf32 = *tf32;
  if (d.tf32 && problem.dtype != DType::f32)
    return Status::bad_input("matmul: tf32=1 is a mode of f32 problems, not of " + std::string(dtype_name(problem.dtype)));
  return d;
}

Result<GemmDesc> linear_desc(const Problem& problem) {
  if (problem.shape.size() != 3)
    return Status::bad_input("linear: shape " + shape_to_string(problem.shape) + " is not MxNxK (tokens x out x in)");
  DNNB_TRY(positive_dims(problem));
  GemmDesc d;
  d.m = problem.shape[0];
  d.n = problem.shape[1];
  d.k = problem.shape[2];
  auto bias = flag_param(problem, "bias");
  if (!bias) return bias.status();
  d.bias = *bias;
  return d;
}

Result<GemmDesc> linear_bwd_desc(const Problem& problem) {
  const auto& s = problem.shape;
  if (s.size() != 3 && s.size() != 4)
    return Status::bad_input("linear_bwd: shape " + shape_to_string(s) +
                             " is not MxNxK or BxMxNxK (tokens x out x in, x [B, M, K])");
  DNNB_TRY(positive_dims(problem));
  GemmDesc d;
  const size_t o = s.size() - 3;
  d.batch = o ? s[0] : 1;
  d.m = s[o];
  d.n = s[o + 1];
  d.k = s[o + 2];
  auto bias = flag_param(problem, "bias");
  if (!bias) return bias.status();
  d.bias = *bias;
  return d;
}

Result<GemmDesc> gemv_desc(const Problem& problem) {
  if (problem.shape.size() != 2)
    return Status::bad_input("gemv: shape " + shape_to_string(problem.shape) + " is not NxK (the matrix)");
  DNNB_TRY(positive_dims(problem));
  auto batch = problem.get_int("batch", 1);
  if (!batch) return Status::bad_input("gemv: " + batch.status().message);
  if (*batch < 1 || *batch > 16)
    return Status::bad_input("gemv: parameter batch=" + problem.get("batch") + " is not in 1..16 (larger batches are linear)");
  GemmDesc d;
  d.m = *batch;
  d.n = problem.shape[0];
  d.k = problem.shape[1];
  return d;
}

double gemm_flops(const GemmDesc& d) {
  const double mn = static_cast<double>(d.batch) * static_cast<double>(d.m) * static_cast<double>(d.n);
  return 2.0 * mn * static_cast<double>(d.k) + (d.bias ? mn : 0.0);
}

DotProductError gemm_error(const GemmDesc& d) { return DotProductError{d.k, d.tf32 ? 0x1p-11 : 0.0}; }

std::string tensor_core_unit(const Problem& problem) {
  switch (problem.dtype) {
    case DType::bf16: return "bf16_tensor";
    case DType::f16: return "f16_tensor";
    default: return problem.get("tf32") == "1" ? "tf32_tensor" : "f32_fma";
  }
}

TensorSpec product_output(const Problem& problem, Shape shape) {
  TensorSpec y;
  y.name = "y";
  y.dtype = problem.dtype;
  y.shape = std::move(shape);
  if (problem.dtype == DType::f16 || problem.dtype == DType::bf16) y.dtype_choices = {DType::f32};
  return y;
}

}  // namespace dnnb::ops
