#include "core/deferred_checks.h"

#include <map>
#include <mutex>
#include <vector>

namespace dnnb {
namespace {

std::mutex& deferred_mutex() {
  static std::mutex m;
  return m;
}

std::map<const DeviceRuntime*, std::vector<std::function<Status()>>>& deferred() {
  static std::map<const DeviceRuntime*, std::vector<std::function<Status()>>> checks;
  return checks;
}

}  // namespace

void defer_until_synchronize(const DeviceRuntime& device, std::function<Status()> check) {
  std::lock_guard<std::mutex> lock(deferred_mutex());
  deferred()[&device].push_back(std::move(check));
}

Status run_deferred_checks(const DeviceRuntime& device) {
  std::vector<std::function<Status()>> checks;
  {
    std::lock_guard<std::mutex> lock(deferred_mutex());
    auto it = deferred().find(&device);
    if (it == deferred().end()) return Status::ok();
    checks.swap(it->second);
  }
  Status first = Status::ok();
  for (auto& check : checks) {
    Status s = check();
    if (!s.is_ok() && first.is_ok()) first = s;
  }
  return first;
}

size_t deferred_check_count(const DeviceRuntime& device) {
  std::lock_guard<std::mutex> lock(deferred_mutex());
  auto it = deferred().find(&device);
  return it == deferred().end() ? 0 : it->second.size();
}

}  // namespace dnnb
