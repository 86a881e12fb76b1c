// Running a model on a target: load (ONNX import with bound input shapes), compile, execute.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "compiler/backend/npu/compile.h"
#include "compiler/ir/graph.h"
#include "npu_model/hw_config.h"
#include "simulator/simulator.h"

namespace tessel::driver {

/// Execution targets: the reference interpreter or the NPU (compiled, then simulated).
enum class Target { ref, npu };
/// "ref" / "npu"; throws tessel::Error naming `context` for anything else.
Target parse_target(const std::string& name, const std::string& context);
const char* target_name(Target t);

/// Imports an ONNX model with the given input shapes (required for dynamic dims).
std::unique_ptr<Graph> load_model(const std::string& path,
                                  const std::map<std::string, Shape>& input_shapes);

struct RunOptions {
  bool timing_only = false;      // NPU: simulate timing only (outputs are not computed)
  std::string trace_path;        // NPU: Chrome/Perfetto trace of the pipes
  bool read_all_values = false;  // NPU: also return every value computed on the NPU (debugging)
  npu_backend::NpuCompileOptions compile;
};

/// What an NPU run produced besides the outputs.
struct NpuRun {
  npu_backend::NpuModule module;
  sim::SimResult sim;
  double compile_seconds = 0;
};

struct RunOutput {
  std::map<std::string, Tensor> outputs;  // by graph output name, f32 (empty in timing-only mode)
  double seconds = 0;                     // wall time of the whole run
  std::optional<NpuRun> npu;
};

/// Runs `graph` on `target` (hw required for npu). Inputs are converted to the activation dtype
/// of the NPU (fp16 by default); outputs are returned as fp32.
RunOutput run_model(const Graph& graph, Target target, const npu::HwConfig* hw,
                    const std::map<std::string, Tensor>& inputs, const RunOptions& options = {});

/// Writes `bytes` to `path` atomically (temporary file + rename), creating nothing on failure.
/// Throws tessel::Error naming the path (e.g. a missing directory).
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace tessel::driver
