// Host side shared by the OpenCL attention kernels (sdpa.cpp, sdpa_bwd.cpp; kernels in
// sdpa_body.cl, sdpa.cl, sdpa_bwd.cl): the operands' views and the problem's dims as kernel
// arguments, the checks of a call against the signature, the choice of tile sizes, the build
// options, and the launch of one work-group per tile.
//
// Tiles: lanes (SDPA_T work-items) per row of a tile and rows x keys per work-group, the first of
// a fixed list per device type whose local memory fits (sdpa_tiles).
#pragma once
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/sdpa_body_cl.h"
#include "suites/ops/sdpa_desc.h"

namespace dnnb::opencl {

// dnnb_sdpa_view in sdpa_body.cl, field for field.
struct ClSdpaView {
  cl_long offset = 0, sb = 0, sh = 0, ss = 0, se = 0;
};
static_assert(sizeof(ClSdpaView) == 5 * sizeof(cl_long), "ClSdpaView must match dnnb_sdpa_view in sdpa_body.cl");

// dnnb_sdpa_dims in sdpa_body.cl, field for field.
struct ClSdpaDims {
  cl_long batch, heads, kv_heads, sq, sk, d, dv, causal, window, has_mask;
};
static_assert(sizeof(ClSdpaDims) == 10 * sizeof(cl_long), "ClSdpaDims must match dnnb_sdpa_dims in sdpa_body.cl");

// A [B, H, S, E] operand (q, k, v, o, do, dq, dk, dv), lse [B, H, S] or the mask [Sq, Sk].
inline ClSdpaView sdpa_view(const Tensor& t) {
  ClSdpaView v;
  v.offset = t.offset;
  const auto& s = t.strides;
  if (t.ndim() == 4) {
    v.sb = s[0], v.sh = s[1], v.ss = s[2], v.se = s[3];
  } else if (t.ndim() == 3) {
    v.sb = s[0], v.sh = s[1], v.ss = s[2];
  } else if (t.ndim() == 2) {
    v.ss = s[0], v.se = s[1];
  }
  return v;
}

inline ClSdpaDims sdpa_dims(const ops::SdpaDesc& d) {
  return ClSdpaDims{d.batch, d.heads, d.kv_heads, d.sq, d.sk, d.d, d.dv, d.causal ? 1 : 0, d.window, d.mask ? 1 : 0};
}

// Rows (queries or keys a work-group owns, `lanes` = SDPA_T work-items each) and the tile it
// walks the other side in (keys or queries, a multiple of lanes).
struct SdpaTiles {
  int64_t rows = 0, walk = 0, lanes = 8;
  // SDPA_KW4 / SDPA_VW4 of sdpa_body.cl: float4 per local row of a head dim `e`.
  int64_t width4(int64_t e) const { return lanes * (((e + 3) / 4 + lanes - 1) / lanes) + 1; }
};

// The first tiles of the device's list whose local bytes (`bytes`) fit it, or unsupported.
// GPUs (any device that is not a CPU): 8 lanes per row, at most 48 KiB of local memory (NVIDIA's
// limit of static local memory per work-group). CPU devices (PoCL): one work-item per row, 64
// rows per work-group, up to 256 KiB: PoCL runs a work-group as loops over its items, where the
// lanes' repeated softmax bookkeeping (each lane reads the row's scores) costs more than it saves.
// Test switch: DNNB_OPENCL_SDPA_TILES=gpu or =cpu takes that list on any device (read on every
// call), so PoCL checks the GPU tiles too.
inline Result<SdpaTiles> sdpa_tiles(const OpenCLDevice& device, const ops::SdpaDesc& d,
                                    const std::function<size_t(const SdpaTiles&)>& bytes, const std::string& what) {
  cl_device_type type = 0;
  DNNB_CL_TRY(clGetDeviceInfo(device.device_id(), CL_DEVICE_TYPE, sizeof(type), &type, nullptr));
  bool cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
  if (const char* force = std::getenv("DNNB_OPENCL_SDPA_TILES")) {
    if (std::strcmp(force, "gpu") == 0) cpu = false;
    if (std::strcmp(force, "cpu") == 0) cpu = true;
  }
  static const std::vector<SdpaTiles> kGpu = {{16, 32, 8}, {16, 16, 8}, {16, 8, 8}, {8, 8, 8}};
  static const std::vector<SdpaTiles> kCpu = {{64, 32, 1}, {32, 32, 1}, {16, 16, 1}, {8, 8, 1}};
  const std::vector<SdpaTiles>& list = cpu ? kCpu : kGpu;
  const size_t cap = std::min(device.local_mem_size(), cpu ? size_t{256} << 10 : size_t{48} << 10);
  for (const SdpaTiles& tiles : list)
    if (bytes(tiles) <= cap) return tiles;
  const SdpaTiles& last = list.back();
  return Status::unsupported("opencl " + what + ": head dims D=" + std::to_string(d.d) + ", Dv=" +
                             std::to_string(d.dv) + " need " + std::to_string(bytes(last)) +
                             " bytes of local memory at the smallest tiles (" + std::to_string(last.rows) + " x " +
                             std::to_string(last.walk) + "), over the " + std::to_string(cap) + " the kernels take");
}

// The inputs and outputs of the signature (suites/ops/sdpa_common.cpp), shapes and dtypes.
inline Status check_sdpa_call(const OpCall& call, const ops::SdpaDesc& d, bool backward) {
  const std::string& op = call.problem.op;
  const DType dtype = call.problem.dtype;
  std::vector<std::pair<const char*, Shape>> in = {
      {"q", ops::sdpa_q_shape(d)}, {"k", ops::sdpa_k_shape(d)}, {"v", ops::sdpa_v_shape(d)}};
  if (d.mask) in.push_back({"mask", ops::sdpa_mask_shape(d)});
  if (backward) {
    in.push_back({"o", ops::sdpa_o_shape(d)});
    in.push_back({"do", ops::sdpa_o_shape(d)});
    in.push_back({"lse", ops::sdpa_lse_shape(d)});
  }
  std::vector<std::pair<const char*, Shape>> out;
  if (backward)
    out = {{"dq", ops::sdpa_q_shape(d)}, {"dk", ops::sdpa_k_shape(d)}, {"dv", ops::sdpa_v_shape(d)}};
  else
    out = {{"o", ops::sdpa_o_shape(d)}, {"lse", ops::sdpa_lse_shape(d)}};
  if (call.inputs.size() != in.size() || call.outputs.size() != out.size())
    return Status::bad_input("opencl " + op + ": " + std::to_string(call.inputs.size()) + " inputs and " +
                             std::to_string(call.outputs.size()) + " outputs, the signature has " +
                             std::to_string(in.size()) + " and " + std::to_string(out.size()));
  auto check = [&](const Tensor& t, const char* name, const Shape& shape) -> Status {
    const DType want = std::string(name) == "lse" ? DType::f32 : dtype;
    if (t.shape != shape || t.dtype != want)
      return Status::bad_input("opencl " + op + ": " + name + " is " + t.describe() + ", the signature's is " +
                               shape_to_string(shape) + " " + dtype_name(want));
    return Status::ok();
  };
  for (size_t i = 0; i < in.size(); ++i) DNNB_TRY(check(call.inputs[i], in[i].first, in[i].second));
  for (size_t i = 0; i < out.size(); ++i) DNNB_TRY(check(call.outputs[i], out[i].first, out[i].second));
  return Status::ok();
}

// build_options plus the head dims, the lanes and `tiles` (e.g. "-DSDPA_BQ=16 -DSDPA_BK=32").
inline std::string sdpa_options(const OpenCLDevice& device, DType dtype, const ops::SdpaDesc& d, int64_t lanes,
                                const std::string& tiles) {
  const auto round4 = [](int64_t e) { return std::to_string((e + 3) / 4 * 4); };
  return build_options(device, dtype,
                       "-DSDPA_T=" + std::to_string(lanes) + " -DSDPA_D4=" + round4(d.d) +
                           " -DSDPA_DV4=" + round4(d.dv) + " " + tiles);
}

// One work-group of `rows` x SDPA_T items per tile; unsupported when the compiled kernel cannot
// run that many items on this device.
inline Status launch_sdpa_tiles(OpenCLDevice& device, cl_kernel kernel, int64_t groups, const SdpaTiles& tiles,
                                const std::string& what) {
  const size_t local = static_cast<size_t>(tiles.rows * tiles.lanes);
  auto fits = row_kernel_fits(device, kernel, local);
  if (!fits) return fits.status();
  if (!*fits)
    return Status::unsupported("opencl " + what + ": the kernel cannot run work-groups of " + std::to_string(local) +
                               " items on this device");
  const size_t global = static_cast<size_t>(groups) * local;
  return enqueue(device, kernel, 1, &global, &local, what);
}

inline int64_t sdpa_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace dnnb::opencl
