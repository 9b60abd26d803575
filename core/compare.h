// Comparing an output with the expected (float64) values: error metrics, the tolerance
// policy per dtype and op class (reasons in docs/conformance.md), the worst element as a
// coordinate, and the checks that catch unwritten or "mistrusted" outputs.
#pragma once
#include <string>

#include "core/registry.h"
#include "core/tensor.h"

namespace dnnb {

struct Tolerance {
  double rtol = 0;  // relative to |expected|
  double atol = 0;  // absolute, already scaled to this output's magnitude
  std::string describe() const;
};

// The policy: rtol from (class, dtype); atol = rtol * rms(expected) for inexact classes (the
// output's natural scale absorbs cancellation near zero), or the dtype's smallest subnormal
// for exact ops.
Tolerance tolerance_for(ToleranceClass c, DType dtype, double expected_rms);
double dtype_epsilon(DType dtype);  // distance from 1 to the next value

// A dot_product output (docs/conformance.md, "Sums of products"): each element sums K products
// in f32, whose rounding error in any order is bounded with high probability by
// lambda * sqrt(K) * u * sum|a||b| (Higham and Mary, SIAM J. Sci. Comput. 2019), u = 2^-24;
// inputs rounded inside the kernel (tf32) add 2 * u_in * sum|a||b|. `magnitude_rms` is the rms
// over the output of sum|a||b|; rtol is the output dtype's own rounding (one ulp).
Tolerance dot_product_tolerance(DType output, const DotProductError& error, double magnitude_rms);

struct Metrics {
  int64_t count = 0;
  double max_abs = 0;
  double max_rel = 0;          // over elements with expected != 0
  double rel_l2 = 0;           // ||got - expected|| / ||expected||
  int64_t nan_mismatch = 0;    // NaN in one and not the other
  int64_t inf_mismatch = 0;    // Inf in one and not the other, or of another sign
  int64_t max_ulp = 0;         // in the output dtype, against expected rounded to it
  int64_t violations = 0;      // elements outside the tolerance
  double worst_ratio = 0;      // max error / allowed error
  std::string worst_coord;     // "[3, 17]"
  double worst_got = 0, worst_expected = 0;
  double zero_fraction = 0;    // of the output
  double expected_zero_fraction = 0;
  double expected_rms = 0;
};

// `got` in any dtype (host, contiguous or not), `expected` f64 of the same shape.
Metrics compare_outputs(const Tensor& got, const Tensor& expected, const Tolerance& tol);
// Fails: violations, NaN/Inf mismatches, or "mistrusted" (mostly zeros where expected is not).
bool metrics_pass(const Metrics& m, std::string* why);

}  // namespace dnnb
