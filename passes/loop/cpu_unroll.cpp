// cpu_unroll: full unrolling of short reduction loops around vector code.
// What: a serial loop of at most `max_extent` iterations that (1) contains a vectorized loop,
// (2) is a reduction loop (its variable indexes no store: iterations accumulate into the same
// elements) and (3) together with the loops already unrolled inside it makes at most
// kMaxUnrolledCopies copies of the body becomes ForKind::unrolled (the code generator emits its
// body once per iteration with the variable a constant). Typical: the kh x kw window loops of
// pooling and depthwise convolution around the lane loop, so the accumulator stays in a register
// and every tap's address is a constant offset. Output loops are left for cpu_parallel and the
// hardware's loop handling. Runs after cpu_vectorize; guarantees unrolled loops have static
// extents <= max_extent and no nest of them makes more than kMaxUnrolledCopies copies.
#include "passes/loop/cpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

namespace {

constexpr int64_t kMaxUnrolledCopies = 64;

bool has_vector_loop(const L::Stmt& s) {
  bool found = false;
  L::visit_stmt(s, [&](const L::Stmt& n) {
    if (n->kind == L::StmtKind::For && n->for_kind == L::ForKind::vectorized) found = true;
  });
  return found;
}

bool indexes_a_store(const L::Stmt& s, const L::VarNode* v) {
  bool found = false;
  L::visit_stmt(s, [&](const L::Stmt& n) {
    if (n->kind != L::StmtKind::Store) return;
    for (const auto& i : n->indices) found |= uses_var(i, v);
  });
  return found;
}

/// Largest product of unrolled extents along any path inside `s`.
int64_t unrolled_copies(const L::Stmt& s) {
  if (!s) return 1;
  int64_t inner = 1;
  for (const auto& c : s->seq) inner = std::max(inner, unrolled_copies(c));
  inner = std::max(inner, unrolled_copies(s->body));
  inner = std::max(inner, unrolled_copies(s->else_body));
  if (s->kind == L::StmtKind::For && s->for_kind == L::ForKind::unrolled) inner *= s->extent;
  return inner;
}

}  // namespace

L::Stmt cpu_unroll(const L::Stmt& s, int64_t max_extent) {
  return L::rewrite_stmt(s, [&](const L::Stmt& n) -> L::Stmt {
    if (n->kind != L::StmtKind::For || n->for_kind != L::ForKind::serial || n->extent > max_extent)
      return n;
    if (!has_vector_loop(n->body) || indexes_a_store(n->body, n->var.get())) return n;
    if (n->extent * unrolled_copies(n->body) > kMaxUnrolledCopies) return n;
    n->for_kind = L::ForKind::unrolled;
    return n;
  });
}

}  // namespace tessel::passes
