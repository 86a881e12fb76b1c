// Pass: double_buffer -- ping-pong scratchpad buffers so the DMA of tile i+1 overlaps the compute
// on tile i.
//
// What it does: for every innermost loop that copies data in from GM (the tile loops of the tiling
// passes; in a cube kernel that is the K-chunk loop, or the pixel loop when one K chunk suffices),
// the scratchpad allocations used only inside the loop body get a second ("pong") allocation, and
// the loop is unrolled by two: iteration 2j uses the ping buffers, iteration 2j+1 the pong ones
// (an odd last iteration follows with the ping buffers). Allocations also used outside the loop
// (weights kept in L0A, the accumulators of a K loop) are left alone. With separate allocations,
// insert_sync only orders each buffer with its own users, so MTE2 fills the pong buffers while the
// other pipes work on the ping ones (after AKG's double buffering pass, PLDI'21).
// Runs after split_cores and before partition_loops; the tiling passes must have left half of
// each scratchpad free (their double_buffer knob). Guarantees: same results, each buffer's uses
// ordered by insert_sync as before.
#include <fmt/format.h>

#include <functional>
#include <set>

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

class DoubleBuffer {
 public:
  L::Stmt run(const L::Stmt& root) {
    root_ = root;
    return visit(root);
  }

 private:
  L::Stmt root_;

  /// Allocations used anywhere outside `loop`.
  AllocSet used_outside(const L::StmtNode* loop) const {
    AllocSet out;
    std::function<void(const L::Stmt&)> walk = [&](const L::Stmt& s) {
      if (!s || s.get() == loop) return;
      if (s->kind == L::StmtKind::Copy || s->kind == L::StmtKind::Intrin) {
        for (auto* a : allocations(s)) out.insert(a);
        return;
      }
      for (const auto& x : s->seq) walk(x);
      walk(s->body);
      walk(s->else_body);
    };
    walk(root_);
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
      if (outside.count(a)) continue;
      auto p = std::make_shared<L::BufferNode>(*a);
      p->name = a->name + "_pong";
      p->address_bytes = -1;
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
