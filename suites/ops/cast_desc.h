// The cast op (docs/ops-family4.md, "cast"): y = x.to(dtype) between f32, f16, bf16,
// f8_e4m3fn and f8_e5m2. The problem's dtype is the source's; the target is the output's
// `y.dt=` (the operand-dtype parameter every op takes), the source's own dtype without it (a
// copy, as torch's x.to(x.dtype)). Shared by the spec, the reference, every backend's kernel
// and tests/test_cast.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "core/problem.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::ops {

// The five dtypes a cast goes from and to, in enum order.
const std::vector<DType>& cast_dtypes();

// The target dtype: y.dt= when the problem has it, else the problem's dtype; bad_input when it
// names a dtype that is not one of cast_dtypes().
Result<DType> cast_target(const Problem& problem);

// The f32 inputs that decide a cast to `target` (bit patterns; the set core/dtype.cpp's
// encoders are tested on, suites/fixtures/gen/casts.py): every midpoint between two
// consecutive finite values of the target (and the one past its largest finite value, where
// overflow starts) with both of its f32 neighbours; every 4th finite value of a 16-bit target,
// every one of an 8-bit target; every f32 exponent field (subnormals, Inf, NaN) with 12
// mantissas; +-0, +-Inf, quiet and signalling NaNs; each with both signs. About 218,000
// values for bf16, 212,000 for f16, 7,200 for the 8-bit formats (6,156 of them the sweep and the
// specials). For target f32 (a copy) the sweep and the specials only.
std::vector<uint32_t> cast_f32_edges(DType target);

// The random case's x (docs/ops-family4.md, "Random inputs"): an 8- or 16-bit source holds
// every encoding in order (element i is encoding i mod 2^bits), so a problem of 256 or 65536
// elements (or a multiple) covers each one; an f32 source holds cast_f32_edges(target) first,
// then normal(0, 1) values scaled by powers of two sweeping the target's range.
Status fill_cast_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);

}  // namespace dnnb::ops
