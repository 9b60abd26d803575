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
#include "core/safetensors_dtype.h"

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
    // numel x bits is whole bytes and fits 64 bits: the reader checked it.
    const unsigned bits = dnnb::safetensors_bits(entry.file_dtype);
    require(entry.numel == 0 || entry.numel <= UINT64_MAX / bits);
    require(entry.numel * bits % 8 == 0 && entry.numel * bits / 8 == entry.end - entry.begin);
    // inspect's statistics, over the bytes in place.
    if (dnnb::safetensors_decodable(entry.file_dtype)) {
      const uint64_t values = entry.numel * dnnb::safetensors_values_per_element(entry.file_dtype);
      double sum = 0;
      int64_t nan_count = 0;
      for (uint64_t i = 0; i < values; ++i) {
        const double v = dnnb::decode_safetensors_value(entry.data, entry.file_dtype, i);
        if (std::isnan(v)) ++nan_count; else sum += v;
      }
      (void)sum;
    }
    auto tensor = file.load(entry.name, dnnb::scratch_host());
    // load() makes a tensor exactly when the entry has a compute dtype, and refuses otherwise.
    require(tensor.is_ok() == entry.dtype.has_value());
    if (tensor.is_ok())
      require(static_cast<uint64_t>(tensor->numel()) == entry.numel &&
              static_cast<int64_t>(dnnb::storage_bytes(*entry.dtype, tensor->numel())) ==
                  static_cast<int64_t>(entry.end - entry.begin));
    else
      require(tensor.status().code == dnnb::StatusCode::bad_input);
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
