// gpu_double_buffer: two shared-memory stages for the tiles of a K-chunk loop, the next chunk's
// tiles fetched (with cp.async on sm_80+) while this chunk is computed.
//
// What it does, on the loop `for kt in 0..KT: { copies; barrier; compute; barrier }` (gpu_gemm's
// K-chunk loop; the copies are the statements before the first barrier and write shared
// allocations S_i directly, not through views):
//
//   S_i -> S_i' = [2] + shape(S_i)                 stage s of S_i' is S_i'[s, ...]
//   copies(kt = 0, stage 0); commit
//   for kt: { if (kt + 1 < KT) copies(kt + 1, stage (kt + 1) % 2); commit; wait_group 1;
//             barrier; compute(stage kt % 2); barrier }
//
// The first barrier of iteration kt makes tile kt visible to every thread; the last one keeps a
// thread from overwriting stage kt % 2 (in iteration kt + 1) while another still computes on it.
// With `cp_async`, a copy store whose value is a load of a global buffer of the destination's
// dtype (optionally padded, or under a select with a constant) becomes cp.async: a whole
// vectorized row of 4, 8 or 16 bytes when both addresses are provably aligned and the row is in
// bounds at both ends, else one 4-byte (2-byte elements: 4 bytes is not allowed, so a plain
// copy) cp.async per element; padded elements are stored as the pad value directly. One group is
// committed per tile; wait_group 1 leaves only the newest (the prefetch) pending. Copies of
// other values stay plain loads and stores (still double buffered, without the asynchrony).
//
// Runs after gpu_gemm, before codegen. Guarantees no thread reads a stage before the
// cp.async.wait_group and barrier that complete its copies.
#include <fmt/format.h>

#include "compiler/support/error.h"
#include "passes/loop/gpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;
using L::Expr;

