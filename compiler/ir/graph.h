// Graph IR: the high-level dataflow graph a model is imported into and graph passes rewrite.
//
// SSA: every Value is produced by exactly one Node output, or is a graph input, or is a constant
// (an initializer or a folded Constant node; `constant` is set). All shapes are static: dynamic
// model dims are bound at import. Nodes keep a topological order in `nodes()`. Op names and
// attributes follow ONNX (opset semantics are normalised at import, e.g. Clip min/max become
// inputs).
//
// Text form (print_graph / parse_graph round-trip exactly: print(parse(print(g))) == print(g)):
//   graph NAME opset 17 (%x: f32[1,3,48,192]) -> (%y) {
//     %w: f32[8,3,3,3] = const [0.5, -1, ...]
//     %s: i64[4] known [1, 8, 24, 96] = Shape(%y0)  # shape_0
//     %y: f32[1,8,24,96] = Conv(%x, %w, _) {group=1, kernel_shape=[3,3], strides=[2,2]}  # conv_0
//     %a: f32[2], %b: f32[3] = Split(%t, %sizes) {axis=0}  # split_0
//     %z: f32[1,32,24,96] format NC1HWC0 = Conv(%y, %w2, _) {...}  # conv_1
//   }
// - Names (graph, values after '%', nodes after '#', attributes) are bare when made of
//   [A-Za-z0-9_.+-/] (no "//"), else quoted: %"onnx::Conv_0". Strings escape \" \\ \n \t \r and
//   other control bytes as \xHH; other bytes are kept as they are (UTF-8).
// - Types: dtype_to_string(dtype) + shape, "f32[]" for a scalar. `_` is an omitted input.
// - Tensor data is the flat row-major element list: integers in decimal, bool as true/false,
//   f32/f64 as the shortest decimal that reads back to the same value (std::to_chars), f16 as the
//   f32 form of its (exactly representable) value; inf, -inf, nan, -nan (the canonical quiet NaN),
//   else nan0x<bits> (the full bit pattern in hex). `known <data>` after an output's type is a
//   value known at compile time (Value::constant set on a produced value). `format NC1HWC0` after
//   an output's type is its storage format (absent: plain).
// - Attribute values: int `3`; float always with '.', 'e', inf or nan (`1.0`); string "..."; lists
//   `[1, 2]`, `[1.0, 0.5]`, `["a"]` (empty: `ints[]`, `floats[]`, `strings[]`); tensor
//   `tensor<f32[2] [1, 2]>`; subgraph `graph NAME (%in: T, ...) captures (%c: T, ...) -> (%out,
//   ...) { ...nodes... }` (no opset: it is the enclosing graph's; `captures (...)` only when there
//   are captures; its statements are indented two more spaces). Attributes print sorted by name.
// - Inside a subgraph, a type not known until the body is instantiated prints `?` (e.g.
//   `%s: ? = Slice(%x, %i0, %i1)`).
// - `//` starts a comment (parse only). A node without `# name` gets "<op_type>_<n>".
// - PrintOptions::elide_constants prints data of more than 8 elements as `dense<...>`, which does
//   not parse back.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/ir/tensor.h"

namespace tessel {

class Node;
class Graph;

/// How a value is stored in memory on the NPU (its "format", after Ascend's graph engine). The
/// logical value is always the NCHW tensor of `Value::shape`; the format only changes where its
/// elements live, so the reference interpreter and the CPU backend ignore it.
///   plain   -- dense row-major over `shape` (NCHW for feature maps).
///   nc1hwc0 -- a rank-4 [N, C, H, W] value stored as the 5-D [N, C1, H, W, C0] array with
///              C1 = C / C0 and C0 = kNc1hwc0C0: the C0 channels of one pixel are contiguous
///              (32 bytes in fp16), which is the cube unit's fractal K and the layout DaVinci's
///              load3d/img2col reads (Liao et al., HPCA 2021; CANN "NC1HWC0" data format).
///              C must be a multiple of C0 (no padded channels).
enum class StorageFormat { plain, nc1hwc0 };

/// C0 of the NC1HWC0 format: 16 channels (32 bytes of fp16).
inline constexpr int64_t kNc1hwc0C0 = 16;

/// "NC1HWC0" for nc1hwc0, "plain" for plain.
const char* storage_format_name(StorageFormat f);

/// An SSA value: a tensor with a static dtype and shape.
struct Value {
  std::string name;
  DType dtype = DType::undefined;
  Shape shape;
  StorageFormat format = StorageFormat::plain;  // set by the graph pass layout_nc1hwc0
  Node* producer = nullptr;                     // null for graph inputs and constants
  int producer_output = 0;                      // which output of `producer`
  std::shared_ptr<const Tensor> constant;       // set for constants (initializers, folded values)

