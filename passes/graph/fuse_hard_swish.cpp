// Hard-sigmoid and hard-swish pattern fusion (MobileNetV3, Howard et al. 2019: h-swish(x) =
// x * ReLU6(x + 3) / 6) into the ONNX ops HardSigmoid (alpha 1/6, beta 0.5) and HardSwish
// (https://onnx.ai/onnx/operators/onnx__HardSwish.html). Rules in graph_passes.h; intermediate
// values must have no users outside the pattern.
//
//   before: %a: f32[1,8,24,96] = Add(%x, %three)
//           %c: f32[1,8,24,96] = Clip(%a, %zero, %six)
//           %m: f32[1,8,24,96] = Mul(%x, %c)
//           %y: f32[1,8,24,96] = Div(%m, %six)
//   after:  %y: f32[1,8,24,96] = HardSwish(%x)
//
// Runs after: simplify (it accepts Div by 6 and Mul by 1/6 alike, and the x*1 simplify removes
// would hide x); before fuse_kernels (which groups the fused ops as elementwise).
// Guarantees: HardSwish/HardSigmoid formed only when `available` allows them; the pattern's final
// value keeps its name and shape; no intermediate of a matched pattern survives.
#include <cmath>

#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

constexpr double kSixth = 1.0 / 6.0;

/// `v` = Clip(x + 3, 0, 6) with the Add and Clip used only inside the pattern: x (and the two
/// nodes appended to `nodes`), else null.
Value* match_relu6_shift(Value* v, const UseMap& uses, std::vector<Node*>& nodes,
                         const std::vector<const Node*>& clip_users) {
  Node* clip = producer_of(v, "Clip");
  if (!clip || clip->inputs.size() != 3 || !clip->inputs[0]) return nullptr;
  if (!is_constant_value(clip->inputs[1], 0) || !is_constant_value(clip->inputs[2], 6))
    return nullptr;
  if (!uses.only_used_by(v, clip_users)) return nullptr;
  Node* add = producer_of(clip->inputs[0]);
  Value* x = match_add_const(add, 3.0);
  if (!x || !uses.single_use(clip->inputs[0])) return nullptr;
  if (clip->inputs[0]->shape != x->shape || v->shape != x->shape) return nullptr;
  nodes.push_back(add);
  nodes.push_back(clip);
  return x;
}

bool float_same_shape(const Value* out, const Value* x) {
  return out->dtype == x->dtype && dtype_is_float(x->dtype) && out->shape == x->shape;
}

/// `root` computes x * Clip(x + 3, 0, 6) / 6 in one of its associations; fills `nodes`.
Value* match_hard_swish_chain(Node* root, const UseMap& uses, std::vector<Node*>& nodes) {
  // (x * clip) / 6   or   (x * clip) * (1/6)
  if (Value* m = match_scale(root, kSixth)) {
    Node* mul = producer_of(m, "Mul");
    if (mul && uses.single_use(m) && mul->inputs.size() == 2) {
      for (int k = 0; k < 2; ++k) {
        Value* x = mul->inputs[k];
        Value* c = mul->inputs[1 - k];
        std::vector<Node*> inner;
        Value* cx = match_relu6_shift(c, uses, inner, {mul});
        if (cx && cx == x && m->shape == x->shape) {
          nodes = inner;
          nodes.push_back(mul);
          nodes.push_back(root);
          return x;
        }
      }
    }
  }
  // (x / 6) * clip   or   (x * (1/6)) * clip
  if (root->op_type == "Mul" && root->inputs.size() == 2) {
    for (int k = 0; k < 2; ++k) {
      Value* d = root->inputs[k];
      Value* c = root->inputs[1 - k];
      Node* scale = producer_of(d);
      Value* x = match_scale(scale, kSixth);
      if (!x || !uses.single_use(d) || d->shape != x->shape) continue;
      std::vector<Node*> inner;
      Value* cx = match_relu6_shift(c, uses, inner, {root});
      if (cx == x) {
        nodes = inner;
        nodes.push_back(scale);
        nodes.push_back(root);
        return x;
      }
    }
  }
  return nullptr;
}

bool rewrite(Graph& graph, Node* n, const UseMap& uses, const OpAvailable& available) {
  if (n->outputs.size() != 1 || n->outputs[0]->constant) return false;
  Value* out = n->outputs[0];
  // x * clip(x+3, 0, 6) / 6 -> HardSwish(x)
  if (op_available(available, "HardSwish")) {
    std::vector<Node*> nodes;
    if (Value* x = match_hard_swish_chain(n, uses, nodes); x && float_same_shape(out, x)) {
      replace_pattern(graph, out, nodes, "HardSwish", {x}, {});
      return true;
    }
  }
  // clip(x+3, 0, 6) / 6 -> HardSigmoid(x) {alpha=1/6, beta=0.5}
  if (op_available(available, "HardSigmoid")) {
    if (Value* c = match_scale(n, kSixth)) {
      std::vector<Node*> nodes;
      if (Value* x = match_relu6_shift(c, uses, nodes, {n}); x && float_same_shape(out, x)) {
        nodes.push_back(n);
        Attributes attrs;
        attrs.set("alpha", static_cast<float>(kSixth));
        attrs.set("beta", 0.5f);
        replace_pattern(graph, out, nodes, "HardSigmoid", {x}, attrs);
        return true;
      }
    }
  }
  // x * HardSigmoid(x) {alpha=1/6, beta=0.5} -> HardSwish(x)
  if (op_available(available, "HardSwish") && n->op_type == "Mul" && n->inputs.size() == 2) {
    for (int k = 0; k < 2; ++k) {
      Value* x = n->inputs[k];
      Value* g = n->inputs[1 - k];
      Node* hs = producer_of(g, "HardSigmoid");
      if (!x || !hs || hs->input(0) != x || !uses.single_use(g)) continue;
      const double alpha = hs->attrs.get_float_or("alpha", 0.2f, hs->name);
      const double beta = hs->attrs.get_float_or("beta", 0.5f, hs->name);
      if (std::abs(alpha - kSixth) > 1e-6 * kSixth || beta != 0.5) continue;
      if (!float_same_shape(out, x)) continue;
      replace_pattern(graph, out, {hs, n}, "HardSwish", {x}, {});
      return true;
    }
  }
  return false;
}

}  // namespace

bool fuse_hard_swish(Graph& graph, const OpAvailable& available) {
  return rewrite_nodes(
      graph, [&](Node* n, const UseMap& uses) { return rewrite(graph, n, uses, available); });
}

}  // namespace tessel::graph_passes
