// split_loop: strip-mining of one loop (CPU schedule primitive).
// What: for v in [0, E): body  ->  for vo in [0, E / f): for vi in [0, f): body[v := vo*f + vi]
// followed by the tail  for vt in [0, E % f): body[v := (E / f)*f + vt]  when f does not divide E.
// Runs on any loop nest; guarantees every inner loop has the static extent f (or the tail's), so
// the inner loop can be vectorized or unrolled without guards.
#include "compiler/support/error.h"
#include "passes/loop/cpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

L::Stmt split_loop(const L::Stmt& s, const L::VarNode* var, int64_t factor, L::ForKind inner_kind) {
  TESSEL_CHECK(factor > 0, "split_loop by {}", factor);
  return L::rewrite_stmt(s, [&](const L::Stmt& n) -> L::Stmt {
    if (n->kind != L::StmtKind::For || n->var.get() != var) return n;
    const int64_t extent = n->extent;
    const int64_t blocks = extent / factor, tail = extent % factor;
    std::vector<L::Stmt> parts;
    if (blocks > 0) {
      L::Var vo = L::make_var(n->var->name + "o");
      L::Var vi = L::make_var(n->var->name + "i");
      L::Expr at = L::add(L::mul(L::var_ref(vo), L::int_imm(factor)), L::var_ref(vi));
      L::Stmt body = L::substitute_stmt(n->body, {{var, at}});
      L::Stmt inner = L::for_loop(vi, factor, body, inner_kind);
      parts.push_back(blocks == 1 ? L::substitute_stmt(inner, {{vo.get(), L::int_imm(0)}})
                                  : L::for_loop(vo, blocks, inner, n->for_kind));
    }
    if (tail > 0) {
      L::Var vt = L::make_var(n->var->name + "t");
      L::Expr at = L::add(L::int_imm(blocks * factor), L::var_ref(vt));
      L::Stmt body = L::substitute_stmt(n->body, {{var, at}});
      parts.push_back(L::for_loop(vt, tail, body));
    }
    L::Stmt r = parts.size() == 1 ? parts[0] : L::seq(parts);
    r->comment = n->comment;
    return r;
  });
}

}  // namespace tessel::passes
