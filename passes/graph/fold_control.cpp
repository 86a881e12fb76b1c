// fold_control: control flow whose path is known at compile time becomes straight-line
// dataflow, so the compiled targets see only ordinary ops.
//   If whose condition is known (a constant, a value computed from shapes, an input bound to a
//     value)                           -> the nodes of the branch taken
//   Loop whose trip count is known (ops::loop_trip_count: M known, the condition known and passed
//     through by the body)             -> the body once per iteration, the iteration number a
//                                          constant; scan outputs Unsqueeze + Concat
//   Scan (its trip count is the scan inputs' length)
//                                      -> the body once per iteration on Slice + Squeeze of the
//                                          scan inputs; scan outputs Unsqueeze + Concat
// Loops of more than kMaxUnrolledIterations iterations are left as they are. Every inlined node's
// shape rule runs again with data propagation, so values that depended on the iteration number
// (`?` in the body) get static shapes. A node output that the rewrite replaces keeps its name
// (an Identity of the inlined value, which simplify removes). Runs before the pipeline
// (driver::load_model) and before compiling for npu/cpu (driver::run_model): what it exposes is
// folded and fused by the passes after it. Needs shape-inferred input (the frontend's).
#include <fmt/format.h>

#include <unordered_map>

#include "compiler/ops/control_flow.h"
#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"

namespace tessel::graph_passes {

namespace {

class Inliner {
 public:
  Inliner(Graph& g, Node* at) : g_(g), at_(at) {}

  /// Copies the nodes of `sub` before `at` with its formal inputs bound to `formal` and its
  /// captures to the node's captured inputs; returns the values of its outputs.
  std::vector<Value*> inline_graph(const Graph& sub, const std::vector<Value*>& formal,
                                   const std::string& prefix) {
    std::unordered_map<const Value*, Value*> map;
    TESSEL_CHECK(formal.size() == sub.inputs.size(), "inline {}: {} formal values for {} inputs",
                 sub.name, formal.size(), sub.inputs.size());
    for (size_t i = 0; i < formal.size(); ++i) map[sub.inputs[i]] = formal[i];
    const size_t first_capture = formal_input_count(*at_);
    for (size_t j = 0; j < sub.captures.size(); ++j)
      map[sub.captures[j]] = at_->inputs[first_capture + j];
    auto mapped = [&](const Value* v) -> Value* {
      if (!v) return nullptr;
      auto it = map.find(v);
      if (it != map.end()) return it->second;
      TESSEL_CHECK(v->constant && !v->producer, "inline {}: %{} has no value", sub.name, v->name);
      Value* c = g_.add_value(g_.unique_value_name(prefix + v->name), v->dtype, v->shape);
      c->constant = v->constant;
      map[v] = c;
      return c;
    };
    for (const auto& n : sub.nodes()) {
      std::vector<Value*> ins, outs;
      for (const Value* v : n->inputs) ins.push_back(mapped(v));
      for (const Value* v : n->outputs) {
        Value* o = g_.add_value(g_.unique_value_name(prefix + v->name), DType::undefined, {});
        map[v] = o;
        outs.push_back(o);
      }
      Node* copy = g_.insert_node_before(at_, n->op_type, g_.unique_node_name(prefix + n->name),
                                         std::move(ins), std::move(outs), n->attrs);
      ops::infer_and_propagate(*copy);
    }
    std::vector<Value*> results;
    for (const Value* v : sub.outputs) results.push_back(mapped(v));
    return results;
  }

  /// An op node before `at` with one fresh output, shape-inferred.
  Value* emit(const std::string& op, std::vector<Value*> ins, Attributes attrs,
              const std::string& base) {
    Value* out = g_.add_value(g_.unique_value_name(base), DType::undefined, {});
    Node* n = g_.insert_node_before(at_, op, g_.unique_node_name(base), std::move(ins), {out},
                                    std::move(attrs));
    ops::infer_and_propagate(*n);
    return out;
  }

