// Host side of cross_entropy's warp-per-row kernel (cross_entropy_warp.h, cross_entropy_warp.cl).
#include "kernels/opencl/cross_entropy_warp.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/opencl/cross_entropy_warp_cl.h"
#include "kernels/opencl/logsumexp_body_cl.h"
#include "kernels/opencl/row_body_cl.h"

namespace dnnb::opencl {
namespace {

constexpr const char* kNeedsPtx = "needs NVIDIA inline PTX (shfl.sync)";
// The grid: groups of 8 warps (ce_warp_max_pairs' slack of 32 pairs covers one group past the
// rows), each lane loading 8 vectors of 16 bytes per chunk (4 KB per warp chunk), under a
// 128-register cap on NVIDIA: 65536 / (128 x 256) = 2 groups per compute unit, 16 warps and 64 KB
// of loads in flight per SM. The grid is as many groups as the GPU holds at once, so every warp
// stays resident and its next chunk's loads cross row boundaries.
constexpr int kWarpsPerGroup = 8;
constexpr int kVecsPerLane = 8;
constexpr int kMaxRegisters = 128;
// The grid cap of launch_row_cached (kMaxGroups there); the kernel strides over the rows beyond.
constexpr int64_t kMaxGroups = int64_t{1} << 20;

// The test switch: DNNB_OPENCL_WARP_EMULATE=1 (read on every call, so a test may set it).
bool emulation_requested() {
  const char* value = std::getenv("DNNB_OPENCL_WARP_EMULATE");
  return value != nullptr && std::strcmp(value, "1") == 0;
}


const std::string& warp_source() {
  static const std::string source =
      program_source({opencl_source::row_body, opencl_source::logsumexp_body, opencl_source::cross_entropy_warp});
  return source;
}

Result<cl_uint> compute_units(const OpenCLDevice& device) {
  cl_uint units = 0;
  DNNB_CL_TRY(clGetDeviceInfo(device.device_id(), CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(units), &units, nullptr));
  return std::max<cl_uint>(units, 1);
}

// Registers of one compute unit: CL_DEVICE_REGISTERS_PER_BLOCK_NV (65536 on sm_80..sm_90, the
// same as an SM's file), or 65536 where the query is missing.
cl_uint registers_per_unit(const OpenCLDevice& device) {
  constexpr cl_device_info kRegistersPerBlockNV = 0x4002;
  cl_uint regs = 0;
  if (device.has_extension("cl_nv_device_attribute_query") &&
      clGetDeviceInfo(device.device_id(), kRegistersPerBlockNV, sizeof(regs), &regs, nullptr) == CL_SUCCESS &&
      regs > 0)
    return regs;
  return 65536;
}

}  // namespace

// The decision of the bf16 store tier (opencl_launch.cpp bf16_nv_ptx: an NVIDIA platform,
// compute capability >= 8.0): the same devices take this kernel's PTX (shfl.sync needs sm_30 and
// PTX 6.0, max.bf16x2 sm_80 and PTX 7.0, as the tier's cvt.rn.bf16x2.f32).
bool ce_warp_available(const OpenCLDevice& device) { return bf16_nv_ptx(device) || emulation_requested(); }

Result<int64_t> try_ce_rows_warp(OpenCLDevice& device, cl_mem logits, const ClRows& lr, cl_mem target,
                                 int64_t t_offset, int64_t t_stride, int64_t ignore_index, cl_mem partial) {
  if (!ce_warp_available(device))
    return Status::skipped(std::string(kNeedsPtx) + ": " + device.info().id +
                           " is not an NVIDIA OpenCL device of compute capability >= 8.0");
  if (lr.rows <= 0 || lr.cols <= 0 || lr.col_stride != 1 || lr.cols >= kRowMaxCols) return int64_t{0};
  const bool nv_ptx = bf16_nv_ptx(device);
  auto aligned = rows_chunk_aligned(device, DType::bf16, {lr});
  if (!aligned) return aligned.status();
  const int64_t chunk_cols = int64_t{32} * kVecsPerLane * row_chunk_width(DType::bf16);
  const bool exact = *aligned && lr.cols % chunk_cols == 0;
  const size_t wg = static_cast<size_t>(32 * kWarpsPerGroup);
  // The one-reduction fast-exp raw options (row_body.cl, logsumexp_body.cl: the bf16 row plans'
  // exp and merges), DNNB_ROW_WG = the group, DNNB_ROW_VECS = the vectors of a lane's chunk.
  const RowPlan row{.wg = wg, .raw = true, .fast_exp = true, .one_reduction = true};
  std::string options = row_options(device, DType::bf16, kVecsPerLane, *aligned, row) + " -DDNNB_WARPS=" +
                        std::to_string(kWarpsPerGroup) + " -DDNNB_WARP_EXACT=" + (exact ? "1" : "0");
  if (!nv_ptx) options += " -DDNNB_WARP_EMULATE=1";  // ce_warp_available: the test switch is on
  // Without the cap, reqd_work_group_size(wg) alone lets ptxas take up to 65536 / wg registers
  // (255 for 256 items): one group per SM instead of two.
  const bool cap_registers = nv_ptx && device.has_extension("cl_nv_compiler_options");
  if (cap_registers) options += " -cl-nv-maxrregcount=" + std::to_string(kMaxRegisters);
  auto kernel = opencl_kernel(device, "cross_entropy_warp", warp_source(), "ce_rows_warp", options);
  if (!kernel) return kernel.status();
  auto fits = row_kernel_fits(device, *kernel, wg);
  if (!fits) return fits.status();
  if (!*fits) return int64_t{0};

  const int64_t row_groups = (lr.rows + kWarpsPerGroup - 1) / kWarpsPerGroup;
  auto units = compute_units(device);
  if (!units) return units.status();
  // With the register cap, no local memory and groups of wg items, exactly this many groups fit
  // a compute unit at once (without the cap, as in the test emulation: 2 per unit).
  const int64_t per_unit =
      cap_registers ? std::max<int64_t>(1, registers_per_unit(device) / (int64_t{kMaxRegisters} * static_cast<int64_t>(wg)))
                    : 2;
  const int64_t groups = std::min({row_groups, kMaxGroups, static_cast<int64_t>(*units) * per_unit});
  KernelArgs args(*kernel);
  args.add(logits).add(lr).add(target).add(cl_long{t_offset}).add(cl_long{t_stride}).add(cl_long{ignore_index});
  args.add(partial);
  DNNB_TRY(args.status());
  // launch_row_cached launches `rows` groups of wg items here (one group per "row" of its own).
  DNNB_TRY(launch_row_cached(device, *kernel, groups, "cross_entropy/ce_rows_warp", wg));
  return groups * kWarpsPerGroup;
}

}  // namespace dnnb::opencl
