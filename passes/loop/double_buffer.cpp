// Pass: double_buffer -- ping-pong scratchpad buffers so the DMA of tile i+1 overlaps the compute
// on tile i.
//
// What it does: for every innermost loop that copies data in from GM (the tile loops of the tiling
// passes; in a cube kernel that is the K-chunk loop, or the pixel loop when one K chunk suffices),
// the scratchpad allocations used only inside the loop body get a second ("pong") allocation, and
// the loop is unrolled by two: iteration 2j uses the ping buffers, iteration 2j+1 the pong ones
// (an odd last iteration follows with the ping buffers). Allocations also used outside the loop
// (weights kept in L1, the accumulators of a K loop) and those the tiler already alternates itself
// (BufferNode::no_double_buffer: the L0A/L0B ping-pong and resident weights of tile_cube) are
// left alone. With separate allocations,
// insert_sync only orders each buffer with its own users, so MTE2 fills the pong buffers while the
// other pipes work on the ping ones (after AKG's double buffering pass, PLDI'21).
// Runs after split_cores and before partition_loops; the tiling passes must have left half of
// each scratchpad free (their double_buffer knob). Guarantees: same results, each buffer's uses
// ordered by insert_sync as before.
#include <fmt/format.h>

#include <functional>
#include <map>
#include <set>
#include <variant>

#include "compiler/support/error.h"
#include "passes/loop/npu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

namespace {

using AllocSet = std::set<const L::BufferNode*>;

/// Scratchpad allocations a statement tree uses.
AllocSet allocations(const L::Stmt& s) {
  AllocSet out;
  auto add = [&](const L::Buffer& b) {
    if (b && b->scope != L::MemScope::gm && b->scope != L::MemScope::host) out.insert(b->storage());
  };
  L::visit_stmt(s, [&](const L::Stmt& n) {
    if (n->kind == L::StmtKind::Copy) {
      add(n->dst.buffer);
      add(n->src.buffer);
    }
    for (const auto& o : n->operands) add(o.buffer);
  });
  return out;
}

bool copies_from_gm(const L::Stmt& s) {
  bool found = false;
  L::visit_stmt(s, [&](const L::Stmt& n) {
    found |= n->kind == L::StmtKind::Copy && n->src.buffer->scope == L::MemScope::gm;
  });
  return found;
}

bool has_inner_gm_loop(const L::Stmt& body) {
  bool found = false;
  L::visit_stmt(body, [&](const L::Stmt& n) {
    found |= n->kind == L::StmtKind::For && n->extent > 1 && copies_from_gm(n->body);
  });
  return found;
}

/// Replaces allocations by their pong copies (views are rebuilt over the new allocation).
L::Stmt swap_buffers(const L::Stmt& s, const std::map<const L::BufferNode*, L::Buffer>& pong) {
  std::map<const L::BufferNode*, L::Buffer> views;
  auto swap = [&](const L::Buffer& b) -> L::Buffer {
    if (!b) return b;
    auto it = pong.find(b->storage());
    if (it == pong.end()) return b;
    if (!b->base) return it->second;
    auto v = views.find(b.get());
    if (v != views.end()) return v->second;
    L::Buffer nv = L::make_view(it->second, b->name, b->shape, b->strides, b->elem_offset);
    views[b.get()] = nv;
    return nv;
  };
  return L::rewrite_stmt(s, [&](const L::Stmt& n) -> L::Stmt {
    if (n->kind == L::StmtKind::Copy) {
      n->dst.buffer = swap(n->dst.buffer);
      n->src.buffer = swap(n->src.buffer);
    }
    for (auto& o : n->operands) o.buffer = swap(o.buffer);
    return n;
  });
}

/// How statement `s` touches allocation `a`: 0 not at all, 1 it writes `a` before reading it
/// (a copy into it, or an instruction whose destination -- operand 0 -- it is and that reads
/// nothing else of it, an accumulating mmad excepted), 2 it reads `a`.
int access_kind(const L::Stmt& s, const L::BufferNode* a) {
  auto is_a = [&](const L::Buffer& b) { return b && b->storage() == a; };
  if (s->kind == L::StmtKind::Copy) {
    if (is_a(s->src.buffer)) return 2;
    return is_a(s->dst.buffer) ? 1 : 0;
  }
  if (s->kind != L::StmtKind::Intrin) return 0;
  bool read = false, write = false;
  for (size_t i = 0; i < s->operands.size(); ++i)
    if (is_a(s->operands[i].buffer)) (i == 0 ? write : read) = true;
  if (write) {
    const auto* mm = std::get_if<isa::MmadArgs>(&s->instr.args);
    if (mm && mm->accumulate) read = true;
  }
  return read ? 2 : write ? 1 : 0;
}

/// First access to `a` in program order within `s`: 0 none, 1 write-first, 2 read.
int first_access(const L::Stmt& s, const L::BufferNode* a) {
  if (!s) return 0;
  if (s->kind == L::StmtKind::Copy || s->kind == L::StmtKind::Intrin) return access_kind(s, a);
  for (const auto& x : s->seq)
    if (int k = first_access(x, a)) return k;
  if (int k = first_access(s->body, a)) return k;
  return first_access(s->else_body, a);
}

class DoubleBuffer {
 public:
  L::Stmt run(const L::Stmt& root) {
    root_ = root;
    return visit(root);
  }

