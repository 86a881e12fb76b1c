// Pass: split_cores -- multicore distribution of a kernel's core-bound loop.
//
// What it does: a tiling pass marks at most one loop of a kernel as core-bound
// (ForKind::core_bound): iterations 0..extent-1 are full tiles and, when present, `else_body` is
// one more iteration (the tail tile). For core k of n, the pass keeps iterations [k*T/n, (k+1)*T/n)
// of the T = extent + (tail ? 1 : 0) iterations: the loop variable is rebased onto the core's first
// iteration and the tail is kept only by the core whose range includes it. Runs after
// tensorize_vector, before partition_loops, once per core. Guarantees: no core-bound loop remains;
// the cores' programs together execute every iteration exactly once.
#include <fmt/format.h>

#include "compiler/support/error.h"
#include "passes/loop/npu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

L::Stmt split_cores(const L::Stmt& body, int core, int cores) {
  TESSEL_CHECK(core >= 0 && core < cores, "core {} of {}", core, cores);
  return L::rewrite_stmt(body, [&](const L::Stmt& s) -> L::Stmt {
    if (s->kind != L::StmtKind::For || s->for_kind != L::ForKind::core_bound) return s;
    const int64_t full = s->extent;
    const int64_t total = full + (s->else_body ? 1 : 0);
    const int64_t lo = total * core / cores, hi = total * (core + 1) / cores;
    std::vector<L::Stmt> parts;
    const int64_t n = std::min(hi, full) - lo;
    if (n > 0) {
      L::Var v = L::make_var(s->var->name);
      L::Stmt b =
          L::substitute_stmt(s->body, {{s->var.get(), L::add(L::var_ref(v), L::int_imm(lo))}});
      parts.push_back(L::for_loop(v, n, b));
    }
    if (s->else_body && hi > full && lo <= full) parts.push_back(s->else_body);
    L::Stmt r = L::seq(parts);
    if (!s->comment.empty()) {
      r = L::seq({r});
      r->comment = s->comment;
    }
    return r;
  });
}

}  // namespace tessel::passes