  Value* i64s(const std::string& base, const std::vector<int64_t>& v) {
    return g_.add_constant(g_.unique_value_name(base),
                           Tensor::from_int64s({static_cast<int64_t>(v.size())}, v));
  }

  /// Stacks per-iteration values along a new axis `axis`: Unsqueeze each, then Concat.
  Value* stack(const std::vector<Value*>& parts, int64_t axis, const Value& like,
               const std::string& base) {
    if (parts.empty()) {  // zero iterations: an empty tensor of the node output's type
      return g_.add_constant(g_.unique_value_name(base), Tensor(like.dtype, like.shape));
    }
    std::vector<Value*> expanded;
    for (Value* p : parts)
      expanded.push_back(emit("Unsqueeze", {p, i64s(base + "_axes", {axis})}, {}, base + "_u"));
    Attributes a;
    a.set("axis", axis);
    return emit("Concat", expanded, std::move(a), base);
  }

  /// Replaces the node by `values` (one per output): each output becomes an Identity of its value,
  /// so its name and its uses stay; the node is removed.
  void replace(const std::vector<Value*>& values) {
    TESSEL_CHECK(values.size() == at_->outputs.size(), "inline {}: {} values for {} outputs",
                 at_->describe(), values.size(), at_->outputs.size());
    for (size_t k = 0; k < values.size(); ++k) {
      Value* original = at_->outputs[k];
      Value* dummy = g_.add_value(g_.unique_value_name(original->name + "_inlined"),
                                  original->dtype, original->shape);
      dummy->producer = at_;
      dummy->producer_output = static_cast<int>(k);
      at_->outputs[k] = dummy;
      original->producer = nullptr;
      original->constant.reset();
      Node* id = g_.insert_node_before(at_, "Identity",
                                       g_.unique_node_name(at_->name + "_out" + std::to_string(k)),
                                       {values[k]}, {original});
      ops::infer_and_propagate(*id);
    }
    g_.remove_node(at_);
  }

