// A read-only file in memory: mmap'd from a path, or bytes the caller already holds (tests,
// fuzzing). The one place the suite's file readers (GGUF, safetensors) get a file's bytes;
// every error names the path. The readers validate the contents; this only knows the size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace dnnb {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path` read-only (MAP_PRIVATE). bad_input "PATH: cannot open: ..." when it cannot be
  // opened and "PATH: cannot read: ..." when it is a directory or not a regular file; error
  // when mmap fails. An empty file holds no bytes (size 0, data nullptr): mmap refuses length
  // 0, and each reader reports a too-short file by its own rule.
  static Result<MappedFile> open(const std::string& path);
  // Owns `bytes`; `label` stands for the path in errors.
  static MappedFile from_bytes(std::vector<uint8_t> bytes, std::string label);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // [offset, offset + length) of the file, or bad_input "PATH: WHAT: bytes [offset, +length)
  // run past the end of the N-byte file" (overflow-safe).
  Result<const uint8_t*> bytes(uint64_t offset, uint64_t length, const std::string& what) const;

 private:
  void release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;     // the mmap'd region, or nullptr when owned_ holds the bytes
  std::vector<uint8_t> owned_;
};

}  // namespace dnnb
