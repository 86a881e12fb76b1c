// The GEMM view of conv2d / matmul tensor expressions (see contraction.h).
#include "passes/loop/contraction.h"

#include <fmt/format.h>

#include <functional>

#include "compiler/support/error.h"
#include "passes/loop/cpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;
using L::Expr;
using L::Var;

namespace {

Expr vref(const Var& v) { return L::var_ref(v); }

/// True when the conv window stays inside the input for every output pixel (no padding needed).
bool window_inside(int64_t out, int64_t in, int64_t k, int64_t s, int64_t d, int64_t p_begin) {
  return p_begin == 0 && (out - 1) * s + (k - 1) * d < in;
}

std::optional<Contraction> conv_contraction_impl(const te::Tensor& c) {
  Contraction r;
  const te::Tensor& x = c->extra_inputs.at(0);
  const te::Tensor& w = c->extra_inputs.at(1);
  if (!x->is_placeholder() || !w->is_placeholder() || c->shape.size() != 4) return std::nullopt;
  const int64_t nb = c->shape[0], cout = c->shape[1], oh = c->shape[2], ow = c->shape[3];
  const int64_t groups = c->attr("groups");
  const int64_t cout_g = cout / groups, cin_g = w->shape[1];
  const int64_t kh = w->shape[2], kw = w->shape[3];
  const int64_t s0 = c->attr("strides", 0), s1 = c->attr("strides", 1);
  const int64_t d0 = c->attr("dilations", 0), d1 = c->attr("dilations", 1);
  const int64_t p0 = c->attr("pads", 0), p1 = c->attr("pads", 1);
  r.bvars = {L::make_var("bn"), L::make_var("bg")};
  r.bext = {nb, groups};
  r.m = L::make_var("m");
  r.n = L::make_var("n");
  r.M = cout_g;
  r.N = oh * ow;
  r.kvars = {L::make_var("kc"), L::make_var("kh"), L::make_var("kw")};
  r.kext = {cin_g, kh, kw};
  r.a = w;
  r.b = x;
  Expr bn = nb == 1 ? L::int_imm(0) : vref(r.bvars[0]);
  Expr bg = groups == 1 ? L::int_imm(0) : vref(r.bvars[1]);
  Expr ci = vref(r.kvars[0]);
  Expr rh = kh == 1 ? L::int_imm(0) : vref(r.kvars[1]);
  Expr rw = kw == 1 ? L::int_imm(0) : vref(r.kvars[2]);
  Expr co = L::add(L::mul(bg, L::int_imm(cout_g)), vref(r.m));
  Expr ohv = L::floordiv(vref(r.n), ow), owv = L::floormod(vref(r.n), ow);
  r.a_idx = {co, ci, rh, rw};
  Expr ih = L::add(L::mul(ohv, L::int_imm(s0)), L::sub(L::mul(rh, L::int_imm(d0)), L::int_imm(p0)));
  Expr iw = L::add(L::mul(owv, L::int_imm(s1)), L::sub(L::mul(rw, L::int_imm(d1)), L::int_imm(p1)));
  r.b_idx = {bn, L::add(L::mul(bg, L::int_imm(cin_g)), ci), ih, iw};
  r.conv = true;
  r.OH = oh;
  r.OW = ow;
  r.oh = L::make_var("oh");
  r.ow = L::make_var("ow");
  {
    Expr ih2 = L::add(L::mul(vref(r.oh), L::int_imm(s0)),
                      L::sub(L::mul(rh, L::int_imm(d0)), L::int_imm(p0)));
    Expr iw2 = L::add(L::mul(vref(r.ow), L::int_imm(s1)),
                      L::sub(L::mul(rw, L::int_imm(d1)), L::int_imm(p1)));
    r.b_idx_rows = {bn, L::add(L::mul(bg, L::int_imm(cin_g)), ci), ih2, iw2};
  }
  r.b_padded = !(window_inside(oh, x->shape[2], kh, s0, d0, p0) &&
                 window_inside(ow, x->shape[3], kw, s1, d1, p1));
  r.c_idx = {bn, co, ohv, owv};
  r.KH = kh;
  r.KW = kw;
  r.stride_h = s0;
  r.stride_w = s1;
  r.dilation_h = d0;
  r.dilation_w = d1;
  r.pad_h = p0;
  r.pad_w = p1;
  r.groups = groups;
  r.cin_g = cin_g;
  r.input_shape = x->shape;
  return r;
}

std::optional<Contraction> matmul_contraction_impl(const te::Tensor& c) {
  Contraction r;
  const te::Tensor& a = c->extra_inputs.at(0);
  const te::Tensor& b = c->extra_inputs.at(1);
  if (!a->is_placeholder() || !b->is_placeholder()) return std::nullopt;
  const bool ta = c->attr("trans_a") != 0, tb = c->attr("trans_b") != 0;
  const Shape& as = a->shape;
  const Shape& bs = b->shape;
  if (bs.size() < 2) return std::nullopt;  // matrix-vector: generic schedule
  const bool a_vec = as.size() == 1;
  const size_t rank = c->shape.size();
  const int64_t kdim = a_vec ? as[0] : (ta ? as[as.size() - 2] : as.back());
  r.N = c->shape[rank - 1];
  const int64_t M = a_vec ? 1 : c->shape[rank - 2];
  const size_t batch_rank = rank - 1 - (a_vec ? 0 : 1);
  r.m = L::make_var("m");
  r.n = L::make_var("n");
  r.kvars = {L::make_var("k")};
  r.kext = {kdim};
  r.a = a;
  r.b = b;
  Expr k = vref(r.kvars[0]);
  // B broadcast over every batch dim: fold the batch dims into M (rows of one big matrix).
  bool b_batched = false;
  for (size_t d = 0; d + 2 < bs.size(); ++d) b_batched |= bs[d] != 1;
  const bool fold = !b_batched && !a_vec && !ta;
  std::vector<Expr> out_batch(batch_rank);
  Expr m = vref(r.m);
  if (fold) {
    int64_t rows = M;
    for (size_t d = 0; d < batch_rank; ++d) rows *= c->shape[d];
    r.M = rows;
    // m = ((b0 * B1 + b1) * ... ) * M + mm
    Expr rest = vref(r.m);
    m = L::floormod(rest, M);
    Expr q = L::floordiv(rest, M);
    for (int d = static_cast<int>(batch_rank) - 1; d >= 0; --d) {
      // The outermost dim needs no modulo (m < rows), which keeps the offset affine.
      out_batch[d] = d == 0 ? q : L::floormod(q, c->shape[d]);
      q = L::floordiv(q, c->shape[d]);
    }
  } else {
    r.M = M;
    for (size_t d = 0; d < batch_rank; ++d) {
      r.bvars.push_back(L::make_var(fmt::format("b{}", d)));
      r.bext.push_back(c->shape[d]);
      out_batch[d] = c->shape[d] == 1 ? L::int_imm(0) : vref(r.bvars.back());
    }
  }
  auto batch_index = [&](const Shape& s, size_t mat_dims) {
    std::vector<Expr> idx;
    const size_t brank = s.size() - mat_dims;
    for (size_t d = 0; d < brank; ++d) {
      const size_t od = batch_rank - brank + d;
      idx.push_back(s[d] == 1 ? L::int_imm(0) : out_batch[od]);
    }
    return idx;
  };
  r.a_idx = batch_index(as, a_vec ? 1 : 2);
  if (a_vec) {
    r.a_idx.push_back(k);
  } else if (ta) {
    r.a_idx.push_back(k);
    r.a_idx.push_back(m);
  } else {
    r.a_idx.push_back(m);
    r.a_idx.push_back(k);
  }
  r.b_idx = batch_index(bs, 2);
  if (tb) {
    r.b_idx.push_back(vref(r.n));
    r.b_idx.push_back(k);
  } else {
    r.b_idx.push_back(k);
    r.b_idx.push_back(vref(r.n));
  }
  r.c_idx = out_batch;
  if (!a_vec) r.c_idx.push_back(m);
  r.c_idx.push_back(vref(r.n));
  return r;
}

}  // namespace

