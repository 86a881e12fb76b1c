// expand_recurrent: LSTM, GRU and RNN nodes become their unrolled per-time-step computation in
// ops the compiled targets (npu, cpu) have, following the ONNX operator docs (opset 14; the
// reference kernel is compiler/ops/rnn.cpp). For every direction d (forward, reverse, or both):
//   XW  = MatMul(X as [seq*batch, input], W[d]^T) + (Wb[d] + Rb[d])     one cube matmul for all
//   steps per step t (t = 0..seq-1, or seq-1..0 for the reverse direction):
//     g   = Slice(XW, rows t*batch .. (t+1)*batch) + MatMul(H, R[d]^T)  (no MatMul while H is the
//                                                                      zero initial state)
//     gates = Slice(g, k*hidden .. (k+1)*hidden, axis 1)              (RNN i; GRU z, r, h;
//                                                                      LSTM i, o, f, c)
//     RNN:  H = f(clip(i))
//     GRU:  z = f(clip(z)), r = f(clip(r)),
//           h~ = g(clip(x_h + (r . H) R_h^T + Rb_h + Wb_h))            (linear_before_reset 0)
//           h~ = g(clip(x_h + Wb_h + r . (H R_h^T + Rb_h)))            (linear_before_reset 1)
//           H = (1 - z) . h~ + z . H
//     LSTM: i = f(clip(i + Pi . C)), f = f(clip(f + Pf . C)) (or 1 - i with input_forget),
//           c~ = g(clip(c)), C = f . C + i . c~, o = f(clip(o + Po . C)), H = o . h(C)
//     Y[t, d] = H
//   with sequence_lens shorter than seq for some batch rows, step t blends with the mask
//   m = (t < sequence_lens) as 0/1 floats: H = m . H_new + (1 - m) . H, Y[t, d] = m . H_new (exact
//   for m in {0, 1}): the state of a finished row stays frozen and its Y is 0, and the reverse
//   direction of a row starts at its own last step, as the spec says. m is a constant when
//   sequence_lens is one, else Clip(Cast(sequence_lens) - t, 0, 1) (integer lengths: exactly 0
//   or 1; no comparison op needed).
//   Y = Concat over t and d of Unsqueeze(H) (axes 0, 1; layout 1: 1, 2); Y_h = Concat over d of
//   the last H (axis 0; layout 1: 1), Y_c likewise; layout 1 transposes X to time-major first.
// Activations: Sigmoid, Tanh, Relu, LeakyRelu, HardSigmoid, Elu, Softsign, Softplus,
// ThresholdedRelu as the ONNX ops of those names (with activation_alpha / activation_beta),
// Affine as Mul + Add, ScaledTanh as Mul, Tanh, Mul; clip as Clip(x, -clip, clip).
// Nodes whose inputs are all constants (weight slices and transposes) become constants.
// Runs where split_outputs runs for the compiled targets (driver::compiled_form), on
// shape-inferred input. Guarantees: no LSTM, GRU or RNN node remains; every output keeps its name,
// shape and uses, and its value to fp32 rounding (summation order of the matmuls).
#include <fmt/format.h>

#include "compiler/ops/op_registry.h"
#include "compiler/ops/rnn_activations.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

using Cell = ops::RnnCell;

int gate_count(Cell c) { return c == Cell::rnn ? 1 : (c == Cell::gru ? 3 : 4); }
using ops::activation_count;

using Act = ops::RnnActivation;

/// Expands one recurrent node (see the file comment).
class Recurrent {
 public:
  Recurrent(Graph& g, Node* n, Cell cell) : x_(g, n), n_(n), cell_(cell) {}

