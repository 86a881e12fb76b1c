// The CLI's commands (see commands.h).
#include "compiler/driver/commands.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>

#include "compiler/backend/cpu/aot.h"
#include "compiler/backend/cpu/compile.h"
#include "compiler/backend/gpu/compile.h"
#include "compiler/driver/compare.h"
#include "compiler/driver/experiment.h"
#include "compiler/driver/hw_json.h"
#include "compiler/driver/report.h"
#include "compiler/driver/runner.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/loop/loop.h"
#include "compiler/support/error.h"
#include "compiler/tuner/tuner.h"
#include "isa/asm.h"
#include "isa/encoding.h"
#include "passes/graph/graph_passes.h"

namespace tessel::driver {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::filesystem::path> test_data_set_dirs(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> sets;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  return sets;
}

std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> shapes;
  for (const auto& s : specs) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("--input-shape '{}': expected NAME=D0,D1,... (e.g. x=1,3,48,192)", s);
    const std::string name = s.substr(0, eq);
    if (shapes.count(name)) fail("--input-shape: input '{}' given twice", name);
    shapes[name] = frontend::parse_dims(s.substr(eq + 1), "--input-shape " + s);
  }
  return shapes;
}

std::map<std::string, std::vector<double>> parse_input_values(
    const std::vector<std::string>& specs) {
  std::map<std::string, std::vector<double>> values;
  for (const auto& s : specs) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      fail("--input-value '{}': expected NAME=V[,V...] (e.g. sr=16000)", s);
    const std::string name = s.substr(0, eq);
    if (values.count(name)) fail("--input-value: input '{}' given twice", name);
    std::vector<double>& v = values[name];
    size_t pos = eq + 1;
    while (pos <= s.size()) {
      const size_t comma = std::min(s.find(',', pos), s.size());
      const std::string item = s.substr(pos, comma - pos);
      char* end = nullptr;
      const double d = std::strtod(item.c_str(), &end);
      if (item.empty() || end != item.c_str() + item.size())
        fail("--input-value {}: '{}' is not a number", s, item);
      v.push_back(d);
      pos = comma + 1;
    }
  }
  return values;
}

graph_passes::PipelineOptions pipeline_options(const GraphPassArgs& args, std::ostream& diag) {
  // With no pass running, naming passes to skip or to print after would be silently ignored.
  if (args.none && !args.disable.empty())
    fail("--disable-pass {} has no effect with --no-graph-passes (no pass runs); give one of them",
         args.disable.front());
  if (args.none && !args.print_ir_after.empty())
    fail(
        "--print-ir-after {} has no effect with --no-graph-passes (no pass runs); give one of them",
        args.print_ir_after.front());
  if (args.none && args.print_ir_after_change)
    fail("--print-ir-after-change has no effect with --no-graph-passes (no pass runs)");
  graph_passes::PipelineOptions o;
  o.enabled = !args.none;
  o.disabled.insert(args.disable.begin(), args.disable.end());
  o.print_ir_after.insert(args.print_ir_after.begin(), args.print_ir_after.end());
  o.print_ir_after_change = args.print_ir_after_change;
  o.timing = args.timing;
  o.out = &diag;
  graph_passes::check_pass_names(graph_passes::default_pipeline(), o);
  return o;
}

npu::HwConfig load_hw(const std::string& path, const std::vector<std::string>& hw_set) {
  std::vector<npu::HwOverride> ov;
  for (const auto& s : hw_set) ov.push_back(npu::parse_hw_override(s));
  return npu::load_hw_config(path, ov);
}

namespace {

std::string dims_text(const Shape& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

std::string hw_line(const npu::HwConfig& hw) {
  return fmt::format("{} ({} core{}, {}x{}x{} cube, {:g} GHz, {})", hw.name, hw.cores,
                     hw.cores > 1 ? "s" : "", hw.core.cube.m, hw.core.cube.k, hw.core.cube.n,
                     hw.clock_ghz, fs::path(hw.source_file).filename().string());
}

/// Graph input names of an ONNX model in order (initializers excluded), without binding shapes.
std::vector<std::string> onnx_input_names(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("{}: cannot open model file", path);
  onnx::ModelProto m;
  if (!m.ParseFromIstream(&f)) fail("{}: not a valid ONNX model (protobuf parse failed)", path);
  std::set<std::string> inits;
  for (const auto& i : m.graph().initializer()) inits.insert(i.name());
  std::vector<std::string> names;
  for (const auto& i : m.graph().input())
    if (!inits.count(i.name())) names.push_back(i.name());
  return names;
}

std::vector<std::string> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && n.size() > prefix.size() + 3 &&
        n.substr(n.size() - 3) == ".pb") {
      const std::string num = n.substr(prefix.size(), n.size() - prefix.size() - 3);
      if (!num.empty() && std::all_of(num.begin(), num.end(), ::isdigit))
        found.emplace_back(std::stoi(num), e.path().string());
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < found.size(); ++i) {
    if (found[i].first != static_cast<int>(i))
      fail("{}: {}{}.pb is missing (files must be numbered from 0)", dir.string(), prefix, i);
    out.push_back(found[i].second);
  }
  return out;
}

