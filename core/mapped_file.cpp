#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace dnnb {

Result<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::bad_input(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string why = S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file";
    ::close(fd);
    return Status::bad_input(path + ": cannot read: " + why);
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void* mapping = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int mmap_errno = errno;
    ::close(fd);
    if (mapping == MAP_FAILED)
      return Status::error(path + ": mmap of " + std::to_string(file.size_) + " bytes failed: " +
                           std::strerror(mmap_errno));
    file.mapping_ = mapping;
    file.data_ = static_cast<const uint8_t*>(mapping);
  } else {
    ::close(fd);
  }
  return file;
}

MappedFile MappedFile::from_bytes(std::vector<uint8_t> bytes, std::string label) {
  MappedFile file;
  file.path_ = std::move(label);
  file.owned_ = std::move(bytes);
  file.data_ = file.owned_.data();
  file.size_ = file.owned_.size();
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this == &other) return *this;
  release();
  path_ = std::move(other.path_);
  size_ = other.size_;
  mapping_ = other.mapping_;
  // A moved vector keeps its heap buffer, so data_ stays valid for owned bytes too.
  owned_ = std::move(other.owned_);
  data_ = mapping_ != nullptr ? static_cast<const uint8_t*>(mapping_) : owned_.data();
  other.mapping_ = nullptr;
  other.data_ = nullptr;
  other.size_ = 0;
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
  mapping_ = nullptr;
  data_ = nullptr;
  size_ = 0;
  owned_.clear();
}

Result<const uint8_t*> MappedFile::bytes(uint64_t offset, uint64_t length, const std::string& what) const {
  if (offset > size_ || length > size_ - offset)
    return Status::bad_input(path_ + ": " + what + ": bytes [" + std::to_string(offset) + ", +" +
                             std::to_string(length) + ") run past the end of the " + std::to_string(size_) +
                             "-byte file");
  return data_ + offset;
}

}  // namespace dnnb
