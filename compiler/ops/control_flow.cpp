// Control flow: If (opset 11-16), Loop (opset 11-16) and Scan (opset 9-16), after the ONNX operator
// docs (https://onnx.ai/onnx/operators/onnx__If.html, onnx__Loop.html, onnx__Scan.html). Their
// subgraphs are Graph attributes whose captured enclosing values follow the formal inputs of the
// node (graph.h). Sequence- and optional-typed loop state is not supported (tessel has no sequence
// values); Scan-8 (batched) is rewritten to Scan-9 by the frontend.
//
// Shape rules. If: the branch taken when the condition is known at compile time, else both
// branches must give the same types. Loop: carried values keep the types of their initial values;
// scan outputs are [trip count, ...] and need a trip count known at compile time (M known, and the
// condition known and passed through unchanged by the body, or M absent...). Scan: the trip count
// is the scan inputs' length along their axis.
//
// Reference kernels run the subgraph per iteration with run_reference_bound. A body whose values
// depend on the iteration number (typed `?`, e.g. Slice(x, i, i + 1)) is instantiated per
// iteration: a copy with the iteration number and condition bound as known values, shape rules
// re-run, then interpreted.
#include "compiler/ops/control_flow.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"

namespace tessel::ops {

namespace {

std::string type_of(const Value& v) {
  if (v.dtype == DType::undefined) return "?";
  return std::string(dtype_to_string(v.dtype)) + shape_to_string(v.shape);
}

const Graph& required_graph(const Node& node, const char* attr) {
  const Graph* g = node.attrs.get_graph(attr);
  if (!g) node_fail(node, "missing required subgraph attribute '{}'", attr);
  return *g;
}

bool all_typed(const Graph& g) {
  for (const auto& v : g.values())
    if (v->dtype == DType::undefined) return false;
  return true;
}

}  // namespace

SubgraphInstance instantiate_subgraph(const Node& node, const Graph& sub,
                                      const std::vector<BoundInput>& formal,
                                      const std::vector<const Value*>& captures) {
  if (formal.size() != sub.inputs.size())
    node_fail(node, "subgraph '{}' takes {} inputs, {} are given", sub.name, sub.inputs.size(),
              formal.size());
  if (captures.size() != sub.captures.size())
    node_fail(node, "subgraph '{}' captures {} values, {} are given", sub.name, sub.captures.size(),
              captures.size());
  bool same = all_typed(sub);
  for (size_t i = 0; i < formal.size() && same; ++i)
    same = !formal[i].known && sub.inputs[i]->dtype == formal[i].dtype &&
           sub.inputs[i]->shape == formal[i].shape;
  for (size_t j = 0; j < captures.size() && same; ++j)
    same = sub.captures[j]->dtype == captures[j]->dtype &&
           sub.captures[j]->shape == captures[j]->shape &&
           (sub.captures[j]->constant != nullptr) == (captures[j]->constant != nullptr);
  SubgraphInstance inst;
  if (same) {
    inst.graph = &sub;
    return inst;
  }
  inst.owned = clone_graph(sub);
  Graph& g = *inst.owned;
  for (size_t i = 0; i < formal.size(); ++i) {
    Value* v = g.inputs[i];
    v->dtype = formal[i].dtype;
    v->shape = formal[i].shape;
    v->constant = formal[i].known;
  }
  for (size_t j = 0; j < captures.size(); ++j) {
    Value* v = g.captures[j];
    v->dtype = captures[j]->dtype;
    v->shape = captures[j]->shape;
    v->constant = captures[j]->constant;
  }
  try {
    infer_graph(g);
  } catch (const Unsupported&) {
    throw;
  } catch (const Error& e) {
    node_fail(node, "in subgraph '{}': {}", sub.name, e.what());
  }
  inst.graph = inst.owned.get();
  return inst;
}

std::vector<const Value*> node_captures(const Node& node) {
  const size_t formal = formal_input_count(node);
  return std::vector<const Value*>(node.inputs.begin() + static_cast<std::ptrdiff_t>(formal),
                                   node.inputs.end());
}

namespace {

std::vector<Tensor> run_instance(const Graph& g, const std::vector<const Tensor*>& formal,
                                 const std::vector<const Tensor*>& captures) {
  std::vector<const Value*> values(g.inputs.begin(), g.inputs.end());
  values.insert(values.end(), g.captures.begin(), g.captures.end());
  std::vector<const Tensor*> bound = formal;
  bound.insert(bound.end(), captures.begin(), captures.end());
  return run_reference_bound(g, values, bound);
}

std::vector<const Tensor*> capture_tensors(const Node& node,
                                           const std::vector<const Tensor*>& inputs) {
  const size_t formal = formal_input_count(node);
  return std::vector<const Tensor*>(inputs.begin() + static_cast<std::ptrdiff_t>(formal),
                                    inputs.end());
}

bool scalar_true(const Node& node, const Tensor& t, const char* role) {
  if (t.numel() != 1) node_fail(node, "{} must hold one element, got {}", role, t.numel());
  return t.get_as_double(0) != 0.0;
}

// ---- If ------------------------------------------------------------------------------------

void infer_if(Node& node) {
  const Graph& then_g = required_graph(node, "then_branch");
  const Graph& else_g = required_graph(node, "else_branch");
  const Value& cond = required_input(node, 0, "cond");
  if (cond.dtype != DType::boolean)
    node_fail(node, "cond must be bool, got {}", dtype_to_string(cond.dtype));
  if (shape_numel(cond.shape) != 1)
    node_fail(node, "cond must hold one element, got shape {}", shape_to_string(cond.shape));
  const auto caps = node_captures(node);
  const int known = cond.constant ? (cond.constant->get_as_double(0) != 0.0) : -1;
  // A known condition: only the branch taken is inferred (the other one may not even type, as in
  // exporters' dead branches: ONNX Runtime never looks at it). An unknown one: a branch whose
  // shape rules fail is deferred when the other one types: the If takes the other one's types and
  // running the failing branch (the reference, when the condition selects it) reports the error.
  std::optional<SubgraphInstance> t, e;
  std::string t_error, e_error;
  auto attempt = [&](const Graph& g, std::string& error) -> std::optional<SubgraphInstance> {
    if (known < 0) {
      try {
        return instantiate_subgraph(node, g, {}, caps);
      } catch (const Unsupported&) {
        throw;
      } catch (const Error& x) {
        error = x.what();
        return std::nullopt;
      }
    }
    return instantiate_subgraph(node, g, {}, caps);
  };
  if (known != 0) t = attempt(then_g, t_error);
  if (known != 1) e = attempt(else_g, e_error);
  if (known < 0 && !t && !e) node_fail(node, "{}", t_error);
  // A branch left untyped at import (its shape rules failed there: onnx_import defers them) is
  // deferred the same way when the other one is typed.
  auto untyped = [](const Graph& g) {
    for (const Value* v : g.outputs)
      if (v->dtype == DType::undefined) return true;
    return false;
  };
  if (known < 0 && t && e && untyped(*t->graph) != untyped(*e->graph)) {
    if (untyped(*t->graph))
      t.reset();
    else
      e.reset();
  }
  if (!t) {  // deferred, or not taken: the other branch's types (it keeps its instance)
    t.emplace();
    t->graph = e->graph;
  }
  if (!e) {
    e.emplace();
    e->graph = t->graph;
  }
  if (t->graph->outputs.size() != node.outputs.size() ||
      e->graph->outputs.size() != node.outputs.size())
    node_fail(node, "the branches give {} and {} outputs for {} node outputs",
              t->graph->outputs.size(), e->graph->outputs.size(), node.outputs.size());
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const Value& a = *t->graph->outputs[i];
    const Value& b = *e->graph->outputs[i];
    const Value& pick = known == 0 ? b : a;
    if (known < 0 && (a.dtype != b.dtype || a.shape != b.shape))
      node_unsupported(node,
                       "output {} is {} in then_branch and {} in else_branch, and the condition is "
                       "not known at compile time (bind the input it depends on, e.g. with "
                       "--input-value)",
                       i, type_of(a), type_of(b));
    set_output(node, i, pick.dtype, pick.shape);
  }
}

std::vector<Tensor> run_if(const Node& node, const std::vector<const Tensor*>& inputs) {
  const bool c = scalar_true(node, kernel_input(node, inputs, 0, "cond"), "cond");
  const Graph& branch = required_graph(node, c ? "then_branch" : "else_branch");
  SubgraphInstance inst = instantiate_subgraph(node, branch, {}, node_captures(node));
  return run_instance(*inst.graph, {}, capture_tensors(node, inputs));
}

// ---- Loop ----------------------------------------------------------------------------------

struct LoopShape {
  size_t carried = 0;  // N
  size_t scans = 0;    // K
};

LoopShape loop_shape(const Node& node, const Graph& body) {
  if (body.inputs.size() < 2)
    node_fail(node, "the body must take the iteration number and the condition (has {} inputs)",
              body.inputs.size());
  LoopShape s;
  s.carried = body.inputs.size() - 2;
  if (body.outputs.size() < 1 + s.carried)
    node_fail(node, "the body gives {} outputs for the condition and {} carried values",
              body.outputs.size(), s.carried);
  s.scans = body.outputs.size() - 1 - s.carried;
  if (formal_input_count(node) != 2 + s.carried)
    node_fail(node, "{} inputs for M, cond and {} carried values", formal_input_count(node),
              s.carried);
  if (node.outputs.size() != s.carried + s.scans)
    node_fail(node, "{} outputs for {} carried values and {} scan outputs", node.outputs.size(),
              s.carried, s.scans);
  return s;
}

std::vector<BoundInput> loop_formal(const Node& node, const LoopShape& s, int64_t iteration,
                                    bool known_iteration) {
  std::vector<BoundInput> f;
  BoundInput it{DType::i64, {}, nullptr};
  if (known_iteration)
    it.known = std::make_shared<const Tensor>(Tensor::from_int64s({}, {iteration}));
  f.push_back(it);
  BoundInput c{DType::boolean, {}, nullptr};
  if (known_iteration) {
    Tensor t(DType::boolean, {});
    t.set_from_double(0, 1.0);
    c.known = std::make_shared<const Tensor>(std::move(t));
  }
  f.push_back(c);
  for (size_t k = 0; k < s.carried; ++k) {
    const Value& v = required_input(node, 2 + k, "v_initial");
    f.push_back({v.dtype, v.shape, nullptr});
  }
  return f;
}

}  // namespace