/// Checks every NPU kernel on its own (kernel_checks, compare.h: where an error enters) and
/// shows beside it how far each value is from the whole model's reference (how error grows),
/// in graph order: the kernels outside their own bound and the largest ratios.
void per_node_report(Graph& graph, const std::map<std::string, Tensor>& inputs,
                     const RunOutput& npu_run, const npu::HwConfig& hw, std::ostream& out) {
  const auto saved = graph.outputs;
  for (const auto& n : graph.nodes())
    for (Value* v : n->outputs)
      if (v && npu_run.outputs.count(v->name) &&
          std::find(graph.outputs.begin(), graph.outputs.end(), v) == graph.outputs.end())
        graph.outputs.push_back(v);
  const auto ref = run_model(graph, Target::ref, nullptr, inputs).outputs;
  graph.outputs = saved;
  const auto kernels = kernel_checks(hw, graph, inputs, npu_run.outputs);
  std::vector<size_t> shown;
  for (size_t i = 0; i < kernels.size(); ++i)
    if (!kernels[i].check.pass) shown.push_back(i);
  std::vector<size_t> by_ratio(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) by_ratio[i] = i;
  std::sort(by_ratio.begin(), by_ratio.end(), [&](size_t a, size_t b) {
    return kernels[a].check.worst_ratio > kernels[b].check.worst_ratio;
  });
  for (size_t i : by_ratio) {
    if (shown.size() >= 15) break;
    if (kernels[i].check.pass) shown.push_back(i);
  }
  std::sort(shown.begin(), shown.end());
  const size_t failing = std::count_if(kernels.begin(), kernels.end(),
                                       [](const KernelCheck& k) { return !k.check.pass; });
  Table t({"node", "kernel", "value", "own error / bound", "max abs error", "max |expected|",
           "relative", "result"});
  for (size_t i : shown) {
    const auto& k = kernels[i];
    double err = INFINITY, scale = 0;
    if (ref.count(k.value)) {
      const auto c = compare_output(k.value, npu_run.outputs.at(k.value), ref.at(k.value), {});
      err = c.max_abs_error;
      scale = c.max_expected;
    }
    t.add({k.node, k.ops, k.value,
           std::isfinite(k.check.worst_ratio) ? fmt::format("{:.3f}", k.check.worst_ratio) : "inf",
           fmt::format("{:.3e}", err), fmt::format("{:.3e}", scale),
           fmt::format("{:.2e}", scale > 0 ? err / scale : err), k.check.pass ? "ok" : "FAIL"});
  }
  out << fmt::format(
      "  per-kernel check: {} of {} kernels outside their own bound (each run on the reference "
      "with the inputs the NPU read; the last three columns compare with the whole model's "
      "reference); the failing ones and the largest ratios:\n",
      failing, kernels.size());
  out << t.str();
}

void write_report(const std::string& path, const json& j) {
  if (path.empty()) return;
  write_file_atomically(path, j.dump(2) + "\n");
}

}  // namespace

// ---------------------------------------------------------------------------------------------

/// Fails unless `path`'s directory exists (checked before any work, so a bad output path never
/// costs a whole run).
void check_output_path(const std::string& path, const char* option) {
  if (path.empty()) return;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir))
    fail("{} '{}': directory '{}' does not exist", option, path, dir.string());
  if (fs::is_directory(p)) fail("{} '{}' is a directory", option, path);
}

/// Removes files written before a command failed (nothing half-written stays behind).
struct OutputGuard {
  std::vector<std::string> files;
  bool keep = false;
  ~OutputGuard() {
    if (keep) return;
    std::error_code ec;
    for (const auto& f : files) fs::remove(f, ec);
  }
};

namespace {

/// The report's "ops" table of a CPU or GPU run: the 12 slowest of `items` (by their `seconds`,
/// the first of equal ones first) as rows `row(item, total)` under `header`, then how many
/// `noun` more the JSON report has. `total` is the run's seconds the shares are of.
template <class T, class Row>
std::string slowest_table(const std::vector<T>& items, std::vector<std::string> header,
                          const char* noun, double total, Row&& row) {
  std::vector<const T*> order;
  for (const auto& k : items) order.push_back(&k);
  std::stable_sort(order.begin(), order.end(),
                   [](const T* a, const T* b) { return a->seconds > b->seconds; });
  Table t(std::move(header));
  const size_t shown = std::min<size_t>(order.size(), 12);
  for (size_t i = 0; i < shown; ++i) t.add(row(*order[i], total));
  std::string text = "\n" + t.str();
  if (order.size() > shown)
    text += fmt::format("  ... {} more {} (all of them in --report)\n", order.size() - shown, noun);
  return text;
}

/// "12.5%" of `total` seconds and "GFLOP/s" (empty without flops or time): the ops tables' columns.
std::string share_text(double seconds, double total) {
  return fmt::format("{:.1f}%", total > 0 ? 100 * seconds / total : 0.0);
}
std::string gflops_text(double flops, double seconds) {
  return flops > 0 && seconds > 0 ? fmt::format("{:.1f}", flops / seconds / 1e9) : std::string();
}

}  // namespace

/// The CPU run's summary and its kernels by wall time (report sections "summary" and "ops").
std::string cpu_run_text(const CpuRun& run, const std::vector<std::string>& sections) {
  auto has = [&](const char* s) {
    return std::find(sections.begin(), sections.end(), s) != sections.end();
  };
  std::string text;
  double total = 0, flops = 0;
  for (const auto& k : run.kernels) {
    total += k.seconds;
    flops += k.flops;
  }
  if (has("summary"))
    text += fmt::format(
        "  compiled   {} kernels in {:.2f} s (LLVM JIT; {} distinct: {} compiled, {} from the "
        "cache)\n  ran        {:.3f} ms wall ({:.3f} ms in "
        "kernels, {} thread{}, {:.1f} GFLOP/s in contractions)\n",
        run.kernels.size(), run.compile_seconds, run.kernels_compiled + run.kernels_cached,
        run.kernels_compiled, run.kernels_cached, run.run_seconds * 1e3, total * 1e3, run.threads,
        run.threads > 1 ? "s" : "", total > 0 ? flops / total / 1e9 : 0.0);
  if (has("ops") && !run.kernels.empty())
    text += slowest_table(
        run.kernels, {"op", "type", "kind", "ms", "share", "GFLOP/s"}, "kernels", total,
        [](const CpuRun::Kernel& k, double all) -> std::vector<std::string> {
          return {k.node,
                  k.fused.empty() ? k.op_type : fmt::format("{}+{}", k.op_type, k.fused.size()),
                  k.kind,
                  fmt::format("{:.3f}", k.seconds * 1e3),
                  share_text(k.seconds, all),
                  gflops_text(k.flops, k.seconds)};
        });
  return text;
}

