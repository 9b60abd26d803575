// sdpa_bwd on OpenCL (sdpa_bwd.cl): D_i = do_i . o_i into device scratch (sdpa_bwd_dot), then dq
// per block of query rows over the keys (sdpa_bwd_dq, which also leaves each row's softmax norm
// in scratch), then dk and dv per block of keys over the queries of every head of the kv head's
// group (sdpa_bwd_dkdv): no atomics, each output written once, in this order on the in-order
// queue. Every operand is read through its strides. Tiles and build options:
// sdpa_launch.h.
#include "kernels/opencl/sdpa_bwd_cl.h"
#include "kernels/opencl/sdpa_launch.h"

namespace dnnb::opencl {
namespace {

// Local bytes of sdpa_bwd_dq at SDPA_BQ x SDPA_BK: q, do, k and v tiles, dS, the lanes' sums.
size_t dq_local_bytes(const ops::SdpaDesc& d, const SdpaTiles& t) {
  const int64_t kw = t.width4(d.d), vw = t.width4(d.dv);
  return static_cast<size_t>(16 * (t.rows + t.walk) * (kw + vw) + 4 * (t.rows * t.walk + t.rows * t.lanes));
}

// Local bytes of sdpa_bwd_dkdv at SDPA_BN x SDPA_BM: k, v, q and do tiles, p and dS, lse, D and
// the norm.
size_t dkdv_local_bytes(const ops::SdpaDesc& d, const SdpaTiles& t) {
  const int64_t kw = t.width4(d.d), vw = t.width4(d.dv);
  return static_cast<size_t>(16 * (t.rows + t.walk) * (kw + vw) + 4 * (2 * t.rows * t.walk + 3 * t.walk));
}

Status run_sdpa_bwd(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  auto d = ops::sdpa_desc(call.problem);
  if (!d) return d.status();
  DNNB_TRY(check_sdpa_call(call, *d, true));
  const size_t n_qkv = d->mask ? 4 : 3;
  const Tensor& q = call.inputs[0];
  const Tensor& k = call.inputs[1];
  const Tensor& v = call.inputs[2];
  const Tensor& mask = d->mask ? call.inputs[3] : q;  // not read without a mask
  const Tensor& o = call.inputs[n_qkv];
  const Tensor& dout = call.inputs[n_qkv + 1];
  const Tensor& lse = call.inputs[n_qkv + 2];
  const Tensor& dq = call.outputs[0];
  const Tensor& dk = call.outputs[1];
  const Tensor& dv = call.outputs[2];
  auto dq_tiles = sdpa_tiles(**device, *d, [&](const SdpaTiles& t) { return dq_local_bytes(*d, t); }, "sdpa_bwd");
  if (!dq_tiles) return dq_tiles.status();
  auto kv_tiles = sdpa_tiles(**device, *d, [&](const SdpaTiles& t) { return dkdv_local_bytes(*d, t); }, "sdpa_bwd");
  if (!kv_tiles) return kv_tiles.status();
  static const std::string source = program_source({opencl_source::sdpa_body, opencl_source::sdpa_bwd});
  const std::string options =
      sdpa_options(**device, call.problem.dtype, *d, dq_tiles->lanes,
                   "-DSDPA_BQ=" + std::to_string(dq_tiles->rows) + " -DSDPA_BK=" + std::to_string(dq_tiles->walk) +
                       " -DSDPA_BN=" + std::to_string(kv_tiles->rows) + " -DSDPA_BM=" + std::to_string(kv_tiles->walk));
  auto dot = opencl_kernel(**device, "sdpa_bwd", source, "sdpa_bwd_dot", options);
  if (!dot) return dot.status();
  auto dq_kernel = opencl_kernel(**device, "sdpa_bwd", source, "sdpa_bwd_dq", options);
  if (!dq_kernel) return dq_kernel.status();
  auto kv_kernel = opencl_kernel(**device, "sdpa_bwd", source, "sdpa_bwd_dkdv", options);
  if (!kv_kernel) return kv_kernel.status();

  const int64_t rows = d->batch * d->heads * d->sq;
  auto dd = (*device)->scratch(2 * static_cast<size_t>(rows) * sizeof(cl_float));  // D, then the norm
  if (!dd) return dd.status();
  const ClSdpaDims dims = sdpa_dims(*d);
  const cl_float scale = static_cast<cl_float>(d->scale);
  const cl_float softcap = static_cast<cl_float>(d->softcap);

  KernelArgs dot_args(*dot);
  dot_args.add(cl_buffer(o)).add(sdpa_view(o)).add(cl_buffer(dout)).add(sdpa_view(dout)).add(*dd).add(dims);
  DNNB_TRY(dot_args.status());
  DNNB_TRY(launch_flat(**device, *dot, rows, "sdpa_bwd/sdpa_bwd_dot", 1));

  // The operands both gradient kernels read, in their order.
  auto add_inputs = [&](KernelArgs& args) {
    args.add(cl_buffer(q)).add(sdpa_view(q)).add(cl_buffer(k)).add(sdpa_view(k)).add(cl_buffer(v)).add(sdpa_view(v));
    args.add(cl_buffer(mask)).add(sdpa_view(mask)).add(cl_buffer(dout)).add(sdpa_view(dout));
    args.add(cl_buffer(lse)).add(sdpa_view(lse)).add(*dd);
  };
  KernelArgs dq_args(*dq_kernel);
  add_inputs(dq_args);
  dq_args.add(cl_buffer(dq)).add(sdpa_view(dq)).add(dims).add(scale).add(softcap);
  DNNB_TRY(dq_args.status());
  DNNB_TRY(launch_sdpa_tiles(**device, *dq_kernel, d->batch * d->heads * sdpa_ceil_div(d->sq, dq_tiles->rows),
                             *dq_tiles, "sdpa_bwd/sdpa_bwd_dq"));

  KernelArgs kv_args(*kv_kernel);
  add_inputs(kv_args);
  kv_args.add(cl_buffer(dk)).add(sdpa_view(dk)).add(cl_buffer(dv)).add(sdpa_view(dv)).add(dims).add(scale).add(softcap);
  DNNB_TRY(kv_args.status());
  return launch_sdpa_tiles(**device, *kv_kernel, d->batch * d->kv_heads * sdpa_ceil_div(d->sk, kv_tiles->rows),
                           *kv_tiles, "sdpa_bwd/sdpa_bwd_dkdv");
}

bool register_sdpa_bwd() { return register_opencl("sdpa_bwd", float_dtypes(), run_sdpa_bwd); }

}  // namespace
DNNB_REGISTER(register_sdpa_bwd());
}  // namespace dnnb::opencl
