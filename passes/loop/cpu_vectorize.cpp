// cpu_vectorize: vectorization of the innermost output loop of every stage nest.
// What: a nest  for .. for x: store(buf, idx, value)  (element stage) or
// for .. for x: { init; for r..: update }  (reduction) whose stores have unit stride in x and whose
// loads have a constant stride in x (contiguous, broadcast or a short gather) is split by the
// vector width W (split_loop), reductions sunk inside the lane loop (sink_output_loops), and the
// lane loop of W iterations marked ForKind::vectorized; the E % W tail stays scalar.
// Runs on lower_te's naive nests (before cpu_unroll / cpu_parallel). Guarantees every vectorized
// loop has W iterations, starts at 0, and has only stores of unit stride in its variable.
#include <cstdlib>
#include <functional>

#include "passes/loop/cpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

namespace {

/// Largest |stride| of a load that the vector code may gather instead of loading contiguously.
constexpr int64_t kMaxGatherStride = 4;

/// True when every store under `s` has unit stride in `v` and every load a constant stride of
/// at most kMaxGatherStride (0 = broadcast).
bool vectorizable(const L::Stmt& s, const L::VarNode* v) {
  bool ok = true;
  int stores = 0;
  L::visit_stmt(s, [&](const L::Stmt& n) {
    if (!ok) return;
    if (n->kind == L::StmtKind::If || n->kind == L::StmtKind::Allocate) ok = false;
    if (n->kind != L::StmtKind::Store) return;
    ++stores;
    auto c = var_coefficient(linear_index(*n->buffer, n->indices), v);
    if (!c || *c != 1) ok = false;
    L::visit_expr(n->value, [&](const L::ExprNode& e) {
      if (e.kind != L::ExprKind::Load) return;
      auto lc = var_coefficient(linear_index(*e.buffer, e.args), v);
      if (!lc || std::abs(*lc) > kMaxGatherStride) ok = false;
    });
  });
  return ok && stores > 0;
}

/// The innermost output loop of a stage nest rooted at `n` (a perfect chain of loops ending in a
/// store, or in {init store; reduction loops}), or null.
L::Stmt innermost_output_loop(const L::Stmt& n) {
  L::Stmt cur = n;
  while (cur->kind == L::StmtKind::For && cur->for_kind == L::ForKind::serial && cur->body) {
    const L::Stmt& b = cur->body;
    if (b->kind == L::StmtKind::Store) return cur;
    if (b->kind == L::StmtKind::Seq && b->seq.size() == 2 &&
        b->seq[0]->kind == L::StmtKind::Store && b->seq[1]->kind == L::StmtKind::For)
      return cur;
    if (b->kind != L::StmtKind::For) return nullptr;
    cur = b;
  }
  return nullptr;
}

}  // namespace

L::Stmt cpu_vectorize(const L::Stmt& s, const CpuTarget& target) {
  const int64_t w = target.vector_lanes;
  // Collect the lane loops first (rewriting while walking would revisit the split loops).
  std::vector<const L::VarNode*> lanes;
  std::function<void(const L::Stmt&)> walk = [&](const L::Stmt& n) {
    if (!n) return;
    if (n->kind == L::StmtKind::For) {
      L::Stmt x = innermost_output_loop(n);
      if (x) {
        if (x->extent >= w && vectorizable(x->body, x->var.get())) lanes.push_back(x->var.get());
        return;
      }
    }
    for (const auto& c : n->seq) walk(c);
    walk(n->body);
    walk(n->else_body);
  };
  walk(s);
  L::Stmt r = s;
  for (const L::VarNode* v : lanes) r = split_loop(r, v, w, L::ForKind::vectorized);
  return sink_output_loops(r, L::ForKind::vectorized);
}

}  // namespace tessel::passes
