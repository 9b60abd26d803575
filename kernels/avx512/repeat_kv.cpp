// repeat_kv: y [B, H * R, S, D] = x [B, H, S, D].repeat_interleave(R, dim=1): y seen as
// [B, H, R, S, D] is a copy of x with a stride-0 dim R, done by the layout copy engine
// (strided_copy.h): each head's S x D block is copied R times (memcpy of rows, or whole
// blocks when x is contiguous). Bit-exact.
#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/strided_copy.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::avx512 {
namespace {

Status repeat_kv_supports(const Problem& p, const DeviceRuntime&) {
  auto d = ops::repeat_kv_desc(p);
  return d ? Status::ok() : d.status();
}

Status run_repeat_kv(OpCall& call) {
  auto d = ops::repeat_kv_desc(call.problem);
  if (!d) return d.status();
  const Tensor& x = call.inputs.at(0);
  const Tensor& y = call.outputs.at(0);
  const Shape& s = x.shape;
  const int64_t R = d->n_rep;
  // y [B, H*R, S, D] with strides (yb, yh, ys, yd): head h * R + r is at h * R * yh + r * yh.
  std::vector<CopyDim> dims = {{s[0], x.strides[0], y.strides[0]},
                               {s[1], x.strides[1], y.strides[1] * R},
                               {R, 0, y.strides[1]},
                               {s[2], x.strides[2], y.strides[2]},
                               {s[3], x.strides[3], y.strides[3]}};
  return strided_copy(y.host_data(), x.host_data(), static_cast<int>(dtype_size(x.dtype)), std::move(dims));
}

DNNB_REGISTER(register_kernel("repeat_kv", {DType::f32, DType::f16, DType::bf16}, repeat_kv_supports,
                              run_repeat_kv));

}  // namespace
}  // namespace dnnb::avx512
