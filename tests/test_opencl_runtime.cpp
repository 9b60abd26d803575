// The OpenCL runtime: discovery, program build and caches (in the process and on disk), build
// errors with their log, buffers at offsets. Skips (with the absence reason) where no OpenCL
// device exists.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
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
  if (pocl_visible) {
    EXPECT_TRUE(saw_pocl) << "pocl.icd is installed but discovery did not list PoCL";
  }
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

// ---- the on-disk program cache (devices/opencl/opencl_program_cache.h) ----------------------

// Points the cache at a fresh folder (DNNB_CACHE_DIR, DNNB_OPENCL_CACHE unset) for one test and
// restores both variables and removes the folder after it.
class ScopedProgramCache {
 public:
  ScopedProgramCache() {
    static int counter = 0;
    root_ = std::filesystem::temp_directory_path() /
            ("dnnb-opencl-cache-test-" + std::to_string(static_cast<long long>(getpid())) + "-" +
             std::to_string(counter++));
    std::filesystem::remove_all(root_);
    save("DNNB_CACHE_DIR", &old_dir_);
    save("DNNB_OPENCL_CACHE", &old_switch_);
    setenv("DNNB_CACHE_DIR", root_.c_str(), 1);
    // On, so that the cache is exercised on every platform, PoCL's included (there it is
    // off by default: opencl_platform_caches_builds).
    setenv("DNNB_OPENCL_CACHE", "on", 1);
  }
  ~ScopedProgramCache() {
    restore("DNNB_CACHE_DIR", old_dir_);
    restore("DNNB_OPENCL_CACHE", old_switch_);
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  std::string dir() const { return (root_ / "opencl").string(); }
  const std::filesystem::path& root() const { return root_; }
  // The entry files in the folder.
  std::vector<std::filesystem::path> entries() const {
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir(), ec)) out.push_back(e.path());
    return out;
  }

 private:
  static void save(const char* name, std::optional<std::string>* to) {
    const char* v = std::getenv(name);
    if (v != nullptr) *to = v;
  }
  static void restore(const char* name, const std::optional<std::string>& value) {
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  std::filesystem::path root_;
  std::optional<std::string> old_dir_, old_switch_;
};

// The device's platform; nullptr when the driver does not say.
cl_platform_id platform_of(const OpenCLDevice& device) {
  cl_platform_id platform = nullptr;
  if (clGetDeviceInfo(device.device_id(), CL_DEVICE_PLATFORM, sizeof(platform), &platform, nullptr) != CL_SUCCESS)
    return nullptr;
  return platform;
}

// A second runtime on the same device: its in-process program map is empty, so each build goes
// to the on-disk cache, as in a new process.
std::unique_ptr<OpenCLDevice> fresh_runtime(const OpenCLDevice& device) {
  cl_platform_id platform = platform_of(device);
  if (platform == nullptr) return nullptr;
  auto runtime = std::make_unique<OpenCLDevice>(platform, device.device_id(), device.info());
  if (!runtime->init().is_ok()) return nullptr;
  return runtime;
}

constexpr const char* kFillSource =
    "kernel void fill(global int* out, int base) { out[get_global_id(0)] = base * BASE + (int)get_global_id(0); }";

// Builds kFillSource with `options` (-DBASE=k) on `device` and checks what the kernel writes.
void expect_fill_runs(OpenCLDevice& device, const std::string& options, int factor) {
  auto kernel = device.kernel("test_cache_fill", kFillSource, "fill", options);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
  auto buffer = device.allocate(8 * sizeof(cl_int));
  ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
  cl_mem mem = static_cast<cl_mem>((*buffer)->handle);
  cl_int base = 10;
  ASSERT_EQ(clSetKernelArg(*kernel, 0, sizeof(cl_mem), &mem), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(*kernel, 1, sizeof(cl_int), &base), CL_SUCCESS);
  size_t global = 8;
  ASSERT_EQ(clEnqueueNDRangeKernel(device.queue(), *kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
            CL_SUCCESS);
  ASSERT_TRUE(device.synchronize().is_ok());
  std::vector<cl_int> out(8, -1);
  ASSERT_TRUE(device.download(out.data(), **buffer, 0, out.size() * sizeof(cl_int)).is_ok());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 10 * factor + i) << "options " << options;
}

