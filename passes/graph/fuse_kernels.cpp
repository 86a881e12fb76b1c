// Operator fusion (grouping) for the NPU: marks with the int attribute `fusion_group` the nodes the
// NPU backend compiles as one kernel, so intermediates stay in the on-chip unified buffer instead
// of a DRAM round trip. The contract with the backend (also in graph_passes.h and
// docs/graph_passes.md):
//   - a group is a connected set of nodes; at most one member is a contraction (Conv,
//     ConvTranspose, MatMul, Gemm); if present it is the group's first node in topological order
//     and every other member depends on it;
//   - every other member is an elementwise op (unary, binary with ONNX broadcasting, Clip,
//     HardSigmoid, HardSwish, Sigmoid, Relu, LeakyRelu, Silu, Tanh, Gelu, BatchNormalization in
//     inference, ...); in groups WITHOUT a contraction also reductions over the last axes
//     (ReduceMean/Sum/Max/Min, GlobalAveragePool/GlobalMaxPool), Softmax/LogSoftmax over the last
//     axis and LayerNormalization; QuantizeLinear / DequantizeLinear with constant scale and zero
//     point (per tensor or per axis; 8-bit Q outputs, 8-bit or i32 DQ inputs) count as
//     elementwise, so an int8 value between two members (Q -> DQ) stays on chip too;
//   - every value produced inside the group and consumed inside it has ALL its consumers inside
//     the group and is not a graph output; the group has exactly one value used outside it (or a
//     graph output): its last node's first output;
//   - inputs from outside the group are arbitrary values (broadcast allowed);
//   - every member has the same branch guard (guard_branches' `branch_guard`: none, or the same
//     value), and no value a guard names is produced inside the group unless it is the group's
//     result (the NPU reads a guard from GM and branches around the whole kernel).
// What this pass guarantees on top (a backend may rely on it): in a group with a contraction every
// member's output has the contraction's output shape (elementwise epilogues on its output tile);
// every input a member takes from outside the group is a graph input, a constant, a value known
// at compile time, or produced before the group's seed in node order, except the input of a
// pulled DequantizeLinear (below), which is produced before that DQ's consumer in the group. So
// the kernel can always be emitted at its last member's position, and at its first member's
// when no DQ was pulled.
//
// Groups are formed greedily in node order: a seed (a contraction or an eligible op not yet in a
// group) repeatedly takes the earliest eligible consumer of a value the group produces; after each
// step the group is checked against the contract, and the largest valid group found is kept. In a
// group without a contraction, a consumer also pulls in the DequantizeLinear producing one of its
// other inputs when that DQ is in no group and only the consumer reads it (a residual Add's two
// DQs: the skip branch's comes before the seed in node order, the other branch's after it).
//
//   before: %c: f32[1,8,24,96] = Conv(%x, %w, %b) {...}
//           %y: f32[1,8,24,96] = Relu(%c)
//   after:  %c: f32[1,8,24,96] = Conv(%x, %w, %b) {..., fusion_group=0}
//           %y: f32[1,8,24,96] = Relu(%c) {fusion_group=0}
//
// Runs after: every rewriting pass (it only annotates: any later rewrite would have to re-run it,
// and it drops stale `fusion_group` attributes itself). Needs ops::infer_graph's shapes.
// Guarantees: the contract above, on every group it marks; the graph is otherwise unchanged.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

enum class Kind { none, contraction, elementwise, reduction };

const std::set<std::string>& elementwise_ops() {
  static const std::set<std::string> ops = {"Add",
                                            "Sub",
                                            "Mul",
                                            "Div",
                                            "Pow",
                                            "Max",
                                            "Min",
                                            "Sum",
                                            "Relu",
                                            "LeakyRelu",
                                            "PRelu",
                                            "Sigmoid",
                                            "Tanh",
                                            "Exp",
                                            "Log",
                                            "Sqrt",
                                            "Reciprocal",
                                            "Abs",
                                            "Neg",
                                            "Erf",
                                            "Clip",
                                            "HardSigmoid",
                                            "HardSwish",
                                            "Silu",
                                            "Gelu",
                                            "Elu",
                                            "Selu",
                                            "Celu",
                                            "Softplus",
                                            "Softsign",
                                            "Mish",
                                            "ThresholdedRelu",
                                            "Floor",
                                            "Ceil",
                                            "Round",
                                            "Sign",
                                            "BatchNormalization"};
  return ops;
}