 private:
  Graph& g_;
  Node* at_;
};

Value* bool_constant(Graph& g, const std::string& base, bool v) {
  Tensor t(DType::boolean, {});
  t.set_from_double(0, v ? 1.0 : 0.0);
  return g.add_constant(g.unique_value_name(base), std::move(t));
}

bool inline_if(Graph& g, Node* n) {
  const Value* cond = n->input(0);
  if (!cond || !cond->constant) return false;
  const bool taken = cond->constant->get_as_double(0) != 0.0;
  const Graph* branch = n->attrs.get_graph(taken ? "then_branch" : "else_branch");
  if (!branch) return false;
  Inliner in(g, n);
  in.replace(in.inline_graph(*branch, {}, n->name + "/"));
  return true;
}

bool unroll_loop(Graph& g, Node* n) {
  const std::optional<int64_t> trips = ops::loop_trip_count(*n);
  if (!trips || *trips > kMaxUnrolledIterations) return false;
  const Graph* body = n->attrs.get_graph("body");
  const size_t carried = body->inputs.size() - 2;
  const size_t scans = body->outputs.size() - 1 - carried;
  Inliner in(g, n);
  std::vector<Value*> state(n->inputs.begin() + 2, n->inputs.begin() + 2 + carried);
  std::vector<std::vector<Value*>> scan_parts(scans);
  for (int64_t i = 0; i < *trips; ++i) {
    const std::string prefix = fmt::format("{}/{}/", n->name, i);
    std::vector<Value*> formal = {
        g.add_constant(g.unique_value_name(prefix + "iteration"), Tensor::from_int64s({}, {i})),
        bool_constant(g, prefix + "cond", true)};
    formal.insert(formal.end(), state.begin(), state.end());
    std::vector<Value*> out = in.inline_graph(*body, formal, prefix);
    for (size_t k = 0; k < carried; ++k) state[k] = out[1 + k];
    for (size_t k = 0; k < scans; ++k) scan_parts[k].push_back(out[1 + carried + k]);
  }
  std::vector<Value*> results = state;
  for (size_t k = 0; k < scans; ++k)
    results.push_back(in.stack(scan_parts[k], 0, *n->outputs[carried + k],
                               n->outputs[carried + k]->name + "_stacked"));
  in.replace(results);
  return true;
}

bool unroll_scan(Graph& g, Node* n) {
  const Graph* body = n->attrs.get_graph("body");
  if (!body) return false;
  const size_t formal_count = formal_input_count(*n);
  const int64_t m = n->attrs.get_int("num_scan_inputs", n->name);
  const size_t states = formal_count - static_cast<size_t>(m);
  const size_t scan_outs = body->outputs.size() - states;
  auto in_axes = n->attrs.get_ints_or("scan_input_axes", std::vector<int64_t>(m, 0), n->name);
  const auto in_dirs =
      n->attrs.get_ints_or("scan_input_directions", std::vector<int64_t>(m, 0), n->name);
  auto out_axes =
      n->attrs.get_ints_or("scan_output_axes", std::vector<int64_t>(scan_outs, 0), n->name);
  const auto out_dirs =
      n->attrs.get_ints_or("scan_output_directions", std::vector<int64_t>(scan_outs, 0), n->name);
  const Value* first = n->input(states);
  if (in_axes[0] < 0) in_axes[0] += static_cast<int64_t>(first->shape.size());
  const int64_t trips = first->shape[static_cast<size_t>(in_axes[0])];
  if (trips > kMaxUnrolledIterations) return false;
  Inliner in(g, n);
  std::vector<Value*> state(n->inputs.begin(), n->inputs.begin() + static_cast<long>(states));
  std::vector<std::vector<Value*>> parts(scan_outs, std::vector<Value*>(trips));
  for (int64_t t = 0; t < trips; ++t) {
    const std::string prefix = fmt::format("{}/{}/", n->name, t);
    std::vector<Value*> formal = state;
    for (int64_t j = 0; j < m; ++j) {
      Value* x = n->inputs[states + static_cast<size_t>(j)];
      int64_t axis = in_axes[j];
      if (axis < 0) axis += static_cast<int64_t>(x->shape.size());
      const int64_t at = in_dirs[j] ? trips - 1 - t : t;
      Value* sl = in.emit("Slice",
                          {x, in.i64s(prefix + "start", {at}), in.i64s(prefix + "end", {at + 1}),
                           in.i64s(prefix + "axis", {axis})},
                          {}, prefix + x->name + "_slice");
      formal.push_back(
          in.emit("Squeeze", {sl, in.i64s(prefix + "axis", {axis})}, {}, prefix + x->name));
    }
    std::vector<Value*> out = in.inline_graph(*body, formal, prefix);
    for (size_t k = 0; k < states; ++k) state[k] = out[k];
    for (size_t k = 0; k < scan_outs; ++k)
      parts[k][out_dirs[k] ? trips - 1 - t : t] = out[states + k];
  }
  std::vector<Value*> results = state;
  for (size_t k = 0; k < scan_outs; ++k) {
    const Value& o = *n->outputs[states + k];
    int64_t axis = out_axes[k];
    if (axis < 0) axis += static_cast<int64_t>(o.shape.size());
    results.push_back(in.stack(parts[k], axis, o, o.name + "_stacked"));
  }
  in.replace(results);
  return true;
}

}  // namespace

bool fold_control(Graph& graph) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    for (const auto& np : graph.nodes()) {
      Node* n = np.get();
      bool done = false;
      if (n->op_type == "If") done = inline_if(graph, n);
      // else if: inline_if frees n when it succeeds (ASan: heap-use-after-free reading op_type).
      else if (n->op_type == "Loop")
        done = unroll_loop(graph, n);
      else if (n->op_type == "Scan")
        done = unroll_scan(graph, n);
      if (done) {  // the node list changed: start over (inlined bodies may hold control flow)
        changed = again = true;
        break;
      }
    }
  }
  return changed;
}

}  // namespace tessel::graph_passes