  void run() {
    const Node& n = *n_;
    Value* X = n.inputs.at(0);
    dt_ = X->dtype;
    const int64_t layout = n.attrs.get_int_or("layout", 0, n.name);
    batch_first_ = layout == 1;
    seq_ = batch_first_ ? X->shape[1] : X->shape[0];
    batch_ = batch_first_ ? X->shape[0] : X->shape[1];
    input_ = X->shape[2];
    const std::string dir = n.attrs.get_string_or("direction", "forward", n.name);
    dirs_ = dir == "bidirectional" ? 2 : 1;
    const int64_t G = gate_count(cell_);
    hidden_ = n.attrs.get_int_or("hidden_size", n.inputs.at(1)->shape[1] / G, n.name);
    clip_ = n.attrs.get_float_or("clip", 0.0f, n.name);
    lbr_ = n.attrs.get_int_or("linear_before_reset", 0, n.name) != 0;
    input_forget_ = n.attrs.get_int_or("input_forget", 0, n.name) != 0;
    acts_ = ops::parse_rnn_activations(n, cell_, dirs_);
    if (seq_ <= 0) fail("{}: the sequence length must be known and positive", n.describe());
    if (seq_ > kMaxUnrolledIterations)
      throw Unsupported(fmt::format("{}: {} time steps, more than the {} expand_recurrent unrolls",
                                    n.describe(), seq_, kMaxUnrolledIterations));
    masks_setup();

    const bool want_y = value_used(x_.graph(), n.outputs.at(0));
    const bool want_h = n.outputs.size() > 1 && value_used(x_.graph(), n.outputs[1]);
    const bool want_c =
        cell_ == Cell::lstm && n.outputs.size() > 2 && value_used(x_.graph(), n.outputs[2]);

    // X as [seq * batch, input] in time-major order.
    Value* xs = batch_first_ ? x_.emit("Transpose", {X}, perm({1, 0, 2})) : X;
    x2_ = x_.emit("Reshape", {xs, x_.i64s({seq_ * batch_, input_})});

    want_y_ = want_y;
    // Time and direction axes of Y: [seq, dirs, B, H] (layout 0) or [B, seq, dirs, H]; state axis
    // of Y_h / Y_c: [dirs, B, H] or [B, dirs, H].
    const int64_t ta = batch_first_ ? 1 : 0;
    std::vector<Value*> y_dirs, h_dirs, c_dirs;
    for (int64_t d = 0; d < dirs_; ++d) {
      Direction r = direction(d, dir == "reverse" || d == 1);
      if (want_y) y_dirs.push_back(dirs_ == 1 ? join(r.ys, ta, take(0)) : join(r.ys, ta, nullptr));
      if (want_h) h_dirs.push_back(x_.unsqueeze(r.h, ta));
      if (want_c) c_dirs.push_back(x_.unsqueeze(r.c ? r.c : zeros_state(), ta));
    }
    if (want_y && dirs_ > 1) join(y_dirs, ta + 1, take(0));
    if (want_h) join(h_dirs, ta, take(1));
    if (want_c) join(c_dirs, ta, take(2));
    x_.finish();
  }

 private:
  struct Direction {
    std::vector<Value*> ys;  // per time step in time order, [1, 1, B, H] or [B, 1, 1, H]
    Value* h = nullptr;      // final H [B, H]
    Value* c = nullptr;      // final C [B, H] (LSTM; null while zero)
  };

  /// Output k of the node, taken (once) so an emitted node produces it.
  Value* take(size_t k) {
    Value*& t = taken_[k];
    if (!t) t = x_.take_output(k);
    return t;
  }

  /// Concat of `parts` along `axis` (the part itself when there is one), producing `out` when
  /// given.
  Value* join(const std::vector<Value*>& parts, int64_t axis, Value* out) {
    if (parts.size() == 1 && !out) return parts[0];
    if (parts.size() == 1) return x_.emit("Identity", {parts[0]}, {}, out);
    return x_.emit("Concat", parts, axis_attr(axis), out);
  }