std::optional<int64_t> loop_trip_count(const Node& node) {
  const Graph* body = node.attrs.get_graph("body");
  if (!body || body->inputs.size() < 2 || body->outputs.empty()) return std::nullopt;
  const Value* m = node.input(0);
  const Value* cond = node.input(1);
  if (m && !m->constant) return std::nullopt;
  if (cond && !cond->constant) return std::nullopt;
  if (cond && cond->constant->numel() == 1 && cond->constant->get_as_double(0) == 0.0) return 0;
  // The body keeps the condition true: it passes its condition input through, or gives true.
  const Value* out = body->outputs[0];
  bool stays_true = out == body->inputs[1];
  if (out->producer && out->producer->op_type == "Identity" &&
      out->producer->input(0) == body->inputs[1])
    stays_true = true;
  if (out->constant && out->constant->numel() == 1 && out->constant->get_as_double(0) != 0.0)
    stays_true = true;
  if (!stays_true || !m) return std::nullopt;
  if (m->constant->numel() != 1) return std::nullopt;
  return std::max<int64_t>(0, static_cast<int64_t>(m->constant->get_as_double(0)));
}

namespace {

void infer_loop(Node& node) {
  const Graph& body = required_graph(node, "body");
  const LoopShape s = loop_shape(node, body);
  if (const Value* m = node.input(0)) {
    if (m->dtype != DType::i64 || shape_numel(m->shape) != 1)
      node_fail(node, "M must be one i64 element, got {}", type_of(*m));
  }
  if (const Value* c = node.input(1)) {
    if (c->dtype != DType::boolean || shape_numel(c->shape) != 1)
      node_fail(node, "cond must be one bool element, got {}", type_of(*c));
  }
  const auto caps = node_captures(node);
  // Types of one iteration (the first; the iteration number is bound when the body needs it).
  SubgraphInstance inst =
      instantiate_subgraph(node, body, loop_formal(node, s, 0, !all_typed(body)), caps);
  const Graph& g = *inst.graph;
  for (size_t k = 0; k < s.carried; ++k) {
    const Value& init = *node.input(2 + k);
    const Value& out = *g.outputs[1 + k];
    if (out.dtype != init.dtype || out.shape != init.shape)
      node_unsupported(node,
                       "carried value {} is {} initially but the body gives {} (loop state must "
                       "keep its type; sequences are not supported)",
                       k, type_of(init), type_of(out));
    set_output(node, k, init.dtype, init.shape);
  }
  if (s.scans == 0) return;
  const std::optional<int64_t> trips = loop_trip_count(node);
  if (!trips)
    node_unsupported(node,
                     "has scan outputs, whose length is the trip count, and its trip count is not "
                     "known at compile time (M and cond known, and the body's condition passed "
                     "through)");
  for (size_t k = 0; k < s.scans; ++k) {
    const Value& out = *g.outputs[1 + s.carried + k];
    Shape shape = out.shape;
    shape.insert(shape.begin(), *trips);
    set_output(node, s.carried + k, out.dtype, shape);
  }
}

/// Stacks per-iteration tensors along a new axis `axis` (0 <= axis <= rank).
Tensor stack(const Node& node, const std::vector<Tensor>& parts, DType dtype, const Shape& part,
             int64_t axis) {
  Shape shape = part;
  shape.insert(shape.begin() + axis, static_cast<int64_t>(parts.size()));
  Tensor out(dtype, shape);
  const int64_t esize = static_cast<int64_t>(dtype_size(dtype));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= part[d];
  for (size_t d = static_cast<size_t>(axis); d < part.size(); ++d) inner *= part[d];
  const int64_t n = static_cast<int64_t>(parts.size());
  for (int64_t t = 0; t < n; ++t) {
    if (parts[t].shape() != part || parts[t].dtype() != dtype)
      node_fail(node, "iteration {} gives a scan output of {}{}, iteration 0 gave {}{}", t,
                dtype_to_string(parts[t].dtype()), shape_to_string(parts[t].shape()),
                dtype_to_string(dtype), shape_to_string(part));
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<std::byte*>(out.raw()) + ((o * n + t) * inner) * esize,
                  static_cast<const std::byte*>(parts[t].raw()) + o * inner * esize,
                  static_cast<size_t>(inner * esize));
  }
  return out;
}

