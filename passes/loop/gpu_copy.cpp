// gpu_copy: a tile copied into shared memory by all the threads of a block.
//
// What it does: turns "every element of this tile gets this value" into the loop one thread
// runs: the tile's elements (in units of `vector` consecutive innermost elements) are numbered
// row-major, and thread t takes units t, t + T, t + 2T, ... (T threads), so the 32 threads of a
// warp touch 32 consecutive units -- coalesced global reads when the source is contiguous along
// the innermost dim. A unit of vector > 1 elements is a vectorized loop (16-byte accesses in
// codegen when the alignment is proven). The loop over a thread's units is unrolled up to 8
// iterations; a last partial round is guarded.
//
// The loop::copy form takes the statement the NPU's tiling passes emit for GM -> L1/UB (a
// rectangular source region padded with pad_value where it leaves the source, into a region of
// the destination) and copies it the same way.
//
// Runs inside a gpu_thread loop (variable `tid`); what runs before it must not read the tile
// (the caller puts a barrier after it). Guarantees every destination element is written once.
#include <fmt/format.h>

#include "compiler/support/error.h"
#include "passes/loop/gpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

L::Stmt cooperative_copy(const L::Var& tid, int64_t threads, const std::vector<int64_t>& extents,
                         int64_t vector, const L::Buffer& dst,
                         const std::function<L::Expr(const std::vector<L::Expr>&)>& value) {
  TESSEL_CHECK(!extents.empty() && threads > 0 && vector >= 1, "cooperative_copy of {}", dst->name);
  TESSEL_CHECK(extents.back() % vector == 0, "cooperative_copy of {}: vector {} does not divide {}",
               dst->name, vector, extents.back());
  std::vector<int64_t> units = extents;
  units.back() /= vector;
  int64_t total = 1;
  for (int64_t e : units) total *= e;
  const int64_t rounds = (total + threads - 1) / threads;
  L::Var j = L::make_var("cj");
  L::Var lane = L::make_var("cl");
  L::Expr u = rounds == 1 ? L::var_ref(tid)
                          : L::add(L::var_ref(tid), L::mul(L::var_ref(j), L::int_imm(threads)));
  // Unit u -> multi-index (row-major over `units`), innermost in elements.
  std::vector<L::Expr> idx(units.size());
  int64_t stride = 1;
  for (int d = static_cast<int>(units.size()) - 1; d >= 0; --d) {
    L::Expr q = stride == 1 ? u : L::floordiv(u, stride);
    idx[d] = d == 0 ? q : L::floormod(q, units[d]);
    stride *= units[d];
  }
  if (vector > 1) idx.back() = L::add(L::mul(idx.back(), L::int_imm(vector)), L::var_ref(lane));
  L::Stmt body = L::store(dst, idx, value(idx));
  if (vector > 1) body = L::for_loop(lane, vector, body, L::ForKind::vectorized);
  if (total % threads != 0) body = L::if_then(L::lt(u, L::int_imm(total)), body);
  if (rounds > 1)
    body = L::for_loop(j, rounds, body, rounds <= 8 ? L::ForKind::unrolled : L::ForKind::serial);
  body->comment = fmt::format("copy {} ({} threads)", dst->name, threads);
  return body;
}

L::Stmt cooperative_copy(const L::Var& tid, int64_t threads, const L::StmtNode& copy,
                         int64_t vector) {
  TESSEL_CHECK(copy.kind == L::StmtKind::Copy, "cooperative_copy of a non-copy statement");
  const L::Region& src = copy.src;
  const L::Region& dst = copy.dst;
  // The destination region as a view (starts may be expressions: fold them into the indices).
  std::vector<L::Expr> dst_start = dst.starts;
  L::Buffer dview = dst.buffer;
  const double pad = copy.pad_value;
  auto value = [&](const std::vector<L::Expr>& i) {
    std::vector<L::Expr> at;
    for (size_t d = 0; d < i.size(); ++d) at.push_back(L::add(src.starts[d], i[d]));
    return L::load(src.buffer, at, true, pad);
  };
  L::Stmt s = cooperative_copy(tid, threads, src.extents, vector, dview, value);
  // Shift the destination indices by the region's start.
  return L::rewrite_stmt(s, [&](const L::Stmt& n) -> L::Stmt {
    if (n->kind == L::StmtKind::Store && n->buffer == dview)
      for (size_t d = 0; d < n->indices.size(); ++d)
        n->indices[d] = L::add(dst_start[d], n->indices[d]);
    return n;
  });
}

}  // namespace tessel::passes
