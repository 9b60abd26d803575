// The bf16 store rounding of the OpenCL kernels (prelude.cl: dnnb_f32_to_bf16, and
// dnnb_bf16x8_rne, the eight-lane form behind every 16-byte bf16 chunk store of row_body.cl),
// exhaustively: all 2^32 f32 bit patterns on every OpenCL device found, each through both forms,
// against a reference written with integer operations only: round to nearest even on the top 16
// bits, a NaN quieted as (u >> 16) | 0x0040. The portable forms (dnnb_f32_to_bf16_int,
// dnnb_bf16x8_rne_int) differ from it only in the NaN test (isnan(v) there, (u & 0x7fffffff) >
// 0x7f800000 here), which must agree for every float on the device: a compiler or device that
// flushed subnormals before the compare, or took NaNs as impossible, would show here. Every
// result must be bit-identical.
// The program is built with the ops' own options (build_options), so on NVIDIA sm_80+ the forms
// the kernels store with (dnnb_f32_to_bf16, dnnb_bf16x8_rne, dnnb_bf16x4_rne) are the PTX tier
// (DNNB_NV_PTX, cvt.rn.bf16x2.f32): bit-identical for every non-NaN float, NaN-ness only for NaNs
// (cvt gives a canonical NaN). Elsewhere they are the portable forms, held bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/device.h"
#include "devices/opencl/opencl_device.h"
#include "kernels/opencl/opencl_launch.h"