TEST(OpenCLProgramCache, FolderFromTheEnvironment) {
  ScopedProgramCache cache;
  EXPECT_EQ(opencl_program_cache_dir(), cache.dir());
  EXPECT_EQ(opencl_program_cache_dir(/*platform_caches_builds=*/true), cache.dir()) << "on forces it";
  setenv("DNNB_OPENCL_CACHE", "off", 1);
  EXPECT_EQ(opencl_program_cache_dir(), "");
  unsetenv("DNNB_OPENCL_CACHE");
  EXPECT_EQ(opencl_program_cache_dir(), cache.dir());
  EXPECT_EQ(opencl_program_cache_dir(/*platform_caches_builds=*/true), "") << "off by default where the platform caches";
  unsetenv("DNNB_CACHE_DIR");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg != nullptr && *xdg != '\0') {
    EXPECT_EQ(opencl_program_cache_dir(), std::string(xdg) + "/dnnblocks/opencl");
  } else if (home != nullptr && *home != '\0') {
    EXPECT_EQ(opencl_program_cache_dir(), std::string(home) + "/.cache/dnnblocks/opencl");
  }
}

TEST(OpenCLProgramCache, KeyCoversSourceOptionsAndDevice) {
  const std::string key = opencl_program_cache_key("device A", "source", "-DX=1");
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, opencl_program_cache_key("device A", "source", "-DX=1"));
  EXPECT_NE(key, opencl_program_cache_key("device B", "source", "-DX=1"));
  EXPECT_NE(key, opencl_program_cache_key("device A", "source2", "-DX=1"));
  EXPECT_NE(key, opencl_program_cache_key("device A", "source", "-DX=2"));
  // Fields are length-prefixed: moving text from one field to the next changes the key.
  EXPECT_NE(opencl_program_cache_key("device A", "ab", "c"), opencl_program_cache_key("device A", "a", "bc"));
}

TEST(OpenCLProgramCache, SecondBuildComesFromTheDisk) {
  DNNB_REQUIRE_OPENCL(device);
  ScopedProgramCache cache;
  auto first = fresh_runtime(*device);
  ASSERT_NE(first, nullptr);
  expect_fill_runs(*first, "-DBASE=3", 3);
  ProgramCacheStats stats = first->program_cache_stats();
  EXPECT_EQ(stats.source_builds, 1);
  EXPECT_EQ(stats.disk_hits, 0);
  EXPECT_EQ(stats.disk_writes, 1);
  ASSERT_EQ(cache.entries().size(), 1u) << "one entry per built program";
  // The same runtime again: from its own map, no second build, no disk access.
  expect_fill_runs(*first, "-DBASE=3", 3);
  EXPECT_EQ(first->program_cache_stats().source_builds, 1);
  EXPECT_EQ(first->program_cache_stats().disk_hits, 0);

  auto second = fresh_runtime(*device);
  ASSERT_NE(second, nullptr);
  expect_fill_runs(*second, "-DBASE=3", 3);
  stats = second->program_cache_stats();
  EXPECT_EQ(stats.disk_hits, 1) << "the second runtime must build from the cached binary";
  EXPECT_EQ(stats.source_builds, 0);
  EXPECT_EQ(stats.disk_rejected, 0);
  // Other options are another program: built from source, a second entry.
  expect_fill_runs(*second, "-DBASE=5", 5);
  EXPECT_EQ(second->program_cache_stats().source_builds, 1);
  EXPECT_EQ(cache.entries().size(), 2u);
}

