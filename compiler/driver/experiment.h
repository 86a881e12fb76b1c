// Experiment files: YAML describing one or more runs (model, input shapes and data, hardware
// config, target, what to report). docs/experiments.md documents every key.
//
//   name: quickstart
//   model: ../models/ch_ppocr_mobile_v2.0_cls_infer.onnx     # relative to this file
//   inputs:
//     x: {shape: [1, 3, 48, 192], fill: uniform, low: -1.0, high: 1.0, seed: 1}
//   hw: ../hw_configs/npu_4core.yaml
//   target: npu
//   check: reference
//   report: [summary, pipes, memory, energy, ops, check]
//   graph_passes: all             # all (default) | none | {disable: [cse, fuse_kernels]}
//   schedule: {double_buffer: true, multicore: true,   # NPU schedule switches (default: both on)
//              ops: {conv1: {mt: 64, kc: 32}},        # knobs per op (others: the default)
//              tasks: {conv-1a2b...: {...}}}          # knobs per task key
//   tune: {budget: 2000, strategy: evolutionary, oracle: learned, seed: 0, log: run.jsonl}
//   runs:                         # optional: each entry overrides the keys above
//     - {name: batch4, inputs: {x: {shape: [4, 3, 48, 192]}}}
//
// A design-space sweep (`tessel dse`, docs/dse.md) replaces model/inputs/hw/runs with:
//   sweep:
//     base: ../hw_configs/npu_4core.yaml
//     grid:   {core.cube.m: [8, 16, 32], core.buffers_bytes.ub: [131072, 262144]}
//     random: {samples: 200, seed: 1, method: lhs,            # method: uniform (default) | lhs
//              ranges: {memory.dram.bytes_per_cycle: [32, 512, log]}}   # lin | log | pow2
//     where:  ["core.buffers_bytes.l0c >= 4 * core.cube.m * core.cube.n * 4"]
//   workloads: [{model: zoo:resnet50}, {model: ../models/x.onnx, inputs: {x: {shape: [...]}}}]
//   tune: {budget: 64}            # per point and workload; absent: the default schedules
//   objectives: [cycles, energy, area]
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/driver/runner.h"
#include "compiler/dse/sweep.h"
#include "compiler/tuner/tuner.h"
#include "npu_model/hw_config.h"

namespace tessel::driver {

/// How one model input is filled.
struct InputSpec {
  Shape shape;
  std::string fill = "uniform";  // uniform | zeros | file
  double low = -1.0, high = 1.0;
  uint64_t seed = 0;
  std::string file;  // TensorProto .pb, for fill: file
  /// `value: V` or `value: [V, ...]`: the input is bound to these values at compile time (a
  /// constant of the model, e.g. a sample rate an If tests); `shape` is then optional.
  bool has_value = false;
  std::vector<double> value;
};

/// Sections a run may report.
inline const std::vector<std::string> kReportSections = {"summary", "pipes", "memory",
                                                         "energy",  "ops",   "check"};

struct RunSpec {
  std::string name;
  std::string model;  // resolved path, or "zoo:NAME" (a zoo model built in memory, zoo.h)
  std::map<std::string, InputSpec> inputs;
  std::string hw;  // resolved path ("" for target ref)
  std::vector<npu::HwOverride> hw_set;
  Target target = Target::npu;
  bool check = true;  // compare with the reference interpreter
  bool timing_only = false;
  std::vector<std::string> report = kReportSections;
  bool graph_passes = true;                         // graph_passes: all (default) | none
  std::vector<std::string> disabled_passes;         // graph_passes: {disable: [NAME, ...]}
  bool double_buffer = true;                        // schedule: {double_buffer: bool}
  bool multicore = true;                            // schedule: {multicore: bool}
  std::map<std::string, passes::Knobs> op_knobs;    // schedule: {ops: {NAME: {knob: value}}}
  std::map<std::string, passes::Knobs> task_knobs;  // schedule: {tasks: {KEY: {knob: value}}}
  /// tune: {budget, strategy, oracle, seed, log, seconds, jobs}: tune the run's kernels before it
  /// runs (budget 0: only apply the best records of `log`).
  std::optional<tuner::TuneOptions> tune;
  int cpu_threads = 0;  // threads: N (target cpu): 0 = TESSEL_CPU_THREADS or the online cores
};

/// Objectives a sweep's Pareto fronts may minimise: total_cycles, area_mm2, energy_uj, edp
/// (energy x delay) and DRAM bytes moved.
inline const std::vector<std::string> kDseObjectives = {"cycles", "area", "energy", "edp",
                                                        "dram_bytes"};

/// The design-space exploration part of an experiment (`tessel dse`, docs/dse.md): the sweep and
/// the objectives; the workloads are the experiment's runs (each on sweep.base, timing-only).
struct DseSpec {
  dse::SweepSpec sweep;
  /// "FILE:LINE:COL: sweep.where[i]" per constraint, for messages.
  std::vector<std::string> where_context;
  std::vector<std::string> objectives = {"cycles", "area", "energy"};
  /// `hypervolume_reference: {OBJECTIVE: value}`: the reference point of the fronts' hypervolume
  /// (an objective not given: 1.1 x its worst value on the front's candidates).
  std::map<std::string, double> reference;
  /// `screen: {keep: K}`: estimate every point with the analytical model (compiler/dse/screen.h)
  /// and compile and simulate only the K points with the lowest estimates; 0: no screening.
  int64_t screen_keep = 0;
};

struct Experiment {
  std::string name;
  std::string description;
  std::string source;  // the file
  std::vector<RunSpec> runs;
  /// Present when the file has a `sweep:` (then `runs` are its `workloads:`; `tessel run`
  /// refuses it and `tessel dse` needs it).
  std::optional<DseSpec> dse;
};

/// Parses and validates an experiment file. Relative paths are resolved against the file's
/// directory. Throws tessel::Error naming the file, line and key on unknown keys, missing keys,
/// wrong types and invalid values (and a missing model / hw file).
Experiment load_experiment(const std::string& path);

/// Same, from the file's text: `path` names the file in error messages and its directory is the
/// base of relative paths (the file itself is not read).
Experiment parse_experiment(const std::string& yaml_text, const std::string& path);

/// The tensor an InputSpec describes (deterministic for a given seed).
Tensor make_input(const InputSpec& spec, const std::string& context);

}  // namespace tessel::driver
