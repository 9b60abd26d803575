#include "suites/ops/matmul_q_desc.h"

#include <string>

namespace dnnb::ops {
namespace {

Result<GemmDesc> mnk(const Problem& problem) {
  const auto& s = problem.shape;
  if (s.size() != 3)
    return Status::bad_input(problem.op + ": shape " + shape_to_string(s) + " is not MxNxK (torch's 2-D product)");
  for (int64_t d : s)
    if (d < 1) return Status::bad_input(problem.op + ": shape " + shape_to_string(s) + " has an empty dim");
  GemmDesc d;
  d.m = s[0];
  d.n = s[1];
  d.k = s[2];
  return d;
}

// An 8-bit float operand's dtype: `<name>.dt` when given (f8_e4m3fn or f8_e5m2), else e4m3fn.
Result<DType> f8_operand(const Problem& problem, const std::string& name) {
  const std::string key = name + ".dt";
  if (!problem.has(key)) return DType::f8_e4m3fn;
  auto dtype = parse_dtype(problem.get(key));
  if (!dtype || (*dtype != DType::f8_e4m3fn && *dtype != DType::f8_e5m2))
    return Status::bad_input(problem.op + ": parameter " + key + "=" + problem.get(key) +
                             " is not f8_e4m3fn or f8_e5m2");
  return *dtype;
}

}  // namespace

Result<GemmDesc> matmul_i8_desc(const Problem& problem) {
  auto d = mnk(problem);
  if (!d) return d;
  if (d->k > kMatmulI8MaxK)
    return Status::bad_input(problem.op + ": K=" + std::to_string(d->k) + " (shape " + shape_to_string(problem.shape) +
                             ") can overflow the int32 sum: K x 128 x 128 must stay below 2^31, K <= " +
                             std::to_string(kMatmulI8MaxK));
  return d;
}

Result<MatmulF8Desc> matmul_f8_desc(const Problem& problem) {
  auto g = mnk(problem);
  if (!g) return g.status();
  MatmulF8Desc d;
  d.gemm = *g;
  const std::string scale = problem.get("scale", "tensor");
  if (scale == "row") {
    d.scale = F8Scale::row;
  } else if (scale != "tensor") {
    return Status::bad_input(problem.op + ": parameter scale=" + scale + " is not tensor or row");
  }
  auto a = f8_operand(problem, "a");
  if (!a) return a.status();
  auto b = f8_operand(problem, "b");
  if (!b) return b.status();
  d.a = *a;
  d.b = *b;
  if (d.a == DType::f8_e5m2 && d.b == DType::f8_e5m2)
    return Status::bad_input(problem.op + ": parameters a.dt=f8_e5m2 and b.dt=f8_e5m2: e5m2 x e5m2 is not a "
                             "torch._scaled_mm product on CUDA (one operand must be f8_e4m3fn)");
  if (problem.has("y.dt")) {
    auto y = parse_dtype(problem.get("y.dt"));
    if (!y || (*y != DType::bf16 && *y != DType::f16 && *y != DType::f32))
      return Status::bad_input(problem.op + ": parameter y.dt=" + problem.get("y.dt") + " is not bf16, f16 or f32");
    if (d.scale == F8Scale::row && *y != DType::bf16)
      return Status::bad_input(problem.op + ": parameter y.dt=" + problem.get("y.dt") +
                               " with scale=row: row-wise scaling gives bf16 only (torch._scaled_mm on CUDA)");
    d.y = *y;
  }
  return d;
}

}  // namespace dnnb::ops
