// Layer-norm pattern fusion (Ba et al. 2016) into LayerNormalization
// (https://onnx.ai/onnx/operators/onnx__LayerNormalization.html, opset 17): the decomposed form
// exporters write,
//   m = ReduceMean(x, axes)   d = x - m   v = ReduceMean(d^2, axes)   y = d / Sqrt(v + eps)
// with axes the trailing axes [k, rank) and keepdims=1 (d^2 as Pow(d, 2) or d*d; the division
// also as d * Reciprocal(Sqrt(...))), becomes LayerNormalization(x, ones) {axis=k, epsilon=eps};
// a following Mul by gamma and Add of beta (values varying only along the normalised axes) are
// absorbed into its Scale and B. Intermediate values must have no users outside the pattern.
//
//   before: %m: f32[1,40,1] = ReduceMean(%x) {axes=[-1]}
//           %d: f32[1,40,120] = Sub(%x, %m)
//           %p: f32[1,40,120] = Pow(%d, %two)
//           %v: f32[1,40,1] = ReduceMean(%p) {axes=[-1]}
//           %e: f32[1,40,1] = Add(%v, %eps)
//           %s: f32[1,40,1] = Sqrt(%e)
//           %n: f32[1,40,120] = Div(%d, %s)
//           %g: f32[1,40,120] = Mul(%n, %gamma)
//           %y: f32[1,40,120] = Add(%g, %beta)
//   after:  %y: f32[1,40,120] = LayerNormalization(%x, %gamma, %beta) {axis=2, epsilon=1e-05}
//
// Runs after: the folding passes (eps, gamma, beta, the exponent 2 must be constants) and simplify;
// before fuse_kernels.
// Guarantees: LayerNormalization formed only when `available` allows it; the final value (after
// the absorbed Mul/Add) keeps its name and shape; no intermediate of a matched pattern survives.
#include <algorithm>

#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

/// The normalised axes of a ReduceMean with keepdims=1 when they are the trailing axes [k, rank):
/// k, else -1.
int64_t trailing_axes_start(const Node* rm) {
  if (!rm || rm->op_type != "ReduceMean" || !rm->input(0)) return -1;
  if (rm->attrs.get_int_or("keepdims", 1, rm->name) != 1) return -1;
  const int64_t rank = static_cast<int64_t>(rm->inputs[0]->shape.size());
  std::vector<int64_t> axes = rm->attrs.get_ints_or("axes", {}, rm->name);
  if (const Tensor* t = constant_of(rm->input(1)))
    axes = t->to_int64_vector();
  else if (rm->input(1))
    return -1;
  if (axes.empty()) {
    if (rm->attrs.get_int_or("noop_with_empty_axes", 0, rm->name) != 0) return -1;
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return -1;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const int64_t k = rank - static_cast<int64_t>(axes.size());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != k + static_cast<int64_t>(i)) return -1;
  return rank == 0 ? -1 : k;
}

/// `v` varies only along the axes [k, rank) of `x` and broadcasts to x without widening it.
bool normalized_operand(const Value* v, const Value* x, int64_t k) {
  if (!v || v->dtype != x->dtype) return false;
  Shape s = v->shape;
  while (!s.empty() && s.front() == 1) s.erase(s.begin());
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  if (static_cast<int64_t>(s.size()) > rank - k) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t dx = x->shape[rank - s.size() + i];
    if (s[i] != 1 && s[i] != dx) return false;
  }
  return true;
}