  static Attributes perm(std::vector<int64_t> p) {
    Attributes a;
    a.set("perm", std::move(p));
    return a;
  }
  static Attributes axis_attr(int64_t axis) {
    Attributes a;
    a.set("axis", axis);
    return a;
  }

  Value* zeros_state() { return x_.constant(Tensor(dt_, Shape{batch_, hidden_})); }

  // Optional-zero algebra: a null value is an all-zero tensor.
  Value* add(Value* a, Value* b) {
    if (!a) return b;
    if (!b) return a;
    return x_.emit("Add", {a, b});
  }
  Value* mul(Value* a, Value* b) {
    if (!a || !b) return nullptr;
    return x_.emit("Mul", {a, b});
  }

  /// Input `i` for direction d: slot d of axis `axis`, that axis removed; null when absent.
  Value* per_dir(size_t i, int64_t d, int64_t axis) {
    Value* v = n_->input(i);
    if (!v) return nullptr;
    return x_.squeeze(x_.slice(v, axis, d, d + 1), axis);
  }

  Value* clip(Value* v) {
    if (clip_ <= 0) return v;
    return x_.emit("Clip", {v, x_.scalar(-clip_, dt_), x_.scalar(clip_, dt_)});
  }

  Value* activate(const Act& a, Value* v) {
    v = clip(v);
    Attributes at;
    if (a.name == "Affine")
      return x_.emit("Add", {x_.emit("Mul", {v, x_.scalar(a.alpha, dt_)}), x_.scalar(a.beta, dt_)});
    if (a.name == "ScaledTanh")
      return x_.emit("Mul", {x_.emit("Tanh", {x_.emit("Mul", {v, x_.scalar(a.beta, dt_)})}),
                             x_.scalar(a.alpha, dt_)});
    if (a.name == "LeakyRelu" || a.name == "ThresholdedRelu" || a.name == "Elu") {
      at.set("alpha", a.alpha);
    } else if (a.name == "HardSigmoid") {
      at.set("alpha", a.alpha);
      at.set("beta", a.beta);
    }
    return x_.emit(a.name, {v}, at);
  }

  /// The masks of sequence_lens: per step, null when every row runs, else m and 1 - m [B, 1].
  void masks_setup() {
    Value* sl = n_->input(4);
    if (!sl) return;
    if (const Tensor* t = constant_of(sl)) {
      std::vector<int64_t> lens = t->to_int64_vector();
      bool all_full = true;
      for (int64_t b = 0; b < batch_; ++b) {
        if (lens[b] < 0 || lens[b] > seq_)
          fail("{}: sequence_lens[{}] = {} is out of [0, {}]", n_->describe(), b, lens[b], seq_);
        all_full = all_full && lens[b] == seq_;
      }
      if (all_full) return;
      lens_ = lens;
      return;
    }
    Attributes to;
    to.set("to", static_cast<int64_t>(onnx_type(dt_)));
    runtime_lens_ = x_.emit("Cast", {x_.unsqueeze(sl, 1)}, to);  // [B, 1] in X's dtype
  }

  /// {m, 1 - m} for step t, or {null, null} when every row runs at t.
  std::pair<Value*, Value*> mask(int64_t t) {
    if (runtime_lens_) {
      // lens - t >= 1 exactly when t < lens (integers): Clip to [0, 1] gives the 0/1 mask.
      Value* m =
          x_.emit("Clip", {x_.emit("Sub", {runtime_lens_, x_.scalar(static_cast<double>(t), dt_)}),
                           x_.scalar(0, dt_), x_.scalar(1, dt_)});
      return {m, x_.emit("Sub", {x_.scalar(1, dt_), m})};
    }
    if (lens_.empty()) return {nullptr, nullptr};
    Tensor m(dt_, {batch_, 1}), inv(dt_, {batch_, 1});
    bool all = true;
    for (int64_t b = 0; b < batch_; ++b) {
      const bool on = t < lens_[b];
      all = all && on;
      m.set_from_double(b, on ? 1 : 0);
      inv.set_from_double(b, on ? 0 : 1);
    }
    if (all) return {nullptr, nullptr};
    return {x_.constant(std::move(m)), x_.constant(std::move(inv))};
  }

