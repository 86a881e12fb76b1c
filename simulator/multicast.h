// Multicast (dma_mc) in the simulator: the reads made for a core set that not every member has
// taken yet (docs/isa.md, Timing, "Multicast"). A member's dma_mc either takes a pending read of
// its set (no memory access: the set's requests combine at the memory side) or is the set's read,
// recorded here for the other members. A core barrier drops what is left.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "isa/isa.h"

namespace tessel::sim {

class MulticastTable {
 public:
  /// When the read's memory access finished (its dram_done) and the memory latency it returned.
  struct Read {
    uint64_t dram_done_cycle = 0;
    uint64_t latency_cycles = 0;
  };

  /// Core `core`'s resolved dma_mc (its `cores` = n >= 1 is the set size): takes the oldest read
  /// of core's set with the same operands that this core has not taken (true, *read set), else
  /// false. A read every member has taken is dropped.
  bool take(int core, const isa::DmaArgs& resolved, Read* read);
  /// Records the read core `core` made for its set (not recorded for a set of one core).
  void add(int core, const isa::DmaArgs& resolved, const Read& read);
  /// Drops every pending read (at a core barrier).
  void clear() { sets_.clear(); }

 private:
  struct Pending {
    isa::DmaArgs args;
    Read read;
    std::vector<bool> taken;  // per member (core - set base)
    uint32_t left = 0;        // members that have not taken it
  };
  // (set base core, set size) -> pending reads, oldest first.
  std::map<std::pair<int, uint32_t>, std::vector<Pending>> sets_;
};

}  // namespace tessel::sim
