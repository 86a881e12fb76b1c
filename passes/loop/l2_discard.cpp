// Pass: l2_discard -- drop dead intermediate tensors from the shared L2 without writing them back.
//
// What it does: over the whole program's kernels (in program order), finds for every intermediate
// GM allocation (a scratch tensor: not a graph input, output or constant) the last kernel that
// reads or writes it, and plans an l2_discard of the whole allocation after that kernel (docs/
// isa.md, l2_discard). The NPU pass script places the hints on core 0 after the kernel's core
// barrier, when no core reads the tensor any more, so the L2 drops its lines -- dirty ones
// included -- instead of writing them back to DRAM when they are evicted, and their ways are
// free for the next kernels. Must run after the kernels' GM allocations are planned; needs
// memory.l2 (run only when memory.l2.placement is discard or prefetch_discard). Guarantees:
// hints only -- no value changes; a tensor is discarded once, after its last use; graph outputs
// are never discarded.
#include <algorithm>
#include <map>

#include "passes/loop/npu_passes.h"

namespace tessel::passes {

std::vector<std::vector<GmRange>> plan_l2_discard(const std::vector<KernelGmUse>& kernels) {
  std::map<GmRange, size_t> last;  // allocation -> index of its last kernel
  for (size_t i = 0; i < kernels.size(); ++i)
    for (const GmRange& t : kernels[i].intermediates) last[t] = i;
  std::vector<std::vector<GmRange>> plan(kernels.size());
  for (const auto& [t, i] : last)
    if (t.bytes > 0) plan[i].push_back(t);  // map order: sorted by address
  return plan;
}

}  // namespace tessel::passes