std::vector<Tensor> run_loop(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Graph& body = required_graph(node, "body");
  const LoopShape s = loop_shape(node, body);
  const bool has_m = node.input(0) != nullptr;
  const int64_t m = has_m ? static_cast<int64_t>(inputs[0]->get_as_double(0)) : 0;
  bool cond = node.input(1) ? scalar_true(node, *inputs[1], "cond") : true;
  if (!has_m && !node.input(1)) node_fail(node, "has neither M nor cond: it would never end");
  std::vector<Tensor> carried;
  for (size_t k = 0; k < s.carried; ++k) carried.push_back(*inputs[2 + k]);
  std::vector<std::vector<Tensor>> scans(s.scans);
  const auto caps = node_captures(node);
  const auto cap_tensors = capture_tensors(node, inputs);
  const bool per_iteration = !all_typed(body);
  SubgraphInstance fixed;
  if (!per_iteration)
    fixed = instantiate_subgraph(node, body, loop_formal(node, s, 0, false), caps);
  for (int64_t i = 0; (!has_m || i < m) && cond; ++i) {
    SubgraphInstance inst;
    if (per_iteration) inst = instantiate_subgraph(node, body, loop_formal(node, s, i, true), caps);
    const Graph& g = per_iteration ? *inst.graph : *fixed.graph;
    Tensor it = Tensor::from_int64s({}, {i});
    Tensor c(DType::boolean, {});
    c.set_from_double(0, 1.0);
    std::vector<const Tensor*> formal = {&it, &c};
    for (const Tensor& t : carried) formal.push_back(&t);
    std::vector<Tensor> out = run_instance(g, formal, cap_tensors);
    cond = scalar_true(node, out[0], "the body's condition");
    for (size_t k = 0; k < s.carried; ++k) carried[k] = std::move(out[1 + k]);
    for (size_t k = 0; k < s.scans; ++k) scans[k].push_back(std::move(out[1 + s.carried + k]));
  }
  std::vector<Tensor> results = std::move(carried);
  for (size_t k = 0; k < s.scans; ++k) {
    const Value& o = *node.outputs[s.carried + k];
    Shape part(o.shape.begin() + 1, o.shape.end());
    if (static_cast<int64_t>(scans[k].size()) != o.shape[0])
      node_fail(node, "ran {} iterations but its scan output %{} was given {} at compile time",
                scans[k].size(), o.name, o.shape[0]);
    results.push_back(stack(node, scans[k], o.dtype, part, 0));
  }
  return results;
}

