// Recurrent ops: RNN, GRU, LSTM (ONNX operator docs, opset 14: layout, sequence_lens, clip,
// activations with activation_alpha/beta, bidirectional; GRU linear_before_reset; LSTM
// peepholes and input_forget).
//
// Layout 0: X [seq, batch, input], Y [seq, dirs, batch, hidden], Y_h / Y_c [dirs, batch, hidden];
// layout 1: X [batch, seq, input], Y [batch, seq, dirs, hidden], Y_h / Y_c [batch, dirs, hidden].
// W [dirs, G*hidden, input], R [dirs, G*hidden, hidden], B [dirs, 2*G*hidden] (Wb then Rb) with
// the gate order of the docs (GRU z, r, h; LSTM i, o, f, c; P = [Pi, Po, Pf]).
// Each batch row runs on its own: steps past sequence_lens[b] leave Y zero and the state frozen;
// the reverse direction starts at step sequence_lens[b] - 1.
#include <cmath>

#include "compiler/ops/op_util.h"
#include "compiler/ops/rnn_activations.h"

namespace tessel::ops {
namespace {

using Cell = RnnCell;

int gate_count(Cell c) { return c == Cell::rnn ? 1 : (c == Cell::gru ? 3 : 4); }

/// An activation function of the recurrent ops' list (with its alpha / beta).
struct Activation : RnnActivation {
  template <class C>
  C operator()(C x) const {
    const C a = static_cast<C>(alpha), b = static_cast<C>(beta);
    if (name == "Sigmoid")
      return x >= C(0) ? C(1) / (C(1) + std::exp(-x)) : std::exp(x) / (C(1) + std::exp(x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return x > C(0) ? x : C(0);
    if (name == "Affine") return a * x + b;
    if (name == "LeakyRelu") return x < C(0) ? a * x : x;
    if (name == "ThresholdedRelu") return x > a ? x : C(0);
    if (name == "ScaledTanh") return a * std::tanh(b * x);
    if (name == "HardSigmoid") return std::max(C(0), std::min(C(1), a * x + b));
    if (name == "Elu") return x < C(0) ? a * (std::exp(x) - C(1)) : x;
    if (name == "Softsign") return x / (C(1) + std::abs(x));
    return std::log1p(std::exp(x));  // Softplus
  }
};

struct RnnConfig {
  Cell cell;
  int64_t seq, batch, input, hidden, dirs;
  bool batch_first;
  bool reverse_only;
  float clip;  // 0 = none
  bool linear_before_reset;
  bool input_forget;
  std::vector<Activation> acts;  // activation_count(cell) per direction
};

std::vector<Activation> parse_activations(const Node& node, Cell cell, int64_t dirs) {
  std::vector<Activation> acts;
  for (const RnnActivation& a : parse_rnn_activations(node, cell, dirs)) acts.push_back({a});
  return acts;
}

RnnConfig rnn_config(const Node& node, Cell cell, const Shape& x, const Shape& w, const Shape& r) {
  RnnConfig c;
  c.cell = cell;
  const std::string& nn = node.name;
  const int64_t layout = node.attrs.get_int_or("layout", 0, nn);
  if (layout != 0 && layout != 1) node_fail(node, "layout={} must be 0 or 1", layout);
  c.batch_first = layout == 1;
  if (x.size() != 3) node_fail(node, "X must be 3-D, got {}", shape_to_string(x));
  c.seq = c.batch_first ? x[1] : x[0];
  c.batch = c.batch_first ? x[0] : x[1];
  c.input = x[2];
  const std::string dir = node.attrs.get_string_or("direction", "forward", nn);
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    node_fail(node, "direction '{}', expected forward, reverse or bidirectional", dir);
  c.dirs = dir == "bidirectional" ? 2 : 1;
  c.reverse_only = dir == "reverse";
  const int64_t G = gate_count(cell);
  c.hidden = node.attrs.get_int_or("hidden_size", w.size() == 3 ? w[1] / G : 0, nn);
  if (w != Shape{c.dirs, G * c.hidden, c.input})
    node_fail(node, "W has shape {}, expected [{}, {}, {}]", shape_to_string(w), c.dirs,
              G * c.hidden, c.input);
  if (r != Shape{c.dirs, G * c.hidden, c.hidden})
    node_fail(node, "R has shape {}, expected [{}, {}, {}]", shape_to_string(r), c.dirs,
              G * c.hidden, c.hidden);
  c.clip = node.attrs.get_float_or("clip", 0.0f, nn);
  if (c.clip < 0) node_fail(node, "clip must be positive");
  c.linear_before_reset = node.attrs.get_int_or("linear_before_reset", 0, nn) != 0;
  c.input_forget = node.attrs.get_int_or("input_forget", 0, nn) != 0;
  c.acts = parse_activations(node, cell, c.dirs);
  return c;
}

Shape y_shape(const RnnConfig& c) {
  return c.batch_first ? Shape{c.batch, c.seq, c.dirs, c.hidden}
                       : Shape{c.seq, c.dirs, c.batch, c.hidden};
}
Shape state_shape(const RnnConfig& c) {
  return c.batch_first ? Shape{c.batch, c.dirs, c.hidden} : Shape{c.dirs, c.batch, c.hidden};
}

void rnn_infer(Node& node, Cell cell) {
  const size_t max_in = cell == Cell::lstm ? 8 : 6;
  const size_t max_out = cell == Cell::lstm ? 3 : 2;
  check_arity(node, 3, max_in, 0, max_out);
  const Value& x = required_input(node, 0, "X");
  expect_float(node, x.dtype, "input X");
  expect_same_dtype(node, 0, 1);
  expect_same_dtype(node, 0, 2);
  const RnnConfig c = rnn_config(node, cell, x.shape, required_input(node, 1, "W").shape,
                                 required_input(node, 2, "R").shape);
  const int64_t G = gate_count(cell);
  if (const Value* b = node.input(3))
    if (b->shape != Shape{c.dirs, 2 * G * c.hidden})
      node_fail(node, "B has shape {}, expected [{}, {}]", shape_to_string(b->shape), c.dirs,
                2 * G * c.hidden);
  if (const Value* sl = node.input(4)) {
    expect_dtype(node, sl->dtype, {DType::i32}, "input sequence_lens");
    if (sl->shape != Shape{c.batch}) node_fail(node, "sequence_lens must have shape [{}]", c.batch);
  }
  for (size_t i : {size_t{5}, size_t{6}}) {
    const Value* st = i == 5 || cell == Cell::lstm ? node.input(i) : nullptr;
    if (st && st->shape != state_shape(c))
      node_fail(node, "input {} has shape {}, expected {}", i, shape_to_string(st->shape),
                shape_to_string(state_shape(c)));
  }
  if (cell == Cell::lstm)
    if (const Value* p = node.input(7))
      if (p->shape != Shape{c.dirs, 3 * c.hidden})
        node_fail(node, "P has shape {}, expected [{}, {}]", shape_to_string(p->shape), c.dirs,
                  3 * c.hidden);
  set_output(node, 0, x.dtype, y_shape(c));
  set_output(node, 1, x.dtype, state_shape(c));
  set_output(node, 2, x.dtype, state_shape(c));
}

template <class C>
std::vector<Tensor> rnn_compute(const Node& node, Cell cell, const std::vector<const Tensor*>& in) {
  const Tensor& x = kernel_input(node, in, 0, "X");
  const Tensor& w = kernel_input(node, in, 1, "W");
  const Tensor& r = kernel_input(node, in, 2, "R");
  auto opt = [&](size_t i) -> const Tensor* { return i < in.size() ? in[i] : nullptr; };
  const RnnConfig c = rnn_config(node, cell, x.shape(), w.shape(), r.shape());
  const int64_t G = gate_count(cell), H = c.hidden, I = c.input;
  InputView<C> vx(x), vw(w), vr(r);
  std::vector<C> bias(static_cast<size_t>(c.dirs * 2 * G * H), C(0));
  // Copies optional input i (which must hold exactly dst.size() elements) into dst.
  auto load_opt = [&](size_t i, std::vector<C>& dst, const char* role) {
    const Tensor* t = opt(i);
    if (t == nullptr) return;
    if (t->numel() != static_cast<int64_t>(dst.size()))
      node_fail(node, "{} has {} elements, expected {}", role, t->numel(), dst.size());
    InputView<C> v(*t);
    std::copy(v.data(), v.data() + t->numel(), dst.begin());
  };
  load_opt(3, bias, "B");
  std::vector<C> peep(static_cast<size_t>(c.dirs * 3 * H), C(0));
  if (cell == Cell::lstm) load_opt(7, peep, "P");
  const Shape ss = state_shape(c);
  std::vector<C> h0(static_cast<size_t>(shape_numel(ss)), C(0)), c0(h0.size(), C(0));
  load_opt(5, h0, "initial_h");
  if (cell == Cell::lstm) load_opt(6, c0, "initial_c");
  std::vector<int64_t> lens(static_cast<size_t>(c.batch), c.seq);
  if (const Tensor* sl = opt(4)) {
    if (sl->numel() != c.batch) node_fail(node, "sequence_lens must have {} entries", c.batch);
    for (int64_t b = 0; b < c.batch; ++b) {
      lens[b] = load_as<int64_t>(sl->raw(), sl->dtype(), b);
      if (lens[b] < 0 || lens[b] > c.seq)
        node_fail(node, "sequence_lens[{}] = {} is out of [0, {}]", b, lens[b], c.seq);
    }
  }
  OutputBuffer<C> y(x.dtype(), y_shape(c));
  OutputBuffer<C> yh(x.dtype(), ss), yc(x.dtype(), ss);
  auto x_at = [&](int64_t t, int64_t b) {
    return vx.data() + (c.batch_first ? (b * c.seq + t) : (t * c.batch + b)) * I;
  };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return y.data() +
           (c.batch_first ? ((b * c.seq + t) * c.dirs + d) : ((t * c.dirs + d) * c.batch + b)) * H;
  };
  auto state_at = [&](int64_t d, int64_t b) {
    return c.batch_first ? (b * c.dirs + d) * H : (d * c.batch + b) * H;
  };
  auto clip = [&](C v) {
    return c.clip > 0 ? std::max(static_cast<C>(-c.clip), std::min(static_cast<C>(c.clip), v)) : v;
  };
  const int na = activation_count(cell);
  std::vector<C> gx(static_cast<size_t>(G * H)), gh(static_cast<size_t>(G * H));
  std::vector<C> h(static_cast<size_t>(H)), cs(static_cast<size_t>(H)), hn(static_cast<size_t>(H));
  std::vector<C> zg(static_cast<size_t>(H)), rg(static_cast<size_t>(H));
  for (int64_t d = 0; d < c.dirs; ++d) {
    const bool reverse = c.reverse_only || d == 1;
    const C* W = vw.data() + d * G * H * I;
    const C* R = vr.data() + d * G * H * H;
    const C* Wb = bias.data() + d * 2 * G * H;
    const C* Rb = Wb + G * H;
    const C* P = peep.data() + d * 3 * H;
    const Activation* act = c.acts.data() + d * na;
    for (int64_t b = 0; b < c.batch; ++b) {
      std::copy(h0.begin() + state_at(d, b), h0.begin() + state_at(d, b) + H, h.begin());
      std::copy(c0.begin() + state_at(d, b), c0.begin() + state_at(d, b) + H, cs.begin());
      for (int64_t s = 0; s < lens[b]; ++s) {
        const int64_t t = reverse ? lens[b] - 1 - s : s;
        const C* xt = x_at(t, b);
        // gx = W x + Wb, gh = R h + Rb (per gate row).
        for (int64_t g = 0; g < G * H; ++g) {
          C ax = Wb[g], ah = Rb[g];
          for (int64_t k = 0; k < I; ++k) ax += W[g * I + k] * xt[k];
          for (int64_t k = 0; k < H; ++k) ah += R[g * H + k] * h[k];
          gx[g] = ax;
          gh[g] = ah;
        }
        if (cell == Cell::rnn) {
          for (int64_t j = 0; j < H; ++j) hn[j] = act[0](clip(gx[j] + gh[j]));
        } else if (cell == Cell::gru) {
          // Gate blocks: z = 0, r = 1, h = 2.
          for (int64_t j = 0; j < H; ++j) {
            zg[j] = act[0](clip(gx[j] + gh[j]));
            rg[j] = act[0](clip(gx[H + j] + gh[H + j]));
          }
          for (int64_t j = 0; j < H; ++j) {
            C pre;
            if (c.linear_before_reset) {
              pre = gx[2 * H + j] + rg[j] * gh[2 * H + j];  // r . (R_h h + Rb_h)
            } else {
              C acc = Rb[2 * H + j];  // (r . h) R_h^T + Rb_h
              for (int64_t k = 0; k < H; ++k) acc += R[(2 * H + j) * H + k] * (rg[k] * h[k]);
              pre = gx[2 * H + j] + acc;
            }
            const C cand = act[1](clip(pre));
            hn[j] = (C(1) - zg[j]) * cand + zg[j] * h[j];
          }
        } else {
          // Gate blocks: i = 0, o = 1, f = 2, c = 3; peepholes P = [Pi, Po, Pf].
          for (int64_t j = 0; j < H; ++j) {
            const C ig = act[0](clip(gx[j] + gh[j] + P[j] * cs[j]));
            C fg = act[0](clip(gx[2 * H + j] + gh[2 * H + j] + P[2 * H + j] * cs[j]));
            if (c.input_forget) fg = C(1) - ig;
            const C cc = act[1](clip(gx[3 * H + j] + gh[3 * H + j]));
            const C cn = fg * cs[j] + ig * cc;
            const C og = act[0](clip(gx[H + j] + gh[H + j] + P[H + j] * cn));
            cs[j] = cn;
            hn[j] = og * act[2](cn);
          }
        }
        std::copy(hn.begin(), hn.end(), h.begin());
        std::copy(h.begin(), h.end(), y_at(t, d, b));
      }
      std::copy(h.begin(), h.end(), yh.data() + state_at(d, b));
      std::copy(cs.begin(), cs.end(), yc.data() + state_at(d, b));
    }
  }
  std::vector<Tensor> outs;
  outs.push_back(y.finish());
  if (node.outputs.size() > 1) outs.push_back(yh.finish());
  if (node.outputs.size() > 2) outs.push_back(yc.finish());
  return outs;
}

void register_rnn(const char* name, Cell cell) {
  register_op({name, [cell](Node& node) { rnn_infer(node, cell); },
               [cell](const Node& node, const std::vector<const Tensor*>& inputs) {
                 const Tensor& x = kernel_input(node, inputs, 0, "X");
                 return dispatch_float(node, x.dtype(), [&](auto tag) {
                   return rnn_compute<decltype(tag)>(node, cell, inputs);
                 });
               }});
}

}  // namespace

void register_rnn_ops() {
  register_rnn("RNN", Cell::rnn);
  register_rnn("GRU", Cell::gru);
  register_rnn("LSTM", Cell::lstm);
}

}  // namespace tessel::ops
