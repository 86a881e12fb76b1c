// The effective hardware config of a run, as reports record it (after --hw-set / hw_set).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "npu_model/hw_config.h"

namespace tessel::driver {

/// The report's "hw" object: "name", "file" (the YAML it was loaded from), "config" (every key of
/// the schema, nested as in the YAML file, each value typed as YAML reads it: integers as
/// integers, numbers as numbers, dtypes and names as strings), "sha256" (hex SHA-256 of
/// npu::hw_config_to_yaml(hw), the canonical text: two configs with the same values hash the
/// same, whatever file or overrides they came from), and the summary keys older reports carried
/// ("cores", "clock_ghz", "dram_bytes_per_cycle", "dram_burst_bytes").
nlohmann::json hw_report_json(const npu::HwConfig& hw);

/// The value of dotted key `key` (e.g. "core.buffers_bytes.ub") in hw_report_json(hw)["config"]:
/// an override's effective, typed value. Throws tessel::Error for a key the schema lacks.
nlohmann::json hw_config_value(const nlohmann::json& hw_report, const std::string& key);

}  // namespace tessel::driver
