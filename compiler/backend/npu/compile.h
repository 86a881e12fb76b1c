// The NPU backend: Graph IR -> isa::Program.
//
// For every node (in topological order) whose output is not known at compile time and is not a
// pure view (Reshape, Flatten, ...): op_compute gives its tensor expression; the pass script
//   tile_vector | tile_cube -> tensorize_vector -> partition_loops -> plan_memory -> insert_sync
// produces a loop-IR kernel, and codegen emits its instructions, followed by a barrier. Graph
// values live in GM in the activation dtype (the cube input dtype, fp16 by default), dense
// row-major in their ONNX shape; constants are converted and laid out in GM by the compiler.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "isa/isa.h"
#include "npu_model/hw_config.h"
#include "npu_model/roofline.h"
#include "passes/loop/npu_passes.h"

namespace tessel::npu_backend {

struct NpuCompileOptions {
  std::map<std::string, passes::VectorKnobs> vector_knobs;  // by node name
  std::map<std::string, passes::CubeKnobs> cube_knobs;      // by node name
  bool keep_loop_ir = false;  // keep each kernel's final loop IR text in KernelInfo::loop_ir
  bool double_buffer = true;  // default of every kernel's double_buffer knob
  /// true: each kernel's core-bound loop is split over hw.cores (split_cores); false: every
  /// kernel is tiled for one core and runs on core 0 (the other cores only take part in the
  /// barriers), to measure what multicore gains.
  bool multicore = true;
  /// Measured tile selection: for every cube kernel whose knobs are not given, the tiler's best
  /// `tune_candidates` tilings by its analytical estimate are each compiled and simulated alone
  /// (timing only, simulator/) and the one with the fewest cycles is kept -- the simulator's
  /// cycles as the cost feedback. With double_buffer on, the best single-buffered tilings are
  /// candidates too (double buffering is kept per kernel where it pays). 0 or 1: the analytical
  /// choice only.
  int tune_candidates = 8;
};

/// One graph node as compiled.
struct KernelInfo {
  std::string node;       // graph node name
  std::string op_type;    // ONNX op
  std::string kind;       // "vector", "cube", "copy" (Concat) , "view" (no code), "const" (no code)
  int32_t op_index = -1;  // index into Program::op_names (-1: no code)
  uint64_t instructions = 0;  // static instruction count
  passes::VectorKnobs vector_knobs;
  passes::CubeKnobs cube_knobs;
  npu::OpWork work;  // tiling-independent work, for the roofline
  std::string loop_ir;
};

/// Where a graph input or output lives in GM.
struct GmBinding {
  std::string value;  // graph value name
  uint64_t address = 0;
  Shape shape;     // logical shape
  int64_t c0 = 0;  // > 0: stored NC1HWC0 with this C0 ([N, C/c0, H, W, c0]); 0: dense
};

/// The element index in GM of element `i` (row-major over the logical shape) of the value bound by
/// `b`: `i` for a dense value; for NC1HWC0 (b.c0 > 0) element [n][c][h][w] of the logical
/// [N, C, H, W] lives at [n][c / c0][h][w][c % c0] of the 5-D [N, C/c0, H, W, c0] array.
int64_t gm_element_index(const GmBinding& b, int64_t i);

/// A graph compiled for the NPU.
struct NpuModule {
  isa::Program program;
  std::vector<KernelInfo> kernels;
  std::vector<GmBinding> inputs, outputs;
  std::vector<GmBinding> values;  // every value computed on the NPU (for per-node debugging)
  DType act_dtype = DType::f16;
};

/// Compiles `graph` for `hw`. Throws tessel::Unsupported naming the op and node for an op without
/// an NPU lowering, tessel::Error for a layer that cannot be tiled into the scratchpads.
NpuModule compile_npu(const Graph& graph, const npu::HwConfig& hw,
                      const NpuCompileOptions& options = {});

}  // namespace tessel::npu_backend
