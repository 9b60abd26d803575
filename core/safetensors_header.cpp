// The safetensors header parser. The reference reader checks the header as UTF-8, then
// deserializes it with serde_json into {"__metadata__": {string: string} or null,
// NAME: {"dtype", "shape", "data_offsets"}}. This parser follows serde_json's grammar and
// limits exactly (they decide what the reference accepts):
//   - whitespace is space, tab, LF and CR only, before and after the one top-level value;
//     anything else after it (NUL padding included) is refused, and so is a byte-order mark;
//   - strings: no raw byte below 0x20; escapes \" \\ \/ \b \f \n \r \t \uXXXX, and a
//     \u surrogate must be a leading one followed by a trailing one;
//   - numbers: JSON's grammar; a value serde_json's float conversion takes to infinity is
//     refused, even in an ignored field;
//   - at most 127 nested arrays and objects;
// and reads the entries as serde's derived deserializers do: a tensor is an object (unknown
// fields ignored, known ones at most once) or the array [dtype, shape, data_offsets]; a dtype
// is a name or {NAME: null}; shape and offsets are integers in [0, 2^64).
// Ignored values are checked but not stored: a large ignored field costs no memory.
#include "core/safetensors_header.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <string_view>

namespace dnnb {

namespace {

constexpr std::string_view kMetadataKey = "__metadata__";
// serde_json starts with 128 levels and fails when a container takes the count to 0.
constexpr int kMaxDepth = 127;

// 1e0 .. 1e308, each correctly rounded (as serde_json's table of literals is).
const std::array<double, 309>& powers_of_ten() {
  static const std::array<double, 309> table = [] {
    std::array<double, 309> out{};
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = std::strtod(("1e" + std::to_string(i)).c_str(), nullptr);
    return out;
  }();
  return table;
}

bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

// The next multiply-add would exceed `max` (serde_json's overflow! test).
template <typename T>
bool would_overflow(T value, T digit, T max) {
  return value >= max / 10 && (value > max / 10 || digit > max % 10);
}

struct JsonNumber {
  bool is_u64 = false;  // written as an integer in [0, 2^64): the only form an offset takes
  uint64_t u64 = 0;
  std::string_view text;
};

class HeaderParser {
 public:
  HeaderParser(const uint8_t* text, size_t size, const std::string& label)
      : text_(text), size_(size), label_(label) {}

  Result<SafetensorsHeader> parse() {
    if (!parse_top()) return error_;
    return std::move(header_);
  }

 private:
  const uint8_t* text_;
  size_t size_;
  const std::string& label_;
  size_t pos_ = 0;
  int depth_ = 0;
  Status error_ = Status::ok();
  SafetensorsHeader header_;

  // ----- errors -----
  bool fail(const std::string& what, const char* rule) {
    error_ = safetensors_rule_error(label_, what, rule);
    return false;
  }
  bool json_error(const std::string& what) {
    return fail("header is not valid JSON: " + what + " at header byte " + std::to_string(pos_),
                "header-json");
  }

