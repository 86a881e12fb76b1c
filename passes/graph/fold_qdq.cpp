// QDQ folding: the QuantizeLinear/DequantizeLinear (QDQ) form of a quantised contraction becomes
// the ONNX operator form, the way ONNX Runtime's QDQ transformer does (onnxruntime/core/optimizer/
// qdq_transformer/selectors_actions: ConvNodeGroupSelector, MatMulNodeGroupSelector and the
// Conv/MatMul actions):
//
//   before: %xf = DequantizeLinear(%xq, %sx, %zx)       %xq: i8/u8, per tensor
//           %wf = DequantizeLinear(%wq, %sw, %zw)       %wq: i8/u8, per tensor or per output
//           channel %bf = DequantizeLinear(%bq, %sb, %zb)       optional, %bq: i32, sb = sx * sw,
//           zb = 0 %yf = Conv(%xf, %wf[, %bf]) {...}           (optionally followed by a redundant
//           Relu) %yq = QuantizeLinear(%yf, %sy, %zy)         %yq: the dtype of %xq, per tensor
//   after:  %yq = QLinearConv(%xq, %sx, %zx, %wq, %sw, %zw, %sy, %zy[, %bq]) {the Conv's attrs}
//
// and MatMul (any rank), or Gemm without C with alpha = 1 and transA = 0 (transB = 1 with a
// constant weight: the int8 weight is transposed here), between the same DQ/Q nodes becomes
// QLinearMatMul(%aq, %sa, %za, %bq, %sb, %zb, %sy, %zy) (b per tensor, or per column for a 2-D b).
//
// The rules, ONNX Runtime's where it has one: every input of the contraction comes from a
// DequantizeLinear; the activation and the output have the same dtype; an int8 activation needs
// an int8 weight; scales and zero points are constants of the shapes above; the contraction's
// output is read only by the QuantizeLinear (or by a Relu that only the Q reads, when Q's zero
// point is the type's minimum so that Q already clips at 0: ORT's IsClipMadeRedundantByQ) and is
// not a graph output. A DequantizeLinear read by other nodes as well stays for them (ORT's
// EnsureUniqueDQForNodeUnit duplicates it first: the same result). Stricter than ORT: the bias
// must have scale exactly fp32(sx * sw[m]) and zero point 0 (ORT adds the int32 bias without
// checking; a quantiser writes exactly that scale, as `tessel quantize` and ORT's do). Not
// folded (ORT folds them into its contrib ops QGemm, QLinearAdd, ... which tessel does not
// have): Gemm with a bias C, and every other op between DQ and Q. Those Q/DQ stay standalone.
//
// Runs first: shape_folding (which makes the values infer_graph's data propagation knows, small
// dequantised weights among them, constants) and constant_folding would otherwise evaluate the
// DequantizeLinear of a constant weight into a float weight (ORT's constant folding skips
// DequantizeLinear for this reason). Fires only on graphs with DequantizeLinear nodes (never on
// float models), and only when `available` has QLinearConv / QLinearMatMul.
// Guarantees: the QuantizeLinear's output keeps its name, dtype and shape; the folded node's
// integers are the operator-form semantics (integer accumulation, one fp32 requantisation), which
// may differ from the QDQ form's float path by one quantisation step where a value lies near a
// rounding boundary (docs/graph_passes.md quotes the measured difference on the golden models).
#include <fmt/format.h>

#include <cstring>

