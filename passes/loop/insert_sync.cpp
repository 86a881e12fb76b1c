// Pass: insert_sync -- set_flag/wait_flag between pipes, only where data dependences need them.
//
// What it does: every leaf (copy or intrin) runs on one pipe and reads/writes scratchpad or GM
// allocations. For each pair of leaves on different pipes that touch one allocation (at least one
// writing), it finds their lowest common sequence S. If the source comes first in S, the pair is a
// forward dependence: set_flag(src pipe -> dst pipe) after the source's child of S, wait_flag
// before the sink's child. If the sink comes first, the dependence is carried by the loop whose
// body is S (the sink of the next iteration waits for the source of this one): the same set/wait in
// S, plus a set_flag before the loop (so the first iteration does not wait) and a wait_flag after
// it (so the flag counts balance). A pair already covered by a placed pair of the same pipes in the
// same sequence (set no earlier, wait no later) is dropped. Event ids are assigned per pipe pair by
// interval colouring of the pairs' lifetimes.
// A carried pair whose lowest common sequence is not a loop body (a plain sequence inside one) is
// carried by the nearest enclosing loop, set after and waited before its body's child holding both.
// Runs after plan_memory (allocations never alias within a kernel). Guarantees: every cross-pipe
// dependence is ordered by a flag; same-pipe order is left to the in-order pipes.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "compiler/support/error.h"
#include "passes/loop/npu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;
using isa::Pipe;

namespace {

struct Leaf {
  int id = 0;
  Pipe pipe = Pipe::scalar;
  std::set<const L::BufferNode*> reads, writes;
  std::vector<std::pair<L::StmtNode*, int>> path;  // (seq, child index) from the root down
};

struct SeqInfo {
  L::StmtNode* owner_for = nullptr;   // the For whose body this seq is (null at top level)
  L::StmtNode* parent_seq = nullptr;  // the seq holding owner_for
  int index_in_parent = -1;           // owner_for's index in parent_seq
};

struct Pair {
  L::StmtNode* seq;
  bool carried;
  Pipe src, dst;
  int set_after, wait_before;  // child indices in seq
  int event = 0;
  int64_t life_lo = 0, life_hi = 0;
};

class SyncInserter {
 public:
  explicit SyncInserter(const NpuTarget& target) : target_(target) {}

  L::Stmt run(const L::Stmt& body) {
    L::Stmt root = normalize(body);
    if (root->kind != L::StmtKind::Seq) root = L::seq({root});
    index(root, {}, nullptr, nullptr, -1);
    find_dependences();
    assign_events();
    return insert(root);
  }

 private:
  const NpuTarget& target_;
  std::vector<Leaf> leaves_;
  std::map<L::StmtNode*, SeqInfo> seqs_;
  std::map<const L::StmtNode*, std::pair<int, int>> span_;  // node -> [first leaf, last leaf]
  std::vector<Pair> pairs_;
  std::map<const L::BufferNode*, std::vector<int>> readers_, writers_;  // leaf ids per allocation
  std::map<const L::BufferNode*, std::vector<int>> touchers_;  // readers and writers, ascending

  /// Deep copy where every For body is a Seq (so flags can be inserted inside loop bodies).
  static L::Stmt normalize(const L::Stmt& s) {
    return L::rewrite_stmt(s, [](const L::Stmt& n) -> L::Stmt {
      if (n->kind == L::StmtKind::For && n->body->kind != L::StmtKind::Seq) {
        auto body = std::make_shared<L::StmtNode>();
        body->kind = L::StmtKind::Seq;
        body->seq = {n->body};
        n->body = body;
      }
      return n;
    });
  }

