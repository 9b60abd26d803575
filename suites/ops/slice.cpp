// slice: y = x.narrow(dim, start, len).contiguous() (dim default last, start default 0).
// A pure copy: tolerance class selection. FLOP model: none; bytes: the slice read, y written.
#include "reference/layout.h"
#include "reference/register.h"
#include "suites/ops/layout_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> slice_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"dim", "start", "len"}));
  auto d = ops::slice_desc(p);
  if (!d) return d.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("x", p.dtype, p.shape)};
  sig.outputs = {ops::tensor_spec("y", p.dtype, d->y)};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec make_slice_spec() {
  OpSpec spec = ops::op_spec("2", "slice", "x.narrow(dim, start, len).contiguous()", ops::float_dtypes(),
                             ToleranceClass::selection);
  spec.check_problems = {"8x40:dim=1,len=17,start=5",     "12x9:dim=0,len=4,start=3",
                         "2x10x6:dim=1,len=3,start=7",    "3x5:dim=1,len=5,start=0",
                         "333x1000:dim=1,len=777,start=111", "64x4096:dim=0,layout=transposed,len=63,start=1",
                         "4097:len=97,start=4000"};
  // A slice of 128 MiB of f32 read and written: the second half of every row, and a block of rows.
  spec.bench_problems = {"8192x8192:dim=1,len=4096,start=4096", "16384x4096:dim=0,len=8192,start=4096"};
  spec.signature = slice_signature;
  spec.flops = [](const Problem&) { return 0.0; };
  // The slice is read, not the whole of x.
  spec.bytes = [](const Problem& p) {
    auto d = ops::slice_desc(p);
    return d ? 2.0 * static_cast<double>(shape_numel(d->y) * dtype_size(p.dtype)) : 0.0;
  };
  spec.reference = reference::slice;
  return spec;
}

DNNB_REGISTER(register_op(make_slice_spec()));

}  // namespace
}  // namespace dnnb
