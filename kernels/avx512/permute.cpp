// permute: y = x.permute(perm).contiguous(): the permuted view of x (strides only, no copy)
// copied into y by the layout copy engine (strided_copy.h): rows with memcpy when the last
// dim stays last, 16 x 16 register transposes when it moves. Bit-exact.
#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/strided_copy.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::avx512 {
namespace {

Status permute_supports(const Problem& p, const DeviceRuntime&) {
  auto order = ops::permute_order(p);
  return order ? Status::ok() : order.status();
}

Status run_permute(OpCall& call) {
  auto order = ops::permute_order(call.problem);
  if (!order) return order.status();
  auto view = call.inputs.at(0).permute(*order);
  if (!view) return view.status();
  return copy_view(call.outputs.at(0), *view);
}

DNNB_REGISTER(register_kernel("permute", {DType::f32, DType::f16, DType::bf16}, permute_supports, run_permute));

}  // namespace
}  // namespace dnnb::avx512
