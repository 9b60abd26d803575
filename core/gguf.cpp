// GGUF reader. The rules are ggml's reader's (ggml/src/gguf.cpp) plus the bounds llama.cpp's
// loader checks on each tensor's data; every check names its rule (docs/gguf.md has the table)
// and the byte offset of the field that breaks it, so a refusal says exactly where the file
// is wrong. Nothing is read before its bytes are known to be inside the file, and no count
// from the file sizes an allocation: entries are stored as they parse.
#include "core/gguf.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "core/safetensors_header.h"  // safetensors_rule_error, quoted_for_message, first_invalid_utf8

namespace dnnb {

const char* gguf_type_name(GgufType type) {
  static constexpr const char* kNames[kGgufTypeCount] = {
      "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(type);
  return i < kGgufTypeCount ? kNames[i] : "?";
}

namespace {

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint32_t kMaxVersion = 3;
constexpr const char* kAlignmentKey = "general.alignment";
// Fewest bytes an entry can take: a metadata entry (key length, a 1-byte key, type, a 1-byte
// value) and a tensor info (name length, n_dims, type, offset), so that counts can be checked
// against the bytes left before anything is reserved for them.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;
// Most elements reserved ahead from a count in the file; beyond it vectors grow as entries
// parse, so memory follows the bytes actually read, not a count that may be corrupt.
constexpr uint64_t kReserveCap = 4096;

// Bytes per element of a scalar value type; 0 for string and array.
uint64_t scalar_size(GgufType type) {
  switch (type) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    case GgufType::u64: case GgufType::i64: case GgufType::f64: return 8;
    default: return 0;
  }
}

std::string shown(const std::string& text) { return quoted_for_message(text); }

std::string dims_text(const std::vector<uint64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

template <typename T>
T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // little-endian host (x86-64, the suite's hosts)
  return v;
}

// Reads fields in order; every read checks the bytes left first. Errors carry the byte
// offset where the field starts and the field's name.
class Cursor {
 public:
  Cursor(const uint8_t* base, uint64_t size, const std::string& label)
      : base_(base), size_(size), label_(label) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }
  void seek(uint64_t pos) { pos_ = pos; }

  Status fail(uint64_t at, const std::string& field, const std::string& what,
              const char* rule) const {
    return safetensors_rule_error(label_, "at byte " + std::to_string(at) + ", " + field + ": " +
                                              what, rule);
  }
  Status need(uint64_t bytes, const std::string& field) const {
    if (bytes <= left()) return Status::ok();
    return fail(pos_, field, "needs " + std::to_string(bytes) + " bytes but the " +
                                 std::to_string(size_) + "-byte file ends first",
                "truncated");
  }
  template <typename T>
  Status read(T* out, const std::string& field) {
    DNNB_TRY(need(sizeof(T), field));
    *out = load_le<T>(base_ + pos_);
    pos_ += sizeof(T);
    return Status::ok();
  }
  // A gguf string: u64 length, then that many bytes. The length must be within ggml's limit
  // and the file.
  Status read_string(std::string* out, const std::string& field) {
    const uint64_t at = pos_;
    uint64_t length = 0;
    DNNB_TRY(read(&length, field + " length"));
    if (length > kGgufMaxStringLength)
      return fail(at, field, "string length " + std::to_string(length) + " exceeds " +
                                 std::to_string(kGgufMaxStringLength),
                  "string-length");
    if (length > left())
      return fail(at, field, "string length " + std::to_string(length) + " runs past the end of the " +
                                 std::to_string(size_) + "-byte file",
                  "truncated");
    if (out != nullptr) out->assign(reinterpret_cast<const char*>(base_ + pos_), length);
    pos_ += length;
    return Status::ok();
  }

 private:
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& label_;
};

Status check_utf8(const Cursor& in, uint64_t at, const std::string& field, const std::string& text) {
  const size_t bad = first_invalid_utf8(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  if (bad == text.size()) return Status::ok();
  return in.fail(at, field, shown(text) + " is not valid UTF-8 at its byte " + std::to_string(bad),
                 "utf8");
}

// One metadata value of type `type` at the cursor (the array header already read for arrays),
// `count` elements of it. Scalars are skipped over once their bytes are known to exist;
// strings are walked, recording where each starts.
Status read_values(Cursor& in, GgufKeyValue& kv, const std::string& field) {
  const uint64_t size = scalar_size(kv.type);
  if (size > 0) {
    if (kv.count > in.left() / size)
      return in.fail(in.pos(), field, std::to_string(kv.count) + " " + gguf_type_name(kv.type) +
                                          " values need " + (kv.count > UINT64_MAX / size ? "more than 2^64" : std::to_string(kv.count * size)) +
                                          " bytes but " + std::to_string(in.left()) + " are left",
                     "truncated");
    in.seek(in.pos() + kv.count * size);
    return Status::ok();
  }
  // Strings: each is at least its 8-byte length.
  if (kv.count > in.left() / 8)
    return in.fail(in.pos(), field, std::to_string(kv.count) + " strings need at least " +
                                        std::to_string(kv.count) + " x 8 bytes but " +
                                        std::to_string(in.left()) + " are left",
                   "truncated");
  // Grown as strings are read, not sized by the count: a bad count in a large file must not
  // allocate before the strings it promises turn out to be missing.
  kv.string_offsets.reserve(std::min<uint64_t>(kv.count, kReserveCap));
  for (uint64_t i = 0; i < kv.count; ++i) {
    kv.string_offsets.push_back(in.pos());
    DNNB_TRY(in.read_string(nullptr, kv.is_array ? field + " element " + std::to_string(i) : field));
  }
  return Status::ok();
}

Status read_key_value(Cursor& in, uint64_t index, std::unordered_set<std::string>& keys,
                      GgufKeyValue& kv) {
  kv.entry_offset = in.pos();
  const std::string entry = "metadata entry " + std::to_string(index);
  DNNB_TRY(in.read_string(&kv.key, entry + " key"));
  if (kv.key.empty()) return in.fail(kv.entry_offset, entry + " key", "the key is empty", "empty-key");
  DNNB_TRY(check_utf8(in, kv.entry_offset, entry + " key", kv.key));
  if (!keys.insert(kv.key).second)
    return in.fail(kv.entry_offset, entry + " key", shown(kv.key) + " appears twice", "duplicate-key");
  const std::string field = "value of " + shown(kv.key);
  const uint64_t type_at = in.pos();
  uint32_t type = 0;
  DNNB_TRY(in.read(&type, field + " type"));
  if (type == static_cast<uint32_t>(GgufType::array)) {
    kv.is_array = true;
    const uint64_t element_at = in.pos();
    DNNB_TRY(in.read(&type, field + " array element type"));
    DNNB_TRY(in.read(&kv.count, field + " array length"));
    if (type == static_cast<uint32_t>(GgufType::array))
      return in.fail(element_at, field, "an array of arrays (ggml refuses nested arrays)", "nested-array");
    if (type >= kGgufTypeCount)
      return in.fail(element_at, field, "array element type " + std::to_string(type) +
                                            " is not a GGUF value type (0..12)",
                     "value-type");
    if (kv.count > kGgufMaxArrayElements)
      return in.fail(element_at + 4, field, "array length " + std::to_string(kv.count) +
                                                " exceeds " + std::to_string(kGgufMaxArrayElements),
                     "array-length");
  } else if (type >= kGgufTypeCount) {
    return in.fail(type_at, field, "type " + std::to_string(type) + " is not a GGUF value type (0..12)",
                   "value-type");
  }
  kv.type = static_cast<GgufType>(type);
  kv.value_offset = in.pos();
  return read_values(in, kv, field);
}

// ggml's check that ne[0] x ... x ne[3] (missing dims 1) stays below INT64_MAX, written as it
// writes it so the same shapes pass; a tensor with a zero dim always passes.
bool numel_fits(const int64_t ne[4]) {
  for (int i = 0; i < 4; ++i)
    if (ne[i] == 0) return true;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return !(kMax / ne[1] <= ne[0] || kMax / ne[2] <= ne[0] * ne[1] ||
           kMax / ne[3] <= ne[0] * ne[1] * ne[2]);
}

Status read_tensor_info(Cursor& in, uint64_t index, std::unordered_set<std::string>& names,
                        GgufTensorInfo& info) {
  info.info_offset = in.pos();
  const std::string entry = "tensor info " + std::to_string(index);
  DNNB_TRY(in.read_string(&info.name, entry + " name"));
  if (info.name.size() > kGgufMaxNameLength)
    return in.fail(info.info_offset, entry + " name",
                   shown(info.name) + " has " + std::to_string(info.name.size()) +
                       " bytes, more than ggml's " + std::to_string(kGgufMaxNameLength),
                   "name-length");
  if (info.name.find('\0') != std::string::npos)
    return in.fail(info.info_offset, entry + " name",
                   shown(info.name) + " holds a NUL byte (ggml would cut the name there)", "name-nul");
  DNNB_TRY(check_utf8(in, info.info_offset, entry + " name", info.name));
  if (!names.insert(info.name).second)
    return in.fail(info.info_offset, entry + " name", shown(info.name) + " appears twice",
                   "duplicate-name");
  const std::string who = "tensor " + shown(info.name);

  const uint64_t dims_at = in.pos();
  uint32_t n_dims = 0;
  DNNB_TRY(in.read(&n_dims, who + " n_dims"));
  if (n_dims > kGgufMaxDims)
    return in.fail(dims_at, who + " n_dims", std::to_string(n_dims) + " dimensions, more than ggml's " +
                                                 std::to_string(kGgufMaxDims),
                   "n-dims");
  int64_t ne[4] = {1, 1, 1, 1};
  for (uint32_t d = 0; d < n_dims; ++d) {
    const uint64_t at = in.pos();
    uint64_t dim = 0;
    DNNB_TRY(in.read(&dim, who + " dim " + std::to_string(d)));
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return in.fail(at, who + " dim " + std::to_string(d),
                     std::to_string(dim) + " is negative as ggml's int64 dims read it", "dim-negative");
    info.dims.push_back(dim);
    ne[d] = static_cast<int64_t>(dim);
  }
  if (!numel_fits(ne))
    return in.fail(dims_at, who + " dims", "the element count of " + dims_text(info.dims) +
                                               " is not below 2^63 - 1",
                   "size-overflow");
  // With a zero dim the others may multiply past 2^63 (ggml lets them): the count is 0.
  const bool empty = ne[0] == 0 || ne[1] == 0 || ne[2] == 0 || ne[3] == 0;
  info.numel = empty ? 0 : static_cast<uint64_t>(ne[0] * ne[1] * ne[2] * ne[3]);

  const uint64_t type_at = in.pos();
  DNNB_TRY(in.read(&info.type, who + " type"));
  const GgmlTypeInfo* type = ggml_type_info(info.type);
  if (type == nullptr)
    return in.fail(type_at, who + " type", "ggml type " + std::to_string(info.type) +
                                               " is not defined (ids 0.." +
                                               std::to_string(kGgmlTypeCount - 1) + ")",
                   "tensor-type");
  if (!ggml_type_usable(info.type))
    return in.fail(type_at, who + " type", std::string("ggml type ") + std::to_string(info.type) +
                                               " (" + type->name + ") was removed from ggml",
                   "tensor-type");
  if (static_cast<uint64_t>(ne[0]) % type->block_values != 0)
    return in.fail(dims_at, who + " dims", "row length dims[0] = " + std::to_string(ne[0]) +
                                               " is not a multiple of " + type->name + "'s " +
                                               std::to_string(type->block_values) + "-value blocks",
                   "block-multiple");
  const uint64_t blocks = info.numel / type->block_values;
  if (blocks > std::numeric_limits<uint64_t>::max() / type->block_bytes)
    return in.fail(dims_at, who + " dims", dims_text(info.dims) + " of " + type->name +
                                               " takes more than 2^64 bytes",
                   "size-overflow");
  info.bytes = blocks * type->block_bytes;
  return in.read(&info.offset, who + " offset");
}

}  // namespace

bool GgufFile::has_magic(const uint8_t* bytes, size_t size) {
  return size >= 4 && std::memcmp(bytes, kMagic, 4) == 0;
}

Status GgufFile::parse() {
  Cursor in(base(), size(), file_.path());
  if (size() < 4 || std::memcmp(base(), kMagic, 4) != 0) {
    if (size() < 4) return in.need(4, "magic");
    std::string shown;
    for (int i = 0; i < 4; ++i) shown += std::isprint(base()[i]) ? static_cast<char>(base()[i]) : '?';
    return in.fail(0, "magic", "'" + shown + "' is not 'GGUF'", "magic");
  }
  in.seek(4);
  DNNB_TRY(in.read(&version_, "version"));
  if ((version_ & 0xFFFF) == 0 && version_ != 0)
    return in.fail(4, "version", std::to_string(version_) +
                                     ": a big-endian file (ggml reads little-endian files only)",
                   "byte-order");
  if (version_ < 2 || version_ > kMaxVersion)
    return in.fail(4, "version", std::to_string(version_) + (version_ == 1 ? " (GGUF v1, which ggml no longer reads)" : "") +
                                     " is not 2 or 3",
                   "version");
  uint64_t n_tensors = 0, n_kv = 0;
  DNNB_TRY(in.read(&n_tensors, "tensor_count"));
  DNNB_TRY(in.read(&n_kv, "metadata_kv_count"));
  if (n_tensors > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return in.fail(8, "tensor_count", std::to_string(n_tensors) + " is negative as ggml's int64 reads it",
                   "count");
  if (n_kv > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return in.fail(16, "metadata_kv_count", std::to_string(n_kv) + " is negative as ggml's int64 reads it",
                   "count");
  if (n_kv > in.left() / kMinKvBytes)
    return in.fail(16, "metadata_kv_count", std::to_string(n_kv) + " entries of at least " +
                                                std::to_string(kMinKvBytes) + " bytes cannot fit the " +
                                                std::to_string(in.left()) + " bytes left",
                   "count-past-eof");
  if (n_tensors > (in.left() - n_kv * kMinKvBytes) / kMinTensorInfoBytes)
    return in.fail(8, "tensor_count", std::to_string(n_tensors) + " tensor infos of at least " +
                                          std::to_string(kMinTensorInfoBytes) + " bytes cannot fit the " +
                                          std::to_string(in.left()) + " bytes left after the metadata",
                   "count-past-eof");

  // Entries are appended as they parse (see kReserveCap).
  std::unordered_set<std::string> keys;
  kvs_.reserve(std::min<uint64_t>(n_kv, kReserveCap));
  for (uint64_t i = 0; i < n_kv; ++i) {
    kvs_.emplace_back();
    DNNB_TRY(read_key_value(in, i, keys, kvs_.back()));
  }
  if (const GgufKeyValue* kv = find_key(kAlignmentKey)) {
    if (kv->is_array || kv->type != GgufType::u32)
      return in.fail(kv->entry_offset, "key " + shown(kAlignmentKey),
                     std::string("is ") + (kv->is_array ? "an array" : gguf_type_name(kv->type)) +
                         ", not u32",
                     "alignment-type");
    alignment_ = as_uint64(*kv, 0);
    if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0)
      return in.fail(kv->value_offset, "key " + shown(kAlignmentKey),
                     std::to_string(alignment_) + " is not a power of 2", "alignment-value");
  }

  std::unordered_set<std::string> names;
  tensors_.reserve(std::min<uint64_t>(n_tensors, kReserveCap));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    tensors_.emplace_back();
    DNNB_TRY(read_tensor_info(in, i, names, tensors_.back()));
  }

  // The data section starts at the next multiple of the alignment (when there are tensors).
  data_offset_ = in.pos();
  if (n_tensors > 0) {
    const uint64_t pad = (alignment_ - data_offset_ % alignment_) % alignment_;
    if (pad > in.left())
      return in.fail(data_offset_, "data section", "the padding to alignment " + std::to_string(alignment_) +
                                                       " runs past the end of the " + std::to_string(size()) +
                                                       "-byte file",
                     "data-bounds");
    data_offset_ += pad;
  }
  // Tensors lie in file order, each at the end of the one before padded to the alignment
  // (ggml's rule: offset == the sum of the padded sizes before it), and inside the file.
  const uint64_t data_size = size() - data_offset_;
  uint64_t expected = 0;
  for (auto& info : tensors_) {
    const std::string field = "tensor " + shown(info.name) + " offset";
    const uint64_t at = info.info_offset;
    if (info.offset % alignment_ != 0)
      return in.fail(at, field, std::to_string(info.offset) + " is not a multiple of the alignment " +
                                    std::to_string(alignment_),
                     "tensor-align");
    if (info.offset < expected)
      return in.fail(at, field, std::to_string(info.offset) + " overlaps the tensor before it, which "
                                    "ends (padded) at data byte " + std::to_string(expected),
                     "overlap");
    if (info.offset > expected)
      return in.fail(at, field, std::to_string(info.offset) + " leaves data bytes [" +
                                    std::to_string(expected) + ", " + std::to_string(info.offset) +
                                    ") to no tensor; ggml expects each tensor at the padded end of the one before",
                     "hole");
    if (info.offset > data_size || info.bytes > data_size - info.offset)
      return in.fail(at, field, "data bytes [" + std::to_string(info.offset) + ", +" +
                                    std::to_string(info.bytes) + ") run past the " +
                                    std::to_string(data_size) + "-byte data section",
                     "data-bounds");
    info.data = base() + data_offset_ + info.offset;
    const uint64_t padded = info.bytes + (alignment_ - info.bytes % alignment_) % alignment_;
    if (padded < info.bytes || __builtin_add_overflow(expected, padded, &expected))
      return in.fail(at, field, "the padded data size overflows 64 bits", "size-overflow");
  }
  return Status::ok();
}

Result<std::shared_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.status();
  std::shared_ptr<GgufFile> file(new GgufFile());
  file->file_ = std::move(*mapped);
  DNNB_TRY(file->parse());
  return file;
}

