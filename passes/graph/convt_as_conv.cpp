// convt_as_conv: a 2-D ConvTranspose becomes stride-1 Convs, one per output phase (sub-pixel
// decomposition), whose outputs are interleaved and cut to the output's extent. The compiled
// backends (npu, cpu) compute Conv in general (any kernel, pads, dilations, groups) but
// ConvTranspose only when kernel == stride without padding (lower::op_parts).
//
// Per spatial axis (input extent L, kernel K, stride s, dilation d, begin padding pb, output
// extent O, all resolved by ops::convt_shapes from pads / output_padding / output_shape /
// auto_pad): ONNX ConvTranspose adds x[i] * w[k] into y[o] for o = i*s + k*d - pb. Output
// o = s*q + r (phase r in [0, s), q in [0, Q), Q = ceil(O / s)) takes the taps k with
// (r + pb - k*d) mod s == 0, each reading x[q + c_k], c_k = (r + pb - k*d) / s. Consecutive taps
// are s/g apart (g = gcd(s, d)) and their c_k d/g apart, so the phase is a stride-1 Conv of x with
// those taps flipped (largest k first), dilation d/g, begin padding -c_min and end padding
// Q + c_max - L (a negative padding is a Slice of x instead). A phase with no tap, or whose window
// misses x entirely, holds only the bias (Expand). The weight of a phase is
// W'[g*Mg + m, c, j...] = w[g*Cg + c, m, k(j)...] (Conv's [M, C/group, K...] from
// ConvTranspose's [C, M/group, K...], groups kept), computed at compile time.
// The s_h * s_w phase outputs [N, M, Qh, Qw] are interleaved by Unsqueeze + Concat on a new axis
// after W (then H) and a Reshape ([N, M, Qh, Qw, s_w] -> [N, M, Qh, Qw*s_w]): out[s*q + r] =
// phase r at q; a Slice keeps the first O rows and columns when s does not divide O.
//
// Why not zero insertion (upsample x by s with zeros, one stride-1 Conv with the flipped
// kernel): it multiplies s_h*s_w times as many zeros as products (4x the cube work at stride 2),
// while the phases compute exactly the products that contribute; both use only ops the npu and
// cpu already compile (Conv, Slice, Concat, Expand, views).
//
// Runs after conv_as_2d (a 1-D ConvTranspose is then 2-D over a height-1 image), where it runs
// for the compiled targets (driver::load_model, driver::compiled_form), on shape-inferred input.
// Leaves alone a ConvTranspose the backends compile as it is (kernel == stride, group 1, no
// padding, dilation 1, no output padding or output_shape, auto_pad NOTSET), one whose weight is
// not a constant, and one whose input is not 4-D (3-D: Conv 3-D is not compiled either).
// Guarantees: every other ConvTranspose is gone; its output keeps its name, shape and values
// (up to the order of the fp32 sums).
#include <fmt/format.h>

#include <numeric>

#include "compiler/ops/op_registry.h"
#include "compiler/ops/op_util.h"
#include "compiler/support/error.h"
#include "compiler/support/int_math.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

/// The form lower::op_parts compiles directly (one 1x1 convolution per tap).
bool compiled_directly(const Node& n) {
  const Value* w = n.input(1);
  const std::vector<int64_t> one = {1, 1};
  const auto strides = n.attrs.get_ints_or("strides", one, n.name);
  const auto dil = n.attrs.get_ints_or("dilations", one, n.name);
  const auto pads = n.attrs.get_ints_or("pads", {0, 0, 0, 0}, n.name);
  const auto opad = n.attrs.get_ints_or("output_padding", {0, 0}, n.name);
  return n.attrs.get_int_or("group", 1, n.name) == 1 && strides.size() == 2 &&
         w->shape[2] == strides[0] && w->shape[3] == strides[1] && dil == one &&
         std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }) &&
         std::all_of(opad.begin(), opad.end(), [](int64_t p) { return p == 0; }) &&
         !n.attrs.has("output_shape") &&
         n.attrs.get_string_or("auto_pad", "NOTSET", n.name) == "NOTSET";
}