  std::pair<int, int> index(const L::Stmt& s, std::vector<std::pair<L::StmtNode*, int>> path,
                            L::StmtNode* owner_for, L::StmtNode* parent_seq, int idx_in_parent) {
    const int first = static_cast<int>(leaves_.size());
    switch (s->kind) {
      case L::StmtKind::Seq: {
        seqs_[s.get()] = SeqInfo{owner_for, parent_seq, idx_in_parent};
        for (size_t i = 0; i < s->seq.size(); ++i) {
          auto p = path;
          p.emplace_back(s.get(), static_cast<int>(i));
          const L::Stmt& c = s->seq[i];
          if (c->kind == L::StmtKind::For) {
            index(c->body, p, c.get(), s.get(), static_cast<int>(i));
            span_[c.get()] = span_[c->body.get()];
          } else {
            index(c, p, nullptr, nullptr, -1);
          }
        }
        break;
      }
      case L::StmtKind::Copy:
      case L::StmtKind::Intrin: {
        Leaf leaf;
        leaf.id = first;
        leaf.pipe = L::stmt_pipe(*s);
        std::vector<L::Buffer> r, w;
        L::stmt_buffers(*s, &r, &w);
        for (const auto& b : r) leaf.reads.insert(b->storage());
        for (const auto& b : w) leaf.writes.insert(b->storage());
        leaf.path = path;
        leaves_.push_back(leaf);
        break;
      }
      case L::StmtKind::Sync:
        break;
      default:
        internal_fail("insert_sync: unexpected statement kind {} (run after tensorization)",
                      static_cast<int>(s->kind));
    }
    const int last = static_cast<int>(leaves_.size()) - 1;
    span_[s.get()] = {first, last};
    return {first, last};
  }

  /// True when some other leaf writes `x` strictly between a and b in execution order: then the
  /// dependence a -> b on x is either dead (b reads the later write) or implied by the two
  /// dependences through that writer.
  bool written_between(const Leaf& a, const Leaf& b, const L::BufferNode* x, bool carried,
                       std::pair<int, int> loop_span) const {
    // writers_ lists ids ascending: each test is a binary search.
    const std::vector<int>& w = writers_.at(x);
    const auto any_in = [&w](int lo, int hi) {  // some writer id in [lo, hi]
      if (lo > hi) return false;
      const auto it = std::lower_bound(w.begin(), w.end(), lo);
      return it != w.end() && *it <= hi;
    };
    if (!carried) return any_in(a.id + 1, b.id - 1);
    // Carried (b.id < a.id): a write after a in this iteration or before b in the next one.
    return any_in(std::max(a.id + 1, loop_span.first), loop_span.second) ||
           any_in(loop_span.first, std::min(b.id - 1, loop_span.second));
  }

  bool needed(const Leaf& a, const Leaf& b, bool carried, std::pair<int, int> loop_span) const {
    for (const auto* x : a.writes)
      if ((b.reads.count(x) || b.writes.count(x)) && !written_between(a, b, x, carried, loop_span))
        return true;
    for (const auto* x : a.reads)
      if (b.writes.count(x) && !written_between(a, b, x, carried, loop_span)) return true;
    return false;
  }