/// JSON of a CPU run: compile/run seconds, threads, arena bytes, per-kernel wall times.
json cpu_run_json(const CpuRun& run) {
  json ks = json::array();
  for (const auto& k : run.kernels)
    ks.push_back({{"node", k.node},
                  {"op_type", k.op_type},
                  {"kind", k.kind},
                  {"fused", k.fused},
                  {"seconds", k.seconds},
                  {"flops", k.flops}});
  return {{"cpu",
           {{"compile_seconds", run.compile_seconds},
            {"kernels_compiled", run.kernels_compiled},
            {"kernels_cached", run.kernels_cached},
            {"run_seconds", run.run_seconds},
            {"threads", run.threads},
            {"arena_bytes", run.arena_bytes},
            {"kernels", ks}}}};
}

/// The GPU run's summary and its launches by time (report sections "summary" and "ops").
std::string gpu_run_text(const GpuRun& run, const std::vector<std::string>& sections) {
  auto has = [&](const char* s) {
    return std::find(sections.begin(), sections.end(), s) != sections.end();
  };
  std::string text;
  double total = 0, flops = 0;
  for (const auto& l : run.launches) {
    total += l.seconds;
    flops += l.flops;
  }
  if (has("summary"))
    text += fmt::format(
        "  compiled   {} kernels, {} launches in {:.2f} s (+ {:.2f} s to load on the {})\n"
        "  ran        {:.3f} ms ({:.3f} ms in launches, {:.1f} GFLOP/s in contractions{})\n",
        run.kernels, run.launches.size(), run.compile_seconds, run.load_seconds, run.device,
        run.run_seconds * 1e3, total * 1e3, total > 0 ? flops / total / 1e9 : 0.0,
        run.fp16 ? ", fp16 tensor cores" : "");
  if (has("summary") && run.roofline_seconds > 0)
    text += fmt::format(
        "  roofline   {:.3f} ms (sum over launches of max(flops / peak, bytes / DRAM bandwidth): "
        "{:.0f} TFLOP/s fp16 tensor, {:.1f} TFLOP/s fp32, {:.2f} TB/s), efficiency {:.1f}%\n",
        run.roofline_seconds * 1e3, run.peak_fp16_tensor_flops / 1e12, run.peak_fp32_flops / 1e12,
        run.dram_bytes_per_second / 1e12, total > 0 ? 100 * run.roofline_seconds / total : 0.0);
  if (has("ops") && !run.launches.empty())
    text += slowest_table(
        run.launches, {"op", "type", "kind", "grid x block", "ms", "share", "GFLOP/s"}, "launches",
        total, [](const GpuRun::Launch& l, double all) -> std::vector<std::string> {
          return {l.node,
                  l.op_type,
                  l.kind,
                  fmt::format("{} x {}", l.grid, l.block),
                  fmt::format("{:.3f}", l.seconds * 1e3),
                  share_text(l.seconds, all),
                  gflops_text(l.flops, l.seconds)};
        });
  return text;
}

/// JSON of a GPU run: device, compile/load/run seconds, every launch.
json gpu_run_json(const GpuRun& run) {
  json ls = json::array();
  for (const auto& l : run.launches)
    ls.push_back({{"node", l.node},
                  {"op_type", l.op_type},
                  {"kind", l.kind},
                  {"entry", l.entry},
                  {"schedule", l.what},
                  {"grid", l.grid},
                  {"block", l.block},
                  {"shared_bytes", l.shared_bytes},
                  {"seconds", l.seconds},
                  {"flops", l.flops},
                  {"bytes", l.bytes},
                  {"roofline_seconds", l.roofline_seconds}});
  return {{"gpu",
           {{"device", run.device},
            {"compile_seconds", run.compile_seconds},
            {"load_seconds", run.load_seconds},
            {"run_seconds", run.run_seconds},
            {"fp16_tensor_cores", run.fp16},
            {"roofline_seconds", run.roofline_seconds},
            {"peak_fp16_tensor_flops", run.peak_fp16_tensor_flops},
            {"peak_fp32_flops", run.peak_fp32_flops},
            {"dram_bytes_per_second", run.dram_bytes_per_second},
            {"kernels", run.kernels},
            {"launches", ls}}}};
}

/// The tolerance output `name` of `run` (on `target`) is checked with against `want`: the NPU's
/// derived bound (`derived` holds npu_tolerances), the GPU's (gpu_tolerance), or the fp32 one:
/// `derived`'s entry when given (cmd_check passes fp32_tolerances for ref and cpu), else the
/// fixed reference_tolerance.
Tolerance target_tolerance(Target target, const std::map<std::string, Tolerance>& derived,
                           const RunOutput& run, const std::string& name, const Tensor& want) {
  if (target == Target::npu) return derived.at(name);
  if (run.gpu) return gpu_tolerance(run.gpu->fp16, want);
  const auto it = derived.find(name);
  return it != derived.end() ? it->second : reference_tolerance();
}

std::string target_text(Target t) {
  switch (t) {
    case Target::cpu:
      return "host CPU through LLVM";
    case Target::gpu:
      return "CUDA GPU through LLVM NVPTX";
    case Target::gpu_emu:
      return "GPU kernels on the host emulator";
    default:
      return "reference interpreter";
  }
}

int cmd_run(const RunArgs& args, std::ostream& out, std::ostream& err) {
  try {
    check_output_path(args.report_path, "--report");
    check_output_path(args.trace_path, "--trace");
    check_output_path(args.dram_trace_path, "--dram-trace");
    pipeline_options(args.passes, err);  // validates the pass names first
    const Experiment ex = load_experiment(args.experiment);
    if (ex.dse)
      fail("{} has a sweep: (a design-space exploration): run it with tessel dse {} --out DIR",
           ex.source, args.experiment);
    return run_experiment(ex, args, out, err, "run");
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
}

namespace {

/// SIGINT during a long command (RunInterrupt): the first one lets the work in progress finish
/// and then stops; the handler resets itself, so a second SIGINT ends the process at once.
volatile std::sig_atomic_t g_interrupted = 0;
const char* g_interrupt_message = "";

extern "C" void on_sigint(int) {
  g_interrupted = 1;
  const ssize_t ignored = ::write(2, g_interrupt_message, std::strlen(g_interrupt_message));
  (void)ignored;
}

}  // namespace

RunInterrupt::RunInterrupt(bool enable, const char* message) : enabled_(enable) {
  if (!enabled_) return;
  g_interrupted = 0;
  g_interrupt_message = message;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, &previous_);
}