bool is_rewritten(const Node& n) {
  if (n.op_type != "ConvTranspose" || n.outputs.size() != 1) return false;
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  if (!x || !w || x->shape.size() != 4 || w->shape.size() != 4) return false;
  if (!w->constant || w->producer) return false;
  return !compiled_directly(n);
}

/// One output phase along one spatial axis.
struct AxisPhase {
  std::vector<int64_t> taps;               // kernel indices k, largest first (the Conv's tap order)
  int64_t dilation = 1;                    // of the phase's Conv
  int64_t slice_begin = 0, slice_end = 0;  // of x along this axis
  int64_t pad_begin = 0, pad_end = 0;      // of the phase's Conv
  bool empty() const { return taps.empty(); }
};

/// Phase r of an axis with input extent L, kernel K, stride s, dilation d, begin padding pb and
/// Q outputs per phase (see the file comment).
AxisPhase axis_phase(int64_t r, int64_t L, int64_t K, int64_t s, int64_t d, int64_t pb, int64_t Q) {
  AxisPhase p;
  for (int64_t k = K - 1; k >= 0; --k)
    if (((r + pb - k * d) % s + s) % s == 0) p.taps.push_back(k);
  if (p.taps.empty()) return p;
  const int64_t g = std::gcd(s, d);
  p.dilation = d / g;
  const int64_t c_min = (r + pb - p.taps.front() * d) / s;  // exact: divisible by s
  const int64_t c_max = (r + pb - p.taps.back() * d) / s;
  const int64_t start = c_min, end = Q + c_max;  // x rows [start, end) are read
  p.slice_begin = std::max<int64_t>(0, start);
  p.slice_end = std::min<int64_t>(L, end);
  if (p.slice_begin >= p.slice_end) {  // the window never meets x: only the bias
    p.taps.clear();
    return p;
  }
  p.pad_begin = std::max<int64_t>(0, -start);
  p.pad_end = std::max<int64_t>(0, end - L);
  return p;
}

