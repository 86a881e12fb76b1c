// BatchNormalization (and per-channel affine) folding into the preceding contraction (see
// graph_passes.h).
//
// BatchNormalization in inference is y = (x - mean) / sqrt(var + eps) * scale + B per channel
// (https://onnx.ai/onnx/operators/onnx__BatchNormalization.html), an affine map a*x + (B - a*mean)
// with a = scale / sqrt(var + eps); so are Mul/Add/Sub by per-channel constants (exporters write
// BN that way, and PP-LCNetV3's learnable affine blocks are a scalar Mul and Add). A chain of such
// maps after x = W (*) input + b (Conv, ConvTranspose, Gemm or MatMul with constant weights) is
// one affine map y = A*z + B of z = W (*) input, and folds into the weights and the bias:
// W' = A * W along the output channel, b' = B.
//
//   before: %c: f32[1,8,24,96] = Conv(%x, %w) {...}
//           %y: f32[1,8,24,96] = BatchNormalization(%c, %scale, %B, %mean, %var) {epsilon=1e-05}
//   after:  %y: f32[1,8,24,96] = Conv(%x, %w.bn, %w.bn_bias) {...}
//
// Runs after: the folding passes and simplify (BN parameters and per-channel Mul/Add operands must
// be constants; simplify turns Div by a constant into the Mul this pass folds).
// Guarantees: no BatchNormalization or per-channel affine map with constant parameters right
// after a foldable contraction (single consumer, constant weights) remains; the contraction keeps
// its output value (name, shape), with new constant weight and bias values.
#include <cmath>
#include <optional>

#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

/// The per-channel vector of a constant broadcast against an output [N, C, ...] (rank >= 2,
/// channel axis 1): its values per channel, or empty when it varies along another axis or would
/// widen the output.
std::vector<double> per_channel(const Tensor& c, const Shape& out) {
  const size_t rank = out.size();
  const int64_t channels = out[1];
  if (c.shape().size() > rank) return {};
  Shape s(rank - c.shape().size(), 1);
  s.insert(s.end(), c.shape().begin(), c.shape().end());
  for (size_t k = 0; k < rank; ++k) {
    if (k == 1) {
      if (s[k] != 1 && s[k] != channels) return {};
    } else if (s[k] != 1) {
      return {};
    }
  }
  std::vector<double> v(static_cast<size_t>(channels));
  for (int64_t ch = 0; ch < channels; ++ch) v[ch] = c.get_as_double(s[1] == 1 ? 0 : ch);
  return v;
}

/// Scales the weight of contraction `n` per output channel by a[]; nullopt when the layout is not
/// one this pass folds.
std::optional<Tensor> scaled_weight(const Node& n, const Tensor& w, const std::vector<double>& a) {
  const int64_t channels = static_cast<int64_t>(a.size());
  const int64_t numel = w.numel();
  // channel_of(i): the output channel of flat weight index i (a lambda, inlined per layout).
  auto scale = [&](auto channel_of) {
    Tensor out(w.dtype(), w.shape());
    if (w.dtype() == DType::f32) {  // the common case, without per-element dtype dispatch
      const float* src = w.data<float>();
      float* dst = out.data<float>();
      for (int64_t i = 0; i < numel; ++i)
        dst[i] = static_cast<float>(static_cast<double>(src[i]) * a[channel_of(i)]);
    } else {
      for (int64_t i = 0; i < numel; ++i)
        out.set_from_double(i, w.get_as_double(i) * a[channel_of(i)]);
    }
    return std::optional<Tensor>(std::move(out));
  };
  if (n.op_type == "Conv") {
    // W [C_out, C_in/group, k...]
    if (w.rank() < 2 || w.shape()[0] != channels) return std::nullopt;
    const int64_t per = numel / channels;
    return scale([per](int64_t i) { return i / per; });
  }
  if (n.op_type == "ConvTranspose") {
    // W [C_in, C_out/group, k...]; W[ci, j] feeds output channel (ci / (C_in/group)) * C_out/group
    // + j.
    const int64_t group = n.attrs.get_int_or("group", 1, n.name);
    if (w.rank() < 2 || group < 1 || w.shape()[1] * group != channels || w.shape()[0] % group != 0)
      return std::nullopt;
    const int64_t cin = w.shape()[0], cpg = w.shape()[1], in_per_group = cin / group;
    const int64_t kernel = numel / (cin * cpg);
    return scale([=](int64_t i) {
      const int64_t ci = i / (cpg * kernel), j = (i / kernel) % cpg;
      return (ci / in_per_group) * cpg + j;
    });
  }
  // Gemm / MatMul: a 2-D weight, output column n scaled.
  if (w.rank() != 2) return std::nullopt;
  const bool trans = n.op_type == "Gemm" && n.attrs.get_int_or("transB", 0, n.name) != 0;
  const int64_t cols = w.shape()[1];
  if ((trans ? w.shape()[0] : cols) != channels) return std::nullopt;
  if (trans) return scale([cols](int64_t i) { return i / cols; });
  return scale([cols](int64_t i) { return i % cols; });
}