  static int onnx_type(DType t) {
    switch (t) {
      case DType::f16:
        return 10;
      case DType::f64:
        return 11;
      default:
        return 1;
    }
  }

  /// Blends a new state with the old one under mask m (see the file comment); the old one may be
  /// null (zero).
  Value* blend(const std::pair<Value*, Value*>& m, Value* fresh, Value* old) {
    if (!m.first) return fresh;
    return add(mul(m.first, fresh), mul(m.second, old));
  }

  Direction direction(int64_t d, bool reverse) {
    const int64_t G = gate_count(cell_), H = hidden_, B = batch_;
    const Act* act = acts_.data() + d * activation_count(cell_);
    Value* W = per_dir(1, d, 0);                                  // [G*H, I]
    Value* R = per_dir(2, d, 0);                                  // [G*H, H]
    Value* Bv = per_dir(3, d, 0);                                 // [2*G*H] or null
    Value* P = cell_ == Cell::lstm ? per_dir(7, d, 0) : nullptr;  // [3H] or null
    const int64_t state_axis = batch_first_ ? 1 : 0;
    Value* h = per_dir(5, d, state_axis);                                  // [B, H] or null
    Value* c = cell_ == Cell::lstm ? per_dir(6, d, state_axis) : nullptr;  // [B, H] or null
    auto tr = [&](Value* m) { return x_.emit("Transpose", {m}, perm({1, 0})); };

    // Input projection of every step, with the biases that add to it.
    Value* xw = x_.emit("MatMul", {x2_, tr(W)});  // [S*B, G*H]
    Value* rb_h = nullptr;                        // GRU linear_before_reset: Rb_h [H]
    if (Bv) {
      Value* wb = x_.slice(Bv, 0, 0, G * H);
      Value* rb = x_.slice(Bv, 0, G * H, 2 * G * H);
      Value* bias;
      if (cell_ == Cell::gru && lbr_) {
        rb_h = x_.slice(rb, 0, 2 * H, 3 * H);
        bias = x_.emit("Concat",
                       {x_.emit("Add", {x_.slice(wb, 0, 0, 2 * H), x_.slice(rb, 0, 0, 2 * H)}),
                        x_.slice(wb, 0, 2 * H, 3 * H)},
                       axis_attr(0));
      } else {
        bias = x_.emit("Add", {wb, rb});
      }
      xw = x_.emit("Add", {xw, bias});
    }
    Value* rt = nullptr;    // R^T [H, G*H] (GRU: the z, r part [H, 2H])
    Value* rt_h = nullptr;  // GRU: R_h^T [H, H]
    if (cell_ == Cell::gru) {
      rt = tr(x_.slice(R, 0, 0, 2 * H));
      rt_h = tr(x_.slice(R, 0, 2 * H, 3 * H));
    } else {
      rt = tr(R);
    }
    Value *pi = nullptr, *po = nullptr, *pf = nullptr;
    if (P) {
      pi = x_.slice(P, 0, 0, H);
      po = x_.slice(P, 0, H, 2 * H);
      pf = x_.slice(P, 0, 2 * H, 3 * H);
    }

    Direction out;
    out.ys.assign(static_cast<size_t>(seq_), nullptr);
    for (int64_t s = 0; s < seq_; ++s) {
      const int64_t t = reverse ? seq_ - 1 - s : s;
      const auto m = mask(t);
      Value* xg = x_.slice(xw, 0, t * B, (t + 1) * B);  // [B, G*H]
      Value* hn = nullptr;
      Value* cn = nullptr;
      if (cell_ == Cell::rnn) {
        hn = activate(act[0], add(xg, h ? x_.emit("MatMul", {h, rt}) : nullptr));
      } else if (cell_ == Cell::lstm) {
        Value* g = add(xg, h ? x_.emit("MatMul", {h, rt}) : nullptr);
        Value* gi = add(x_.slice(g, 1, 0, H), mul(pi, c));
        Value* go = x_.slice(g, 1, H, 2 * H);
        Value* gf = add(x_.slice(g, 1, 2 * H, 3 * H), mul(pf, c));
        Value* gc = x_.slice(g, 1, 3 * H, 4 * H);
        Value* i = activate(act[0], gi);
        Value* f = input_forget_ ? x_.emit("Sub", {x_.scalar(1, dt_), i}) : activate(act[0], gf);
        Value* cc = activate(act[1], gc);
        cn = add(mul(f, c), x_.emit("Mul", {i, cc}));
        Value* o = activate(act[0], add(go, mul(po, cn)));
        hn = x_.emit("Mul", {o, activate(act[2], cn)});
      } else {
        Value* gzr = add(x_.slice(xg, 1, 0, 2 * H), h ? x_.emit("MatMul", {h, rt}) : nullptr);
        Value* z = activate(act[0], x_.slice(gzr, 1, 0, H));
        Value* r = activate(act[0], x_.slice(gzr, 1, H, 2 * H));
        Value* xh = x_.slice(xg, 1, 2 * H, 3 * H);
        Value* pre;
        if (lbr_) {
          Value* hh = add(h ? x_.emit("MatMul", {h, rt_h}) : nullptr, rb_h);
          pre = add(xh, mul(r, hh));
        } else {
          Value* rh = mul(r, h);
          pre = add(xh, rh ? x_.emit("MatMul", {rh, rt_h}) : nullptr);
        }
        Value* hc = activate(act[1], pre);
        hn = add(x_.emit("Mul", {x_.emit("Sub", {x_.scalar(1, dt_), z}), hc}), mul(z, h));
      }
      Value* y = m.first ? x_.emit("Mul", {m.first, hn}) : hn;
      h = m.first ? blend(m, hn, h) : hn;
      if (cell_ == Cell::lstm) c = m.first ? blend(m, cn, c) : cn;
      if (want_y_)
        out.ys[static_cast<size_t>(t)] =
            x_.emit("Unsqueeze", {y, batch_first_ ? x_.i64s({1, 2}) : x_.i64s({0, 1})});
    }
    out.h = h ? h : zeros_state();
    out.c = c;
    return out;
  }

