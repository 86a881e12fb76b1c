// The graph pass manager: runs the graph-level optimisation pipeline (passes/graph) on a Graph,
// verifying the IR after every pass, with the instrumentation a compiler engineer expects
// (print the IR after a pass or after every change, disable a pass, per-pass timing).
//
// The default pipeline is the list in default_pipeline() (pass_manager.cpp), in order:
//   shape_folding      values known at compile time (Shape->Cast->Slice->Concat chains) -> consts
//   constant_folding   nodes whose inputs are all constants -> evaluated with the reference kernel
//   simplify           x*1, x+0, x-0, x/1, Div by a constant -> Mul, Identity/Dropout, reshape and
//                      transpose chains, Squeeze/Unsqueeze pairs
//   fold_batchnorm     BatchNormalization and per-channel Mul/Add into the preceding
//                      Conv/ConvTranspose/Gemm/MatMul (weights and bias scaled)
//   fuse_hard_swish    clip(x+3,0,6)/6 -> HardSigmoid, x*clip(x+3,0,6)/6 and x*HardSigmoid(x) ->
//                      HardSwish
//   fuse_gelu          x*0.5*(1+erf(x/sqrt2)) (and the tanh form) -> Gelu
//   fuse_layer_norm    ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div[/Mul/Add] -> LayerNormalization
//   fuse_silu          x*sigmoid(x) -> Silu (a tessel extension op)
//   cse                duplicate constants and nodes (same op, inputs, attributes) merged
//   dce                nodes and constants no graph output depends on removed
//   fuse_kernels       fusion_group attributes: which nodes the NPU compiles as one kernel
// The NC1HWC0/fractal layout pass is not part of the pipeline yet (it needs NPU backend support).
// docs/graph_passes.md describes every pass with a before/after example.
#pragma once

#include <functional>
#include <iosfwd>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace tessel::graph_passes {

/// Whether the target can execute an op type (e.g. the NPU backend has a compute for it). The
/// pattern-fusion passes only form a fused op (HardSwish, Gelu, LayerNormalization, Silu, ...)
/// that the target supports, so fusing never turns a compilable graph into one that is not.
/// Empty = every op is available (the reference interpreter runs every registered op).
using OpAvailable = std::function<bool(const std::string& op_type)>;

/// One graph pass: a name (used by --disable-pass / --print-ir-after), a one-line summary and the
/// transform, which returns true when it changed the graph.
struct GraphPass {
  std::string name;
  std::string summary;
  std::function<bool(Graph&)> run;
};

/// The default pipeline, in order (the list in the file comment above). `available` is handed to
/// the pattern-fusion passes.
std::vector<GraphPass> default_pipeline(const OpAvailable& available = {});

/// Names of the default pipeline's passes, in order.
std::vector<std::string> default_pass_names();

/// How run_pipeline runs.
struct PipelineOptions {
  bool enabled = true;                   // false: run no pass at all
  std::set<std::string> disabled;        // pass names to skip (unknown names are an error)
  std::set<std::string> print_ir_after;  // print the IR after these passes ("all" = every pass)
  bool print_ir_after_change = false;    // print the IR after every pass that changed the graph
  bool timing = false;          // print a table: pass, changed, seconds, nodes before/after
  std::ostream* out = nullptr;  // where IR dumps and the timing table go (nullptr = std::cerr)
  OpAvailable available;        // ops the target supports (see OpAvailable)
};

/// What one pass did.
struct PassRecord {
  std::string name;
  bool ran = false;  // false when disabled
  bool changed = false;
  double seconds = 0;
  size_t nodes_before = 0, nodes_after = 0;
};

/// Every pass of a pipeline run, in order.
struct PipelineReport {
  std::vector<PassRecord> passes;
  /// The timing table as text (pass, changed, seconds, nodes before -> after, total).
  std::string timing_table() const;
};

/// Checks the pass names in `options` (disabled, print_ir_after) against `pipeline`; throws
/// tessel::Error "unknown graph pass 'X' in <option> (passes: a, b, ...)" naming the valid ones.
void check_pass_names(const std::vector<GraphPass>& pipeline, const PipelineOptions& options);

/// Runs `pipeline` on `graph` in order, skipping disabled passes. verify_graph runs before the
/// first pass and after every pass; when it fails after pass NAME, throws tessel::Error
/// "pass 'NAME' broke the graph: <verifier message>" followed by the IR (constants elided). A
/// tessel::Error thrown by a pass is re-thrown as "pass 'NAME': <message>". IR dumps and the timing
/// table go to options.out as requested.
PipelineReport run_passes(Graph& graph, const std::vector<GraphPass>& pipeline,
                          const PipelineOptions& options);

/// run_passes with default_pipeline(options.available); does nothing but check the option names
/// when options.enabled is false.
PipelineReport run_pipeline(Graph& graph, const PipelineOptions& options = {});

}  // namespace tessel::graph_passes