/// The contraction's own bias per channel (Conv/ConvTranspose input 2, Gemm beta*C; MatMul none);
/// nullopt when it is not a constant per-channel vector.
std::optional<std::vector<double>> own_bias(const Node& con, int64_t channels) {
  std::vector<double> b(static_cast<size_t>(channels), 0.0);
  if (con.op_type == "Gemm") {
    const double beta = con.attrs.get_float_or("beta", 1.0f, con.name);
    if (Value* cv = con.input(2)) {
      const Tensor* ct = constant_of(cv);
      // C must not vary along the rows: shape [], [1], [N], [1, 1] or [1, N].
      if (!ct || cv->shape.size() > 2 || (cv->shape.size() == 2 && cv->shape[0] != 1))
        return std::nullopt;
      const int64_t cn = cv->shape.empty() ? 1 : cv->shape.back();
      if (cn != 1 && cn != channels) return std::nullopt;
      for (int64_t ch = 0; ch < channels; ++ch) b[ch] = beta * ct->get_as_double(cn == 1 ? 0 : ch);
    }
  } else if (con.op_type != "MatMul") {
    if (Value* bv = con.input(2)) {
      const Tensor* bt = constant_of(bv);
      if (!bt || bt->numel() != channels) return std::nullopt;
      for (int64_t ch = 0; ch < channels; ++ch) b[ch] = bt->get_as_double(ch);
    }
  }
  return b;
}

/// One step of the affine chain: `u` applied to `v` (v's only user). Updates y = A*z + B; false
/// when `u` is not a foldable per-channel affine op.
bool absorb(const Node& u, const Value* v, std::vector<double>& A, std::vector<double>& B,
            bool& has_scale) {
  if (u.outputs.size() != 1 || u.outputs[0]->shape != v->shape) return false;
  const size_t channels = A.size();
  if (u.op_type == "BatchNormalization") {
    if (u.inputs.size() != 5 || u.input(0) != v ||
        u.attrs.get_int_or("training_mode", 0, u.name) != 0)
      return false;
    const Tensor* scale = constant_of(u.inputs[1]);
    const Tensor* bias = constant_of(u.inputs[2]);
    const Tensor* mean = constant_of(u.inputs[3]);
    const Tensor* var = constant_of(u.inputs[4]);
    if (!scale || !bias || !mean || !var) return false;
    for (const Tensor* t : {scale, bias, mean, var})
      if (t->numel() != static_cast<int64_t>(channels)) return false;
    const double eps = u.attrs.get_float_or("epsilon", 1e-5f, u.name);
    for (size_t ch = 0; ch < channels; ++ch) {
      const double a = scale->get_as_double(ch) / std::sqrt(var->get_as_double(ch) + eps);
      A[ch] *= a;
      B[ch] = a * (B[ch] - mean->get_as_double(ch)) + bias->get_as_double(ch);
    }
    has_scale = true;
    return true;
  }
  if (u.op_type != "Mul" && u.op_type != "Add" && u.op_type != "Sub") return false;
  if (u.inputs.size() != 2) return false;
  const int vi = u.inputs[0] == v ? 0 : (u.inputs[1] == v ? 1 : -1);
  if (vi < 0 || u.inputs[1 - vi] == v) return false;
  if (u.op_type == "Sub" && vi != 0) return false;  // c - x is not an affine map of x's sign
  const Tensor* c = constant_of(u.inputs[1 - vi]);
  if (!c || !dtype_is_float(c->dtype())) return false;
  const std::vector<double> k = per_channel(*c, v->shape);
  if (k.empty()) return false;
  for (size_t ch = 0; ch < channels; ++ch) {
    if (u.op_type == "Mul") {
      A[ch] *= k[ch];
      B[ch] *= k[ch];
    } else {
      B[ch] += u.op_type == "Add" ? k[ch] : -k[ch];
    }
  }
  has_scale = has_scale || u.op_type == "Mul";
  return true;
}

