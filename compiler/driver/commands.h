// The CLI's commands. Each returns the process exit code: 0 success (every check passed),
// 1 a value mismatch, 2 an error (bad input, unsupported op, ...). Human-readable output goes to
// `out`, diagnostics to `err`.
#pragma once

#include <signal.h>

#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "compiler/backend/npu/compile.h"
#include "compiler/ir/tensor.h"
#include "npu_model/hw_config.h"
#include "passes/graph/pass_manager.h"

namespace tessel::driver {

/// The graph-pass flags of run, check and compile (docs/graph_passes.md).
struct GraphPassArgs {
  std::vector<std::string> disable;         // --disable-pass NAME (repeatable)
  bool none = false;                        // --no-graph-passes
  std::vector<std::string> print_ir_after;  // --print-ir-after NAME|all (repeatable)
  bool print_ir_after_change = false;       // --print-ir-after-change
  bool timing = false;                      // --pass-timing
};
/// The pipeline options the flags ask for; IR dumps and the timing table go to `diag`. Throws
/// tessel::Error naming the valid passes for an unknown pass name.
graph_passes::PipelineOptions pipeline_options(const GraphPassArgs& args, std::ostream& diag);

struct RunArgs {
  std::string experiment;
  std::string report_path;      // --report FILE.json
  std::string trace_path;       // --trace FILE.json
  std::string dram_trace_path;  // --dram-trace FILE: every DRAM request (docs/memory.md)
  std::string tuning_log;       // --tuning-log FILE: apply its best records (NPU runs)
  GraphPassArgs passes;         // combined with the experiment's graph_passes key
};
/// `tessel run EXPERIMENT.yaml`.
int cmd_run(const RunArgs& args, std::ostream& out, std::ostream& err);

struct Experiment;
struct RunSpec;
/// Runs every run of an already loaded experiment and writes args.report_path / args.trace_path
/// (args.experiment is not read): what `tessel run` does after load_experiment, shared with
/// `tessel sim`. `command` is the report's "command" field. Returns 0/1/2 as cmd_run.
int run_experiment(const Experiment& ex, const RunArgs& args, std::ostream& out, std::ostream& err,
                   const std::string& command);

/// The NPU compile options a run's schedule keys ask for: double_buffer, multicore, knobs per op
/// and per task (their source named "SOURCE: schedule.tasks.KEY").
npu_backend::NpuCompileOptions run_compile_options(const RunSpec& run, const std::string& source);

/// `tessel dse EXPERIMENT.yaml --out DIR [--jobs N] [--resume]` (cli_dse.cpp, docs/dse.md): runs
/// every design point of the experiment's sweep on every workload, each in a forked worker
/// process, committing a row per point and workload to DIR/results.sqlite as it finishes, then
/// writes DIR/results.csv, DIR/pareto.csv and the plots. `--explain DIR POINT` prints what bounds
/// a stored point instead.
struct DseArgs {
  std::string experiment;
  std::string out;  // --out DIR
  int jobs = 1;
  bool resume = false;
  std::vector<std::string> explain;  // --explain DIR POINT
};
int cmd_dse(const DseArgs& args, std::ostream& out, std::ostream& err);

/// `tessel sim MODEL.onnx|zoo:NAME --hw FILE [--input-shape NAME=DIMS]... [--timing-only]
/// [--hw-set KEY=VALUE]... [--no-double-buffer] [--single-core] [--report FILE.json]
/// [--trace FILE.json]`: compiles and simulates one model without an experiment file (inputs
/// uniform in [-1, 1), seed 0; checked against the reference unless --timing-only).
/// The model and hardware options `tessel sim` and `tessel tune` share (cli.h:
/// add_model_hw_options).
struct ModelHwArgs {
  std::string model;                      // ONNX file or zoo:NAME
  std::string hw;                         // hardware config YAML
  std::vector<std::string> hw_set;        // KEY=VALUE
  std::vector<std::string> input_shapes;  // NAME=DIMS
};
struct SimArgs : ModelHwArgs {
  std::vector<std::string> input_values;  // NAME=V[,V...]
  bool timing_only = false;
  bool no_double_buffer = false;
  bool single_core = false;
  RunArgs outputs;  // --report, --trace, --tuning-log and the graph pass flags (no experiment)
};
int cmd_sim(const SimArgs& args, std::ostream& out, std::ostream& err);

/// The one NPU run of `tessel sim` and `tessel tune` (cli_sim.cpp): checks the model (a file or
/// zoo:NAME) and the hardware config with its overrides, imports the model with `input_shapes`
/// (N=DIMS) and `input_values` (N=V,...) bound, without graph passes (run_experiment runs them),
/// and returns the run with every input's shape (uniform inputs, seed 0), named after the model.
/// Throws tessel::Error naming the flag, file or input.
RunSpec model_run(const std::string& model, const std::string& hw_path,
                  const std::vector<std::string>& hw_set,
                  const std::vector<std::string>& input_shapes,
                  const std::vector<std::string>& input_values);

/// Runs `run` (a model_run) as a one-run Experiment named after it through run_experiment, the
/// code path of `tessel run`, with the report, trace, tuning log and graph passes of `args`;
/// `command` is the report's "command" field. Returns run_experiment's 0/1/2.
int run_single(const RunSpec& run, const RunArgs& args, std::ostream& out, std::ostream& err,
               const std::string& command);

struct CheckArgs {
  std::vector<std::string> case_dirs;
  std::string target = "ref";
  std::string hw;  // required for npu
  std::vector<std::string> hw_set;
  std::string report_path;
  bool per_node = false;  // compare every intermediate value with the reference and list mismatches
  /// npu with fp16 operands: calibrate graph_passes::fp16_range on each data set's inputs
  /// (--no-fp16-range turns it off).
  bool fp16_range = true;
  std::string tuning_log;  // --tuning-log FILE (npu)
  /// --dram-trace FILE (npu): every DRAM request; FILE-C-S (case C, data set S, from 0) when
  /// there is more than one case or data set.
  std::string dram_trace_path;
  GraphPassArgs passes;
};
/// `tessel check CASE_DIR... --target ref|npu [--hw FILE]`: runs ONNX backend-test layout cases.
int cmd_check(const CheckArgs& args, std::ostream& out, std::ostream& err);

struct CompileArgs {
  std::string model;
  std::string hw;
  std::vector<std::string> hw_set;
  std::vector<std::string> input_shapes;  // NAME=DIMS
  std::vector<std::string> input_values;  // NAME=V[,V...]
  std::string target = "npu";             // npu | cpu
  std::string emit;    // npu: graph | loop | asm (default) | bin; cpu: graph | loop | llvm | asm |
                       // obj | so (default)
  std::string output;  // -o FILE ("" = stdout; required for bin)
  std::string tuning_log;  // --tuning-log FILE (npu)
  GraphPassArgs passes;
};
/// `tessel compile MODEL --hw FILE --emit graph|loop|asm|bin [-o FILE]`, or
/// `tessel compile MODEL --target cpu [--emit graph|loop|llvm|asm|obj|so] -o model.so` (the shared
/// library and its C header model.h; compiler/backend/cpu/aot.h).
int cmd_compile(const CompileArgs& args, std::ostream& out, std::ostream& err);

/// `tessel tune MODEL|zoo:NAME --hw FILE ...` (cli_tune.cpp): tunes the model's kernels, then
/// simulates the tuned program timing-only and reports it as `sim` does, plus the tuning figures.
struct TuneArgs : ModelHwArgs {
  int64_t budget = -1;  // -1: not given
  double seconds = 0;
  std::string strategy = "evolutionary";
  std::string oracle = "learned";
  int64_t seed = 0;
  int jobs = 1;
  std::string log_path;
  bool resume = false;
  std::string report_path;
  bool space = false;  // print each task's knobs and space size, tune nothing
  GraphPassArgs passes;
};
int cmd_tune(const TuneArgs& args, std::ostream& out, std::ostream& err);

/// SIGINT for a long command: while one lives, the first SIGINT prints `message` on stderr and
/// sets requested() (the command finishes the work in progress and stops); the handler is
/// one-shot (SA_RESETHAND), so a second SIGINT ends the process at once. The previous action is
/// restored on destruction. Not enabled: does nothing.
class RunInterrupt {
 public:
  RunInterrupt(bool enable, const char* message);
  ~RunInterrupt();
  bool requested() const;
  RunInterrupt(const RunInterrupt&) = delete;
  RunInterrupt& operator=(const RunInterrupt&) = delete;

 private:
  bool enabled_;
  struct sigaction previous_ {};
};

/// Fails (tessel::Error naming `option`) unless the directory of output file `path` exists and
/// `path` is not a directory; "" passes. Checked before any work.
void check_output_path(const std::string& path, const char* option);

/// The `test_data_set_N` subdirectories of a case directory `dir` (ONNX backend-test layout),
/// sorted by name; empty when there is none.
std::vector<std::filesystem::path> test_data_set_dirs(const std::filesystem::path& dir);

/// Parses repeated `--input-shape NAME=D0,D1,...` options.
std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs);
/// Parses repeated `--input-value NAME=V[,V...]` options (the values in row-major order).
std::map<std::string, std::vector<double>> parse_input_values(
    const std::vector<std::string>& specs);
/// Loads a hardware config with `--hw-set` overrides.
npu::HwConfig load_hw(const std::string& path, const std::vector<std::string>& hw_set);

}  // namespace tessel::driver