  bool is_constant() const { return constant != nullptr; }
};

/// A subgraph attribute (If's branches, Loop's and Scan's body). Shared, not copied, when a node's
/// attributes are copied: passes treat a subgraph as immutable and build a new one to change it.
using GraphAttr = std::shared_ptr<Graph>;

/// An attribute value (ONNX AttributeProto kinds that tessel supports).
using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor, GraphAttr>;

/// Node attributes, ordered by name so printing is deterministic.
class Attributes {
 public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void set(const std::string& name, AttrValue v) { values_[name] = std::move(v); }
  void erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, AttrValue>& all() const { return values_; }

  /// Typed getters; `node_name` is used in error messages. The *_or variants return `fallback`
  /// when the attribute is absent (ONNX defaults); all throw tessel::Error on a type mismatch.
  int64_t get_int(const std::string& name, const std::string& node_name) const;
  int64_t get_int_or(const std::string& name, int64_t fallback, const std::string& node_name) const;
  float get_float_or(const std::string& name, float fallback, const std::string& node_name) const;
  std::string get_string_or(const std::string& name, const std::string& fallback,
                            const std::string& node_name) const;
  std::vector<int64_t> get_ints_or(const std::string& name, const std::vector<int64_t>& fallback,
                                   const std::string& node_name) const;
  std::vector<float> get_floats_or(const std::string& name, const std::vector<float>& fallback,
                                   const std::string& node_name) const;
  const Tensor* get_tensor(const std::string& name) const;  // null if absent
  const Graph* get_graph(const std::string& name) const;    // null if absent

 private:
  std::map<std::string, AttrValue> values_;
};

/// An operation: ONNX op type, ordered inputs (nullptr = omitted optional input), outputs.
class Node {
 public:
  std::string name;     // unique within the graph (import names unnamed nodes "<op>_<n>")
  std::string op_type;  // ONNX op type, e.g. "Conv"
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  Attributes attrs;

  /// Input i, or nullptr if absent/omitted.
  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  /// "Conv 'conv2d_0'" - used in every error message about a node.
  std::string describe() const;
};

/// The graph: owns values and nodes.
///
/// Subgraphs (control flow: If, Loop, Scan; ONNX IR "nested scopes"). A subgraph is a Graph held by
/// a node attribute. Its `inputs` are the formal inputs the op binds (Loop: iteration number,
/// condition, carried values; Scan: state and one slice of every scan input; If: none). Values of
/// the enclosing scope that the subgraph reads are explicit: each is a `captures` entry, a value of
/// the subgraph standing for it, and the node lists the enclosing values after its formal inputs,
/// in the same order -- every subgraph of a node has one capture per captured value (unused ones
/// too), so capture j of each subgraph is bound to node input formal_input_count(node) + j. The
/// enclosing graph therefore sees a control-flow node as an ordinary reader of what it captures
/// (liveness, DCE and topological order need nothing else). Inside a subgraph, a value whose
/// shape depends on the iteration (e.g. Slice(x, i, i + 1) with the Loop's iteration number i) has
/// dtype `undefined` until the body is instantiated for an iteration (text form `?`).
class Graph {
 public:
  std::string name;
  int64_t opset = 0;  // default-domain opset version the model was written against

  std::vector<Value*> inputs;    // runtime inputs, in order
  std::vector<Value*> outputs;   // graph outputs, in order
  std::vector<Value*> captures;  // subgraphs only: values standing for enclosing-scope values

