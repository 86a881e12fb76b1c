// Helpers shared by the graph passes (see rewrite_util.h).
#include "passes/graph/rewrite_util.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "compiler/ops/op_registry.h"
#include "passes/graph/graph_passes.h"

namespace tessel::graph_passes {

UseMap::UseMap(const Graph& graph) {
  for (const auto& n : graph.nodes()) {
    for (const Value* in : n->inputs) {
      if (!in) continue;
      auto& list = users_[in];
      if (list.empty() || list.back() != n.get()) list.push_back(n.get());
    }
  }
  graph_outputs_.insert(graph.outputs.begin(), graph.outputs.end());
}

const std::vector<Node*>& UseMap::users(const Value* v) const {
  auto it = users_.find(v);
  return it == users_.end() ? none_ : it->second;
}

bool UseMap::only_used_by(const Value* v, const std::vector<const Node*>& allowed) const {
  if (is_graph_output(v)) return false;
  for (const Node* u : users(v))
    if (std::find(allowed.begin(), allowed.end(), u) == allowed.end()) return false;
  return true;
}

bool UseMap::single_use(const Value* v) const {
  return !is_graph_output(v) && users(v).size() == 1;
}

const Tensor* constant_of(const Value* v) { return v && v->constant ? v->constant.get() : nullptr; }

std::optional<double> uniform_constant(const Value* v) {
  const Tensor* t = constant_of(v);
  if (!t || t->numel() == 0 || t->dtype() == DType::string || t->dtype() == DType::undefined)
    return std::nullopt;
  const double first = t->get_as_double(0);
  const int64_t n = t->numel();
  for (int64_t i = 1; i < n; ++i) {
    const double x = t->get_as_double(i);
    if (!(x == first)) return std::nullopt;  // also rejects NaN
  }
  if (std::isnan(first)) return std::nullopt;
  return first;
}

bool is_constant_value(const Value* v, double x, double rel_tol) {
  const auto u = uniform_constant(v);
  if (!u) return false;
  if (rel_tol == 0) return *u == x;
  return std::abs(*u - x) <= rel_tol * std::max(std::abs(x), x == 0 ? 1.0 : 0.0);
}

Node* producer_of(const Value* v, const std::string& op_type) {
  if (!v || !v->producer) return nullptr;
  if (!op_type.empty() && v->producer->op_type != op_type) return nullptr;
  return v->producer;
}

Value* other_operand(const Node* node, const Value* v) {
  if (!node || node->inputs.size() != 2) return nullptr;
  if (node->inputs[0] == v) return node->inputs[1];
  if (node->inputs[1] == v) return node->inputs[0];
  return nullptr;
}

namespace {

/// Gives `v`'s producer a fresh value in v's output slot, so `v` has no producer.
void detach_from_producer(Graph& graph, Value* v) {
  Node* p = v->producer;
  if (!p) return;
  const int slot = v->producer_output;
  TESSEL_CHECK(slot >= 0 && static_cast<size_t>(slot) < p->outputs.size() && p->outputs[slot] == v,
               "value %{} records output {} of {}", v->name, slot, p->describe());
  Value* stub = graph.add_value(v->name + ".replaced", v->dtype, v->shape);
  stub->producer = p;
  stub->producer_output = slot;
  p->outputs[slot] = stub;
  v->producer = nullptr;
  v->producer_output = 0;
}

bool unused(const Graph& graph, const Node* n) {
  for (const Value* out : n->outputs) {
    if (std::find(graph.outputs.begin(), graph.outputs.end(), out) != graph.outputs.end())
      return false;
  }
  for (const auto& other : graph.nodes()) {
    if (other.get() == n) continue;
    for (const Value* in : other->inputs)
      if (in && std::find(n->outputs.begin(), n->outputs.end(), in) != n->outputs.end())
        return false;
  }
  return true;
}

}  // namespace

bool any_node(const Graph& graph, const std::function<bool(const Node&)>& match) {
  for (const auto& n : graph.nodes())
    if (match(*n)) return true;
  return false;
}

bool rewrite_matching(Graph& graph, const std::function<bool(const Node&)>& match,
                      const std::function<void(Graph&, Node*)>& rewrite) {
  std::vector<Node*> todo;
  for (const auto& n : graph.nodes())
    if (match(*n)) todo.push_back(n.get());
  for (Node* n : todo) rewrite(graph, n);
  return !todo.empty();
}

Value* int64_constant(Graph& graph, const std::string& base, const std::vector<int64_t>& values) {
  return graph.add_constant(graph.unique_value_name(base),
                            Tensor::from_int64s({static_cast<int64_t>(values.size())}, values));
}

Window3d window_3d(const Node& n, const std::vector<int64_t>& k, const Shape& xs, const Shape& ys) {
  const std::string& nn = n.name;
  Window3d w;
  w.strides = n.attrs.get_ints_or("strides", {1, 1, 1}, nn);
  w.dilations = n.attrs.get_ints_or("dilations", {1, 1, 1}, nn);
  w.pads = n.attrs.get_ints_or("pads", {0, 0, 0, 0, 0, 0}, nn);
  const auto& s = w.strides;
  const auto& dil = w.dilations;
  auto& pads = w.pads;
  if (s.size() != 3 || dil.size() != 3 || pads.size() != 6)
    fail("{}: strides / dilations / pads have {} / {} / {} entries, expected 3 / 3 / 6",
         n.describe(), s.size(), dil.size(), pads.size());
  const std::string auto_pad = n.attrs.get_string_or("auto_pad", "NOTSET", nn);
  if (auto_pad == "VALID") {
    pads.assign(6, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int a = 0; a < 3; ++a) {
      const int64_t total =
          std::max<int64_t>(0, (ys[2 + a] - 1) * s[a] + (k[a] - 1) * dil[a] + 1 - xs[2 + a]);
      const int64_t small = total / 2, big = total - small;
      pads[a] = auto_pad == "SAME_UPPER" ? small : big;
      pads[3 + a] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "NOTSET") {
    fail("{}: auto_pad '{}', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", n.describe(),
         auto_pad);
  }
  return w;
}

Node* reproduce_value(Graph& graph, Value* v, const std::string& op_type, const std::string& name,
                      std::vector<Value*> inputs, Attributes attrs, Node* before) {
  detach_from_producer(graph, v);
  return graph.insert_node_before(before, op_type, name, std::move(inputs), {v}, std::move(attrs));
}

Node* replace_pattern(Graph& graph, Value* out, const std::vector<Node*>& pattern,
                      const std::string& op_type, std::vector<Value*> inputs, Attributes attrs) {
  Node* last = out->producer;
  TESSEL_CHECK(last != nullptr, "replace_pattern: %{} has no producer", out->name);
  const std::string name = last->name;
  // The node after the pattern's final node: the new node goes right before it.
  Node* anchor = nullptr;
  const auto& nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].get() == last) anchor = i + 1 < nodes.size() ? nodes[i + 1].get() : nullptr;
  std::vector<Node*> unique;
  for (Node* n : pattern)
    if (std::find(unique.begin(), unique.end(), n) == unique.end()) unique.push_back(n);
  detach_from_producer(graph, out);
  const size_t removed = erase_unused(graph, unique);
  TESSEL_CHECK(removed == unique.size(),
               "replace_pattern %{}: {} of the {} pattern nodes are still used", out->name,
               unique.size() - removed, unique.size());
  return graph.insert_node_before(anchor, op_type, name, std::move(inputs), {out},
                                  std::move(attrs));
}

