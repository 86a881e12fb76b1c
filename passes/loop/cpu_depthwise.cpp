// cpu_depthwise: the schedule of a depthwise convolution (one output channel per group) on the
// CPU.
//
// What. A "depthwise_conv2d" compute (compiler/lower/op_compute.cpp: out[b][c][oh][ow] =
// sum_{kh,kw} x[b][c][oh*sh + kh*dh - pt][ow*sw + kw*dw - pl] * w[c][0][kh][kw], x read with zero
// padding) and the elementwise stages between it and the kernel's output (bias, BN, activation,
// residual: contraction.h, epilogue_ok) become, per plane (b, c):
//
//   S = 0                                                    staged input rows, pitch P, zero
//   for row block rb (R output rows):                        padded around the input
//     for staged row sr: S[sr*P + pl ..] = x[b][c][ih] or 0  plain vector copies (no padding test
//                                                            in the window loop)
//     rows mode:  for r < R, for chunk of W output columns:
//                   acc = sum_taps S[(r*sh + kh*dh)*P + ow*sw + kw*dw] * w[c][kh][kw]
//                   out[b][c][oh][ow] = epilogue(acc)        last chunk of a row masked
//     flat mode (sh == 1): the block's outputs in one "pitched" index q = r*Q + ow (Q = P / sw
//                 columns per row, Q - OW of them past the row end), so a tap is one load of
//                 S[sw*q + kh*dh*P + kw*dw] for every lane:
//                   Y[q] = sum_taps ...                      W lanes of q per vector
//                   out[b][c][oh0 + r][ow] = epilogue(Y[r*Q + ow])   per row, masked
//
// The flat mode is for rows shorter than a vector (a 10x10 plane: 10 of 16 lanes per row in rows
// mode, 10 of 14 in flat mode, and 9 instead of 10 vectors per tap); the padded staging copy keeps
// every tap a plain (unmasked) load at a constant offset, which is what the generic schedule
// (cpu_vectorize + cpu_unroll) lacks: its padded loads compute per-lane bounds at every tap, and it
// does not vectorize rows shorter than a vector at all. The knobs (CpuDepthwiseKnobs: mode, rows
// per block, parallel) are chosen here and returned; the caller may fix them per node.
//
// Runs on the kernel's TE (no loop IR before it), like cpu_gemm. Guarantees: vectorized loops have
// W iterations and start at 0; every load of S and Y stays inside its allocation (sized for the
// lanes past the last valid output); the staging buffer is at most about 16 KiB unless one output
// row needs more; the plane loop is the only parallel loop.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/support/error.h"
#include "compiler/support/int_math.h"
#include "passes/loop/contraction.h"
#include "passes/loop/cpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;
using L::Expr;
using L::Var;

namespace {

Expr vref(const Var& v) { return L::var_ref(v); }
Expr imm(int64_t v) { return L::int_imm(v); }

/// Staging budget: S (and Y) stay entry-block allocas (codegen: up to 16 KiB) and in L1.
constexpr int64_t kStageBytes = 16 * 1024;
/// Element operations below which the plane loop runs serially (as CpuGenericKnobs).
constexpr int64_t kParallelMinWork = 1 << 15;

}  // namespace

