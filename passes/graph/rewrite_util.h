// Helpers shared by the graph passes: a use map, constant matching, and the graph edits a pattern
// rewrite needs (produce an existing value from a new node, erase nodes that became unused).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/ir/graph.h"
#include "passes/graph/pass_manager.h"

namespace tessel::graph_passes {

/// Consumers of every value and which values are graph outputs, built once (Graph::users scans
/// every node per call). Stale after the graph changes: rebuild it.
class UseMap {
 public:
  explicit UseMap(const Graph& graph);
  /// Nodes reading `v` (each node once, in node order).
  const std::vector<Node*>& users(const Value* v) const;
  bool is_graph_output(const Value* v) const { return graph_outputs_.count(v) != 0; }
  /// True when `v` is not a graph output and every node reading it is in `allowed`.
  bool only_used_by(const Value* v, const std::vector<const Node*>& allowed) const;
  /// True when `v` is not a graph output and exactly one node reads it.
  bool single_use(const Value* v) const;

 private:
  std::unordered_map<const Value*, std::vector<Node*>> users_;
  std::unordered_set<const Value*> graph_outputs_;
  std::vector<Node*> none_;
};

/// The compile-time data of `v` (a constant or a known value), or null.
const Tensor* constant_of(const Value* v);
/// When `v` is a float or integer constant whose elements all equal one value: that value.
std::optional<double> uniform_constant(const Value* v);
/// True when `v` is a constant whose elements all equal `x` within `rel_tol` relative (absolute
/// for x == 0).
bool is_constant_value(const Value* v, double x, double rel_tol = 0);

/// The node producing `v` when it is `op_type` (any op when empty), else null.
Node* producer_of(const Value* v, const std::string& op_type = "");
/// For a binary node (Add, Mul, ...): the operand that is not `v`, or null when `v` is not an
/// operand (for `x op x` the other operand is x).
Value* other_operand(const Node* node, const Value* v);

/// A new 1-D int64 constant holding `values` (a shape, axes or pads operand), named `base`
/// (unique-suffixed).
Value* int64_constant(Graph& graph, const std::string& base, const std::vector<int64_t>& values);

/// The resolved window of a 3-D Conv or pool node `n` (ONNX Conv / MaxPool / AveragePool over
/// [N, C, D, H, W]) with kernel extent `k` (3 entries): strides, dilations (default 1) and pads
/// [d_begin, h_begin, w_begin, d_end, h_end, w_end], auto_pad SAME_UPPER / SAME_LOWER / VALID
/// resolved from the input shape `xs` and output shape `ys`. Throws tessel::Error naming the node
/// for attributes of the wrong length or an unknown auto_pad.
struct Window3d {
  std::vector<int64_t> strides, dilations, pads;
};
Window3d window_3d(const Node& n, const std::vector<int64_t>& k, const Shape& xs, const Shape& ys);

/// Makes `v` produced by a new node `op_type(inputs) {attrs}` inserted right before `before`
/// (which must come after the producers of `inputs`): `v`'s old producer gets a fresh, unused
/// value in its place. Returns the new node, named `name` (unique-suffixed).
Node* reproduce_value(Graph& graph, Value* v, const std::string& op_type, const std::string& name,
                      std::vector<Value*> inputs, Attributes attrs, Node* before);

/// Replaces the nodes of a matched pattern by one node `op_type(inputs) {attrs}` producing `out`
/// (the pattern's final value, produced by the last node of `pattern`): the pattern's nodes are
/// removed (they must all become unused) and the new node takes the final node's name and place.
/// `inputs` must be defined before the pattern's first node.
Node* replace_pattern(Graph& graph, Value* out, const std::vector<Node*>& pattern,
                      const std::string& op_type, std::vector<Value*> inputs, Attributes attrs);

/// Makes `node` produce `v` in output slot `slot` instead of its current value there (which loses
/// its producer and must become unused); `v`'s old producer gets a fresh, unused value in its
/// place. `v`'s consumers must come after `node`.
void retarget_output(Graph& graph, Node* node, size_t slot, Value* v);

/// Turns the node-produced value `v` into a constant holding `data` (same name): `v` is taken from
/// its producer, which is removed once none of its outputs is used.
void make_constant(Graph& graph, Value* v, Tensor data);

/// Removes every node of `nodes` (and transitively the nodes of `nodes` feeding them) whose
/// outputs are all unused and not graph outputs. Returns how many were removed.
size_t erase_unused(Graph& graph, const std::vector<Node*>& nodes);

/// Replaces every use of `from` by `to` unless `from` is a graph output (then nothing changes and
/// false is returned: a graph output keeps its name).
bool forward_value(Graph& graph, Value* from, Value* to);

/// Calls `rewrite(node, uses)` for every node of a snapshot of the node order. A rewrite rooted at
/// `node` may remove `node` and nodes before it (the nodes of a matched pattern all feed its root)
/// and insert new nodes; `uses` is rebuilt after every rewrite that returns true. Returns true when
/// any did.
bool rewrite_nodes(Graph& graph, const std::function<bool(Node*, const UseMap&)>& rewrite);

/// True when `match` holds for some node of `graph` (a pass's needs_* test).
bool any_node(const Graph& graph, const std::function<bool(const Node&)>& match);
/// Calls `rewrite(graph, node)` for every node of a snapshot of the node order for which `match`
/// holds (taken before the first rewrite, which may add and remove nodes). Returns true when any
/// node matched.
bool rewrite_matching(Graph& graph, const std::function<bool(const Node&)>& match,
                      const std::function<void(Graph&, Node*)>& rewrite);

/// When `n` computes x * factor (Mul(x, c) or Mul(c, x) with c == factor, or Div(x, c) with
/// c == 1/factor; constants compared within `rel_tol`): x, else null.
Value* match_scale(const Node* n, double factor, double rel_tol = 1e-6);
/// When `n` is Add(x, c) or Add(c, x) with the constant c == `addend`: x, else null.
Value* match_add_const(const Node* n, double addend, double rel_tol = 1e-6);

/// Builds the replacement of one node `at` out of other ops (the graph-level expansions run for
/// the compiled targets: expand_recurrent, expand_losses, split_outputs). Every node it emits is
/// inserted right before `at` and shape-inferred at once; a node whose inputs are all constants
/// (and that produces no taken output) is evaluated with the reference kernel and becomes a
/// constant, so slices and transposes of constant weights cost nothing at run time.
class NodeExpander {
 public:
  NodeExpander(Graph& graph, Node* at) : g_(graph), at_(at) {}

