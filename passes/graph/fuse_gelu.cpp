// GELU pattern fusion (Hendrycks & Gimpel 2016): x * 0.5 * (1 + erf(x / sqrt 2)) as exporters
// write it (PyTorch, Paddle, TF) -> Gelu(x); the tanh approximation
// x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) -> Gelu(x) {approximate="tanh"}
// (https://onnx.ai/onnx/operators/onnx__Gelu.html, opset 20). Variants accepted: x/sqrt2 or
// x*(1/sqrt2); the 0.5 applied to the product, to (1 + erf) or to x, as Mul 0.5 or Div 2; x^3 as
// Pow(x, 3), x*x*x or x*(x*x). Intermediate values must have no users outside the pattern.
//
//   before: %d: f32[2,16] = Div(%x, %sqrt2)
//           %e: f32[2,16] = Erf(%d)
//           %p: f32[2,16] = Add(%e, %one)
//           %m: f32[2,16] = Mul(%x, %p)
//           %y: f32[2,16] = Mul(%m, %half)
//   after:  %y: f32[2,16] = Gelu(%x)
//
// Runs after: simplify (Div by sqrt2 may have become Mul by 1/sqrt2: both are accepted); before
// fuse_kernels.
// Guarantees: Gelu formed only when `available` allows it; the pattern's final value keeps its
// name and shape; no intermediate of a matched pattern survives.
#include <cmath>

#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kTanhCubic = 0.044715;

struct Match {
  Value* x = nullptr;
  bool tanh = false;
  std::vector<Node*> nodes;
};

/// `v` (used only by `user`) is x*x*x as Pow(x, 3), Mul(Mul(x, x), x) or Mul(x, Mul(x, x)).
Value* match_cube(Value* v, const UseMap& uses, std::vector<Node*>& nodes) {
  Node* n = producer_of(v);
  if (!n || !uses.single_use(v)) return nullptr;
  if (n->op_type == "Pow" && n->inputs.size() == 2 && is_constant_value(n->inputs[1], 3)) {
    nodes.push_back(n);
    return n->inputs[0];
  }
  if (n->op_type != "Mul" || n->inputs.size() != 2) return nullptr;
  for (int k = 0; k < 2; ++k) {
    Value* x = n->inputs[k];
    Node* sq = producer_of(n->inputs[1 - k], "Mul");
    if (sq && sq->inputs.size() == 2 && sq->inputs[0] == x && sq->inputs[1] == x &&
        uses.single_use(n->inputs[1 - k])) {
      nodes.push_back(sq);
      nodes.push_back(n);
      return x;
    }
  }
  return nullptr;
}

/// `p` (used only by `user`) = 1 + erf(x / sqrt 2) or 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)).
bool match_one_plus(Value* p, const Node* user, const UseMap& uses, Match& m) {
  if (!uses.only_used_by(p, {user})) return false;
  Node* add = producer_of(p);
  Value* e = match_add_const(add, 1.0);
  Node* f = producer_of(e);
  if (!e || !f || !uses.single_use(e) || f->inputs.size() != 1 || !f->inputs[0]) return false;
  Value* t = f->inputs[0];
  if (!uses.single_use(t)) return false;
  std::vector<Node*> nodes;
  Value* x = nullptr;
  if (f->op_type == "Erf") {
    Node* s = producer_of(t);
    x = match_scale(s, kInvSqrt2);
    if (!x) return false;
    nodes.push_back(s);
  } else if (f->op_type == "Tanh") {
    Node* s = producer_of(t);
    Value* u = match_scale(s, kSqrt2OverPi);
    Node* sum = producer_of(u, "Add");
    if (!u || !sum || !uses.single_use(u) || sum->inputs.size() != 2) return false;
    for (int k = 0; k < 2 && !x; ++k) {
      Value* cand = sum->inputs[k];
      Value* w = sum->inputs[1 - k];
      Node* wn = producer_of(w);
      Value* c3 = match_scale(wn, kTanhCubic);
      if (!c3 || !uses.single_use(w)) continue;
      std::vector<Node*> cube;
      if (match_cube(c3, uses, cube) != cand) continue;
      x = cand;
      nodes = cube;
      nodes.push_back(wn);
    }
    if (!x) return false;
    nodes.push_back(sum);
    nodes.push_back(s);
    m.tanh = true;
  } else {
    return false;
  }
  nodes.push_back(f);
  nodes.push_back(add);
  for (Node* n : nodes)
    if (n->outputs[0]->shape != x->shape) return false;  // a constant must not broadcast wider
  m.x = x;
  m.nodes = std::move(nodes);
  return true;
}

bool match_gelu(Node* root, const UseMap& uses, Match& m) {
  // (x * p) * 0.5  or  (x * p) / 2
  if (Value* prod = match_scale(root, 0.5)) {
    Node* mul = producer_of(prod, "Mul");
    if (mul && uses.single_use(prod) && mul->inputs.size() == 2)
      for (int k = 0; k < 2; ++k) {
        Match mm;
        if (match_one_plus(mul->inputs[1 - k], mul, uses, mm) && mm.x == mul->inputs[k]) {
          m = std::move(mm);
          m.nodes.push_back(mul);
          m.nodes.push_back(root);
          return true;
        }
      }
  }
  if (root->op_type != "Mul" || root->inputs.size() != 2) return false;
  for (int k = 0; k < 2; ++k) {
    Value* a = root->inputs[k];
    Value* b = root->inputs[1 - k];
    // x * (p * 0.5)
    Node* hp = producer_of(b);
    if (Value* p = match_scale(hp, 0.5); p && uses.single_use(b)) {
      Match mm;
      if (match_one_plus(p, hp, uses, mm) && mm.x == a) {
        m = std::move(mm);
        m.nodes.push_back(hp);
        m.nodes.push_back(root);
        return true;
      }
    }
    // (x * 0.5) * p
    Node* hx = producer_of(a);
    if (Value* x = match_scale(hx, 0.5); x && uses.single_use(a) && a->shape == x->shape) {
      Match mm;
      if (match_one_plus(b, root, uses, mm) && mm.x == x) {
        m = std::move(mm);
        m.nodes.push_back(hx);
        m.nodes.push_back(root);
        return true;
      }
    }
  }
  return false;
}

}  // namespace

bool fuse_gelu(Graph& graph, const OpAvailable& available) {
  if (!op_available(available, "Gelu")) return false;
  return rewrite_nodes(graph, [&](Node* n, const UseMap& uses) {
    if (n->outputs.size() != 1 || n->outputs[0]->constant) return false;
    Match m;
    if (!match_gelu(n, uses, m)) return false;
    Value* out = n->outputs[0];
    if (out->shape != m.x->shape || out->dtype != m.x->dtype || !dtype_is_float(m.x->dtype))
      return false;
    Attributes attrs;
    if (m.tanh) attrs.set("approximate", std::string("tanh"));
    replace_pattern(graph, out, m.nodes, "Gelu", {m.x}, attrs);
    return true;
  });
}

}  // namespace tessel::graph_passes
