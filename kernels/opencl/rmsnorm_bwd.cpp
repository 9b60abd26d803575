// rmsnorm_bwd on OpenCL: the shared backward-norm kernels of norm_bwd.cl (uncentered; form=gemma adds 1 to w).
#include "kernels/opencl/norm_bwd.h"

namespace dnnb::opencl {
namespace {

bool register_rmsnorm_bwd() {
  return register_opencl("rmsnorm_bwd", float_dtypes(), [](OpCall& call) { return run_norm_bwd(call, false); });
}

}  // namespace
DNNB_REGISTER(register_rmsnorm_bwd());
}  // namespace dnnb::opencl
