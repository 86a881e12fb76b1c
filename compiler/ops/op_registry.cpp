// The op registry, shape inference with data propagation, and broadcasting (see op_registry.h).
#include "compiler/ops/op_registry.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace tessel::ops {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, OpDef> ops;  // std::map: pointers to entries stay valid on insertion
};

Registry& registry() {
  static Registry r;
  return r;
}

std::once_flag g_builtins_once;
// True on the thread running register_builtin_ops(), whose register_op() calls must not wait for
// the registration they are part of.
thread_local bool t_registering_builtins = false;

void ensure_builtins() {
  if (t_registering_builtins) return;
  std::call_once(g_builtins_once, [] {
    t_registering_builtins = true;
    struct Reset {
      ~Reset() { t_registering_builtins = false; }
    } reset;
    register_builtin_ops();
  });
}

// Ops whose outputs are not a function of their inputs: never computed at compile time.
bool is_nondeterministic(const std::string& op) {
  return op.rfind("Random", 0) == 0 || op == "Multinomial" || op == "Bernoulli";
}

std::string type_string(DType dtype, const Shape& shape) {
  return std::string(dtype_to_string(dtype)) + shape_to_string(shape);
}

// verify_graph's shape-rule check (installed into tessel_ir below): re-runs the rule on copies.
void check_node_shape_rule(const Node& node) {
  const OpDef* def = find_op(node.op_type);
  if (!def || !def->infer) return;
  Node scratch;
  scratch.name = node.name;
  scratch.op_type = node.op_type;
  scratch.attrs = node.attrs;
  std::vector<Value> inputs(node.inputs.size());
  std::vector<Value> outputs(node.outputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i]) {
      inputs[i] = *node.inputs[i];
      scratch.inputs.push_back(&inputs[i]);
    } else {
      scratch.inputs.push_back(nullptr);
    }
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    outputs[i].name = node.outputs[i]->name;
    outputs[i].producer = &scratch;
    outputs[i].producer_output = static_cast<int>(i);
    scratch.outputs.push_back(&outputs[i]);
  }
  def->infer(scratch);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const Value& have = *node.outputs[i];
    if (have.dtype != outputs[i].dtype || have.shape != outputs[i].shape) {
      fail("{}: output %{} is {} but the shape rule gives {}", node.describe(), have.name,
           type_string(have.dtype, have.shape), type_string(outputs[i].dtype, outputs[i].shape));
    }
  }
}

struct InstallShapeRuleCheck {
  InstallShapeRuleCheck() { detail::set_shape_rule_check(&check_node_shape_rule); }
} g_install_shape_rule_check;

// ONNX Shape (opset 15: optional start/end, negative counts from the back, clamped to [0, rank]).
Tensor shape_value(const Node& node) {
  const Value* in = node.input(0);
  const auto rank = static_cast<int64_t>(in->shape.size());
  auto clamp_axis = [&](int64_t a) {
    if (a < 0) a += rank;
    return std::clamp<int64_t>(a, 0, rank);
  };
  const int64_t start = clamp_axis(node.attrs.get_int_or("start", 0, node.name));
  const int64_t end = clamp_axis(node.attrs.get_int_or("end", rank, node.name));
  std::vector<int64_t> dims;
  for (int64_t a = start; a < end; ++a) dims.push_back(in->shape[static_cast<size_t>(a)]);
  return Tensor::from_int64s({static_cast<int64_t>(dims.size())}, dims);
}

void check_result(const Node& node, size_t i, const Tensor& t) {
  const Value& out = *node.outputs[i];
  if (t.dtype() != out.dtype || t.shape() != out.shape) {
    internal_fail(
        "{}: the reference kernel computed output {} (%{}) as {} but the shape rule says {}",
        node.describe(), i, out.name, type_string(t.dtype(), t.shape()),
        type_string(out.dtype, out.shape));
  }
}

}  // namespace

