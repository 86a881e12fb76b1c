// Tuning logs: JSON lines, one record per line, appended and flushed one at a time so a killed tune
// loses at most the trials in flight. Record types:
//   {"type": "hw", "hw": HASH, "name": ..., "config": YAML}      the effective config, once per
//   file
//   {"type": "trial", "run": RUN, "trial": I, "task": KEY, "kind": conv|matmul|vector,
//    "hw": HASH, "knobs": {...}, "cycles": N, "oracle": sim|analytical, "strategy": ...,
//    "seed": S, "version": V[, "error": WHY]}                      one measured point
// A record depends only on what was measured, never on timing or on how many workers ran, so
// the same tuning run writes the same log bit for bit. docs/tuning.md describes the format.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/backend/npu/compile.h"
#include "npu_model/hw_config.h"

namespace tessel::tuner {

/// The tessel version written into every record.
const char* tessel_version();

/// A content hash of the effective hardware config (every loaded key after overrides, not its
/// name or file): 16 hex digits of FNV-1a 64 over hw_config_to_yaml without the name line.
std::string hw_hash(const npu::HwConfig& hw);

/// One trial record.
struct TrialRecord {
  std::string run;    // the tuning run it belongs to (tuner.h, run_id)
  int64_t trial = 0;  // index within its run
  std::string task, kind, hw;
  passes::Knobs knobs;
  uint64_t cycles = 0;  // 0 when error is set
  std::string oracle;   // sim | analytical
  std::string strategy;
  uint64_t seed = 0;
  std::string version;
  std::string error;  // a point the pass rejected or whose simulation failed: why
  size_t line = 0;    // 1-based line it was read from (0: not read)
  bool ok() const { return error.empty(); }
};

/// A parsed log.
class TuningLog {
 public:
  /// Reads `path`; a missing file is an empty log. Throws tessel::Error naming `path:LINE` for a
  /// line that is not a JSON object, a record of unknown type, a missing or mistyped field.
  static TuningLog read(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<TrialRecord>& trials() const { return trials_; }
  /// hw hash -> the config as YAML (from the "hw" records).
  const std::map<std::string, std::string>& hw_configs() const { return hw_; }
  /// The best valid trial per task measured on `hw_hash` (fewest cycles; ties: the earlier
  /// line). Simulated records win over analytical ones for the same task.
  std::map<std::string, const TrialRecord*> best(const std::string& hw_hash) const;
  /// The trials of run `run` in file order.
  std::vector<const TrialRecord*> run_trials(const std::string& run) const;
  /// Bytes up to the end of the last complete line (a tune killed while writing a record leaves
  /// a last line without its newline: it is ignored, and LogWriter cuts it off).
  uint64_t complete_bytes() const { return complete_bytes_; }
  /// The last record has no newline after it (a hand-edited file): LogWriter adds one.
  bool needs_newline() const { return needs_newline_; }

 private:
  std::string path_;
  uint64_t complete_bytes_ = 0;
  bool needs_newline_ = false;
  std::vector<TrialRecord> trials_;
  std::map<std::string, std::string> hw_;
};

/// The best records of `log` for `hw` as compile options' task knobs (source log, origin
/// "PATH:LINE"). Every applied record is validated when its task is compiled (an invalid one is an
/// error naming the record's line).
std::map<std::string, npu_backend::TaskKnobs> log_knobs(const TuningLog& log,
                                                        const npu::HwConfig& hw);

/// Appends records to a log file, each written and flushed at once.
class LogWriter {
 public:
  /// Opens `path` for appending (creating it); when `existing` (the log read from `path`) ends in
  /// an incomplete line, that line is cut off first. Throws tessel::Error naming the path.
  explicit LogWriter(const std::string& path, const TuningLog* existing = nullptr);
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;
  /// Writes the hw record of `hw` unless the file already has one with its hash.
  void hw(const npu::HwConfig& hw, const TuningLog& existing);
  void trial(const TrialRecord& r);

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  void line(const std::string& text);
};

/// The JSON line of a trial record (without the newline).
std::string trial_json(const TrialRecord& r);

}  // namespace tessel::tuner
