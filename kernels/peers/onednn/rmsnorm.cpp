// rmsnorm: oneDNN expresses it as layer normalization with the rms_norm flag, which the
// installed oneDNN (2.6) does not have (it arrived in 3.1). Registered so that the support
// table says why there is no peer number, rather than showing nothing.
#include <oneapi/dnnl/dnnl_version.h>

#include "kernels/peers/onednn/onednn_common.h"

namespace dnnb::onednn {
namespace {

Status rmsnorm_expressible(const Problem&) {
  return Status::unsupported("onednn " + std::to_string(DNNL_VERSION_MAJOR) + "." +
                             std::to_string(DNNL_VERSION_MINOR) +
                             " layer normalization has no rms_norm flag (added in oneDNN 3.1)");
}

Result<Prepared> make_rmsnorm(const Problem& p, const std::vector<Layout>&, const std::vector<Layout>&) {
  return rmsnorm_expressible(p);
}

PeerOp rmsnorm_peer() {
  PeerOp op;
  op.op = "rmsnorm";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.expressible = rmsnorm_expressible;
  op.make = make_rmsnorm;
  return op;
}

DNNB_REGISTER(register_peer(rmsnorm_peer()));

}  // namespace
}  // namespace dnnb::onednn
