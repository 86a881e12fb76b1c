// int8 MaxPool: a DequantizeLinear read only by a MaxPool moves below it, so the MaxPool takes the
// int8 (or uint8) values and the DQ dequantises its (smaller) output:
//
//   before: %xf: f32[1,64,112,112] = DequantizeLinear(%xq, %s, %z)
//           %p:  f32[1,64,56,56]   = MaxPool(%xf) {kernel_shape=[3, 3], strides=[2, 2], ...}
//   after:  %p_int8: u8[1,64,56,56] = MaxPool(%xq) {kernel_shape=[3, 3], strides=[2, 2], ...}
//           %p:  f32[1,64,56,56]   = DequantizeLinear(%p_int8, %s, %z)
//
// Exact, not approximately equal: with every scale > 0, DequantizeLinear (x - z) * s is
// non-decreasing in x (and so is its fp32, or fp16, rounding), and max(f(a), f(b)) = f(max(a, b))
// for any non-decreasing f; MaxPool's padding is ignored (-inf) in both forms, so every output
// element is the same number. ONNX Runtime's QDQ transformer drops the DQ/Q around a MaxPool when
// the two share their parameters (DropQDQNodesRules); this form needs no Q after the MaxPool and
// keeps whatever follows (in a `tessel quantize` model a QuantizeLinear, which fuse_kernels then
// fuses with the moved DQ into one vector kernel on the pooled tensor).
//
// Conditions: the DQ's x is int8 or uint8, its scale a float32 constant with every element > 0
// and normal, its zero point absent or constant; per tensor, or per axis 1 (the channels, which
// MaxPool keeps apart); the DQ's output is read only by the MaxPool and is not a graph output; the
// MaxPool's Indices output is absent or unused. Only for targets with int8 kernels (`available`
// has QLinearConv: their MaxPool takes int8 tensors).
//
// Runs after fold_qdq (which folds the DQ -> Conv -> Q groups; this pass touches only DQs read by
// a MaxPool) and before constant folding. Guarantees: the MaxPool's output keeps its name, dtype,
// shape and values; the graph stays topologically ordered.
#include <cmath>

#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

/// The DequantizeLinear feeding MaxPool `mp` when the pattern above matches, else null.
Node* movable_dq(const UseMap& uses, const Node& mp) {
  if (mp.op_type != "MaxPool" || mp.outputs.empty() || !mp.outputs[0]) return nullptr;
  for (size_t i = 1; i < mp.outputs.size(); ++i)
    if (mp.outputs[i] &&
        (uses.is_graph_output(mp.outputs[i]) || !uses.users(mp.outputs[i]).empty()))
      return nullptr;
  Node* dq = producer_of(mp.input(0), "DequantizeLinear");
  if (!dq || dq->outputs.size() != 1) return nullptr;
  const Value* xf = dq->outputs[0];
  if (uses.is_graph_output(xf) || uses.users(xf).size() != 1) return nullptr;
  const Value* xq = dq->input(0);
  if (!xq || (xq->dtype != DType::i8 && xq->dtype != DType::u8)) return nullptr;
  const Value* sv = dq->input(1);
  const Tensor* s = sv ? constant_of(sv) : nullptr;
  if (!s || s->dtype() != DType::f32 || s->numel() < 1) return nullptr;
  for (int64_t k = 0; k < s->numel(); ++k) {
    const double v = s->get_as_double(k);
    if (!(std::isnormal(v) && v > 0)) return nullptr;
  }
  if (dq->input(2) && !constant_of(dq->input(2))) return nullptr;
  if (dq->attrs.get_int_or("block_size", 0, dq->name) != 0) return nullptr;
  if (s->numel() > 1) {
    const int64_t rank = static_cast<int64_t>(xq->shape.size());
    int64_t axis = dq->attrs.get_int_or("axis", 1, dq->name);
    if (axis < 0) axis += rank;
    if (axis != 1) return nullptr;
  }
  return dq;
}

}  // namespace

bool qdq_maxpool(Graph& graph, const OpAvailable& available) {
  if (!op_available(available, "QLinearConv")) return false;
  if (!any_node(graph, [](const Node& n) { return n.op_type == "DequantizeLinear"; }))
    return false;  // a float model: nothing to move (and no use map to build)
  return rewrite_nodes(graph, [&](Node* mp, const UseMap& uses) {
    Node* dq = movable_dq(uses, *mp);
    if (!dq) return false;
    Value* xq = dq->inputs[0];
    Value* out = mp->outputs[0];
    const std::string dq_name = dq->name;
    const std::vector<Value*> params(dq->inputs.begin() + 1, dq->inputs.end());
    const Attributes dq_attrs = dq->attrs;
    // The MaxPool reads xq and writes a new int8 value; the DQ (recreated after it, same name)
    // writes the MaxPool's old output.
    Value* pooled =
        graph.add_value(graph.unique_value_name(out->name + "_int8"), xq->dtype, out->shape);
    retarget_output(graph, mp, 0, pooled);
    mp->inputs[0] = xq;
    graph.remove_node(dq);
    Node* after = nullptr;
    const auto& nodes = graph.nodes();
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].get() == mp) after = i + 1 < nodes.size() ? nodes[i + 1].get() : nullptr;
    std::vector<Value*> ins = {pooled};
    ins.insert(ins.end(), params.begin(), params.end());
    if (after)
      graph.insert_node_before(after, "DequantizeLinear", dq_name, ins, {out}, dq_attrs);
    else
      graph.add_node("DequantizeLinear", dq_name, ins, {out}, dq_attrs);
    return true;
  });
}

}  // namespace tessel::graph_passes