TEST(OpenCLProgramCache, BadEntriesAreRebuiltAndRewritten) {
  DNNB_REQUIRE_OPENCL(device);
  ScopedProgramCache cache;
  {
    auto writer = fresh_runtime(*device);
    ASSERT_NE(writer, nullptr);
    expect_fill_runs(*writer, "-DBASE=4", 4);
    expect_fill_runs(*writer, "-DBASE=6", 6);  // an entry of another key, to copy over the first
  }
  auto read_bytes = [](const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  auto write_bytes = [](const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  };
  // Which entry is BASE=4's: the one a fresh runtime reads for it.
  std::filesystem::path entry, other;
  {
    const auto files = cache.entries();
    ASSERT_EQ(files.size(), 2u);
    for (const auto& path : files) {
      const std::string saved = read_bytes(path);
      std::filesystem::remove(path);
      auto probe = fresh_runtime(*device);
      ASSERT_NE(probe, nullptr);
      ASSERT_TRUE(probe->program("test_cache_fill", kFillSource, "-DBASE=4").is_ok());
      const bool mine = probe->program_cache_stats().disk_hits == 0;  // missing: it was this one
      write_bytes(path, saved);
      (mine ? entry : other) = path;
    }
    ASSERT_FALSE(entry.empty());
    ASSERT_FALSE(other.empty());
  }
  const std::string good = read_bytes(entry);
  ASSERT_GT(good.size(), 8u + 64u + 8u + 64u);
  const size_t binary_start = 8 + 64 + 8;
  struct Damage {
    const char* what;
    std::string bytes;
  };
  std::string flipped = good;
  flipped[binary_start + (good.size() - binary_start - 64) / 2] ^= 0x5a;
  std::string bad_checksum = good;
  bad_checksum.back() = bad_checksum.back() == '0' ? '1' : '0';
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  std::string huge_size = good;
  for (size_t i = 8 + 64; i < binary_start; ++i) huge_size[i] = static_cast<char>(0xff);
  const std::vector<Damage> damages = {
      {"empty", ""},
      {"truncated in the header", good.substr(0, 20)},
      {"truncated in the binary", good.substr(0, binary_start + 10)},
      {"truncated in the checksum", good.substr(0, good.size() - 10)},
      {"a byte of the binary flipped", flipped},
      {"a byte of the checksum changed", bad_checksum},
      {"another format", bad_magic},
      {"a size past the file", huge_size},
      {"trailing bytes", good + "extra"},
      {"another key's entry", read_bytes(other)},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.what);
    write_bytes(entry, damage.bytes);
    auto runtime = fresh_runtime(*device);
    ASSERT_NE(runtime, nullptr);
    expect_fill_runs(*runtime, "-DBASE=4", 4);
    const ProgramCacheStats stats = runtime->program_cache_stats();
    EXPECT_EQ(stats.disk_hits, 0);
    EXPECT_EQ(stats.disk_rejected, 1);
    EXPECT_EQ(stats.source_builds, 1);
    EXPECT_EQ(stats.disk_writes, 1);
    // Written again, valid (binaries need not be bit-identical between builds: PoCL's name
    // temporary files), and read by the next runtime.
    EXPECT_EQ(read_program_cache_entry(cache.dir(), entry.stem().string()).state, ProgramCacheEntry::State::ok);
    auto next = fresh_runtime(*device);
    ASSERT_NE(next, nullptr);
    expect_fill_runs(*next, "-DBASE=4", 4);
    EXPECT_EQ(next->program_cache_stats().disk_hits, 1);
  }
}