RunInterrupt::~RunInterrupt() {
  if (enabled_) sigaction(SIGINT, &previous_, nullptr);
}

bool RunInterrupt::requested() const { return enabled_ && g_interrupted != 0; }

namespace {

/// How an experiment's messages say to bind an unbound model input: its `inputs` key.
std::string experiment_bind_hint(const std::string& name, const std::string& dims) {
  std::string list = dims;
  for (size_t p = 0; (p = list.find(',', p)) != std::string::npos; p += 2) list.replace(p, 1, ", ");
  return fmt::format("the experiment key inputs.{}, e.g. inputs: {{{}: {{shape: [{}]}}}}", name,
                     name, list);
}

}  // namespace

npu_backend::NpuCompileOptions run_compile_options(const RunSpec& r, const std::string& source) {
  npu_backend::NpuCompileOptions c;
  c.double_buffer = r.double_buffer;
  c.multicore = r.multicore;
  c.op_knobs = r.op_knobs;
  for (const auto& [task, knobs] : r.task_knobs)
    c.task_knobs[task] = {knobs, npu_backend::KnobSource::schedule,
                          fmt::format("{}: schedule.tasks.{}", source, task)};
  return c;
}

int run_experiment(const Experiment& ex, const RunArgs& args, std::ostream& out, std::ostream& err,
                   const std::string& command) {
  OutputGuard guard;
  try {
    check_output_path(args.report_path, "--report");
    check_output_path(args.trace_path, "--trace");
    check_output_path(args.dram_trace_path, "--dram-trace");
    if (!args.report_path.empty() && !args.trace_path.empty() &&
        fs::weakly_canonical(args.report_path) == fs::weakly_canonical(args.trace_path))
      fail("--report '{}' and --trace '{}' are the same file: the report would overwrite the trace",
           args.report_path, args.trace_path);
    {
      // --dram-trace must not overwrite the other outputs.
      const std::pair<const char*, const std::string*> others[] = {{"--report", &args.report_path},
                                                                   {"--trace", &args.trace_path}};
      for (const auto& [flag, path] : others)
        if (!args.dram_trace_path.empty() && !path->empty() &&
            fs::weakly_canonical(*path) == fs::weakly_canonical(args.dram_trace_path))
          fail("{} '{}' and --dram-trace '{}' are the same file", flag, *path,
               args.dram_trace_path);
    }
    if (!args.dram_trace_path.empty() &&
        std::none_of(ex.runs.begin(), ex.runs.end(),
                     [](const RunSpec& r) { return r.target == Target::npu; }))
      fail(
          "--dram-trace '{}': no run of {} targets the NPU (the DRAM trace lists the NPU's DRAM "
          "requests; run '{}' has target {}, which has no simulated DRAM)",
          args.dram_trace_path, ex.source, ex.runs.front().name,
          target_name(ex.runs.front().target));
    const graph_passes::PipelineOptions cli_passes = pipeline_options(args.passes, err);
    if (!args.trace_path.empty() &&
        std::none_of(ex.runs.begin(), ex.runs.end(),
                     [](const RunSpec& r) { return r.target == Target::npu; }))
      fail(
          "--trace '{}': no run of {} targets the NPU (the trace is a timeline of the NPU's "
          "pipes; run '{}' has target {})",
          args.trace_path, ex.source, ex.runs.front().name, target_name(ex.runs.front().target));
    if (!args.tuning_log.empty() &&
        std::none_of(ex.runs.begin(), ex.runs.end(),
                     [](const RunSpec& r) { return r.target == Target::npu; }))
      fail("--tuning-log applies to target npu, and no run of {} has it", ex.source);
    // Prepare every run (inputs, model, hardware config) before running any, so a mistake in a
    // later run is reported before minutes of simulation.
    struct Prepared {
      std::map<std::string, Shape> shapes;
      std::map<std::string, Tensor> inputs;
      std::unique_ptr<Graph> graph;
      npu::HwConfig hw;
    };
    std::vector<Prepared> prepared(ex.runs.size());
    for (size_t ri = 0; ri < ex.runs.size(); ++ri) {
      const RunSpec& r = ex.runs[ri];
      Prepared& p = prepared[ri];
      const std::string where =
          ex.runs.size() == 1 ? ex.source : fmt::format("{}: run '{}'", ex.source, r.name);
      std::map<std::string, std::vector<double>> values;  // inputs bound at compile time
      // Graph-pass settings of the command line and of the file that would silently cancel.
      if (!cli_passes.enabled && !r.disabled_passes.empty())
        fail(
            "{}: graph_passes: {{disable: [{}, ...]}} has no effect with --no-graph-passes (no "
            "pass runs); drop one of them",
            where, r.disabled_passes.front());
      if (!r.graph_passes && !args.passes.disable.empty())
        fail(
            "{}: --disable-pass {} has no effect: the experiment sets graph_passes: none (no pass "
            "runs); drop one of them",
            where, args.passes.disable.front());
      for (const auto& [name, spec] : r.inputs) {
        if (spec.has_value) {
          values[name] = spec.value;
          if (!spec.shape.empty()) p.shapes[name] = spec.shape;
          continue;
        }
        Tensor t = make_input(spec, fmt::format("{}: inputs.{}", where, name));
        p.shapes[name] = t.shape();
        p.inputs[name] = std::move(t);
      }
      graph_passes::PipelineOptions passes = cli_passes;
      passes.enabled = cli_passes.enabled && r.graph_passes;
      passes.disabled.insert(r.disabled_passes.begin(), r.disabled_passes.end());
      passes.available = target_ops(r.target);
      try {
        // `tessel sim` binds its shapes with --input-shape (checked before it gets here).
        p.graph = load_model(r.model, p.shapes, passes, values,
                             command == "sim" ? nullptr : experiment_bind_hint);
      } catch (const Error& e) {
        fail("{}: {}", where, e.what());
      }
      for (const Value* v : p.graph->inputs)
        if (!p.inputs.count(v->name))
          fail(
              "{}: no entry under 'inputs' for model input '{}' (give its shape, e.g. "
              "{}: {{shape: {}}})",
              where, v->name, v->name, shape_to_string(v->shape));
      try {
        require_target_available(r.target);
      } catch (const Error& e) {
        fail("{}: {}", where, e.what());
      }
      if (r.target == Target::npu) {
        try {
          p.hw = npu::load_hw_config(r.hw, r.hw_set);
        } catch (const Error& e) {
          fail("{}: {}{}", where, e.what(),
               r.hw_set.empty() ? "" : " (hw_set is from the experiment file)");
        }
      }
    }
    // A multi-run experiment stopped by SIGINT keeps the runs that finished: the report is
    // rewritten after every run ("complete": false until the last one).
    RunInterrupt interrupt(
        ex.runs.size() > 1,
        "\ntessel: interrupted: finishing the run in progress, then writing what "
        "finished (press Ctrl-C again to stop at once)\n");
    json report = {{"tool", "tessel"},      {"command", command}, {"experiment", ex.source},
                   {"name", ex.name},       {"complete", false},  {"runs_planned", ex.runs.size()},
                   {"runs", json::array()}, {"pass", true}};
    bool all_pass = true;
    size_t finished = 0;
    for (size_t ri = 0; ri < ex.runs.size(); ++ri) {
      if (interrupt.requested()) break;
      const RunSpec& r = ex.runs[ri];
      Prepared& p = prepared[ri];
      const npu::HwConfig& hw = p.hw;
      RunOptions opts;
      opts.timing_only = r.timing_only;
      opts.compile = run_compile_options(r, ex.source);
      opts.cpu_threads = r.cpu_threads;
      opts.schedule.tuning_log = args.tuning_log;
      if (r.tune) {
        if (r.tune->budget == 0) {
          if (!args.tuning_log.empty())
            fail("{}: --tuning-log and tune: {{budget: 0, log}} both name a log to apply",
                 ex.source);
          opts.schedule.tuning_log = r.tune->log_path;
        } else {
          opts.schedule.tune = *r.tune;
          opts.schedule.tune->progress = tune_progress(err);
        }
      }
      // A long compile shows where it is (the tuner has its own line).
      if (!opts.schedule.tune) opts.schedule.progress = compile_progress(err);
      if (!args.trace_path.empty() && r.target == Target::npu) {
        fs::path tp(args.trace_path);
        opts.trace_path = ex.runs.size() == 1
                              ? args.trace_path
                              : (tp.parent_path() / (tp.stem().string() + "-" + std::to_string(ri) +
                                                     tp.extension().string()))
                                    .string();
        guard.files.push_back(opts.trace_path);
      }
      if (!args.dram_trace_path.empty() && r.target == Target::npu) {
        fs::path tp(args.dram_trace_path);
        opts.dram_trace_path =
            ex.runs.size() == 1
                ? args.dram_trace_path
                : (tp.parent_path() /
                   (tp.stem().string() + "-" + std::to_string(ri) + tp.extension().string()))
                      .string();
        guard.files.push_back(opts.dram_trace_path);
      }
      // Compile before printing anything about the run: an op that does not compile or a model
      // that does not fit the GM is an error with nothing of this run on stdout.
      if (r.target == Target::npu) {
        try {
          opts.compiled = std::make_shared<CompiledNpu>(
              compile_for_npu(*p.graph, hw, opts.compile, opts.schedule, "model " + r.model));
        } catch (const Error& e) {
          fail("{}{}", ex.runs.size() == 1 ? "" : fmt::format("run '{}': ", r.name), e.what());
        }
      }
      std::string in_text;
      for (const auto& [n, sh] : p.shapes)
        in_text += fmt::format("{}{}: {}", in_text.empty() ? "" : ", ", n, dims_text(sh));
      out << fmt::format("run {}\n  model      {} ({})\n", r.name,
                         fs::path(r.model).filename().string(), in_text);
      out << fmt::format(
          "  target     {}{}\n", target_name(r.target),
          r.target == Target::npu ? " on " + hw_line(hw) : " (" + target_text(r.target) + ")");
      RunOutput result =
          run_model(*p.graph, r.target, r.target == Target::npu ? &hw : nullptr, p.inputs, opts);
      json rj = {{"name", r.name},
                 {"model", r.model},
                 {"target", target_name(r.target)},
                 {"seconds", result.seconds}};
      for (const auto& [n, sh] : p.shapes) rj["inputs"][n] = sh;
      // The graph as compiled: its node count after the graph passes (the imported count when
      // graph_passes is none) and which passes were skipped (docs/graph_passes.md).
      rj["graph_nodes"] = p.graph->nodes().size();
      std::set<std::string> skipped = cli_passes.disabled;
      skipped.insert(r.disabled_passes.begin(), r.disabled_passes.end());
      rj["graph_passes"] = {{"enabled", cli_passes.enabled && r.graph_passes},
                            {"disabled", skipped}};
      if (result.npu) {
        rj["hw"] = hw_report_json(hw);
        // The overrides as the config holds them (typed as in the YAML: "cores": 2, not "2").
        json hw_set = json::object();
        for (const auto& o : r.hw_set) hw_set[o.key] = hw_config_value(rj["hw"], o.key);
        rj["hw_set"] = hw_set;
        rj["schedule"] = {{"double_buffer", r.double_buffer},
                          {"multicore", r.multicore},
                          {"ops", r.op_knobs},
                          {"tasks", r.task_knobs}};
        if (!opts.schedule.tuning_log.empty()) rj["tuning_log"] = opts.schedule.tuning_log;
        if (result.npu->tuned) {
          rj["tuning"] = tuning_json(*result.npu->tuned, r.tune ? &*r.tune : nullptr);
          out << tuning_text(*result.npu->tuned);
        }
        json nj = npu_run_json(*result.npu, hw);
        rj.update(nj);
        out << npu_run_text(*result.npu, hw, r.report);
        if (!opts.trace_path.empty()) out << fmt::format("  trace      {}\n", opts.trace_path);
        if (!opts.dram_trace_path.empty())
          out << fmt::format("  dram trace {}\n", opts.dram_trace_path);
      } else if (result.cpu) {
        rj.update(cpu_run_json(*result.cpu));
        out << cpu_run_text(*result.cpu, r.report);
      } else if (result.gpu) {
        rj.update(gpu_run_json(*result.gpu));
        out << gpu_run_text(*result.gpu, r.report);
      } else {
        out << fmt::format("  ran        in {:.3f} s\n", result.seconds);
      }
      if (r.check) {
        // The reference run, and on the NPU the runs that derive its tolerance (compare.h).
        const auto t_ref = std::chrono::steady_clock::now();
        std::map<std::string, Tensor> ref;
        std::map<std::string, Tolerance> tolerances;
        if (r.target == Target::npu)
          tolerances = npu_tolerances(hw, *p.graph, p.inputs, &ref);
        else
          ref = run_model(*p.graph, Target::ref, nullptr, p.inputs).outputs;
        const double ref_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t_ref).count();
        std::vector<OutputCheck> checks;
        for (const Value* v : p.graph->outputs) {
          const Tensor& want = ref.at(v->name);
          const Tolerance tol = target_tolerance(r.target, tolerances, result, v->name, want);
          checks.push_back(compare_output(v->name, result.outputs.at(v->name), want, tol));
          all_pass &= checks.back().pass;
        }
        rj["outputs"] = checks_json(checks);
        rj["reference_seconds"] = ref_seconds;
        if (std::find(r.report.begin(), r.report.end(), "check") != r.report.end())
          out << fmt::format("\n  check against the reference interpreter ({:.2f} s):\n",
                             ref_seconds)
              << checks_text(checks) << tolerance_lines(checks);
      } else {
        json outs = json::array();
        for (const auto& [n, t] : result.outputs)
          outs.push_back({{"name", n}, {"shape", t.shape()}});
        rj["outputs"] = outs;
      }
      report["runs"].push_back(rj);
      report["pass"] = all_pass;
      ++finished;
      report["complete"] = finished == ex.runs.size();
      // After every run of a multi-run experiment (what finished survives a second SIGINT or a
      // kill); a single run writes once, below.
      if (ex.runs.size() > 1 && finished < ex.runs.size()) {
        if (finished == 1) guard.files.push_back(args.report_path);
        write_report(args.report_path, report);
      }
      out << "\n";
    }
    write_report(args.report_path, report);
    if (finished < ex.runs.size()) {
      guard.keep = true;
      out << fmt::format(
          "interrupted: {} of {} runs finished{}\n", finished, ex.runs.size(),
          args.report_path.empty()
              ? std::string()
              : fmt::format("; report written to {} (\"complete\": false)", args.report_path));
      err << fmt::format("error: interrupted (SIGINT) after {} of {} runs\n", finished,
                         ex.runs.size());
      return 130;
    }
    if (!args.report_path.empty()) out << "report written to " << args.report_path << "\n";
    guard.keep = true;
    return all_pass ? 0 : 1;
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    err << "error: out of host memory (a tensor or the simulated DRAM is too large for this "
           "machine)\n";
    return 2;
  }
}