namespace {

/// `e` with every load of a buffer in `staged` redirected to stage `stage` of its new buffer.
Expr stage_expr(const Expr& e, const std::map<const L::BufferNode*, L::Buffer>& staged,
                const Expr& stage) {
  if (!e) return e;
  bool changed = false;
  std::vector<Expr> args;
  for (const auto& a : e->args) {
    args.push_back(stage_expr(a, staged, stage));
    changed |= args.back() != a;
  }
  auto it = e->kind == L::ExprKind::Load ? staged.find(e->buffer.get()) : staged.end();
  if (!changed && it == staged.end()) return e;
  auto n = std::make_shared<L::ExprNode>(*e);
  n->args = std::move(args);
  if (it != staged.end()) {
    n->buffer = it->second;
    n->args.insert(n->args.begin(), stage);
  }
  return n;
}

L::Stmt stage_stmt(const L::Stmt& s, const std::map<const L::BufferNode*, L::Buffer>& staged,
                   const Expr& stage) {
  return L::rewrite_stmt(s, [&](const L::Stmt& n) -> L::Stmt {
    for (auto& i : n->indices) i = stage_expr(i, staged, stage);
    if (n->value) n->value = stage_expr(n->value, staged, stage);
    if (n->cond) n->cond = stage_expr(n->cond, staged, stage);
    if (n->kind == L::StmtKind::Store) {
      auto it = staged.find(n->buffer.get());
      if (it != staged.end()) {
        n->buffer = it->second;
        n->indices.insert(n->indices.begin(), stage);
      }
    }
    for (auto& o : n->operands) {
      auto it = o.buffer ? staged.find(o.buffer.get()) : staged.end();
      TESSEL_CHECK(it == staged.end(), "gpu_double_buffer: {} used as an intrinsic operand",
                   o.buffer->name);
    }
    return n;
  });
}

/// The load a copy value reads (a load, or select(cond, load, constant)) and the condition.
struct CopySource {
  const L::ExprNode* load = nullptr;
  Expr cond;  // null: always
  double other = 0;
};

std::optional<CopySource> copy_source(const Expr& v) {
  CopySource c;
  if (v->kind == L::ExprKind::Load) {
    c.load = v.get();
    c.other = v->pad_value;
    return c;
  }
  if (v->kind == L::ExprKind::Select && v->args[1]->kind == L::ExprKind::Load &&
      v->args[2]->kind == L::ExprKind::Float) {
    c.load = v->args[1].get();
    c.cond = v->args[0];
    c.other = v->args[2]->float_value;
    if (c.load->padded && c.load->pad_value != c.other) return std::nullopt;
    return c;
  }
  return std::nullopt;
}

/// In-bounds condition of the padded load `ld` (each index inside its buffer's shape).
Expr in_bounds(const L::ExprNode& ld) {
  Expr cond = L::int_imm(1);
  for (size_t d = 0; d < ld.args.size(); ++d) {
    cond = L::logical_and(cond, L::le(L::int_imm(0), ld.args[d]));
    cond = L::logical_and(cond, L::lt(ld.args[d], L::int_imm(ld.buffer->shape[d])));
  }
  return cond;
}

/// cp.async of element(s) `dst[idx]` <- the source load, `bytes` bytes.
L::Stmt cp_async(const L::Buffer& dst, const std::vector<Expr>& idx, const L::ExprNode& ld,
                 int64_t bytes) {
  return L::gpu_intrin(
      L::GpuOp::cp_async,
      {{dst, linear_index(*dst, idx)}, {ld.buffer, linear_index(*ld.buffer, ld.args)}}, bytes);
}

/// True when `e` (an element offset) is a multiple of `n` for every value of its variables.
bool aligned(const Expr& e, int64_t n) {
  const int64_t d = index_divisor(simplify_index(e));
  return d == 0 || d % n == 0;
}

/// The copy of one element (or vectorized row) as cp.async where the source allows.
L::Stmt async_store(const L::Stmt& store, const L::Stmt& vec_loop) {
  auto src = copy_source(store->value);
  const L::Buffer& dst = store->buffer;
  if (!src || src->load->buffer->dtype != dst->dtype ||
      src->load->buffer->scope != L::MemScope::host)
    return nullptr;
  const int64_t esize = dtype_size(dst->dtype);
  const L::ExprNode& ld = *src->load;
  Expr cond = src->cond;
  if (ld.padded) cond = cond ? L::logical_and(cond, in_bounds(ld)) : in_bounds(ld);
  auto guarded = [&](L::Stmt cp, const std::vector<Expr>& idx) -> L::Stmt {
    if (!cond) return cp;
    return L::if_then(cond, cp, L::store(dst, idx, L::float_imm(src->other)));
  };
  if (!vec_loop) {
    if (esize < 4) return nullptr;
    return guarded(cp_async(dst, store->indices, ld, esize), store->indices);
  }
  // A vectorized row: lanes l = 0..V-1.
  const L::VarNode* l = vec_loop->var.get();
  const int64_t lanes = vec_loop->extent;
  const int64_t bytes = lanes * esize;
  Expr dlin = linear_index(*dst, store->indices);
  Expr slin = linear_index(*ld.buffer, ld.args);
  auto dc = var_coefficient(dlin, l), sc = var_coefficient(slin, l);
  auto at = [&](const Expr& e, int64_t lane) { return L::substitute(e, {{l, L::int_imm(lane)}}); };
  if (dc && sc && *dc == 1 && *sc == 1 && (bytes == 4 || bytes == 8 || bytes == 16) &&
      aligned(at(dlin, 0), lanes) && aligned(at(slin, 0), lanes)) {
    std::vector<Expr> idx0;
    for (const auto& i : store->indices) idx0.push_back(at(i, 0));
    L::ExprNode ld0 = ld;
    for (auto& a : ld0.args) a = at(a, 0);
    L::Stmt cp = cp_async(dst, idx0, ld0, bytes);
    if (!cond) return cp;
    // Whole row in bounds (the indices are affine in the lane: both ends suffice) -> one
    // cp.async; else element by element.
    Expr whole = L::logical_and(at(cond, 0), at(cond, lanes - 1));
    L::Stmt per_lane =
        esize >= 4 ? L::for_loop(vec_loop->var, lanes,
                                 guarded(cp_async(dst, store->indices, ld, esize), store->indices),
                                 L::ForKind::unrolled)
                   : vec_loop;
    return L::if_then(whole, cp, per_lane);
  }
  if (esize < 4) return nullptr;
  return L::for_loop(vec_loop->var, lanes,
                     guarded(cp_async(dst, store->indices, ld, esize), store->indices),
                     L::ForKind::unrolled);
}

/// The copies with every eligible store turned into cp.async (top-down: a vectorized row is
/// converted as a whole).
L::Stmt to_async(const L::Stmt& s) {
  if (!s) return s;
  if (s->kind == L::StmtKind::For && s->for_kind == L::ForKind::vectorized &&
      s->body->kind == L::StmtKind::Store) {
    L::Stmt r = async_store(s->body, s);
    return r ? r : s;
  }
  if (s->kind == L::StmtKind::Store && s->buffer->scope == L::MemScope::shared) {
    L::Stmt r = async_store(s, nullptr);
    return r ? r : s;
  }
  auto n = std::make_shared<L::StmtNode>(*s);
  for (auto& x : n->seq) x = to_async(x);
  n->body = to_async(n->body);
  n->else_body = to_async(n->else_body);
  return n;
}

bool is_barrier(const L::Stmt& s) {
  return s->kind == L::StmtKind::Gpu && s->gpu_op == L::GpuOp::barrier;
}

}  // namespace

