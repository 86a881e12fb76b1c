// Reports: machine-readable JSON (--report FILE.json) and the tables a person reads.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "compiler/driver/compare.h"
#include "compiler/driver/runner.h"

namespace tessel::driver {

/// A plain text table: headers, then rows; numeric-looking cells are right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str(const std::string& indent = "  ") const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

/// 1234567 -> "1,234,567".
std::string with_commas(uint64_t v);

/// JSON of an NPU run: total_cycles, time_us, instructions, per_pipe_busy_cycles,
/// per_pipe_utilization, bytes per scope, dram_bytes, per-op rows, compile/simulate seconds, and
/// the area and energy model's figures (npu::area_energy): area_mm2, energy_uj, edp_uj_s,
/// average_power_w and area_energy {tech, tech_file, seconds, dynamic_uj, leakage_uj,
/// components: [{name, area_mm2, dynamic_uj, leakage_uj, energy_uj}], counts: {cube_macs,
/// vector_elem_ops: {add|mult|mac: {fp16 .. int64}}, scalar_instructions, dma_bytes_delivered:
/// {mte2, mte1, fix, mte3}, dram_burst_bytes, l2_data_bytes, l2_line_lookups,
/// l2_dirty_bytes_at_end}}.
nlohmann::json npu_run_json(const NpuRun& run, const npu::HwConfig& hw);

/// The DRAM section of a report: model, totals and per channel bytes, requests, row hits, row
/// misses, bank conflicts, activates, precharges, refreshes, refresh stall cycles, busy cycles and
/// bandwidth over the run (bytes_per_cycle, gb_per_s); `device` names the banked preset.
nlohmann::json dram_json(const sim::SimResult& s, const npu::HwConfig& hw);

/// The requested sections ("summary", "pipes", "memory", "energy", "ops") of an NPU run as text.
std::string npu_run_text(const NpuRun& run, const npu::HwConfig& hw,
                         const std::vector<std::string>& sections);

/// The tuning figures of a run: strategy, oracle, seed, budget, trials, wall seconds, per task its
/// ops, weight, space size, trials spent, default and best cycles and knobs, and the curve of the
/// weighted best total over trials and seconds. `options` (may be null) gives the settings.
nlohmann::json tuning_json(const tuner::TuneResult& result, const tuner::TuneOptions* options);
/// The tuning summary and the tasks that gained most, as text.
std::string tuning_text(const tuner::TuneResult& result);
/// A progress callback that rewrites one line on `err` ("tune: 120/1000 trials, 35.2 trials/s,
/// best ... cycles, ETA 25 s") when `err` is std::cerr on a terminal; an empty callback otherwise.
std::function<void(const tuner::Progress&)> tune_progress(std::ostream& err);
/// A progress callback for a long NPU compile (tuner::ScheduleRequest::progress) that rewrites one
/// line on `err` ("compile: measure 120/481 candidates, 12 s") once the compile has taken more than
/// 2 s, ending it with a newline after the last kernel; empty unless `err` is std::cerr on a
/// terminal (so logs and tests see nothing).
std::function<void(const std::string& phase, size_t done, size_t total)> compile_progress(
    std::ostream& err);

/// JSON rows of output checks: name, shape_ok, max_abs_error, max_rel_error, max_expected,
/// error_over_bound (OutputCheck::worst_ratio; "inf" when infinite), atol, rtol, tolerance_basis,
/// pass.
nlohmann::json checks_json(const std::vector<OutputCheck>& checks);
/// One row per output: max abs error; the tested quantity, max |actual - expected| / (atol + rtol
/// |expected|) ("error / bound", <= 1 passes: how far below its bound the output is); atol; rtol;
/// PASS/FAIL.
std::string checks_text(const std::vector<OutputCheck>& checks);
/// "  tolerance: BASIS" (one line per output, named, when there are several).
std::string tolerance_lines(const std::vector<OutputCheck>& checks);

}  // namespace tessel::driver
