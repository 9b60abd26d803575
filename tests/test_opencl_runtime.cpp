// The OpenCL runtime: discovery, program build and cache, build errors with their log,
// buffers at offsets. Skips (with the absence reason) where no OpenCL device exists.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/device.h"

#if defined(DNNB_HAVE_OPENCL)
#include "devices/opencl/opencl_device.h"

namespace dnnb {
namespace {

OpenCLDevice* first_opencl_device() {
  return dynamic_cast<OpenCLDevice*>(DeviceSet::instance().first(DeviceKind::opencl));
}

#define DNNB_REQUIRE_OPENCL(device)                                                               \
  OpenCLDevice* device = first_opencl_device();                                                   \
  if (device == nullptr) GTEST_SKIP() << "no OpenCL device: "                                     \
                                      << DeviceSet::instance().absence_reason(DeviceKind::opencl)

TEST(OpenCLRuntime, ErrorNamesCoverTheCodesWeReport) {
  EXPECT_STREQ(opencl_error_name(CL_SUCCESS), "CL_SUCCESS");
  EXPECT_STREQ(opencl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  EXPECT_STREQ(opencl_error_name(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
  EXPECT_STREQ(opencl_error_name(CL_INVALID_WORK_GROUP_SIZE), "CL_INVALID_WORK_GROUP_SIZE");
  EXPECT_STREQ(opencl_error_name(12345), "unknown OpenCL error");
  Status s = opencl_status(CL_OUT_OF_RESOURCES, "clFoo(x)", "file.cpp", 7);
  EXPECT_EQ(s.code, StatusCode::error);
  EXPECT_NE(s.message.find("clFoo(x)"), std::string::npos);
  EXPECT_NE(s.message.find("CL_OUT_OF_RESOURCES"), std::string::npos);
  EXPECT_NE(s.message.find("file.cpp:7"), std::string::npos);
}

TEST(OpenCLRuntime, DiscoveryListsDevicesWithCapabilities) {
  auto devices = DeviceSet::instance().of_kind(DeviceKind::opencl);
  if (devices.empty())
    GTEST_SKIP() << "no OpenCL device: " << DeviceSet::instance().absence_reason(DeviceKind::opencl);
  bool saw_pocl = false;
  for (DeviceRuntime* d : devices) {
    const DeviceInfo& info = d->info();
    EXPECT_EQ(info.kind, DeviceKind::opencl);
    EXPECT_EQ(info.id.rfind("opencl:", 0), 0u) << info.id;
    EXPECT_NE(info.id.find('.'), std::string::npos) << "ids are opencl:P.D, got " << info.id;
    for (const char* key : {"platform_name", "device_name", "opencl_c_version", "compute_units", "max_clock_mhz",
                            "global_mem_bytes", "local_mem_bytes", "max_work_group_size", "extensions", "fp16",
                            "fp64", "subgroups", "integer_dot_product", "address_bits"})
      EXPECT_TRUE(info.capabilities.contains(key)) << info.id << " lacks capability " << key;
    EXPECT_GT(info.capabilities.value("compute_units", 0), 0) << info.id;
    ASSERT_TRUE(info.peaks.contains("flops_per_s")) << info.id;
    EXPECT_GT(info.peaks["flops_per_s"].value("f32", 0.0), 0.0) << info.id;
    EXPECT_TRUE(info.peaks["memory_bandwidth_bytes_per_s"].is_null()) << "OpenCL cannot know the bandwidth";
    EXPECT_TRUE(info.peaks["formula"].contains("flops_per_s"));
    if (info.capabilities.value("platform_name", "").find("Portable Computing Language") != std::string::npos)
      saw_pocl = true;
  }
  // This machine's PoCL must be found when its ICD file is where the loader looks.
  const char* vendors = std::getenv("OCL_ICD_VENDORS");
  bool pocl_visible = vendors == nullptr ? std::filesystem::exists("/etc/OpenCL/vendors/pocl.icd")
                                         : std::filesystem::exists(std::string(vendors) + "/pocl.icd");
  if (pocl_visible) EXPECT_TRUE(saw_pocl) << "pocl.icd is installed but discovery did not list PoCL";
}

TEST(OpenCLRuntime, BuildsAndRunsATrivialProgram) {
  DNNB_REQUIRE_OPENCL(device);
  const std::string source =
      "kernel void fill(global int* out, int base) { out[get_global_id(0)] = base + (int)get_global_id(0); }";
  auto program = device->program("test_fill", source, "-DUNUSED=1");
  ASSERT_TRUE(program.is_ok()) << program.status().to_string();
  auto again = device->program("test_fill", source, "-DUNUSED=1");
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*program, *again) << "a second request must come from the cache";
  auto kernel = device->kernel("test_fill", source, "fill", "-DUNUSED=1");
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
  auto kernel_again = device->kernel("test_fill", source, "fill", "-DUNUSED=1");
  ASSERT_TRUE(kernel_again.is_ok());
  EXPECT_EQ(*kernel, *kernel_again);

  auto buffer = device->allocate(16 * sizeof(cl_int));
  ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
  cl_mem mem = static_cast<cl_mem>((*buffer)->handle);
  cl_int base = 100;
  ASSERT_EQ(clSetKernelArg(*kernel, 0, sizeof(cl_mem), &mem), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(*kernel, 1, sizeof(cl_int), &base), CL_SUCCESS);
  size_t global = 16;
  ASSERT_EQ(clEnqueueNDRangeKernel(device->queue(), *kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
            CL_SUCCESS);
  ASSERT_TRUE(device->synchronize().is_ok());
  std::vector<cl_int> out(16, -1);
  ASSERT_TRUE(device->download(out.data(), **buffer, 0, out.size() * sizeof(cl_int)).is_ok());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[i], 100 + i);
}

TEST(OpenCLRuntime, BuildErrorCarriesTheLogAndOptions) {
  DNNB_REQUIRE_OPENCL(device);
  const std::string broken = "kernel void broken(global float* p) { p[0] = undefined_name_xyz; }";
  auto program = device->program("test_broken", broken, "-DMARKER_OPTION=1");
  ASSERT_FALSE(program.is_ok());
  const std::string& message = program.status().message;
  EXPECT_EQ(program.status().code, StatusCode::error);
  EXPECT_NE(message.find("test_broken"), std::string::npos) << message;
  EXPECT_NE(message.find("-DMARKER_OPTION=1"), std::string::npos) << message;
  EXPECT_NE(message.find("build log"), std::string::npos) << message;
  // The log itself names the undeclared identifier (every compiler we know does).
  EXPECT_NE(message.find("undefined_name_xyz"), std::string::npos) << message;
  // A failed build is not cached as a success.
  EXPECT_FALSE(device->program("test_broken", broken, "-DMARKER_OPTION=1").is_ok());
  EXPECT_FALSE(device->kernel("test_broken", broken, "broken", "-DMARKER_OPTION=1").is_ok());
}

TEST(OpenCLRuntime, UploadDownloadRoundTripAtOffsets) {
  DNNB_REQUIRE_OPENCL(device);
  auto buffer = device->allocate(1000);
  ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
  std::vector<uint8_t> zeros(1000, 0);
  ASSERT_TRUE(device->upload(**buffer, 0, zeros.data(), zeros.size()).is_ok());
  std::vector<uint8_t> data(333);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_TRUE(device->upload(**buffer, 123, data.data(), data.size()).is_ok());
  std::vector<uint8_t> back(333, 0);
  ASSERT_TRUE(device->download(back.data(), **buffer, 123, back.size()).is_ok());
  EXPECT_EQ(back, data);
  // Bytes around the written range are untouched.
  std::vector<uint8_t> all(1000, 0xff);
  ASSERT_TRUE(device->download(all.data(), **buffer, 0, all.size()).is_ok());
  EXPECT_EQ(all[122], 0);
  EXPECT_EQ(all[123], data[0]);
  EXPECT_EQ(all[455], data[332]);
  EXPECT_EQ(all[456], 0);
  // Out of range is an error, not a crash.
  EXPECT_FALSE(device->upload(**buffer, 900, data.data(), data.size()).is_ok());
  EXPECT_FALSE(device->download(back.data(), **buffer, 900, back.size()).is_ok());
}

TEST(OpenCLRuntime, ZeroByteAllocationIsUsable) {
  DNNB_REQUIRE_OPENCL(device);
  auto buffer = device->allocate(0);
  ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
  EXPECT_NE((*buffer)->handle, nullptr);
  EXPECT_EQ((*buffer)->bytes, 0u);
  EXPECT_TRUE(device->upload(**buffer, 0, nullptr, 0).is_ok());
}

}  // namespace
}  // namespace dnnb

#else

TEST(OpenCLRuntime, NotBuilt) { GTEST_SKIP() << "this build has no OpenCL support (DNNB_OPENCL=OFF or not found)"; }

#endif
