// SiLU (swish) pattern fusion: x * Sigmoid(x) -> Silu(x), a tessel extension op
// (compiler/ops/tessel_ext.h). The Sigmoid's output must have no other user. Exported swish with
// beta = 1 is x * Sigmoid(x * 1): `simplify` removes the * 1 first.
//
//   before: %s: f32[1,40,240] = Sigmoid(%x)
//           %y: f32[1,40,240] = Mul(%x, %s)
//   after:  %y: f32[1,40,240] = Silu(%x)
//
// Runs after: simplify (removes the * 1 in x * Sigmoid(x * 1)); before fuse_kernels.
// Guarantees: Silu formed only when `available` allows it; the Mul's output keeps its name and
// shape.
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

bool fuse_silu(Graph& graph, const OpAvailable& available) {
  if (!op_available(available, "Silu")) return false;
  return rewrite_nodes(graph, [&](Node* n, const UseMap& uses) {
    if (n->op_type != "Mul" || n->inputs.size() != 2 || n->outputs.size() != 1) return false;
    Value* out = n->outputs[0];
    for (int k = 0; k < 2; ++k) {
      Value* x = n->inputs[k];
      Value* s = n->inputs[1 - k];
      Node* sig = producer_of(s, "Sigmoid");
      if (!x || !sig || sig->input(0) != x || !uses.single_use(s)) continue;
      if (out->shape != x->shape || out->dtype != x->dtype || !dtype_is_float(x->dtype)) continue;
      replace_pattern(graph, out, {sig, n}, "Silu", {x}, {});
      return true;
    }
    return false;
  });
}

}  // namespace tessel::graph_passes