  NodeExpander x_;
  Node* n_;
  Cell cell_;
  DType dt_ = DType::f32;
  bool batch_first_ = false, lbr_ = false, input_forget_ = false;
  int64_t seq_ = 0, batch_ = 0, input_ = 0, hidden_ = 0, dirs_ = 1;
  float clip_ = 0;
  std::vector<Act> acts_;
  Value* x2_ = nullptr;
  bool want_y_ = true;
  Value* taken_[3] = {nullptr, nullptr, nullptr};
  std::vector<int64_t> lens_;      // constant sequence_lens when some row is shorter than seq
  Value* runtime_lens_ = nullptr;  // [B, 1] float, when sequence_lens is computed at run time
};

Cell cell_of(const std::string& op) {
  return op == "RNN" ? Cell::rnn : op == "GRU" ? Cell::gru : Cell::lstm;
}

bool is_recurrent(const std::string& op) { return op == "RNN" || op == "GRU" || op == "LSTM"; }

}  // namespace

bool needs_expand_recurrent(const Graph& graph) {
  return any_node(graph, [](const Node& n) { return is_recurrent(n.op_type); });
}

bool expand_recurrent(Graph& graph) {
  return rewrite_matching(
      graph, [](const Node& n) { return is_recurrent(n.op_type); },
      [](Graph& g, Node* n) { Recurrent(g, n, cell_of(n->op_type)).run(); });
}

}  // namespace tessel::graph_passes
