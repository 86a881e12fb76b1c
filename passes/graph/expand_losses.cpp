// expand_losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss become the ops of their
// ONNX function bodies (onnx/defs/math/defs.cc, opset 13: BuildContextDependentFunctionBody for
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss), which the compiled targets have:
//   NegativeLogLikelihoodLoss(input [N, C, d...], target [N, d...], weight [C]?)
//     t   = Unsqueeze(target, 1)                                     [N, 1, d...]
//     with ignore_index: mask = Equal(t, ignore_index), t = Where(mask, 0, t)
//     g   = GatherElements(input, t, axis=1)                         [N, 1, d...]
//     w   = Gather(weight, t) (with weight); with ignore_index w = Where(mask, 0, w or 1)
//     l   = Neg(g) (* w)
//     none: Squeeze(l, 1); sum: ReduceSum(l); mean: ReduceSum(l) / ReduceSum(w), or ReduceMean(l)
//     when no w
//   SoftmaxCrossEntropyLoss(scores, labels, weights?) -> loss, log_prob?
//     log_prob = LogSoftmax(scores, axis=1); loss = the NLL above of (log_prob, labels, weights)
// (the function body reshapes scores to [N, C, D] and transposes to put C last; LogSoftmax with
// axis=1 is the same computation.) Runs where split_outputs runs for the compiled targets
// (driver::compiled_form), on shape-inferred input. Guarantees: no NegativeLogLikelihoodLoss or
// SoftmaxCrossEntropyLoss node remains; outputs keep their names, shapes and values (fp32 rounding
// of the sums).
#include <fmt/format.h>

#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

/// Emits the NLL of `logp` (shape [N, C, d...]) against node `n`'s inputs 1 (class ids) and 2
/// (weights, optional), producing `out`.
void emit_nll(NodeExpander& x, const Node& n, Value* logp, Value* out) {
  const std::string reduction = n.attrs.get_string_or("reduction", "mean", n.name);
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    fail("{}: reduction '{}', expected none, sum or mean", n.describe(), reduction);
  Value* target = n.inputs.at(1);
  Value* weight = n.input(2);
  const DType ft = logp->dtype, it = target->dtype;
  Value* t = x.unsqueeze(target, 1);
  Value* mask = nullptr;
  if (n.attrs.has("ignore_index")) {
    const int64_t ii = n.attrs.get_int_or("ignore_index", 0, n.name);
    mask = x.emit("Equal", {t, x.scalar(static_cast<double>(ii), it)});
    t = x.emit("Where", {mask, x.scalar(0, it), t});
  }
  Attributes axis1;
  axis1.set("axis", int64_t{1});
  Value* loss = x.emit("Neg", {x.emit("GatherElements", {logp, t}, axis1)});
  Value* w = weight ? x.emit("Gather", {weight, t}) : nullptr;
  if (mask) w = x.emit("Where", {mask, x.scalar(0, ft), w ? w : x.scalar(1, ft)});
  if (w) loss = x.emit("Mul", {loss, w});
  Attributes all;
  all.set("keepdims", int64_t{0});
  if (reduction == "none") {
    x.emit("Squeeze", {loss, x.i64s({1})}, {}, out);
  } else if (reduction == "sum") {
    x.emit("ReduceSum", {loss}, all, out);
  } else if (!w) {
    x.emit("ReduceMean", {loss}, all, out);
  } else {
    x.emit("Div", {x.emit("ReduceSum", {loss}, all), x.emit("ReduceSum", {w}, all)}, {}, out);
  }
}

void expand(Graph& g, Node* n) {
  NodeExpander x(g, n);
  if (n->op_type == "NegativeLogLikelihoodLoss") {
    emit_nll(x, *n, n->inputs.at(0), x.take_output(0));
  } else {
    Attributes axis1;
    axis1.set("axis", int64_t{1});
    Value* log_prob_out =
        n->outputs.size() > 1 && value_used(g, n->outputs[1]) ? x.take_output(1) : nullptr;
    Value* logp = x.emit("LogSoftmax", {n->inputs.at(0)}, axis1, log_prob_out);
    emit_nll(x, *n, logp, x.take_output(0));
  }
  x.finish();
}

bool is_loss(const std::string& op) {
  return op == "NegativeLogLikelihoodLoss" || op == "SoftmaxCrossEntropyLoss";
}

}  // namespace

bool needs_expand_losses(const Graph& graph) {
  return any_node(graph, [](const Node& n) { return is_loss(n.op_type); });
}

bool expand_losses(Graph& graph) {
  return rewrite_matching(
      graph, [](const Node& n) { return is_loss(n.op_type); }, expand);
}

}  // namespace tessel::graph_passes
