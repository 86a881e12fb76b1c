// Shape folding: nodes whose outputs are all known at compile time become constants (see
// graph_passes.h). The values were computed by ops::infer_graph's data propagation at import
// (Shape/Size of static shapes, and the small integer chains built on them such as
// Shape -> Cast -> Slice -> Concat -> Reshape's target); this pass removes the nodes that only
// recompute them.
//
//   before: %s: i64[2] known [1, 200] = Shape(%x)
//           %y: f32[1,200] = Reshape(%x, %s)
//   after:  %s: i64[2] = const [1, 200]
//           %y: f32[1,200] = Reshape(%x, %s)
//
// Runs after: ops::infer_graph (import runs it; it sets the known values). Needs nothing else.
// Guarantees: no node whose outputs are all known at compile time remains, except producers of
// graph outputs; every value keeps its name, dtype, shape and data.
#include <algorithm>

#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

bool shape_folding(Graph& graph) {
  std::vector<Node*> foldable;
  for (const auto& n : graph.nodes()) {
    if (n->outputs.empty()) continue;
    bool all_known = true;
    for (const Value* out : n->outputs) {
      if (!out->constant) all_known = false;
      if (std::find(graph.outputs.begin(), graph.outputs.end(), out) != graph.outputs.end())
        all_known = false;  // a graph output stays computed (its producer names it)
    }
    if (all_known) foldable.push_back(n.get());
  }
  for (Node* n : foldable) {
    // Each output keeps its name and becomes a constant; the node goes when its last output does.
    const std::vector<Value*> outs = n->outputs;
    for (Value* out : outs) {
      Tensor data = *out->constant;
      make_constant(graph, out, std::move(data));
    }
  }
  return !foldable.empty();
}

}  // namespace tessel::graph_passes