namespace dnnb {
namespace {

// Appended to prelude.cl (built as bf16, with the ops' options). Each work-item takes eight
// consecutive bit patterns (one float8), so a launch of n items covers 8 n patterns.
// result[0] counts mismatches of the portable forms and result[1] keeps the smallest mismatching
// pattern; result[2] and result[3] the same for the forms the kernels store with; result[4] is
// DNNB_NV_PTX as the program saw it.
constexpr const char* kKernel = R"CL(
inline uint dnnb_test_integer_bf16(uint u) {
  const uint rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint quiet = (u >> 16) | 0x0040u;
  return (u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded;
}
inline bool dnnb_test_is_nan_bf16(uint b) { return (b & 0x7fffu) > 0x7f80u; }
// The stored forms against the reference: bit for bit, but for NaNs under the PTX tier, whose
// cvt gives a canonical NaN: there any bf16 NaN.
inline bool dnnb_test_same(uint got, uint want, uint u) {
#if DNNB_NV_PTX
  if ((u & 0x7fffffffu) > 0x7f800000u) return dnnb_test_is_nan_bf16(got);
#endif
  return got == want;
}
inline void dnnb_test_lanes(uint4 packed, uint* lanes) {
  lanes[0] = packed.x & 0xffffu;
  lanes[1] = packed.x >> 16;
  lanes[2] = packed.y & 0xffffu;
  lanes[3] = packed.y >> 16;
  lanes[4] = packed.z & 0xffffu;
  lanes[5] = packed.z >> 16;
  lanes[6] = packed.w & 0xffffu;
  lanes[7] = packed.w >> 16;
}
kernel void bf16_store_check(uint base, global uint* result) {
  if (get_global_id(0) == 0) result[4] = DNNB_NV_PTX;
  const uint u0 = base + (uint)get_global_id(0) * 8u;
  const uint8 u = (uint8)(u0) + (uint8)(0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u);
  const float8 v = as_float8(u);
  uint portable[8], stored[8];
  dnnb_test_lanes(dnnb_bf16x8_rne_int(v), portable);
  dnnb_test_lanes(dnnb_bf16x8_rne(v), stored);
  const ushort4 q0 = dnnb_bf16x4_rne(v.lo), q1 = dnnb_bf16x4_rne(v.hi);
  const uint quads[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
  const uint bits[8] = {u.s0, u.s1, u.s2, u.s3, u.s4, u.s5, u.s6, u.s7};
  uint bad_portable = 0, bad_stored = 0;
  for (int j = 0; j < 8; ++j) {
    const uint want = dnnb_test_integer_bf16(bits[j]);
    if ((uint)dnnb_f32_to_bf16_int(as_float(bits[j])) != want || portable[j] != want) {
      ++bad_portable;
      atomic_min(result + 1, bits[j]);
    }
    if (!dnnb_test_same((uint)dnnb_f32_to_bf16(as_float(bits[j])), want, bits[j]) ||
        !dnnb_test_same(stored[j], want, bits[j]) || !dnnb_test_same(quads[j], want, bits[j])) {
      ++bad_stored;
      atomic_min(result + 3, bits[j]);
    }
  }
  if (bad_portable != 0) atomic_add(result, bad_portable);
  if (bad_stored != 0) atomic_add(result + 2, bad_stored);
}
)CL";

struct Outcome {
  cl_uint portable_mismatches = 0;
  cl_uint portable_first = 0xffffffffu;
  cl_uint stored_mismatches = 0;
  cl_uint stored_first = 0xffffffffu;
  cl_uint nv_ptx = 0xffffffffu;  // DNNB_NV_PTX of the program (written by the kernel)
};

Result<Outcome> check_all(OpenCLDevice& device) {
  const std::string source = opencl::program_source({kKernel});
  auto kernel = device.kernel("test_bf16_store", source, "bf16_store_check", opencl::build_options(device, DType::bf16));
  if (!kernel) return kernel.status();
  Outcome out;
  cl_int err = CL_SUCCESS;
  cl_mem result = clCreateBuffer(device.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(out), &out, &err);
  DNNB_CL_TRY(err);
  const Status status = [&]() -> Status {
    constexpr uint64_t kItems = uint64_t{1} << 24;  // 2^27 patterns per launch, 32 launches
    for (uint64_t base = 0; base < (uint64_t{1} << 32); base += kItems * 8) {
      const cl_uint b = static_cast<cl_uint>(base);
      DNNB_CL_TRY(clSetKernelArg(*kernel, 0, sizeof(b), &b));
      DNNB_CL_TRY(clSetKernelArg(*kernel, 1, sizeof(cl_mem), &result));
      const size_t global = kItems;
      DNNB_CL_TRY(clEnqueueNDRangeKernel(device.queue(), *kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
    }
    DNNB_CL_TRY(clEnqueueReadBuffer(device.queue(), result, CL_TRUE, 0, sizeof(out), &out, 0, nullptr, nullptr));
    return Status::ok();
  }();
  clReleaseMemObject(result);
  if (!status.is_ok()) return status;
  return out;
}

std::vector<OpenCLDevice*> opencl_devices() {
  std::vector<OpenCLDevice*> list;
  for (DeviceRuntime* runtime : DeviceSet::instance().of_kind(DeviceKind::opencl)) {
    auto* device = dynamic_cast<OpenCLDevice*>(runtime);
    if (device != nullptr) list.push_back(device);
  }
  return list;
}

// The portable forms on every device; where the ops' bf16 programs use them (every device
// without the PTX tier), the stored forms too, bit for bit.
TEST(OpenCLBf16Store, BitExactForEveryFloat) {
  auto devices = opencl_devices();
  if (devices.empty())
    GTEST_SKIP() << "no OpenCL device: " << DeviceSet::instance().absence_reason(DeviceKind::opencl);
  for (OpenCLDevice* device : devices) {
    const bool tier = opencl::bf16_nv_ptx(*device);
    auto outcome = check_all(*device);
    ASSERT_TRUE(outcome.is_ok()) << device->info().id << ": " << outcome.status().message;
    EXPECT_EQ(outcome->nv_ptx, tier ? 1u : 0u) << device->info().id << ": DNNB_NV_PTX of the program";
    EXPECT_EQ(outcome->portable_mismatches, 0u)
        << device->info().id << ": portable forms, first mismatching f32 bits 0x" << std::hex << outcome->portable_first;
    if (!tier) {
      EXPECT_EQ(outcome->stored_mismatches, 0u)
          << device->info().id << ": stored forms, first mismatching f32 bits 0x" << std::hex << outcome->stored_first;
    }
    std::printf("%s: all 2^32 floats, portable forms: %u mismatches%s\n", device->info().id.c_str(),
                outcome->portable_mismatches, tier ? " (stored forms: the PTX tier, NvPtxTier test)" : "");
  }
}

// The PTX tier (DNNB_NV_PTX, NVIDIA sm_80+ only): cvt.rn.bf16x2.f32 through the stored forms
// (scalar, 8-lane, 4-lane) equals the integer rounding for every non-NaN float, bit for bit, and
// gives a NaN for every NaN.
TEST(OpenCLBf16Store, NvPtxTierMatchesIntegerForm) {
  std::string without;
  int tested = 0;
  for (OpenCLDevice* device : opencl_devices()) {
    if (!opencl::bf16_nv_ptx(*device)) {
      without += (without.empty() ? "" : ", ") + device->info().id +
                 (opencl::is_nvidia(*device) ? " (NVIDIA, below sm_80 or no cl_nv_device_attribute_query)"
                                             : " (not NVIDIA)");
      continue;
    }
    const std::string options = opencl::build_options(*device, DType::bf16);
    EXPECT_NE(options.find("-DDNNB_NV_PTX=1"), std::string::npos) << device->info().id << ": " << options;
    auto outcome = check_all(*device);
    ASSERT_TRUE(outcome.is_ok()) << device->info().id << ": " << outcome.status().message;
    EXPECT_EQ(outcome->nv_ptx, 1u) << device->info().id << ": DNNB_NV_PTX of the program";
    EXPECT_EQ(outcome->stored_mismatches, 0u)
        << device->info().id << ": PTX forms, first mismatching f32 bits 0x" << std::hex << outcome->stored_first;
    std::printf("%s: all 2^32 floats through the PTX tier, %u mismatches\n", device->info().id.c_str(),
                outcome->stored_mismatches);
    ++tested;
  }
  if (tested == 0)
    GTEST_SKIP() << "no OpenCL device takes the bf16 PTX tier (NVIDIA platform, compute capability >= 8.0): "
                 << (without.empty() ? "no OpenCL device: " + DeviceSet::instance().absence_reason(DeviceKind::opencl)
                                     : without);
}

}  // namespace
}  // namespace dnnb