Result<std::shared_ptr<GgufFile>> GgufFile::from_bytes(std::vector<uint8_t> bytes,
                                                       const std::string& label) {
  std::shared_ptr<GgufFile> file(new GgufFile());
  file->file_ = MappedFile::from_bytes(std::move(bytes), label);
  DNNB_TRY(file->parse());
  return file;
}

const GgufKeyValue* GgufFile::find_key(std::string_view key) const {
  for (const auto& kv : kvs_)
    if (kv.key == key) return &kv;
  return nullptr;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const auto& info : tensors_)
    if (info.name == name) return &info;
  return nullptr;
}

int64_t GgufFile::as_int64(const GgufKeyValue& kv, uint64_t i) const {
  const uint8_t* p = base() + kv.value_offset + i * scalar_size(kv.type);
  switch (kv.type) {
    case GgufType::i8: return load_le<int8_t>(p);
    case GgufType::i16: return load_le<int16_t>(p);
    case GgufType::i32: return load_le<int32_t>(p);
    case GgufType::i64: return load_le<int64_t>(p);
    case GgufType::boolean: return *p != 0;  // ggml reads any nonzero byte as true
    case GgufType::u8: case GgufType::u16: case GgufType::u32: case GgufType::u64:
      return static_cast<int64_t>(as_uint64(kv, i));
    default: return 0;  // not an integer type
  }
}

