// Pass: l2_prefetch -- weights of the next kernels into the shared L2 ahead of their kernel.
//
// What it does: over the whole program's kernels (in program order), plans for each kernel i the
// l2_prefetch hints core 0 issues at its start (docs/isa.md, l2_prefetch): the constant GM tensors
// (weights) of kernels i+1, i+2, ..., nearest first, as long as the constants ahead of kernel i
// (those of kernels i+1..j, prefetched earlier or now) fit in half of the L2's capacity; the first
// constant that does not fit is cut to the bytes that do, and the walk stops there. The other
// half is left to the running kernel's own operands. Each byte of a constant is requested once:
// a constant cut at kernel i has its next bytes requested by the kernels after i as room ahead
// frees up (before its first reader runs; what was evicted is fetched on demand by its reader).
// Requesting only the cut prefix once (and never the rest) gave ResNet-50 on 4 cores with an
// 8 MiB L2 and prefetch_discard 1,047,925 cycles; continuing the cut constants, 1,010,338
// (experiments/memory_l2.yaml). The L2 then fills these lines
// in DRAM idle time while kernel i computes, so a weight-bound kernel finds its weights on chip
// instead of streaming them after its core barrier. Must run after the kernels' GM allocations are
// planned (it reads their addresses); needs memory.l2 (the NPU pass script runs it only when
// memory.l2.placement is prefetch or prefetch_discard). Guarantees: hints only -- no value changes;
// every range lies inside one constant allocation.
#include <algorithm>
#include <map>
#include <set>

#include "compiler/support/error.h"
#include "passes/loop/npu_passes.h"

namespace tessel::passes {

std::vector<std::vector<GmRange>> plan_l2_prefetch(const std::vector<KernelGmUse>& kernels,
                                                   uint64_t l2_capacity_bytes) {
  std::vector<std::vector<GmRange>> plan(kernels.size());
  if (l2_capacity_bytes == 0) return plan;
  const uint64_t budget = l2_capacity_bytes / 2;
  std::set<uint64_t> seen;                 // constants read by a kernel <= i (their reader has run)
  std::map<uint64_t, uint64_t> requested;  // constant -> bytes of it prefetched so far (a prefix)
  for (size_t i = 0; i < kernels.size(); ++i) {
    for (const GmRange& c : kernels[i].constants) seen.insert(c.address);
    uint64_t ahead = 0;
    std::set<uint64_t> counted;  // a constant read by several kernels ahead counts once
    bool full = false;
    for (size_t j = i + 1; j < kernels.size() && !full; ++j) {
      for (const GmRange& c : kernels[j].constants) {
        if (seen.count(c.address) || !counted.insert(c.address).second) continue;
        uint64_t& done = requested[c.address];
        const uint64_t want = std::min(c.bytes, budget - ahead);
        if (want > done) plan[i].push_back({c.address + done, want - done});
        done = std::max(done, want);
        if (ahead + c.bytes > budget) {
          full = true;
          break;
        }
        ahead += c.bytes;
      }
    }
  }
  return plan;
}

isa::Instruction l2_hint(isa::Opcode op, const GmRange& r, int32_t op_index) {
  TESSEL_CHECK(op == isa::Opcode::l2_prefetch || op == isa::Opcode::l2_discard, "l2_hint of {}",
               isa::opcode_name(op));
  if (r.bytes > UINT32_MAX)
    fail("{} of {} GM bytes at {}: more than one hint covers (2^32 - 1)", isa::opcode_name(op),
         r.bytes, r.address);
  isa::Instruction in;
  in.op = op;
  isa::L2HintArgs a;
  a.src = isa::MemRef{isa::Scope::gm, 0, static_cast<int64_t>(r.address)};
  a.bytes = static_cast<uint32_t>(r.bytes);
  in.args = a;
  in.op_index = op_index;
  return in;
}

}  // namespace tessel::passes
