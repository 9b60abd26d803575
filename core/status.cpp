#include "core/status.h"

namespace dnnb {

const char* to_string(StatusCode code) {
  switch (code) {
    case StatusCode::ok: return "ok";
    case StatusCode::skipped: return "skipped";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::mismatch: return "mismatch";
    case StatusCode::bad_input: return "bad_input";
    case StatusCode::error: return "error";
  }
  return "?";
}

std::string Status::to_string() const {
  if (message.empty()) return dnnb::to_string(code);
  return std::string(dnnb::to_string(code)) + ": " + message;
}

Status error_at(const char* file, int line, const std::string& what) {
  return Status::error(what + " (" + file + ":" + std::to_string(line) + ")");
}

}  // namespace dnnb
