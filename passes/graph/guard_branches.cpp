// guard_branches: an If whose condition is known only at run time becomes both of its branches in
// the enclosing graph, every node of a branch marked with the `branch_guard` attribute (the name of
// a bool value: the node runs only when that value is true), and one Where per output choosing the
// taken branch's value:
//   %y = If(%c) {then: ... -> %t, else: ... -> %e}
//     ->  %c0 = Reshape(%c, [])                         (a scalar view, when %c is bool[1])
//         %nc = Not(%c0)
//         ...then's nodes {branch_guard="c0"}  -> %t'
//         ...else's nodes {branch_guard="nc"}  -> %e'
//         %y  = Where(%c0, %t', %e')
// Each branch is first made a graph of its own (its non-constant captures its inputs, its
// constant captures constants) and given to `prepare`, which puts it in the compiled form (the
// driver: driver::compiled_form's transforms, this one included, so an If nested in a branch is
// guarded too: its nodes' guard becomes And(outer guard, inner guard), computed unguarded). The
// compiled backends then branch around a guarded node's kernels on the guard's value (the CPU in
// its entry point, the NPU on the scalar unit), so only the taken branch runs; Where reads both
// branches' results, the one not taken being whatever its buffer held.
// Needs: fold_control first (Ifs with a known condition are inlined, not guarded), shape-inferred
// input. Guarantees: no If is left; If outputs keep their names (produced by the Where); branch
// nodes keep their names with the prefix "<If name>/then/" or "<If name>/else/". Throws
// tessel::Unsupported naming the If when its branches' outputs differ in shape or dtype from each
// other (the compiled targets plan static buffers), the condition has more than one element, or a
// branch does not compile (`prepare` throws: e.g. a dead branch whose shapes do not infer for the
// bound input shapes). Nodes combining a nested If's guard with the outer one (And) are named
// "<If name>/then_guard/<inner guard>" (or else_guard) and run unguarded.
#include <fmt/format.h>

#include <unordered_map>

#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"

namespace tessel::graph_passes {

namespace {

Value* emit(Graph& g, Node* at, const std::string& op, std::vector<Value*> ins, Attributes attrs,
            const std::string& base, Value* out = nullptr) {
  if (!out) out = g.add_value(g.unique_value_name(base), DType::undefined, {});
  Node* n = g.insert_node_before(at, op, g.unique_node_name(base), std::move(ins), {out},
                                 std::move(attrs));
  ops::infer_and_propagate(*n);
  return out;
}

/// Branch `sub` of If `at` as a graph of its own: non-constant captures become its inputs (in
/// capture order; `bound` receives the enclosing value of each), constant captures stay constants
/// (`constants` maps each to the enclosing constant, so inlining shares it: weights once).
std::unique_ptr<Graph> standalone(const Graph& sub, const Node& at, std::vector<Value*>& bound,
                                  std::unordered_map<const Value*, Value*>& constants) {
  std::unique_ptr<Graph> s = clone_graph(sub);
  const size_t first = formal_input_count(at);
  s->inputs.clear();
  for (size_t j = 0; j < s->captures.size(); ++j) {
    Value* c = s->captures[j];
    if (c->constant) {
      constants[c] = at.inputs[first + j];
      continue;
    }
    s->inputs.push_back(c);
    bound.push_back(at.inputs[first + j]);
  }
  s->captures.clear();
  return s;
}

class Guarder {
 public:
  Guarder(Graph& g, Node* at) : g_(g), at_(at) {}

  /// Copies the nodes of `s` (prepared) before the If, each guarded by `guard`; returns the
  /// values of its outputs.
  std::vector<Value*> inline_branch(const Graph& s, const std::vector<Value*>& bound,
                                    std::unordered_map<const Value*, Value*> map, Value* guard,
                                    const std::string& prefix) {
    for (size_t i = 0; i < s.inputs.size(); ++i) map[s.inputs[i]] = bound[i];
    std::map<std::string, Value*> combined;  // inner guard name -> And(guard, inner)
    auto mapped = [&](const Value* v) -> Value* {
      if (!v) return nullptr;
      auto it = map.find(v);
      if (it != map.end()) return it->second;
      TESSEL_CHECK(v->constant && !v->producer, "guard_branches {}: %{} has no value",
                   at_->describe(), v->name);
      Value* c = g_.add_value(g_.unique_value_name(prefix + v->name), v->dtype, v->shape);
      c->constant = v->constant;
      map[v] = c;
      return c;
    };
    for (const auto& n : s.nodes()) {
      std::vector<Value*> ins, outs;
      for (const Value* v : n->inputs) ins.push_back(mapped(v));
      Attributes attrs = n->attrs;
      Value* g = guard;
      if (attrs.has(kBranchGuardAttr)) {  // a node of a nested If: both guards must hold
        const std::string inner = attrs.get_string_or(kBranchGuardAttr, "", n->name);
        auto it = combined.find(inner);
        if (it == combined.end()) {
          const Value* iv = s.find_value(inner);
          TESSEL_CHECK(iv, "{}: branch_guard names no value '{}'", n->describe(), inner);
          Value* both = emit(g_, at_, "And", {guard, mapped(iv)}, {},
                             prefix.substr(0, prefix.size() - 1) + "_guard/" + inner);
          it = combined.emplace(inner, both).first;
        }
        g = it->second;
      }
      attrs.set(kBranchGuardAttr, g->name);
      for (const Value* v : n->outputs) {
        if (!v) {
          outs.push_back(nullptr);
          continue;
        }
        Value* o = g_.add_value(g_.unique_value_name(prefix + v->name), v->dtype, v->shape);
        o->constant = v->constant;
        map[v] = o;
        outs.push_back(o);
      }
      g_.insert_node_before(at_, n->op_type, g_.unique_node_name(prefix + n->name), std::move(ins),
                            std::move(outs), std::move(attrs));
    }
    std::vector<Value*> results;
    for (const Value* v : s.outputs) results.push_back(mapped(v));
    return results;
  }

