// gpu_tile: windowed kernels (pooling, depthwise convolution) as one thread block per output
// tile, the tile's input window promoted to shared memory by the NPU's tiling machinery.
//
// What it does: the tile of every tensor comes from TileEmitter (tile_emitter.h), the region
// inference and per-tile emission tile_vector uses for the NPU's UB: for an output tile it
// infers the box of every input and stage (with the halo of the window and its padding), copies
// each input box GM -> local memory (loop::copy, padded), computes every stage over its box, and
// copies the output box back. Here the local memory is the block's shared memory and every
// piece runs on all the block's threads:
//
//   for blk in 0..tiles [blockIdx.x]:                                   (tile index per axis)
//     shared: every box of the tile
//     for tid in 0..T [threadIdx.x]:
//       input boxes GM -> shared            cooperative copies (gpu_copy.cpp)
//       bar.sync
//       stage by stage: its output loops fused and distributed over the threads (the reduction
//       loops stay inside a thread), bar.sync after each
//       output box shared -> GM             cooperative copy
//
// A window element is read from global memory once per tile instead of once per output that
// uses it. Tiles: the innermost output axes whole while the tile has fewer than `2 * threads`
// outputs and its boxes fit `budget` bytes of shared memory, the axis where that stops split
// to its largest divisor that fits (so every tile is full: one launch, no guards); axes a stage
// reduces over stay whole.
//
// Applies to kernels with a sliding window: a reduction whose source reads a placeholder at an
// index of both an output and a reduction variable (MaxPool, AveragePool, depthwise and other
// convolutions the contraction schedule declines). Returns nullopt otherwise, or when the
// emitter cannot tile it (a non-affine read) -- the caller uses gpu_bind. Runs on the kernel's
// TE. Guarantees one gpu_block loop, barriers only at the top level of the thread loop.
#include <fmt/format.h>

#include "compiler/support/error.h"
#include "passes/loop/gpu_passes.h"
#include "passes/loop/tile_emitter.h"

