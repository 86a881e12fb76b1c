// Running a model on a target: load (ONNX import with bound input shapes), compile, execute.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "compiler/backend/npu/compile.h"
#include "compiler/ir/graph.h"
#include "compiler/tuner/tuner.h"
#include "npu_model/hw_config.h"
#include "passes/graph/pass_manager.h"
#include "simulator/simulator.h"

namespace tessel::driver {

/// Execution targets: the reference interpreter, the NPU (compiled, then simulated), the host
/// CPU (compiled through LLVM, run natively; compiler/backend/cpu), the GPU (compiled through
/// LLVM NVPTX, run on the CUDA device; compiler/backend/gpu) or the same GPU kernels on the host
/// emulator (gpu-emu: compiler/backend/gpu/emulator.h).
enum class Target { ref, npu, cpu, gpu, gpu_emu };
/// "ref" / "npu" / "cpu" / "gpu" / "gpu-emu"; throws tessel::Error naming `context` for anything
/// else.
Target parse_target(const std::string& name, const std::string& context);
const char* target_name(Target t);
/// Throws tessel::Error "no CUDA device: <why>" when `t` is gpu and the CUDA driver or a device
/// is missing (checked before any work). With `in_child`, asked in a child process so that this
/// one stays free of the CUDA driver (it forks workers afterwards: CudaDevice::available_in_child).
void require_target_available(Target t, bool in_child = false);

/// Imports an ONNX model (a file, or "zoo:NAME": the zoo model NAME built in memory with the batch
/// of its input's shape, compiler/driver/zoo.h) with the given input shapes (required for dynamic
/// dims), then runs the graph pass pipeline (passes/graph/pass_manager.h) with `passes`: by default
/// every pass, with every registered op available to the pattern fusions. Throws tessel::Error from
/// the import or the pipeline (an unknown pass name, a pass that broke the graph). `input_values`
/// binds inputs to values at compile time (frontend::ImportOptions::input_values). `bind_hint`
/// words the message for an unbound input (frontend::ImportOptions::bind_hint; empty: the CLI's
/// --input-shape).
std::unique_ptr<Graph> load_model(
    const std::string& path, const std::map<std::string, Shape>& input_shapes,
    const graph_passes::PipelineOptions& passes = {},
    const std::map<std::string, std::vector<double>>& input_values = {},
    const std::function<std::string(const std::string&, const std::string&)>& bind_hint = {});

/// The ops `target` executes, for PipelineOptions::available: every registered op on ref (the
/// reference interpreter); on the compiled targets the ops with a compute definition
/// (lower::compute_ops()), so the pattern fusions only form ops the backend compiles.
graph_passes::OpAvailable target_ops(Target target);

/// The form of `model` the compiled targets (npu, cpu, gpu) take, or null when `model` is already
/// in it: control flow whose path is known at compile time inlined (graph_passes::fold_control),
/// recurrent layers unrolled (graph_passes::expand_recurrent), the loss functions expanded into
/// their ONNX function bodies (graph_passes::expand_losses) and nodes with several used outputs
/// made single-output ones (graph_passes::split_outputs), 1-D convolution and pooling made 2-D
/// (graph_passes::conv_as_2d), ConvTranspose made per-phase Convs (graph_passes::convt_as_conv),
/// 3-D ones made 2-D (graph_passes::pool_3d_as_2d, conv_3d_as_2d)
/// and Resize other than pixel repetition made MatMuls by constant
/// interpolation matrices (graph_passes::resize_as_matmul). run_model applies it before compiling;
/// the NPU tolerance of a conformance case is derived on it, the graph whose roundings the NPU
/// makes. Throws tessel::Unsupported from an expansion that cannot express a node.
std::unique_ptr<Graph> compiled_form(const Graph& model);

/// What compile_for_npu returns: the module, the tuning figures when it tuned, and the host
/// seconds the compile took.
struct CompiledNpu {
  npu_backend::NpuModule module;
  std::optional<tuner::TuneResult> tuned;  // when `schedule` tuned the kernels
  double seconds = 0;                      // scheduling (log, tuning, measured default) + compiling
  double schedule_seconds = 0;             // the scheduling part of `seconds`
};

/// Compiles `graph` for the NPU with the knobs `schedule` asks for (tuner::compile_scheduled:
/// tuning log records, tuning, the measured default) on top of `options`, and checks its GM
/// footprint (inputs, outputs, constants and every intermediate value as planned) against
/// memory.dram.capacity_bytes when the config gives one. Throws tessel::Error naming `model`
/// (the file or zoo:NAME the user gave), the bytes needed and the capacity, and the config file;
/// and whatever compile_scheduled throws.
CompiledNpu compile_for_npu(const Graph& graph, const npu::HwConfig& hw,
                            const npu_backend::NpuCompileOptions& options,
                            const tuner::ScheduleRequest& schedule, const std::string& model);

struct RunOptions {
  bool timing_only = false;      // NPU: simulate timing only (outputs are not computed)
  std::string trace_path;        // NPU: Chrome/Perfetto trace of the pipes
  std::string dram_trace_path;   // NPU: every DRAM request as text (docs/memory.md)
  bool read_all_values = false;  // NPU: also return every value computed on the NPU (debugging)
  npu_backend::NpuCompileOptions compile;
  /// NPU: the module compile_for_npu already built for this graph and config (moved from; then
  /// `compile` and `schedule` are not used). Null: run_model compiles, naming the graph in a GM
  /// capacity error.
  std::shared_ptr<CompiledNpu> compiled;
  /// cpu: threads the code is scheduled for and the runtime pool runs it with (the pool's count
  /// is restored afterwards); 0: TESSEL_CPU_THREADS or the online cores.
  int cpu_threads = 0;
  /// NPU: how kernels get their knobs (tuning log, tuning, the measured default).
  tuner::ScheduleRequest schedule;
};

/// What an NPU run produced besides the outputs.
struct NpuRun {
  npu_backend::NpuModule module;
  sim::SimResult sim;
  double compile_seconds = 0;              // scheduling (log, tuning, measured default) + compiling
  double schedule_seconds = 0;             // the scheduling part of compile_seconds
  std::optional<tuner::TuneResult> tuned;  // when the run tuned its kernels
};

/// What a CPU run produced besides the outputs: the compiled kernels and their wall times.
struct CpuRun {
  struct Kernel {
    std::string node, op_type, kind;  // kind: gemm | generic | copy (see cpu_backend)
    std::vector<std::string> fused;   // nodes computed inside this kernel
    double seconds = 0;               // wall time in the profiled run (after a warm-up run)
    double flops = 0;                 // gemm kernels: 2 * M * N * K * batch
  };
  std::vector<Kernel> kernels;  // every kernel with code, in execution order
  double compile_seconds = 0;   // TE -> LLVM IR -> machine code
  int kernels_compiled = 0;     // distinct kernels compiled by LLVM (cpu_backend objects.h)
  int kernels_cached = 0;       // distinct kernels taken from the kernel cache
  double run_seconds = 0;       // the profiled entry call
  int threads = 1;
  int64_t arena_bytes = 0;
};

/// What a GPU run produced besides the outputs: the launches and their times.
struct GpuRun {
  struct Launch {
    std::string node, op_type, kind;  // kind: gemm-mma | gemm-fp32 | generic | copy
    std::string entry, what;          // PTX entry, the loop IR's comment
    int64_t grid = 0, block = 0, shared_bytes = 0;
    double seconds = 0;  // device time (CUDA events) or emulation time, after a warm-up run
    double flops = 0;    // the kernel's contraction flops, on its first launch
    int64_t bytes = 0;   // compulsory global-memory traffic (its buffers, once)
    double roofline_seconds = 0;  // max(flops / peak, bytes / DRAM bandwidth); 0 on the emulator
  };
  std::vector<Launch> launches;  // in execution order
  std::string device;            // e.g. "NVIDIA H200 (sm_90, 132 SMs)" or "host emulator"
  double compile_seconds = 0;    // TE -> loop IR -> NVPTX IR
  double load_seconds = 0;       // PTX + driver JIT (device) or host JIT (emulator)
  double run_seconds = 0;        // every launch of the profiled run
  size_t kernels = 0;
  bool fp16 = false;  // some contraction ran in fp16 on the tensor cores
  /// The device's peaks (CUDA device only; all 0 on the emulator): the roofline of the run is
  /// the sum over launches of max(flops / peak, bytes / DRAM bandwidth), the fp16 tensor peak
  /// for gemm-mma launches, the fp32 peak for the others.
  double peak_fp16_tensor_flops = 0, peak_fp32_flops = 0, dram_bytes_per_second = 0;
  double roofline_seconds = 0;
};

struct RunOutput {
  std::map<std::string, Tensor> outputs;  // by graph output name, f32 (empty in timing-only mode)
  double seconds = 0;                     // wall time of the whole run
  std::optional<NpuRun> npu;
  std::optional<CpuRun> cpu;
  std::optional<GpuRun> gpu;
};

/// Runs `graph` on `target` (hw required for npu). Inputs are converted to the activation dtype
/// of the NPU (fp16 by default); outputs are returned as fp32.
RunOutput run_model(const Graph& graph, Target target, const npu::HwConfig* hw,
                    const std::map<std::string, Tensor>& inputs, const RunOptions& options = {});

/// Writes `bytes` to `path` atomically (temporary file + rename), creating nothing on failure.
/// Throws tessel::Error naming the path (e.g. a missing directory).
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace tessel::driver