void retarget_output(Graph& graph, Node* node, size_t slot, Value* v) {
  TESSEL_CHECK(slot < node->outputs.size(), "retarget_output: {} has no output {}",
               node->describe(), slot);
  detach_from_producer(graph, v);
  Value* old = node->outputs[slot];
  old->producer = nullptr;
  old->producer_output = 0;
  node->outputs[slot] = v;
  v->producer = node;
  v->producer_output = static_cast<int>(slot);
}

void make_constant(Graph& graph, Value* v, Tensor data) {
  TESSEL_CHECK(data.dtype() == v->dtype && data.shape() == v->shape,
               "make_constant %{}: data is {}{}, the value {}{}", v->name,
               dtype_to_string(data.dtype()), shape_to_string(data.shape()),
               dtype_to_string(v->dtype), shape_to_string(v->shape));
  Node* p = v->producer;
  detach_from_producer(graph, v);
  v->constant = std::make_shared<const Tensor>(std::move(data));
  if (p) erase_unused(graph, {p});
}

size_t erase_unused(Graph& graph, const std::vector<Node*>& nodes) {
  std::vector<Node*> pending(nodes.begin(), nodes.end());
  size_t removed = 0;
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t i = pending.size(); i-- > 0;) {
      Node* n = pending[i];
      if (!n || !unused(graph, n)) continue;
      graph.remove_node(n);
      std::replace(pending.begin(), pending.end(), n, static_cast<Node*>(nullptr));
      ++removed;
      progress = true;
    }
  }
  return removed;
}

