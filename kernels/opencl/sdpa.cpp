// sdpa on OpenCL: the flash-attention forward of sdpa.cl (one work-group per batch x head and
// block of query rows, k and v tiles in local memory, online softmax in f32), writing o in the
// problem dtype and lse in f32. Every operand is read through its strides (a padded q needs no
// copy). Tiles and build options: sdpa_launch.h.
#include "kernels/opencl/sdpa_cl.h"
#include "kernels/opencl/sdpa_launch.h"

namespace dnnb::opencl {
namespace {

// Local bytes of sdpa_fwd at rows x walk = SDPA_BQ x SDPA_BK: q, k and v tiles, s and p.
size_t forward_local_bytes(const ops::SdpaDesc& d, const SdpaTiles& t) {
  const int64_t kw = t.width4(d.d), vw = t.width4(d.dv);
  return static_cast<size_t>(16 * (t.rows * kw + t.walk * kw + t.walk * vw) + 4 * 2 * t.rows * t.walk);
}

Status run_sdpa(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  auto d = ops::sdpa_desc(call.problem);
  if (!d) return d.status();
  DNNB_TRY(check_sdpa_call(call, *d, false));
  const Tensor& q = call.inputs[0];
  const Tensor& k = call.inputs[1];
  const Tensor& v = call.inputs[2];
  const Tensor& mask = d->mask ? call.inputs[3] : q;  // not read without a mask
  const Tensor& o = call.outputs[0];
  const Tensor& lse = call.outputs[1];
  auto tiles = sdpa_tiles(**device, *d, [&](const SdpaTiles& t) { return forward_local_bytes(*d, t); }, "sdpa");
  if (!tiles) return tiles.status();
  static const std::string source = program_source({opencl_source::sdpa_body, opencl_source::sdpa});
  const std::string options = sdpa_options(**device, call.problem.dtype, *d, tiles->lanes,
                                           "-DSDPA_BQ=" + std::to_string(tiles->rows) +
                                               " -DSDPA_BK=" + std::to_string(tiles->walk));
  auto kernel = opencl_kernel(**device, "sdpa", source, "sdpa_fwd", options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(q)).add(sdpa_view(q)).add(cl_buffer(k)).add(sdpa_view(k)).add(cl_buffer(v)).add(sdpa_view(v));
  args.add(cl_buffer(mask)).add(sdpa_view(mask)).add(cl_buffer(o)).add(sdpa_view(o));
  args.add(cl_buffer(lse)).add(sdpa_view(lse)).add(sdpa_dims(*d));
  args.add(static_cast<cl_float>(d->scale)).add(static_cast<cl_float>(d->softcap));
  DNNB_TRY(args.status());
  const int64_t groups = d->batch * d->heads * sdpa_ceil_div(d->sq, tiles->rows);
  return launch_sdpa_tiles(**device, *kernel, groups, *tiles, "sdpa/sdpa_fwd");
}

bool register_sdpa() { return register_opencl("sdpa", float_dtypes(), run_sdpa); }

}  // namespace
DNNB_REGISTER(register_sdpa());
}  // namespace dnnb::opencl