 private:
  Graph& g_;
  Node* at_;
};

bool guard_if(Graph& g, Node* n, const std::function<void(Graph&)>& prepare) {
  Value* cond = n->input(0);
  if (!cond || cond->constant) return false;
  const Graph* then_b = n->attrs.get_graph("then_branch");
  const Graph* else_b = n->attrs.get_graph("else_branch");
  if (!then_b || !else_b) return false;
  if (shape_numel(cond->shape) != 1)
    throw Unsupported(
        fmt::format("{}: the condition '{}' has shape {}; an If's condition is one "
                    "element",
                    n->describe(), cond->name, shape_to_string(cond->shape)));
  Value* c = cond;
  if (c->dtype != DType::boolean) {
    Attributes a;
    a.set("to", int64_t{9});  // ONNX TensorProto BOOL
    c = emit(g, n, "Cast", {c}, std::move(a), cond->name + "_bool");
  }
  if (!c->shape.empty())
    c = emit(
        g, n, "Reshape",
        {c, g.add_constant(g.unique_value_name(n->name + "/scalar"), Tensor::from_int64s({0}, {}))},
        {}, cond->name + "_scalar");
  Value* not_c = emit(g, n, "Not", {c}, {}, n->name + "/else_taken");
  Guarder gd(g, n);
  std::vector<std::vector<Value*>> results;
  for (const auto& [branch, guard, tag] :
       {std::tuple{then_b, c, "then"}, std::tuple{else_b, not_c, "else"}}) {
    std::vector<Value*> bound;
    std::unordered_map<const Value*, Value*> constants;
    std::unique_ptr<Graph> s = standalone(*branch, *n, bound, constants);
    try {
      ops::infer_graph(*s);  // typed for the bound shapes (a deferred branch was not)
      prepare(*s);
    } catch (const Error& e) {  // e.g. a dead branch whose shapes do not infer for these inputs
      throw Unsupported(fmt::format(
          "{}: {}_branch does not compile for these input shapes ({}); bind the inputs the "
          "condition depends on (e.g. --input-value) so that only the branch taken is compiled",
          n->describe(), tag, e.what()));
    }
    results.push_back(gd.inline_branch(*s, bound, std::move(constants), guard,
                                       fmt::format("{}/{}/", n->name, tag)));
  }
  for (size_t k = 0; k < n->outputs.size(); ++k) {
    Value* original = n->outputs[k];
    if (!original) continue;
    Value* t = results[0].at(k);
    Value* e = results[1].at(k);
    if (t->shape != e->shape || t->dtype != e->dtype)
      throw Unsupported(fmt::format(
          "{}: output {} ('{}') is {}{} in then_branch and {}{} in else_branch; a compiled If "
          "needs both branches to give the same dtype and shape",
          n->describe(), k, original->name, dtype_to_string(t->dtype), shape_to_string(t->shape),
          dtype_to_string(e->dtype), shape_to_string(e->shape)));
    // The If's output is rebound to the Where (its name and uses stay).
    Value* dummy = g.add_value(g.unique_value_name(original->name + "_guarded"), original->dtype,
                               original->shape);
    dummy->producer = n;
    dummy->producer_output = static_cast<int>(k);
    n->outputs[k] = dummy;
    original->producer = nullptr;
    original->constant.reset();
    if (t == e)
      emit(g, n, "Identity", {t}, {}, n->name + "_out" + std::to_string(k), original);
    else
      emit(g, n, "Where", {c, t, e}, {}, n->name + "_out" + std::to_string(k), original);
  }
  g.remove_node(n);
  return true;
}

}  // namespace

bool guard_branches(Graph& graph, const std::function<void(Graph&)>& prepare) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    for (const auto& np : graph.nodes())
      if (np->op_type == "If" && guard_if(graph, np.get(), prepare)) {
        changed = again = true;
        break;  // the node list changed
      }
  }
  return changed;
}

const Value* branch_guard(const Graph& graph, const Node& node) {
  if (!node.attrs.has(kBranchGuardAttr)) return nullptr;
  const std::string name = node.attrs.get_string_or(kBranchGuardAttr, "", node.name);
  const Value* v = graph.find_value(name);
  if (!v)
    fail("{}: attribute {}='{}' names no value of graph '{}'", node.describe(), kBranchGuardAttr,
         name, graph.name);
  return v;
}

}  // namespace tessel::graph_passes
