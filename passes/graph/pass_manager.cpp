// The graph pass manager and the default pipeline (see pass_manager.h).
#include "passes/graph/pass_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"

namespace tessel::graph_passes {

// The pipeline, in the order it runs. QDQ folding first (shape_folding and constant_folding would
// turn the DequantizeLinear of a constant weight into a float weight) and the int8 MaxPool,
// then folding (so later
// patterns see constants), then algebraic clean-up and BatchNormalization folding, the pattern
// fusions (after `simplify`, which removes the x*1 in exported swish and turns Div by constants
// into Mul: the patterns accept both forms), then CSE and DCE, kernel grouping (it only annotates),
// and the layout pass last (it depends on the kernels' boundaries): TransData around every conv
// kernel, then the redundant ones cancelled.
std::vector<GraphPass> default_pipeline(const OpAvailable& available) {
  return {
      {"fold_qdq", "DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear -> QLinearConv/MatMul",
       [available](Graph& g) { return fold_qdq(g, available); }},
      {"qdq_maxpool",
       "DequantizeLinear -> MaxPool -> MaxPool on the int8 values -> DequantizeLinear",
       [available](Graph& g) { return qdq_maxpool(g, available); }},
      {"shape_folding", "values known at compile time (Shape/Gather/Concat/Cast chains) -> consts",
       shape_folding},
      {"constant_folding", "nodes with constant inputs -> evaluated constants", constant_folding},
      {"simplify", "x*1, x+0, x/c -> x*(1/c), Identity, reshape/transpose chains", simplify},
      {"fold_batchnorm", "BatchNormalization / per-channel Mul, Add into the preceding Conv/Gemm",
       fold_batchnorm},
      {"fuse_hard_swish", "clip(x+3,0,6)/6 -> HardSigmoid, x*that -> HardSwish",
       [available](Graph& g) { return fuse_hard_swish(g, available); }},
      {"fuse_gelu", "x*0.5*(1+erf(x/sqrt2)) and the tanh form -> Gelu",
       [available](Graph& g) { return fuse_gelu(g, available); }},
      {"fuse_layer_norm", "ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div[/Mul/Add] -> LayerNorm",
       [available](Graph& g) { return fuse_layer_norm(g, available); }},
      {"fuse_silu", "x*sigmoid(x) -> Silu",
       [available](Graph& g) { return fuse_silu(g, available); }},
      {"cse", "equal constants and duplicate nodes merged", cse},
      {"dce", "nodes and values no output depends on removed", dce},
      {"fuse_kernels", "fusion_group attributes: nodes the NPU compiles as one kernel",
       fuse_kernels},
      {"layout_nc1hwc0", "conv kernels read and write NC1HWC0, TransData conversions around them",
       layout_nc1hwc0},
      {"cancel_transdata", "inverse TransData pairs and conversions that do not pay removed",
       cancel_transdata},
  };
}

std::vector<std::string> default_pass_names() {
  std::vector<std::string> names;
  for (const auto& p : default_pipeline()) names.push_back(p.name);
  return names;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string pass_list(const std::vector<GraphPass>& pipeline) {
  std::string s;
  for (const auto& p : pipeline) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

void dump_ir(std::ostream& os, const Graph& graph, const std::string& title) {
  os << "// ----- IR after " << title << " -----\n";
  print_graph(graph, os, PrintOptions{true});
}

}  // namespace

std::string PipelineReport::timing_table() const {
  size_t w = 4;
  for (const auto& p : passes) w = std::max(w, p.name.size());
  std::string s = fmt::format("  {:<{}}  {:<8}  {:>9}  {:>12}  {:>11}\n", "pass", w, "changed",
                              "seconds", "nodes before", "nodes after");
  s += fmt::format("  {}  {}  {}  {}  {}\n", std::string(w, '-'), std::string(8, '-'),
                   std::string(9, '-'), std::string(12, '-'), std::string(11, '-'));
  double total = 0;
  for (const auto& p : passes) {
    if (!p.ran) {
      s += fmt::format("  {:<{}}  {:<8}  {:>9}  {:>12}  {:>11}\n", p.name, w, "disabled", "-", "-",
                       "-");
      continue;
    }
    total += p.seconds;
    s += fmt::format("  {:<{}}  {:<8}  {:>9.6f}  {:>12}  {:>11}\n", p.name, w,
                     p.changed ? "yes" : "no", p.seconds, p.nodes_before, p.nodes_after);
  }
  s += fmt::format("  {:<{}}  {:<8}  {:>9.6f}\n", "total", w, "", total);
  return s;
}

void check_pass_names(const std::vector<GraphPass>& pipeline, const PipelineOptions& options) {
  auto known = [&](const std::string& n) {
    return std::any_of(pipeline.begin(), pipeline.end(),
                       [&](const GraphPass& p) { return p.name == n; });
  };
  for (const auto& n : options.disabled)
    if (!known(n))
      fail("unknown graph pass '{}' in --disable-pass (passes: {})", n, pass_list(pipeline));
  for (const auto& n : options.print_ir_after)
    if (n != "all" && !known(n))
      fail("unknown graph pass '{}' in --print-ir-after (passes: {}, or all)", n,
           pass_list(pipeline));
}

PipelineReport run_passes(Graph& graph, const std::vector<GraphPass>& pipeline,
                          const PipelineOptions& options) {
  check_pass_names(pipeline, options);
  std::ostream& os = options.out ? *options.out : std::cerr;
  PipelineReport report;
  if (!options.enabled) return report;
  try {
    verify_graph(graph);
  } catch (const Error& e) {
    fail("the graph is invalid before the graph passes: {}", e.what());
  }
  const bool print_all = options.print_ir_after.count("all") != 0;
  for (const GraphPass& pass : pipeline) {
    PassRecord rec;
    rec.name = pass.name;
    if (options.disabled.count(pass.name)) {
      report.passes.push_back(rec);
      continue;
    }
    rec.ran = true;
    rec.nodes_before = graph.nodes().size();
    const auto t0 = std::chrono::steady_clock::now();
    try {
      rec.changed = pass.run(graph);
    } catch (const Unsupported& e) {
      throw Unsupported(fmt::format("pass '{}': {}", pass.name, e.what()));
    } catch (const Error& e) {
      fail("pass '{}': {}", pass.name, e.what());
    }
    rec.seconds = seconds_since(t0);
    rec.nodes_after = graph.nodes().size();
    try {
      verify_graph(graph);
    } catch (const Error& e) {
      fail("pass '{}' broke the graph: {}\nIR after the pass:\n{}", pass.name, e.what(),
           graph_to_string(graph, PrintOptions{true}));
    }
    report.passes.push_back(rec);
    if (print_all || options.print_ir_after.count(pass.name) ||
        (options.print_ir_after_change && rec.changed))
      dump_ir(os, graph, pass.name + (rec.changed ? "" : " (no change)"));
  }
  if (options.timing) os << "graph pass timing:\n" << report.timing_table();
  return report;
}

PipelineReport run_pipeline(Graph& graph, const PipelineOptions& options) {
  return run_passes(graph, default_pipeline(options.available), options);
}

}  // namespace tessel::graph_passes