namespace tessel::passes {

namespace L = tessel::loop;
using L::Expr;

namespace {

/// True when a reduction stage reads a placeholder through a sliding window.
bool windowed(const te::Tensor& out) {
  for (const auto& t : te::post_order(out)) {
    if (!t->is_reduce()) continue;
    std::set<const L::VarNode*> axes, raxes;
    for (const auto& a : t->axes) axes.insert(a.get());
    for (const auto& r : t->body->reduce_axes) raxes.insert(r.var.get());
    bool found = false;
    L::visit_expr(t->body->args[0], [&](const L::ExprNode& e) {
      if (e.kind != L::ExprKind::TensorRead || !e.tensor->is_placeholder()) return;
      for (const auto& idx : e.args) {
        bool o = false, r = false;
        L::visit_expr(idx, [&](const L::ExprNode& x) {
          if (x.kind != L::ExprKind::VarRef) return;
          o |= axes.count(x.var.get()) > 0;
          r |= raxes.count(x.var.get()) > 0;
        });
        found |= o && r;
      }
    });
    if (found) return true;
  }
  return false;
}

/// A stage nest `for o..: [for r..:] store` run by the block's threads: the loops whose
/// variables index the store are fused and distributed round robin, the others stay inside.
L::Stmt distribute(const L::Stmt& nest, const L::Var& tid, int64_t threads) {
  const L::StmtNode* store = nullptr;
  L::visit_stmt(nest, [&](const L::Stmt& s) {
    if (s->kind == L::StmtKind::Store) store = s.get();
  });
  TESSEL_CHECK(store != nullptr, "gpu_tile: a stage nest without a store");
  auto indexes = [&](const L::VarNode* v) {
    for (const auto& i : store->indices)
      if (uses_var(i, v)) return true;
    return false;
  };
  std::vector<L::Stmt> loops;
  L::Stmt body = nest;
  while (body->kind == L::StmtKind::For && indexes(body->var.get())) {
    loops.push_back(body);
    body = body->body;
  }
  int64_t total = 1;
  for (const auto& l : loops) total *= l->extent;
  const int64_t rounds = (total + threads - 1) / threads;
  L::Var j = L::make_var("sj");
  Expr f = rounds == 1 ? L::var_ref(tid)
                       : L::add(L::var_ref(tid), L::mul(L::var_ref(j), L::int_imm(threads)));
  std::map<const L::VarNode*, Expr> sub;
  int64_t stride = 1;
  for (int d = static_cast<int>(loops.size()) - 1; d >= 0; --d) {
    Expr q = stride == 1 ? f : L::floordiv(f, stride);
    sub[loops[d]->var.get()] = d == 0 ? q : L::floormod(q, loops[d]->extent);
    stride *= loops[d]->extent;
  }
  L::Stmt s = L::substitute_stmt(body, sub);
  if (total % threads != 0) s = L::if_then(L::lt(f, L::int_imm(total)), s);
  if (rounds > 1) s = L::for_loop(j, rounds, s);
  return s;
}

}  // namespace

std::optional<L::Stmt> gpu_tile(const std::string& name, const te::Tensor& out,
                                const lower::TensorBuffers& buffers, const GpuTarget& target,
                                const GpuGenericKnobs& knobs, int64_t budget) {
  if (!windowed(out)) return std::nullopt;
  KernelSpec ks;
  ks.name = name;
  ks.out = out;
  for (const auto& [t, b] : buffers) ks.gm[t] = b;
  NpuTarget nt;
  nt.act_dtype = DType::f32;
  const Shape& shape = out->shape;
  const size_t rank = shape.size();
  try {
    TileEmitter em(ks, nt);
    // The tile: innermost axes whole up to 2 * threads outputs, then the largest divisor.
    std::vector<int64_t> tile(rank, 1);
    const int64_t want = 2 * knobs.threads;
    int64_t outputs = 1;
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      const bool must_whole = !em.can_tile_axis(static_cast<size_t>(d), shape);
      int64_t t = shape[d];
      if (!must_whole)
        while (t > 1 && (outputs * t > want || em.footprint_bytes([&] {
                 auto x = tile;
                 x[d] = t;
                 return x;
               }()) > budget)) {
          --t;
          while (shape[d] % t != 0) --t;
        }
      tile[d] = t;
      outputs *= t;
      if (t < shape[d]) break;
    }
    if (em.footprint_bytes(tile) > budget) return std::nullopt;
    em.allocate(tile);
    // Per-axis tile variables, bound to the block index below.
    std::vector<L::Var> tv(rank);
    TileBox box;
    box.start.assign(rank, L::Affine{});
    box.extent = tile;
    int64_t tiles = 1;
    for (size_t d = 0; d < rank; ++d) {
      tv[d] = L::make_var(fmt::format("t{}", d));
      em.register_var(tv[d]);
      box.start[d].coeffs[tv[d].get()] = tile[d];
      tiles *= shape[d] / tile[d];
    }
    L::Stmt tile_code = em.emit_tile(box, {});
    const int64_t warp = target.warp_size;
    const int64_t threads = std::min<int64_t>(
        knobs.threads, std::max<int64_t>(warp, (outputs + warp - 1) / warp * warp));
    L::Var tid = L::make_var("tid"), blk = L::make_var("blk");
    // The local (UB) buffers become the block's shared memory.
    std::map<const L::BufferNode*, L::Buffer> allocs;
    L::visit_stmt(tile_code, [&](const L::Stmt& s) {
      auto mark = [&](const L::Buffer& b) {
        if (!b || b->scope != L::MemScope::ub) return;
        b->scope = L::MemScope::shared;
        if (b->base) b->base->scope = L::MemScope::shared;
        allocs[b->storage()] = b->base ? b->base : b;
      };
      mark(s->buffer);
      mark(s->dst.buffer);
      mark(s->src.buffer);
      auto visit = [&](const Expr& e) {
        if (e) L::visit_expr(e, [&](const L::ExprNode& n) { mark(n.buffer); });
      };
      visit(s->value);
    });
    // Input copies, then a barrier before every stage (it reads what other threads wrote) and
    // before the output copy. A reduction's init and update nests distribute their outputs the
    // same way, so each thread updates only what it initialised.
    std::vector<L::Stmt> phases;
    L::Stmt barrier = L::gpu_intrin(L::GpuOp::barrier);
    const auto& parts =
        tile_code->kind == L::StmtKind::Seq ? tile_code->seq : std::vector<L::Stmt>{tile_code};
    for (const L::Stmt& p : parts) {
      if (p->kind == L::StmtKind::Copy) {
        if (p->dst.buffer->scope != L::MemScope::shared) phases.push_back(barrier);  // output
        const int64_t inner = p->dst.extents.back();
        phases.push_back(cooperative_copy(tid, threads, *p, inner % 4 == 0 ? 4 : 1));
        continue;
      }
      phases.push_back(barrier);
      for (const L::Stmt& nest : p->kind == L::StmtKind::Seq ? p->seq : std::vector<L::Stmt>{p})
        phases.push_back(distribute(nest, tid, threads));
    }
    L::Stmt block = L::for_loop(tid, threads, L::seq(phases), L::ForKind::gpu_thread);
    for (const auto& [node, b] : allocs) block = L::allocate(b, block);
    // Tile indices from the block index (the last axis fastest).
    std::map<const L::VarNode*, Expr> sub;
    Expr rest = L::var_ref(blk);
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      const int64_t n = shape[d] / tile[d];
      sub[tv[d].get()] = n == 1 ? L::int_imm(0) : (d == 0 ? rest : L::floormod(rest, n));
      if (n > 1) rest = L::floordiv(rest, n);
    }
    L::Stmt k = L::for_loop(blk, tiles, L::substitute_stmt(block, sub), L::ForKind::gpu_block);
    k->comment = fmt::format("{}: tiles {} in shared memory, {} blocks x {} threads", name,
                             shape_to_string(tile), tiles, threads);
    return k;
  } catch (const Unsupported&) {
    return std::nullopt;  // a read the region inference cannot tile
  }
}

}  // namespace tessel::passes
