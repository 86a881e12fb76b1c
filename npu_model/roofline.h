// Multi-resource roofline of the NPU (after Williams et al., "Roofline: an insightful visual
// performance model", CACM 2009, extended to every unit and data path of the core): the lower bound
// on an op's cycles is the largest of (work / throughput) over the units it needs.
#pragma once

#include <cstdint>
#include <string>

#include "npu_model/hw_config.h"

namespace tessel::npu {

/// The work an op needs, independent of how it is tiled (every quantity counted once).
struct OpWork {
  double cube_macs = 0;        // multiply-accumulates on the cube (unpadded)
  double cube_fractals = 0;    // m x k x n fractal operations after padding to the fractal shape
  double vector_bytes = 0;     // bytes the vector unit must stream (one pass per arithmetic op)
  double mte1_bytes = 0;       // bytes written to L0A/L0B (each operand element once, padded)
  double fix_bytes = 0;        // accumulator bytes read from L0C (each output once, padded)
  double gm_read_bytes = 0;    // bytes read from GM (each input and weight once)
  double gm_write_bytes = 0;   // bytes written to GM (each output once)
};

/// Lower-bound cycles per unit and overall, for all cores of `hw` working on the op.
struct Roofline {
  double cube = 0, vector = 0, mte1 = 0, mte2 = 0, fix = 0, mte3 = 0, dram = 0;
  double l2 = 0;       // 0 without memory.l2
  double cycles = 0;   // max of the above (at least 1)
  std::string bound;   // the unit that sets `cycles`: "cube", "vector", "mte1", "mte2", "fix",
                       // "mte3", "l2", "dram"
};

/// cube = fractals / cores; vector = vector_bytes / (width_bytes * cores); mte1 = mte1_bytes /
/// (mte1.bytes_per_cycle * cores); mte2 = gm_read_bytes / (mte2.bytes_per_cycle * cores); fix =
/// fix_bytes / (fix.bytes_per_cycle * cores); mte3 = gm_write_bytes / (mte3.bytes_per_cycle *
/// cores); dram = (gm_read_bytes + gm_write_bytes) / dram.bytes_per_cycle (one shared channel).
/// With an L2 (memory.l2, capacity C): l2 = (gm_read_bytes + gm_write_bytes) / (l2.banks *
/// l2.bytes_per_cycle), and dram = (max(0, gm_read_bytes - C) + max(0, gm_write_bytes - C)) /
/// dram.bytes_per_cycle: at most C of the reads can be resident when the op starts and at most C
/// of the writes can stay in L2 when it ends (each byte counted once, as above).
/// Latencies are not included: the bound is what throughput alone allows.
Roofline roofline(const HwConfig& hw, const OpWork& work);

}  // namespace tessel::npu
