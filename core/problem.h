// A problem is one op at one dtype, shape and parameter set; a case id adds where it runs.
// Both print as one line that parses back (benchdnn-style repro):
//   rmsnorm:bf16:64x4096:eps=1e-6@cuda:0
//   softmax:f32:7x33:fixture=masked_rows,scale=0.5@opencl/local_reduce:0.1
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb {

struct Problem {
  std::string op;
  DType dtype = DType::f32;
  Shape shape;
  // Parameters as text, sorted by key, so that printing and parsing round-trip exactly.
  std::map<std::string, std::string> params;

  bool has(const std::string& key) const { return params.count(key) != 0; }
  std::string get(const std::string& key, const std::string& fallback = "") const;
  // Parsed getters; a malformed value returns bad_input naming the key.
  Result<double> get_double(const std::string& key, double fallback) const;
  Result<int64_t> get_int(const std::string& key, int64_t fallback) const;

  // "op:dtype:shape[:k=v,k=v]"
  std::string to_string() const;
  static Result<Problem> parse(std::string_view text);
  // Seed for random inputs: a hash of to_string() minus where it runs, so every backend
  // of one problem sees the same inputs.
  uint64_t seed() const;
};

// Backend names and the kind of device each runs on.
struct BackendInfo {
  std::string name;       // "reference", "avx512", "cuda", "opencl", "onednn", "cublas"
  DeviceKind device_kind;
  bool is_peer;           // a vendor library, not our kernel
};
const std::vector<BackendInfo>& backends();
const BackendInfo* find_backend(std::string_view name);

struct CaseId {
  Problem problem;
  std::string backend;
  std::string variant;       // "" = the backend's only/default variant
  std::string device_index;  // "" = first device of the backend's kind; "0", "1.0"

  std::string device_id() const;  // "cuda:0"; empty when device_index is empty
  std::string to_string() const;
  static Result<CaseId> parse(std::string_view text);
};

}  // namespace dnnb
