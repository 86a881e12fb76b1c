// The analytical cost model of one NPU kernel: a schedule-aware roofline. The roofline
// (roofline.h) bounds an op by its tiling-independent work per unit; this model takes what a
// given schedule really issues -- every instruction of a tile, priced by instruction_cost()
// (timing.h, the formulas the simulator uses), the DRAM bytes including re-reads and whole
// bursts, the tiles of the busiest core -- and adds what a tile pipeline exposes: the latency a
// GM transfer holds its pipe (a set_flag after a dma waits for the data, docs/isa.md), the fill
// of the first tile and the loads outside the pipelined loop. Every tiling pass (tile_cube for
// convolution and matmul, tile_vector) describes its points this way, so one model ranks every
// kernel kind; the tuner's analytical oracle is this model, and its per-pipe terms are features of
// the learned one. The simulator adds what only it sees (queueing, contention, exact overlap).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "isa/isa.h"
#include "npu_model/hw_config.h"
#include "npu_model/timing.h"

namespace tessel::npu {

/// One instruction shape of a kernel with how often the busiest core issues it, priced once.
struct InstrUse {
  isa::Pipe pipe = isa::Pipe::scalar;
  double occupancy_cycles = 0;  // instruction_cost occupancy; a GM dma at least its DRAM transfer
  double latency_cycles = 0;    // instruction_cost latency (+ dram.latency_cycles for a GM dma)
  double dram_bytes = 0;        // burst-rounded GM bytes of one instruction (0 off GM)
  double per_tile = 0;          // times per tile iteration
  double per_core = 0;          // times outside the pipelined tile loop (exposed: nothing overlaps)
  bool flagged = false;         // a set_flag follows it: its pipe is held for its latency as well
  /// Which set_flag of its pipe waits for it (flagged uses): uses of one pipe with the same group
  /// and count per tile are issued back to back behind one set_flag, which holds the pipe for
  /// their largest latency once; different groups are different set_flags, each holding the
  /// pipe (insert_sync places one per consumer it cannot merge, docs/isa.md). -1: grouped by
  /// count per tile alone.
  int flag_group = -1;

  /// instruction_cost occupancy alone (for a GM dma: before the DRAM transfer's floor), so that a
  /// sweep's screening (compiler/dse/screen.h) can re-price the transfer for another channel.
  double pipe_occupancy_cycles = 0;
};

/// What the busiest core of a kernel executes: a pipelined loop of `tiles` iterations of the
/// per-tile instructions, plus exposed per-core work. Built with add() from real instructions.
struct KernelProfile {
  std::vector<InstrUse> uses;
  double tiles = 1;            // tile iterations of the busiest core (>= 1)
  double steps_per_tile = 1;   // pipelined steps a tile's instructions come in (its K chunks)
  double dram_bytes = 0;       // bytes the shared DRAM channel moves for the kernel, all cores
  double scalar_per_tile = 0;  // scalar-unit instructions per tile besides the pipe instructions
  bool double_buffer = true;   // a tile's transfers overlap the previous tile's compute
  int cores_used = 1;          // cores that execute tiles (the others only meet the barrier)

  /// Prices `in` with instruction_cost on `hw` and appends it: `per_tile` times per tile and
  /// `per_core` times outside the tile loop; `flagged`: a set_flag waits for its completion (GM
  /// loads and stores whose consumer or next writer is on another pipe). A dma touching GM costs
  /// at least the DRAM transfer of its burst-rounded bytes (dma_gm_burst_bytes at an aligned
  /// address) and its latency includes dram.latency_cycles.
  void add(const HwConfig& hw, const isa::Instruction& in, double per_tile, double per_core = 0,
           bool flagged = false, int flag_group = -1);
};

/// The estimate and its terms (all in core cycles).
struct CostEstimate {
  double cycles = 0;                          // the estimate: max(core_cycles, dram_cycles)
  double core_cycles = 0;                     // the busiest core's pipeline
  double dram_cycles = 0;                     // the shared DRAM channel (+ the first tile's chain)
  double chain_cycles = 0;                    // one tile's dependence chain, step after step
  double steady_tile_cycles = 0;              // one tile in steady state
  double fill_cycles = 0;                     // core_cycles beyond tiles x steady and exposed
  double exposed_cycles = 0;                  // per-core work outside the tile loop
  std::array<double, isa::kNumPipes> busy{};  // per pipe, busiest core (scalar: issue work)
  const char* bound = "";  // what sets `cycles`: a pipe name, "dram" or "latency"
};

/// The model (docs/architecture.md, "The analytical cost model"). A use's occupancy is its
/// instruction_cost occupancy plus, for a GM transfer of a kernel on c = cores_used cores, the
/// wait for (c - 1) / 2 of the other cores' same transfers in the FIFO channel, weighted by the
/// channel's utilisation u (the cores run the same code and issue together while the channel is
/// busy): (c - 1) / 2 x u x ceil(dram_bytes / dram.bytes_per_cycle), u = min(1,
/// dram_transfer_cycles(dram_bytes) / core_cycles of the estimate without the wait).
/// Per tile, pipe p is busy T_p = sum over uses of per_tile x occupancy, plus for its flagged
/// uses one latency per set_flag: the flagged uses of a pipe with the same flag_group and
/// per_tile count are issued together behind one set_flag (the GM loads of a K step), which
/// holds the pipe until the last of them completes, so each group adds per_tile x its largest
/// latency (the simulator frees a pipe after an instruction's occupancy: the latencies of
/// back-to-back instructions overlap, simulator/core.cpp). The scalar unit issues every
/// instruction and scalar_per_tile more at core.scalar.cycles_per_instruction: T_scalar. A tile
/// comes in S = steps_per_tile steps (its K chunks); a use issued at least S times per tile is a
/// step use, the others (the epilogue) tile uses. L = sum over pipes of the largest latency of
/// the pipe's step uses (each step pays each pipe's latency once), E = the same over tile uses
/// (once per tile); with O the sum over uses of per_tile x occupancy and X = max(0, T_scalar -
/// the largest per-pipe occupancy) (issue work the pipes cannot hide), the tile's chain is C = O
/// + X + S x L + E and one step's c = (O + X) / S + L + E. With double buffering a tile takes
/// steady = max(max_p T_p, C / 2) (the step i+2 reuses step i's buffers) and core_cycles = tiles
/// x steady + max(0, c - steady / S) (the first step's chain, then every further step) +
/// exposed; without it steady = max(max_p T_p, C) and core_cycles = tiles x steady + exposed
/// (one tile after another), where exposed = sum of per_core x (occupancy + latency).
/// dram_cycles = dram_transfer_cycles(dram_bytes) + max(0, c - G / S), G the GM transfers'
/// occupancy per tile (the first step's chain apart from what the channel time counts).
/// cycles = max(core_cycles, dram_cycles).
CostEstimate estimate_kernel(const HwConfig& hw, const KernelProfile& profile);

}  // namespace tessel::npu