TEST(OpenCLProgramCache, BinaryTheDriverRefusesIsRebuilt) {
  DNNB_REQUIRE_OPENCL(device);
  ScopedProgramCache cache;
  auto writer = fresh_runtime(*device);
  ASSERT_NE(writer, nullptr);
  expect_fill_runs(*writer, "-DBASE=2", 2);
  ASSERT_EQ(cache.entries().size(), 1u);
  const std::string key = cache.entries()[0].stem().string();
  // A well-formed entry (its checksum right) whose binary is not one the driver made.
  ASSERT_TRUE(write_program_cache_entry(cache.dir(), key, std::string(512, '\x42')).is_ok());
  auto runtime = fresh_runtime(*device);
  ASSERT_NE(runtime, nullptr);
  expect_fill_runs(*runtime, "-DBASE=2", 2);
  const ProgramCacheStats stats = runtime->program_cache_stats();
  EXPECT_EQ(stats.disk_hits, 0);
  EXPECT_EQ(stats.disk_rejected, 1);
  EXPECT_EQ(stats.source_builds, 1);
  auto next = fresh_runtime(*device);
  ASSERT_NE(next, nullptr);
  expect_fill_runs(*next, "-DBASE=2", 2);
  EXPECT_EQ(next->program_cache_stats().disk_hits, 1) << "the entry was rewritten";
}

TEST(OpenCLProgramCache, OffOrUnwritableStillBuilds) {
  DNNB_REQUIRE_OPENCL(device);
  ScopedProgramCache cache;
  setenv("DNNB_OPENCL_CACHE", "off", 1);
  auto off = fresh_runtime(*device);
  ASSERT_NE(off, nullptr);
  expect_fill_runs(*off, "-DBASE=7", 7);
  EXPECT_EQ(off->program_cache_stats().disk_writes, 0);
  EXPECT_TRUE(cache.entries().empty());
  setenv("DNNB_OPENCL_CACHE", "on", 1);
  // A folder that cannot be created (below a regular file): the build succeeds, nothing is written.
  std::filesystem::create_directories(cache.root());
  const std::string file = (cache.root() / "a-file").string();
  std::ofstream(file) << "x";
  setenv("DNNB_CACHE_DIR", file.c_str(), 1);
  auto unwritable = fresh_runtime(*device);
  ASSERT_NE(unwritable, nullptr);
  expect_fill_runs(*unwritable, "-DBASE=8", 8);
  EXPECT_EQ(unwritable->program_cache_stats().source_builds, 1);
  EXPECT_EQ(unwritable->program_cache_stats().disk_writes, 0);
}

// On PoCL, which caches its own builds, a runtime left to its default writes nothing.
TEST(OpenCLProgramCache, OffByDefaultWhereThePlatformCaches) {
  DNNB_REQUIRE_OPENCL(device);
  cl_platform_id platform = platform_of(*device);
  ASSERT_NE(platform, nullptr);
  if (!opencl_platform_caches_builds(platform)) GTEST_SKIP() << device->info().name << " keeps no cache of its own";
  ScopedProgramCache cache;
  unsetenv("DNNB_OPENCL_CACHE");
  auto runtime = fresh_runtime(*device);
  ASSERT_NE(runtime, nullptr);
  expect_fill_runs(*runtime, "-DBASE=9", 9);
  EXPECT_EQ(runtime->program_cache_stats().source_builds, 1);
  EXPECT_EQ(runtime->program_cache_stats().disk_writes, 0);
  EXPECT_TRUE(cache.entries().empty());
}

TEST(OpenCLProgramCache, BuildFailureFromACachedRunStillCarriesTheLog) {
  DNNB_REQUIRE_OPENCL(device);
  ScopedProgramCache cache;
  auto runtime = fresh_runtime(*device);
  ASSERT_NE(runtime, nullptr);
  const std::string broken = "kernel void broken(global float* p) { p[0] = undefined_name_abc; }";
  auto program = runtime->program("test_cache_broken", broken, "-DMARKER=2");
  ASSERT_FALSE(program.is_ok());
  EXPECT_NE(program.status().message.find("undefined_name_abc"), std::string::npos) << program.status().message;
  EXPECT_TRUE(cache.entries().empty()) << "a failed build leaves no entry";
}

}  // namespace
}  // namespace dnnb

#else

TEST(OpenCLRuntime, NotBuilt) { GTEST_SKIP() << "this build has no OpenCL support (DNNB_OPENCL=OFF or not found)"; }

#endif