/// The core pattern rooted at the normalising node `y0`.
bool match_core(Node* y0, const UseMap& uses, Value*& x, int64_t& axis, double& eps,
                std::vector<Node*>& nodes) {
  if (y0->inputs.size() != 2 || !y0->inputs[0] || !y0->inputs[1]) return false;
  Value* d = nullptr;
  Value* s = nullptr;
  Node* recip = nullptr;
  if (y0->op_type == "Div") {
    d = y0->inputs[0];
    s = y0->inputs[1];
  } else if (y0->op_type == "Mul") {
    for (int k = 0; k < 2 && !s; ++k) {
      Node* r = producer_of(y0->inputs[1 - k], "Reciprocal");
      if (r && r->input(0) && uses.single_use(y0->inputs[1 - k])) {
        d = y0->inputs[k];
        s = r->inputs[0];
        recip = r;
      }
    }
    if (!s) return false;
  } else {
    return false;
  }
  Node* sqrt = producer_of(s, "Sqrt");
  if (!sqrt || !uses.only_used_by(s, {recip ? static_cast<const Node*>(recip) : y0})) return false;
  Node* add = producer_of(sqrt->input(0));
  if (!add || add->op_type != "Add" || !uses.single_use(sqrt->inputs[0])) return false;
  Node* rm2 = nullptr;
  Value* eps_v = nullptr;
  for (int k = 0; k < 2 && !rm2; ++k) {
    Node* r = producer_of(add->inputs[k], "ReduceMean");
    if (r && uniform_constant(add->inputs[1 - k]) && uses.single_use(add->inputs[k])) {
      rm2 = r;
      eps_v = add->inputs[1 - k];
    }
  }
  if (!rm2 || !rm2->input(0)) return false;
  eps = *uniform_constant(eps_v);
  if (!(eps > 0) || eps_v->shape.size() > sqrt->inputs[0]->shape.size()) return false;
  Value* sq = rm2->inputs[0];
  Node* sqn = producer_of(sq);
  if (!sqn || !uses.single_use(sq) || sqn->inputs.size() != 2) return false;
  const bool square =
      (sqn->op_type == "Pow" && sqn->inputs[0] == d && is_constant_value(sqn->inputs[1], 2)) ||
      (sqn->op_type == "Mul" && sqn->inputs[0] == d && sqn->inputs[1] == d);
  if (!square) return false;
  Node* sub = producer_of(d, "Sub");
  if (!sub || sub->inputs.size() != 2 || !uses.only_used_by(d, {sqn, y0})) return false;
  x = sub->inputs[0];
  Node* rm1 = producer_of(sub->inputs[1], "ReduceMean");
  if (!x || !rm1 || rm1->input(0) != x || !uses.only_used_by(sub->inputs[1], {sub})) return false;
  axis = trailing_axes_start(rm1);
  if (axis < 0 || trailing_axes_start(rm2) != axis) return false;
  if (!dtype_is_float(x->dtype) || d->shape != x->shape || y0->outputs[0]->shape != x->shape)
    return false;
  nodes = {rm1, sub, sqn, rm2, add, sqrt};
  if (recip) nodes.push_back(recip);
  nodes.push_back(y0);
  return true;
}

bool rewrite(Graph& graph, Node* n, const UseMap& uses) {
  if (n->outputs.size() != 1 || n->outputs[0]->constant) return false;
  Value* out = n->outputs[0];
  // Absorb a Mul by gamma / an Add of beta following a LayerNormalization.
  if ((n->op_type == "Mul" || n->op_type == "Add") && n->inputs.size() == 2) {
    for (int k = 0; k < 2; ++k) {
      Node* ln = producer_of(n->inputs[k], "LayerNormalization");
      Value* operand = n->inputs[1 - k];
      if (!ln || ln->outputs.size() != 1 || !uses.single_use(n->inputs[k]) || !ln->input(0))
        continue;
      Value* x = ln->inputs[0];
      const int64_t rank = static_cast<int64_t>(x->shape.size());
      int64_t axis = ln->attrs.get_int_or("axis", -1, ln->name);
      if (axis < 0) axis += rank;
      if (out->shape != x->shape || !normalized_operand(operand, x, axis)) continue;
      std::vector<Value*> inputs = ln->inputs;
      inputs.resize(3, nullptr);
      if (n->op_type == "Mul") {
        // LN(x, 1, [B]) * g = LN(x, g, [B * g]): only without B (or with a scale of ones).
        if (inputs[2] || !is_constant_value(inputs[1], 1)) continue;
        inputs[1] = operand;
      } else {
        if (inputs[2]) continue;
        inputs[2] = operand;
      }
      if (!inputs[2]) inputs.resize(2);
      replace_pattern(graph, out, {ln, n}, "LayerNormalization", inputs, ln->attrs);
      return true;
    }
  }
  Value* x = nullptr;
  int64_t axis = 0;
  double eps = 0;
  std::vector<Node*> nodes;
  if (!match_core(n, uses, x, axis, eps, nodes)) return false;
  Shape normalized(x->shape.begin() + axis, x->shape.end());
  Tensor ones(x->dtype, normalized);
  for (int64_t i = 0; i < ones.numel(); ++i) ones.set_from_double(i, 1.0);
  Value* scale = graph.add_constant(out->name + ".ln_scale", std::move(ones));
  Attributes attrs;
  attrs.set("axis", axis);
  attrs.set("epsilon", static_cast<float>(eps));
  replace_pattern(graph, out, nodes, "LayerNormalization", {x, scale}, attrs);
  return true;
}

}  // namespace

bool fuse_layer_norm(Graph& graph, const OpAvailable& available) {
  if (!op_available(available, "LayerNormalization")) return false;
  return rewrite_nodes(graph, [&](Node* n, const UseMap& uses) { return rewrite(graph, n, uses); });
}

}  // namespace tessel::graph_passes
