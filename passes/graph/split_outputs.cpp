// split_outputs: nodes with several computed outputs become single-output nodes, because the
// compiled backends (npu, cpu) compute one output per node.
//   Split(x) -> y0, y1, ...            -> y_k = Slice(x, start_k, start_k + len_k, axis), the
//                                         lengths taken from the outputs' inferred shapes
//   LayerNormalization(x, s[, b]) -> y, mean, inv_std_dev (mean or inv_std_dev used; ONNX
//   LayerNormalization-17, axes [axis, rank), keepdims shapes)
//                                      -> mean = ReduceMean(x), d = x - mean,
//                                         inv_std_dev = 1 / sqrt(ReduceMean(d d) + epsilon),
//                                         y = d inv_std_dev s (+ b)
// Every output keeps its value (name, shape, uses); the original node is removed. Runs where
// fold_control runs for the compiled targets (driver::load_model, driver::run_model), on
// shape-inferred input; the graph passes after it see ordinary single-output nodes (fuse_layer_norm
// leaves this LayerNormalization decomposed, its mean being used). Guarantees: no Split with more
// than one output and no LayerNormalization with a used second or third output remain.
#include <fmt/format.h>

#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"

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

}  // namespace

bool needs_split_outputs(const Graph& graph) {
  for (const auto& n : graph.nodes()) {
    if (n->op_type == "Split" && n->outputs.size() > 1) return true;
    if (n->op_type == "LayerNormalization" && n->outputs.size() > 1) {
      if (used(graph, n->outputs[1])) return true;
      if (n->outputs.size() > 2 && used(graph, n->outputs[2])) return true;
    }
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
  }
  return changed;
}

}  // namespace tessel::graph_passes