#include "compiler/ops/op_util.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {
namespace {

bool is_8bit(DType t) { return t == DType::i8 || t == DType::u8; }

/// A DequantizeLinear's or QuantizeLinear's quantisation parameters (constants).
struct QParams {
  const Tensor* scale = nullptr;
  const Tensor* zero_point = nullptr;  // null: absent (0)
  Value* scale_value = nullptr;
  Value* zero_point_value = nullptr;
  int64_t axis = 1;  // the node's axis attribute, normalised when possible
  int64_t count() const { return scale ? scale->numel() : 0; }
  bool zero_point_all_zero() const {
    if (!zero_point) return true;
    for (int64_t i = 0; i < zero_point->numel(); ++i)
      if (zero_point->get_as_double(i) != 0) return false;
    return true;
  }
};

/// The parameters of Q/DQ node `n` (inputs 1 and 2); empty `why` when both are constants.
QParams qparams(const Node* n, std::string* why) {
  QParams p;
  p.scale_value = n->input(1);
  p.zero_point_value = n->input(2);
  p.scale = p.scale_value ? constant_of(p.scale_value) : nullptr;
  if (!p.scale || p.scale->dtype() != DType::f32) {
    *why = fmt::format("{}'s scale is not a float32 constant", n->name);
    return p;
  }
  if (p.zero_point_value) {
    p.zero_point = constant_of(p.zero_point_value);
    if (!p.zero_point) {
      *why = fmt::format("{}'s zero point is not a constant", n->name);
      return p;
    }
  }
  p.axis = n->attrs.get_int_or("axis", 1, n->name);
  const int64_t rank = static_cast<int64_t>(n->inputs[0]->shape.size());
  if (p.axis < 0) p.axis += rank;
  return p;
}

/// Whether the parameters are one value (numel 1, rank <= 1).
bool per_tensor(const QParams& p) { return p.count() == 1 && p.scale->rank() <= 1; }
/// Whether the parameters are per entry of `axis` with `n` entries (a 1-D scale).
bool per_axis(const QParams& p, int64_t axis, int64_t n) {
  return p.scale->rank() == 1 && p.count() == n && p.axis == axis;
}

/// A 0-valued scalar constant of `dtype` (the zero point a Q/DQ without one means).
Value* zero_constant(Graph& g, const std::string& base, DType dtype) {
  return g.add_constant(g.unique_value_name(base + "_zero_point"), Tensor(dtype, {}));
}

struct Match {
  std::string why;  // empty when it folds
  std::string op;   // QLinearConv or QLinearMatMul
  Node* target = nullptr;
  std::vector<Node*> dq;  // per input of the target
  Node* relu = nullptr;
  Node* q = nullptr;
};

/// Checks what every fold needs: the DQ inputs, the Q after the target, the dtypes.
Match match_common(Node* n, const UseMap& uses, size_t n_inputs) {
  Match m;
  m.target = n;
  for (size_t i = 0; i < n_inputs; ++i) {
    Node* dq = producer_of(n->input(i), "DequantizeLinear");
    if (!dq) {
      m.why = fmt::format("input {} ({}) is not a DequantizeLinear output", i,
                          n->input(i) ? n->input(i)->name : "absent");
      return m;
    }
    if (uses.is_graph_output(n->input(i))) {
      m.why = fmt::format("input {} is a graph output", i);
      return m;
    }
    m.dq.push_back(dq);
  }
  Value* out = n->outputs[0];
  if (uses.is_graph_output(out)) {
    m.why = "its output is a graph output";
    return m;
  }
  const auto& readers = uses.users(out);
  if (readers.size() != 1) {
    m.why = fmt::format("its output has {} readers (a QuantizeLinear must be the only one)",
                        readers.size());
    return m;
  }
  Node* next = readers[0];
  if (next->op_type == "Relu") {
    const auto& after = uses.users(next->outputs[0]);
    if (uses.is_graph_output(next->outputs[0]) || after.size() != 1 ||
        after[0]->op_type != "QuantizeLinear") {
      m.why = "the Relu after it is not read by exactly one QuantizeLinear";
      return m;
    }
    m.relu = next;
    next = after[0];
  }
  if (next->op_type != "QuantizeLinear") {
    m.why = fmt::format("its output is read by {} ({}), not a QuantizeLinear", next->name,
                        next->op_type);
    return m;
  }
  m.q = next;
  const DType dt_x = m.dq[0]->inputs[0]->dtype, dt_w = m.dq[1]->inputs[0]->dtype;
  const DType dt_y = m.q->outputs[0]->dtype;
  if (!is_8bit(dt_x) || !is_8bit(dt_w)) {
    m.why = "the activation or the weight is not 8-bit";
    return m;
  }
  if (dt_x != dt_y) {
    m.why = fmt::format("the activation is {} but the QuantizeLinear writes {}",
                        dtype_to_string(dt_x), dtype_to_string(dt_y));
    return m;
  }
  if (dt_x == DType::i8 && dt_w != DType::i8) {
    m.why = "an int8 activation with a uint8 weight";
    return m;
  }
  return m;
}

/// A Relu between the contraction and the Q folds only when Q's zero point is its type's
/// minimum: Q then maps every negative value to the zero point, as Relu's 0 does.
bool relu_redundant(Match& m, const QParams& py) {
  if (!m.relu) return true;
  const DType dt = m.q->outputs[0]->dtype;
  const double lo = dt == DType::u8 ? 0.0 : -128.0;
  const double zp = py.zero_point ? py.zero_point->get_as_double(0) : 0.0;
  if (zp == lo) return true;
  m.why = fmt::format("the Relu is not redundant: the QuantizeLinear's zero point is {}, not {}",
                      zp, lo);
  return false;
}

Match match_conv(Node* n, const UseMap& uses) {
  const size_t n_in = n->inputs.size() > 2 && n->inputs[2] ? 3 : 2;
  Match m = match_common(n, uses, n_in);
  if (!m.why.empty()) return m;
  m.op = "QLinearConv";
  const QParams px = qparams(m.dq[0], &m.why);
  if (!m.why.empty()) return m;
  const QParams pw = qparams(m.dq[1], &m.why);
  if (!m.why.empty()) return m;
  const QParams py = qparams(m.q, &m.why);
  if (!m.why.empty()) return m;
  const Value* w = m.dq[1]->inputs[0];
  if (w->shape.empty() || w->shape[0] <= 0) {
    m.why = "the weight's shape is not known";
    return m;
  }
  const int64_t M = w->shape[0];
  if (!per_tensor(px)) return m.why = "the activation's scale is not per tensor", m;
  if (!per_tensor(py)) return m.why = "the output's scale is not per tensor", m;
  if (!relu_redundant(m, py)) return m;
  if (!per_tensor(pw) && !per_axis(pw, 0, M))
    return m.why = "the weight's scale is neither per tensor nor per output channel (axis 0)", m;
  if (n_in == 3) {
    if (m.dq[2]->inputs[0]->dtype != DType::i32) return m.why = "the bias is not int32", m;
    const QParams pb = qparams(m.dq[2], &m.why);
    if (!m.why.empty()) return m;
    if (!pb.zero_point_all_zero()) return m.why = "the bias's zero point is not 0", m;
    if (!per_tensor(pb) && !per_axis(pb, 0, M))
      return m.why = "the bias's scale is neither per tensor nor per output channel", m;
    const float sx = px.scale->data<float>()[0];
    for (int64_t c = 0; c < M; ++c) {
      const float sw = pw.scale->data<float>()[pw.count() == 1 ? 0 : c];
      const float sb = pb.scale->data<float>()[pb.count() == 1 ? 0 : c];
      if (sb != sx * sw)
        return m.why = fmt::format(
                   "the bias's scale {} differs from x scale * w scale = {} (channel {})", sb,
                   sx * sw, c),
               m;
    }
  }
  return m;
}

/// MatMul, or Gemm that is a plain matrix product (no C, alpha 1, transA 0).
Match match_matmul(Node* n, const UseMap& uses) {
  const bool gemm = n->op_type == "Gemm";
  if (gemm) {
    Match m;
    m.target = n;
    if (n->inputs.size() > 2 && n->inputs[2])
      return m.why =
                 "a Gemm with a bias C (QLinearMatMul has none; ORT folds it into its "
                 "contrib op QGemm)",
             m;
    if (n->attrs.get_float_or("alpha", 1.0f, n->name) != 1.0f)
      return m.why = "a Gemm with alpha != 1", m;
    if (n->attrs.get_int_or("transA", 0, n->name) != 0) return m.why = "a Gemm with transA", m;
  }
  Match m = match_common(n, uses, 2);
  if (!m.why.empty()) return m;
  m.op = "QLinearMatMul";
  const QParams pa = qparams(m.dq[0], &m.why);
  if (!m.why.empty()) return m;
  const QParams pb = qparams(m.dq[1], &m.why);
  if (!m.why.empty()) return m;
  const QParams py = qparams(m.q, &m.why);
  if (!m.why.empty()) return m;
  if (!per_tensor(pa)) return m.why = "the activation's scale is not per tensor", m;
  if (!per_tensor(py)) return m.why = "the output's scale is not per tensor", m;
  if (!relu_redundant(m, py)) return m;
  const Value* b = m.dq[1]->inputs[0];
  const bool trans_b = gemm && n->attrs.get_int_or("transB", 0, n->name) != 0;
  if (trans_b && !constant_of(b))
    return m.why = "a Gemm with transB whose weight is not a constant", m;
  if (!per_tensor(pb)) {
    // Per column: a 2-D b whose scale runs along its last axis (axis 0 of a transposed b).
    const int64_t cols = b->shape.size() == 2 ? b->shape[trans_b ? 0 : 1] : -1;
    if (b->shape.size() != 2 || !per_axis(pb, trans_b ? 0 : 1, cols))
      return m.why = "the weight's scale is neither per tensor nor per column of a 2-D weight", m;
  }
  return m;
}

Match match_node(Node* n, const UseMap& uses, const OpAvailable& available) {
  Match m;
  m.target = n;
  if (n->op_type == "Conv") {
    if (!op_available(available, "QLinearConv")) return m.why = "QLinearConv unavailable", m;
    return match_conv(n, uses);
  }
  if (n->op_type == "MatMul" || n->op_type == "Gemm") {
    if (!op_available(available, "QLinearMatMul")) return m.why = "QLinearMatMul unavailable", m;
    return match_matmul(n, uses);
  }
  return m.why = "not a Conv, MatMul or Gemm", m;
}

/// The Q/DQ node's zero point value, or a new 0 of `dtype` when it has none.
Value* zero_point_of(Graph& g, const Node* n, DType dtype) {
  return n->input(2) ? n->input(2) : zero_constant(g, n->name, dtype);
}

/// The int8 weight of a Gemm with transB, transposed to [K, N] (a new constant).
Value* transposed_weight(Graph& g, const Value* b) {
  const Tensor& t = *constant_of(b);
  const int64_t rows = t.shape()[0], cols = t.shape()[1];
  Tensor out(t.dtype(), {cols, rows});
  const size_t es = dtype_size(t.dtype());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(out.raw() + (c * rows + r) * es, t.raw() + (r * cols + c) * es, es);
  return g.add_constant(g.unique_value_name(b->name + "_transposed"), std::move(out));
}

void apply(Graph& g, const Match& m) {
  Node* dqx = m.dq[0];
  Node* dqw = m.dq[1];
  Value* wq = dqw->inputs[0];
  if (m.target->op_type == "Gemm" && m.target->attrs.get_int_or("transB", 0, m.target->name))
    wq = transposed_weight(g, wq);
  std::vector<Value*> inputs = {dqx->inputs[0],
                                dqx->inputs[1],
                                zero_point_of(g, dqx, dqx->inputs[0]->dtype),
                                wq,
                                dqw->inputs[1],
                                zero_point_of(g, dqw, dqw->inputs[0]->dtype),
                                m.q->inputs[1],
                                zero_point_of(g, m.q, DType::u8)};
  if (m.dq.size() == 3) inputs.push_back(m.dq[2]->inputs[0]);
  Attributes attrs;
  if (m.op == "QLinearConv") attrs = m.target->attrs;
  std::vector<Node*> pattern = {m.target};
  if (m.relu) pattern.push_back(m.relu);
  pattern.push_back(m.q);
  replace_pattern(g, m.q->outputs[0], pattern, m.op, std::move(inputs), std::move(attrs));
  erase_unused(g, m.dq);  // a DequantizeLinear other nodes read stays for them
}

}  // namespace