  void find_dependences() {
    // The leaves touching each allocation (ids ascending): the pairs that conflict are found from
    // them rather than by testing every pair of leaves, in the same (a, b) order.
    for (const auto& l : leaves_) {
      for (const auto* x : l.reads) readers_[x].push_back(l.id);
      for (const auto* x : l.writes) writers_[x].push_back(l.id);
    }
    for (const auto& [x, ids] : readers_) {
      auto& t = touchers_[x];
      t = ids;
      if (auto w = writers_.find(x); w != writers_.end())
        t.insert(t.end(), w->second.begin(), w->second.end());
    }
    for (const auto& [x, ids] : writers_)
      if (!readers_.count(x)) touchers_[x] = ids;
    for (auto& [x, t] : touchers_) {
      std::sort(t.begin(), t.end());
      t.erase(std::unique(t.begin(), t.end()), t.end());
    }
    std::vector<Pair> candidates;
    std::vector<int> partners;
    for (const auto& a : leaves_) {
      // The partners b that can pass needed() below, found from the sorted id lists instead of
      // every leaf touching a's allocations (quadratic in kernels of thousands of leaves):
      // forward (b after a) only up to the next write of x; carried (b before a, in the next
      // iteration of a loop around a) only up to the first write of x in that loop's body.
      partners.clear();
      std::vector<int> loop_starts;  // span start of each loop enclosing a
      for (const auto& [seq, idx] : a.path)
        if (const L::StmtNode* loop = seqs_.at(seq).owner_for)
          loop_starts.push_back(span_.at(loop).first);
      for (const auto* x : a.writes) {
        const std::vector<int>& w = writers_.at(x);
        const std::vector<int>& t = touchers_.at(x);
        const auto next_w = std::upper_bound(w.begin(), w.end(), a.id);
        const int fwd_hi = next_w == w.end() ? std::numeric_limits<int>::max() : *next_w;
        for (auto it = std::upper_bound(t.begin(), t.end(), a.id); it != t.end() && *it <= fwd_hi;
             ++it)
          partners.push_back(*it);
        for (const int lo : loop_starts) {
          const int first_w = *std::lower_bound(w.begin(), w.end(), lo);  // exists: a writes x
          const int hi = std::min(first_w, a.id - 1);
          for (auto it = std::lower_bound(t.begin(), t.end(), lo); it != t.end() && *it <= hi; ++it)
            partners.push_back(*it);
        }
      }
      for (const auto* x : a.reads) {
        const auto wi = writers_.find(x);
        if (wi == writers_.end()) continue;
        const std::vector<int>& w = wi->second;
        if (auto next_w = std::upper_bound(w.begin(), w.end(), a.id); next_w != w.end())
          partners.push_back(*next_w);
        for (const int lo : loop_starts)
          if (auto first_w = std::lower_bound(w.begin(), w.end(), lo);
              first_w != w.end() && *first_w < a.id)
            partners.push_back(*first_w);
      }
      std::sort(partners.begin(), partners.end());
      partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
      for (const int bid : partners) {
        const Leaf& b = leaves_[static_cast<size_t>(bid)];
        if (a.id == b.id || a.pipe == b.pipe) continue;
        // Lowest common sequence.
        size_t k = 0;
        while (k < a.path.size() && k < b.path.size() && a.path[k].first == b.path[k].first &&
               a.path[k].second == b.path[k].second)
          ++k;
        TESSEL_CHECK(k < a.path.size() && k < b.path.size() && a.path[k].first == b.path[k].first,
                     "leaves without a common sequence");
        L::StmtNode* seq = a.path[k].first;
        const int ia = a.path[k].second, ib = b.path[k].second;
        Pair p{seq, ia > ib, a.pipe, b.pipe, ia, ib};
        const L::StmtNode* loop = seqs_.at(seq).owner_for;
        if (p.carried && loop == nullptr) {
          // The common sequence is not a loop body (e.g. a plain sequence inside one): the
          // dependence is carried by the nearest enclosing loop, between iterations of its body's
          // child that holds both leaves (set after it, wait before it).
          for (size_t j = k; j-- > 0;) {
            L::StmtNode* up = a.path[j].first;
            if (seqs_.at(up).owner_for == nullptr) continue;
            p.seq = up;
            p.set_after = p.wait_before = a.path[j].second;
            loop = seqs_.at(up).owner_for;
            break;
          }
          if (loop == nullptr) continue;  // no enclosing loop: b never runs after a
        }
        if (!needed(a, b, p.carried, p.carried ? span_.at(loop) : std::pair<int, int>{0, -1}))
          continue;
        candidates.push_back(p);
      }
    }
    // For one wait position, the latest set covers the others: place it first.
    std::sort(candidates.begin(), candidates.end(), [](const Pair& x, const Pair& y) {
      if (x.wait_before != y.wait_before) return x.wait_before < y.wait_before;
      return x.set_after > y.set_after;
    });
    // A candidate is covered by a placed pair of the same seq, kind and pipes that sets no earlier
    // and waits no later. Placed pairs come earlier in this order, so they wait no later; a
    // forward pair always sets before it waits (the two leaves sit in different children). So the
    // test is: the latest set placed for the key is at or after this one's.
    std::map<std::tuple<L::StmtNode*, bool, Pipe, Pipe>, int> latest_set;
    for (const auto& p : candidates) {
      const auto key = std::make_tuple(p.seq, p.carried, p.src, p.dst);
      const auto it = latest_set.find(key);
      if (it != latest_set.end() && it->second >= p.set_after) continue;
      latest_set[key] = it == latest_set.end() ? p.set_after : std::max(it->second, p.set_after);
      pairs_.push_back(p);
    }
  }

