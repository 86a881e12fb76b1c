// split_outputs: nodes with several computed outputs become single-output nodes, because the
// compiled backends (npu, cpu) compute one output per node.
//   Split(x) -> y0, y1, ...            -> y_k = Slice(x, start_k, start_k + len_k, axis), the
//                                         lengths taken from the outputs' inferred shapes
//   LayerNormalization(x, s[, b]) -> y, mean, inv_std_dev (mean or inv_std_dev used; ONNX
//   LayerNormalization-17, axes [axis, rank), keepdims shapes)
//                                      -> mean = ReduceMean(x), d = x - mean,
//                                         inv_std_dev = 1 / sqrt(ReduceMean(d d) + epsilon),
//                                         y = d inv_std_dev s (+ b)
//   Dropout(x) -> y, mask (mask used; inference, or training with ratio 0: deterministic)
//                                      -> y = Identity(x), mask = Expand(true, shape of x)
//   TopK(x, k) -> values, indices (k a constant, float x; k <= 64; the compiled targets have no
//   TopK of their own)                 -> for j < k: v_j = ReduceMax(rest, axis), i_j =
//                                         ArgMax(rest, axis) (first of ties: the lower index, as
//                                         the spec orders equal values), rest = Where(positions ==
//                                         i_j, -inf, rest); values = Concat(v_j), indices =
//                                         Concat(i_j) (ReduceMin/ArgMin/+inf for largest=0). An
//                                         input that holds -inf itself may then report the index
//                                         of an already taken -inf.
// Every output keeps its value (name, shape, uses); the original node is removed. Runs where
// fold_control runs for the compiled targets (driver::load_model, driver::run_model), on
// shape-inferred input; the graph passes after it see ordinary single-output nodes (fuse_layer_norm
// leaves this LayerNormalization decomposed, its mean being used). Guarantees: no Split with more
// than one output, no LayerNormalization with a used second or third output, no deterministic
// Dropout with a used mask and no TopK of a constant k <= 64 on a float input remain.
#include <fmt/format.h>

#include <limits>

#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

bool used(const Graph& g, const Value* v) {
  if (!v) return false;
  for (const Value* o : g.outputs)
    if (o == v) return true;
  return !g.users(v).empty();
}

/// Rewrites one node: emits the replacement nodes before it and moves its outputs onto them.
class Splitter {
 public:
  Splitter(Graph& g, Node* at) : g_(g), at_(at) {}

  Value* emit(const std::string& op, std::vector<Value*> ins, Attributes attrs = {},
              Value* out = nullptr) {
    const std::string base = at_->name + "_" + op;
    if (!out) out = g_.add_value(g_.unique_value_name(base), DType::undefined, {});
    Node* n = g_.insert_node_before(at_, op, g_.unique_node_name(base), std::move(ins), {out},
                                    std::move(attrs));
    ops::infer_and_propagate(*n);
    return out;
  }

  Value* i64s(const std::vector<int64_t>& v) {
    return g_.add_constant(g_.unique_value_name(at_->name + "_i"),
                           Tensor::from_int64s({static_cast<int64_t>(v.size())}, v));
  }

  /// Output `k` of the node, detached from it (a fresh unused value takes its slot) so a new node
  /// can produce it.
  Value* take_output(size_t k) {
    Value* original = at_->outputs[k];
    Value* dummy = g_.add_value(g_.unique_value_name(original->name + "_split"), original->dtype,
                                original->shape);
    dummy->producer = at_;
    dummy->producer_output = static_cast<int>(k);
    at_->outputs[k] = dummy;
    original->producer = nullptr;
    return original;
  }

  void finish() { g_.remove_node(at_); }

 private:
  Graph& g_;
  Node* at_;
};

bool split_split(Graph& g, Node* n) {
  if (n->outputs.size() < 2) return false;
  const Value* x = n->input(0);
  int64_t axis = n->attrs.get_int_or("axis", 0, n->name);
  if (axis < 0) axis += static_cast<int64_t>(x->shape.size());
  Splitter s(g, n);
  int64_t start = 0;
  for (size_t k = 0; k < n->outputs.size(); ++k) {
    const int64_t len = n->outputs[k]->shape.at(axis);
    Value* out = s.take_output(k);
    s.emit("Slice", {n->inputs[0], s.i64s({start}), s.i64s({start + len}), s.i64s({axis})}, {},
           out);
    start += len;
  }
  s.finish();
  return true;
}

bool split_layer_norm(Graph& g, Node* n) {
  if (n->outputs.size() < 2) return false;
  if (!used(g, n->outputs[1]) && !(n->outputs.size() > 2 && used(g, n->outputs[2]))) return false;
  Value* x = n->inputs[0];
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  int64_t axis = n->attrs.get_int_or("axis", -1, n->name);
  if (axis < 0) axis += rank;
  const double eps = n->attrs.get_float_or("epsilon", 1e-5f, n->name);
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  Attributes reduce;
  reduce.set("axes", axes);
  reduce.set("keepdims", int64_t{1});
  Splitter s(g, n);
  Value* y = s.take_output(0);
  Value* mean_out = used(g, n->outputs[1]) ? s.take_output(1) : nullptr;
  Value* inv_out = n->outputs.size() > 2 && used(g, n->outputs[2]) ? s.take_output(2) : nullptr;
  Value* mean = s.emit("ReduceMean", {x}, reduce, mean_out);
  Value* d = s.emit("Sub", {x, mean});
  Value* var = s.emit("ReduceMean", {s.emit("Mul", {d, d})}, reduce);
  Value* e = g.add_constant(g.unique_value_name(n->name + "_epsilon"),
                            Tensor::scalar_f32(static_cast<float>(eps)));
  Value* inv = s.emit("Reciprocal", {s.emit("Sqrt", {s.emit("Add", {var, e})})}, {}, inv_out);
  Value* scaled =
      s.emit("Mul", {s.emit("Mul", {d, inv}), n->inputs[1]}, {}, n->input(2) ? nullptr : y);
  if (n->input(2)) s.emit("Add", {scaled, n->inputs[2]}, {}, y);
  s.finish();
  return true;
}