/// Normalised axes of a reduction (attribute, or constant input 1 for ReduceSum); nullopt when
/// unknown.
std::optional<std::vector<int64_t>> reduce_axes(const Node& n, int64_t rank) {
  std::vector<int64_t> axes = n.attrs.get_ints_or("axes", {}, n.name);
  if (n.input(1)) {
    const Tensor* t = constant_of(n.input(1));
    if (!t) return std::nullopt;
    axes = t->to_int64_vector();
  }
  if (axes.empty()) {
    if (n.attrs.get_int_or("noop_with_empty_axes", 0, n.name) != 0) return std::nullopt;
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

bool trailing(const std::vector<int64_t>& axes, int64_t rank) {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[axes.size() - 1 - i] != rank - 1 - static_cast<int64_t>(i)) return false;
  return !axes.empty();
}

/// A QuantizeLinear (float x -> i8/u8) or DequantizeLinear (i8/u8/i32 x -> float) whose scale
/// (float32) and zero point (absent or 8-bit) are constants, per tensor (one element) or per axis
/// (a 1-D scale along `axis`), without opset 21's blocked form: the NPU computes it on the vector
/// unit like any elementwise op (compiler/backend/npu/int8_ops.h), so it may join a group.
bool fusable_qdq(const Node& n) {
  const bool quantize = n.op_type == "QuantizeLinear";
  if (!quantize && n.op_type != "DequantizeLinear") return false;
  const Value* x = n.input(0);
  const Value* scale = n.input(1);
  const Value* zp = n.input(2);
  const DType in = x->dtype, out = n.outputs[0]->dtype;
  auto is_8bit = [](DType t) { return t == DType::i8 || t == DType::u8; };
  if (quantize ? !(dtype_is_float(in) && is_8bit(out))
               : !((is_8bit(in) || in == DType::i32) && dtype_is_float(out)))
    return false;
  if (!scale || !scale->constant || scale->constant->dtype() != DType::f32) return false;
  if (zp && (!zp->constant || (!is_8bit(zp->constant->dtype()) && zp->constant->dtype() != in)))
    return false;
  if (n.attrs.get_int_or("block_size", 0, n.name) != 0) return false;
  const int64_t count = scale->constant->numel();
  if (zp && zp->constant->numel() != count) return false;
  if (count == 1) return true;
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  int64_t axis = n.attrs.get_int_or("axis", 1, n.name);
  if (axis < 0) axis += rank;
  return scale->constant->rank() == 1 && axis >= 0 && axis < rank && x->shape[axis] == count;
}

Kind classify(const Node& n) {
  if (n.outputs.size() != 1 || n.outputs[0]->constant || !n.input(0)) return Kind::none;
  if (fusable_qdq(n)) return Kind::elementwise;
  if (!dtype_is_float(n.outputs[0]->dtype)) return Kind::none;
  const std::string& op = n.op_type;
  if (op == "Conv" || op == "ConvTranspose" || op == "MatMul" || op == "Gemm")
    return Kind::contraction;
  if (op == "BatchNormalization")
    return n.attrs.get_int_or("training_mode", 0, n.name) == 0 ? Kind::elementwise : Kind::none;
  if (elementwise_ops().count(op)) return Kind::elementwise;
  const int64_t rank = static_cast<int64_t>(n.inputs[0]->shape.size());
  if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin") {
    const auto axes = reduce_axes(n, rank);
    return axes && trailing(*axes, rank) ? Kind::reduction : Kind::none;
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool")
    return rank >= 3 ? Kind::reduction : Kind::none;
  if (op == "Softmax" || op == "LogSoftmax") {
    int64_t axis = n.attrs.get_int_or("axis", -1, n.name);
    if (axis < 0) axis += rank;
    return axis == rank - 1 ? Kind::reduction : Kind::none;
  }
  if (op == "LayerNormalization") return Kind::reduction;
  return Kind::none;
}

class Grouper {
 public:
  explicit Grouper(const Graph& graph) : uses_(graph) {
    for (const auto& n : graph.nodes()) {
      index_[n.get()] = order_.size();
      order_.push_back(n.get());
      kind_[n.get()] = classify(*n);
      if (n->attrs.has(kBranchGuardAttr)) guards_.insert(guard_of(*n));
    }
  }

  /// Group id per node (absent = no group).
  std::map<Node*, int64_t> run() {
    std::map<Node*, int64_t> result;
    int64_t next_id = 0;
    for (Node* seed : order_) {
      if (grouped_.count(seed) || kind_[seed] == Kind::none) continue;
      std::vector<Node*> members = grow(seed);
      if (members.size() < 2) continue;
      for (Node* m : members) {
        grouped_.insert(m);
        result[m] = next_id;
      }
      ++next_id;
    }
    return result;
  }

 private:
  /// The largest valid group grown from `seed`.
  std::vector<Node*> grow(Node* seed) {
    std::vector<Node*> members = {seed};
    std::unordered_set<const Node*> in(members.begin(), members.end());
    size_t best = 1;
    while (true) {
      Node* next = nullptr;
      std::vector<Node*> next_pulled;
      for (Node* m : members)
        for (Value* v : m->outputs)
          for (Node* u : uses_.users(v)) {
            if (in.count(u) || (next && index_[u] >= index_[next])) continue;
            std::vector<Node*> pulled;
            if (eligible(u, seed, in, pulled)) next = u, next_pulled = std::move(pulled);
          }
      if (!next) break;
      for (Node* p : next_pulled) members.push_back(p), in.insert(p);
      members.push_back(next);
      in.insert(next);
      if (valid(members, in)) best = members.size();
    }
    members.resize(best);
    return members;
  }

  /// The name of the value guarding `n` (guard_branches' kBranchGuardAttr), "" when none.
  static std::string guard_of(const Node& n) {
    return n.attrs.get_string_or(kBranchGuardAttr, "", n.name);
  }

  /// Whether `p`, the producer of an input of candidate `c`, joins the group with c: a fusable
  /// DequantizeLinear outside every group whose output only c reads, in a group without a
  /// contraction, under the seed's guard (the skip branch's DQ of a residual Add, which comes
  /// before the seed in node order). Its own input comes from outside the group.
  bool pullable(Node* p, Node* c, Node* seed, const std::unordered_set<const Node*>& in) const {
    if (p->op_type != "DequantizeLinear" || kind_.at(p) != Kind::elementwise) return false;
    if (grouped_.count(p) || kind_.at(seed) == Kind::contraction) return false;
    if (guard_of(*p) != guard_of(*seed)) return false;
    const Value* out = p->outputs[0];
    if (uses_.is_graph_output(out) || guards_.count(out->name)) return false;
    for (const Node* u : uses_.users(out))
      if (u != c) return false;
    const Value* x = p->input(0);
    return !x->producer || !in.count(x->producer);
  }

  /// Whether `c` may join the group grown from `seed` (members `in`); `pulled` receives the
  /// producers of c's inputs that join with it (pullable).
  bool eligible(Node* c, Node* seed, const std::unordered_set<const Node*>& in,
                std::vector<Node*>& pulled) const {
    if (grouped_.count(c) || index_.at(c) <= index_.at(seed)) return false;
    // A group runs under one guard (the NPU branches around a guarded kernel as a whole).
    if (guard_of(*c) != guard_of(*seed)) return false;
    const Kind k = kind_.at(c);
    const bool contraction = kind_.at(seed) == Kind::contraction;
    if (k == Kind::elementwise) {
      if (contraction && c->outputs[0]->shape != seed->outputs[0]->shape) return false;
    } else if (k != Kind::reduction || contraction) {
      return false;
    }
    for (const Value* v : c->inputs) {
      if (!v || v->constant || !v->producer) continue;  // omitted, constant or graph input
      if (in.count(v->producer)) {
        if (uses_.is_graph_output(v)) return false;  // a graph output must be the group's result
        if (guards_.count(v->name)) return false;    // a guard is read from GM: not on chip only
        continue;
      }
      if (pullable(v->producer, c, seed, in)) {
        if (std::find(pulled.begin(), pulled.end(), v->producer) == pulled.end())
          pulled.push_back(v->producer);
        continue;
      }
      if (index_.at(v->producer) >= index_.at(seed)) return false;
    }
    return true;
  }

  /// The contract: exactly one value leaves the group (used outside or a graph output), and it is
  /// the first output of the group's last node.
  bool valid(const std::vector<Node*>& members, const std::unordered_set<const Node*>& in) const {
    const Node* last = *std::max_element(members.begin(), members.end(), [&](Node* a, Node* b) {
      return index_.at(a) < index_.at(b);
    });
    size_t open = 0;
    for (const Node* m : members)
      for (const Value* v : m->outputs) {
        bool leaves = uses_.is_graph_output(v);
        for (const Node* u : uses_.users(v)) leaves = leaves || !in.count(u);
        if (!leaves) continue;
        if (m != last || v != last->outputs[0]) return false;
        ++open;
      }
    return open == 1;
  }

  UseMap uses_;
  std::vector<Node*> order_;
  std::unordered_map<const Node*, size_t> index_;
  std::unordered_map<const Node*, Kind> kind_;
  std::unordered_set<const Node*> grouped_;
  std::set<std::string> guards_;  // the values named by a branch_guard
};

}  // namespace

bool fuse_kernels(Graph& graph) {
  std::map<Node*, int64_t> before;
  for (const auto& n : graph.nodes())
    if (n->attrs.has(kFusionGroupAttr)) {
      before[n.get()] = n->attrs.get_int(kFusionGroupAttr, n->name);
      n->attrs.erase(kFusionGroupAttr);
    }
  const std::map<Node*, int64_t> groups = Grouper(graph).run();
  for (const auto& [node, id] : groups) node->attrs.set(kFusionGroupAttr, id);
  return groups != before;
}

}  // namespace tessel::graph_passes