std::optional<CpuDepthwiseResult> cpu_depthwise(const CpuKernelSpec& spec, const te::Tensor& dw,
                                                const CpuTarget& target,
                                                CpuDepthwiseKnobs* knobs_io) {
  if (dw->tag != "depthwise_conv2d" || dw->shape.size() != 4 || dw->extra_inputs.size() != 2)
    return std::nullopt;
  const te::Tensor& x = dw->extra_inputs[0];
  const te::Tensor& w = dw->extra_inputs[1];
  if (!x->is_placeholder() || !w->is_placeholder() || x->shape.size() != 4 || w->shape.size() != 4)
    return std::nullopt;
  if (spec.out->shape != dw->shape || !epilogue_ok(spec.out, dw)) return std::nullopt;
  for (const auto& [t, b] : spec.buffers)
    if (b->dtype != DType::f32) return std::nullopt;
  auto buf_of = [&](const te::Tensor& t) -> L::Buffer {
    auto it = spec.buffers.find(t.get());
    TESSEL_CHECK(it != spec.buffers.end(), "{}: {} has no buffer", spec.name, t->name);
    return it->second;
  };
  const L::Buffer xb = buf_of(x), wb = buf_of(w), ob = buf_of(spec.out);

  const int64_t W = target.vector_lanes;
  const int64_t B = dw->shape[0], C = dw->shape[1], OH = dw->shape[2], OW = dw->shape[3];
  const int64_t IH = x->shape[2], IW = x->shape[3];
  const int64_t KH = dw->attr("kernel", 0), KW = dw->attr("kernel", 1);
  const int64_t sh = dw->attr("strides", 0), sw = dw->attr("strides", 1);
  const int64_t dh = dw->attr("dilations", 0), dwl = dw->attr("dilations", 1);
  const int64_t pt = dw->attr("pads", 0), pl = dw->attr("pads", 1);
  if (B <= 0 || C <= 0 || OH <= 0 || OW <= 0 || KH <= 0 || KW <= 0 || sh <= 0 || sw <= 0 ||
      dh <= 0 || dwl <= 0 || pt < 0 || pl < 0 || x->shape[1] != C || w->shape[0] != C)
    return std::nullopt;

  // Staged columns a valid output reads, and the input columns copied into them.
  const int64_t w_need = (OW - 1) * sw + (KW - 1) * dwl + 1;
  const int64_t iw_copy = std::clamp<int64_t>(w_need - pl, 0, IW);
  const int64_t row_chunks = ceil_div(OW, W);

  CpuDepthwiseKnobs knobs = knobs_io ? *knobs_io : CpuDepthwiseKnobs{};
  const bool flat_possible = sh == 1 && sw <= 4;
  const int64_t p_flat = round_up(std::max({w_need, pl + iw_copy, OW * sw}), sw);
  const int64_t q_flat = p_flat / sw;
  if (knobs.flat == 1 && !flat_possible)
    fail("{}: cpu depthwise knob flat=1 needs stride 1 along H and at most 4 along W", spec.name);
  // Flat when its pitched rows waste fewer lanes than rows of whole vectors.
  const bool flat =
      knobs.flat == 1 || (knobs.flat == -1 && flat_possible && q_flat < row_chunks * W);
  const int64_t P = flat ? p_flat : std::max(w_need, pl + iw_copy);
  const int64_t Q = flat ? q_flat : 0;

  // Elements of S (rounded to whole vectors) for a block of `rows` output rows, counting the
  // reads of lanes past the last valid output; Y's size in flat mode.
  auto staged_rows = [&](int64_t rows) { return (rows - 1) * sh + (KH - 1) * dh + 1; };
  auto y_size = [&](int64_t rows) { return round_up(rows * Q, W); };
  auto s_size = [&](int64_t rows) {
    const int64_t last_read =
        flat ? sw * (y_size(rows) - 1) + (KH - 1) * dh * P + (KW - 1) * dwl
             : ((rows - 1) * sh + (KH - 1) * dh) * P + (row_chunks * W - 1) * sw + (KW - 1) * dwl;
    return round_up(std::max(staged_rows(rows) * P, last_read + 1), W);
  };
  int64_t R = knobs.rows;
  if (R <= 0) {
    int64_t fit = 1;
    for (int64_t r = 1; r <= OH; ++r) {
      const int64_t bytes = 4 * (s_size(r) + (flat ? y_size(r) : 0));
      if (bytes > kStageBytes) break;
      fit = r;
    }
    R = ceil_div(OH, ceil_div(OH, fit));  // equal blocks: the last one is not nearly empty
  }
  R = std::clamp<int64_t>(R, 1, OH);
  const int64_t RB = ceil_div(OH, R);
  const int64_t SR = staged_rows(R);
  const int64_t planes = B * C;
  const bool par = knobs.parallel && target.threads > 1 && planes > 1 &&
                   planes * OH * OW * KH * KW >= kParallelMinWork;
  if (knobs_io) {
    knobs_io->flat = flat ? 1 : 0;
    knobs_io->rows = R;
    knobs_io->parallel = par;
  }

  CpuDepthwiseResult result;
  result.flops = 2.0 * static_cast<double>(planes) * OH * OW * KH * KW;

  const L::Buffer s = L::make_buffer(spec.name + ".S", L::MemScope::host, DType::f32, {s_size(R)});
  const L::Buffer y =
      flat ? L::make_buffer(spec.name + ".Y", L::MemScope::host, DType::f32, {y_size(R)}) : nullptr;
  const L::Buffer accb =
      flat ? nullptr : L::make_buffer(spec.name + ".acc", L::MemScope::host, DType::f32, {W});

  Var plane = L::make_var("plane");
  Expr bi = B == 1 ? imm(0) : L::floordiv(vref(plane), C);
  Expr ch = B == 1 ? vref(plane) : L::floormod(vref(plane), C);
  Var rbv = L::make_var("rb");
  Expr oh0 = RB == 1 ? imm(0) : L::mul(vref(rbv), imm(R));

  // `count` elements from `first` in vectors of W: fn(offset expr, lane var) gives the store of
  // one vector; a partial last vector goes under `if (offset < count)` (masked lanes).
  auto vector_run = [&](int64_t count,
                        const std::function<L::Stmt(Expr off, const Var& lane)>& fn) -> L::Stmt {
    std::vector<L::Stmt> parts;
    const int64_t full = count / W, tail = count % W;
    if (full > 0) {
      Var c = L::make_var("c"), l = L::make_var("l");
      Expr off = L::add(L::mul(vref(c), imm(W)), vref(l));
      L::Stmt v = L::for_loop(l, W, fn(off, l), L::ForKind::vectorized);
      parts.push_back(full == 1 ? L::substitute_stmt(v, {{c.get(), imm(0)}})
                                : L::for_loop(c, full, v));
    }
    if (tail > 0) {
      Var l = L::make_var("l");
      Expr off = L::add(imm(full * W), vref(l));
      parts.push_back(L::for_loop(l, W, L::if_then(L::lt(off, imm(count)), fn(off, l)),
                                  L::ForKind::vectorized));
    }
    return parts.size() == 1 ? parts[0] : L::seq(parts);
  };

  // The sum over the window at staged element `base` (lane-dependent) + tap offsets: one chain
  // per kernel row, the rows added pairwise (shorter dependence chains than one running sum).
  auto window_sum = [&](const std::function<Expr(int64_t kh, int64_t kw)>& at) {
    std::vector<Expr> rows;
    for (int64_t kh = 0; kh < KH; ++kh) {
      Expr r;
      for (int64_t kw = 0; kw < KW; ++kw) {
        Expr term = L::mul(L::load(s, {at(kh, kw)}), L::load(wb, {ch, imm(0), imm(kh), imm(kw)}));
        r = r ? L::add(r, term) : term;
      }
      rows.push_back(r);
    }
    while (rows.size() > 1) {
      std::vector<Expr> next;
      for (size_t i = 0; i + 1 < rows.size(); i += 2) next.push_back(L::add(rows[i], rows[i + 1]));
      if (rows.size() % 2) next.push_back(rows.back());
      rows = std::move(next);
    }
    return rows[0];
  };
  auto out_value = [&](Expr oh, Expr ow, Expr acc) {
    return epilogue_at(spec.out, dw, {bi, ch, oh, ow}, acc, spec.buffers);
  };
  // Output rows r of the block that exist (the last block may be short).
  auto row_guard = [&](const Var& r, L::Stmt body) -> L::Stmt {
    if (OH % R == 0) return body;
    return L::if_then(L::lt(L::add(oh0, vref(r)), imm(OH)), body);
  };

  std::vector<L::Stmt> plane_body;
  // S = 0 once per plane: the padding columns are never written again, padding rows are written
  // as zeros below.
  plane_body.push_back(vector_run(
      s_size(R), [&](Expr off, const Var&) { return L::store(s, {off}, L::float_imm(0.0)); }));
  std::vector<L::Stmt> block;
  {
    Var sr = L::make_var("sr");
    Expr ih = L::sub(L::add(L::mul(oh0, imm(sh)), vref(sr)), imm(pt));
    Expr row0 = L::add(L::mul(vref(sr), imm(P)), imm(pl));
    L::Stmt copy = vector_run(iw_copy, [&](Expr off, const Var&) {
      return L::store(s, {L::add(row0, off)}, L::load(xb, {bi, ch, ih, off}));
    });
    L::Stmt zero = vector_run(iw_copy, [&](Expr off, const Var&) {
      return L::store(s, {L::add(row0, off)}, L::float_imm(0.0));
    });
    L::Stmt stage = iw_copy == 0 ? nullptr
                                 : L::if_then(L::logical_and(L::le(imm(0), ih), L::lt(ih, imm(IH))),
                                              copy, zero);
    if (stage) {
      stage = L::for_loop(sr, SR, stage);
      stage->comment = "stage input rows (zero padded)";
      block.push_back(stage);
    }
  }
  if (flat) {
    Var yc = L::make_var("yc"), l = L::make_var("l");
    Expr q = L::add(L::mul(vref(yc), imm(W)), vref(l));
    Expr acc = window_sum([&](int64_t kh, int64_t kw) {
      return L::add(L::mul(q, imm(sw)), imm(kh * dh * P + kw * dwl));
    });
    L::Stmt comp = L::for_loop(l, W, L::store(y, {q}, acc), L::ForKind::vectorized);
    const int64_t yv = y_size(R) / W;
    comp = yv == 1 ? L::substitute_stmt(comp, {{yc.get(), imm(0)}}) : L::for_loop(yc, yv, comp);
    comp->comment = fmt::format("window over pitched rows (Q={})", Q);
    block.push_back(comp);
    Var r = L::make_var("r");
    Expr oh = L::add(oh0, vref(r));
    L::Stmt out = vector_run(OW, [&](Expr ow, const Var&) {
      Expr acc_v = L::load(y, {L::add(L::mul(vref(r), imm(Q)), ow)});
      return L::store(ob, {bi, ch, oh, ow}, out_value(oh, ow, acc_v));
    });
    out = L::for_loop(r, R, row_guard(r, out));
    out->comment = "epilogue and store per output row";
    block.push_back(out);
  } else {
    Var r = L::make_var("r");
    Expr oh = L::add(oh0, vref(r));
    // The window's sum goes through a one-vector buffer (a register after LLVM's SROA) so an
    // epilogue reading it twice (HardSwish: x * hsig(x)) does not repeat the window.
    L::Stmt rowc = vector_run(OW, [&](Expr ow, const Var& l) {
      Expr acc = window_sum([&](int64_t kh, int64_t kw) {
        return L::add(L::mul(ow, imm(sw)),
                      L::add(L::mul(vref(r), imm(sh * P)), imm(kh * dh * P + kw * dwl)));
      });
      return L::seq({L::store(accb, {vref(l)}, acc),
                     L::store(ob, {bi, ch, oh, ow}, out_value(oh, ow, L::load(accb, {vref(l)})))});
    });
    rowc = L::for_loop(r, R, row_guard(r, rowc));
    rowc->comment = "window, epilogue and store per output row";
    block.push_back(rowc);
  }
  L::Stmt blocks = L::seq(block);
  blocks =
      RB == 1 ? L::substitute_stmt(blocks, {{rbv.get(), imm(0)}}) : L::for_loop(rbv, RB, blocks);
  plane_body.push_back(blocks);
  L::Stmt body = L::seq(plane_body);
  if (y) body = L::allocate(y, body);
  if (accb) body = L::allocate(accb, body);
  body = L::allocate(s, body);
  body = planes == 1
             ? L::substitute_stmt(body, {{plane.get(), imm(0)}})
             : L::for_loop(plane, planes, body, par ? L::ForKind::parallel : L::ForKind::serial);
  body->comment = fmt::format(
      "depthwise {}: {}x{} window, stride {}x{}, {} mode, pitch {}, {} output rows per block",
      spec.name, KH, KW, sh, sw, flat ? "flat" : "rows", P, R);
  result.body = body;
  return result;
}

}  // namespace tessel::passes
