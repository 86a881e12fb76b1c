// fp16_range: keeps the values an fp16 NPU computes within fp16's range, from the magnitudes the
// values reach on calibration inputs (calibrated_max_abs: one reference run, max |v| of every
// float value). fp16's largest finite value is 65504 < 2^16; a value reaching kFp16Limit = 2^15
// has less than 2x headroom there. Two rewrites:
//   1. A cube node (Conv, MatMul, Gemm: its operands are fp16, compiler/backend/npu/precision.h)
//      whose output or activation operand reaches 2^15 computes on its activation operand scaled
//      by 2^-k and its result is scaled back by 2^k in fp32:
//        before: %y = MatMul(%x, %w)
//        after:  %x_s = Mul(%x, 2^-k)   %y_s = MatMul(%x_s, %w)   %y = Mul(%y_s, 2^k) {npu_fp32}
//      with k = ceil(log2(max(|x|max, |y|max) / 2^14)), so that both the scaled operand and the
//      scaled result stay below 2^14 (4x below fp16's largest value) on the calibration data.
//      The contraction is linear in its activation operand, so (a bias or C, which must be a
//      constant, is scaled by 2^-k too) y_s = 2^-k y; a power-of-two scale is exact in binary
//      floating point (no rounding, while the scaled value stays a normal number), so the graph
//      computes the same values as before, and on the NPU the scaled operand takes fp16's
//      relative rounding instead of an overflow. The activation operand: Conv's and Gemm's input
//      0, MatMul's first non-constant operand.
//   2. Every other node whose float output reaches 2^15 gets the attribute kNpuFp32Attr: the NPU
//      computes it in fp32 and stores its result in fp32 (float_storage_plan), its fp16 inputs
//      converted exactly. The scale-back Mul of rule 1 is marked when y reaches 2^15.
// Views (Reshape, ...) are not marked (they take their input's storage). A cube node whose input
// or output is stored NC1HWC0, or whose bias / C is not a constant, is left alone. A rewritten
// cube node leaves its fusion group (the group's other members compile node by node); the Muls
// inserted around it take its branch guard (guard_branches).
// Runs after driver::compiled_form (on the graph the NPU compiles) and only for an fp16 NPU;
// the tolerance derivation (driver::npu_tolerances) sees the rewritten graph. Guarantees: every
// value keeps its name, shape and, in fp32, its values; graph outputs keep their names.
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <tuple>

#include "compiler/lower/op_compute.h"
#include "compiler/ops/reference.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

constexpr double kFp16Limit = 32768;   // 2^15
constexpr double kFp16Target = 16384;  // 2^14: the scaled magnitude rule 1 aims below

double range_of(const std::map<std::string, double>& max_abs, const Value* v) {
  if (!v) return 0;
  auto it = max_abs.find(v->name);
  return it == max_abs.end() ? 0 : it->second;
}

bool is_contraction(const Node& n) {
  return n.op_type == "Conv" || n.op_type == "MatMul" || n.op_type == "Gemm";
}

/// The index of `n`'s activation operand (see the header), or -1.
int activation_operand(const Node& n) {
  if (n.op_type == "MatMul") {
    for (int k = 0; k < 2; ++k)
      if (n.input(k) && !n.input(k)->constant) return k;
    return -1;
  }
  return n.input(0) && !n.input(0)->constant ? 0 : -1;
}

/// A copy of constant `v` times 2^e (exact for normal fp32 numbers).
Value* scaled_constant(Graph& g, const Value* v, int e) {
  Tensor t = v->constant->cast(DType::f32);
  float* d = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = std::ldexp(d[i], e);
  if (v->dtype != DType::f32) t = t.cast(v->dtype);
  return g.add_constant(g.unique_value_name(fmt::format("{}_x2^{}", v->name, e)), std::move(t));
}

Value* power_of_two(Graph& g, const Value* like, int e) {
  Tensor t = Tensor::scalar_f32(std::ldexp(1.0f, e));
  if (like->dtype != DType::f32) t = t.cast(like->dtype);
  return g.add_constant(g.unique_value_name(fmt::format("two_pow_{}", e)), std::move(t));
}

/// The branch guard of `n` (guard_branches), for the nodes inserted around it: they run when it
/// runs.
Attributes guard_of(const Node& n) {
  Attributes a;
  if (n.attrs.has(kBranchGuardAttr)) a.set(kBranchGuardAttr, n.attrs.all().at(kBranchGuardAttr));
  return a;
}

Node* next_node(const Graph& g, const Node* n) {
  const auto& nodes = g.nodes();
  for (size_t i = 0; i + 1 < nodes.size(); ++i)
    if (nodes[i].get() == n) return nodes[i + 1].get();
  return nullptr;
}

}  // namespace

