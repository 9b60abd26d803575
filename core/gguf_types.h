// ggml's tensor types as GGUF files name them: every type id ggml has defined, with its name,
// values per block and bytes per block, so that `inspect` names and sizes every tensor even
// where it does not decode the values. The ids are ggml's enum ggml_type (ggml/include/ggml.h);
// ids that ggml has removed (q4_2, q4_3, the q4_0_N_M and iq4_nl_N_M repackings) keep their
// names but have no block size, as in ggml, and a file using them is refused.
#pragma once
#include <cstdint>
#include <optional>

#include "core/dtype.h"

namespace dnnb {

struct GgmlTypeInfo {
  uint32_t id = 0;
  const char* name = "";     // ggml's type_name: "f32", "q8_0", "q4_K", "iq2_xxs", ...
  uint32_t block_values = 0; // values per block (1 for scalar types); 0 for a removed type
  uint32_t block_bytes = 0;  // bytes per block; 0 for a removed type
};

// ggml's GGML_TYPE_COUNT: ids at or past it are unknown.
constexpr uint32_t kGgmlTypeCount = 42;

// The type with this id, or nullptr for an id ggml never defined (>= kGgmlTypeCount).
const GgmlTypeInfo* ggml_type_info(uint32_t id);
// True when a file may hold tensors of this type: defined and not removed.
bool ggml_type_usable(uint32_t id);

// The suite's dtype holding this type's bytes unchanged (f32, f16, bf16, f64, i8, i32, i64,
// and the block formats q8_0 and q4_0, whose 34- and 18-byte blocks are ggml's), or nothing.
std::optional<DType> ggml_compute_dtype(uint32_t id);
// True when `inspect` decodes the values of this type for statistics: the compute dtypes
// above and i16.
bool ggml_decodable(uint32_t id);
// Value `index` of a tensor of a decodable type whose data starts at `base` (a block start).
double ggml_load_value(const uint8_t* base, uint32_t id, uint64_t index);

}  // namespace dnnb