  void assign_events() {
    for (auto& p : pairs_) {
      if (p.carried) {
        const auto sp = span_.at(seqs_.at(p.seq).owner_for);
        p.life_lo = 2 * sp.first - 1;
        p.life_hi = 2 * sp.second + 1;
      } else {
        p.life_lo = 2 * span_.at(p.seq->seq[p.set_after].get()).second;
        p.life_hi = 2 * span_.at(p.seq->seq[p.wait_before].get()).first;
      }
    }
    std::vector<Pair*> order;
    for (auto& p : pairs_) order.push_back(&p);
    std::sort(order.begin(), order.end(),
              [](const Pair* x, const Pair* y) { return x->life_lo < y->life_lo; });
    const int ids = target_.hw->core.sync_event_ids;
    std::map<std::pair<Pipe, Pipe>, std::vector<int64_t>> busy_until;  // per id
    for (Pair* p : order) {
      auto& ends = busy_until[{p->src, p->dst}];
      int chosen = -1;
      for (size_t e = 0; e < ends.size(); ++e)
        if (ends[e] < p->life_lo) {
          chosen = static_cast<int>(e);
          break;
        }
      if (chosen < 0) {
        chosen = static_cast<int>(ends.size());
        ends.push_back(0);
      }
      if (chosen >= ids) {
        // Out of event ids for this pipe pair: order the dependence with a barrier before the
        // sink instead (correct, but it drains every pipe).
        p->event = -1;
        continue;
      }
      ends[chosen] = p->life_hi;
      p->event = chosen;
    }
  }

  static L::Stmt flag(isa::Opcode op, Pipe src, Pipe dst, int event) {
    isa::Instruction in;
    in.op = op;
    in.args = isa::SyncArgs{src, dst, static_cast<uint8_t>(event)};
    return L::sync(in);
  }

  L::Stmt insert(const L::Stmt& root) {
    // Per seq: statements to put before/after each child.
    std::map<L::StmtNode*, std::map<int, std::vector<L::Stmt>>> before, after;
    for (const auto& p : pairs_) {
      if (p.event < 0) {
        isa::Instruction bar;
        bar.op = isa::Opcode::barrier;
        bar.args = isa::ScalarArgs{};
        before[p.seq][p.wait_before].push_back(L::sync(bar));
        continue;
      }
      after[p.seq][p.set_after].push_back(flag(isa::Opcode::set_flag, p.src, p.dst, p.event));
      before[p.seq][p.wait_before].push_back(flag(isa::Opcode::wait_flag, p.src, p.dst, p.event));
      if (p.carried) {
        const SeqInfo& info = seqs_.at(p.seq);
        before[info.parent_seq][info.index_in_parent].insert(
            before[info.parent_seq][info.index_in_parent].begin(),
            flag(isa::Opcode::set_flag, p.src, p.dst, p.event));
        after[info.parent_seq][info.index_in_parent].push_back(
            flag(isa::Opcode::wait_flag, p.src, p.dst, p.event));
      }
    }
    std::function<void(const L::Stmt&)> apply = [&](const L::Stmt& s) {
      if (s->kind == L::StmtKind::For) {
        apply(s->body);
        return;
      }
      if (s->kind != L::StmtKind::Seq) return;
      for (auto& c : s->seq) apply(c);
      auto& bf = before[s.get()];
      auto& af = after[s.get()];
      if (bf.empty() && af.empty()) return;
      std::vector<L::Stmt> out;
      for (size_t i = 0; i < s->seq.size(); ++i) {
        for (auto& x : bf[static_cast<int>(i)]) out.push_back(x);
        out.push_back(s->seq[i]);
        for (auto& x : af[static_cast<int>(i)]) out.push_back(x);
      }
      s->seq = std::move(out);
    };
    apply(root);
    return root;
  }
};

}  // namespace

L::Stmt insert_sync(const L::Stmt& body, const NpuTarget& target) {
  return SyncInserter(target).run(body);
}

}  // namespace tessel::passes
