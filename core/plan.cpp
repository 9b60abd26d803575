// The planner behind check and bench (core/plan.h).
#include "core/plan.h"

#include <algorithm>
#include <optional>

#include "core/device.h"

namespace dnnb {

namespace {

struct BackendItem {
  std::string backend, variant;
  bool variant_given = false;
};

// "--backend cuda,opencl/local,avx512": each item a backend, optionally with a variant.
Result<std::vector<BackendItem>> parse_backends(const std::string& text) {
  std::vector<BackendItem> items;
  for (size_t start = 0; !text.empty() && start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    BackendItem item;
    item.backend = text.substr(start, comma - start);
    if (auto slash = item.backend.find('/'); slash != std::string::npos) {
      item.variant = item.backend.substr(slash + 1);
      item.backend = item.backend.substr(0, slash);
      item.variant_given = true;
    }
    if (!find_backend(item.backend))
      return Status::bad_input("--backend: unknown backend '" + item.backend + "' (see `dnnblocks list`)");
    items.push_back(item);
    start = comma + 1;
  }
  return items;
}

using DeviceChoice = std::pair<DeviceRuntime*, std::string>;  // device or null, why absent

// The devices a cell of `backend` runs on: those of `ids` of its kind (none of its kind: the
// backend is not planned), else every device of its kind or the first, or one absent entry with
// the reason when the machine has none.
std::vector<DeviceChoice> devices_for(const BackendInfo& backend, const std::vector<std::string>& ids, bool every) {
  DeviceSet& set = DeviceSet::instance();
  const std::string kind_prefix = std::string(to_string(backend.device_kind)) + ":";
  std::vector<DeviceRuntime*> present = set.of_kind(backend.device_kind);
  std::vector<DeviceChoice> out;
  if (!ids.empty()) {
    for (const auto& id : ids) {
      if (id.rfind(kind_prefix, 0) != 0) continue;
      DeviceRuntime* d = set.find(id);
      out.push_back({d, d ? "" : present.empty() ? set.absence_reason(backend.device_kind)
                                                 : "no device " + id + " on this machine (`dnnblocks devices` lists them)"});
    }
    return out;
  }
  if (present.empty()) return {{nullptr, set.absence_reason(backend.device_kind)}};
  for (DeviceRuntime* d : present) {
    out.push_back({d, ""});
    if (!every) break;
  }
  return out;
}

}  // namespace

Result<std::vector<PlanCell>> plan_cells(const PlanFilter& filter) {
  Registry& reg = Registry::instance();
  auto items = parse_backends(filter.backends);
  if (!items) return items.status();
  std::optional<DType> dtype_filter;
  if (!filter.dtype.empty()) {
    dtype_filter = parse_dtype(filter.dtype);
    if (!dtype_filter) return Status::bad_input("--dtype: unknown dtype '" + filter.dtype + "'");
  }
  for (const auto& id : filter.devices)
    if (id.find(':') == std::string::npos)
      return Status::bad_input("--device: '" + id + "' is not an id like cpu:0, cuda:0 or opencl:0.0");

  // Defaults only, unless all variants are asked for or the item names the variant.
  auto selected = [&](const Implementation& impl) {
    const bool tier_ok = impl.is_default() || filter.all_variants;
    if (items->empty()) return tier_ok;
    for (const auto& item : *items)
      if (impl.backend == item.backend && (item.variant_given ? impl.variant == item.variant : tier_ok)) return true;
    return false;
  };
  std::vector<PlanCell> cells;
  bool any_op = false;
  for (const auto& spec : reg.ops()) {
    if (!op_selected(filter.op_glob, spec.name)) continue;
    any_op = true;
    for (const Implementation* impl : reg.implementations_of(spec.name)) {
      if (!selected(*impl)) continue;
      for (const auto& [device, why] : devices_for(*find_backend(impl->backend), filter.devices, filter.every_device)) {
        for (DType dtype : impl->dtypes) {
          if (std::find(spec.dtypes.begin(), spec.dtypes.end(), dtype) == spec.dtypes.end()) continue;
          if (dtype_filter && dtype != *dtype_filter) continue;
          cells.push_back({&spec, impl, dtype, device, why});
        }
      }
    }
  }
  if (!any_op) return Status::bad_input("--op: no op matches '" + filter.op_glob + "' (see `dnnblocks list`)");
  // A backend this build lacks (or a variant no matched op has) would otherwise run nothing and
  // pass: say so instead. (A backend that is built but has no device here still plans its
  // cells, each absent with the reason.)
  if (cells.empty() && !items->empty())
    return Status::bad_input("--backend " + filter.backends + ": no implementation of it for --op '" + filter.op_glob +
                             (filter.dtype.empty() ? "" : "' --dtype '" + filter.dtype) +
                             "' in this build (see `dnnblocks list`)");
  return cells;
}

Result<PlanCell> plan_case_cell(const CaseId& id) {
  Registry& reg = Registry::instance();
  const std::string text = id.to_string();
  PlanCell cell;
  cell.spec = reg.find_op(id.problem.op);
  if (!cell.spec) return Status::bad_input("case '" + text + "': unknown op '" + id.problem.op + "'");
  cell.impl = reg.find_implementation(id.problem.op, id.backend, id.variant);
  if (!cell.impl)
    return Status::bad_input("case '" + text + "': no implementation " + id.problem.op + "@" +
                             (id.variant.empty() ? id.backend : id.backend + "/" + id.variant));
  cell.dtype = id.problem.dtype;
  std::vector<std::string> ids;
  if (!id.device_index.empty()) ids.push_back(id.device_id());
  auto devices = devices_for(*find_backend(id.backend), ids, false);
  cell.device = devices.front().first;
  cell.absent_reason = devices.front().second;
  return cell;
}

Result<std::vector<Problem>> problems_at(const OpSpec& spec, const std::vector<ProblemText>& texts, DType dtype) {
  std::vector<Problem> out;
  for (const auto& text : texts) {
    auto p = problem_at(spec, text, dtype);
    if (!p) return p.status();
    if (*p) out.push_back(std::move(**p));
  }
  return out;
}

CaseId case_id_of(const PlanCell& cell, Problem problem) {
  CaseId id;
  id.problem = std::move(problem);
  id.backend = cell.impl->backend;
  id.variant = cell.impl->variant;
  if (cell.device) {
    const std::string& device_id = cell.device->info().id;
    id.device_index = device_id.substr(device_id.find(':') + 1);
  }
  return id;
}

}  // namespace dnnb
