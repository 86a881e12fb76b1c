// conv_3d_as_2d: a 3-D Conv (x [N, C, D, H, W], W [M, C/g, KD, KH, KW]) becomes one 2-D Conv
// over the output depths stacked into the batch, because the compiled backends (npu, cpu)
// compute 2-D (NCHW) windows. Output depth od reads input depths od sd + k dd - bd (k < KD), so
// with xp = x zero-padded by [bd, ed] along D (a Pad node, when a pad is non-zero),
//   s_k = Reshape(Transpose(Slice(xp, D: k dd, k dd + (Do - 1) sd + 1, step sd), [0, 2, 1, 3, 4]),
//                 [N Do C, 1, H, W])                    for k < KD
//   x'  = Reshape(Concat(s_0, ..., s_{KD-1}, axis 1), [N Do, C KD, H, W])
//         (channel c KD + k of batch n Do + od is xp[n, c, od sd + k dd])
//   y'  = Conv2d(x', Reshape(W, [M, C/g KD, KH, KW]), B)   H/W kernel, strides, dilations, pads,
//                                                          group g
//   y   = Transpose(Reshape(y', [N, Do, M, Ho, Wo]), [0, 2, 1, 3, 4])
// Exact up to the order of the sum: the 2-D conv visits every tap (c, k, kh, kw) of the 3-D one
// once (ONNX Conv doc; the weight reshape is a view of W's row-major layout, and the channel
// order c KD + k keeps each group's channels contiguous). auto_pad SAME_UPPER / SAME_LOWER /
// VALID is turned into explicit pads from the inferred output shape (as pool_3d_as_2d). A
// constant weight is reshaped at compile time, a run-time one through a Reshape node. Runs in
// driver::compiled_form (for npu and cpu), on shape-inferred input. Guarantees: no Conv of a
// rank-5 input remains; the output keeps its name, shape and values (to fp32 rounding).
#include <fmt/format.h>

#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

bool is_3d_conv(const Node& n) {
  return n.op_type == "Conv" && n.input(0) && n.input(0)->shape.size() == 5 && n.input(1) &&
         n.outputs.size() == 1 && n.outputs[0];
}

void rewrite(Graph& g, Node* n) {
  Value* x = n->input(0);
  Value* w = n->input(1);
  Value* y = n->outputs[0];
  const Shape& xs = x->shape;
  const Shape& ws = w->shape;
  const Shape& ys = y->shape;
  const std::string& nn = n->name;
  if (ws.size() != 5)
    fail("{}: weight '{}' has shape {}, expected rank 5 for a 5-D input", n->describe(), w->name,
         shape_to_string(ws));
  const std::vector<int64_t> k = {ws[2], ws[3], ws[4]};
  const Window3d win = window_3d(*n, k, xs, ys);
  const std::vector<int64_t>& s = win.strides;
  const std::vector<int64_t>& dil = win.dilations;
  const std::vector<int64_t>& pads = win.pads;
  const DType dt = x->dtype;
  auto emit = [&](const std::string& op, std::vector<Value*> ins, Shape shape,
                  Attributes attrs = {}) {
    Value* out = g.add_value(g.unique_value_name(nn + "_" + op), dt, shape);
    Node* m = g.insert_node_before(n, op, g.unique_node_name(nn + "_" + op), std::move(ins), {out},
                                   std::move(attrs));
    ops::infer_and_propagate(*m);
    if (out->shape != shape)
      fail("{}: the 2-D form's {} has shape {}, expected {}", n->describe(), op,
           shape_to_string(out->shape), shape_to_string(shape));
    return out;
  };
  const int64_t N = xs[0], C = xs[1], H = xs[3], W = xs[4];
  const int64_t M = ys[1], Do = ys[2], Ho = ys[3], Wo = ys[4], KD = k[0];
  Value* xp = x;
  if (pads[0] != 0 || pads[3] != 0)
    xp = emit("Pad",
              {x, int64_constant(g, nn + "_dpads", {0, 0, pads[0], 0, 0, 0, 0, pads[3], 0, 0})},
              {N, C, xs[2] + pads[0] + pads[3], H, W});
  std::vector<Value*> slices;
  for (int64_t kk = 0; kk < KD; ++kk) {
    const int64_t start = kk * dil[0];
    Value* sl =
        emit("Slice",
             {xp, int64_constant(g, nn + "_start", {start}),
              int64_constant(g, nn + "_end", {start + (Do - 1) * s[0] + 1}),
              int64_constant(g, nn + "_axis", {2}), int64_constant(g, nn + "_step", {s[0]})},
             {N, C, Do, H, W});
    Attributes perm;
    perm.set("perm", std::vector<int64_t>{0, 2, 1, 3, 4});
    Value* tr = emit("Transpose", {sl}, {N, Do, C, H, W}, perm);
    slices.push_back(emit("Reshape", {tr, int64_constant(g, nn + "_sshape", {N * Do * C, 1, H, W})},
                          {N * Do * C, 1, H, W}));
  }
  Value* stacked = slices[0];
  if (KD > 1) {
    Attributes axis;
    axis.set("axis", int64_t{1});
    stacked = emit("Concat", slices, {N * Do * C, KD, H, W}, axis);
  }
  Value* x4 = emit("Reshape", {stacked, int64_constant(g, nn + "_xshape", {N * Do, C * KD, H, W})},
                   {N * Do, C * KD, H, W});
  const Shape w4s = {ws[0], ws[1] * KD, ws[3], ws[4]};
  Value* w4;
  if (w->constant && !w->producer) {
    w4 = g.add_constant(g.unique_value_name(w->name + "_2d"), w->constant->reshaped(w4s));
  } else {
    w4 = emit("Reshape", {w, int64_constant(g, nn + "_wshape", w4s)}, w4s);
  }
  std::vector<Value*> ins = {x4, w4};
  for (size_t i = 2; i < n->inputs.size(); ++i) ins.push_back(n->inputs[i]);
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k[1], k[2]});
  a.set("strides", std::vector<int64_t>{s[1], s[2]});
  a.set("dilations", std::vector<int64_t>{dil[1], dil[2]});
  a.set("pads", std::vector<int64_t>{pads[1], pads[2], pads[4], pads[5]});
  a.set("group", n->attrs.get_int_or("group", 1, nn));
  Value* y4 = emit("Conv", ins, {N * Do, M, Ho, Wo}, a);
  Value* y5 = emit("Reshape", {y4, int64_constant(g, nn + "_oshape", {N, Do, M, Ho, Wo})},
                   {N, Do, M, Ho, Wo});
  Attributes perm;
  perm.set("perm", std::vector<int64_t>{0, 2, 1, 3, 4});
  reproduce_value(g, y, "Transpose", g.unique_node_name(nn + "_out"), {y5}, perm, n);
  g.remove_node(n);
}

}  // namespace

bool needs_conv_3d_as_2d(const Graph& graph) {
  return any_node(graph, [](const Node& n) { return is_3d_conv(n); });
}

bool conv_3d_as_2d(Graph& graph) {
  return rewrite_matching(
      graph, [](const Node& n) { return is_3d_conv(n); }, rewrite);
}

}  // namespace tessel::graph_passes
