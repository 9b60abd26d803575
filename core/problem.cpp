#include "core/problem.h"

#include <cerrno>
#include <cstdlib>

#include "core/rng.h"

namespace dnnb {

std::string Problem::get(const std::string& key, const std::string& fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : it->second;
}

Result<double> Problem::get_double(const std::string& key, double fallback) const {
  auto it = params.find(key);
  if (it == params.end()) return fallback;
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (end == s || *end != '\0' || errno == ERANGE)
    return Status::bad_input("parameter " + key + "='" + it->second + "' is not a number");
  return v;
}

Result<int64_t> Problem::get_int(const std::string& key, int64_t fallback) const {
  auto it = params.find(key);
  if (it == params.end()) return fallback;
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0' || errno == ERANGE)
    return Status::bad_input("parameter " + key + "='" + it->second + "' is not an integer");
  return static_cast<int64_t>(v);
}

std::string Problem::to_string() const {
  std::string s = op + ":" + dtype_name(dtype) + ":" + shape_to_string(shape);
  if (!params.empty()) {
    s += ":";
    bool first = true;
    for (const auto& [k, v] : params) {
      s += (first ? "" : ",") + k + "=" + v;
      first = false;
    }
  }
  return s;
}

uint64_t Problem::seed() const { return hash64(to_string()); }

Result<Problem> Problem::parse(std::string_view text) {
  // op:dtype:shape[:k=v,...]; values may not contain ',' ':' or '@'.
  std::string t(text);
  size_t c1 = t.find(':');
  size_t c2 = c1 == std::string::npos ? std::string::npos : t.find(':', c1 + 1);
  if (c1 == std::string::npos || c2 == std::string::npos)
    return Status::bad_input("problem '" + t + "': expected op:dtype:shape[:params]");
  Problem p;
  p.op = t.substr(0, c1);
  if (p.op.empty()) return Status::bad_input("problem '" + t + "': empty op name");
  auto dt = parse_dtype(t.substr(c1 + 1, c2 - c1 - 1));
  if (!dt) return Status::bad_input("problem '" + t + "': unknown dtype '" + t.substr(c1 + 1, c2 - c1 - 1) + "'");
  p.dtype = *dt;
  size_t c3 = t.find(':', c2 + 1);
  auto shape = parse_shape(t.substr(c2 + 1, c3 == std::string::npos ? std::string::npos : c3 - c2 - 1));
  if (!shape) return Status::bad_input("problem '" + t + "': " + shape.status().message);
  p.shape = *shape;
  if (c3 != std::string::npos) {
    std::string rest = t.substr(c3 + 1);
    size_t start = 0;
    while (start < rest.size()) {
      size_t end = rest.find(',', start);
      if (end == std::string::npos) end = rest.size();
      std::string kv = rest.substr(start, end - start);
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0 || kv.find(':') != std::string::npos)
        return Status::bad_input("problem '" + t + "': parameter '" + kv + "' is not key=value");
      if (!p.params.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second)
        return Status::bad_input("problem '" + t + "': parameter '" + kv.substr(0, eq) + "' given twice");
      start = end + 1;
    }
  }
  return p;
}

const std::vector<BackendInfo>& backends() {
  static const std::vector<BackendInfo> list = {
      {"reference", DeviceKind::cpu, false}, {"avx512", DeviceKind::cpu, false},
      {"cuda", DeviceKind::cuda, false},     {"opencl", DeviceKind::opencl, false},
      {"onednn", DeviceKind::cpu, true},     {"cublas", DeviceKind::cuda, true},
  };
  return list;
}

const BackendInfo* find_backend(std::string_view name) {
  for (const auto& b : backends())
    if (b.name == name) return &b;
  return nullptr;
}

std::string CaseId::device_id() const {
  if (device_index.empty()) return "";
  const BackendInfo* b = find_backend(backend);
  return b ? std::string(dnnb::to_string(b->device_kind)) + ":" + device_index : "";
}

std::string CaseId::to_string() const {
  std::string s = problem.to_string() + "@" + backend;
  if (!variant.empty()) s += "/" + variant;
  if (!device_index.empty()) s += ":" + device_index;
  return s;
}

Result<CaseId> CaseId::parse(std::string_view text) {
  std::string t(text);
  size_t at = t.rfind('@');
  if (at == std::string::npos)
    return Status::bad_input("case id '" + t + "': expected op:dtype:shape[:params]@backend[/variant][:device]");
  auto problem = Problem::parse(t.substr(0, at));
  if (!problem) return Status::bad_input("case id '" + t + "': " + problem.status().message);
  CaseId id;
  id.problem = *problem;
  std::string where = t.substr(at + 1);
  size_t colon = where.find(':');
  if (colon != std::string::npos) {
    id.device_index = where.substr(colon + 1);
    where = where.substr(0, colon);
    if (id.device_index.empty()) return Status::bad_input("case id '" + t + "': empty device index");
  }
  size_t slash = where.find('/');
  id.backend = where.substr(0, slash);
  if (slash != std::string::npos) id.variant = where.substr(slash + 1);
  if (find_backend(id.backend) == nullptr)
    return Status::bad_input("case id '" + t + "': unknown backend '" + id.backend + "'");
  return id;
}

}  // namespace dnnb
