// mlstm_step on OpenCL (mlstm_step.cl): one token of the recurrent form, one work-group per batch
// x head and tile of v's columns, each item updating one column of the state C and forming its
// h. Writes h in the problem dtype and c_new, n_new, m_new in f32; every operand is read through
// its strides.
#include "kernels/opencl/mlstm_launch.h"
#include "kernels/opencl/mlstm_step_cl.h"

namespace dnnb::opencl {
namespace {

// Items (= columns of v) per work-group: 64 (two warps on NVIDIA; DV 256 gives four groups per
// head, so a decode batch of 16 heads fills 64 groups).
constexpr int64_t kStepItems = 64;

Status run_mlstm_step(OpCall& call) {
  auto run = mlstm_run(call);
  if (!run) return run.status();
  OpenCLDevice& device = *run->device;
  const ops::MlstmDesc& d = run->d;
  const DType dtype = run->dtype;
  if (d.s != 1)
    return Status::bad_input("opencl mlstm_step: the shape's S is " + std::to_string(d.s) +
                             "; a step takes one token (S = 1)");
  const Shape qk{d.batch, d.heads, d.dqk}, vs{d.batch, d.heads, d.dv}, g{d.batch, d.heads};
  DNNB_TRY(check_mlstm_call(call,
                            {{"q", qk, dtype},
                             {"k", qk, dtype},
                             {"v", vs, dtype},
                             {"i", g, DType::f32},
                             {"f", g, DType::f32},
                             {"c", ops::mlstm_c_state_shape(d), DType::f32},
                             {"n", ops::mlstm_n_state_shape(d), DType::f32},
                             {"m", ops::mlstm_m_state_shape(d), DType::f32}},
                            {{"h", vs, dtype},
                             {"c_new", ops::mlstm_c_state_shape(d), DType::f32},
                             {"n_new", ops::mlstm_n_state_shape(d), DType::f32},
                             {"m_new", ops::mlstm_m_state_shape(d), DType::f32}}));
  static const std::string source = mlstm_source(opencl_source::mlstm_step);
  const std::string options =
      mlstm_options(device, dtype, d, 1, "-DSDPA_BQ=1 -DSDPA_BK=1 -DMLSTM_WG=" + std::to_string(kStepItems));
  auto kernel = opencl_kernel(device, "mlstm_step", source, "mlstm_step", options);
  if (!kernel) return kernel.status();
  DNNB_TRY(set_mlstm_forward_args(*kernel, call, call.inputs.size(), nullptr, d));
  return launch_mlstm_groups(device, *kernel, d.batch * d.heads * sdpa_ceil_div(d.dv, kStepItems),
                             static_cast<size_t>(kStepItems), "mlstm_step/mlstm_step");
}

bool register_mlstm_step() { return register_opencl("mlstm_step", float_dtypes(), run_mlstm_step); }

}  // namespace
DNNB_REGISTER(register_mlstm_step());
}  // namespace dnnb::opencl
