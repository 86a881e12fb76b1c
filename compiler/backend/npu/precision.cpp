#include "compiler/backend/npu/precision.h"

#include <functional>
#include <set>

#include "compiler/backend/npu/int8_ops.h"
#include "compiler/lower/op_compute.h"
#include "passes/graph/graph_passes.h"

namespace tessel::npu_backend {

bool is_cube_node(const Node& node) {
  static const std::set<std::string> cube = {"Conv", "ConvTranspose", "MatMul", "Gemm"};
  return cube.count(node.op_type) != 0 || is_npu_int8_op(node);
}

namespace {

bool is_f32(const std::map<std::string, DType>& plan, const Value* v) {
  auto it = plan.find(v->name);
  return it != plan.end() && it->second == DType::f32;
}

}  // namespace

DType node_compute_dtype(const Node& node, const std::map<std::string, DType>& plan, DType act) {
  if (act == DType::f32) return DType::f32;
  if (is_cube_node(node)) return act;
  // A node whose result exceeds fp16's range on calibration data (graph_passes::fp16_range).
  if (node.attrs.has(graph_passes::kNpuFp32Attr)) return DType::f32;
  // A value the model types float16 is stored in fp16 (a Cast to float16 rounds to it).
  for (const Value* o : node.outputs)
    if (o && o->dtype == DType::f16) return act;
  bool f16_operand = false;
  for (const Value* in : node.inputs) {
    if (!in || in->constant || !dtype_is_float(in->dtype)) continue;
    if (is_f32(plan, in)) return DType::f32;
    f16_operand = true;
  }
  // Only fp16 operands (a chain after a cube kernel): fp16, as every kernel was before the plan.
  // No non-constant float operand (constants, integers: a Gather from a weight table, a Cast
  // from int): the source is fp32.
  return f16_operand ? act : DType::f32;
}

std::map<std::string, DType> float_storage_plan(const Graph& graph, DType act) {
  std::map<std::string, DType> plan;
  if (act == DType::f32) {
    for (const auto& v : graph.values())
      if (dtype_is_float(v->dtype)) plan[v->name] = DType::f32;
    return plan;
  }
  // Whether a vector kernel reads `v`, directly or through views (Reshape, Squeeze, ...: a view
  // of an input only a cube reads is no reason to keep it in fp32).
  std::function<bool(const Value*)> vector_reader = [&](const Value* v) {
    for (const Node* u : graph.users(v)) {
      if (lower::is_alias_op(*u) && !u->outputs.empty() && u->outputs[0] &&
          u->outputs[0]->dtype != DType::f16) {
        if (vector_reader(u->outputs[0])) return true;
      } else if (!is_cube_node(*u)) {
        return true;
      }
    }
    return false;
  };
  for (const Value* v : graph.inputs) {
    if (!dtype_is_float(v->dtype)) continue;
    const bool f32 = v->dtype == DType::f64 || (v->dtype != DType::f16 && vector_reader(v));
    plan[v->name] = f32 ? DType::f32 : act;
  }
  // Nodes are in topological order: every input's storage is known when its reader is reached.
  for (const auto& n : graph.nodes()) {
    // A view keeps its input's bytes, so its storage; a float Cast to float16 (a view while every
    // float was fp16) computes in fp16.
    const bool to_f16 = !n->outputs.empty() && n->outputs[0] && n->outputs[0]->dtype == DType::f16;
    const DType cd = lower::is_alias_op(*n) && !to_f16 && n->input(0) && !n->input(0)->constant
                         ? (is_f32(plan, n->input(0)) ? DType::f32 : act)
                         : node_compute_dtype(*n, plan, act);
    for (const Value* o : n->outputs)
      if (o && dtype_is_float(o->dtype)) plan[o->name] = cd;
  }
  for (const auto& v : graph.values()) {
    if (!v->constant || !dtype_is_float(v->dtype)) continue;
    bool all_f32 = true, read = false;
    for (const Node* u : graph.users(v.get())) {
      read = true;
      all_f32 = all_f32 && node_compute_dtype(*u, plan, act) == DType::f32;
    }
    plan[v->name] = read && all_f32 ? DType::f32 : act;
  }
  return plan;
}

}  // namespace tessel::npu_backend
