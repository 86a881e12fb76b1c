// The tuner: searches the schedule spaces of a model's kernels (passes/loop/schedule.h) with a cost
// signal and returns the best point per task. The pieces, after AutoTVM / Ansor / MetaSchedule
// (../shared/BACKGROUND.md):
//   tasks        kernels with the same signature (task key: tensor expression, shapes, layouts)
//                are one task, weighted by how often they occur
//   oracles      sim: the kernel alone on the SystemC model, timing-only (measure.h);
//                analytical: the cost model (npu_model/cost_model.h); learned: the simulator
//                measures, and candidates pass analytical screening, then the XGBoost ranker
//                (learned.h, retrained online on the measurements) before the simulator
//   strategies   exhaustive, random, anneal, evolutionary (strategy.h), seeded
//   scheduler    the task with the largest estimated end-to-end gain gets the next trials
//                (Ansor's gradient-based task scheduler, Zheng et al. OSDI'20, section 6)
//   log          every trial appended to a JSON-lines log (log.h); --resume replays it
// A tuning run is deterministic: the same graph, config, strategy, oracle, seed and budget give the
// same log bit for bit whatever `jobs` (a `seconds` limit makes it depend on timing).
//
// The entry points a driver calls per (hardware config, model): compile_scheduled() (what
// compile/sim/run/check use: log records, tuning, the measured default), tune() and
// default_candidates().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/backend/npu/compile.h"
#include "compiler/ir/graph.h"
#include "compiler/tuner/strategy.h"
#include "npu_model/hw_config.h"

