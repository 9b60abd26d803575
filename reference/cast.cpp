// cast: load_element then store_element, the core's exact decode and its torch-exact encode.
// A source element is exact in f32 (every value of f16, bf16 and the fp8 formats is an f32), so
// store_element's double -> f32 step changes nothing and the conversion rounds once, as torch's
// casts do (each goes through float: c10's Half, BFloat16 and Float8 types convert from float).
#include "reference/cast.h"

#include <cstdint>

#include "reference/access.h"
#include "reference/reference.h"
#include "suites/ops/cast_desc.h"

namespace dnnb::reference {

Status cast(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto target = ops::cast_target(problem);
  if (!target) return target.status();
  // Each value stored into one element of the target and read back: the core's conversion.
  return map_elements(inputs, outputs, [dtype = *target](double x) {
    uint32_t slot = 0;  // one element of the target
    store_element(&slot, dtype, 0, x);
    return load_element(&slot, dtype, 0);
  }, "cast");
}

}  // namespace dnnb::reference