std::optional<Contraction> contraction_of(const te::Tensor& c) {
  if (c->tag == "conv2d") return conv_contraction_impl(c);
  if (c->tag == "matmul") return matmul_contraction_impl(c);
  return std::nullopt;
}

bool epilogue_ok(const te::Tensor& out, const te::Tensor& c) {
  for (const auto& t : te::post_order(out)) {
    if (t->is_placeholder() || t == c) continue;
    bool inside_c = false;  // stages c depends on (none for conv/matmul: they read placeholders)
    for (const auto& u : te::post_order(c))
      if (u == t) inside_c = true;
    if (inside_c) return false;
    if (t->is_reduce() || !t->tag.empty()) return false;
    bool ok = true;
    L::visit_expr(t->body, [&](const L::ExprNode& e) {
      if (e.kind != L::ExprKind::TensorRead || e.tensor->is_placeholder()) return;
      if (e.padded || e.tensor->shape != t->shape) {
        ok = false;
        return;
      }
      for (size_t d = 0; d < e.args.size(); ++d) {
        const bool own_axis =
            e.args[d]->kind == L::ExprKind::VarRef && e.args[d]->var == t->axes[d];
        const bool unit_dim = t->shape[d] == 1 && e.args[d]->kind == L::ExprKind::Int;
        if (!own_axis && !unit_dim) ok = false;
      }
    });
    if (!ok) return false;
  }
  return true;
}