std::map<std::string, double> calibrated_max_abs(const Graph& graph,
                                                 const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, double> out;
  ops::run_reference(graph, inputs, [&](const Value& v, const Node*, Tensor& t) {
    if (!dtype_is_float(t.dtype())) return;
    double m = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double x = t.get_as_double(i);
      if (std::isfinite(x)) m = std::max(m, std::abs(x));
    }
    double& r = out[v.name];
    r = std::max(r, m);
  });
  return out;
}

std::vector<std::string> fp16_range(Graph& graph, const std::map<std::string, double>& max_abs) {
  std::vector<std::string> changes;
  std::map<std::tuple<const Value*, int, std::string>, Value*> prescaled;
  std::vector<Node*> snapshot;
  for (const auto& n : graph.nodes()) snapshot.push_back(n.get());
  for (Node* n : snapshot) {
    if (!is_contraction(*n) || n->outputs.size() != 1 || !n->outputs[0]) continue;
    Value* y = n->outputs[0];
    const int a = activation_operand(*n);
    if (a < 0 || y->dtype == DType::f16 || !dtype_is_float(y->dtype)) continue;
    Value* x = n->inputs[a];
    const double rx = range_of(max_abs, x), ry = range_of(max_abs, y);
    const double need = std::max(rx, ry);
    if (need < kFp16Limit) continue;
    if (x->format != StorageFormat::plain || y->format != StorageFormat::plain) continue;
    Value* bias = n->op_type == "MatMul" ? nullptr : n->input(2);
    if (bias && !bias->constant) continue;
    const int k = static_cast<int>(std::ceil(std::log2(need / kFp16Target)));
    if (n->attrs.has(kFusionGroupAttr)) {
      const int64_t gid = n->attrs.get_int(kFusionGroupAttr, n->name);
      for (const auto& m : graph.nodes())
        if (m->attrs.has(kFusionGroupAttr) && m->attrs.get_int(kFusionGroupAttr, m->name) == gid)
          m->attrs.erase(kFusionGroupAttr);
    }
    // %x_s = Mul(%x, 2^-k) before the contraction, which reads it (and a bias times 2^-k); one
    // per operand, k and branch guard (the STFT's real and imaginary Convs read the same frames).
    const Value* guard = branch_guard(graph, *n);
    Value*& xs = prescaled[{x, k, guard ? guard->name : std::string()}];
    if (!xs) {
      xs = graph.add_value(graph.unique_value_name(x->name + "_scaled"), x->dtype, x->shape);
      graph.insert_node_before(n, "Mul", graph.unique_node_name(n->name + "_prescale"),
                               {x, power_of_two(graph, x, -k)}, {xs}, guard_of(*n));
    }
    n->inputs[a] = xs;
    if (bias) n->inputs[2] = scaled_constant(graph, bias, -k);
    // %y_s = the contraction; %y = Mul(%y_s, 2^k) right after it.
    Node* after = next_node(graph, n);
    Value* ys = graph.add_value(graph.unique_value_name(y->name + "_scaled"), y->dtype, y->shape);
    retarget_output(graph, n, 0, ys);
    Attributes marks = guard_of(*n);
    if (ry >= kFp16Limit) marks.set(kNpuFp32Attr, AttrValue(int64_t{1}));
    graph.insert_node_before(after, "Mul", graph.unique_node_name(n->name + "_rescale"),
                             {ys, power_of_two(graph, y, k)}, {y}, marks);
    changes.push_back(fmt::format(
        "{}: max |{}| = {:.4g}, max |{}| = {:.4g} (2^15 = 32768 or more): operand scaled by 2^-{}, "
        "result by 2^{}{}",
        n->describe(), x->name, rx, y->name, ry, k, k, ry >= kFp16Limit ? " in fp32" : ""));
  }
  for (const auto& n : graph.nodes()) {
    if (is_contraction(*n) || lower::is_alias_op(*n) || n->attrs.has(kNpuFp32Attr)) continue;
    double r = 0;
    const Value* big = nullptr;
    for (const Value* o : n->outputs)
      if (o && !o->constant && dtype_is_float(o->dtype) && o->dtype != DType::f16 &&
          range_of(max_abs, o) > r) {
        r = range_of(max_abs, o);
        big = o;
      }
    if (r < kFp16Limit) continue;
    n->attrs.set(kNpuFp32Attr, AttrValue(int64_t{1}));
    changes.push_back(fmt::format("{}: max |{}| = {:.4g} (2^15 = 32768 or more): computed in fp32",
                                  n->describe(), big->name, r));
  }
  return changes;
}

}  // namespace tessel::graph_passes
