// The NPU backend: Graph IR -> isa::Program.
//
// For every node (in topological order) whose output is not known at compile time and is not a
// pure view (Reshape, Flatten, ...): op_compute gives its tensor expression and the tiling pass its
// schedule space (passes/loop/schedule.h); the kernel's knobs come from the options (per op, per
// task from a tuning log or the tuner) or the analytical default; the pass script
//   tile_vector | tile_cube -> tensorize_vector -> split_cores -> double_buffer ->
//   partition_loops -> plan_memory -> insert_sync
// produces a loop-IR kernel for that point, and codegen emits its instructions, followed by a
// barrier. The backend compiles the points it is given: it never searches and never simulates
// (the tuner, compiler/tuner, measures points with kernel_program). Graph
// values live in GM in the activation dtype (the cube input dtype, fp16 by default), dense
// row-major in their ONNX shape; constants are converted and laid out in GM by the compiler.
//
// Nodes of an If branch (the `branch_guard` attribute of graph_passes::guard_branches) are
// compiled like every other node; consecutive kernels under the same guard form a guarded block
// that every core enters with `lbu x1, x0, <guard byte>` and `blti x1, 1, <end of block>`, so the
// scalar unit jumps over the untaken branch's kernels (their cycles are not spent) and the Where
// after them picks the taken branch's value. timing_program (the tuner's whole-program
// measurement, which runs without values) leaves the blocks out: it times both branches.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "isa/isa.h"
#include "npu_model/hw_config.h"
#include "npu_model/roofline.h"
#include "passes/loop/npu_passes.h"
#include "passes/loop/schedule.h"

namespace tessel::npu_backend {

/// Where the knobs of a kernel come from.
enum class KnobSource {
  analytical,  // the analytical default (passes::default_knobs): the lowest cost-model estimate
  measured,    // the tuner's default strategy: the simulator's pick among screened candidates
  schedule,    // given per op (experiment `schedule:` key, NpuCompileOptions::op_knobs)
  log,         // the best record of a tuning log (--tuning-log, experiment `tune: {log}`)
  tuned,       // found by a tuning run in this invocation (experiment `tune:`)
};
/// "default" (analytical and measured are both the default schedule), "schedule", "log", "tuned".
const char* knob_source_name(KnobSource s);

/// A complete point for a task, with its provenance.
struct TaskKnobs {
  passes::Knobs knobs;
  KnobSource source = KnobSource::tuned;
  std::string origin;  // for error messages, e.g. "run.jsonl:17" (the log record)
};

struct NpuCompileOptions {
  /// Knobs given per op (graph node name; a fusion group by its last node's name), complete or
  /// partial: the analytical default chooses the missing ones. Overrides task_knobs.
  std::map<std::string, passes::Knobs> op_knobs;
  /// Complete points per task key (KernelInfo::schedules[].task): from a tuning log or the tuner.
  std::map<std::string, TaskKnobs> task_knobs;
  bool keep_loop_ir = false;  // keep each kernel's final loop IR text in KernelInfo::loop_ir
  /// false: every kernel's double_buffer knob is restricted to 0 (no ping-pong buffers).
  bool double_buffer = true;
  /// false: every kernel's cores knob is restricted to 1 (tiled for one core, run on core 0; the
  /// other cores only take part in the barriers), to measure what multicore gains.
  bool multicore = true;
  /// Which points of a task's analytical screening (sorted by estimate) the lowering keeps as
  /// its candidates (LoweredGraph::candidates; the tuner's default_candidates). Unset: the best.
  std::function<std::vector<passes::Knobs>(const passes::Screened&)> candidates;
  /// What `candidates` looks at of a screening: the points within this factor of the best estimate
  /// with their cores value (passes::screen's `within`; 0: every point). Without `candidates`
  /// only the best point is kept (within 1).
  double candidates_within = 0;
  /// Called as the compile advances (phase "lower": done of total graph nodes lowered and
  /// screened; "compile": done of total kernels compiled by finish()); unset: nothing is called.
  /// For a progress line on a terminal (driver compile_progress).
  std::function<void(const std::string& phase, size_t done, size_t total)> progress;
};

/// The schedule one kernel was compiled with.
struct ScheduledKernel {
  std::string task;  // task key: kernels with equal keys have the same space and cycles per point
  std::string kind;  // the space's kind: conv | matmul | vector
  passes::Knobs knobs;  // the point compiled
  KnobSource source = KnobSource::analytical;
  std::string comment;  // the tiling pass's one-line description of the point
};

/// One graph node as compiled.
struct KernelInfo {
  std::string node;       // graph node name
  std::string op_type;    // ONNX op
  std::string kind;       // "vector", "cube", "copy" (Concat) , "view" (no code), "const" (no code)
  int32_t op_index = -1;  // index into Program::op_names (-1: no code)
  uint64_t instructions = 0;               // static instruction count
  std::vector<ScheduledKernel> schedules;  // one per kernel of the op (several for split ops)
  npu::OpWork work;                        // tiling-independent work, for the roofline
  std::string loop_ir;
};

/// Where a graph input or output lives in GM.
struct GmBinding {
  std::string value;  // graph value name
  uint64_t address = 0;
  Shape shape;                 // logical shape
  int64_t c0 = 0;              // > 0: stored NC1HWC0 with this C0 ([N, C/c0, H, W, c0]); 0: dense
  DType dtype = DType::f32;    // the graph value's dtype
  DType storage = DType::f16;  // its elements in GM: floats in the activation dtype, others as is
};

/// The element index in GM of element `i` (row-major over the logical shape) of the value bound by
/// `b`: `i` for a dense value; for NC1HWC0 (b.c0 > 0) element [n][c][h][w] of the logical
/// [N, C, H, W] lives at [n][c / c0][h][w][c % c0] of the 5-D [N, C/c0, H, W, c0] array.
int64_t gm_element_index(const GmBinding& b, int64_t i);

/// Writes the `t.numel()` elements of `t` (row-major) to `dst` as `storage` elements: floats
/// rounded to f16 (nearest even) or f32, integers and bool as their bytes (`t` is cast to
/// `storage` first when its dtype differs).
void pack_gm_elements(const Tensor& t, DType storage, uint8_t* dst);

/// The value bound by `b`, read from `bytes` (the GM bytes from b.address on): a float value as
/// f32, an integer or bool value in its own dtype, bit-exact.
Tensor unpack_gm_value(const GmBinding& b, const uint8_t* bytes);

/// A graph compiled for the NPU.
struct NpuModule {
  isa::Program program;
  std::vector<KernelInfo> kernels;
  std::vector<GmBinding> inputs, outputs;
  std::vector<GmBinding> values;  // every value computed on the NPU (for per-node debugging)
  DType act_dtype = DType::f16;
};

class LoweredGraph;

/// The task key of a kernel: its space's kind and a 64-bit hash (hex) of its signature -- the
/// tensor expression with canonical names, shapes, attributes, constants, and the layout of its GM
/// buffers (shapes, strides, NC1HWC0), not their addresses or the node names. Kernels with equal
/// keys have the same schedule space, and each point compiles to the same instructions up to
/// addresses. The hardware config is not part of it (tuning logs record it beside the key).
std::string task_key(const passes::KernelSpec& spec, const std::string& kind);

/// The graph lowered to kernels but not yet scheduled: GM planned, every kernel's tensor
/// expression, task key and schedule space built, its knobs resolved (op_knobs, task_knobs, else
/// the analytical default, computed once per task). The tuner measures points of its kernels
/// alone (kernel_program); finish() compiles every kernel with its knobs.
class LoweredGraph {
 public:
  /// Lowers `graph` (see compile_npu for the errors). A fusion group whose kernel cannot be
  /// tiled (no point of its space fits) is lowered node by node instead.
  LoweredGraph(const Graph& graph, const npu::HwConfig& hw, const NpuCompileOptions& options);
  ~LoweredGraph();
  LoweredGraph(const LoweredGraph&) = delete;
  LoweredGraph& operator=(const LoweredGraph&) = delete;

