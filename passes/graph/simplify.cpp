// Algebraic simplification, to a fixed point (the rules are listed in graph_passes.h).
//
//   before: %a: f32[1,8] = Mul(%x, %one)           (%one = const [1])
//           %b: f32[1,8] = Div(%a, %six)           (%six = const [6])
//           %t: f32[8,1] = Transpose(%b) {perm=[1, 0]}
//           %y: f32[1,8] = Transpose(%t) {perm=[1, 0]}
//   after:  %b: f32[1,8] = Mul(%x, %six_reciprocal)   (const [0.16666667])
//           %y is %b (both transposes removed; %y is renamed only if it is not a graph output)
//
// Runs after: the folding passes (the rules match constant operands). Needs nothing else.
// Guarantees: the rules below no longer match anywhere (fixed point); graph outputs keep their
// names, shapes and values; shapes of the values that remain do not change.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

bool is_reshape_like(const Node* n) {
  return n && (n->op_type == "Reshape" || n->op_type == "Flatten" || n->op_type == "Squeeze" ||
               n->op_type == "Unsqueeze");
}

std::vector<int64_t> transpose_perm(const Node& n) {
  const Value* x = n.input(0);
  std::vector<int64_t> rev(x ? x->shape.size() : 0);
  std::iota(rev.rbegin(), rev.rend(), int64_t{0});
  return n.attrs.get_ints_or("perm", rev, n.name);
}

bool is_identity_perm(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

/// Replaces `n`'s single output by `x` and removes `n`; false when the output is a graph output.
bool bypass(Graph& graph, Node* n, Value* x) {
  Value* out = n->outputs[0];
  if (out->dtype != x->dtype || out->shape != x->shape) return false;
  if (!forward_value(graph, out, x)) return false;
  erase_unused(graph, {n});
  return true;
}

/// x op c -> x for the neutral element c of Add/Sub/Mul/Div.
bool simplify_neutral(Graph& graph, Node* n) {
  if (n->inputs.size() != 2 || !n->inputs[0] || !n->inputs[1]) return false;
  Value* a = n->inputs[0];
  Value* b = n->inputs[1];
  const std::string& op = n->op_type;
  if (op == "Add") {
    if (is_constant_value(b, 0) && bypass(graph, n, a)) return true;
    if (is_constant_value(a, 0) && bypass(graph, n, b)) return true;
  } else if (op == "Mul") {
    if (is_constant_value(b, 1) && bypass(graph, n, a)) return true;
    if (is_constant_value(a, 1) && bypass(graph, n, b)) return true;
  } else if (op == "Sub") {
    if (is_constant_value(b, 0) && bypass(graph, n, a)) return true;
  } else if (op == "Div") {
    if (is_constant_value(b, 1) && bypass(graph, n, a)) return true;
  }
  return false;
}

/// Div(x, c), c a float constant without zeros or non-finite values -> Mul(x, 1/c).
bool div_to_mul(Graph& graph, Node* n) {
  if (n->op_type != "Div" || n->inputs.size() != 2 || !n->inputs[0]) return false;
  const Tensor* c = constant_of(n->inputs[1]);
  if (!c || !dtype_is_float(c->dtype()) || n->inputs[0]->constant) return false;
  Tensor r(c->dtype(), c->shape());
  for (int64_t i = 0; i < c->numel(); ++i) {
    const double v = c->get_as_double(i);
    if (v == 0 || !std::isfinite(v)) return false;
    r.set_from_double(i, 1.0 / v);
  }
  Value* rc = graph.add_constant(n->inputs[1]->name + ".reciprocal", std::move(r));
  n->op_type = "Mul";
  n->inputs[1] = rc;
  return true;
}

/// Identity(x) and Dropout(x) in inference -> x.
bool remove_identity(Graph& graph, Node* n) {
  if (n->op_type == "Identity") return n->input(0) && bypass(graph, n, n->inputs[0]);
  if (n->op_type != "Dropout" || !n->input(0)) return false;
  if (Value* training = n->input(2)) {
    const auto t = uniform_constant(training);
    if (!t || *t != 0) return false;  // training mode (or unknown): a real dropout
  }
  const UseMap uses(graph);
  for (size_t i = 1; i < n->outputs.size(); ++i)  // the mask must be unused
    if (!uses.users(n->outputs[i]).empty() || uses.is_graph_output(n->outputs[i])) return false;
  return bypass(graph, n, n->inputs[0]);
}

/// A reshape-like op of a reshape-like op -> one Reshape of the first input (or the input itself
/// when the shape comes back); a reshape-like op that keeps the shape -> its input.
bool simplify_reshape(Graph& graph, Node* n) {
  if (!is_reshape_like(n) || !n->input(0) || n->outputs.size() != 1) return false;
  Value* in = n->inputs[0];
  Value* out = n->outputs[0];
  if (in->shape == out->shape && bypass(graph, n, in)) return true;
  Node* inner = producer_of(in);
  if (!is_reshape_like(inner) || !inner->input(0)) return false;
  Value* x = inner->inputs[0];
  if (x->shape == out->shape && bypass(graph, n, x)) {
    erase_unused(graph, {inner});
    return true;
  }
  Tensor shape = Tensor::from_int64s({static_cast<int64_t>(out->shape.size())}, out->shape);
  Value* sc = graph.add_constant(out->name + ".shape", std::move(shape));
  n->op_type = "Reshape";
  n->inputs = {x, sc};
  n->attrs = Attributes{};
  erase_unused(graph, {inner});
  return true;
}

/// Transpose(Transpose(x, p1), p2) -> Transpose(x, q), q[j] = p1[p2[j]] (or x when q is the
/// identity); Transpose(x, identity) -> x.
bool simplify_transpose(Graph& graph, Node* n) {
  if (n->op_type != "Transpose" || !n->input(0)) return false;
  const std::vector<int64_t> p2 = transpose_perm(*n);
  if (is_identity_perm(p2) && bypass(graph, n, n->inputs[0])) return true;
  Node* inner = producer_of(n->inputs[0], "Transpose");
  if (!inner || !inner->input(0)) return false;
  const std::vector<int64_t> p1 = transpose_perm(*inner);
  if (p1.size() != p2.size()) return false;
  std::vector<int64_t> q(p2.size());
  for (size_t j = 0; j < p2.size(); ++j) {
    if (p2[j] < 0 || p2[j] >= static_cast<int64_t>(p1.size())) return false;
    q[j] = p1[static_cast<size_t>(p2[j])];
  }
  Value* x = inner->inputs[0];
  if (is_identity_perm(q) && bypass(graph, n, x)) {
    erase_unused(graph, {inner});
    return true;
  }
  n->inputs[0] = x;
  n->attrs.set("perm", q);
  erase_unused(graph, {inner});
  return true;
}

bool sweep(Graph& graph) {
  bool changed = false;
  std::vector<Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  // Every rewrite removes at most the current node and nodes before it (its producers), which
  // this sweep has already passed, so the snapshot's remaining pointers stay valid.
  for (Node* n : order) {
    if (n->outputs.empty() || n->outputs[0]->constant) continue;  // folded or known
    if (simplify_neutral(graph, n) || div_to_mul(graph, n) || remove_identity(graph, n) ||
        simplify_reshape(graph, n) || simplify_transpose(graph, n))
      changed = true;
  }
  return changed;
}

}  // namespace

bool simplify(Graph& graph) {
  bool changed = false;
  while (sweep(graph)) changed = true;
  return changed;
}

}  // namespace tessel::graph_passes
