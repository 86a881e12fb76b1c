// Per-instruction timing formulas. They live here once and are used by the SystemC simulator and by
// the analytical cost model; docs/isa.md states each formula.
//
// Every pipe instruction has an occupancy (cycles the pipe is busy and cannot start the next
// instruction) and a latency (cycles after the occupancy until its results are visible). For dma
// instructions that touch GM these are the engine-side numbers only: the simulator adds DRAM
// arbitration (shared bandwidth, next-free-time) and DRAM latency, see simulator/dram.h.
#pragma once

#include <array>
#include <cstdint>
#include <functional>

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
/// hw.core.scalar.cycles_per_instruction and have no pipe cost; lbu, the scalar load, costs that
/// plus latency dram.latency_cycles, the scalar unit's wait for the byte; sync instructions cost 0
/// here).
/// Formulas: docs/isa.md, Timing. Every data instruction occupies its pipe at least 1 cycle. For a
/// dma touching GM the result is the engine side only: occupancy ceil(B / mte.bytes_per_cycle) and
/// latency mte.latency_cycles; the simulator takes max(occupancy, dram_done - start) and adds
/// dram.latency_cycles. bytes_read / bytes_written are the totals of scope_traffic().
/// Throws tessel::InternalError for an instruction whose operands are inconsistent (operand struct
/// not matching the opcode), tessel::Error for an illegal scope (e.g. load2d into UB).
InstrCost instruction_cost(const HwConfig& hw, const isa::Instruction& instr);

/// Bytes of GM traffic of a dma instruction: for a load (src gm) the valid, non-padded elements
/// only (padding reads nothing); for a store (dst gm) every element written, padding included
/// (padded elements write pad_value to GM). 0 when neither operand is in GM.
uint64_t dma_gm_bytes(const isa::DmaArgs& dma);

/// DRAM bytes a dma costs with burst-granular access (docs/isa.md, Timing, "DRAM"): the bytes of
/// the aligned blocks of B = hw.dram.burst_bytes that its GM accesses touch. The GM access (load:
/// valid elements only; store: every element) is split into maximal contiguous runs: starting at
/// the innermost dimension, which must have GM stride 1 (otherwise every element is its own run),
/// outer dimensions are merged while their GM stride equals the product of the inner accessed
/// extents (dimensions with one accessed index are skipped). A run at GM byte address a of L bytes
/// touches floor((a + L - 1) / B) - floor(a / B) + 1 blocks; the result is B times the sum over
/// runs. `resolved` must have absolute addresses (isa::resolve): the GM operand's offset is the
/// byte address of element 0. With B = 1 the result equals dma_gm_bytes(). 0 when neither operand
/// is in GM. Cost: one pass over the runs; the runs of the innermost iterated dimension are summed
/// over one period of their address modulo B, so there is no per-element work and no allocation.
/// Throws tessel::Error if hw.dram.burst_bytes is not a power of two in [1, 4096] (a config that
/// was not validated), tessel::InternalError if ndims is out of range.
uint64_t dma_gm_burst_bytes(const HwConfig& hw, const isa::DmaArgs& resolved);

/// Calls fn(address, bytes) for every maximal contiguous GM run of a dma (the runs
/// dma_gm_burst_bytes rounds to bursts), in the descriptor's order (outer dimensions slowest).
/// Nothing when neither operand is in GM or nothing is accessed. `resolved` as for
/// dma_gm_burst_bytes. Used by the banked DRAM model and --dram-trace (one call per run).
void for_each_gm_run(const isa::DmaArgs& resolved,
                     const std::function<void(uint64_t address, uint64_t bytes)>& fn);

/// Cycles the shared DRAM channel is busy serving `gm_bytes`: ceil(gm_bytes / dram.bytes_per_cycle)
/// (docs/isa.md, Timing). The simulator passes the burst-rounded bytes (dma_gm_burst_bytes). DRAM
/// latency (dram.latency_cycles) comes on top of the completion.
uint64_t dram_transfer_cycles(const HwConfig& hw, uint64_t gm_bytes);

/// Bytes one instruction reads and writes in each scope, indexed by isa::Scope:
///  dma: src = valid elements (GM: dma_gm_bytes), dst = every element written incl. padding;
///  load2d: L1 rows*cols elements, L0A/L0B the padded fractal bytes W;
///  img2col: L1 the in-bounds elements of the im2col matrix, L0A/L0B the padded fractal bytes W;
///  mmad: L0A, L0B whole fractals, L0C read (when accumulating) and written;
///  fix: L0C the padded accumulator bytes R, UB m*n elements;
///  vector: every used source operand repeat*count elements (vmla also reads dst), dst
///  repeat*count elements (reductions: repeat). Scalar and sync instructions move nothing.
struct ScopeTraffic {
  std::array<uint64_t, isa::kNumScopes> read{}, written{};
};
ScopeTraffic scope_traffic(const HwConfig& hw, const isa::Instruction& instr);

}  // namespace tessel::npu
