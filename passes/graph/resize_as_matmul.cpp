// resize_as_matmul: a Resize the compiled backends do not compile as pixel repetition
// (lower::resize_repeats_pixels) becomes one MatMul by a constant interpolation matrix per
// resized axis (ONNX Resize, opset 11-17: linear, cubic and nearest in every nearest_mode and
// coordinate_transformation_mode, cubic_coeff_a, exclude_outside, tf_crop_and_resize with
// extrapolation_value). Each axis of a Resize is separable: output coordinate o of axis d reads
// sum_i M_d[o, i] x[.., i, ..], with M_d's rows the reference kernel's own taps and weights
// (ops::resize_axis_matrices: 1, 2 or 4 taps per row, taps clamped to the edge summed). For x of
// shape S and axis d (in -> out), last axis first:
//   d = last:  y = Reshape(MatMul(Reshape(x, [P, in]), M_d^T [in, out]), S with S[d] = out)
//   otherwise: y = Reshape(MatMul(M_d [out, in], Reshape(x, [P, in, Q])), S with S[d] = out)
// (P, Q: the products of the dims before and after d; the Reshapes are views). An axis whose
// matrix is the identity is skipped. With tf_crop_and_resize, an output element where some axis
// is outside the roi has an all-zero row on that axis, so the products give 0 there and an Add
// of a constant [.., out_d, ..] mask times extrapolation_value (broadcast over the other axes)
// sets it; omitted when extrapolation_value is 0 or nothing is outside. The MatMuls run on the
// cube (npu) and the GEMM kernels (cpu); the per-axis matrices cost in x out MACs per row, which
// for the usual 2x upsampling of a feature map is a small multiple of the layer's own work.
// Runs in driver::compiled_form (for npu and cpu), on shape-inferred input whose scales / sizes /
// roi are constants (as shape inference requires). Leaves alone a Resize of a non-float tensor.
// Guarantees: no Resize remains other than pixel repetition and non-float ones; the Resize's
// output keeps its name, shape and values (to the fp32 rounding of the weights and the sums).
#include <fmt/format.h>

#include "compiler/lower/op_compute.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/resize.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

bool rewritten(const Node& n) {
  if (n.op_type != "Resize" || !n.input(0) || n.outputs.empty() || !n.outputs[0]) return false;
  if (!dtype_is_float(n.input(0)->dtype)) return false;
  return !lower::resize_repeats_pixels(n);
}

void rewrite(Graph& g, Node* n) {
  Value* x = n->input(0);
  Value* y = n->outputs[0];
  const DType dt = x->dtype;
  const auto mats = ops::resize_axis_matrices(*n);
  const double extrapolation = ops::resize_extrapolation_value(*n);
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  auto emit = [&](const std::string& op, std::vector<Value*> ins, Shape shape) {
    Value* out = g.add_value(g.unique_value_name(n->name + "_" + op), dt, std::move(shape));
    Node* m =
        g.insert_node_before(n, op, g.unique_node_name(n->name + "_" + op), std::move(ins), {out});
    ops::infer_and_propagate(*m);
    return out;
  };
  auto reshape = [&](Value* v, const Shape& s) {
    if (v->shape == s) return v;
    return emit("Reshape", {v, int64_constant(g, n->name + "_shape", s)}, s);
  };
  auto constant = [&](const std::string& base, const Shape& s, const std::vector<float>& data) {
    Tensor t = Tensor::from_floats(s, data);
    if (dt != DType::f32) t = t.cast(dt);
    return g.add_constant(g.unique_value_name(n->name + base), std::move(t));
  };
  Value* cur = x;
  Shape shape = x->shape;
  for (int64_t d = rank - 1; d >= 0; --d) {
    const ops::ResizeAxisMatrix& m = mats[d];
    if (m.identity()) continue;
    int64_t P = 1, Q = 1;
    for (int64_t k = 0; k < d; ++k) P *= shape[k];
    for (int64_t k = d + 1; k < rank; ++k) Q *= shape[k];
    Shape next = shape;
    next[d] = m.out;
    Value* prod;
    if (d == rank - 1) {
      std::vector<float> mt(static_cast<size_t>(m.in * m.out));
      for (int64_t o = 0; o < m.out; ++o)
        for (int64_t i = 0; i < m.in; ++i)
          mt[i * m.out + o] = static_cast<float>(m.weights[o * m.in + i]);
      Value* w = constant(fmt::format("_m{}", d), {m.in, m.out}, mt);
      prod = emit("MatMul", {reshape(cur, {P, m.in}), w}, {P, m.out});
    } else {
      std::vector<float> mw(m.weights.begin(), m.weights.end());
      Value* w = constant(fmt::format("_m{}", d), {m.out, m.in}, mw);
      const Shape s3 = P == 1 ? Shape{m.in, Q} : Shape{P, m.in, Q};
      const Shape o3 = P == 1 ? Shape{m.out, Q} : Shape{P, m.out, Q};
      prod = emit("MatMul", {w, reshape(cur, s3)}, o3);
    }
    cur = reshape(prod, next);
    shape = next;
  }
  // tf_crop_and_resize: extrapolation_value where any axis is outside the roi.
  bool any_outside = false;
  Shape mask_shape(rank, 1);
  for (int64_t d = 0; d < rank; ++d)
    for (bool o : mats[d].outside)
      if (o) {
        any_outside = true;
        mask_shape[d] = mats[d].out;
      }
  if (any_outside && extrapolation != 0) {
    const int64_t count = shape_numel(mask_shape);
    std::vector<float> mask(static_cast<size_t>(count), 0.0f);
    for (int64_t e = 0; e < count; ++e) {
      int64_t r = e;
      bool out = false;
      for (int64_t d = rank; d-- > 0;) {
        const int64_t i = r % mask_shape[d];
        r /= mask_shape[d];
        if (mask_shape[d] > 1 && mats[d].outside[i]) out = true;
      }
      if (out) mask[e] = static_cast<float>(extrapolation);
    }
    cur = emit("Add", {cur, constant("_extrapolation", mask_shape, mask)}, shape);
  }
  if (cur->shape != y->shape)
    fail("{}: the MatMul form has shape {}, expected {}", n->describe(),
         shape_to_string(cur->shape), shape_to_string(y->shape));
  if (cur == x) {  // every axis the identity
    reproduce_value(g, y, "Identity", g.unique_node_name(n->name + "_identity"), {x}, {}, n);
  } else {
    // The last node producing `cur` becomes y's producer: y keeps its name.
    Node* last = cur->producer;
    std::vector<Value*> ins = last->inputs;
    const std::string op = last->op_type;
    reproduce_value(g, y, op, g.unique_node_name(n->name + "_out"), ins, last->attrs, n);
    g.remove_node(last);
  }
  g.remove_node(n);
}

}  // namespace

bool needs_resize_as_matmul(const Graph& graph) {
  return any_node(graph, [](const Node& n) { return rewritten(n); });
}

bool resize_as_matmul(Graph& graph) {
  return rewrite_matching(
      graph, [](const Node& n) { return rewritten(n); }, rewrite);
}

}  // namespace tessel::graph_passes