bool fold_into(Graph& graph, Node* con) {
  if (con->outputs.size() != 1 || con->outputs[0]->constant) return false;
  Value* z = con->outputs[0];
  if (z->shape.size() < 2 || !dtype_is_float(z->dtype)) return false;
  const bool gemm_like = con->op_type == "Gemm" || con->op_type == "MatMul";
  if (gemm_like && (z->shape.size() != 2 || !con->input(0) || con->input(0)->shape.size() != 2))
    return false;  // the channel (axis 1) must be the weight's output column
  const Tensor* w = constant_of(con->input(1));
  if (!w || !dtype_is_float(w->dtype())) return false;
  const int64_t channels = z->shape[1];
  const auto b0 = own_bias(*con, channels);
  if (!b0) return false;

  std::vector<double> A(static_cast<size_t>(channels), 1.0), B = *b0;
  bool has_scale = false;
  std::vector<Node*> chain;
  Value* tail = z;
  const UseMap uses(graph);
  while (uses.single_use(tail)) {
    Node* u = uses.users(tail)[0];
    std::vector<double> a2 = A, b2 = B;
    bool s2 = has_scale;
    if (!absorb(*u, tail, a2, b2, s2)) break;
    A = std::move(a2);
    B = std::move(b2);
    has_scale = s2;
    chain.push_back(u);
    tail = u->outputs[0];
  }
  // MatMul + Add is already the canonical form (MatMul has no bias input).
  if (chain.empty() || (con->op_type == "MatMul" && !has_scale)) return false;
  std::optional<Tensor> w2 = has_scale ? scaled_weight(*con, *w, A) : Tensor(*w);
  if (!w2) return false;

  Tensor new_bias(w->dtype(), {channels});
  for (int64_t ch = 0; ch < channels; ++ch) new_bias.set_from_double(ch, B[ch]);
  const std::string base = con->inputs[1]->name;
  Value* bv = graph.add_constant(base + ".bn_bias", std::move(new_bias));
  if (has_scale) con->inputs[1] = graph.add_constant(base + ".bn", std::move(*w2));
  if (con->op_type == "MatMul") {
    // MatMul has no bias input: the chain becomes one Add (named after its last node).
    replace_pattern(graph, tail, chain, "Add", {z, bv}, {});
    return true;
  }
  if (con->inputs.size() < 3) con->inputs.resize(3, nullptr);
  con->inputs[2] = bv;
  if (con->op_type == "Gemm") con->attrs.set("beta", 1.0f);
  retarget_output(graph, con, 0, tail);
  erase_unused(graph, chain);
  return true;
}

}  // namespace

bool fold_batchnorm(Graph& graph) {
  bool changed = false;
  std::vector<Node*> contractions;
  for (const auto& n : graph.nodes())
    if (n->op_type == "Conv" || n->op_type == "ConvTranspose" || n->op_type == "Gemm" ||
        n->op_type == "MatMul")
      contractions.push_back(n.get());
  for (Node* con : contractions) changed |= fold_into(graph, con);
  return changed;
}

}  // namespace tessel::graph_passes
