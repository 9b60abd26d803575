// Status values carried through the whole suite: nothing in the core exits the
// process; every failure is a value with a reason that the caller prints.
#pragma once
#include <string>
#include <utility>
#include <variant>

namespace dnnb {

enum class StatusCode {
  ok,
  skipped,      // could run in principle but not here (no device, no ISA); reason says why
  unsupported,  // this implementation does not handle this problem (shape, dtype, layout)
  mismatch,     // ran, result outside tolerance
  bad_input,    // user input or a file is malformed (CLI exit code 2)
  error,        // a runtime call failed (CUDA, OpenCL, allocation)
};

const char* to_string(StatusCode code);

struct Status {
  StatusCode code = StatusCode::ok;
  std::string message;

  static Status ok() { return {}; }
  static Status skipped(std::string why) { return {StatusCode::skipped, std::move(why)}; }
  static Status unsupported(std::string why) { return {StatusCode::unsupported, std::move(why)}; }
  static Status mismatch(std::string why) { return {StatusCode::mismatch, std::move(why)}; }
  static Status bad_input(std::string why) { return {StatusCode::bad_input, std::move(why)}; }
  static Status error(std::string why) { return {StatusCode::error, std::move(why)}; }

  bool is_ok() const { return code == StatusCode::ok; }
  explicit operator bool() const { return is_ok(); }
  std::string to_string() const;
};

// A value or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}                  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}           // NOLINT
  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const Status& status() const {
    static const Status ok_status;
    return is_ok() ? ok_status : std::get<Status>(v_);
  }

 private:
  std::variant<T, Status> v_;
};

// Error with the source location of the failing call, for runtime APIs.
Status error_at(const char* file, int line, const std::string& what);
#define DNNB_ERROR(what) ::dnnb::error_at(__FILE__, __LINE__, (what))

// Propagate a non-ok Status out of the enclosing function.
#define DNNB_TRY(expr)                          \
  do {                                          \
    ::dnnb::Status dnnb_status_ = (expr);       \
    if (!dnnb_status_.is_ok()) return dnnb_status_; \
  } while (0)

}  // namespace dnnb
