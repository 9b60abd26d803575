// The on-disk cache of built OpenCL programs: a program built from source is saved as its binary
// (clGetProgramInfo CL_PROGRAM_BINARIES: PTX on NVIDIA, PoCL's own format on PoCL), and a later
// process builds the same program from that binary (clCreateProgramWithBinary), which skips the
// OpenCL C compiler. OpenCLDevice::program() is its only user.
//
// Entries are keyed by the SHA-256 of everything the binary depends on: the source, the build
// options, and the device's platform (name, vendor, version), name, version and driver version.
// Folder: $DNNB_CACHE_DIR/opencl, else $XDG_CACHE_HOME/dnnblocks/opencl, else
// ~/.cache/dnnblocks/opencl; DNNB_OPENCL_CACHE=off turns the cache off. Not used on a platform that
// keeps its own cache of builds (PoCL: opencl_platform_caches_builds) unless DNNB_OPENCL_CACHE=on.
// Files are untrusted: an entry is used only when its size, its key and the SHA-256 of its binary
// all check out, and the driver may still refuse it; any of these makes the caller build from
// source and rewrite it.
// Entries are written to a temporary file and renamed, so a reader never sees half an entry.
#pragma once
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <cstdint>
#include <string>

#include "core/status.h"

namespace dnnb {

// What OpenCLDevice::program() did since the device was created (tests read it).
struct ProgramCacheStats {
  int64_t source_builds = 0;  // programs built from source
  int64_t disk_hits = 0;      // programs built from a cached binary
  int64_t disk_rejected = 0;  // entries found but not used: truncated, corrupt, another key, refused by the driver
  int64_t disk_writes = 0;    // entries written
};

// The cache folder, or "" when the cache is off: DNNB_OPENCL_CACHE=off; no folder can be named
// (none of DNNB_CACHE_DIR, XDG_CACHE_HOME and HOME set); or `platform_caches_builds` and
// DNNB_OPENCL_CACHE is not "on". Read from the environment on every call: only builds ask, and
// tests change it.
std::string opencl_program_cache_dir(bool platform_caches_builds = false);

// Whether the platform keeps a cache of its own builds, so this one would only add work. PoCL
// ("Portable Computing Language") caches every build on disk, keyed by source and options
// (~/.cache/pocl/kcache), and asking it for CL_PROGRAM_BINARIES makes it compile every kernel
// of the program once more for a work-group size left open: with both caches cold that tripled
// the time of `dnnblocks check --op layernorm --backend opencl --dtype bf16` on a 2-core VM
// (191 s against 56 s without this cache).
bool opencl_platform_caches_builds(cl_platform_id platform);

// The platform and device strings a binary depends on, in one string (part of every key).
std::string opencl_binary_identity(cl_platform_id platform, cl_device_id device);

// The entry's key: hex SHA-256 over the identity, the options and the source.
std::string opencl_program_cache_key(const std::string& identity, const std::string& source,
                                     const std::string& options);

// The path of entry `key` in `dir`.
std::string opencl_program_cache_path(const std::string& dir, const std::string& key);

struct ProgramCacheEntry {
  enum class State { missing, invalid, ok };
  State state = State::missing;
  std::string binary;  // when ok
  std::string reason;  // when invalid: what did not check out
};
// Reads and validates entry `key` of `dir`.
ProgramCacheEntry read_program_cache_entry(const std::string& dir, const std::string& key);
// Writes entry `key` of `dir` (creating the folder) through a temporary file and a rename; an
// error names the path and the failing step.
Status write_program_cache_entry(const std::string& dir, const std::string& key, const std::string& binary);

// The binary of a built program for `device` (the program may hold several devices).
Result<std::string> opencl_program_binary(cl_program program, cl_device_id device);

}  // namespace dnnb
