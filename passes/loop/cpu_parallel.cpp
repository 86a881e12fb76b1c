// cpu_parallel: parallel outer loops on the runtime's thread pool.
// What: in every top-level nest of a kernel (children of its Seq, under Allocates), the outermost
// serial loop becomes ForKind::parallel when (1) the nest does at least `min_work` innermost
// iterations (so the pool's wake-up, a few microseconds, is amortised), (2) the loop has at least
// two iterations and (3) it is an output loop: every store under it indexes with its variable,
// so iterations write disjoint elements (a reduction loop is never parallelised). Runs after
// cpu_vectorize / cpu_unroll; guarantees parallel loops never nest and with target.threads == 1
// nothing is marked.
#include "passes/loop/cpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

namespace {

bool output_loop(const L::Stmt& loop) {
  bool all = true;
  L::visit_stmt(loop->body, [&](const L::Stmt& n) {
    if (n->kind != L::StmtKind::Store) return;
    bool any = false;
    for (const auto& i : n->indices) any |= uses_var(i, loop->var.get());
    all &= any;
  });
  return all;
}

L::Stmt mark(const L::Stmt& n, const CpuTarget& target, int64_t min_work) {
  if (!n) return n;
  switch (n->kind) {
    case L::StmtKind::Seq: {
      auto c = std::make_shared<L::StmtNode>(*n);
      for (auto& x : c->seq) x = mark(x, target, min_work);
      return c;
    }
    case L::StmtKind::Allocate: {
      auto c = std::make_shared<L::StmtNode>(*n);
      c->body = mark(n->body, target, min_work);
      return c;
    }
    case L::StmtKind::For: {
      if (n->for_kind != L::ForKind::serial || n->extent < 2 || nest_work(n) < min_work ||
          !output_loop(n))
        return n;
      auto c = std::make_shared<L::StmtNode>(*n);
      c->for_kind = L::ForKind::parallel;
      return c;
    }
    default:
      return n;
  }
}

}  // namespace

L::Stmt cpu_parallel(const L::Stmt& s, const CpuTarget& target, int64_t min_work) {
  if (target.threads <= 1) return s;
  return mark(s, target, min_work);
}

}  // namespace tessel::passes
