// conv_as_2d: 1-D convolution and pooling become their 2-D forms over a height-1 image, because
// the compiled backends (npu, cpu) compute 2-D (NCHW) windows: for x of shape [N, C, L],
//   Conv / ConvTranspose / MaxPool / AveragePool (x [N, C, L], W [M, C/g, K])
//     -> y = Reshape(Op2d(Reshape(x, [N, C, 1, L]), W [M, C/g, 1, K]), [N, M, L'])
// with the attributes given a leading spatial axis of extent 1: kernel_shape [1, k], strides
// [1, s], dilations [1, d], pads [0, b, 0, e], output_padding [0, p], output_shape [1, L'];
// auto_pad, group, ceil_mode, count_include_pad and storage_order are kept (SAME padding of the
// added axis, kernel 1 and stride 1, is 0). Exact: a window of height 1 over a height-1 image
// visits the same taps in the same order (ONNX Conv/ConvTranspose/MaxPool/AveragePool docs). A
// constant weight is reshaped at compile time; a run-time one through a Reshape node.
// Runs where split_outputs runs for the compiled targets (driver::load_model,
// driver::run_model), on shape-inferred input. Leaves alone a MaxPool whose Indices output is
// used (the compiled targets do not compute it). The Reshapes are views (no kernel). Guarantees:
// none of these ops with a rank-3 input remains (except such a MaxPool).
#include <fmt/format.h>

#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

const char* const kOps[] = {"Conv", "ConvTranspose", "MaxPool", "AveragePool"};

bool is_1d_window_op(const Graph& g, const Node& n) {
  bool op = false;
  for (const char* o : kOps) op |= n.op_type == o;
  if (!op || !n.input(0) || n.input(0)->shape.size() != 3) return false;
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    const Value* extra = n.outputs[i];
    if (!extra) continue;
    if (!g.users(extra).empty()) return false;
    for (const Value* o : g.outputs)
      if (o == extra) return false;
  }
  return true;
}

/// `v` with a 1 inserted before its last entry (per-axis attributes: [a] -> [fill, a]); pads
/// [b, e] -> [0, b, 0, e].
std::vector<int64_t> widen(const std::vector<int64_t>& v, int64_t fill) {
  if (v.size() == 1) return {fill, v[0]};
  if (v.size() == 2) return {0, v[0], 0, v[1]};
  return v;
}

void rewrite(Graph& g, Node* n) {
  Value* x = n->input(0);
  Value* y = n->outputs[0];
  const Shape& xs = x->shape;
  auto emit = [&](const std::string& op, std::vector<Value*> ins, Shape shape, DType dtype,
                  Attributes attrs = {}) {
    Value* out = g.add_value(g.unique_value_name(n->name + "_2d"), dtype, std::move(shape));
    Node* m = g.insert_node_before(n, op, g.unique_node_name(n->name + "_" + op), std::move(ins),
                                   {out}, std::move(attrs));
    ops::infer_and_propagate(*m);
    return out;
  };
  Value* x4 = emit("Reshape", {x, int64_constant(g, n->name + "_shape", {xs[0], xs[1], 1, xs[2]})},
                   {xs[0], xs[1], 1, xs[2]}, x->dtype);
  std::vector<Value*> ins = {x4};
  const bool has_weight = n->op_type == "Conv" || n->op_type == "ConvTranspose";
  if (has_weight) {
    Value* w = n->input(1);
    const Shape& ws = w->shape;
    if (ws.size() != 3)
      fail("{}: weight '{}' has shape {}, expected rank 3 for a 1-D input", n->describe(), w->name,
           shape_to_string(ws));
    const Shape w4s = {ws[0], ws[1], 1, ws[2]};
    if (w->constant && !w->producer) {
      ins.push_back(
          g.add_constant(g.unique_value_name(w->name + "_2d"), w->constant->reshaped(w4s)));
    } else {
      ins.push_back(
          emit("Reshape", {w, int64_constant(g, n->name + "_wshape", w4s)}, w4s, w->dtype));
    }
    for (size_t i = 2; i < n->inputs.size(); ++i) ins.push_back(n->inputs[i]);
  }
  Attributes a = n->attrs;
  for (const char* key : {"kernel_shape", "strides", "dilations"})
    if (a.has(key)) a.set(key, widen(a.get_ints_or(key, {}, n->name), 1));
  if (a.has("output_padding"))
    a.set("output_padding", widen(n->attrs.get_ints_or("output_padding", {}, n->name), 0));
  if (a.has("pads")) a.set("pads", widen(n->attrs.get_ints_or("pads", {}, n->name), 0));
  if (a.has("output_shape")) {
    auto os = n->attrs.get_ints_or("output_shape", {}, n->name);
    a.set("output_shape", std::vector<int64_t>{1, os.back()});
  }
  const Shape& ys = y->shape;
  Value* y4 = emit(n->op_type, ins, {ys[0], ys[1], 1, ys[2]}, y->dtype, a);
  if (y4->shape != Shape{ys[0], ys[1], 1, ys[2]})
    fail("{}: the 2-D form has shape {}, expected [{}, {}, 1, {}]", n->describe(),
         shape_to_string(y4->shape), ys[0], ys[1], ys[2]);
  reproduce_value(g, y, "Reshape", g.unique_node_name(n->name + "_out"),
                  {y4, int64_constant(g, n->name + "_oshape", {ys[0], ys[1], ys[2]})}, {}, n);
  g.remove_node(n);
}

}  // namespace

bool needs_conv_as_2d(const Graph& graph) {
  return any_node(graph, [&graph](const Node& n) { return is_1d_window_op(graph, n); });
}

bool conv_as_2d(Graph& graph) {
  return rewrite_matching(
      graph, [&graph](const Node& n) { return is_1d_window_op(graph, n); }, rewrite);
}

}  // namespace tessel::graph_passes