// ---- Scan (opset 9+) ------------------------------------------------------------------------

struct ScanShape {
  size_t states = 0, scan_inputs = 0, scan_outputs = 0;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
  int64_t trips = 0;
};

ScanShape scan_shape(const Node& node, const Graph& body) {
  ScanShape s;
  const int64_t m = node.attrs.get_int("num_scan_inputs", node.name);
  const size_t formal = formal_input_count(node);
  if (m < 1 || static_cast<size_t>(m) > formal)
    node_fail(node, "num_scan_inputs = {} with {} inputs", m, formal);
  s.scan_inputs = static_cast<size_t>(m);
  s.states = formal - s.scan_inputs;
  if (body.inputs.size() != formal)
    node_fail(node, "the body takes {} inputs, the node has {}", body.inputs.size(), formal);
  if (body.outputs.size() < s.states)
    node_fail(node, "the body gives {} outputs for {} state values", body.outputs.size(), s.states);
  s.scan_outputs = body.outputs.size() - s.states;
  if (node.outputs.size() != s.states + s.scan_outputs)
    node_fail(node, "{} outputs for {} states and {} scan outputs", node.outputs.size(), s.states,
              s.scan_outputs);
  s.in_axes =
      node.attrs.get_ints_or("scan_input_axes", std::vector<int64_t>(s.scan_inputs, 0), node.name);
  s.in_dirs = node.attrs.get_ints_or("scan_input_directions",
                                     std::vector<int64_t>(s.scan_inputs, 0), node.name);
  s.out_axes = node.attrs.get_ints_or("scan_output_axes", std::vector<int64_t>(s.scan_outputs, 0),
                                      node.name);
  s.out_dirs = node.attrs.get_ints_or("scan_output_directions",
                                      std::vector<int64_t>(s.scan_outputs, 0), node.name);
  if (s.in_axes.size() != s.scan_inputs || s.in_dirs.size() != s.scan_inputs)
    node_fail(node, "scan_input_axes/directions need {} entries", s.scan_inputs);
  if (s.out_axes.size() != s.scan_outputs || s.out_dirs.size() != s.scan_outputs)
    node_fail(node, "scan_output_axes/directions need {} entries", s.scan_outputs);
  for (size_t j = 0; j < s.scan_inputs; ++j) {
    const Value& x = required_input(node, s.states + j, "scan input");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    s.in_axes[j] = normalize_axis(node, s.in_axes[j], rank, "scan_input_axes");
    const int64_t len = x.shape[static_cast<size_t>(s.in_axes[j])];
    if (j == 0) s.trips = len;
    if (len != s.trips)
      node_fail(node, "scan input {} has length {} along its axis, scan input 0 has {}", j, len,
                s.trips);
  }
  return s;
}

