// Pass: partition_loops -- loop partitioning for static DMA padding.
//
// What it does: for every loop, finds the iterations in which some GM->scratchpad copy inside it
// reads outside its source tensor (a convolution or pooling window at the border). If there are
// such iterations, the loop is split into peeled iterations (loop variable substituted by a
// constant) and a loop over the iterations where every copy is in bounds (after TVM's
// LoopPartition). Runs after tiling, before code generation. Guarantees: in every copy whose
// source may go out of bounds, the source start of each dimension that may do so is a constant.
#include <fmt/format.h>

#include <functional>

#include "compiler/support/error.h"
#include "compiler/support/int_math.h"
#include "passes/loop/npu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

namespace {

constexpr int64_t kMaxPeeled = 64;

using Bounds = std::map<const L::VarNode*, L::Interval>;

struct CopyRef {
  const L::StmtNode* copy;
  Bounds inner;  // bounds of loop variables between the partitioned loop and the copy
};

void collect_copies(const L::Stmt& s, Bounds inner, std::vector<CopyRef>* out) {
  if (!s) return;
  if (s->kind == L::StmtKind::Copy) {
    if (s->src.buffer->scope == L::MemScope::gm) out->push_back({s.get(), inner});
    return;
  }
  if (s->kind == L::StmtKind::For) inner[s->var.get()] = {0, s->extent - 1};
  for (const auto& x : s->seq) collect_copies(x, inner, out);
  collect_copies(s->body, inner, out);
  collect_copies(s->else_body, inner, out);
}

/// Range [lo, hi] of `v` in which every copy under the loop stays inside its source.
L::Interval valid_range(const L::StmtNode& loop, const Bounds& outer) {
  std::vector<CopyRef> copies;
  collect_copies(loop.body, {}, &copies);
  L::Interval r{0, loop.extent - 1};
  for (const auto& c : copies) {
    Bounds b = outer;
    b.insert(c.inner.begin(), c.inner.end());
    const L::Region& src = c.copy->src;
    for (size_t d = 0; d < src.starts.size(); ++d) {
      auto a = L::to_affine(src.starts[d]);
      if (!a) continue;
      const int64_t k = a->coeff(loop.var.get());
      if (k == 0) continue;
      L::Affine rest = *a;
      rest.coeffs.erase(loop.var.get());
      int64_t rlo = rest.constant, rhi = rest.constant;
      bool bounded = true;
      for (auto [v, cf] : rest.coeffs) {
        auto it = b.find(v);
        if (it == b.end()) {
          bounded = false;
          break;
        }
        rlo += cf > 0 ? cf * it->second.lo : cf * it->second.hi;
        rhi += cf > 0 ? cf * it->second.hi : cf * it->second.lo;
      }
      if (!bounded) continue;
      const int64_t dim = src.buffer->shape[d], ext = src.extents[d];
      // need: rlo + k v >= 0  and  rhi + k v + ext <= dim
      if (k > 0) {
        r.lo = std::max(r.lo, ceil_div(-rlo, k));
        r.hi = std::min(r.hi, floor_div(dim - ext - rhi, k));
      } else {
        r.lo = std::max(r.lo, ceil_div(dim - ext - rhi, k));
        r.hi = std::min(r.hi, floor_div(-rlo, k));
      }
    }
  }
  return r;
}

L::Stmt partition(const L::Stmt& s, Bounds bounds) {
  if (!s) return s;
  if (s->kind == L::StmtKind::For) {
    const L::Interval ok = valid_range(*s, bounds);
    const int64_t e = s->extent;
    if (ok.lo <= 0 && ok.hi >= e - 1) {
      auto c = std::make_shared<L::StmtNode>(*s);
      bounds[s->var.get()] = {0, e - 1};
      c->body = partition(s->body, bounds);
      return c;
    }
    const int64_t lo = std::clamp<int64_t>(ok.lo, 0, e);
    const int64_t hi = std::clamp<int64_t>(ok.hi, lo - 1, e - 1);
    const int64_t peeled = lo + (e - 1 - hi);
    if (peeled > kMaxPeeled) {
      // Too many boundary iterations to peel: keep the loop; code generation reports the copy.
      auto c = std::make_shared<L::StmtNode>(*s);
      bounds[s->var.get()] = {0, e - 1};
      c->body = partition(s->body, bounds);
      return c;
    }
    std::vector<L::Stmt> parts;
    auto peel = [&](int64_t i) {
      parts.push_back(
          partition(L::substitute_stmt(s->body, {{s->var.get(), L::int_imm(i)}}), bounds));
    };
    for (int64_t i = 0; i < lo; ++i) peel(i);
    if (hi >= lo) {
      const int64_t n = hi - lo + 1;
      if (n == 1) {
        peel(lo);
      } else {
        L::Var v = L::make_var(s->var->name);
        L::Stmt body = lo == 0
                           ? s->body
                           : L::substitute_stmt(
                                 s->body, {{s->var.get(), L::add(L::var_ref(v), L::int_imm(lo))}});
        if (lo == 0) v = s->var;
        Bounds inner = bounds;
        inner[v.get()] = {0, n - 1};
        parts.push_back(L::for_loop(v, n, partition(body, inner), s->for_kind));
      }
    }
    for (int64_t i = hi + 1; i < e; ++i) peel(i);
    auto r = L::seq(parts);
    if (!s->comment.empty()) {
      auto wrapped = L::seq({r});
      wrapped->comment = s->comment;
      return wrapped;
    }
    return r;
  }
  auto c = std::make_shared<L::StmtNode>(*s);
  for (auto& x : c->seq) x = partition(x, bounds);
  c->body = partition(c->body, bounds);
  c->else_body = partition(c->else_body, bounds);
  return c;
}

}  // namespace

L::Stmt partition_loops(const L::Stmt& body) { return partition(body, {}); }

}  // namespace tessel::passes
