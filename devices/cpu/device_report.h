// What `dnnblocks devices` prints, as functions so tests can check it without the CLI.
// Lives in devices/cpu because dnnb_devices_cpu is the devices library every build has.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device.h"

namespace dnnb {

// Backends compiled into this build: {"cuda": bool, "opencl": bool, "onednn": bool,
// "version": "0.1.0"}.
nlohmann::json build_backends_json();

// Absences to report: every recorded DeviceAbsence, plus one per kind that has no device
// and no recorded reason (compiled out, or a provider that said nothing).
std::vector<DeviceAbsence> reported_absences(const std::vector<std::unique_ptr<DeviceRuntime>>& devices,
                                             const std::vector<DeviceAbsence>& absences);

// {"schema_version": 1, "build": {...}, "devices": [{"id","kind","name","capabilities","peaks"}],
//  "absent": [{"kind","reason"}]}; schema in docs/devices.md.
nlohmann::json devices_json(const std::vector<std::unique_ptr<DeviceRuntime>>& devices,
                            const std::vector<DeviceAbsence>& absences);
nlohmann::json devices_json(const DeviceSet& set);

// The human-readable table: one row per device (id, kind, name, peaks) with its capability
// summary under it, then one line per absence.
std::string devices_table(const std::vector<std::unique_ptr<DeviceRuntime>>& devices,
                          const std::vector<DeviceAbsence>& absences);
std::string devices_table(const DeviceSet& set);

// 3.32e11 -> "332 G"; used with a unit suffix ("FLOP/s", "B/s").
std::string si_prefixed(double value);

}  // namespace dnnb