namespace tessel::tuner {

enum class Oracle { sim, analytical, learned };
/// "sim" | "analytical" | "learned".
const char* oracle_name(Oracle o);
/// Parses an oracle name; throws tessel::Error naming `context` and the valid names.
Oracle parse_oracle(const std::string& name, const std::string& context);

/// A tuning task: the kernels of a lowered graph that share a task key.
struct Task {
  std::string key, kind;
  std::vector<size_t> kernels;   // LoweredGraph kernel indices; kernels[0] is measured
  std::vector<std::string> ops;  // their ops (program order, distinct)
  double weight = 0;             // number of kernels
  double roofline_cycles = 0;    // the roofline of one kernel (a lower bound)
  npu::OpWork work;              // one kernel's tiling-independent work (its roofline's input)
  bool fixed = false;            // its knobs were given per op (schedule:), so it is not tuned
};
/// The tasks of `lowered` in order of first occurrence.
std::vector<Task> tasks_of(const npu_backend::LoweredGraph& lowered);

/// The default small-budget strategy's candidates for a task from its analytical screening
/// (sorted by estimate): for every value c of the `cores` knob, the 3 best points with cores = c,
/// then the best of every loop structure (resident operand, double buffering) and of every value
/// of `mt` (cube) or `tile_axis` (vector) with cores = c, at most 4 per value; beyond the best,
/// only points estimated within 1.5x of the best with cores = c. The candidates for
/// cores = c do not depend on how many cores the config has, so a config with more cores measures
/// a superset and its pick is never slower than a config with fewer.
/// `screened` may hold only the points within kDefaultCandidatesWithin of the best with their
/// cores value (passes::screen's `within`): the candidates are the same.
std::vector<passes::Knobs> default_candidates(const passes::Screened& screened);
/// How far above the best estimate with the same cores value a default candidate may be.
constexpr double kDefaultCandidatesWithin = 1.5;

struct Progress {
  int64_t trials = 0, budget = 0;
  double seconds = 0;
  double trials_per_second = 0;
  double best_total_cycles = 0;  // sum over tasks of weight x best cycles
  double eta_seconds = -1;       // -1: unknown
};

struct TuneOptions {
  /// Trials (measured points) over all tasks, the warm-up included; the warm-up measures every
  /// task's default candidates even when they exceed the budget.
  int64_t budget = 1000;
  double seconds = 0;  // wall-clock limit besides the budget (0: none)
  Strategy strategy = Strategy::evolutionary;
  Oracle oracle = Oracle::learned;
  uint64_t seed = 0;
  int jobs = 1;                                   // measurement worker processes
  std::string log_path;                           // append every trial here ("" = keep no log)
  bool resume = false;                            // continue the run's trials already in log_path
  size_t batch = 8;                               // trials per scheduling round
  std::function<void(const Progress&)> progress;  // called after every round
};

struct TaskResult {
  Task task;
  double space_size = 0;
  passes::Knobs best;
  uint64_t best_cycles = 0;     // of one kernel (the oracle's measure)
  uint64_t default_cycles = 0;  // the best of the default candidates (the measured default)
  int64_t trials = 0;
  /// The whole-program check gave the task back its default point (TuneResult::program).
  bool kept_default = false;
};

/// The whole-program check: the search's best point per task (each measured alone) against the
/// plain compile's (the measured default, or a log's record), both compiled into the whole program
/// and simulated timing-only. Not done with the analytical oracle, nor when they are the same.
struct ProgramCheck {
  bool checked = false;
  uint64_t tuned_cycles = 0;    // the whole program with every task's best
  uint64_t default_cycles = 0;  // ... with every task's default
  uint64_t mixed_cycles = 0;    // ... with the default for the tasks slower in the tuned one (0:
                                // not simulated)
  uint64_t cycles = 0;          // the one kept: the fewest (ties: tuned, mixed, default)
  std::string choice;           // "tuned", "mixed" or "default"
  double seconds = 0;           // compiling and simulating them
};

struct CurvePoint {
  int64_t trials = 0;
  double seconds = 0;
  double total_cycles = 0;  // sum over tasks of weight x best cycles so far
};

struct TuneResult {
  std::string run;                                      // the run id in the log
  std::map<std::string, npu_backend::TaskKnobs> knobs;  // best point per tuned task
  std::vector<TaskResult> tasks;
  int64_t trials = 0;        // measured in this invocation plus replayed from the log
  int64_t replayed = 0;      // taken from the log (--resume)
  int64_t warm_started = 0;  // first candidates taken from the nearest other config's records
  double seconds = 0;
  double default_total = 0, best_total = 0;  // sum over tasks of weight x cycles
  std::vector<CurvePoint> curve;
  ProgramCheck program;  // knobs holds the points it kept
};

/// Tunes the tasks of `lowered` (tasks whose knobs were given per op are left as they are).
/// Throws tessel::Error for a bad log (naming path:line), a resume that does not continue the
/// log's run, an exhaustive search over too large a space.
TuneResult tune(const npu_backend::LoweredGraph& lowered, const npu::HwConfig& hw,
                const TuneOptions& options);

/// How compile_scheduled chooses the knobs of each kernel.
struct ScheduleRequest {
  std::string tuning_log;           // apply the best records of this log first (--tuning-log)
  std::optional<TuneOptions> tune;  // then tune (experiment key tune:)
  /// The remaining kernels: the measured default (simulate the default candidates, keep the
  /// fastest) or, when false, the analytical default.
  bool measure_default = true;
  int jobs = 1;  // measurement workers of the measured default
  /// Called as the compile advances: the phases of NpuCompileOptions::progress ("lower",
  /// "compile") and "measure" (done of total default candidates simulated); unset: not called.
  std::function<void(const std::string& phase, size_t done, size_t total)> progress;
};

struct ScheduledModule {
  npu_backend::NpuModule module;
  std::optional<TuneResult> tuned;
  double schedule_seconds = 0;  // lowering, log, tuning and default measurements
};

/// Compiles `graph` with the knobs `request` asks for on top of `base` (op knobs, double_buffer,
/// multicore). The compile itself never simulates; the measured default and tuning do, through
/// this component.
ScheduledModule compile_scheduled(const Graph& graph, const npu::HwConfig& hw,
                                  const npu_backend::NpuCompileOptions& base,
                                  const ScheduleRequest& request);

}  // namespace tessel::tuner
