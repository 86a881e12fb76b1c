// Model loading and execution on the reference interpreter or the simulated NPU.
#include "compiler/driver/runner.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>

#include "compiler/backend/cpu/compile.h"
#include "compiler/backend/cpu/int8_kernels.h"
#include "compiler/backend/cpu/jit.h"
#include "compiler/backend/cpu/runtime/cpu_runtime.h"
#include "compiler/backend/gpu/cuda_driver.h"
#include "compiler/backend/gpu/executable.h"
#include "compiler/backend/npu/int8_ops.h"
#include "compiler/driver/zoo.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/lower/op_compute.h"
#include "compiler/ops/reference.h"
#include "compiler/support/error.h"
#include "compiler/support/fp16.h"
#include "passes/graph/graph_passes.h"

namespace tessel::driver {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Target parse_target(const std::string& name, const std::string& context) {
  if (name == "ref") return Target::ref;
  if (name == "npu") return Target::npu;
  if (name == "cpu") return Target::cpu;
  if (name == "gpu") return Target::gpu;
  if (name == "gpu-emu") return Target::gpu_emu;
  fail("{}: unknown target '{}' (expected ref, npu, cpu, gpu or gpu-emu)", context, name);
}

void require_target_available(Target t, bool in_child) {
  if (t != Target::gpu) return;
  std::string why;
  if (!(in_child ? gpu_backend::CudaDevice::available_in_child(&why)
                 : gpu_backend::CudaDevice::available(&why)))
    fail("{}", why);
}

const char* target_name(Target t) {
  switch (t) {
    case Target::ref:
      return "ref";
    case Target::npu:
      return "npu";
    case Target::cpu:
      return "cpu";
    case Target::gpu:
      return "gpu";
    case Target::gpu_emu:
      return "gpu-emu";
  }
  return "?";
}

std::unique_ptr<Graph> load_model(
    const std::string& path, const std::map<std::string, Shape>& input_shapes,
    const graph_passes::PipelineOptions& passes,
    const std::map<std::string, std::vector<double>>& input_values,
    const std::function<std::string(const std::string&, const std::string&)>& bind_hint) {
  frontend::ImportOptions opts;
  opts.input_shapes = input_shapes;
  opts.input_values = input_values;
  opts.bind_hint = bind_hint;
  std::unique_ptr<Graph> graph;
  if (path.rfind("zoo:", 0) == 0) {
    // A zoo model, built in memory at the batch the input shape asks for (dim 0; default 1). The
    // serialized bytes are cached per (name, batch): building calibrates BatchNormalization with a
    // reference run, which experiments should pay once, not once per run.
    const zoo::ZooModel& zm = zoo::find_zoo_model(path.substr(4));
    zoo::ZooOptions zo;
    auto it = input_shapes.find(zm.input_name);
    if (it != input_shapes.end() && !it->second.empty()) zo.batch = it->second[0];
    static std::mutex cache_mutex;
    static std::map<std::pair<std::string, int64_t>, std::string> cache;
    std::string bytes;
    {
      std::lock_guard<std::mutex> lock(cache_mutex);
      auto& cached = cache[{zm.name, zo.batch}];
      if (cached.empty()) cached = zoo::serialize_model(zoo::build_zoo_model(zm.name, zo));
      bytes = cached;
    }
    graph = frontend::import_onnx_bytes(bytes, path, opts);
  } else {
    graph = frontend::import_onnx(path, opts);
  }
  // Control flow whose path is known at compile time becomes straight-line dataflow before the
  // pipeline (which then folds and fuses what it exposes); the compiled targets need it, and
  // 1-D convolution and pooling as their 2-D forms (exact; conv_as_2d).
  graph_passes::fold_control(*graph);
  graph_passes::conv_as_2d(*graph);
  graph_passes::convt_as_conv(*graph);  // ConvTranspose as per-phase Convs (convt_as_conv)
  graph_passes::run_pipeline(*graph, passes);
  return graph;
}

graph_passes::OpAvailable target_ops(Target target) {
  if (target == Target::ref) return {};
  auto ops = std::make_shared<const std::set<std::string>>([target] {
    std::vector<std::string> list = lower::compute_ops();
    if (target == Target::npu) {  // typed computes, and the cube's int8 kernels
      for (const auto& op : lower::typed_compute_ops()) list.push_back(op);
      for (const auto& op : npu_backend::npu_int8_ops()) list.push_back(op);
    }
    if (target == Target::cpu) {  // typed computes, and the CPU plan's int8 host kernels
      for (const auto& op : lower::typed_compute_ops()) list.push_back(op);
      for (const auto& op : cpu_backend::int8_ops()) list.push_back(op);
    }
    return std::set<std::string>(list.begin(), list.end());
  }());
  return [ops](const std::string& op) { return ops->count(op) != 0; };
}

CompiledNpu compile_for_npu(const Graph& graph, const npu::HwConfig& hw,
                            const npu_backend::NpuCompileOptions& options,
                            const tuner::ScheduleRequest& schedule, const std::string& model) {
  const auto t0 = std::chrono::steady_clock::now();
  CompiledNpu c;
  // The form the backend takes (run_model compiles the same one when nothing was compiled first).
  const std::unique_ptr<Graph> form = compiled_form(graph);
  tuner::ScheduledModule scheduled =
      tuner::compile_scheduled(form ? *form : graph, hw, options, schedule);
  c.module = std::move(scheduled.module);
  c.tuned = std::move(scheduled.tuned);
  c.schedule_seconds = scheduled.schedule_seconds;
  c.seconds = seconds_since(t0);
  const uint64_t need = c.module.program.gm_bytes;
  if (hw.dram.capacity_bytes > 0 && need > static_cast<uint64_t>(hw.dram.capacity_bytes))
    fail(
        "{} needs {} bytes of GM (its inputs, outputs, weights and intermediate values as the "
        "compiler placed them), more than memory.dram.capacity_bytes = {} of the hardware config "
        "{}",
        model, need, hw.dram.capacity_bytes,
        hw.source_file.empty() ? std::string("built in code") : "'" + hw.source_file + "'");
  return c;
}

namespace {

/// The NPU stores a float graph input in fp16 or fp32 (npu_backend::float_storage_plan; a
/// float64 input in fp32, the NPU's widest float): a finite element beyond that dtype's range
/// would become an infinity in GM, so such an input is refused (tessel::Unsupported naming the
/// input, the element and the range) rather than computed into a silent inf.
void check_representable(const npu_backend::GmBinding& in, const Tensor& t) {
  if (!dtype_is_float(in.storage) || !dtype_is_float(t.dtype())) return;
  const bool f16 = in.storage == DType::f16;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double x = t.get_as_double(i);
    if (!std::isfinite(x)) continue;
    const float f = static_cast<float>(x);
    if (std::isinf(f16 ? round_to_f16(f) : f))
      throw Unsupported(fmt::format(
          "graph input '{}' ({}) holds {:.6g} at element {}, beyond the range of {} (largest "
          "finite {}), in which the NPU stores it",
          in.value, dtype_to_string(t.dtype()), x, i, f16 ? "fp16" : "fp32",
          f16 ? "65504" : "3.40282e+38"));
  }
}

/// compiled_form's transforms on `g` in place (`control`: it has control flow). An If left with
/// a run-time condition has both branches guarded (guard_branches), each branch put in this form
/// first as a graph of its own.
void to_compiled_form(Graph& g, bool control) {
  // Inlined control flow may hold the others; the losses expand into nodes split_outputs sees.
  if (control) {
    graph_passes::fold_control(g);
    graph_passes::guard_branches(g, [](Graph& branch) {
      bool sub = false;
      for (const auto& n : branch.nodes()) sub |= !node_subgraphs(*n).empty();
      to_compiled_form(branch, sub);
    });
  }
  graph_passes::expand_recurrent(g);
  graph_passes::expand_losses(g);
  graph_passes::expand_mvn(g);  // MeanVarianceNormalization as ReduceMean/Sub/Mul/Sqrt/Div
  graph_passes::split_outputs(g);
  graph_passes::conv_as_2d(g);        // 1-D convolution and pooling as 2-D over a height-1 image
  graph_passes::convt_as_conv(g);     // ConvTranspose as one stride-1 Conv per output phase
  graph_passes::pool_3d_as_2d(g);     // 3-D pooling as two 2-D pools over views
  graph_passes::conv_3d_as_2d(g);     // 3-D convolution as a 2-D one, depth taps as channels
  graph_passes::resize_as_matmul(g);  // Resize other than pixel repetition as MatMuls
}

}  // namespace