bool rewrite_nodes(Graph& graph, const std::function<bool(Node*, const UseMap&)>& rewrite) {
  std::vector<Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  bool changed = false;
  auto uses = std::make_unique<UseMap>(graph);
  for (Node* n : order) {
    if (rewrite(n, *uses)) {
      changed = true;
      uses = std::make_unique<UseMap>(graph);
    }
  }
  return changed;
}

Value* match_scale(const Node* n, double factor, double rel_tol) {
  if (!n || n->inputs.size() != 2 || !n->inputs[0] || !n->inputs[1]) return nullptr;
  Value* a = n->inputs[0];
  Value* b = n->inputs[1];
  if (n->op_type == "Mul") {
    if (is_constant_value(b, factor, rel_tol) && !a->constant) return a;
    if (is_constant_value(a, factor, rel_tol) && !b->constant) return b;
  } else if (n->op_type == "Div" && factor != 0) {
    if (is_constant_value(b, 1.0 / factor, rel_tol) && !a->constant) return a;
  }
  return nullptr;
}

Value* match_add_const(const Node* n, double addend, double rel_tol) {
  if (!n || n->op_type != "Add" || n->inputs.size() != 2 || !n->inputs[0] || !n->inputs[1])
    return nullptr;
  Value* a = n->inputs[0];
  Value* b = n->inputs[1];
  if (is_constant_value(b, addend, rel_tol) && !a->constant) return a;
  if (is_constant_value(a, addend, rel_tol) && !b->constant) return b;
  return nullptr;
}

bool forward_value(Graph& graph, Value* from, Value* to) {
  if (from == to) return false;
  if (std::find(graph.outputs.begin(), graph.outputs.end(), from) != graph.outputs.end())
    return false;
  graph.replace_all_uses(from, to);
  return true;
}

bool value_used(const Graph& g, const Value* v) {
  if (!v) return false;
  for (const Value* o : g.outputs)
    if (o == v) return true;
  return !g.users(v).empty();
}

Value* NodeExpander::emit(const std::string& op, std::vector<Value*> ins, Attributes attrs,
                          Value* out) {
  const std::string base = at_->name + "_" + op;
  const bool taken = out != nullptr;
  if (!out) out = g_.add_value(g_.unique_value_name(base), DType::undefined, {});
  Node* n = g_.insert_node_before(at_, op, g_.unique_node_name(base), std::move(ins), {out},
                                  std::move(attrs));
  ops::infer_and_propagate(*n);
  if (taken) return out;
  bool all_constant = !n->inputs.empty();
  for (const Value* in : n->inputs)
    if (in && !in->constant) all_constant = false;
  if (!all_constant || shape_numel(out->shape) > kMaxFoldedElements) return out;
  const ops::OpDef* def = ops::find_op(op);
  if (!def || !def->reference) return out;
  std::vector<const Tensor*> inputs;
  for (const Value* in : n->inputs) inputs.push_back(in ? in->constant.get() : nullptr);
  std::vector<Tensor> r;
  try {
    r = ops::run_reference_node(*n, inputs);
  } catch (const Unsupported&) {
    return out;
  }
  if (r.size() != 1 || r[0].dtype() != out->dtype || r[0].shape() != out->shape) return out;
  make_constant(g_, out, std::move(r[0]));
  return out;
}

Value* NodeExpander::i64s(const std::vector<int64_t>& v) {
  return g_.add_constant(g_.unique_value_name(at_->name + "_i"),
                         Tensor::from_int64s({static_cast<int64_t>(v.size())}, v));
}

Value* NodeExpander::scalar(double v, DType dt) {
  Tensor t(dt, {});
  t.set_from_double(0, v);
  return constant(std::move(t));
}

Value* NodeExpander::constant(Tensor t) {
  return g_.add_constant(g_.unique_value_name(at_->name + "_c"), std::move(t));
}

Value* NodeExpander::slice(Value* x, int64_t axis, int64_t start, int64_t end) {
  return emit("Slice", {x, i64s({start}), i64s({end}), i64s({axis})});
}

Value* NodeExpander::squeeze(Value* x, int64_t axis) { return emit("Squeeze", {x, i64s({axis})}); }

Value* NodeExpander::unsqueeze(Value* x, int64_t axis) {
  return emit("Unsqueeze", {x, i64s({axis})});
}

Value* NodeExpander::take_output(size_t k) {
  Value* original = at_->outputs[k];
  Value* dummy = g_.add_value(g_.unique_value_name(original->name + "_expanded"), original->dtype,
                              original->shape);
  dummy->producer = at_;
  dummy->producer_output = static_cast<int>(k);
  at_->outputs[k] = dummy;
  original->producer = nullptr;
  return original;
}

void NodeExpander::finish() { g_.remove_node(at_); }

}  // namespace tessel::graph_passes