void register_op(OpDef def) {
  TESSEL_CHECK(!def.op_type.empty(), "register_op: empty op type");
  TESSEL_CHECK(static_cast<bool>(def.infer), "register_op {}: no shape rule", def.op_type);
  ensure_builtins();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const std::string op = def.op_type;
  auto [it, fresh] = r.ops.emplace(op, std::move(def));
  TESSEL_CHECK(fresh, "op '{}' is registered twice", op);
}

const OpDef* find_op(const std::string& op_type) {
  ensure_builtins();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.ops.find(op_type);
  return it == r.ops.end() ? nullptr : &it->second;
}

std::vector<std::string> registered_ops() {
  ensure_builtins();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> out;
  for (const auto& [name, def] : r.ops) out.push_back(name);
  return out;
}

void infer_node(Node& node) {
  const OpDef* def = find_op(node.op_type);
  if (!def)
    throw Unsupported(fmt::format("unsupported op '{}' (node '{}')", node.op_type, node.name));
  def->infer(node);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    TESSEL_CHECK(node.outputs[i]->dtype != DType::undefined,
                 "the shape rule of {} left output {} (%{}) without an element type",
                 node.describe(), i, node.outputs[i]->name);
  }
}

void propagate_values(Node& node) {
  for (Value* out : node.outputs) out->constant.reset();
  if (node.op_type == "Shape" || node.op_type == "Size") {
    // Depend only on the static input shape, not on the input's values.
    if (!node.input(0) || node.outputs.size() != 1) return;
    Tensor t = node.op_type == "Shape"
                   ? shape_value(node)
                   : Tensor::from_int64s({}, {shape_numel(node.input(0)->shape)});
    check_result(node, 0, t);
    node.outputs[0]->constant = std::make_shared<const Tensor>(std::move(t));
    return;
  }
  if (is_nondeterministic(node.op_type)) return;
  std::vector<const Tensor*> inputs;
  for (const Value* in : node.inputs) {
    if (in && !in->constant) return;
    inputs.push_back(in ? in->constant.get() : nullptr);
  }
  for (const Value* out : node.outputs) {
    if (shape_numel(out->shape) > kMaxPropagatedElements) return;
  }
  const OpDef* def = find_op(node.op_type);
  if (!def || !def->reference) return;
  std::vector<Tensor> results;
  try {
    results = def->reference(node, inputs);
  } catch (const Unsupported&) {
    return;  // an attribute value the kernel does not implement: the value stays unknown
  }
  TESSEL_CHECK(results.size() == node.outputs.size(),
               "the reference kernel of {} returned {} outputs, the node has {}", node.describe(),
               results.size(), node.outputs.size());
  for (size_t i = 0; i < results.size(); ++i) check_result(node, i, results[i]);
  for (size_t i = 0; i < results.size(); ++i) {
    node.outputs[i]->constant = std::make_shared<const Tensor>(std::move(results[i]));
  }
}

void infer_and_propagate(Node& node) {
  for (Value* out : node.outputs) out->constant.reset();
  infer_node(node);
  propagate_values(node);
}

void infer_graph(Graph& graph) {
  for (const auto& n : graph.nodes()) infer_and_propagate(*n);
}

std::vector<Tensor> run_reference_node(const Node& node, const std::vector<const Tensor*>& inputs) {
  const OpDef* def = find_op(node.op_type);
  if (!def)
    throw Unsupported(fmt::format("unsupported op '{}' (node '{}')", node.op_type, node.name));
  if (!def->reference) {
    throw Unsupported(
        fmt::format("op '{}' (node '{}') has no reference kernel", node.op_type, node.name));
  }
  std::vector<Tensor> results = def->reference(node, inputs);
  TESSEL_CHECK(results.size() == node.outputs.size(),
               "the reference kernel of {} returned {} outputs, the node has {}", node.describe(),
               results.size(), node.outputs.size());
  return results;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& context) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right; missing leading dims count as 1.
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      fail("{}: shapes {} and {} cannot be broadcast (axis {} of the result: {} vs {})", context,
           shape_to_string(a), shape_to_string(b), i, da, db);
    }
  }
  return out;
}

}  // namespace tessel::ops