  // ----- input -----
  bool at_end() const { return pos_ >= size_; }
  uint8_t peek() const { return at_end() ? 0 : text_[pos_]; }
  void skip_whitespace() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' ||
                         text_[pos_] == '\r'))
      ++pos_;
  }
  bool expect(uint8_t c, const char* what) {
    skip_whitespace();
    if (at_end()) return json_error(std::string("input ends where ") + what + " was expected");
    if (text_[pos_] != c) return json_error(std::string("expected ") + what);
    ++pos_;
    return true;
  }
  bool enter() {
    if (++depth_ > kMaxDepth)
      return fail("header JSON nests deeper than " + std::to_string(kMaxDepth) +
                      " arrays and objects (serde_json's limit)",
                  "header-depth");
    ++pos_;  // the '[' or '{'
    return true;
  }
  void leave() { --depth_; }

  // "an object", "a string": what the value starting at pos_ is, for messages.
  std::string kind_here() const {
    switch (peek()) {
      case '{': return "an object";
      case '[': return "an array";
      case '"': return "a string";
      case 't': case 'f': return "a boolean";
      case 'n': return "null";
      default: return is_digit(peek()) || peek() == '-' ? "a number" : "not a JSON value";
    }
  }

  // ----- JSON grammar (serde_json's) -----
  bool parse_literal(std::string_view word) {
    for (char c : word) {
      if (at_end()) return json_error("input ends inside a literal");
      if (text_[pos_] != static_cast<uint8_t>(c)) return json_error("invalid literal");
      ++pos_;
    }
    return true;
  }

  bool parse_hex4(uint16_t* out) {
    if (size_ - pos_ < 4) {
      pos_ = size_;
      return json_error("input ends inside a \\u escape");
    }
    uint16_t value = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      const uint8_t c = text_[pos_];
      int digit = -1;
      if (c >= '0' && c <= '9') digit = c - '0';
      if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
      if (digit < 0) return json_error("invalid \\u escape");
      value = static_cast<uint16_t>(value * 16 + digit);
    }
    *out = value;
    return true;
  }

  static void append_utf8(uint32_t code, std::string* out) {
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
      return;
    }
    const int extra = code < 0x800 ? 1 : code < 0x10000 ? 2 : 3;  // continuation bytes
    const uint32_t lead = (0xFF00u >> (extra + 1)) & 0xFF;  // 110xxxxx, 1110xxxx, 11110xxx
    out->push_back(static_cast<char>(lead | (code >> (6 * extra))));
    for (int i = extra - 1; i >= 0; --i)
      out->push_back(static_cast<char>(0x80 | ((code >> (6 * i)) & 0x3F)));
  }

  bool parse_unicode_escape(std::string* out) {
    uint16_t first = 0;
    if (!parse_hex4(&first)) return false;
    if (first >= 0xDC00 && first <= 0xDFFF)
      return json_error("\\u escape is a trailing surrogate with no leading one");
    uint32_t code = first;
    if (first >= 0xD800 && first <= 0xDBFF) {
      if (size_ - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u')
        return json_error("\\u escape is a leading surrogate not followed by a \\u escape");
      pos_ += 2;
      uint16_t second = 0;
      if (!parse_hex4(&second)) return false;
      if (second < 0xDC00 || second > 0xDFFF)
        return json_error("\\u escape is a leading surrogate not followed by a trailing one");
      code = 0x10000 + ((static_cast<uint32_t>(first) - 0xD800) << 10) + (second - 0xDC00);
    }
    if (out) append_utf8(code, out);
    return true;
  }

  // A string at pos_ (which is '"'); `out` may be null for a string that is only checked.
  // The header passed UTF-8 validation, so raw bytes are copied as they are.
  bool parse_string(std::string* out) {
    ++pos_;
    while (true) {
      if (at_end()) return json_error("input ends inside a string");
      const uint8_t c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return json_error("raw control byte in a string (escape it)");
      ++pos_;
      if (c != '\\') {
        if (out) out->push_back(static_cast<char>(c));
        continue;
      }
      if (at_end()) return json_error("input ends inside an escape");
      const uint8_t e = text_[pos_++];
      char plain = 0;
      switch (e) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u':
          if (!parse_unicode_escape(out)) return false;
          continue;
        default: --pos_; return json_error("invalid escape");
      }
      if (out) out->push_back(plain);
    }
  }

  bool out_of_range() { return json_error("number is out of the range of a double"); }

  // serde_json's conversion (without its float_roundtrip feature): significand times or
  // divided by one power of ten from its table. Only whether it overflows matters here.
  bool check_float(uint64_t significand, int32_t exponent) {
    const auto& pow10 = powers_of_ten();
    double f = static_cast<double>(significand);
    int64_t e = exponent;
    while (true) {
      const uint64_t magnitude = static_cast<uint64_t>(e < 0 ? -e : e);
      if (magnitude < pow10.size()) {
        if (e >= 0) {
          f *= pow10[magnitude];
          if (std::isinf(f)) return out_of_range();
        }
        return true;
      }
      if (f == 0.0) return true;
      if (e >= 0) return out_of_range();
      f /= 1e308;
      e += 308;
    }
  }

  bool parse_exponent(uint64_t significand, int32_t starting) {
    ++pos_;  // 'e' or 'E'
    bool positive = true;
    if (peek() == '+' || peek() == '-') positive = text_[pos_++] == '+';
    if (at_end()) return json_error("input ends inside a number");
    if (!is_digit(text_[pos_])) return json_error("invalid number");
    int32_t exp = text_[pos_++] - '0';
    while (is_digit(peek())) {
      const int32_t digit = text_[pos_++] - '0';
      if (would_overflow<int32_t>(exp, digit, std::numeric_limits<int32_t>::max())) {
        if (significand != 0 && positive) return out_of_range();
        while (is_digit(peek())) ++pos_;
        return true;  // zero
      }
      exp = exp * 10 + digit;
    }
    const int64_t total = positive ? int64_t{starting} + exp : int64_t{starting} - exp;
    const int64_t saturated = std::clamp<int64_t>(total, std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max());
    return check_float(significand, static_cast<int32_t>(saturated));
  }

  bool parse_fraction(uint64_t significand, int32_t exponent) {
    ++pos_;  // '.'
    const size_t first_digit = pos_;
    while (is_digit(peek())) {
      const uint64_t digit = text_[pos_] - '0';
      if (would_overflow<uint64_t>(significand, digit, std::numeric_limits<uint64_t>::max())) {
        while (is_digit(peek())) ++pos_;  // digits past 2^64 are dropped, as serde_json does
        break;
      }
      ++pos_;
      significand = significand * 10 + digit;
      --exponent;
    }
    if (pos_ == first_digit)
      return json_error(at_end() ? "input ends inside a number" : "no digit after '.'");
    if (peek() == 'e' || peek() == 'E') return parse_exponent(significand, exponent);
    return check_float(significand, exponent);
  }

  // A number at pos_ ('-' or a digit), with serde_json's acceptance, including its range.
  bool parse_number(JsonNumber* out) {
    const size_t start = pos_;
    const bool negative = peek() == '-';
    if (negative) ++pos_;
    if (at_end()) return json_error("input ends inside a number");
    const uint8_t first = text_[pos_++];
    if (!is_digit(first)) return json_error("invalid number");
    uint64_t significand = first - '0';
    bool done = false;
    if (first == '0') {
      if (is_digit(peek())) return json_error("number has a leading zero");
    } else {
      while (is_digit(peek())) {
        const uint64_t digit = text_[pos_] - '0';
        if (would_overflow<uint64_t>(significand, digit, std::numeric_limits<uint64_t>::max())) {
          int32_t exponent = 0;  // further integer digits scale the kept significand
          while (is_digit(peek())) ++pos_, ++exponent;
          if (peek() == '.') {
            if (!parse_fraction(significand, exponent)) return false;
          } else if (peek() == 'e' || peek() == 'E') {
            if (!parse_exponent(significand, exponent)) return false;
          } else if (!check_float(significand, exponent)) {
            return false;
          }
          done = true;
          break;
        }
        ++pos_;
        significand = significand * 10 + digit;
      }
    }
    bool integer = false;
    if (!done) {
      if (peek() == '.') {
        if (!parse_fraction(significand, 0)) return false;
      } else if (peek() == 'e' || peek() == 'E') {
        if (!parse_exponent(significand, 0)) return false;
      } else {
        integer = true;
      }
    }
    if (out) {
      out->is_u64 = integer && !negative;
      out->u64 = significand;
      out->text = std::string_view(reinterpret_cast<const char*>(text_) + start, pos_ - start);
    }
    return true;
  }

  // Members of the object at pos_ ('{'): member(key) parses each value.
  template <typename Member>
  bool parse_object(Member&& member) {
    if (!enter()) return false;
    skip_whitespace();
    if (peek() == '}' && !at_end()) {
      ++pos_;
      leave();
      return true;
    }
    while (true) {
      skip_whitespace();
      if (at_end()) return json_error("input ends inside an object");
      if (text_[pos_] != '"')
        return json_error(text_[pos_] == '}' ? "trailing comma in an object"
                                             : "object key is not a string");
      std::string key;
      if (!parse_string(&key) || !expect(':', "':' after an object key")) return false;
      skip_whitespace();
      if (at_end()) return json_error("input ends where a value was expected");
      if (!member(key)) return false;
      skip_whitespace();
      if (at_end()) return json_error("input ends inside an object");
      const uint8_t c = text_[pos_++];
      if (c == '}') break;
      if (c != ',') return json_error("expected ',' or '}' in an object");
    }
    leave();
    return true;
  }

  // Elements of the array at pos_ ('['): element(index) parses each.
  template <typename Element>
  bool parse_array(Element&& element) {
    if (!enter()) return false;
    skip_whitespace();
    if (peek() == ']' && !at_end()) {
      ++pos_;
      leave();
      return true;
    }
    for (size_t index = 0;; ++index) {
      skip_whitespace();
      if (at_end()) return json_error("input ends inside an array");
      if (text_[pos_] == ']') return json_error("trailing comma in an array");
      if (!element(index)) return false;
      skip_whitespace();
      if (at_end()) return json_error("input ends inside an array");
      const uint8_t c = text_[pos_++];
      if (c == ']') break;
      if (c != ',') return json_error("expected ',' or ']' in an array");
    }
    leave();
    return true;
  }

  // Any value, checked and dropped.
  bool skip_value() {
    skip_whitespace();
    if (at_end()) return json_error("input ends where a value was expected");
    switch (text_[pos_]) {
      case '"': return parse_string(nullptr);
      case '{': return parse_object([this](const std::string&) { return skip_value(); });
      case '[': return parse_array([this](size_t) { return skip_value(); });
      case 't': return parse_literal("true");
      case 'f': return parse_literal("false");
      case 'n': return parse_literal("null");
      default:
        if (text_[pos_] == '-' || is_digit(text_[pos_])) return parse_number(nullptr);
        return json_error("expected a value");
    }
  }

  // ----- the header's schema -----
  bool parse_top() {
    if (size_ >= 3 && text_[0] == 0xEF && text_[1] == 0xBB && text_[2] == 0xBF)
      return fail("header starts with a UTF-8 byte-order mark (EF BB BF); the JSON object "
                  "must start the header (whitespace may precede it)",
                  "header-bom");
    skip_whitespace();
    if (at_end()) return json_error("header holds no JSON value");
    if (text_[pos_] != '{') {
      if (kind_here() == "not a JSON value") return json_error("expected a JSON object");
      return fail("header JSON is " + kind_here() + ", not an object", "header-object");
    }
    bool metadata_seen = false;
    std::set<std::string> names;
    const bool ok = parse_object([&](const std::string& key) {
      if (key == kMetadataKey) {
        if (metadata_seen) return fail("\"__metadata__\" appears twice", "duplicate-key");
        metadata_seen = true;
        return parse_metadata();
      }
      // The reference keeps the last of two equal names; the format forbids duplicates, and
      // keeping one silently would hide what the file's writer meant.
      if (!names.insert(key).second)
        return fail("name " + quoted_for_message(key) + " appears twice in the header",
                    "duplicate-name");
      return parse_tensor(key);
    });
    if (!ok) return false;
    skip_whitespace();
    if (!at_end()) {
      const uint8_t c = text_[pos_];
      const std::string what = c == 0                  ? std::string("a NUL byte")
                               : c >= 0x20 && c < 0x7F ? "'" + std::string(1, static_cast<char>(c)) + "'"
                                                       : "byte " + std::to_string(c);
      return fail("header has " + what + " at header byte " + std::to_string(pos_) +
                      ", after the JSON object; only whitespace (space, tab, CR, LF) may "
                      "pad the header",
                  "header-padding");
    }
    return true;
  }

  bool parse_metadata() {
    if (peek() == 'n') return parse_literal("null");  // the reference reads null as absent
    if (peek() != '{')
      return fail("__metadata__ is " + kind_here() + ", not an object of strings", "metadata");
    return parse_object([this](const std::string& key) {
      if (peek() != '"')
        return fail("__metadata__ value of " + quoted_for_message(key) + " is " + kind_here() +
                        ", not a string",
                    "metadata");
      std::string value;
      if (!parse_string(&value)) return false;
      if (!header_.metadata.emplace(key, std::move(value)).second)
        return fail("__metadata__ has the key " + quoted_for_message(key) + " twice",
                    "duplicate-key");
      return true;
    });
  }

  bool parse_tensor(const std::string& name) {
    const std::string who = "tensor " + quoted_for_message(name);
    SafetensorsHeaderTensor tensor;
    tensor.name = name;
    bool has_dtype = false, has_shape = false, has_offsets = false;
    auto field = [&](std::string_view field_name, bool& seen) {
      if (seen)
        return fail(who + " has \"" + std::string(field_name) + "\" twice", "duplicate-key");
      seen = true;
      if (field_name == "dtype") return parse_dtype(who, &tensor.dtype);
      if (field_name == "shape") return parse_integers(who, "shape", "shape", &tensor.shape);
      std::vector<uint64_t> offsets;
      if (!parse_integers(who, "data_offsets", "data-offsets", &offsets)) return false;
      if (offsets.size() != 2)
        return fail(who + " \"data_offsets\" has " + std::to_string(offsets.size()) +
                        " numbers, not 2 ([begin, end])",
                    "data-offsets");
      tensor.begin = offsets[0];
      tensor.end = offsets[1];
      return true;
    };
    bool ok = false;
    if (peek() == '{') {
      ok = parse_object([&](const std::string& key) {
        if (key == "dtype") return field("dtype", has_dtype);
        if (key == "shape") return field("shape", has_shape);
        if (key == "data_offsets") return field("data_offsets", has_offsets);
        return skip_value();  // unknown fields are ignored, as the reference ignores them
      });
    } else if (peek() == '[') {
      // serde reads a struct from a sequence of its fields in order, so the reference
      // accepts [dtype, shape, data_offsets].
      size_t count = 0;
      ok = parse_array([&](size_t index) {
        count = index + 1;
        if (index == 0) return field("dtype", has_dtype);
        if (index == 1) return field("shape", has_shape);
        if (index == 2) return field("data_offsets", has_offsets);
        return fail(who + " is an array of more than 3 elements; the array form is "
                          "[dtype, shape, data_offsets]",
                    "tensor-entry");
      });
      if (ok && count != 3)
        return fail(who + " is an array of " + std::to_string(count) +
                        " elements; the array form is [dtype, shape, data_offsets]",
                    "tensor-entry");
    } else {
      return fail(who + " is " + kind_here() + ", not an object", "tensor-entry");
    }
    if (!ok) return false;
    if (!has_dtype) return fail(who + " has no \"dtype\"", "dtype");
    if (!has_shape) return fail(who + " has no \"shape\"", "shape");
    if (!has_offsets) return fail(who + " has no \"data_offsets\"", "data-offsets");
    header_.tensors.push_back(std::move(tensor));
    return true;
  }

  bool dtype_named(const std::string& who, const std::string& name, SafetensorsDType* out) {
    auto dtype = parse_safetensors_name(name);
    if (!dtype)
      return fail(who + " has unknown dtype " + quoted_for_message(name) +
                      " (the format's dtypes, case-sensitive: " + safetensors_name_list() + ")",
                  "dtype");
    *out = *dtype;
    return true;
  }

  // "F32", or the enum form serde also reads: {"F32": null}.
  bool parse_dtype(const std::string& who, SafetensorsDType* out) {
    std::string name;
    if (peek() == '"') return parse_string(&name) && dtype_named(who, name, out);
    if (peek() != '{')
      return fail(who + " \"dtype\" is " + kind_here() + ", not a string", "dtype");
    size_t keys = 0;
    const bool ok = parse_object([&](const std::string& key) {
      if (++keys > 1) return fail(who + " \"dtype\" object has more than one key", "dtype");
      if (peek() != 'n')
        return fail(who + " \"dtype\" object's value is " + kind_here() + ", not null", "dtype");
      name = key;
      return parse_literal("null");
    });
    if (!ok) return false;
    if (keys == 0) return fail(who + " \"dtype\" is an empty object", "dtype");
    return dtype_named(who, name, out);
  }

  // An array of integers in [0, 2^64), as shape and data_offsets are.
  bool parse_integers(const std::string& who, const char* field, const char* rule,
                      std::vector<uint64_t>* out) {
    const std::string what = who + " \"" + field + "\"";
    if (peek() != '[') return fail(what + " is " + kind_here() + ", not an array", rule);
    return parse_array([&](size_t) {
      if (peek() != '-' && !is_digit(peek()))
        return fail(what + " holds " + kind_here() + ", not an integer", rule);
      JsonNumber number;
      if (!parse_number(&number)) return false;
      if (!number.is_u64)
        return fail(what + " holds " + std::string(number.text) +
                        ", not an integer in [0, 2^64)",
                    rule);
      out->push_back(number.u64);
      return true;
    });
  }
};

}  // namespace

Result<SafetensorsHeader> parse_safetensors_header(const uint8_t* text, size_t size,
                                                   const std::string& label) {
  return HeaderParser(text, size, label).parse();
}

}  // namespace dnnb
