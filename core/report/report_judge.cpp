// How each result is judged (docs/report.md, "How a case is judged"). A kernel is held to the
// ceiling of the memory level its working set lives in: the measured cache read stream when
// the working set fits the last-level cache, DRAM otherwise; to the arithmetic ceiling of its
// compute unit when that takes longer; and to the empty launch when even the roof's time is
// under it (launch-bound). The float64 reference is the oracle and is never ranked.
#include <algorithm>
#include <map>

#include "core/report/report_model.h"
#include "core/report/report_text.h"

namespace dnnb::report {

namespace {

// The cache figures of a device: its own when it has a measured cache ceiling, else those of
// the native device of the same hardware (the CUDA device for the NVIDIA OpenCL device, the
// CPU for PoCL on it), which share its last-level cache.
struct CacheFigures {
  CeilingValue ceiling;
  double bytes = 0;
};

// The native device's cache ceiling (latest record) and the largest cache size its results carry.
CacheFigures native_cache(const ReportModel& model, const std::string& native_id) {
  CacheFigures figures;
  auto device = model.devices.find(native_id);
  if (device == model.devices.end()) return figures;
  auto probe = device->second.measured.find("cache_read_bytes_per_s");
  if (probe == device->second.measured.end()) return figures;
  figures.ceiling = probe->second;
  for (const auto& r : model.results)
    if (r.device == native_id) figures.bytes = std::max(figures.bytes, r.cache_bytes);
  return figures;
}

std::string spread_text(double spread) {
  return spread > 0 ? ", spread \xC2\xB1" + format_percent(100 * spread / 2) : "";
}

// Why a figure is above its ceiling: the ceiling is what its probe reached, so a kernel above
// it means the probe fell short (or, for a theoretical peak, that the FLOP model is wrong).
std::string above_note(const ResultRecord& r, const Judgment& j, double working_set, double cache_bytes) {
  const std::string spread = spread_text(j.spread);
  switch (j.bound) {
    case Bound::launch:
      return "faster than the measured empty launch (" + format_time(j.ceiling) + spread +
             "): the probe's launches cost more than this kernel's";
    case Bound::compute:
      if (j.theoretical)
        return "above the theoretical " + r.compute_unit + " peak (" + si(j.ceiling, "FLOP/s") +
               "): the FLOP model or the peak is wrong";
      return "above the measured " + r.compute_unit + " ceiling (" + si(j.ceiling, "FLOP/s") + spread +
             "): the ceiling's probe reached less than this kernel";
    case Bound::cache:
      return "above the measured cache ceiling (" + si(j.ceiling, "B/s") + spread +
             "): the ceiling's probe reached less than this kernel";
    case Bound::dram:
      if (cache_bytes > 0 && working_set <= cache_bytes)
        return "above the DRAM ceiling (" + si(j.ceiling, "B/s") + spread + "): its " + si(working_set, "B") +
               " working set fits the " + si(cache_bytes, "B") + " last-level cache, for which no ceiling was measured";
      return "above the measured DRAM ceiling (" + si(j.ceiling, "B/s") + spread +
             "): the ceiling's probe reached less than this kernel";
    default:
      return "";
  }
}

Judgment judge(const ResultRecord& r, const CacheFigures& cache) {
  Judgment j;
  if (!r.ok()) return j;
  if (r.oracle()) {
    j.bound = Bound::oracle;
    return j;
  }
  // The working set as stored (inputs with their row padding, outputs); the minimal bytes for
  // files that do not record it.
  const double working_set = r.working_set_bytes > 0 ? r.working_set_bytes : r.bytes;
  const bool in_cache = cache.bytes > 0 && working_set <= cache.bytes && cache.ceiling.value > 0;
  const CeilingValue& memory = in_cache ? cache.ceiling : r.own_dram;
  // Without a memory ceiling there is no roof for a kernel that moves bytes.
  if (r.bytes > 0 && memory.value <= 0) return j;
  const double memory_s = r.bytes > 0 ? r.bytes / memory.value : 0;
  const double compute_s = r.flops > 0 && r.own_compute.value > 0 ? r.flops / r.own_compute.value : 0;
  if (memory_s <= 0 && compute_s <= 0) return j;
  double roof_s = memory_s;
  j.bound = in_cache ? Bound::cache : Bound::dram;
  j.ceiling = memory.value;
  j.spread = memory.spread;
  if (compute_s > memory_s) {
    roof_s = compute_s;
    j.bound = Bound::compute;
    j.ceiling = r.own_compute.value;
    j.spread = r.own_compute.spread;
    j.theoretical = r.compute_source == "theoretical";
  }
  // Launch-bound: even at the roof the kernel would finish before an empty launch does.
  if (r.own_launch.value > roof_s) {
    roof_s = r.own_launch.value;
    j.bound = Bound::launch;
    j.ceiling = r.own_launch.value;
    j.spread = r.own_launch.spread;
    j.theoretical = false;
  }
  j.roof_s = roof_s;
  j.percent = 100 * roof_s / r.median_s;
  if (*j.percent > 100) j.note = above_note(r, j, working_set, cache.bytes);
  return j;
}

}  // namespace

const char* bound_name(Bound bound) {
  switch (bound) {
    case Bound::dram: return "DRAM";
    case Bound::cache: return "cache";
    case Bound::compute: return "compute";
    case Bound::launch: return "launch";
    case Bound::oracle: return "oracle";
    case Bound::none: break;
  }
  return "none";
}

std::string Judgment::roof() const {
  switch (bound) {
    case Bound::dram:
    case Bound::cache: return std::string(bound_name(bound)) + " " + si(ceiling, "B/s");
    case Bound::compute: return "compute " + si(ceiling, "FLOP/s") + (theoretical ? " (theoretical)" : "");
    case Bound::launch: return "launch " + format_time(ceiling);
    case Bound::oracle: return "oracle";
    case Bound::none: break;
  }
  return "";
}

std::string Judgment::describe() const {
  if (percent) return format_percent(*percent) + " of roofline (" + roof() + ")";
  return bound == Bound::oracle ? "the oracle: not ranked" : "";
}

void judge_results(ReportModel& model) {
  const auto groups = hardware_groups(model);
  std::map<std::string, CacheFigures> native;  // by native device id
  for (auto& r : model.results) {
    CacheFigures cache{r.own_cache, r.cache_bytes};
    if (cache.ceiling.value <= 0) {
      const size_t g = group_of(groups, r.device);
      if (g < groups.size() && groups[g].primary != r.device) {
        const std::string& id = groups[g].primary;
        if (!native.count(id)) native[id] = native_cache(model, id);
        cache = native[id];
      }
    }
    r.judged = judge(r, cache);
  }
}

}  // namespace dnnb::report
