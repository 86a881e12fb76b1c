// Pass: plan_memory -- scratchpad addresses.
//
// What it does: gives every scratchpad allocation used by a kernel its own 32-byte aligned region
// in its scope (L1, L0A, L0B, L0C, UB), in first-use order. Allocations of one kernel never
// overlap, so dependence analysis by allocation (insert_sync) is exact. Runs after tiling and
// tensorization, before sync insertion and code generation. Guarantees: address_bytes is set on
// every allocation and every allocation fits its scratchpad; otherwise tessel::Error names the
// kernel, the scope, the bytes needed and the capacity.
#include <fmt/format.h>

#include <array>
#include <set>

#include "compiler/support/error.h"
#include "passes/loop/npu_passes.h"
#include "passes/loop/tile_emitter.h"

namespace tessel::passes {

namespace L = tessel::loop;

void plan_memory(const L::Stmt& body, const NpuTarget& target, const std::string& kernel_name) {
  std::vector<L::Buffer> allocs;
  std::set<const L::BufferNode*> seen;
  auto add = [&](const L::Buffer& b) {
    if (!b || b->scope == L::MemScope::gm || b->scope == L::MemScope::host) return;
    L::Buffer a = b->base ? b->base : b;
    if (seen.insert(a.get()).second) allocs.push_back(a);
  };
  L::visit_stmt(body, [&](const L::Stmt& s) {
    if (s->kind == L::StmtKind::Copy) {
      add(s->dst.buffer);
      add(s->src.buffer);
    } else if (s->kind == L::StmtKind::Intrin) {
      for (const auto& o : s->operands) add(o.buffer);
    } else if (s->kind == L::StmtKind::Store) {
      add(s->buffer);
    }
  });
  const auto& cap = target.hw->core.buffers_bytes;
  auto capacity = [&](L::MemScope sc) -> int64_t {
    switch (sc) {
      case L::MemScope::l1:
        return cap.l1;
      case L::MemScope::l0a:
        return cap.l0a;
      case L::MemScope::l0b:
        return cap.l0b;
      case L::MemScope::l0c:
        return cap.l0c;
      case L::MemScope::ub:
        return cap.ub;
      default:
        return 0;
    }
  };
  std::array<int64_t, 7> next{};
  for (const auto& a : allocs) {
    auto& top = next[static_cast<int>(a->scope)];
    a->address_bytes = top;
    top += align32(std::max<int64_t>(a->alloc_bytes, 1));
  }
  for (int sc = static_cast<int>(L::MemScope::l1); sc <= static_cast<int>(L::MemScope::ub); ++sc) {
    const auto scope = static_cast<L::MemScope>(sc);
    if (next[sc] > capacity(scope)) {
      std::string list;
      for (const auto& a : allocs)
        if (a->scope == scope) list += fmt::format(" {}={}B", a->name, align32(a->alloc_bytes));
      fail("kernel {}: {} needs {} bytes but core.buffers_bytes.{} is {} (buffers:{})", kernel_name,
           L::scope_name(scope), next[sc], L::scope_name(scope), capacity(scope), list);
    }
  }
}

}  // namespace tessel::passes
