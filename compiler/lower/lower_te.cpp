// Generic TE -> naive loop-IR lowering (see lower_te.h).
#include "compiler/lower/lower_te.h"

#include <fmt/format.h>

#include <functional>
#include <set>

#include "compiler/support/error.h"

namespace tessel::lower {

namespace L = tessel::loop;
using L::Expr;
using L::ExprKind;

namespace {

/// Rebuilds `e` with `fn` applied bottom-up to every node (fn returns the replacement or null to
/// keep the node with rewritten children).
Expr rewrite_expr(const Expr& e, const std::function<Expr(const Expr&)>& fn) {
  if (!e) return e;
  Expr cur = e;
  if (!e->args.empty()) {
    bool changed = false;
    std::vector<Expr> args;
    args.reserve(e->args.size());
    for (const auto& a : e->args) {
      args.push_back(rewrite_expr(a, fn));
      changed |= args.back() != a;
    }
    if (changed) {
      auto n = std::make_shared<L::ExprNode>(*e);
      n->args = std::move(args);
      cur = n;
    }
  }
  Expr r = fn(cur);
  return r ? r : cur;
}

/// Condition that every index of a read lies inside `shape`.
Expr in_bounds(const std::vector<Expr>& idx, const Shape& shape) {
  Expr cond = L::int_imm(1);
  for (size_t d = 0; d < idx.size(); ++d) {
    cond = L::logical_and(cond, L::le(L::int_imm(0), idx[d]));
    cond = L::logical_and(cond, L::lt(idx[d], L::int_imm(shape[d])));
  }
  return cond;
}

/// Number of TensorRead nodes of each tensor over every compute stage of `out`.
std::map<const te::TensorNode*, int> read_counts(const std::vector<te::Tensor>& order) {
  std::map<const te::TensorNode*, int> counts;
  for (const auto& t : order) {
    if (t->is_placeholder()) continue;
    L::visit_expr(t->body, [&](const L::ExprNode& n) {
      if (n.kind == ExprKind::TensorRead) ++counts[n.tensor.get()];
    });
    for (const auto& x : t->extra_inputs) counts[x.get()] += 0;
  }
  return counts;
}

}  // namespace

Expr reads_to_loads(const Expr& e, const TensorBuffers& buffers) {
  return rewrite_expr(e, [&](const Expr& n) -> Expr {
    if (n->kind != ExprKind::TensorRead) return nullptr;
    auto it = buffers.find(n->tensor.get());
    if (it == buffers.end()) return nullptr;
    return L::load(it->second, n->args, n->padded, n->pad_value);
  });
}

std::map<const te::TensorNode*, bool> inlinable_stages(const te::Tensor& out) {
  const auto order = te::post_order(out);
  const auto counts = read_counts(order);
  std::map<const te::TensorNode*, bool> inl;
  for (const auto& t : order) {
    if (t == out || t->is_placeholder() || t->is_reduce() || !t->tag.empty()) continue;
    // A stage that converts its body's values to another dtype (ONNX Cast on a typed target)
    // keeps its buffer: the loop IR has no conversion node, the store into it converts.
    if (t->dtype != te::value_dtype(t->body).value_or(DType::f32)) continue;
    auto it = counts.find(t.get());
    if (it != counts.end() && it->second == 1) inl[t.get()] = true;
  }
  return inl;
}

Expr inline_stages(const Expr& e, const std::map<const te::TensorNode*, bool>& inlined) {
  return rewrite_expr(e, [&](const Expr& n) -> Expr {
    if (n->kind != ExprKind::TensorRead || !inlined.count(n->tensor.get())) return nullptr;
    const te::TensorNode& t = *n->tensor;
    std::map<const L::VarNode*, Expr> subst;
    for (size_t d = 0; d < t.axes.size(); ++d) subst[t.axes[d].get()] = n->args[d];
    Expr body = inline_stages(L::substitute(t.body, subst), inlined);
    if (!n->padded) return body;
    return L::select(in_bounds(n->args, t.shape), body, L::float_imm(n->pad_value));
  });
}

L::Stmt lower_te(const te::Tensor& out, const TensorBuffers& bound, const LowerTeOptions& options) {
  const auto order = te::post_order(out);
  std::map<const te::TensorNode*, bool> inlined;
  if (options.inline_elementwise) inlined = inlinable_stages(out);
  TensorBuffers buffers = bound;
  std::vector<L::Buffer> temps;
  for (const auto& t : order) {
    if (inlined.count(t.get())) continue;
    if (buffers.count(t.get())) continue;
    TESSEL_CHECK(!t->is_placeholder() && t != out, "lower_te: tensor {} has no buffer", t->name);
    L::Buffer b = L::make_buffer(t->name, options.temp_scope, t->dtype, t->shape);
    buffers[t.get()] = b;
    temps.push_back(b);
  }

  std::vector<L::Stmt> nests;
  for (const auto& t : order) {
    if (t->is_placeholder() || inlined.count(t.get())) continue;
    const L::Buffer& buf = buffers.at(t.get());
    // Output axes: a loop per dim of extent > 1, 0 for the others.
    std::map<const L::VarNode*, Expr> subst;
    std::vector<std::pair<L::Var, int64_t>> loops;
    std::vector<Expr> idx;
    for (size_t d = 0; d < t->axes.size(); ++d) {
      if (t->shape[d] == 1) {
        subst[t->axes[d].get()] = L::int_imm(0);
        idx.push_back(L::int_imm(0));
      } else {
        L::Var v = L::make_var(t->axes[d]->name);
        subst[t->axes[d].get()] = L::var_ref(v);
        idx.push_back(L::var_ref(v));
        loops.emplace_back(v, t->shape[d]);
      }
    }
    L::Stmt body;
    if (t->is_reduce()) {
      const L::ExprNode& red = *t->body;
      std::vector<std::pair<L::Var, int64_t>> rloops;
      for (const auto& ax : red.reduce_axes) {
        if (ax.extent == 1) {
          subst[ax.var.get()] = L::int_imm(0);
        } else {
          L::Var v = L::make_var(ax.var->name);
          subst[ax.var.get()] = L::var_ref(v);
          rloops.emplace_back(v, ax.extent);
        }
      }
      Expr src = reads_to_loads(inline_stages(L::substitute(red.args[0], subst), inlined), buffers);
      Expr acc = L::load(buf, idx);
      Expr combined;
      switch (red.reduce_op) {
        case L::ReduceOp::sum:
          combined = L::add(acc, src);
          break;
        case L::ReduceOp::max:
          combined = L::max(acc, src);
          break;
        case L::ReduceOp::min:
          combined = L::min(acc, src);
          break;
      }
      L::Stmt update = L::store(buf, idx, combined);
      for (auto it = rloops.rbegin(); it != rloops.rend(); ++it)
        update = L::for_loop(it->first, it->second, update);
      body = L::seq({L::store(buf, idx, L::float_imm(L::reduce_identity(red.reduce_op))), update});
    } else {
      Expr v = reads_to_loads(inline_stages(L::substitute(t->body, subst), inlined), buffers);
      body = L::store(buf, idx, v);
    }
    for (auto it = loops.rbegin(); it != loops.rend(); ++it)
      body = L::for_loop(it->first, it->second, body);
    body->comment = t->name;
    nests.push_back(body);
  }
  L::Stmt result = nests.size() == 1 ? nests[0] : L::seq(nests);
  for (auto it = temps.rbegin(); it != temps.rend(); ++it) result = L::allocate(*it, result);
  return result;
}

}  // namespace tessel::lower