/// Dropout whose mask is used, when it is deterministic (inference: training_mode absent or a
/// constant false; or ratio a constant 0): output = Identity(data), mask = Expand(true, shape).
bool deterministic_dropout(const Node& n) {
  const Tensor* r = constant_of(n.input(1));
  if (r && r->numel() == 1 && r->get_as_double(0) == 0) return true;
  const Value* training = n.input(2);
  if (!training) return true;
  const Tensor* t = constant_of(training);
  return t && t->numel() == 1 && t->get_as_double(0) == 0;
}

bool split_dropout(Graph& g, Node* n) {
  if (n->outputs.size() < 2 || !used(g, n->outputs[1]) || !deterministic_dropout(*n)) return false;
  NodeExpander e(g, n);
  if (used(g, n->outputs[0])) e.emit("Identity", {n->inputs[0]}, {}, e.take_output(0));
  Tensor yes(DType::boolean, {});
  yes.set_from_double(0, 1);
  e.emit("Expand", {e.constant(std::move(yes)), e.i64s(n->outputs[1]->shape)}, {},
         e.take_output(1));
  e.finish();
  return true;
}

/// The most values a TopK is expanded for (one ReduceMax, ArgMax and Where per value).
constexpr int64_t kMaxExpandedTopK = 64;

/// TopK with a constant k >= 1 on a float input: what split_topk expands.
bool expandable_topk(const Node& n) {
  const Tensor* kt = constant_of(n.input(1));
  return kt && kt->numel() == 1 && kt->get_as_double(0) >= 1 && dtype_is_float(n.inputs[0]->dtype);
}

bool split_topk(Graph& g, Node* n) {
  if (!expandable_topk(*n)) return false;
  Value* x = n->inputs[0];
  const int64_t k = static_cast<int64_t>(constant_of(n->input(1))->get_as_double(0));
  if (k > kMaxExpandedTopK)
    throw Unsupported(fmt::format("{}: TopK with k = {} (the compiled targets take k <= {})",
                                  n->describe(), k, kMaxExpandedTopK));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  int64_t axis = n->attrs.get_int_or("axis", -1, n->name);
  if (axis < 0) axis += rank;
  const bool largest = n->attrs.get_int_or("largest", 1, n->name) != 0;
  NodeExpander e(g, n);
  Shape iota_shape(static_cast<size_t>(rank), 1);
  iota_shape[axis] = x->shape[axis];
  Tensor iota(DType::i64, iota_shape);
  for (int64_t i = 0; i < x->shape[axis]; ++i) iota.set_from_double(i, static_cast<double>(i));
  Value* positions = e.constant(std::move(iota));
  Value* fill = e.scalar(
      largest ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity(),
      x->dtype);
  Attributes red, arg;
  red.set("axes", std::vector<int64_t>{axis});
  red.set("keepdims", int64_t{1});
  arg.set("axis", axis);
  arg.set("keepdims", int64_t{1});
  std::vector<Value*> values, indices;
  Value* rest = x;
  for (int64_t j = 0; j < k; ++j) {
    values.push_back(e.emit(largest ? "ReduceMax" : "ReduceMin", {rest}, red));
    indices.push_back(e.emit(largest ? "ArgMax" : "ArgMin", {rest}, arg));
    if (j + 1 < k)
      rest = e.emit("Where", {e.emit("Equal", {positions, indices.back()}), fill, rest});
  }
  Attributes cat;
  cat.set("axis", axis);
  auto join = [&](const std::vector<Value*>& parts, size_t slot) {
    if (!used(g, n->outputs[slot])) return;
    Value* out = e.take_output(slot);
    if (parts.size() == 1)
      e.emit("Identity", {parts[0]}, {}, out);
    else
      e.emit("Concat", parts, cat, out);
  };
  join(values, 0);
  join(indices, 1);
  e.finish();
  return true;
}

}  // namespace

bool needs_split_outputs(const Graph& graph) {
  for (const auto& n : graph.nodes()) {
    if (n->op_type == "Split" && n->outputs.size() > 1) return true;
    if (n->op_type == "LayerNormalization" && n->outputs.size() > 1) {
      if (used(graph, n->outputs[1])) return true;
      if (n->outputs.size() > 2 && used(graph, n->outputs[2])) return true;
    }
    if (n->op_type == "Dropout" && n->outputs.size() > 1 && used(graph, n->outputs[1]) &&
        deterministic_dropout(*n))
      return true;
    if (n->op_type == "TopK" && expandable_topk(*n)) return true;
  }
  return false;
}

bool split_outputs(Graph& graph) {
  std::vector<Node*> todo;
  for (const auto& n : graph.nodes()) todo.push_back(n.get());
  bool changed = false;
  for (Node* n : todo) {
    if (n->op_type == "Split")
      changed |= split_split(graph, n);
    else if (n->op_type == "LayerNormalization")
      changed |= split_layer_norm(graph, n);
    else if (n->op_type == "Dropout")
      changed |= split_dropout(graph, n);
    else if (n->op_type == "TopK")
      changed |= split_topk(graph, n);
  }
  return changed;
}

}  // namespace tessel::graph_passes