L::Stmt gpu_double_buffer(const L::Stmt& s, const L::VarNode* kt, bool cp_async) {
  L::Stmt loop;
  L::visit_stmt(s, [&](const L::Stmt& n) {
    if (n->kind == L::StmtKind::For && n->var.get() == kt) loop = n;
  });
  TESSEL_CHECK(loop && loop->body && loop->body->kind == L::StmtKind::Seq,
               "gpu_double_buffer: no tile loop {{copies; barrier; compute; barrier}}");
  const auto& parts = loop->body->seq;
  size_t first_barrier = 0;
  while (first_barrier < parts.size() && !is_barrier(parts[first_barrier])) ++first_barrier;
  TESSEL_CHECK(first_barrier > 0 && first_barrier < parts.size() && is_barrier(parts.back()),
               "gpu_double_buffer: the tile loop is not {{copies; barrier; compute; barrier}}");
  std::vector<L::Stmt> copies(parts.begin(), parts.begin() + static_cast<long>(first_barrier));
  std::vector<L::Stmt> rest(parts.begin() + static_cast<long>(first_barrier), parts.end());
  // The staged allocations: every shared buffer the copies store to.
  std::map<const L::BufferNode*, L::Buffer> staged;
  for (const auto& c : copies)
    L::visit_stmt(c, [&](const L::Stmt& n) {
      if (n->kind != L::StmtKind::Store || n->buffer->scope != L::MemScope::shared) return;
      TESSEL_CHECK(!n->buffer->base, "gpu_double_buffer: copy into a view {}", n->buffer->name);
      if (staged.count(n->buffer.get())) return;
      Shape shape = n->buffer->shape;
      shape.insert(shape.begin(), 2);
      staged[n->buffer.get()] =
          L::make_buffer(n->buffer->name, L::MemScope::shared, n->buffer->dtype, shape);
    });
  const int64_t tiles = loop->extent;
  Expr ktv = L::var_ref(loop->var);
  auto copies_for = [&](const Expr& tile, const Expr& stage) {
    L::Stmt c = L::substitute_stmt(L::seq(copies), {{kt, tile}});
    c = stage_stmt(c, staged, stage);
    return cp_async ? to_async(c) : c;
  };
  std::vector<L::Stmt> body;
  L::Stmt prefetch =
      copies_for(L::add(ktv, L::int_imm(1)), L::floormod(L::add(ktv, L::int_imm(1)), 2));
  body.push_back(L::if_then(L::lt(ktv, L::int_imm(tiles - 1)), prefetch));
  if (cp_async) {
    body.push_back(L::gpu_intrin(L::GpuOp::cp_async_commit));
    body.push_back(L::gpu_intrin(L::GpuOp::cp_async_wait, {}, 1));
  }
  for (const auto& r : rest) body.push_back(stage_stmt(r, staged, L::floormod(ktv, 2)));
  L::Stmt new_loop = L::for_loop(loop->var, tiles, L::seq(body), loop->for_kind);
  new_loop->comment = loop->comment + " (double buffered" + (cp_async ? ", cp.async)" : ")");
  std::vector<L::Stmt> pro = {copies_for(L::int_imm(0), L::int_imm(0))};
  if (cp_async) pro.push_back(L::gpu_intrin(L::GpuOp::cp_async_commit));
  pro.push_back(new_loop);
  L::Stmt replacement = L::seq(pro);
  return L::rewrite_stmt(s, [&](const L::Stmt& n) -> L::Stmt {
    if (n->kind == L::StmtKind::For && n->var.get() == kt) return replacement;
    if (n->kind == L::StmtKind::Allocate) {
      auto it = staged.find(n->buffer.get());
      if (it != staged.end()) n->buffer = it->second;
    }
    return n;
  });
}

}  // namespace tessel::passes