  /// One kernel (program order).
  struct Kernel {
    size_t op = 0;  // index into the module's KernelInfo list
    std::string task;
    std::shared_ptr<const passes::KernelSchedule> schedule;
    passes::Knobs knobs;  // resolved
    KnobSource source = KnobSource::analytical;
    npu::OpWork work;  // the kernel's tiling-independent work (its roofline)
  };
  const std::vector<Kernel>& kernels() const;
  const std::vector<KernelInfo>& ops() const;
  const npu::HwConfig& hw() const;
  /// The candidates kept from a task's analytical screening (NpuCompileOptions::candidates; the
  /// first is the analytical default) when the default chose its knobs; nullptr otherwise.
  const std::vector<passes::Knobs>* candidates(const std::string& task) const;
  /// Kernel `i` compiled with `knobs` alone: one stream per core (the cores the point does not
  /// use only meet the barrier), each ending with the kernel's closing barrier; GM sized for the
  /// whole graph, no constants loaded (for timing-only simulation). Throws passes::InvalidKnobs.
  isa::Program kernel_program(size_t i, const passes::Knobs& knobs) const;
  /// The whole graph compiled with `task_knobs` (task key -> a complete, valid point) for those
  /// tasks and every other kernel with its resolved knobs, assembled as finish() does (each
  /// kernel followed by its barrier on every core), but with GM sized for the graph and no
  /// constants (for timing-only simulation: what the tuner measures a whole program with). Does
  /// not change the graph; finish() may still be called. Throws passes::InvalidKnobs.
  isa::Program timing_program(const std::map<std::string, passes::Knobs>& task_knobs) const;
  /// Sets the knobs of every kernel of `task` (a complete, valid point; throws
  /// passes::InvalidKnobs naming `origin` otherwise).
  void set_task_knobs(const std::string& task, const TaskKnobs& knobs);
  /// Compiles every kernel with its knobs and assembles the program. Call once.
  NpuModule finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Compile options that pin every kernel of `mod` to the tiles it was compiled with, on one core:
/// each kernel's task gets its knobs with cores = 1 and split = 0 (nothing distributed). Compiling
/// the same graph with them computes the same tiles in the same order on core 0, so its results
/// are bit-identical to `mod`'s: what the tests of the multicore split compare against.
NpuCompileOptions same_tiles_on_one_core(const NpuModule& mod);

/// Compiles `graph` for `hw`: LoweredGraph(graph, hw, options).finish(). Throws
/// tessel::Unsupported naming the op and node for an op without an NPU lowering, tessel::Error
/// for a layer that cannot be tiled into the scratchpads, passes::InvalidKnobs for knobs given in
/// `options` that the kernel's pass rejects (naming the kernel, the knob and why).
NpuModule compile_npu(const Graph& graph, const npu::HwConfig& hw,
                      const NpuCompileOptions& options = {});

}  // namespace tessel::npu_backend
