// The on-disk cache of built OpenCL programs (opencl_program_cache.h).
//
// Entry file <key>.bin:
//   8 bytes   "DNNBOCL" and the format version 1
//   64 bytes  the key (hex), so a file copied or renamed to another key is refused
//   8 bytes   the binary's size, little-endian
//   size      the binary
//   64 bytes  hex SHA-256 of the binary
// The file must be exactly that long; anything else is an invalid entry.
#include "devices/opencl/opencl_program_cache.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/sha256.h"
#include "devices/opencl/opencl_device.h"

namespace dnnb {
namespace {

constexpr char kMagic[8] = {'D', 'N', 'N', 'B', 'O', 'C', 'L', 1};
constexpr size_t kHexBytes = 64;
constexpr size_t kHeaderBytes = sizeof(kMagic) + kHexBytes + 8;
// A sanity bound on one binary (PTX of our largest programs is well under 1 MiB).
constexpr uint64_t kMaxBinaryBytes = uint64_t{1} << 30;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

std::string platform_text(cl_platform_id platform, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  if (clGetPlatformInfo(platform, what, size, text.data(), nullptr) != CL_SUCCESS) return "";
  return text.c_str();
}

std::string device_text(cl_device_id device, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  if (clGetDeviceInfo(device, what, size, text.data(), nullptr) != CL_SUCCESS) return "";
  return text.c_str();
}

// Length-prefixed, so no two different field lists give the same text.
void append_field(std::string& out, const std::string& field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
  out += ';';
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

std::string opencl_program_cache_dir(bool platform_caches_builds) {
  const std::string mode = env("DNNB_OPENCL_CACHE");
  if (mode == "off" || (platform_caches_builds && mode != "on")) return "";
  if (const std::string dir = env("DNNB_CACHE_DIR"); !dir.empty()) return dir + "/opencl";
  if (const std::string dir = env("XDG_CACHE_HOME"); !dir.empty()) return dir + "/dnnblocks/opencl";
  if (const std::string home = env("HOME"); !home.empty()) return home + "/.cache/dnnblocks/opencl";
  return "";
}

bool opencl_platform_caches_builds(cl_platform_id platform) {
  return platform_text(platform, CL_PLATFORM_NAME) == "Portable Computing Language";
}

std::string opencl_binary_identity(cl_platform_id platform, cl_device_id device) {
  std::string id;
  append_field(id, platform_text(platform, CL_PLATFORM_NAME));
  append_field(id, platform_text(platform, CL_PLATFORM_VENDOR));
  append_field(id, platform_text(platform, CL_PLATFORM_VERSION));
  append_field(id, device_text(device, CL_DEVICE_NAME));
  append_field(id, device_text(device, CL_DEVICE_VENDOR));
  append_field(id, device_text(device, CL_DEVICE_VERSION));
  append_field(id, device_text(device, CL_DRIVER_VERSION));
  append_field(id, device_text(device, CL_DEVICE_OPENCL_C_VERSION));
  return id;
}

std::string opencl_program_cache_key(const std::string& identity, const std::string& source,
                                     const std::string& options) {
  std::string text;
  append_field(text, "dnnblocks OpenCL program binary 1");
  append_field(text, identity);
  append_field(text, options);
  append_field(text, source);
  return sha256_hex(text.data(), text.size());
}

std::string opencl_program_cache_path(const std::string& dir, const std::string& key) {
  return dir + "/" + key + ".bin";
}

ProgramCacheEntry read_program_cache_entry(const std::string& dir, const std::string& key) {
  ProgramCacheEntry entry;
  const std::string path = opencl_program_cache_path(dir, key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return entry;  // missing (or unreadable: the same to the caller)
  const auto invalid = [&](const std::string& why) {
    entry.state = ProgramCacheEntry::State::invalid;
    entry.reason = path + ": " + why;
    entry.binary.clear();
    return entry;
  };
  std::string header(kHeaderBytes, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header.size()))) return invalid("shorter than its header");
  if (std::memcmp(header.data(), kMagic, sizeof(kMagic)) != 0) return invalid("not an entry of this format");
  if (header.compare(sizeof(kMagic), kHexBytes, key) != 0) return invalid("holds another key");
  const uint64_t size = get_u64(header.data() + sizeof(kMagic) + kHexBytes);
  if (size == 0 || size > kMaxBinaryBytes) return invalid("binary size " + std::to_string(size));
  entry.binary.resize(static_cast<size_t>(size));
  std::string checksum(kHexBytes, '\0');
  if (!in.read(entry.binary.data(), static_cast<std::streamsize>(size)) ||
      !in.read(checksum.data(), static_cast<std::streamsize>(checksum.size())))
    return invalid("truncated");
  if (in.peek() != std::char_traits<char>::eof()) return invalid("longer than its entry");
  if (sha256_hex(entry.binary.data(), entry.binary.size()) != checksum) return invalid("checksum mismatch");
  entry.state = ProgramCacheEntry::State::ok;
  return entry;
}

Status write_program_cache_entry(const std::string& dir, const std::string& key, const std::string& binary) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return DNNB_ERROR("cannot create " + dir + ": " + ec.message());
  static std::atomic<uint64_t> counter{0};
  const std::string path = opencl_program_cache_path(dir, key);
  const std::string temp = path + ".tmp-" + std::to_string(static_cast<long long>(getpid())) + "-" +
                           std::to_string(counter.fetch_add(1));
  std::string bytes(kMagic, sizeof(kMagic));
  bytes += key;
  put_u64(bytes, binary.size());
  bytes += binary;
  bytes += sha256_hex(binary.data(), binary.size());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::remove(temp.c_str());
      return DNNB_ERROR("cannot write " + temp);
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temp.c_str());
    return DNNB_ERROR("cannot rename " + temp + " to " + path + ": " + why);
  }
  return Status::ok();
}

Result<std::string> opencl_program_binary(cl_program program, cl_device_id device) {
  cl_uint count = 0;
  DNNB_CL_TRY(clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof(count), &count, nullptr));
  if (count == 0) return DNNB_ERROR("the program holds no device");
  std::vector<cl_device_id> devices(count);
  std::vector<size_t> sizes(count);
  DNNB_CL_TRY(clGetProgramInfo(program, CL_PROGRAM_DEVICES, count * sizeof(cl_device_id), devices.data(), nullptr));
  DNNB_CL_TRY(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, count * sizeof(size_t), sizes.data(), nullptr));
  std::vector<std::vector<unsigned char>> storage(count);
  std::vector<unsigned char*> pointers(count);
  for (cl_uint i = 0; i < count; ++i) {
    storage[i].resize(sizes[i] + 1);
    pointers[i] = storage[i].data();
  }
  DNNB_CL_TRY(
      clGetProgramInfo(program, CL_PROGRAM_BINARIES, count * sizeof(unsigned char*), pointers.data(), nullptr));
  for (cl_uint i = 0; i < count; ++i)
    if (devices[i] == device) {
      if (sizes[i] == 0) return DNNB_ERROR("the driver gave an empty binary");
      return std::string(reinterpret_cast<const char*>(storage[i].data()), sizes[i]);
    }
  return DNNB_ERROR("the program holds no binary for this device");
}

}  // namespace dnnb
