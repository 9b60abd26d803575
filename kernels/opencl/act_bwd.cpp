// gelu_bwd and silu_bwd on OpenCL: dx = dy f'(x) through the binary elementwise kernels
// (binary_body.cl, run_binary: x as a, dy as b), the slopes in gelu_bwd.cl / silu_bwd.cl after
// act_bwd_common.cl's sigmoid pair; f32 math on every dtype, dx rounded once. gelu's tanh form is
// its own program (DNNB_GELU_TANH defined ahead of gelu_bwd.cl).
#include "kernels/opencl/act_bwd_common_cl.h"
#include "kernels/opencl/act_bwd_lanes_cl.h"
#include "kernels/opencl/binary_body_cl.h"
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/gelu_bwd_cl.h"
#include "kernels/opencl/row_body_cl.h"
#include "kernels/opencl/silu_bwd_cl.h"
#include "suites/ops/act_bwd_common.h"

namespace dnnb::opencl {
namespace {

std::string act_bwd_source(const char* define, const char* op_source) {
  return program_source({define, opencl_source::act_bwd_common, op_source, opencl_source::row_body,
                         opencl_source::act_bwd_lanes, opencl_source::binary_body});
}

bool register_act_bwd() {
  const std::string gelu = act_bwd_source("", opencl_source::gelu_bwd);
  const std::string gelu_tanh = act_bwd_source("#define DNNB_GELU_TANH 1", opencl_source::gelu_bwd);
  const std::string silu = act_bwd_source("", opencl_source::silu_bwd);
  const bool ok = register_opencl("gelu_bwd", float_dtypes(), [gelu, gelu_tanh](OpCall& call) {
    auto tanh_form = ops::gelu_bwd_tanh(call.problem);
    if (!tanh_form) return tanh_form.status();
    return *tanh_form ? run_binary(call, "gelu_bwd_tanh", gelu_tanh) : run_binary(call, "gelu_bwd", gelu);
  });
  return register_opencl("silu_bwd", float_dtypes(), [silu](OpCall& call) { return run_binary(call, "silu_bwd", silu); }) &&
         ok;
}

}  // namespace
DNNB_REGISTER(register_act_bwd());
}  // namespace dnnb::opencl