std::unique_ptr<Graph> compiled_form(const Graph& model) {
  bool control = false;
  for (const auto& n : model.nodes()) control |= !node_subgraphs(*n).empty();
  const bool recurrent = graph_passes::needs_expand_recurrent(model);
  const bool losses = graph_passes::needs_expand_losses(model);
  if (!control && !recurrent && !losses && !graph_passes::needs_expand_mvn(model) &&
      !graph_passes::needs_split_outputs(model) && !graph_passes::needs_conv_as_2d(model) &&
      !graph_passes::needs_resize_as_matmul(model) && !graph_passes::needs_pool_3d_as_2d(model) &&
      !graph_passes::needs_conv_3d_as_2d(model) && !graph_passes::needs_convt_as_conv(model))
    return nullptr;
  std::unique_ptr<Graph> g = clone_graph(model);
  to_compiled_form(*g, control);
  return g;
}

RunOutput run_model(const Graph& model, Target target, const npu::HwConfig* hw,
                    const std::map<std::string, Tensor>& inputs, const RunOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  RunOutput out;
  if (target == Target::ref) {
    out.outputs = ops::run_reference(model, inputs);
    out.seconds = seconds_since(t0);
    return out;
  }
  // The compiled targets take straight-line graphs of single-output nodes in the ops they have.
  std::unique_ptr<Graph> inlined = compiled_form(model);
  const Graph& graph = inlined ? *inlined : model;
  if (target == Target::cpu) {
    // Compile (TE -> loop IR -> LLVM IR -> JIT), then one profiled run: per-kernel wall times.
    // With options.cpu_threads the schedules are chosen for that many threads and the pool runs
    // them with as many (its previous count restored on every way out).
    struct PoolThreads {
      int previous = 0;
      explicit PoolThreads(int n) : previous(n > 0 ? tessel_cpu_set_threads(n) : 0) {}
      ~PoolThreads() {
        if (previous > 0) tessel_cpu_set_threads(previous);
      }
    } pool(options.cpu_threads);
    cpu_backend::CpuCompileOptions copts;
    if (options.cpu_threads > 0) copts.target.threads = options.cpu_threads;
    const auto tc = std::chrono::steady_clock::now();
    cpu_backend::CpuJit jit(cpu_backend::compile_cpu(graph, copts));
    CpuRun run;
    run.compile_seconds = seconds_since(tc);
    run.kernels_compiled = jit.kernels_compiled();
    run.kernels_cached = jit.kernels_cached();
    // A warm-up call first: the first call pays page faults of the arena and scratch buffers
    // and wakes the pool's threads; the profiled call then measures the steady state.
    jit.run(inputs, false);
    auto result = jit.run(inputs, true);
    const auto timed = jit.program().timed_kernels();
    for (size_t i = 0; i < timed.size(); ++i)
      run.kernels.push_back({timed[i]->node, timed[i]->op_type, timed[i]->kind, timed[i]->fused,
                             result.kernel_seconds[i], timed[i]->flops});
    run.run_seconds = result.seconds;
    run.threads = tessel_cpu_get_threads();  // the pool's count the runs had
    run.arena_bytes = jit.program().arena_bytes;
    out.outputs = std::move(result.outputs);
    out.cpu = std::move(run);
    out.seconds = seconds_since(t0);
    return out;
  }
  if (target == Target::gpu || target == Target::gpu_emu) {
    // Compile (TE -> loop IR -> NVPTX IR), load (PTX + driver JIT, or the host JIT), one warm-up
    // run, then one profiled run: per-launch times.
    require_target_available(target);
    const auto tc = std::chrono::steady_clock::now();
    gpu_backend::GpuProgram prog = gpu_backend::compile_gpu(graph);
    GpuRun run;
    run.compile_seconds = seconds_since(tc);
    gpu_backend::GpuExecutable exe(std::move(prog), target == Target::gpu
                                                        ? gpu_backend::GpuDevice::cuda
                                                        : gpu_backend::GpuDevice::emulator);
    run.load_seconds = exe.load_seconds();
    run.device = exe.device_description();
    const std::optional<passes::GpuRoofline> roofline = exe.roofline();
    if (const auto& peak = roofline) {
      run.peak_fp16_tensor_flops = peak->fp16_tensor_flops;
      run.peak_fp32_flops = peak->fp32_flops;
      run.dram_bytes_per_second = peak->dram_bytes_per_second;
    }
    exe.run(inputs, false);
    auto result = exe.run(inputs, true);
    const auto& p = exe.program();
    size_t li = 0;
    for (const auto& k : p.kernels) {
      const auto& info = p.plan.kernels[k.info_index];
      for (size_t i = 0; i < k.launches.size(); ++i, ++li) {
        const auto& l = k.launches[i];
        GpuRun::Launch rl{info.node,
                          info.op_type,
                          info.kind,
                          l.entry,
                          l.what,
                          l.shape.grid,
                          l.shape.block,
                          l.shape.shared_bytes,
                          result.launch_seconds[li],
                          i == 0 ? info.flops : 0.0,
                          l.bytes,
                          0.0};
        if (roofline) {
          rl.roofline_seconds = roofline->launch_seconds(rl.flops, static_cast<double>(rl.bytes),
                                                         info.kind == "gemm-mma");
          run.roofline_seconds += rl.roofline_seconds;
        }
        run.launches.push_back(std::move(rl));
      }
    }
    run.kernels = p.kernels.size();
    run.fp16 = p.uses_fp16();
    run.run_seconds = result.seconds;
    out.outputs = std::move(result.outputs);
    out.gpu = std::move(run);
    out.seconds = seconds_since(t0);
    return out;
  }
  TESSEL_CHECK(hw != nullptr, "npu run without a hardware config");
  for (const Value* v : graph.inputs) {
    auto it = inputs.find(v->name);
    if (it == inputs.end()) fail("no data for graph input '{}'", v->name);
    if (it->second.shape() != v->shape)
      fail("input '{}' has shape {}, the model was bound to {}", v->name,
           shape_to_string(it->second.shape()), shape_to_string(v->shape));
  }
  NpuRun run;
  CompiledNpu c = options.compiled ? std::move(*options.compiled)
                                   : compile_for_npu(graph, *hw, options.compile, options.schedule,
                                                     "model '" + graph.name + "'");
  run.module = std::move(c.module);
  run.tuned = std::move(c.tuned);
  run.schedule_seconds = c.schedule_seconds;
  run.compile_seconds = c.seconds;
  sim::SimOptions so;
  so.functional = !options.timing_only;
  so.trace_path = options.trace_path;
  so.dram_trace_path = options.dram_trace_path;
  sim::Simulator simulator(*hw, so);
  simulator.load(run.module.program);
  std::vector<uint8_t> bytes;
  for (const auto& in : run.module.inputs) {
    const Tensor& t = inputs.at(in.value);
    check_representable(in, t);
    bytes.resize(static_cast<size_t>(t.numel()) * dtype_size(in.storage));
    npu_backend::pack_gm_elements(t, in.storage, bytes.data());
    simulator.write_gm(in.address, bytes.data(), bytes.size());
  }
  run.sim = simulator.run();
  if (!options.timing_only) {
    std::vector<npu_backend::GmBinding> reads = run.module.outputs;
    if (options.read_all_values)
      reads.insert(reads.end(), run.module.values.begin(), run.module.values.end());
    for (const auto& o : reads) {
      bytes.resize(static_cast<size_t>(shape_numel(o.shape)) * dtype_size(o.storage));
      simulator.read_gm(o.address, bytes.data(), bytes.size());
      out.outputs[o.value] = npu_backend::unpack_gm_value(o, bytes.data());
    }
  }
  out.npu = std::move(run);
  out.seconds = seconds_since(t0);
  return out;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir))
    fail("cannot write '{}': directory '{}' does not exist", path, dir.string());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail("cannot write '{}': {}", tmp, std::strerror(errno));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) {
      std::remove(tmp.c_str());
      fail("cannot write '{}': {}", tmp, std::strerror(errno));
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail("cannot write '{}': {}", path, ec.message());
  }
}

}  // namespace tessel::driver
