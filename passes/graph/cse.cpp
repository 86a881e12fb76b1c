// Common-subexpression elimination (see graph_passes.h): equal constants, then nodes with the same
// op type, inputs and attributes, are merged into the first occurrence.
//
//   before: %a: f32[4] = Sigmoid(%x)
//           %b: f32[4] = Sigmoid(%x)
//           %y: f32[4] = Mul(%a, %b)
//   after:  %a: f32[4] = Sigmoid(%x)
//           %y: f32[4] = Mul(%a, %a)
//
// Runs after: the rewrites (folding and fusion leave equal constants and duplicate nodes behind).
// Guarantees: no two constants with equal dtype, shape and bytes, and no two deterministic nodes
// with equal op, inputs and attributes remain (fixed point), except a duplicate producing a graph
// output; graph outputs keep their names.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

bool nondeterministic(const std::string& op) {
  return op.rfind("Random", 0) == 0 || op == "Multinomial" || op == "Bernoulli";
}

void append_tensor(std::string& key, const Tensor& t) {
  key += fmt::format("{}{}:", dtype_to_string(t.dtype()), shape_to_string(t.shape()));
  key.append(reinterpret_cast<const char*>(t.raw()), t.nbytes());
}

template <class T>
void append_bits(std::string& key, const T& v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  key.append(buf, sizeof(T));
}

/// A byte string equal for two attribute values exactly when they are equal (floats bitwise).
void append_attr(std::string& key, const AttrValue& v) {
  key += static_cast<char>('0' + v.index());
  if (auto* i = std::get_if<int64_t>(&v)) {
    append_bits(key, *i);
  } else if (auto* f = std::get_if<float>(&v)) {
    append_bits(key, *f);
  } else if (auto* s = std::get_if<std::string>(&v)) {
    append_bits(key, s->size());
    key += *s;
  } else if (auto* is = std::get_if<std::vector<int64_t>>(&v)) {
    append_bits(key, is->size());
    for (int64_t x : *is) append_bits(key, x);
  } else if (auto* fs = std::get_if<std::vector<float>>(&v)) {
    append_bits(key, fs->size());
    for (float x : *fs) append_bits(key, x);
  } else if (auto* ss = std::get_if<std::vector<std::string>>(&v)) {
    append_bits(key, ss->size());
    for (const auto& x : *ss) {
      append_bits(key, x.size());
      key += x;
    }
  } else if (auto* t = std::get_if<Tensor>(&v)) {
    append_tensor(key, *t);
  }
}

std::string node_key(const Node& n) {
  std::string key = n.op_type;
  key += '\0';
  append_bits(key, n.inputs.size());
  for (const Value* in : n.inputs) append_bits(key, in);
  append_bits(key, n.outputs.size());
  for (const auto& [name, value] : n.attrs.all()) {
    append_bits(key, name.size());
    key += name;
    append_attr(key, value);
  }
  return key;
}

bool is_output(const Graph& g, const Value* v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

bool same_data(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

bool merge_constants(Graph& graph) {
  bool changed = false;
  // Bucketed by dtype, shape and a hash of the bytes (no copy of the data); equal bytes checked.
  std::unordered_map<std::string, std::vector<Value*>> buckets;
  std::vector<Value*> consts;
  for (const auto& v : graph.values())
    if (!v->producer && v->constant) consts.push_back(v.get());
  for (Value* v : consts) {
    if (std::find(graph.inputs.begin(), graph.inputs.end(), v) != graph.inputs.end()) continue;
    const Tensor& t = *v->constant;
    const size_t h = std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(t.raw()), t.nbytes()));
    auto& bucket =
        buckets[fmt::format("{}{}#{}", dtype_to_string(t.dtype()), shape_to_string(t.shape()), h)];
    Value* same = nullptr;
    for (Value* c : bucket)
      if (same_data(*c->constant, t) && c->dtype == v->dtype && c->shape == v->shape) same = c;
    if (!same) {
      bucket.push_back(v);
      continue;
    }
    changed |= !graph.users(v).empty() && forward_value(graph, v, same);
  }
  return changed;
}

bool merge_nodes(Graph& graph) {
  bool changed = false;
  std::unordered_map<std::string, Node*> first;
  std::vector<Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  for (Node* n : order) {
    if (nondeterministic(n->op_type)) continue;
    auto [it, fresh] = first.emplace(node_key(*n), n);
    if (fresh) continue;
    Node* keep = it->second;
    bool output = false;
    for (const Value* out : n->outputs) output = output || is_output(graph, out);
    if (output) continue;  // the duplicate names a graph output: keep both
    for (size_t i = 0; i < n->outputs.size(); ++i)
      graph.replace_all_uses(n->outputs[i], keep->outputs[i]);
    erase_unused(graph, {n});
    changed = true;
  }
  return changed;
}

}  // namespace

bool cse(Graph& graph) {
  bool changed = merge_constants(graph);
  changed |= merge_nodes(graph);
  return changed;
}

}  // namespace tessel::graph_passes