  /// `op(ins) {attrs}` producing `out` (a value taken with take_output), or a new value.
  Value* emit(const std::string& op, std::vector<Value*> ins, Attributes attrs = {},
              Value* out = nullptr);
  /// A 1-D int64 constant.
  Value* i64s(const std::vector<int64_t>& v);
  /// A rank-0 constant of dtype `dt` (a float or integer type) holding `v`.
  Value* scalar(double v, DType dt);
  /// A constant holding `t`.
  Value* constant(Tensor t);
  /// Slice(x, [start], [end], [axis]) (one axis).
  Value* slice(Value* x, int64_t axis, int64_t start, int64_t end);
  /// Squeeze / Unsqueeze of one axis (opset-13 form: axes as an input).
  Value* squeeze(Value* x, int64_t axis);
  Value* unsqueeze(Value* x, int64_t axis);
  /// Output `k` of `at`, detached from it (a fresh unused value takes its slot) so an emitted
  /// node can produce it.
  Value* take_output(size_t k);
  /// Removes `at` (call once every used output has been taken).
  void finish();

  Graph& graph() { return g_; }
  Node* at() { return at_; }

 private:
  Graph& g_;
  Node* at_;
};

/// True when `v` is read by a node of `g` or is one of its outputs.
bool value_used(const Graph& g, const Value* v);

/// True when `available` is empty or says yes.
inline bool op_available(const OpAvailable& available, const std::string& op) {
  return !available || available(op);
}

}  // namespace tessel::graph_passes
