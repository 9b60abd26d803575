// Text helpers shared by the page and the summary: escaping of untrusted strings, and numbers
// in the units a kernel engineer reads (412 µs, 3.91 TB/s, 61.2 TFLOP/s).
#pragma once
#include <string>
#include <string_view>

namespace dnnb::report {

// For HTML text and attribute values: & < > " ' become entities and control characters
// (other than tab and newline) U+FFFD, so no input can open a tag or break an attribute.
std::string html_escape(std::string_view text);
// For a Markdown table cell (GitHub-flavoured): HTML-escaped, then the characters that make
// emphasis, links, code or cell breaks backslash-escaped; newlines become spaces.
std::string md_escape(std::string_view text);

// 3 significant digits with an SI prefix: si(4.22e12, "B/s") = "4.22 TB/s"; "–" for 0 or less.
std::string si(double value, const char* unit);
std::string format_time(double seconds);                 // si(seconds, "s")
std::string format_fixed(double value, int decimals);    // "%.*f"
std::string format_percent(double value);                // "92.4%" (1 decimal; 3 significant below 1)
std::string format_ratio(double value);                  // "1.37×"

// Standard base64 (RFC 4648), for the page's Content-Security-Policy script hash.
std::string base64_of_hex(const std::string& hex);

}  // namespace dnnb::report
