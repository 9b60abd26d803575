// libFuzzer target: GgufFile::from_bytes on arbitrary bytes, then what `dnnblocks inspect`
// does with an accepted file (every metadata value read, statistics over every decodable
// tensor, a load of each tensor). Any crash, sanitizer report or inconsistency between the
// accepted infos and the bytes is a bug in the reader.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/gguf.h"
#include "core/gguf_types.h"
#include "core/host_device.h"

namespace {

// Inconsistencies the reader's rules should have made impossible abort, so libFuzzer
// reports them like crashes.
void require(bool condition) {
  if (!condition) std::abort();
}

void check_accepted_file(const dnnb::GgufFile& file, size_t file_size) {
  require(file.alignment() > 0 && (file.alignment() & (file.alignment() - 1)) == 0);
  require(file.data_offset() <= file_size);
  for (const auto& kv : file.metadata()) {
    require(file.find_key(kv.key) == &kv);
    for (uint64_t i = 0; i < kv.count; ++i) {
      if (kv.type == dnnb::GgufType::string) {
        require(file.string(kv, i).size() <= file_size);
      } else {
        (void)file.number(kv, i);
        (void)file.as_int64(kv, i);
      }
    }
  }
  uint64_t end = 0;  // tensors lie in file order, aligned, inside the data
  for (const auto& info : file.tensors()) {
    require(info.offset >= end && info.offset % file.alignment() == 0);
    require(info.bytes <= file_size - file.data_offset() - info.offset);
    end = info.offset + info.bytes;
    const dnnb::GgmlTypeInfo* type = dnnb::ggml_type_info(info.type);
    require(type != nullptr && dnnb::ggml_type_usable(info.type));
    require(info.numel % type->block_values == 0 &&
            info.numel / type->block_values * type->block_bytes == info.bytes);
    if (dnnb::ggml_decodable(info.type)) {
      double sum = 0;
      for (uint64_t i = 0; i < info.numel; ++i) {
        const double v = dnnb::ggml_load_value(info.data, info.type, i);
        if (!std::isnan(v)) sum += v;
      }
      (void)sum;
    }
    auto tensor = file.load(info.name, dnnb::scratch_host());
    if (tensor.is_ok())
      require(dnnb::storage_bytes(tensor->dtype, tensor->numel()) == info.bytes);
    else
      require(tensor.status().code == dnnb::StatusCode::bad_input);
    require(file.find_tensor(info.name) == &info);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  auto file = dnnb::GgufFile::from_bytes(std::move(bytes), "fuzz");
  if (!file) {
    require(file.status().code == dnnb::StatusCode::bad_input);
    return 0;
  }
  check_accepted_file(**file, size);
  return 0;
}
