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
// other pipes work on the ping ones (after AKG's double buffering pass, PLDI'21). The unrolled
// loop is also software-pipelined by one stage: the GM loads that open an iteration's body are
// issued before the previous iteration's compute (`pipelined` below). The scalar unit issues in
// program order into pipe queues of core.scalar.issue_queue_depth entries, so with the loads left
// in place the next tile's loads would issue only once the current tile's compute had drained to
// the queue depth, and a tile with more vector instructions than that (a depthwise convolution's
// vmla chain) would wait for its whole load latency (docs/isa.md, "Timing").
// Runs after split_cores and before partition_loops (and insert_sync); the tiling passes must
// have left half of each scratchpad free (their double_buffer knob). Guarantees: same results,
// each buffer's uses ordered by insert_sync as before; a load is moved ahead only when it fills
// an alternated buffer from a GM tensor the loop does not write.
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

  /// The loop software-pipelined by one stage: each iteration's leading loads from GM (the
  /// copies that open its body) are issued one iteration early, before the previous iteration's
  /// compute, into the buffers of their own parity:
  ///   L(0); for j < e/2 - 1 { L'(2j+1); R(2j); L(2j+2); R'(2j+1) };
  ///   L'(e-1 or e-2+1); R(e-2); [L(e-1); ] R'(e-1); [R(e-1)]   (bracketed: odd e)
  /// (L/R: the loads / the rest of the body on the ping buffers, L'/R' on the pong ones). Null
  /// when the body does not open with such loads, or when one of them reads a GM tensor the loop
  /// writes, comes from a multicast copy, or fills a buffer that is not alternated.
  L::Stmt pipelined(const L::Stmt& loop, const std::map<const L::BufferNode*, L::Buffer>& pong) {
    const L::Stmt& body = loop->body;
    if (!body || body->kind != L::StmtKind::Seq) return nullptr;
    std::set<const L::BufferNode*> gm_written;
    L::visit_stmt(body, [&](const L::Stmt& n) {
      if (n->kind == L::StmtKind::Copy && n->dst.buffer->scope == L::MemScope::gm)
        gm_written.insert(n->dst.buffer->storage());
    });
    size_t n_loads = 0;
    while (n_loads < body->seq.size()) {
      const L::Stmt& c = body->seq[n_loads];
      if (c->kind != L::StmtKind::Copy || c->src.buffer->scope != L::MemScope::gm ||
          c->multicast_cores != 0 || gm_written.count(c->src.buffer->storage()) ||
          !pong.count(c->dst.buffer->storage()))
        break;
      ++n_loads;
    }
    if (n_loads == 0 || n_loads == body->seq.size()) return nullptr;
    const L::Stmt loads = L::seq({body->seq.begin(), body->seq.begin() + n_loads});
    const L::Stmt rest = L::seq({body->seq.begin() + n_loads, body->seq.end()});
    auto at = [&](const L::Stmt& part, L::Expr i, bool is_pong) {
      L::Stmt s = L::substitute_stmt(part, {{loop->var.get(), i}});
      return is_pong ? swap_buffers(s, pong) : s;
    };
    const int64_t e = loop->extent, pairs = e / 2;
    std::vector<L::Stmt> parts;
    parts.push_back(at(loads, L::int_imm(0), false));
    auto steady = [&](L::Expr even) {
      return L::seq({at(loads, L::add(even, L::int_imm(1)), true), at(rest, even, false),
                     at(loads, L::add(even, L::int_imm(2)), false),
                     at(rest, L::add(even, L::int_imm(1)), true)});
    };
    if (pairs == 2) {
      parts.push_back(steady(L::int_imm(0)));
    } else if (pairs > 2) {
      L::Var j = L::make_var(loop->var->name + "_pp");
      parts.push_back(
          L::for_loop(j, pairs - 1, steady(L::mul(L::var_ref(j), L::int_imm(2))), loop->for_kind));
    }
    const int64_t last = 2 * (pairs - 1);  // the last pair's ping iteration
    parts.push_back(at(loads, L::int_imm(last + 1), true));
    parts.push_back(at(rest, L::int_imm(last), false));
    if (e % 2) parts.push_back(at(loads, L::int_imm(e - 1), false));
    parts.push_back(at(rest, L::int_imm(last + 1), true));
    if (e % 2) parts.push_back(at(rest, L::int_imm(e - 1), false));
    L::Stmt r = L::seq({L::seq(parts)});
    r->comment = fmt::format("double-buffered {} (ping-pong x2, loads one iteration ahead)",
                             loop->var->name);
    return r;
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
    if (L::Stmt r = pipelined(loop, pong)) return r;
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
