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
//     axis and LayerNormalization;
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
// at compile time, or produced before the group's first node in node order.
//
// Groups are formed greedily in node order: a seed (a contraction or an eligible op not yet in a
// group) repeatedly takes the earliest eligible consumer of a value the group produces; after each
// step the group is checked against the contract, and the largest valid group found is kept.
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

Kind classify(const Node& n) {
  if (n.outputs.size() != 1 || n.outputs[0]->constant || !n.input(0)) return Kind::none;
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
      for (Node* m : members)
        for (Value* v : m->outputs)
          for (Node* u : uses_.users(v))
            if (!in.count(u) && (!next || index_[u] < index_[next]) && eligible(u, seed, in))
              next = u;
      if (!next) break;
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

  bool eligible(Node* c, Node* seed, const std::unordered_set<const Node*>& in) const {
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