// ---------------------------------------------------------------------------------------------

int cmd_check(const CheckArgs& args, std::ostream& out, std::ostream& err) {
  try {
    const Target target = parse_target(args.target, "--target");
    check_output_path(args.report_path, "--report");
    check_output_path(args.dram_trace_path, "--dram-trace");
    require_target_available(target);
    npu::HwConfig hw;
    if (target == Target::npu) {
      if (args.hw.empty()) fail("--target npu needs --hw FILE (e.g. hw_configs/npu_4core.yaml)");
      hw = load_hw(args.hw, args.hw_set);
    } else if (!args.hw.empty() || !args.hw_set.empty() || args.per_node ||
               !args.tuning_log.empty() || !args.dram_trace_path.empty()) {
      fail("{} only applies to --target npu", args.per_node                   ? "--per-node"
                                              : !args.tuning_log.empty()      ? "--tuning-log"
                                              : !args.dram_trace_path.empty() ? "--dram-trace"
                                              : !args.hw.empty()              ? "--hw"
                                                                              : "--hw-set");
    }
    OutputGuard guard;  // DRAM traces of a check that ends in an error are removed
    if (args.case_dirs.empty()) fail("no case directory given");
    graph_passes::PipelineOptions passes = pipeline_options(args.passes, err);
    passes.available = target_ops(target);
    json report = {{"tool", "tessel"}, {"command", "check"}, {"target", target_name(target)}};
    if (target == Target::npu) report["hw"] = hw_report_json(hw);
    json cases = json::array();
    bool all_pass = true;
    int errors = 0;
    for (size_t ci = 0; ci < args.case_dirs.size(); ++ci) {
      const std::string& dir_s = args.case_dirs[ci];
      const fs::path dir(dir_s);
      json cj = {{"dir", dir_s}};
      try {
        if (!fs::is_directory(dir)) fail("{}: not a directory", dir_s);
        const fs::path model = dir / "model.onnx";
        if (!fs::exists(model)) fail("{}: no model.onnx in the case directory", dir_s);
        const std::vector<fs::path> sets = test_data_set_dirs(dir);
        if (sets.empty()) fail("{}: no test_data_set_N directory", dir_s);
        const auto names = onnx_input_names(model.string());
        out << fmt::format("case {} ({} on {})\n", dir_s, target_name(target),
                           target == Target::npu   ? hw.name
                           : target == Target::cpu ? std::string("host CPU")
                                                   : target_text(target));
        json sj = json::array();
        for (const auto& set : sets) {
          const auto in_files = sorted_files(set, "input_");
          const auto out_files = sorted_files(set, "output_");
          if (out_files.empty())
            fail("{}: no expected outputs (output_0.pb, ...) to compare against", set.string());
          if (in_files.size() != names.size())
            fail("{}: {} input files for {} model inputs", set.string(), in_files.size(),
                 names.size());
          std::map<std::string, Tensor> inputs;
          std::map<std::string, Shape> shapes;
          for (size_t i = 0; i < names.size(); ++i) {
            Tensor t = frontend::load_tensor_pb(in_files[i]);
            shapes[names[i]] = t.shape();
            inputs[names[i]] = std::move(t);
          }
          auto graph = load_model(model.string(), shapes, passes);
          if (out_files.size() != graph->outputs.size())
            fail("{}: {} expected outputs for {} model outputs", set.string(), out_files.size(),
                 graph->outputs.size());
          // The NPU: the graph it compiles (as run_model compiles it; --per-node then checks the
          // kernels inside control flow and recurrent layers). An fp16 NPU: values that reach
          // 2^15 on this data set's inputs are rescaled around the cube or kept in fp32
          // (graph_passes::fp16_range); the tolerance below is derived on that graph.
          if (target == Target::npu)
            if (auto form = compiled_form(*graph)) graph = std::move(form);
          if (target == Target::npu && args.fp16_range &&
              hw.core.cube.input_dtype == isa::DType::f16) {
            for (const std::string& line :
                 graph_passes::fp16_range(*graph, graph_passes::calibrated_max_abs(*graph, inputs)))
              out << "  fp16 range (calibrated on " << set.filename().string() << "): " << line
                  << "\n";
          }
          RunOptions ropts;
          ropts.read_all_values = args.per_node && target == Target::npu;
          ropts.schedule.tuning_log = args.tuning_log;
          if (!args.dram_trace_path.empty()) {
            const fs::path tp(args.dram_trace_path);
            const size_t si = static_cast<size_t>(&set - sets.data());
            ropts.dram_trace_path =
                args.case_dirs.size() == 1 && sets.size() == 1
                    ? args.dram_trace_path
                    : (tp.parent_path() / fmt::format("{}-{}-{}{}", tp.stem().string(), ci, si,
                                                      tp.extension().string()))
                          .string();
            guard.files.push_back(ropts.dram_trace_path);
          }
          RunOutput result =
              run_model(*graph, target, target == Target::npu ? &hw : nullptr, inputs, ropts);
          if (ropts.read_all_values) per_node_report(*graph, inputs, result, hw, out);
          std::map<std::string, Tolerance> tolerances;
          // Compiled NPU: its derived fp16 bound; an fp32 target (ref, cpu): the fixed fp32
          // tolerance, widened where the model amplifies fp32 rounding (fp32_tolerances).
          if (target == Target::npu)
            tolerances = npu_tolerances(hw, *graph, inputs);
          else if (target == Target::ref || target == Target::cpu)
            tolerances = fp32_tolerances(*graph, inputs);
          std::vector<OutputCheck> checks;
          bool pass = true;
          for (size_t k = 0; k < out_files.size(); ++k) {
            Tensor want = frontend::load_tensor_pb(out_files[k]);
            const std::string& name = graph->outputs[k]->name;
            const Tolerance tol = target_tolerance(target, tolerances, result, name, want);
            checks.push_back(compare_output(name, result.outputs.at(name), want, tol));
            pass &= checks.back().pass;
          }
          all_pass &= pass;
          out << fmt::format("  {}\n", set.filename().string()) << checks_text(checks);
          if (!ropts.dram_trace_path.empty())
            out << fmt::format("  dram trace {}\n", ropts.dram_trace_path);
          if (target == Target::npu) out << tolerance_lines(checks);
          json setj = {{"data_set", set.filename().string()},
                       {"outputs", checks_json(checks)},
                       {"status", pass ? "pass" : "fail"},
                       {"seconds", result.seconds}};
          if (result.npu) setj.update(npu_run_json(*result.npu, hw));
          if (result.cpu) setj.update(cpu_run_json(*result.cpu));
          if (result.gpu) setj.update(gpu_run_json(*result.gpu));
          sj.push_back(setj);
        }
        cj["data_sets"] = sj;
        bool case_pass = true;
        for (const auto& s : sj) case_pass &= s["status"] == "pass";
        cj["status"] = case_pass ? "pass" : "fail";
      } catch (const Error& e) {
        ++errors;
        cj["status"] = dynamic_cast<const Unsupported*>(&e) ? "unsupported" : "error";
        cj["error"] = e.what();
        err << "error: " << (args.case_dirs.size() > 1 ? dir_s + ": " : std::string()) << e.what()
            << "\n";
      } catch (const std::bad_alloc&) {
        ++errors;
        cj["status"] = "error";
        cj["error"] = "out of host memory";
        err << "error: " << dir_s
            << ": out of host memory (a tensor is too large for this machine)\n";
      }
      cases.push_back(cj);
    }
    report["cases"] = cases;
    report["pass"] = all_pass && errors == 0;
    write_report(args.report_path, report);
    if (errors) return 2;
    guard.keep = true;
    out << (all_pass ? "all outputs within tolerance\n"
                     : "MISMATCH: some outputs exceed the tolerance\n");
    return all_pass ? 0 : 1;
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
}

// ---------------------------------------------------------------------------------------------

/// `tessel compile --target cpu`: loop IR, LLVM IR, native assembly, an object file or a shared
/// library with its C header.
int compile_for_cpu(const CompileArgs& args, std::ostream& out, std::ostream& err) {
  const std::string emit = args.emit.empty() ? "so" : args.emit;
  const std::set<std::string> emits = {"graph", "loop", "llvm", "asm", "obj", "so"};
  if (!emits.count(emit))
    fail("--emit '{}': expected graph, loop, llvm, asm, obj or so for --target cpu", emit);
  if (!args.hw.empty() || !args.hw_set.empty())
    fail("{} only applies to --target npu", args.hw.empty() ? "--hw-set" : "--hw");
  if ((emit == "so" || emit == "obj") && args.output.empty())
    fail("--emit {} writes a binary: give -o FILE (e.g. -o model.{})", emit, emit);
  check_output_path(args.output, "-o");
  graph_passes::PipelineOptions passes = pipeline_options(args.passes, err);
  passes.available = target_ops(Target::cpu);
  auto graph = load_model(args.model, parse_input_shapes(args.input_shapes), passes,
                          parse_input_values(args.input_values));
  std::string text;
  if (emit == "graph") {
    text = graph_to_string(*graph, PrintOptions{true});
  } else {
    cpu_backend::CpuCompileOptions opts;
    opts.keep_loop_ir = emit == "loop";
    if (auto form = compiled_form(*graph)) graph = std::move(form);  // as run_model compiles
    auto prog = cpu_backend::compile_cpu(*graph, opts);
    if (emit == "loop") {
      for (const auto& k : prog.kernels)
        if (!k.loop_ir.empty())
          text += fmt::format("# {} ({}, {})\n{}\n", k.node, k.op_type, k.kind, k.loop_ir);
    } else if (emit == "llvm") {
      text = cpu_backend::llvm_ir_text(prog, true);
    } else if (emit == "asm") {
      text = cpu_backend::native_assembly(prog);
    } else if (emit == "obj") {
      cpu_backend::write_object(prog, args.output);
      return 0;
    } else {
      cpu_backend::write_shared_library(prog, args.output, args.model);
      out << fmt::format("wrote {} and {} ({} kernels, {} inputs, {} outputs)\n", args.output,
                         fs::path(args.output).replace_extension(".h").string(),
                         prog.timed_kernels().size(), prog.inputs.size(), prog.outputs.size());
      return 0;
    }
  }
  if (args.output.empty()) {
    out << text;
  } else {
    write_file_atomically(args.output, text);
  }
  return 0;
}

/// `tessel compile --target gpu`: the loop IR, the NVPTX LLVM IR or the PTX (default).
int compile_for_gpu(const CompileArgs& args, std::ostream& out, std::ostream& err) {
  const std::string emit = args.emit.empty() ? "ptx" : args.emit;
  const std::set<std::string> emits = {"graph", "loop", "llvm", "ptx"};
  if (!emits.count(emit))
    fail("--emit '{}': expected graph, loop, llvm or ptx for --target gpu", emit);
  if (!args.hw.empty() || !args.hw_set.empty())
    fail("{} only applies to --target npu", args.hw.empty() ? "--hw-set" : "--hw");
  check_output_path(args.output, "-o");
  graph_passes::PipelineOptions passes = pipeline_options(args.passes, err);
  passes.available = target_ops(Target::gpu);
  auto graph = load_model(args.model, parse_input_shapes(args.input_shapes), passes,
                          parse_input_values(args.input_values));
  std::string text;
  if (emit == "graph") {
    text = graph_to_string(*graph, PrintOptions{true});
  } else {
    gpu_backend::GpuCompileOptions opts;
    opts.keep_loop_ir = emit == "loop";
    if (auto form = compiled_form(*graph)) graph = std::move(form);  // as run_model compiles
    auto prog = gpu_backend::compile_gpu(*graph, opts);
    if (emit == "loop") {
      for (const auto& k : prog.kernels) {
        const auto& info = prog.plan.kernels[k.info_index];
        text +=
            fmt::format("# {} ({}, {})\n{}\n", info.node, info.op_type, info.kind, info.loop_ir);
      }
    } else if (emit == "llvm") {
      text = gpu_backend::gpu_llvm_ir_text(prog);
    } else {
      text = gpu_backend::gpu_ptx(prog);
    }
  }
  if (args.output.empty()) {
    out << text;
  } else {
    write_file_atomically(args.output, text);
  }
  return 0;
}

int cmd_compile(const CompileArgs& args, std::ostream& out, std::ostream& err) {
  try {
    const Target target = parse_target(args.target, "--target");
    if (target == Target::ref)
      fail("--target ref: the reference interpreter compiles nothing (expected npu, cpu or gpu)");
    if (target != Target::npu && !args.tuning_log.empty())
      fail("--tuning-log only applies to --target npu");
    if (target == Target::cpu) return compile_for_cpu(args, out, err);
    if (target == Target::gpu) return compile_for_gpu(args, out, err);
    if (target == Target::gpu_emu)
      fail("--target gpu-emu runs the gpu target's kernels on the host; compile with --target gpu");
    const std::string emit_arg = args.emit.empty() ? "asm" : args.emit;
    const std::set<std::string> emits = {"graph", "loop", "asm", "bin"};
    if (!emits.count(emit_arg)) fail("--emit '{}': expected graph, loop, asm or bin", emit_arg);
    if (emit_arg == "bin" && args.output.empty()) fail("--emit bin writes binary: give -o FILE");
    // The pattern fusions form only ops the NPU backend compiles.
    graph_passes::PipelineOptions passes = pipeline_options(args.passes, err);
    passes.available = target_ops(Target::npu);
    auto graph = load_model(args.model, parse_input_shapes(args.input_shapes), passes,
                            parse_input_values(args.input_values));
    std::string text;
    if (emit_arg == "graph") {
      if (!args.tuning_log.empty())
        fail("--tuning-log applies to --emit loop, asm and bin (the graph has no schedule)");
      // The graph does not depend on the hardware, but a given config must still be valid.
      if (!args.hw.empty()) (void)load_hw(args.hw, args.hw_set);
      if (args.hw.empty() && !args.hw_set.empty()) fail("--hw-set needs --hw FILE");
      text = graph_to_string(*graph, PrintOptions{true});
    } else {
      if (args.hw.empty()) fail("--emit {} needs --hw FILE", emit_arg);
      const npu::HwConfig hw = load_hw(args.hw, args.hw_set);
      npu_backend::NpuCompileOptions opts;
      opts.keep_loop_ir = emit_arg == "loop";
      tuner::ScheduleRequest request;
      request.tuning_log = args.tuning_log;
      request.progress = compile_progress(err);
      if (auto form = compiled_form(*graph)) graph = std::move(form);  // as run_model compiles
      auto mod = tuner::compile_scheduled(*graph, hw, opts, request).module;
      if (emit_arg == "loop") {
        for (const auto& k : mod.kernels)
          if (!k.loop_ir.empty())
            text += fmt::format("# {} ({})\n{}\n", k.node, k.op_type, k.loop_ir);
      } else if (emit_arg == "asm") {
        text = isa::disassemble(mod.program);
      } else {
        const auto bytes = isa::encode(mod.program);
        text.assign(bytes.begin(), bytes.end());
      }
    }
    if (args.output.empty()) {
      out << text;
    } else {
      write_file_atomically(args.output, text);
    }
    return 0;
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace tessel::driver
