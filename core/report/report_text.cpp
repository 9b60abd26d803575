#include "core/report/report_text.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace dnnb::report {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((u < 0x20 && c != '\t' && c != '\n') || u == 0x7F)
          out += "\xEF\xBF\xBD";  // U+FFFD: control characters are parse errors in HTML5
        else
          out += c;
    }
  }
  return out;
}

std::string md_escape(std::string_view text) {
  std::string out;
  for (char c : html_escape(text)) {
    switch (c) {
      case '\\': case '`': case '*': case '_': case '[': case ']': case '|': case '~': case '#':
        out += '\\';
        out += c;
        break;
      case '\n': case '\t': out += ' '; break;
      default: out += c;
    }
  }
  return out;
}

std::string si(double value, const char* unit) {
  if (!(value > 0) || !std::isfinite(value)) return "\xE2\x80\x93";  // en dash: nothing to show
  static const char* const kPrefixes[] = {"p", "n", "\xC2\xB5", "m", "", "k", "M", "G", "T", "P", "E"};
  int exponent = static_cast<int>(std::floor(std::log10(value) / 3));
  exponent = std::max(-4, std::min(6, exponent));
  double scaled = value / std::pow(10.0, 3 * exponent);
  // Rounding may carry into the next prefix: 999.7 ns prints as 1.00 µs, not 1000 ns.
  if (scaled >= 999.5 && exponent < 6) {
    ++exponent;
    scaled /= 1000;
  }
  char text[48];
  const int decimals = scaled >= 100 ? 0 : scaled >= 10 ? 1 : 2;
  std::snprintf(text, sizeof text, "%.*f %s%s", decimals, scaled, kPrefixes[exponent + 4], unit);
  return text;
}

std::string format_time(double seconds) { return si(seconds, "s"); }

std::string format_fixed(double value, int decimals) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string format_percent(double value) {
  char text[48];
  if (std::fabs(value) < 1 && value != 0)
    std::snprintf(text, sizeof text, "%.2g%%", value);
  else
    std::snprintf(text, sizeof text, "%.1f%%", value);
  return text;
}

std::string format_ratio(double value) {
  char text[48];
  std::snprintf(text, sizeof text, value < 10 ? "%.2f\xC3\x97" : "%.1f\xC3\x97", value);
  return text;
}

std::string base64_of_hex(const std::string& hex) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t chunk = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) chunk |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) chunk |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(chunk >> 18) & 63];
    out += kAlphabet[(chunk >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(chunk >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[chunk & 63] : '=';
  }
  return out;
}

}  // namespace dnnb::report
