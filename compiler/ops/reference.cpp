// The CPU reference interpreter driver (see reference.h).
#include "compiler/ops/reference.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/ranges.h>

#include "compiler/ops/op_registry.h"

namespace tessel::ops {

namespace {
std::string type_string(DType dtype, const Shape& shape) {
  return std::string(dtype_to_string(dtype)) + shape_to_string(shape);
}
}  // namespace

namespace {

// The node-by-node interpreter over values bound in `env` (inputs, captures); returns the graph
// outputs in order. `hook` (may be empty) sees every constant a node reads, at its first use, and
// every node output (ValueHook).
std::vector<Tensor> run_nodes(const Graph& graph,
                              std::unordered_map<const Value*, const Tensor*> env,
                              const ValueHook& hook = ValueHook(),
                              std::unordered_map<const Value*, Tensor> computed = {}) {
  std::unordered_map<const Value*, Tensor> hooked_constants;
  // Index of the last node reading each value, so intermediates are freed after their last use.
  const auto& nodes = graph.nodes();
  std::unordered_map<const Value*, size_t> last_use;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const Value* in : nodes[i]->inputs) {
      if (in) last_use[in] = i;
    }
  }
  for (const Value* out : graph.outputs) last_use[out] = nodes.size();

  auto lookup = [&](const Node& n, const Value* v) -> const Tensor* {
    if (v->constant && hook) {
      auto [it, fresh] = hooked_constants.try_emplace(v, *v->constant);
      if (fresh) hook(*v, nullptr, it->second);
      return &it->second;
    }
    if (v->constant) return v->constant.get();
    auto it = env.find(v);
    if (it == env.end()) {
      fail("reference run of graph '{}': {} reads %{}, which has not been computed", graph.name,
           n.describe(), v->name);
    }
    return it->second;
  };

  std::vector<const Tensor*> args;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = *nodes[i];
    bool all_known = true;
    for (const Value* out : n.outputs) all_known = all_known && out->constant != nullptr;
    if (!all_known) {
      args.clear();
      for (const Value* in : n.inputs) args.push_back(in ? lookup(n, in) : nullptr);
      std::vector<Tensor> results = run_reference_node(n, args);
      for (size_t k = 0; k < results.size(); ++k) {
        const Value* out = n.outputs[k];
        if (results[k].dtype() != out->dtype || results[k].shape() != out->shape) {
          internal_fail("reference run: {} computed output %{} as {} but the graph says {}",
                        n.describe(), out->name,
                        type_string(results[k].dtype(), results[k].shape()),
                        type_string(out->dtype, out->shape));
        }
        if (!last_use.count(out)) continue;  // unused output
        if (hook) hook(*out, &n, results[k]);
        Tensor& slot = computed[out] = std::move(results[k]);
        env[out] = &slot;
      }
    }
    // Free intermediates whose last reader was this node.
    for (const Value* in : n.inputs) {
      if (!in || in->constant) continue;
      auto it = last_use.find(in);
      if (it != last_use.end() && it->second == i) {
        computed.erase(in);
        env.erase(in);
      }
    }
  }

  std::vector<Tensor> outputs;
  for (const Value* out : graph.outputs) {
    if (out->constant) {
      outputs.push_back(*out->constant);
      continue;
    }
    auto it = env.find(out);
    if (it == env.end()) {
      fail("reference run of graph '{}': output %{} was not computed", graph.name, out->name);
    }
    outputs.push_back(*it->second);
  }
  return outputs;
}

}  // namespace

std::map<std::string, Tensor> run_reference(const Graph& graph,
                                            const std::map<std::string, Tensor>& inputs) {
  return run_reference(graph, inputs, ValueHook());
}

std::map<std::string, Tensor> run_reference(const Graph& graph,
                                            const std::map<std::string, Tensor>& inputs,
                                            const ValueHook& hook) {
  // Tensors of the values computed or given so far; constants are read from Value::constant
  // (with a hook: from a hooked copy made at the first use). With a hook, the inputs are hooked
  // copies owned by `copies`.
  std::unordered_map<const Value*, const Tensor*> env;
  std::unordered_map<const Value*, Tensor> copies;

  for (const Value* in : graph.inputs) {
    auto it = inputs.find(in->name);
    if (it == inputs.end()) {
      fail("reference run of graph '{}': missing input '{}' (expected {})", graph.name, in->name,
           type_string(in->dtype, in->shape));
    }
    const Tensor& t = it->second;
    if (t.dtype() != in->dtype || t.shape() != in->shape) {
      fail("reference run of graph '{}': input '{}' is {} but the graph expects {}", graph.name,
           in->name, type_string(t.dtype(), t.shape()), type_string(in->dtype, in->shape));
    }
    if (hook) {
      Tensor& copy = copies[in] = t;
      hook(*in, nullptr, copy);
      env[in] = &copy;
    } else {
      env[in] = &t;
    }
  }
  for (const auto& input : inputs) {
    const std::string& name = input.first;  // not a structured binding: clang 14 cannot capture one
    const bool known = std::any_of(graph.inputs.begin(), graph.inputs.end(),
                                   [&](const Value* v) { return v->name == name; });
    if (!known) {
      std::vector<std::string> names;
      for (const Value* v : graph.inputs) names.push_back(v->name);
      fail("reference run of graph '{}': '{}' is not a graph input (inputs: {})", graph.name, name,
           fmt::join(names, ", "));
    }
  }

  std::vector<Tensor> results = run_nodes(graph, std::move(env), hook, std::move(copies));
  std::map<std::string, Tensor> outputs;
  for (size_t i = 0; i < graph.outputs.size(); ++i)
    outputs[graph.outputs[i]->name] = std::move(results[i]);
  return outputs;
}

std::vector<Tensor> run_reference_bound(const Graph& graph, const std::vector<const Value*>& values,
                                        const std::vector<const Tensor*>& bound) {
  TESSEL_CHECK(values.size() == bound.size(), "run_reference_bound: {} values, {} tensors",
               values.size(), bound.size());
  std::unordered_map<const Value*, const Tensor*> env;
  for (size_t i = 0; i < values.size(); ++i) {
    const Value* v = values[i];
    const Tensor* t = bound[i];
    if (!t) fail("reference run of graph '{}': no tensor bound to %{}", graph.name, v->name);
    if (t->dtype() != v->dtype || t->shape() != v->shape)
      fail("reference run of graph '{}': %{} is bound to {} but the graph expects {}", graph.name,
           v->name, type_string(t->dtype(), t->shape()), type_string(v->dtype, v->shape));
    env[v] = t;
  }
  return run_nodes(graph, std::move(env));
}

}  // namespace tessel::ops
