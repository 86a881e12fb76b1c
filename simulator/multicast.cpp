// MulticastTable: matching a core's dma_mc with the pending reads of its core set.
#include "simulator/multicast.h"

namespace tessel::sim {

bool MulticastTable::take(int core, const isa::DmaArgs& a, Read* read) {
  if (a.cores <= 1) return false;
  const int base = core - core % static_cast<int>(a.cores);
  auto it = sets_.find({base, a.cores});
  if (it == sets_.end()) return false;
  std::vector<Pending>& pending = it->second;
  const size_t member = static_cast<size_t>(core - base);
  for (size_t i = 0; i < pending.size(); ++i) {
    Pending& p = pending[i];
    if (p.taken[member] || !(p.args == a)) continue;
    p.taken[member] = true;
    *read = p.read;
    if (--p.left == 0) pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    return true;
  }
  return false;
}

void MulticastTable::add(int core, const isa::DmaArgs& a, const Read& read) {
  if (a.cores <= 1) return;
  const int base = core - core % static_cast<int>(a.cores);
  Pending p;
  p.args = a;
  p.read = read;
  p.taken.assign(a.cores, false);
  p.taken[static_cast<size_t>(core - base)] = true;
  p.left = a.cores - 1;
  sets_[{base, a.cores}].push_back(std::move(p));
}

}  // namespace tessel::sim
