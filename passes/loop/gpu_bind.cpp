// gpu_bind: the stage nests of a generic kernel bound to the blocks and threads of a GPU grid.
//
// What it does: for every stage nest of a lower_te result (the statements of its Seq / Allocate
// tree that are neither), the perfect prefix of output loops -- lower_te gives every stage
// `for o0 .. for ok: body` whose iterations write disjoint output elements, the reduction (if
// any) inside `body` -- is fused into one index f in [0, P) and bound to
//   for b in 0..B [blockIdx.x]: for t in 0..T [threadIdx.x]: f = b * T + t; if (f < P) body
// with every output variable recovered from f (row-major, the innermost fastest: consecutive
// threads write consecutive elements). When the innermost output loop's stores have unit stride
// and its extent is a multiple of `vector`, a thread takes `vector` consecutive outputs as a
// vectorized loop (reductions sunk inside it, cpu_reorder.cpp), so its global loads and stores
// are 16 bytes where aligned. A nest without output loops (a reduction to one element) runs on
// one thread.
//
// Runs on lower_te output (before it: nothing). Guarantees every nest is one gpu_block loop
// around one gpu_thread loop, with no barrier (threads never wait for each other); the
// allocations around the nests are left in place (the backend gives them global memory).
#include <fmt/format.h>

#include "compiler/support/error.h"
#include "passes/loop/gpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

namespace {

/// True when `s` is a store, or {init store; for r..: update store} (a reduction sink_output_loops
/// can move a lane loop into), and every store has unit stride in `v`.
bool unit_stride_stores(const L::Stmt& s, const L::VarNode* v) {
  if (s->kind == L::StmtKind::Seq) {
    if (s->seq.size() != 2 || s->seq[0]->kind != L::StmtKind::Store) return false;
    L::Stmt r = s->seq[1];
    while (r->kind == L::StmtKind::For && r->for_kind == L::ForKind::serial) r = r->body;
    if (r->kind != L::StmtKind::Store) return false;
  } else if (s->kind != L::StmtKind::Store) {
    return false;
  }
  bool ok = true, any = false;
  L::visit_stmt(s, [&](const L::Stmt& n) {
    if (n->kind != L::StmtKind::Store) return;
    any = true;
    auto c = var_coefficient(linear_index(*n->buffer, n->indices), v);
    if (!c || *c != 1) ok = false;
  });
  return ok && any;
}

L::Stmt bind_nest(const L::Stmt& nest, const GpuTarget& target, const GpuGenericKnobs& knobs) {
  std::vector<L::Stmt> loops;
  L::Stmt body = nest;
  while (body->kind == L::StmtKind::For && body->for_kind == L::ForKind::serial) {
    loops.push_back(body);
    body = body->body;
  }
  std::vector<int64_t> ext;
  for (const auto& l : loops) ext.push_back(l->extent);
  int64_t vector = 1;
  if (!loops.empty() && knobs.vector > 1 && ext.back() % knobs.vector == 0 &&
      unit_stride_stores(body, loops.back()->var.get()))
    vector = knobs.vector;
  if (vector > 1) ext.back() /= vector;
  int64_t units = 1;
  for (int64_t e : ext) units *= e;
  const int64_t warp = target.warp_size;
  const int64_t threads =
      std::min<int64_t>(knobs.threads, std::max<int64_t>(warp, (units + warp - 1) / warp * warp));
  const int64_t blocks = (units + threads - 1) / threads;
  TESSEL_CHECK(blocks < (int64_t{1} << 31), "gpu_bind: {} blocks exceed the grid limit", blocks);
  L::Var b = L::make_var("bx"), t = L::make_var("tx");
  L::Expr f = blocks == 1 ? L::var_ref(t)
                          : L::add(L::mul(L::var_ref(b), L::int_imm(threads)), L::var_ref(t));
  std::map<const L::VarNode*, L::Expr> subst;
  int64_t stride = 1;
  L::Var lane = L::make_var("vl");
  for (int d = static_cast<int>(loops.size()) - 1; d >= 0; --d) {
    L::Expr q = stride == 1 ? f : L::floordiv(f, stride);
    L::Expr v = d == 0 ? q : L::floormod(q, ext[d]);
    if (d == static_cast<int>(loops.size()) - 1 && vector > 1)
      v = L::add(L::mul(v, L::int_imm(vector)), L::var_ref(lane));
    subst[loops[d]->var.get()] = v;
    stride *= ext[d];
  }
  L::Stmt inner = L::substitute_stmt(body, subst);
  if (vector > 1) {
    inner = L::for_loop(lane, vector, inner, L::ForKind::vectorized);
    inner = sink_output_loops(inner, L::ForKind::vectorized);
  }
  if (blocks * threads != units) inner = L::if_then(L::lt(f, L::int_imm(units)), inner);
  L::Stmt k = L::for_loop(b, blocks, L::for_loop(t, threads, inner, L::ForKind::gpu_thread),
                          L::ForKind::gpu_block);
  k->comment =
      fmt::format("{}: {} outputs{} on {} blocks x {} threads", nest->comment, units * vector,
                  vector > 1 ? fmt::format(" ({} per thread)", vector) : "", blocks, threads);
  return k;
}

L::Stmt bind_all(const L::Stmt& s, const GpuTarget& target, const GpuGenericKnobs& knobs) {
  if (!s) return s;
  if (s->kind == L::StmtKind::Allocate) {
    auto n = std::make_shared<L::StmtNode>(*s);
    n->body = bind_all(s->body, target, knobs);
    return n;
  }
  if (s->kind == L::StmtKind::Seq && s->comment.empty()) {
    std::vector<L::Stmt> parts;
    for (const auto& x : s->seq) parts.push_back(bind_all(x, target, knobs));
    return L::seq(parts);
  }
  return bind_nest(s, target, knobs);
}

}  // namespace

L::Stmt gpu_bind(const L::Stmt& s, const GpuTarget& target, const GpuGenericKnobs& knobs) {
  return bind_all(s, target, knobs);
}

}  // namespace tessel::passes
