// sink_output_loops: loop reorder for reductions (CPU schedule primitive).
// What: for x: { init(x); for r0: .. for rk: update(x, r) }
//   ->  { for x: init(x); for r0: .. for rk: for x: update(x, r) }
// where x is an output loop (every store inside indexes with x) and init/update are stores. Legal
// because iterations of x write disjoint outputs and each update only reads its own output.
// Run after split_loop (x is then the vector lane loop); guarantees x is innermost around every
// store of the nest, so the lane loop carries no dependence.
#include "passes/loop/cpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

namespace {

/// True when every store in `s` indexes with `v`.
bool stores_index_with(const L::Stmt& s, const L::VarNode* v) {
  bool all = true;
  L::visit_stmt(s, [&](const L::Stmt& n) {
    if (n->kind != L::StmtKind::Store) return;
    bool any = false;
    for (const auto& i : n->indices) any |= uses_var(i, v);
    all &= any;
  });
  return all;
}

/// The loop nest `for r0..rk: store` with the store wrapped in `for x` (fresh copy).
L::Stmt sink_into(const L::Stmt& nest, const L::Stmt& x_loop) {
  if (nest->kind == L::StmtKind::Store) {
    return L::for_loop(x_loop->var, x_loop->extent, nest, x_loop->for_kind);
  }
  if (nest->kind == L::StmtKind::For && nest->body) {
    return L::for_loop(nest->var, nest->extent, sink_into(nest->body, x_loop), nest->for_kind);
  }
  return nullptr;
}

}  // namespace

L::Stmt sink_output_loops(const L::Stmt& s, L::ForKind kind) {
  return L::rewrite_stmt(s, [&](const L::Stmt& n) -> L::Stmt {
    if (n->kind != L::StmtKind::For || n->for_kind != kind || !n->body ||
        n->body->kind != L::StmtKind::Seq)
      return n;
    const auto& parts = n->body->seq;
    if (parts.size() != 2 || parts[0]->kind != L::StmtKind::Store ||
        parts[1]->kind != L::StmtKind::For)
      return n;
    if (!stores_index_with(n->body, n->var.get())) return n;
    L::Stmt sunk = sink_into(parts[1], n);
    if (!sunk) return n;
    L::Stmt init = L::for_loop(n->var, n->extent, parts[0], n->for_kind);
    L::Stmt r = L::seq({init, sunk});
    r->comment = n->comment;
    return r;
  });
}

}  // namespace tessel::passes