std::vector<BoundInput> scan_formal(const Node& node, const ScanShape& s) {
  std::vector<BoundInput> f;
  for (size_t k = 0; k < s.states; ++k) {
    const Value& v = required_input(node, k, "initial state");
    f.push_back({v.dtype, v.shape, nullptr});
  }
  for (size_t j = 0; j < s.scan_inputs; ++j) {
    const Value& x = *node.input(s.states + j);
    Shape sl = x.shape;
    sl.erase(sl.begin() + s.in_axes[j]);
    f.push_back({x.dtype, sl, nullptr});
  }
  return f;
}

void infer_scan(Node& node) {
  const Graph& body = required_graph(node, "body");
  const ScanShape s = scan_shape(node, body);
  SubgraphInstance inst =
      instantiate_subgraph(node, body, scan_formal(node, s), node_captures(node));
  const Graph& g = *inst.graph;
  for (size_t k = 0; k < s.states; ++k) {
    const Value& init = *node.input(k);
    const Value& out = *g.outputs[k];
    if (out.dtype != init.dtype || out.shape != init.shape)
      node_unsupported(node, "state {} is {} initially but the body gives {}", k, type_of(init),
                       type_of(out));
    set_output(node, k, init.dtype, init.shape);
  }
  for (size_t k = 0; k < s.scan_outputs; ++k) {
    const Value& out = *g.outputs[s.states + k];
    if (out.dtype == DType::undefined)
      node_unsupported(node, "scan output {} has a type that depends on the iteration", k);
    const int64_t axis = normalize_axis(
        node, s.out_axes[k], static_cast<int64_t>(out.shape.size()) + 1, "scan_output_axes");
    Shape shape = out.shape;
    shape.insert(shape.begin() + axis, s.trips);
    set_output(node, s.states + k, out.dtype, shape);
  }
}