uint64_t GgufFile::as_uint64(const GgufKeyValue& kv, uint64_t i) const {
  const uint8_t* p = base() + kv.value_offset + i * scalar_size(kv.type);
  switch (kv.type) {
    case GgufType::u8: return *p;
    case GgufType::u16: return load_le<uint16_t>(p);
    case GgufType::u32: return load_le<uint32_t>(p);
    case GgufType::u64: return load_le<uint64_t>(p);
    case GgufType::i8: case GgufType::i16: case GgufType::i32: case GgufType::i64:
    case GgufType::boolean:
      return static_cast<uint64_t>(as_int64(kv, i));
    default: return 0;  // not an integer type
  }
}

double GgufFile::number(const GgufKeyValue& kv, uint64_t i) const {
  const uint8_t* p = base() + kv.value_offset + i * scalar_size(kv.type);
  switch (kv.type) {
    case GgufType::f32: return load_le<float>(p);
    case GgufType::f64: return load_le<double>(p);
    case GgufType::u8: case GgufType::u16: case GgufType::u32: case GgufType::u64:
      return static_cast<double>(as_uint64(kv, i));
    default: return static_cast<double>(as_int64(kv, i));
  }
}

std::string GgufFile::string(const GgufKeyValue& kv, uint64_t i) const {
  const uint64_t at = kv.string_offsets[i];
  const uint64_t length = load_le<uint64_t>(base() + at);
  return std::string(reinterpret_cast<const char*>(base() + at + 8), length);
}

