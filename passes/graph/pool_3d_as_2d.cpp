// pool_3d_as_2d: 3-D MaxPool and AveragePool (x [N, C, D, H, W]) become two 2-D pools over views
// of x, because the compiled backends (npu, cpu) compute 2-D (NCHW) windows. A pooling window
// over (D, H, W) is the box product of its per-axis windows, and max and the per-axis averages
// are separable over a box:
//   y1 = Pool2d(Reshape(x, [N, C*D, H, W]))     kernel [kh, kw], the H/W strides, dilations, pads
//   y2 = Pool2d(Reshape(y1, [N, C, D, Ho*Wo]))  kernel [kd, 1], stride [sd, 1], dilation [dd, 1],
//                                               pads [bd, 0, ed, 0]
//   y  = Reshape(y2, [N, C, Do, Ho, Wo])
// ceil_mode and count_include_pad are kept on both (ONNX MaxPool / AveragePool docs): the
// average of a box is the average over D of the averages over (H, W), and the box's count of
// elements (count_include_pad 0: of valid elements; 1: of elements inside the padded input) is
// the product of the per-axis counts, each of which the 2-D pool applies on its own axis.
// auto_pad SAME_UPPER / SAME_LOWER / VALID is turned into explicit pads from the inferred output
// shape (total = max(0, (o - 1) s + (k - 1) d + 1 - i), the extra one at the end for SAME_UPPER,
// at the start for SAME_LOWER). Runs in driver::compiled_form (for npu and cpu), on
// shape-inferred input. Leaves alone a MaxPool whose Indices output is used (the compiled targets
// do not compute it). The Reshapes are views. Guarantees: no MaxPool / AveragePool of a rank-5
// input remains (except such a MaxPool); outputs keep their names, shapes and values.
#include <fmt/format.h>

#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

bool is_3d_pool(const Graph& g, const Node& n) {
  if (n.op_type != "MaxPool" && n.op_type != "AveragePool") return false;
  if (!n.input(0) || n.input(0)->shape.size() != 5 || n.outputs.empty() || !n.outputs[0])
    return false;
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    const Value* extra = n.outputs[i];
    if (!extra) continue;
    if (!g.users(extra).empty()) return false;
    for (const Value* o : g.outputs)
      if (o == extra) return false;
  }
  return true;
}

void rewrite(Graph& g, Node* n) {
  Value* x = n->input(0);
  Value* y = n->outputs[0];
  const Shape& xs = x->shape;
  const Shape& ys = y->shape;
  const std::string& nn = n->name;
  const auto k = n->attrs.get_ints_or("kernel_shape", {}, nn);
  if (k.size() != 3)
    fail("{}: kernel_shape has {} entries, expected 3 for a 5-D input", n->describe(), k.size());
  const Window3d win = window_3d(*n, k, xs, ys);
  const std::vector<int64_t>& s = win.strides;
  const std::vector<int64_t>& dil = win.dilations;
  const std::vector<int64_t>& pads = win.pads;
  auto emit = [&](const std::string& op, std::vector<Value*> ins, Shape shape,
                  Attributes attrs = {}) {
    Value* out = g.add_value(g.unique_value_name(nn + "_" + op), x->dtype, std::move(shape));
    Node* m = g.insert_node_before(n, op, g.unique_node_name(nn + "_" + op), std::move(ins), {out},
                                   std::move(attrs));
    ops::infer_and_propagate(*m);
    return out;
  };
  auto pool_attrs = [&](std::vector<int64_t> kernel, std::vector<int64_t> strides,
                        std::vector<int64_t> dilations, std::vector<int64_t> p) {
    Attributes a;
    for (const char* key : {"ceil_mode", "count_include_pad"})
      if (n->attrs.has(key)) a.set(key, n->attrs.get_int_or(key, 0, nn));
    a.set("kernel_shape", std::move(kernel));
    a.set("strides", std::move(strides));
    if (n->attrs.has("dilations")) a.set("dilations", std::move(dilations));
    a.set("pads", std::move(p));
    return a;
  };
  const int64_t N = xs[0], C = xs[1], D = xs[2], Do = ys[2], Ho = ys[3], Wo = ys[4];
  Value* x4 = emit("Reshape", {x, int64_constant(g, nn + "_shape", {N, C * D, xs[3], xs[4]})},
                   {N, C * D, xs[3], xs[4]});
  Value* y1 = emit(n->op_type, {x4}, {N, C * D, Ho, Wo},
                   pool_attrs({k[1], k[2]}, {s[1], s[2]}, {dil[1], dil[2]},
                              {pads[1], pads[2], pads[4], pads[5]}));
  if (y1->shape != Shape{N, C * D, Ho, Wo})
    fail("{}: the H/W pool has shape {}, expected [{}, {}, {}, {}]", n->describe(),
         shape_to_string(y1->shape), N, C * D, Ho, Wo);
  Value* y1r = emit("Reshape", {y1, int64_constant(g, nn + "_dshape", {N, C, D, Ho * Wo})},
                    {N, C, D, Ho * Wo});
  Value* y2 = emit(n->op_type, {y1r}, {N, C, Do, Ho * Wo},
                   pool_attrs({k[0], 1}, {s[0], 1}, {dil[0], 1}, {pads[0], 0, pads[3], 0}));
  if (y2->shape != Shape{N, C, Do, Ho * Wo})
    fail("{}: the D pool has shape {}, expected [{}, {}, {}, {}]", n->describe(),
         shape_to_string(y2->shape), N, C, Do, Ho * Wo);
  reproduce_value(g, y, "Reshape", g.unique_node_name(nn + "_out"),
                  {y2, int64_constant(g, nn + "_oshape", {N, C, Do, Ho, Wo})}, {}, n);
  g.remove_node(n);
}

}  // namespace

bool needs_pool_3d_as_2d(const Graph& graph) {
  return any_node(graph, [&graph](const Node& n) { return is_3d_pool(graph, n); });
}

bool pool_3d_as_2d(Graph& graph) {
  return rewrite_matching(
      graph, [&graph](const Node& n) { return is_3d_pool(graph, n); }, rewrite);
}

}  // namespace tessel::graph_passes
