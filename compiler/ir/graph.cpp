// Graph IR data structures (see graph.h): attributes, nodes, values, graph editing.
#include "compiler/ir/graph.h"

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/ranges.h>

namespace tessel {

namespace {

const char* attr_kind_name(const AttrValue& v) {
  switch (v.index()) {
    case 0:
      return "int";
    case 1:
      return "float";
    case 2:
      return "string";
    case 3:
      return "ints";
    case 4:
      return "floats";
    case 5:
      return "strings";
    case 6:
      return "tensor";
    case 7:
      return "graph";
  }
  return "?";
}

// The attribute `name` as type T, or null if absent; throws on a kind mismatch.
template <class T>
const T* get_typed(const std::map<std::string, AttrValue>& values, const std::string& name,
                   const char* expected, const std::string& node_name) {
  auto it = values.find(name);
  if (it == values.end()) return nullptr;
  const T* p = std::get_if<T>(&it->second);
  if (!p) {
    fail("node '{}': attribute '{}' is of kind {}, expected {}", node_name, name,
         attr_kind_name(it->second), expected);
  }
  return p;
}

// First free name of the form prefix + K, K >= start, using `counters` as a hint.
template <class Map>
std::string fresh_suffixed(const Map& taken, std::map<std::string, int64_t>& counters,
                           const std::string& prefix, int64_t start) {
  int64_t& k = counters.try_emplace(prefix, start).first->second;
  for (;; ++k) {
    std::string candidate = prefix + std::to_string(k);
    if (!taken.count(candidate)) return candidate;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Attributes

int64_t Attributes::get_int(const std::string& name, const std::string& node_name) const {
  const int64_t* p = get_typed<int64_t>(values_, name, "int", node_name);
  if (!p) fail("node '{}': missing required attribute '{}' (int)", node_name, name);
  return *p;
}

int64_t Attributes::get_int_or(const std::string& name, int64_t fallback,
                               const std::string& node_name) const {
  const int64_t* p = get_typed<int64_t>(values_, name, "int", node_name);
  return p ? *p : fallback;
}

float Attributes::get_float_or(const std::string& name, float fallback,
                               const std::string& node_name) const {
  const float* p = get_typed<float>(values_, name, "float", node_name);
  return p ? *p : fallback;
}

std::string Attributes::get_string_or(const std::string& name, const std::string& fallback,
                                      const std::string& node_name) const {
  const std::string* p = get_typed<std::string>(values_, name, "string", node_name);
  return p ? *p : fallback;
}

std::vector<int64_t> Attributes::get_ints_or(const std::string& name,
                                             const std::vector<int64_t>& fallback,
                                             const std::string& node_name) const {
  const auto* p = get_typed<std::vector<int64_t>>(values_, name, "ints", node_name);
  return p ? *p : fallback;
}

std::vector<float> Attributes::get_floats_or(const std::string& name,
                                             const std::vector<float>& fallback,
                                             const std::string& node_name) const {
  const auto* p = get_typed<std::vector<float>>(values_, name, "floats", node_name);
  return p ? *p : fallback;
}

const Tensor* Attributes::get_tensor(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  const Tensor* p = std::get_if<Tensor>(&it->second);
  if (!p) fail("attribute '{}' is of kind {}, expected tensor", name, attr_kind_name(it->second));
  return p;
}

const Graph* Attributes::get_graph(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  const GraphAttr* p = std::get_if<GraphAttr>(&it->second);
  if (!p) fail("attribute '{}' is of kind {}, expected graph", name, attr_kind_name(it->second));
  return p->get();
}

std::string Node::describe() const { return op_type + " '" + name + "'"; }

const char* storage_format_name(StorageFormat f) {
  return f == StorageFormat::nc1hwc0 ? "NC1HWC0" : "plain";
}

// ---------------------------------------------------------------------------------------------
// Graph

std::string Graph::unique_value_name(const std::string& base) const {
  if (!value_by_name_.count(base)) return base;
  return fresh_suffixed(value_by_name_, next_value_suffix_, base + "_", 1);
}

std::string Graph::unique_node_name(const std::string& base) const {
  if (!node_by_name_.count(base)) return base;
  return fresh_suffixed(node_by_name_, next_node_suffix_, base + "_", 1);
}

Value* Graph::add_value(const std::string& name, DType dtype, Shape shape) {
  auto v = std::make_unique<Value>();
  v->name = unique_value_name(name.empty() ? std::string("v") : name);
  v->dtype = dtype;
  v->shape = std::move(shape);
  Value* p = v.get();
  value_by_name_[p->name] = p;
  values_.push_back(std::move(v));
  return p;
}

Value* Graph::add_constant(const std::string& name, Tensor tensor) {
  Value* v = add_value(name, tensor.dtype(), tensor.shape());
  v->constant = std::make_shared<const Tensor>(std::move(tensor));
  return v;
}

Node* Graph::add_node(const std::string& op_type, const std::string& name,
                      std::vector<Value*> inputs, std::vector<Value*> outputs, Attributes attrs) {
  return insert_node_before(nullptr, op_type, name, std::move(inputs), std::move(outputs),
                            std::move(attrs));
}

Node* Graph::insert_node_before(Node* before, const std::string& op_type, const std::string& name,
                                std::vector<Value*> inputs, std::vector<Value*> outputs,
                                Attributes attrs) {
  auto pos = nodes_.end();
  if (before) {
    pos = std::find_if(nodes_.begin(), nodes_.end(),
                       [&](const std::unique_ptr<Node>& n) { return n.get() == before; });
    TESSEL_CHECK(pos != nodes_.end(), "insert_node_before: node {} is not in graph '{}'",
                 before->describe(), this->name);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    TESSEL_CHECK(outputs[i] != nullptr, "add_node {}: output {} is null", op_type, i);
    if (outputs[i]->producer) {
      fail("node '{}' ({}): output %{} is already produced by {}", name, op_type, outputs[i]->name,
           outputs[i]->producer->describe());
    }
  }
  auto n = std::make_unique<Node>();
  n->name = name.empty() ? fresh_suffixed(node_by_name_, next_node_suffix_, op_type + "_", 0)
                         : unique_node_name(name);
  n->op_type = op_type;
  n->inputs = std::move(inputs);
  n->outputs = std::move(outputs);
  n->attrs = std::move(attrs);
  for (size_t i = 0; i < n->outputs.size(); ++i) {
    n->outputs[i]->producer = n.get();
    n->outputs[i]->producer_output = static_cast<int>(i);
  }
  Node* p = n.get();
  node_by_name_[p->name] = p;
  nodes_.insert(pos, std::move(n));
  return p;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = value_by_name_.find(name);
  if (it != value_by_name_.end() && it->second->name == name) return it->second;
  // The map is stale only if a caller renamed a value directly; fall back to a scan.
  for (const auto& v : values_) {
    if (v->name == name) return v.get();
  }
  return nullptr;
}

Node* Graph::find_node(const std::string& name) const {
  auto it = node_by_name_.find(name);
  if (it != node_by_name_.end() && it->second->name == name) return it->second;
  for (const auto& n : nodes_) {
    if (n->name == name) return n.get();
  }
  return nullptr;
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& n : nodes_) {
    for (Value*& in : n->inputs) {
      if (in == from) in = to;
    }
  }
  for (Value*& out : outputs) {
    if (out == from) out = to;
  }
}

std::vector<Node*> Graph::users(const Value* v) const {
  std::vector<Node*> out;
  for (const auto& n : nodes_) {
    if (std::find(n->inputs.begin(), n->inputs.end(), v) != n->inputs.end()) out.push_back(n.get());
  }
  return out;
}

void Graph::remove_node(Node* node) {
  auto pos = std::find_if(nodes_.begin(), nodes_.end(),
                          [&](const std::unique_ptr<Node>& n) { return n.get() == node; });
  TESSEL_CHECK(pos != nodes_.end(), "remove_node: node {} is not in graph '{}'", node->describe(),
               this->name);
  for (Value* out : node->outputs) {
    TESSEL_CHECK(std::find(outputs.begin(), outputs.end(), out) == outputs.end(),
                 "remove_node {}: output %{} is a graph output", node->describe(), out->name);
    for (const auto& n : nodes_) {
      if (n.get() == node) continue;
      TESSEL_CHECK(std::find(n->inputs.begin(), n->inputs.end(), out) == n->inputs.end(),
                   "remove_node {}: output %{} is still used by {}", node->describe(), out->name,
                   n->describe());
    }
  }
  for (Value* out : node->outputs) {
    if (out->producer == node) {
      out->producer = nullptr;
      out->producer_output = 0;
    }
  }
  auto it = node_by_name_.find(node->name);
  if (it != node_by_name_.end() && it->second == node) node_by_name_.erase(it);
  nodes_.erase(pos);
}

void Graph::remove_dead() {
  // Mark live nodes backwards from the graph outputs.
  std::unordered_set<const Value*> live_values(outputs.begin(), outputs.end());
  std::vector<bool> live_node(nodes_.size(), false);
  for (size_t i = nodes_.size(); i-- > 0;) {
    const Node& n = *nodes_[i];
    bool live = false;
    for (const Value* out : n.outputs) live = live || live_values.count(out);
    if (!live) continue;
    live_node[i] = true;
    for (const Value* in : n.inputs) {
      if (in) live_values.insert(in);
    }
  }
  std::vector<std::unique_ptr<Node>> kept_nodes;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (live_node[i]) {
      kept_nodes.push_back(std::move(nodes_[i]));
    } else {
      Node* n = nodes_[i].get();
      for (Value* out : n->outputs) {
        if (out->producer == n) out->producer = nullptr;
      }
      auto it = node_by_name_.find(n->name);
      if (it != node_by_name_.end() && it->second == n) node_by_name_.erase(it);
    }
  }
  nodes_ = std::move(kept_nodes);
  // Keep values that are graph inputs/outputs or inputs/outputs of a remaining node.
  std::unordered_set<const Value*> referenced(inputs.begin(), inputs.end());
  referenced.insert(outputs.begin(), outputs.end());
  for (const auto& n : nodes_) {
    referenced.insert(n->inputs.begin(), n->inputs.end());
    referenced.insert(n->outputs.begin(), n->outputs.end());
  }
  std::vector<std::unique_ptr<Value>> kept_values;
  for (auto& v : values_) {
    if (referenced.count(v.get())) {
      kept_values.push_back(std::move(v));
    } else {
      auto it = value_by_name_.find(v->name);
      if (it != value_by_name_.end() && it->second == v.get()) value_by_name_.erase(it);
    }
  }
  values_ = std::move(kept_values);
}

void Graph::topo_sort() {
  const size_t n = nodes_.size();
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < n; ++i) index[nodes_[i].get()] = i;
  std::vector<int> pending(n, 0);
  std::vector<std::vector<size_t>> consumers(n);
  for (size_t i = 0; i < n; ++i) {
    for (const Value* in : nodes_[i]->inputs) {
      if (!in || !in->producer) continue;
      auto it = index.find(in->producer);
      if (it == index.end()) continue;  // produced outside the graph: the verifier reports it
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  // Kahn's algorithm; among ready nodes the earliest in the current order goes first, so an
  // already sorted graph keeps its order.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t c : consumers[i]) {
      if (--pending[c] == 0) ready.push(c);
    }
  }
  if (order.size() != n) {
    std::vector<std::string> cyclic;
    for (size_t i = 0; i < n && cyclic.size() < 5; ++i) {
      if (pending[i] > 0) cyclic.push_back(nodes_[i]->describe());
    }
    fail("graph '{}' has a cycle: {} node(s) are on or after a cycle, e.g. {}", this->name,
         n - order.size(), fmt::join(cyclic, ", "));
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(n);
  for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
}

}  // namespace tessel

namespace tessel {

std::vector<const Graph*> node_subgraphs(const Node& node) {
  std::vector<const Graph*> subs;
  for (const auto& [name, value] : node.attrs.all())
    if (const GraphAttr* g = std::get_if<GraphAttr>(&value); g && *g) subs.push_back(g->get());
  return subs;
}

size_t formal_input_count(const Node& node) {
  const auto subs = node_subgraphs(node);
  if (subs.empty()) return node.inputs.size();
  const size_t captured = subs.front()->captures.size();
  return node.inputs.size() >= captured ? node.inputs.size() - captured : 0;
}

std::unique_ptr<Graph> clone_graph(const Graph& g) {
  auto c = std::make_unique<Graph>();
  c->name = g.name;
  c->opset = g.opset;
  std::unordered_map<const Value*, Value*> map;
  for (const auto& v : g.values()) {
    Value* nv = c->add_value(v->name, v->dtype, v->shape);
    nv->constant = v->constant;
    nv->format = v->format;
    map[v.get()] = nv;
  }
  auto m = [&](const Value* v) -> Value* { return v ? map.at(v) : nullptr; };
  for (const auto& n : g.nodes()) {
    std::vector<Value*> ins, outs;
    for (const Value* v : n->inputs) ins.push_back(m(v));
    for (const Value* v : n->outputs) outs.push_back(m(v));
    c->add_node(n->op_type, n->name, std::move(ins), std::move(outs), n->attrs);
  }
  for (const Value* v : g.inputs) c->inputs.push_back(m(v));
  for (const Value* v : g.outputs) c->outputs.push_back(m(v));
  for (const Value* v : g.captures) c->captures.push_back(m(v));
  return c;
}

}  // namespace tessel
