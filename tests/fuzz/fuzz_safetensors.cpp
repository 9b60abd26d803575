// libFuzzer target: SafetensorsFile::from_bytes on arbitrary bytes, then what `dnnblocks
// inspect` does with an accepted file (statistics over every element of every entry, and a
// load of each). Any crash, sanitizer report or inconsistency between an accepted header and
// its data is a bug in the reader.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/host_device.h"
#include "core/safetensors.h"

namespace {

// Inconsistencies the reader's rules should have made impossible abort, so libFuzzer
// reports them like crashes.
void require(bool condition) {
  if (!condition) std::abort();
}

void check_accepted_file(const dnnb::SafetensorsFile& file, size_t file_size) {
  uint64_t covered = 0;
  for (const auto& entry : file.entries()) {
    require(entry.begin == covered && entry.begin <= entry.end && entry.end <= file_size);
    covered = entry.end;
    const int64_t numel = dnnb::shape_numel(entry.shape);
    const uint64_t bytes = static_cast<uint64_t>(numel) * dnnb::dtype_size(entry.dtype);
    require(bytes == entry.end - entry.begin);
    // inspect's statistics, over the bytes in place.
    double sum = 0;
    int64_t nan_count = 0;
    for (int64_t i = 0; i < numel; ++i) {
      const double v = dnnb::load_element(entry.data, entry.dtype, i);
      if (std::isnan(v)) ++nan_count; else sum += v;
    }
    (void)sum;
    auto tensor = file.load(entry.name, dnnb::scratch_host());
    require(tensor.is_ok() && tensor->numel() == numel);
    require(file.find(entry.name) != nullptr);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  auto file = dnnb::SafetensorsFile::from_bytes(std::move(bytes), "fuzz");
  if (!file) {
    require(file.status().code == dnnb::StatusCode::bad_input);
    return 0;
  }
  check_accepted_file(**file, size);
  return 0;
}
