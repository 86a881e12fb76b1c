// Graph IR verifier (see verify_graph in graph.h).
#include <atomic>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/graph.h"

namespace tessel {

namespace detail {
namespace {
std::atomic<ShapeRuleCheck> g_shape_rule_check{nullptr};
}  // namespace

void set_shape_rule_check(ShapeRuleCheck check) { g_shape_rule_check.store(check); }
}  // namespace detail

namespace {

std::string type_string(const Value& v) {
  return std::string(dtype_to_string(v.dtype)) + shape_to_string(v.shape);
}

void check_value_type(const Graph& g, const Value& v, const std::string& where,
                      bool may_be_untyped = false) {
  // Inside a subgraph, a node output whose type depends on the iteration is typed when the body is
  // instantiated (graph.h).
  if (may_be_untyped && v.dtype == DType::undefined && v.shape.empty() && !v.constant) return;
  if (v.dtype == DType::undefined || v.dtype == DType::string) {
    fail(
        "verify graph '{}': {}: value %{} has element type {} (expected a numeric type; was shape "
        "inference run?)",
        g.name, where, v.name, dtype_to_string(v.dtype));
  }
  for (int64_t d : v.shape) {
    if (d < 0) {
      fail("verify graph '{}': {}: value %{} has a negative dimension in {}", g.name, where, v.name,
           shape_to_string(v.shape));
    }
  }
  if (v.format == StorageFormat::nc1hwc0) {
    if (v.shape.size() != 4 || !dtype_is_float(v.dtype) || v.shape[1] % kNc1hwc0C0 != 0)
      fail(
          "verify graph '{}': {}: value %{} is {} in format NC1HWC0 (expected a rank-4 float "
          "[N, C, H, W] value with C a multiple of {})",
          g.name, where, v.name, type_string(v), kNc1hwc0C0);
    if (!v.producer || v.constant)
      fail(
          "verify graph '{}': {}: value %{} is in format NC1HWC0 but is a graph input or a "
          "constant (expected a node output computed at run time)",
          g.name, where, v.name);
  }
  if (v.constant) {
    if (v.constant->dtype() != v.dtype || v.constant->shape() != v.shape) {
      fail("verify graph '{}': {}: value %{} is declared {} but its known data is {}{}", g.name,
           where, v.name, type_string(v), dtype_to_string(v.constant->dtype()),
           shape_to_string(v.constant->shape()));
    }
  }
}

void verify_graph_impl(const Graph& g, bool is_subgraph);

// The subgraphs of a control-flow node: one capture list length for all of them, each capture
// typed as the enclosing value it stands for, and each subgraph valid in its own scope.
void verify_subgraphs(const Graph& g, const Node& n) {
  const auto subs = node_subgraphs(n);
  if (subs.empty()) return;
  const size_t captured = subs.front()->captures.size();
  for (const Graph* sub : subs) {
    if (sub->captures.size() != captured)
      fail(
          "verify graph '{}': {}: subgraph '{}' has {} captures but subgraph '{}' has {} (every "
          "subgraph of a node captures the same enclosing values)",
          g.name, n.describe(), sub->name, sub->captures.size(), subs.front()->name, captured);
    if (captured > n.inputs.size())
      fail("verify graph '{}': {}: {} captures but only {} inputs", g.name, n.describe(), captured,
           n.inputs.size());
    const size_t formal = n.inputs.size() - captured;
    for (size_t j = 0; j < captured; ++j) {
      const Value* inner = sub->captures[j];
      const Value* outer = n.inputs[formal + j];
      if (!outer)
        fail("verify graph '{}': {}: captured input {} is omitted", g.name, n.describe(),
             formal + j);
      if (inner->dtype != outer->dtype || inner->shape != outer->shape)
        fail(
            "verify graph '{}': {}: subgraph '{}' capture %{} is {} but the enclosing value %{} "
            "it stands for is {}",
            g.name, n.describe(), sub->name, inner->name, type_string(*inner), outer->name,
            type_string(*outer));
    }
    try {
      verify_graph_impl(*sub, /*is_subgraph=*/true);
    } catch (const Unsupported&) {
      throw;
    } catch (const Error& e) {
      fail("verify graph '{}': in subgraph of {}: {}", g.name, n.describe(), e.what());
    }
  }
}

void verify_graph_impl(const Graph& g, bool is_subgraph) {
  std::unordered_set<const Value*> owned;
  std::unordered_map<std::string, const Value*> by_name;
  for (const auto& v : g.values()) {
    owned.insert(v.get());
    auto [it, fresh] = by_name.emplace(v->name, v.get());
    if (!fresh) fail("verify graph '{}': two values are named %{}", g.name, v->name);
  }
  std::unordered_set<std::string> node_names;
  std::unordered_set<const Node*> graph_nodes;
  for (const auto& n : g.nodes()) {
    if (n->name.empty()) fail("verify graph '{}': a {} node has no name", g.name, n->op_type);
    if (!node_names.insert(n->name).second) {
      fail("verify graph '{}': two nodes are named '{}'", g.name, n->name);
    }
    graph_nodes.insert(n.get());
  }

  // Values available so far: graph inputs and constants, then node outputs in order.
  std::unordered_set<const Value*> defined;
  for (const Value* in : g.inputs) {
    if (!in || !owned.count(in))
      fail("verify graph '{}': a graph input is not a value of the graph", g.name);
    if (in->producer) {
      fail("verify graph '{}': graph input %{} is produced by {}", g.name, in->name,
           in->producer->describe());
    }
    if (!defined.insert(in).second) {
      fail("verify graph '{}': %{} is listed twice as a graph input", g.name, in->name);
    }
    check_value_type(g, *in, "graph input");
  }
  for (const Value* c : g.captures) {
    if (!c || !owned.count(c))
      fail("verify graph '{}': a capture is not a value of the graph", g.name);
    if (c->producer)
      fail("verify graph '{}': capture %{} is produced by {}", g.name, c->name,
           c->producer->describe());
    if (!defined.insert(c).second)
      fail("verify graph '{}': %{} is listed twice as a graph input or capture", g.name, c->name);
    // Untyped when the value it stands for is (an iteration-dependent value, or one of a branch
    // whose shape rules were deferred: ops/control_flow.cpp).
    check_value_type(g, *c, "capture", /*may_be_untyped=*/true);
  }
  if (!is_subgraph && !g.captures.empty())
    fail("verify graph '{}': only a subgraph captures values (the top-level graph has {})", g.name,
         g.captures.size());
  for (const auto& v : g.values()) {
    if (v->producer) {
      if (!graph_nodes.count(v->producer)) {
        fail("verify graph '{}': value %{} names a producer node that is not in the graph", g.name,
             v->name);
      }
      continue;
    }
    if (v->constant && !defined.count(v.get())) {
      defined.insert(v.get());
      check_value_type(g, *v, "constant");
    }
  }

  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value* in = n.inputs[i];
      if (!in) continue;
      if (!owned.count(in)) {
        fail("verify graph '{}': {} input {} is not a value of this graph", g.name, n.describe(),
             i);
      }
      if (!defined.count(in)) {
        if (in->producer && graph_nodes.count(in->producer)) {
          fail(
              "verify graph '{}': {} uses %{} before its producer {} (nodes are not in "
              "topological order)",
              g.name, n.describe(), in->name, in->producer->describe());
        }
        fail(
            "verify graph '{}': {} uses %{}, which is neither a graph input, a constant nor a node "
            "output",
            g.name, n.describe(), in->name);
      }
    }
    if (n.outputs.empty()) fail("verify graph '{}': {} has no outputs", g.name, n.describe());
    // A storage-format conversion writes the format it names (compiler/ops/tessel_ext.h).
    if (n.op_type == "TransData" && n.outputs[0]) {
      const std::string to = n.attrs.get_string_or("dst_format", "", n.name);
      const StorageFormat want = to == "NC1HWC0" ? StorageFormat::nc1hwc0 : StorageFormat::plain;
      if ((to == "NC1HWC0" || to == "NCHW") && n.outputs[0]->format != want)
        fail("verify graph '{}': {} has dst_format \"{}\" but its output %{} is stored {}", g.name,
             n.describe(), to, n.outputs[0]->name, storage_format_name(n.outputs[0]->format));
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const Value* out = n.outputs[i];
      if (!out) fail("verify graph '{}': {} output {} is null", g.name, n.describe(), i);
      if (!owned.count(out)) {
        fail("verify graph '{}': {} output {} is not a value of this graph", g.name, n.describe(),
             i);
      }
      if (out->producer != &n || out->producer_output != static_cast<int>(i)) {
        fail("verify graph '{}': {} output {} (%{}) records producer {} output {}", g.name,
             n.describe(), i, out->name, out->producer ? out->producer->describe() : "none",
             out->producer_output);
      }
      if (!defined.insert(out).second) {
        fail("verify graph '{}': %{} is defined twice (again as output {} of {})", g.name,
             out->name, i, n.describe());
      }
      check_value_type(g, *out, n.describe(), is_subgraph);
    }
    verify_subgraphs(g, n);
  }

  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const Value* out = g.outputs[i];
    if (!out) fail("verify graph '{}': graph output {} is null", g.name, i);
    if (!defined.count(out)) {
      fail("verify graph '{}': graph output %{} is not produced by any node, input or constant",
           g.name, out->name);
    }
    if (out->format != StorageFormat::plain)
      fail("verify graph '{}': graph output %{} is in format {} (graph outputs are plain)", g.name,
           out->name, storage_format_name(out->format));
  }

  if (auto check = detail::g_shape_rule_check.load()) {
    for (const auto& n : g.nodes()) {
      bool typed =
          true;  // nodes of an iteration-dependent subgraph part are checked when instantiated
      for (const Value* v : n->inputs) typed = typed && (!v || v->dtype != DType::undefined);
      for (const Value* v : n->outputs) typed = typed && v->dtype != DType::undefined;
      if (!typed) continue;
      try {
        check(*n);
      } catch (const Unsupported&) {
        throw;
      } catch (const Error& e) {
        fail("verify graph '{}': {}", g.name, e.what());
      }
    }
  }
}

}  // namespace

void verify_graph(const Graph& g) { verify_graph_impl(g, /*is_subgraph=*/false); }

}  // namespace tessel
