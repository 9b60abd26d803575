// Host side of the OpenCL rope kernel (rope.cl), shared by rope (sign +1) and rope_bwd (sign -1):
// checks the call, passes every stride and the inverse frequencies (ops::rope_inv_freq, by value:
// rot <= 2 * kRopeMaxPairs), and launches one work-item per unit of a row and position
// (launch_elementwise_rows: dim 0 the units, dim 1 the B*S positions).
#pragma once
#include <algorithm>
#include <string>

#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/rope_cl.h"
#include "suites/ops/rope_desc.h"

namespace dnnb::opencl {

// rope.cl's DNNB_ROPE_MAX_PAIRS: the by-value table of inverse frequencies (512 bytes, within
// the 1024 bytes of kernel arguments every OpenCL 1.2 device takes, with the other arguments).
inline constexpr int64_t kRopeMaxPairs = 128;
struct RopeFreqs {
  cl_float v[kRopeMaxPairs];
};

inline Status run_rope(OpCall& call, float sign) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("opencl " + call.problem.op + ": expected inputs (x, pos) and one output");
  auto d = ops::rope_desc(call.problem);
  if (!d) return d.status();
  const Tensor& x = call.inputs[0];
  const Tensor& pos = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (x.shape != d->x_shape() || y.shape != d->x_shape() || pos.shape != d->pos_shape() || x.dtype != y.dtype)
    return Status::bad_input("opencl " + call.problem.op + ": " + x.describe() + ", " + pos.describe() + " -> " +
                             y.describe() + " do not match " + call.problem.to_string());
  if (pos.dtype != DType::i64 && pos.dtype != DType::i32)
    return Status::unsupported("opencl " + call.problem.op + ": pos of dtype " + dtype_name(pos.dtype));
  if (d->pairs() > kRopeMaxPairs)
    return Status::unsupported("opencl " + call.problem.op + ": rot=" + std::to_string(d->rot) +
                               " exceeds the kernel's by-value table of " + std::to_string(kRopeMaxPairs) + " pairs");
  if (y.numel() == 0) return Status::ok();
  RopeFreqs freqs{};
  const auto inv = ops::rope_inv_freq(*d);
  std::copy(inv.begin(), inv.end(), freqs.v);

  static const std::string source = program_source({opencl_source::rope});
  auto kernel = opencl_kernel(**device, "rope", source, "rope_rows", build_options(**device, y.dtype));
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(cl_long{x.offset});
  for (int k = 0; k < 4; ++k) args.add(cl_long{x.strides[k]});
  args.add(cl_buffer(pos)).add(cl_long{pos.offset}).add(cl_long{pos.strides[0]}).add(cl_long{pos.strides[1]});
  args.add(cl_int{pos.dtype == DType::i32 ? 1 : 0});
  args.add(cl_buffer(y)).add(cl_long{y.offset});
  for (int k = 0; k < 4; ++k) args.add(cl_long{y.strides[k]});
  args.add(cl_long{d->batch}).add(cl_long{d->heads}).add(cl_long{d->seq}).add(cl_long{d->dim}).add(cl_long{d->rot});
  args.add(cl_int{d->form == ops::RopeForm::interleaved ? 1 : 0}).add(cl_float{sign}).add(freqs);
  DNNB_TRY(args.status());
  const int64_t units = (d->pairs() + 3) / 4 + (d->dim - d->rot + 3) / 4;
  return launch_elementwise_rows(**device, *kernel, d->batch * d->seq, units * 4, call.problem.op + "/rope_rows");
}

}  // namespace dnnb::opencl
