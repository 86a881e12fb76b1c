// Constant folding: nodes whose inputs are all constants are evaluated with the reference kernel
// and replaced by constants (see graph_passes.h for the size limit and what is skipped).
//
//   before: %wt: f32[64,32] = Transpose(%w) {perm=[1, 0]}      (%w a constant)
//           %y: f32[1,64] = MatMul(%x, %wt)
//   after:  %wt: f32[64,32] = const [...]
//           %y: f32[1,64] = MatMul(%x, %wt)
//
// Runs after: ops::infer_graph; best after shape_folding (more inputs are constants then), but it
// also folds nodes whose outputs are known values on its own.
// Guarantees: no node with all-constant inputs remains unless its op is non-deterministic, has no
// reference kernel (or throws Unsupported), produces a graph output or an output above
// kMaxFoldedElements (a DequantizeLinear folds at any size); values keep their names, dtypes and
// shapes.
#include <algorithm>

#include "compiler/ops/op_registry.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

// Ops whose outputs are not a function of their inputs.
bool nondeterministic(const std::string& op) {
  return op.rfind("Random", 0) == 0 || op == "Multinomial" || op == "Bernoulli";
}

}  // namespace

bool constant_folding(Graph& graph) {
  bool changed = false;
  // Snapshot: folding removes nodes, and a fold can make a later node's inputs all constant,
  // which the same sweep then sees (nodes are in topological order).
  std::vector<Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  for (Node* n : order) {
    if (n->outputs.empty() || nondeterministic(n->op_type)) continue;
    bool present_inputs_constant = true, has_input = false;
    for (const Value* in : n->inputs) {
      if (!in) continue;
      has_input = true;
      if (!in->constant) present_inputs_constant = false;  // a constant or a known value
    }
    if (!has_input || !present_inputs_constant) continue;
    bool ok = true;
    for (const Value* out : n->outputs) {
      if (std::find(graph.outputs.begin(), graph.outputs.end(), out) != graph.outputs.end())
        ok = false;
      // A DequantizeLinear of a constant (a weight fold_qdq left in float, e.g. a Gemm's with a
      // bias C) has as many elements as its constant input: folding it does not grow the number
      // of elements the model holds, and saves a run-time DQ kernel per inference.
      if (shape_numel(out->shape) > kMaxFoldedElements && n->op_type != "DequantizeLinear")
        ok = false;
    }
    if (!ok) continue;
    const ops::OpDef* def = ops::find_op(n->op_type);
    if (!def || !def->reference) continue;
    std::vector<Tensor> results;
    bool all_known = true;
    for (const Value* out : n->outputs) all_known = all_known && out->constant;
    if (all_known) {
      for (const Value* out : n->outputs) results.push_back(*out->constant);
    } else {
      std::vector<const Tensor*> inputs;
      for (const Value* in : n->inputs) inputs.push_back(in ? in->constant.get() : nullptr);
      try {
        results = ops::run_reference_node(*n, inputs);
      } catch (const Unsupported&) {
        continue;  // an attribute value the kernel does not implement: computed at run time
      }
    }
    bool types_match = results.size() == n->outputs.size();
    for (size_t i = 0; types_match && i < results.size(); ++i)
      types_match =
          results[i].dtype() == n->outputs[i]->dtype && results[i].shape() == n->outputs[i]->shape;
    TESSEL_CHECK(types_match,
                 "constant folding {}: the reference kernel's results do not match "
                 "the node's output types",
                 n->describe());
    const std::vector<Value*> outs = n->outputs;
    for (size_t i = 0; i < outs.size(); ++i) make_constant(graph, outs[i], std::move(results[i]));
    changed = true;
  }
  return changed;
}

}  // namespace tessel::graph_passes