Result<Tensor> GgufFile::load(std::string_view name, DeviceRuntime& host) const {
  const GgufTensorInfo* info = find_tensor(name);
  if (info == nullptr)
    return Status::bad_input(file_.path() + ": no tensor named " + shown(std::string(name)));
  const std::optional<DType> dtype = ggml_compute_dtype(info->type);
  if (!dtype)
    return Status::bad_input(file_.path() + ": tensor " + shown(info->name) + " is ggml type " +
                             ggml_type_info(info->type)->name +
                             ", which the suite does not compute in: it cannot be loaded as a "
                             "tensor (dnnblocks inspect names and sizes it)");
  // Row-major shape: the file's dims reversed. ggml's count check keeps every product below
  // 2^63 except in a zero-element tensor, whose other dims may multiply past it; a Shape's
  // strides multiply the trailing dims, so the nonzero dims must multiply within int64.
  Shape shape(info->dims.rbegin(), info->dims.rend());
  int64_t product = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(product, d == 0 ? 1 : d, &product))
      return Status::bad_input(file_.path() + ": tensor " + shown(info->name) + " has dims " +
                               dims_text(info->dims) +
                               ", whose products pass 2^63 - 1: it cannot be loaded as a tensor");
  auto tensor = empty_tensor(host, *dtype, shape);
  if (!tensor) return tensor.status();
  if (info->bytes > 0) DNNB_TRY(host.upload(*tensor->buffer, 0, info->data, info->bytes));
  return tensor;
}

}  // namespace dnnb
