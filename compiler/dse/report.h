// What a sweep writes from its stored rows (store.h): DIR/results.csv, DIR/pareto.csv and PNG
// plots drawn by gnuplot (Debian's gnuplot-nox). Everything here is computed from the rows alone,
// so a resumed sweep writes the same files as an uninterrupted one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/dse/store.h"

namespace tessel::dse {

/// The value of objective `name` (cycles, area, energy, edp, dram_bytes) of an ok row; empty when
/// the row is not ok or lacks it (area and energy before a model fills them).
std::optional<double> objective_value(const Row& row, const std::string& name);

/// results.csv: a header `point,workload,<swept keys>,status,reason,total_cycles,area_mm2,
/// energy_uj,edp,efficiency,bound,dram_bytes,config_sha256,tessel_version`, then every row in
/// order (empty fields for missing values). Host seconds are left out (they differ run to run).
std::string results_csv(const std::vector<std::string>& keys, const std::vector<Row>& rows);

/// The Pareto front of one workload under one pair of objectives.
struct Front {
  std::string workload;
  std::string x, y;          // objective names
  std::vector<size_t> rows;  // indices into the rows, sorted by x, then y, then point
  size_t candidates = 0;     // ok rows with both objectives
};

/// The fronts of every workload (in first-row order) and every pair of `objectives` (i < j, in
/// their order), over the ok rows that have both objectives; a pair without such rows gives a
/// front with no candidates.
std::vector<Front> pareto_fronts(const std::vector<Row>& rows,
                                 const std::vector<std::string>& objectives);

/// pareto.csv: `objectives` (e.g. "cycles,area"), then the results.csv columns, one line per
/// front point.
std::string pareto_csv(const std::vector<std::string>& keys, const std::vector<Row>& rows,
                       const std::vector<Front>& fronts);

/// What write_plots wrote.
struct Plots {
  std::vector<std::string> png;    // the images
  std::vector<std::string> notes;  // why a plot was not drawn
};

/// For every front whose x is cycles and that has candidates: DIR/plots/WORKLOAD_cycles_vs_Y.gp
/// and .dat (every ok point, the front as a step line) and the PNG DIR/WORKLOAD_cycles_vs_Y.png,
/// (fronts without candidates are skipped), and DIR/WORKLOAD_bound.png: per front point of the
/// first such front, a stacked bar of the share of cycles each unit bounds. gnuplot is run on each
/// script; when it is missing or fails, a note says so and the scripts stay for a later run.
Plots write_plots(const std::string& dir, const std::vector<Row>& rows,
                  const std::vector<Front>& fronts);

/// A workload name as a file name part: "zoo:resnet50" -> "zoo_resnet50".
std::string file_stem(const std::string& workload);

}  // namespace tessel::dse