  /// Creates a value with a unique name (a suffix is added if `name` is taken).
  Value* add_value(const std::string& name, DType dtype, Shape shape);
  /// Creates a constant value holding `tensor`.
  Value* add_constant(const std::string& name, Tensor tensor);
  /// Appends a node (sets producers of `outputs`). Nodes must be added in topological order or
  /// sorted afterwards with topo_sort(). An empty `name` becomes "<op_type>_<n>"; a taken one gets
  /// a suffix (see unique_node_name). Throws tessel::Error if an output already has a producer.
  Node* add_node(const std::string& op_type, const std::string& name, std::vector<Value*> inputs,
                 std::vector<Value*> outputs, Attributes attrs = {});
  /// Inserts a node right before `before` in the node order.
  Node* insert_node_before(Node* before, const std::string& op_type, const std::string& name,
                           std::vector<Value*> inputs, std::vector<Value*> outputs,
                           Attributes attrs = {});

  /// Nodes in topological order.
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  /// All values (inputs, constants, node outputs), including dead ones until remove_dead().
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }

  Value* find_value(const std::string& name) const;  // null if none
  Node* find_node(const std::string& name) const;    // null if none

  /// Replaces every use of `from` (node inputs and graph outputs) by `to`.
  void replace_all_uses(Value* from, Value* to);
  /// Nodes that read `v`.
  std::vector<Node*> users(const Value* v) const;
  /// Removes `node` (its outputs must be unused).
  void remove_node(Node* node);
  /// Removes nodes whose outputs are all unused (transitively) and values no one references.
  void remove_dead();
  /// Re-establishes topological order; throws tessel::Error on a cycle.
  void topo_sort();

  /// `base` if no value has that name, else a free `base_K` (K >= 1). The name is not reserved:
  /// pass it to add_value.
  std::string unique_value_name(const std::string& base) const;
  /// Same for node names.
  std::string unique_node_name(const std::string& base) const;

 private:
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::map<std::string, Value*> value_by_name_;
  std::map<std::string, Node*> node_by_name_;
  // Next suffix to try per base name (keeps unique_*_name linear for many equal bases).
  mutable std::map<std::string, int64_t> next_value_suffix_;
  mutable std::map<std::string, int64_t> next_node_suffix_;
};

/// The subgraph attributes of `node` (If: else_branch, then_branch; Loop/Scan: body), sorted by
/// attribute name; empty for ordinary nodes.
std::vector<const Graph*> node_subgraphs(const Node& node);
/// The number of `node`'s inputs that are its op's formal inputs: all of them for an ordinary
/// node, the inputs before the captured enclosing values for a control-flow node.
size_t formal_input_count(const Node& node);
/// A deep copy of `g` (values, constants shared, nodes, attributes; subgraphs shared).
std::unique_ptr<Graph> clone_graph(const Graph& g);

/// Options for the text printer.
struct PrintOptions {
  /// Print "dense<...>" instead of data with more than 8 elements (for humans: the output no
  /// longer parses).
  bool elide_constants = false;
};

/// Prints the graph in the text form above.
void print_graph(const Graph& g, std::ostream& os, const PrintOptions& opts = {});
std::string graph_to_string(const Graph& g, const PrintOptions& opts = {});
/// Parses the text form; throws tessel::Error with the line number on a syntax error.
std::unique_ptr<Graph> parse_graph(const std::string& text,
                                   const std::string& source_name = "<text>");

/// Checks SSA and typing invariants (every input defined before use, unique names, outputs
/// produced, shapes consistent with the op's shape rule). Throws tessel::Error naming the node.
/// The shape-rule check runs for registered ops when the op library (tessel_ops) is linked in.
void verify_graph(const Graph& g);

namespace detail {
/// Re-runs the shape rule of `node` on copies of its values and throws tessel::Error naming the
/// node if its outputs' dtype/shape differ; does nothing for an unregistered op.
using ShapeRuleCheck = void (*)(const Node& node);
/// Installed by the op library (compiler/ops/op_registry.cpp) so that tessel_ir does not depend
/// on tessel_ops; null until then.
void set_shape_rule_check(ShapeRuleCheck check);
}  // namespace detail

}  // namespace tessel
