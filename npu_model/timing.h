// Per-instruction timing formulas. They live here once and are used by the SystemC simulator and by
// the analytical cost model; docs/isa.md states each formula.
//
// Every pipe instruction has an occupancy (cycles the pipe is busy and cannot start the next
// instruction) and a latency (cycles after the occupancy until its results are visible). For dma
// instructions that touch GM these are the engine-side numbers only: the simulator adds DRAM
// arbitration (shared bandwidth, next-free-time) and DRAM latency, see simulator/dram.h.
#pragma once

#include <cstdint>

#include "isa/isa.h"
#include "npu_model/hw_config.h"

namespace tessel::npu {

struct InstrCost {
  uint64_t occupancy_cycles = 0;  // pipe busy time, >= 1 for every pipe instruction
  uint64_t latency_cycles = 0;    // extra cycles until the result is visible
  uint64_t bytes_read = 0;        // bytes read from the source scope(s)
  uint64_t bytes_written = 0;     // bytes written to the destination scope
};

/// The cost of one dispatched pipe instruction on `hw` (scalar-unit instructions cost
/// hw.core.scalar.cycles_per_instruction and have no pipe cost; sync instructions cost 0 here).
/// Throws tessel::InternalError for an instruction whose operands are inconsistent.
InstrCost instruction_cost(const HwConfig& hw, const isa::Instruction& instr);

/// Bytes of GM traffic of a dma instruction (valid, non-padded elements only).
uint64_t dma_gm_bytes(const isa::DmaArgs& dma);

}  // namespace tessel::npu