std::vector<QdqFoldDecision> explain_fold_qdq(Graph& graph, const OpAvailable& available) {
  std::vector<QdqFoldDecision> out;
  const UseMap uses(graph);
  for (const auto& n : graph.nodes()) {
    if (n->op_type != "Conv" && n->op_type != "MatMul" && n->op_type != "Gemm") continue;
    const Match m = match_node(n.get(), uses, available);
    out.push_back({n->name, m.why.empty() ? m.op : "", m.why});
  }
  return out;
}

bool fold_qdq(Graph& graph, const OpAvailable& available) {
  bool any_dq = false;
  for (const auto& n : graph.nodes()) any_dq |= n->op_type == "DequantizeLinear";
  if (!any_dq) return false;
  return rewrite_nodes(graph, [&](Node* n, const UseMap& uses) {
    // Rooted at the QuantizeLinear (the pattern's last node, as rewrite_nodes requires).
    if (n->op_type != "QuantizeLinear") return false;
    Node* p = producer_of(n->inputs[0]);
    if (p && p->op_type == "Relu") p = producer_of(p->inputs[0]);
    if (!p || (p->op_type != "Conv" && p->op_type != "MatMul" && p->op_type != "Gemm"))
      return false;
    const Match m = match_node(p, uses, available);
    if (!m.why.empty() || m.q != n) return false;
    apply(graph, m);
    return true;
  });
}

}  // namespace tessel::graph_passes
