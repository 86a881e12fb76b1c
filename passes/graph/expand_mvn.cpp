// expand_mvn: MeanVarianceNormalization becomes the ops of its ONNX function body (opset 13,
// onnx/defs/nn/defs.cc), which the compiled targets have, in the reference kernel's form
// (compiler/ops/norm.cpp: the variance as the mean of squared deviations, not E[x^2] - E[x]^2):
//   m = ReduceMean(X, axes, keepdims=1)        (axes attribute, default [0, 2, 3])
//   d = Sub(X, m)
//   v = ReduceMean(Mul(d, d), axes, keepdims=1)
//   Y = Div(d, Add(Sqrt(v), 1e-9))
// Runs where expand_losses runs for the compiled targets (driver::compiled_form), on
// shape-inferred input. Guarantees: no MeanVarianceNormalization node remains; Y keeps its name,
// shape and values (fp32 rounding of the means).
#include <fmt/format.h>

#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

bool is_mvn(const Node& n) { return n.op_type == "MeanVarianceNormalization"; }

void expand(Graph& g, Node* n) {
  NodeExpander x(g, n);
  Value* X = n->inputs.at(0);
  const int64_t rank = static_cast<int64_t>(X->shape.size());
  std::vector<int64_t> axes = n->attrs.get_ints_or("axes", {0, 2, 3}, n->name);
  for (int64_t& a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank)
      fail("{}: axes entry out of range for a rank-{} input X", n->describe(), rank);
  }
  Attributes reduce;
  reduce.set("axes", axes);
  reduce.set("keepdims", int64_t{1});
  Value* mean = x.emit("ReduceMean", {X}, reduce);
  Value* d = x.emit("Sub", {X, mean});
  Value* var = x.emit("ReduceMean", {x.emit("Mul", {d, d})}, reduce);
  Value* std_eps = x.emit("Add", {x.emit("Sqrt", {var}), x.scalar(1e-9, X->dtype)});
  x.emit("Div", {d, std_eps}, {}, x.take_output(0));
  x.finish();
}

}  // namespace

bool needs_expand_mvn(const Graph& graph) { return any_node(graph, is_mvn); }

bool expand_mvn(Graph& graph) { return rewrite_matching(graph, is_mvn, expand); }

}  // namespace tessel::graph_passes