/// Slice t of `x` along `axis` (the axis removed).
Tensor take(const Tensor& x, int64_t axis, int64_t t) {
  const Shape& xs = x.shape();
  Shape part = xs;
  part.erase(part.begin() + axis);
  Tensor out(x.dtype(), part);
  const int64_t esize = static_cast<int64_t>(dtype_size(x.dtype()));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  for (size_t d = static_cast<size_t>(axis) + 1; d < xs.size(); ++d) inner *= xs[d];
  const int64_t n = xs[axis];
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<std::byte*>(out.raw()) + o * inner * esize,
                static_cast<const std::byte*>(x.raw()) + ((o * n + t) * inner) * esize,
                static_cast<size_t>(inner * esize));
  return out;
}

std::vector<Tensor> run_scan(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Graph& body = required_graph(node, "body");
  const ScanShape s = scan_shape(node, body);
  SubgraphInstance inst =
      instantiate_subgraph(node, body, scan_formal(node, s), node_captures(node));
  const auto cap_tensors = capture_tensors(node, inputs);
  std::vector<Tensor> states;
  for (size_t k = 0; k < s.states; ++k) states.push_back(*inputs[k]);
  std::vector<std::vector<Tensor>> outs(s.scan_outputs, std::vector<Tensor>(s.trips));
  for (int64_t t = 0; t < s.trips; ++t) {
    std::vector<Tensor> slices;
    for (size_t j = 0; j < s.scan_inputs; ++j)
      slices.push_back(
          take(*inputs[s.states + j], s.in_axes[j], s.in_dirs[j] ? s.trips - 1 - t : t));
    std::vector<const Tensor*> formal;
    for (const Tensor& x : states) formal.push_back(&x);
    for (const Tensor& x : slices) formal.push_back(&x);
    std::vector<Tensor> out = run_instance(*inst.graph, formal, cap_tensors);
    for (size_t k = 0; k < s.states; ++k) states[k] = std::move(out[k]);
    for (size_t k = 0; k < s.scan_outputs; ++k)
      outs[k][s.out_dirs[k] ? s.trips - 1 - t : t] = std::move(out[s.states + k]);
  }
  std::vector<Tensor> results = std::move(states);
  for (size_t k = 0; k < s.scan_outputs; ++k) {
    const Value& o = *node.outputs[s.states + k];
    const Value& part = *inst.graph->outputs[s.states + k];
    const int64_t axis = normalize_axis(
        node, s.out_axes[k], static_cast<int64_t>(part.shape.size()) + 1, "scan_output_axes");
    results.push_back(stack(node, outs[k], o.dtype, part.shape, axis));
  }
  return results;
}

}  // namespace

void register_control_flow_ops() {
  register_op({"If", infer_if, run_if});
  register_op({"Loop", infer_loop, run_loop});
  register_op({"Scan", infer_scan, run_scan});
}

}  // namespace tessel::ops
