// The ggml type table (ggml/src/ggml.c's type_traits: type_name, blck_size, type_size) and
// the decoding of the types the suite computes in.
#include "core/gguf_types.h"

#include <cstring>

namespace dnnb {

namespace {

constexpr uint32_t kQK = 256;  // ggml's QK_K: values per super-block of the k-quants and iq types

// Indexed by id. Removed ids have block_values 0.
constexpr GgmlTypeInfo kTypes[kGgmlTypeCount] = {
    {0, "f32", 1, 4},
    {1, "f16", 1, 2},
    {2, "q4_0", 32, 2 + 16},
    {3, "q4_1", 32, 2 + 2 + 16},
    {4, "q4_2", 0, 0},  // removed from ggml
    {5, "q4_3", 0, 0},  // removed from ggml
    {6, "q5_0", 32, 2 + 4 + 16},
    {7, "q5_1", 32, 2 + 2 + 4 + 16},
    {8, "q8_0", 32, 2 + 32},
    {9, "q8_1", 32, 4 + 4 + 32},
    {10, "q2_K", kQK, 2 + 2 + kQK / 16 + kQK / 4},
    {11, "q3_K", kQK, 2 + kQK / 4 + kQK / 8 + 12},
    {12, "q4_K", kQK, 2 + 2 + kQK / 2 + 12},
    {13, "q5_K", kQK, 2 + 2 + kQK / 2 + kQK / 8 + 12},
    {14, "q6_K", kQK, 2 + kQK / 2 + kQK / 4 + kQK / 16},
    {15, "q8_K", kQK, 4 + kQK + kQK / 8},
    {16, "iq2_xxs", kQK, 2 + kQK / 4},
    {17, "iq2_xs", kQK, 2 + kQK / 4 + kQK / 32},
    {18, "iq3_xxs", kQK, 2 + kQK / 4 + kQK / 8},
    {19, "iq1_s", kQK, 2 + kQK / 8 + kQK / 16},
    {20, "iq4_nl", 32, 2 + 16},
    {21, "iq3_s", kQK, 2 + kQK / 4 + kQK / 8 + kQK / 32 + 4},
    {22, "iq2_s", kQK, 2 + kQK / 4 + kQK / 16},
    {23, "iq4_xs", kQK, 2 + 2 + kQK / 2 + kQK / 64},
    {24, "i8", 1, 1},
    {25, "i16", 1, 2},
    {26, "i32", 1, 4},
    {27, "i64", 1, 8},
    {28, "f64", 1, 8},
    {29, "iq1_m", kQK, kQK / 8 + kQK / 16 + kQK / 32},
    {30, "bf16", 1, 2},
    {31, "q4_0_4_4", 0, 0},  // removed: repacked at load time now
    {32, "q4_0_4_8", 0, 0},
    {33, "q4_0_8_8", 0, 0},
    {34, "tq1_0", kQK, 2 + 4 * 13},
    {35, "tq2_0", kQK, 2 + kQK / 4},
    {36, "iq4_nl_4_4", 0, 0},  // removed
    {37, "iq4_nl_4_8", 0, 0},
    {38, "iq4_nl_8_8", 0, 0},
    {39, "mxfp4", 32, 1 + 16},
    {40, "nvfp4", 64, 4 + 32},
    {41, "q1_0", 128, 2 + 16},
};

constexpr bool ids_are_indices() {
  for (uint32_t i = 0; i < kGgmlTypeCount; ++i)
    if (kTypes[i].id != i) return false;
  return true;
}
static_assert(ids_are_indices(), "kTypes must be indexed by ggml type id");

template <typename T>
T load_at(const uint8_t* base, uint64_t index) {
  T v;
  std::memcpy(&v, base + index * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t id) {
  return id < kGgmlTypeCount ? &kTypes[id] : nullptr;
}

bool ggml_type_usable(uint32_t id) { return id < kGgmlTypeCount && kTypes[id].block_values > 0; }

std::optional<DType> ggml_compute_dtype(uint32_t id) {
  switch (id) {
    case 0: return DType::f32;
    case 1: return DType::f16;
    case 2: return DType::q4_0;
    case 8: return DType::q8_0;
    case 24: return DType::i8;
    case 26: return DType::i32;
    case 27: return DType::i64;
    case 28: return DType::f64;
    case 30: return DType::bf16;
    default: return std::nullopt;
  }
}

bool ggml_decodable(uint32_t id) { return id == 25 || ggml_compute_dtype(id).has_value(); }

double ggml_load_value(const uint8_t* base, uint32_t id, uint64_t index) {
  if (id == 25) return load_at<int16_t>(base, index);
  // The suite's load_element decodes every compute dtype, the block formats by ggml's rule.
  return load_element(base, *ggml_compute_dtype(id), static_cast<int64_t>(index));
}

}  // namespace dnnb
