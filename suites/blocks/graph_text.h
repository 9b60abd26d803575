// The text pieces the blocks' graphs write into their nodes' problems (docs/blocks.md).
#pragma once
#include <cstdio>
#include <initializer_list>
#include <string>

#include "core/tensor.h"

namespace dnnb {

// A shape as a problem writes it, "AxBxC".
inline std::string shape_text(std::initializer_list<int64_t> d) { return shape_to_string(Shape(d)); }
// `param` after `separator`, or nothing when there is none (an optional layout param).
inline std::string with(const std::string& param, const char* separator) { return param.empty() ? "" : separator + param; }
// A double with every digit it needs to read back the same (a scale computed from the problem).
inline std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace dnnb
