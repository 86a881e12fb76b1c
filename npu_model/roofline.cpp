// Multi-resource roofline (see roofline.h).
#include "npu_model/roofline.h"

#include <algorithm>

namespace tessel::npu {

Roofline roofline(const HwConfig& hw, const OpWork& w) {
  const double cores = static_cast<double>(std::max(hw.cores, 1));
  const auto& c = hw.core;
  Roofline r;
  r.cube = w.cube_fractals / cores;
  r.vector = w.vector_bytes / (c.vector.width_bytes * cores);
  r.mte1 = w.mte1_bytes / (c.mte1.bytes_per_cycle * cores);
  r.mte2 = w.gm_read_bytes / (c.mte2.bytes_per_cycle * cores);
  r.fix = w.fix_bytes / (c.fix.bytes_per_cycle * cores);
  r.mte3 = w.gm_write_bytes / (c.mte3.bytes_per_cycle * cores);
  r.dram = (w.gm_read_bytes + w.gm_write_bytes) / hw.dram.bytes_per_cycle;
  if (hw.l2.enabled()) {
    // Every GM byte passes through the L2 banks; DRAM must move at least the reads that were not
    // resident when the op started and the writes that no longer fit when it ends.
    const double cap = static_cast<double>(hw.l2.capacity_bytes);
    r.l2 = (w.gm_read_bytes + w.gm_write_bytes) /
           (static_cast<double>(hw.l2.banks) * hw.l2.bytes_per_cycle);
    r.dram = (std::max(0.0, w.gm_read_bytes - cap) + std::max(0.0, w.gm_write_bytes - cap)) /
             hw.dram.bytes_per_cycle;
  }
  const std::pair<double, const char*> units[] = {
      {r.cube, "cube"}, {r.vector, "vector"}, {r.mte1, "mte1"}, {r.mte2, "mte2"},
      {r.fix, "fix"},   {r.mte3, "mte3"},     {r.l2, "l2"},     {r.dram, "dram"}};
  r.cycles = 1;
  r.bound = "none";
  for (const auto& [v, name] : units)
    if (v > r.cycles) {
      r.cycles = v;
      r.bound = name;
    }
  return r;
}

}  // namespace tessel::npu
