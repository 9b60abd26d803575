// layernorm_bwd on OpenCL: the shared backward-norm kernels of norm_bwd.cl (centered: x - mean, and db).
#include "kernels/opencl/norm_bwd.h"

namespace dnnb::opencl {
namespace {

bool register_layernorm_bwd() {
  return register_opencl("layernorm_bwd", float_dtypes(), [](OpCall& call) { return run_norm_bwd(call, true); });
}

}  // namespace
DNNB_REGISTER(register_layernorm_bwd());
}  // namespace dnnb::opencl
