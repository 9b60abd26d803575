// The bf16 store rounding of the OpenCL kernels (prelude.cl: dnnb_f32_to_bf16, and
// dnnb_bf16x8_rne, the eight-lane form behind every 16-byte bf16 chunk store of row_body.cl),
// exhaustively: all 2^32 f32 bit patterns on every OpenCL device found, each through both forms,
// against the rounding the kernels used before session 6 (kept below as the reference): round to
// nearest even on the top 16 bits, a NaN quieted as (u >> 16) | 0x0040. The two differ only in
// the NaN test (isnan(v) now, (u & 0x7fffffff) > 0x7f800000 before), which must agree for every
// float on the device: a compiler or device that flushed subnormals before the compare, or took
// NaNs as impossible, would show here. Every result must be bit-identical.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/device.h"
#include "devices/opencl/opencl_device.h"
#include "kernels/opencl/opencl_launch.h"

namespace dnnb {
namespace {

// Appended to prelude.cl (built as bf16). Each work-item takes eight consecutive bit patterns
// (one float8), so a launch of n items covers 8 n patterns; result[0] counts mismatches and
// result[1] keeps the smallest mismatching pattern.
constexpr const char* kKernel = R"CL(
inline uint dnnb_test_old_bf16(uint u) {
  const uint rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint quiet = (u >> 16) | 0x0040u;
  return (u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded;
}
kernel void bf16_store_check(uint base, global uint* result) {
  const uint u0 = base + (uint)get_global_id(0) * 8u;
  const uint8 u = (uint8)(u0) + (uint8)(0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u);
  const float8 v = as_float8(u);
  const uint4 packed = dnnb_bf16x8_rne(v);
  const uint lanes[8] = {packed.x & 0xffffu, packed.x >> 16, packed.y & 0xffffu, packed.y >> 16,
                         packed.z & 0xffffu, packed.z >> 16, packed.w & 0xffffu, packed.w >> 16};
  const uint bits[8] = {u.s0, u.s1, u.s2, u.s3, u.s4, u.s5, u.s6, u.s7};
  uint bad = 0;
  for (int j = 0; j < 8; ++j) {
    const uint want = dnnb_test_old_bf16(bits[j]);
    if ((uint)dnnb_f32_to_bf16(as_float(bits[j])) != want || lanes[j] != want) {
      ++bad;
      atomic_min(result + 1, bits[j]);
    }
  }
  if (bad != 0) atomic_add(result, bad);
}
)CL";

struct Outcome {
  cl_uint mismatches = 0;
  cl_uint first = 0xffffffffu;
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

TEST(OpenCLBf16Store, BitExactForEveryFloat) {
  auto devices = DeviceSet::instance().of_kind(DeviceKind::opencl);
  if (devices.empty())
    GTEST_SKIP() << "no OpenCL device: " << DeviceSet::instance().absence_reason(DeviceKind::opencl);
  for (DeviceRuntime* runtime : devices) {
    auto* device = dynamic_cast<OpenCLDevice*>(runtime);
    ASSERT_NE(device, nullptr);
    auto outcome = check_all(*device);
    ASSERT_TRUE(outcome.is_ok()) << device->info().id << ": " << outcome.status().message;
    EXPECT_EQ(outcome->mismatches, 0u) << device->info().id << ": first mismatching f32 bits 0x" << std::hex
                                        << outcome->first;
    std::printf("%s: all 2^32 floats, %u mismatches\n", device->info().id.c_str(), outcome->mismatches);
  }
}

}  // namespace
}  // namespace dnnb