Expr epilogue_at(const te::Tensor& t, const te::Tensor& c, const std::vector<Expr>& idx,
                 const Expr& acc, const lower::TensorBuffers& buffers) {
  if (t == c) return acc;
  std::map<const L::VarNode*, Expr> subst;
  for (size_t d = 0; d < t->axes.size(); ++d) subst[t->axes[d].get()] = idx[d];
  Expr body = L::substitute(t->body, subst);
  std::function<Expr(const Expr&)> rw = [&](const Expr& e) -> Expr {
    if (e->kind == L::ExprKind::TensorRead) {
      if (e->tensor->is_placeholder()) {
        auto it = buffers.find(e->tensor.get());
        TESSEL_CHECK(it != buffers.end(), "epilogue reads {} without a buffer", e->tensor->name);
        return L::load(it->second, e->args, e->padded, e->pad_value);
      }
      // A chain stage read at the reader's index (epilogue_ok).
      for (const auto& s : te::post_order(t))
        if (s.get() == e->tensor.get()) return epilogue_at(s, c, e->args, acc, buffers);
      internal_fail("epilogue: unknown stage {}", e->tensor->name);
    }
    if (e->args.empty()) return e;
    auto n = std::make_shared<L::ExprNode>(*e);
    for (auto& a : n->args) a = rw(a);
    return n;
  };
  return rw(body);
}

std::vector<size_t> used_batch_dims(const Contraction& g, const std::vector<Expr>& idx) {
  std::vector<size_t> used;
  for (size_t i = 0; i < g.bvars.size(); ++i) {
    bool u = false;
    for (const auto& e : idx) u |= uses_var(e, g.bvars[i].get());
    if (u) used.push_back(i);
  }
  return used;
}

bool for_each_operand_element(const Contraction& g, const Shape& shape,
                              const std::vector<Expr>& idx, const Var& rvar, int64_t extent,
                              const std::function<void(int64_t, int64_t, int64_t, int64_t)>& fn) {
  L::Buffer dense = L::make_buffer("operand", L::MemScope::host, DType::f32, shape);
  auto aff = L::to_affine(linear_index(*dense, idx));
  if (!aff) return false;
  const auto used = used_batch_dims(g, idx);
  int64_t bcount = 1;
  for (size_t i : used) bcount *= g.bext[i];
  const int64_t cr = aff->coeff(rvar.get());
  std::vector<int64_t> ck;
  for (const auto& kv : g.kvars) ck.push_back(aff->coeff(kv.get()));
  const int64_t K = g.K();
  for (int64_t bi = 0; bi < bcount; ++bi) {
    int64_t rem = bi, base = aff->constant;
    for (int i = static_cast<int>(used.size()) - 1; i >= 0; --i) {
      base += aff->coeff(g.bvars[used[i]].get()) * (rem % g.bext[used[i]]);
      rem /= g.bext[used[i]];
    }
    for (int64_t kf = 0; kf < K; ++kf) {
      int64_t rest = kf, koff = 0;
      for (int d = static_cast<int>(g.kext.size()) - 1; d >= 0; --d) {
        koff += ck[d] * (rest % g.kext[d]);
        rest /= g.kext[d];
      }
      for (int64_t r = 0; r < extent; ++r) fn(bi, kf, r, base + koff + cr * r);
    }
  }
  return true;
}

}  // namespace tessel::passes
