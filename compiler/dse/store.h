// The results of a sweep in SQLite (Debian's libsqlite3-dev): DIR/results.sqlite holds a row per
// design point x workload, each committed in its own transaction as it finishes, so a sweep killed
// at any moment (SIGINT, SIGKILL) keeps every finished row and a resumed one skips them; the
// (point, workload) primary key makes a duplicate impossible.
//
// Tables:
//   screen (a screened sweep, docs/dse.md "Screening"): point, workload, workload_index, one
//        column per swept key, status (estimated | invalid | error), reason, estimated_cycles
//        (the analytical estimate, compiler/dse/screen.h), simulated (1 for the points kept for
//        simulation, whose rows are in results), written in one transaction
//   meta(key TEXT PRIMARY KEY, value TEXT): "experiment" (the canonical JSON of what the sweep
//        computes: a resume must match it), "keys" (the swept keys, JSON list), "tessel_version"
//   results: point, workload, workload_index, one column per swept key named by its dotted path
//        (typed: integers as INTEGER, numbers as REAL, other values as TEXT), status (ok | invalid
//        | error), reason, total_cycles, area_mm2, energy_uj, edp, efficiency, bound,
//        bound_shares (JSON: unit -> share of the cycles of ops it bounds), detail (JSON: pipe
//        utilisation, the ops with the most cycles), dram_bytes, config
//        (the resolved config, JSON), config_sha256, tessel_version, seconds (host wall time of
//        compiling + simulating the point)
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace tessel::dse {

/// One result row (a point on one workload).
struct Row {
  int64_t point = 0;
  std::string workload;  // the model file's stem or zoo:NAME (or the workload's `name:`)
  int64_t workload_index = 0;
  std::vector<std::string> values;  // one per swept key
  std::string status;               // ok | invalid | error
  std::string reason;               // why not ok ("" when ok)
  std::optional<int64_t> total_cycles;
  // area (mm2), energy (uJ) and EDP (uJ x s) from npu_model/area_energy.h when the report has
  // them; efficiency = roofline cycles / simulated cycles
  std::optional<double> area_mm2, energy_uj, edp, efficiency;
  std::string bound;         // the unit bounding the largest share of cycles ("" when not ok)
  std::string bound_shares;  // JSON object unit -> share ("" when not ok)
  /// JSON ("" when not ok): per_pipe_utilization (busy / (cycles x cores) per pipe) and top_ops
  /// (the ops with the most cycles: name, op_type, cycles, share, bound, efficiency).
  std::string detail;
  std::optional<int64_t> dram_bytes;
  std::string config;  // resolved config JSON ("" when the config did not validate)
  std::string config_sha256;
  std::string tessel_version;
  double seconds = 0;
};

/// One screened point on one workload (table screen).
struct ScreenRow {
  int64_t point = 0;
  std::string workload;
  int64_t workload_index = 0;
  std::vector<std::string> values;  // one per swept key
  std::string status;               // estimated | invalid | error
  std::string reason;               // why not estimated ("" when estimated)
  std::optional<double> estimated_cycles;
  bool simulated = false;  // kept for simulation (its results row holds the simulated cycles)
};

/// DIR/results.sqlite of one sweep.
class ResultStore {
 public:
  /// Creates `path` for a new sweep with the swept `keys` and the canonical `experiment` JSON.
  /// Throws tessel::Error when it exists already (a finished or interrupted sweep: --resume it or
  /// choose another directory) or cannot be created.
  static ResultStore create(const std::string& path, const std::vector<std::string>& keys,
                            const std::string& experiment, const std::string& tessel_version);
  /// Opens an existing sweep database (its keys from the meta table), e.g. for --explain. Throws
  /// tessel::Error when it does not exist or is not a tessel sweep database.
  static ResultStore open(const std::string& path);
  /// Opens `path` to resume the sweep it holds. Throws tessel::Error when it does not exist, is
  /// not a tessel sweep database, or was made by a different experiment (names what differs).
  static ResultStore resume(const std::string& path, const std::vector<std::string>& keys,
                            const std::string& experiment);
  ~ResultStore();
  ResultStore(ResultStore&&) noexcept;
  ResultStore& operator=(ResultStore&&) = delete;
  ResultStore(const ResultStore&) = delete;

  /// The (point, workload_index) pairs already stored.
  std::set<std::pair<int64_t, int64_t>> done() const;
  /// Inserts one row in its own transaction (committed when this returns). Throws tessel::Error on
  /// a SQLite failure (e.g. a duplicate row, a full disk).
  void insert(const Row& row);
  /// Every row, ordered by point, then workload_index.
  std::vector<Row> rows() const;

  /// Writes the screened rows (creating table screen) in one transaction. Throws tessel::Error
  /// when the table holds rows already or on a SQLite failure.
  void insert_screen(const std::vector<ScreenRow>& rows);
  /// Number of rows of table screen (0 when there is none).
  int64_t screen_count() const;
  /// The screened rows of `point` (empty when none or no table), by workload_index.
  std::vector<ScreenRow> screen_rows(int64_t point) const;

  const std::vector<std::string>& keys() const { return keys_; }

 private:
  ResultStore(sqlite3* db, std::string path, std::vector<std::string> keys);
  sqlite3* db_ = nullptr;
  std::string path_;
  std::vector<std::string> keys_;
};

/// Quotes a CSV field when it holds a comma, a double quote or a line break (RFC 4180).
std::string csv_field(const std::string& s);

}  // namespace tessel::dse