void rewrite(Graph& g, Node* n) {
  Value* x = n->input(0);
  Value* w = n->input(1);
  Value* b = n->input(2);
  Value* y = n->outputs[0];
  const ops::ConvTShapes cs = ops::convt_shapes(*n, x->shape, w->shape, b ? &b->shape : nullptr);
  if (cs.out != y->shape)
    fail("{}: the output shape {} differs from the geometry's {}", n->describe(),
         shape_to_string(y->shape), shape_to_string(cs.out));
  const int64_t N = cs.N, M = cs.M, group = cs.group;
  const int64_t Cg = cs.C / group, Mg = M / group;
  int64_t Q[2], S[2];
  std::vector<AxisPhase> phases[2];
  for (int a = 0; a < 2; ++a) {
    S[a] = cs.strides[a];
    Q[a] = ceil_div(cs.out[2 + a], S[a]);
    for (int64_t r = 0; r < S[a]; ++r)
      phases[a].push_back(axis_phase(r, cs.in_spatial[a], cs.kernel[a], S[a], cs.dilations[a],
                                     cs.pad_begin[a], Q[a]));
  }
  NodeExpander ex(g, n);
  Value* out = ex.take_output(0);
  const Shape phase_shape = {N, M, Q[0], Q[1]};
  const Tensor& wt = *w->constant;
  const int64_t KH = cs.kernel[0], KW = cs.kernel[1];

  // The bias-only phase: B (or 0) broadcast to [N, M, Qh, Qw].
  Value* bias_only = nullptr;
  auto bias_phase = [&]() {
    if (bias_only) return bias_only;
    Value* src = b ? ex.emit("Reshape", {b, ex.i64s({1, M, 1, 1})}) : ex.scalar(0.0, x->dtype);
    bias_only = ex.emit("Expand", {src, ex.i64s(phase_shape)});
    return bias_only;
  };

  std::vector<std::vector<Value*>> rows(S[0]);  // phase outputs by (rh, rw)
  for (int64_t rh = 0; rh < S[0]; ++rh) {
    for (int64_t rw = 0; rw < S[1]; ++rw) {
      const AxisPhase& ph = phases[0][rh];
      const AxisPhase& pw = phases[1][rw];
      if (ph.empty() || pw.empty()) {
        rows[rh].push_back(bias_phase());
        continue;
      }
      Value* xin = x;
      if (ph.slice_begin > 0 || ph.slice_end < cs.in_spatial[0])
        xin = ex.slice(xin, 2, ph.slice_begin, ph.slice_end);
      if (pw.slice_begin > 0 || pw.slice_end < cs.in_spatial[1])
        xin = ex.slice(xin, 3, pw.slice_begin, pw.slice_end);
      const int64_t th = static_cast<int64_t>(ph.taps.size());
      const int64_t tw = static_cast<int64_t>(pw.taps.size());
      Tensor wp(w->dtype, {M, Cg, th, tw});
      for (int64_t gi = 0; gi < group; ++gi)
        for (int64_t m = 0; m < Mg; ++m)
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t jh = 0; jh < th; ++jh)
              for (int64_t jw = 0; jw < tw; ++jw) {
                const int64_t src =
                    (((gi * Cg + c) * Mg + m) * KH + ph.taps[jh]) * KW + pw.taps[jw];
                const int64_t dst = (((gi * Mg + m) * Cg + c) * th + jh) * tw + jw;
                wp.set_from_double(dst, wt.get_as_double(src));
              }
      Attributes attrs;
      attrs.set("kernel_shape", std::vector<int64_t>{th, tw});
      attrs.set("strides", std::vector<int64_t>{1, 1});
      attrs.set("dilations", std::vector<int64_t>{ph.dilation, pw.dilation});
      attrs.set("pads", std::vector<int64_t>{ph.pad_begin, pw.pad_begin, ph.pad_end, pw.pad_end});
      attrs.set("group", group);
      std::vector<Value*> ins = {xin, ex.constant(std::move(wp))};
      if (b) ins.push_back(b);
      Value* p = ex.emit("Conv", ins, attrs);
      if (p->shape != phase_shape)
        fail("{}: phase ({}, {}) has shape {}, expected {}", n->describe(), rh, rw,
             shape_to_string(p->shape), shape_to_string(phase_shape));
      rows[rh].push_back(p);
    }
  }

  // Interleave: along W within each row phase, then along H. The last step produces `out`.
  const bool cut = Q[0] * S[0] != cs.out[2] || Q[1] * S[1] != cs.out[3];
  std::vector<Value*> interleaved_rows;
  for (int64_t rh = 0; rh < S[0]; ++rh) {
    if (S[1] == 1) {
      interleaved_rows.push_back(rows[rh][0]);
      continue;
    }
    std::vector<Value*> cols;
    for (Value* p : rows[rh]) cols.push_back(ex.unsqueeze(p, 4));
    Attributes ca;
    ca.set("axis", int64_t{4});
    Value* cat = ex.emit("Concat", cols, ca);  // [N, M, Qh, Qw, sw]
    const bool last = S[0] == 1 && !cut;
    interleaved_rows.push_back(
        ex.emit("Reshape", {cat, ex.i64s({N, M, Q[0], Q[1] * S[1]})}, {}, last ? out : nullptr));
  }
  Value* full = interleaved_rows[0];
  if (S[0] > 1) {
    std::vector<Value*> parts;
    for (Value* r : interleaved_rows) parts.push_back(ex.unsqueeze(r, 3));
    Attributes ca;
    ca.set("axis", int64_t{3});
    Value* cat = ex.emit("Concat", parts, ca);  // [N, M, Qh, sh, Qw*sw]
    full = ex.emit("Reshape", {cat, ex.i64s({N, M, Q[0] * S[0], Q[1] * S[1]})}, {},
                   cut ? nullptr : out);
  }
  if (cut) {
    ex.emit("Slice", {full, ex.i64s({0, 0}), ex.i64s({cs.out[2], cs.out[3]}), ex.i64s({2, 3})}, {},
            out);
  } else if (full != out) {  // stride 1: the one phase is the output (a view of it)
    ex.emit("Reshape", {full, ex.i64s(cs.out)}, {}, out);
  }
  ex.finish();
}

}  // namespace

bool needs_convt_as_conv(const Graph& graph) {
  return any_node(graph, [](const Node& n) { return is_rewritten(n); });
}

bool convt_as_conv(Graph& graph) {
  return rewrite_matching(
      graph, [](const Node& n) { return is_rewritten(n); }, rewrite);
}

}  // namespace tessel::graph_passes
