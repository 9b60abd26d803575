// SHA-256 (FIPS 180-4), for fixture manifests: a file whose hash differs is not used.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace dnnb {

std::string sha256_hex(const void* data, size_t size);
// Hash of a whole file; bad_input naming the file if it cannot be read.
Result<std::string> sha256_file(const std::string& path);

}  // namespace dnnb