 private:
  L::Stmt root_;
  std::map<const L::BufferNode*, L::Buffer> pongs_;

  /// Allocations used outside `loop` whose value may flow into or out of it -- those that must
  /// keep a single copy. A value flows in when the body's first access to the allocation reads it,
  /// out when the first access after the loop (program order) reads it, and across iterations of
  /// an enclosing loop when the first access before the loop reads it. A K loop's peeled first
  /// chunk and a tile loop's static tail only refill the same buffers, so the loop's copies may
  /// still alternate.
  AllocSet used_outside(const L::StmtNode* loop) const {
    std::map<const L::BufferNode*, int> first_before, first_after;
    bool past = false;
    std::function<void(const L::Stmt&)> walk = [&](const L::Stmt& s) {
      if (!s) return;
      if (s.get() == loop) {
        past = true;
        return;
      }
      if (s->kind == L::StmtKind::Copy || s->kind == L::StmtKind::Intrin) {
        auto& first = past ? first_after : first_before;
        for (auto* a : allocations(s)) first.emplace(a, access_kind(s, a));
        return;
      }
      for (const auto& x : s->seq) walk(x);
      walk(s->body);
      walk(s->else_body);
    };
    walk(root_);
    AllocSet out;
    for (const auto& [a, k] : first_before)
      if (k == 2 || first_access(loop->body, a) != 1) out.insert(a);
    for (const auto& [a, k] : first_after)
      if (k == 2 || first_access(loop->body, a) != 1) out.insert(a);
    return out;
  }

  L::Stmt visit(const L::Stmt& s) {
    if (!s) return s;
    if (s->kind == L::StmtKind::For && s->extent >= 2 && copies_from_gm(s->body) &&
        !has_inner_gm_loop(s->body))
      return transform(s);
    auto c = std::make_shared<L::StmtNode>(*s);
    for (auto& x : c->seq) x = visit(x);
    c->body = visit(c->body);
    c->else_body = visit(c->else_body);
    return c;
  }

  L::Stmt transform(const L::Stmt& loop) {
    const AllocSet outside = used_outside(loop.get());
    std::map<const L::BufferNode*, L::Buffer> pong;
    for (const L::BufferNode* a : allocations(loop->body)) {
      if (outside.count(a) || a->no_double_buffer) continue;
      // One pong copy per allocation, shared by every loop that alternates it (e.g. the K loops
      // of the full tiles and of the tail tile), so the scratchpad holds two copies, not more.
      auto& p = pongs_[a];
      if (!p) {
        p = std::make_shared<L::BufferNode>(*a);
        p->name = a->name + "_pong";
        p->address_bytes = -1;
      }
      pong[a] = p;
    }
    if (pong.empty()) return loop;
    const int64_t e = loop->extent;
    L::Var j = L::make_var(loop->var->name + "_pp");
    L::Expr even = L::mul(L::var_ref(j), L::int_imm(2));
    L::Stmt ping_body = L::substitute_stmt(loop->body, {{loop->var.get(), even}});
    L::Stmt pong_body = swap_buffers(
        L::substitute_stmt(loop->body, {{loop->var.get(), L::add(even, L::int_imm(1))}}), pong);
    std::vector<L::Stmt> parts;
    parts.push_back(L::for_loop(j, e / 2, L::seq({ping_body, pong_body}), loop->for_kind));
    if (e % 2)
      parts.push_back(L::substitute_stmt(loop->body, {{loop->var.get(), L::int_imm(e - 1)}}));
    L::Stmt r = L::seq(parts);
    r = L::seq({r});
    r->comment = fmt::format("double-buffered {} (ping-pong x2)", loop->var->name);
    return r;
  }
};

}  // namespace

L::Stmt double_buffer(const L::Stmt& body) { return DoubleBuffer().run(body); }

}  // namespace tessel::passes
