// The analytical kernel cost model (see cost_model.h).
#include "npu_model/cost_model.h"

#include <algorithm>
#include <cmath>

#include "isa/isa.h"

namespace tessel::npu {

void KernelProfile::add(const HwConfig& hw, const isa::Instruction& in, double per_tile,
                        double per_core, bool flagged, int flag_group) {
  InstrUse u;
  u.pipe = in.pipe();
  const InstrCost c = instruction_cost(hw, in);
  u.occupancy_cycles = static_cast<double>(c.occupancy_cycles);
  u.pipe_occupancy_cycles = u.occupancy_cycles;
  u.latency_cycles = static_cast<double>(c.latency_cycles);
  if (in.op == isa::Opcode::dma || in.op == isa::Opcode::dma_mc) {
    const auto& d = std::get<isa::DmaArgs>(in.args);
    if (d.src.scope == isa::Scope::gm || d.dst.scope == isa::Scope::gm) {
      isa::DmaArgs aligned = d;  // at an aligned GM address: the fewest bursts its runs touch
      (d.src.scope == isa::Scope::gm ? aligned.src : aligned.dst).offset = 0;
      u.dram_bytes = static_cast<double>(dma_gm_burst_bytes(hw, aligned));
      u.occupancy_cycles = std::max(
          u.occupancy_cycles,
          static_cast<double>(dram_transfer_cycles(hw, static_cast<uint64_t>(u.dram_bytes))));
      u.latency_cycles += hw.dram.latency_cycles;
    }
  }
  u.per_tile = per_tile;
  u.per_core = per_core;
  u.flagged = flagged;
  u.flag_group = flag_group;
  uses.push_back(u);
}

namespace {

/// The estimate with every GM transfer waiting `wait_share` x its own channel time for the
/// other cores' transfers (estimate_kernel picks the share).
CostEstimate estimate_with(const HwConfig& hw, const KernelProfile& p, double wait_share) {
  CostEstimate e;
  std::array<double, isa::kNumPipes> per_tile{}, pipe_occupancy{};
  double issued = p.scalar_per_tile, exposed_issue = 0, occupancy = 0, gm_occupancy = 0;
  const double steps = std::max(1.0, p.steps_per_tile);
  // The latencies a tile exposes, as the simulator overlaps them (simulator/core.cpp): a pipe is
  // free again after an instruction's occupancy, so the latencies of back-to-back instructions on
  // one pipe overlap, and a set_flag waits only for the last completion. Per pipe: the largest
  // latency of its per-step uses (those issued at least once per K step) and of its per-tile
  // uses (the epilogue, issued fewer times than there are steps); per pipe and count per tile, a
  // group of flagged uses issued together behind one set_flag holds the pipe for its largest
  // latency once per issue.
  std::array<double, isa::kNumPipes> step_latency{}, tile_latency{};
  struct FlagGroup {
    int pipe, group;
    double per_tile, latency;
  };
  std::array<FlagGroup, 16> groups;
  int ngroups = 0;
  const double sharing = wait_share;
  const double channel_bytes_per_cycle = std::max(1, hw.dram.bytes_per_cycle);
  for (const InstrUse& u : p.uses) {
    const int pipe = static_cast<int>(u.pipe);
    const double occ =
        u.occupancy_cycles +
        (u.dram_bytes > 0 ? sharing * std::ceil(u.dram_bytes / channel_bytes_per_cycle) : 0.0);
    per_tile[pipe] += u.per_tile * occ;
    pipe_occupancy[pipe] += u.per_tile * occ;
    if (u.dram_bytes > 0) gm_occupancy += u.per_tile * occ;
    if (u.per_tile > 0) {
      occupancy += u.per_tile * occ;
      double& l = u.per_tile >= steps ? step_latency[pipe] : tile_latency[pipe];
      l = std::max(l, u.latency_cycles);
      if (u.flagged) {
        int g = 0;
        while (g < ngroups && !(groups[g].pipe == pipe && groups[g].group == u.flag_group &&
                                groups[g].per_tile == u.per_tile))
          ++g;
        if (g == ngroups && ngroups < static_cast<int>(groups.size()))
          groups[ngroups++] = {pipe, u.flag_group, u.per_tile, 0.0};
        if (g < ngroups)
          groups[g].latency = std::max(groups[g].latency, u.latency_cycles);
        else
          per_tile[pipe] += u.per_tile * u.latency_cycles;  // more groups than kept: each alone
      }
    }
    e.exposed_cycles += u.per_core * (occ + u.latency_cycles);
    e.busy[pipe] += u.per_core * occ;
    issued += u.per_tile;
    exposed_issue += u.per_core;
  }
  for (int g = 0; g < ngroups; ++g)
    per_tile[groups[g].pipe] += groups[g].per_tile * groups[g].latency;
  double latency = 0, tile_tail = 0;
  for (int q = 0; q < isa::kNumPipes; ++q) {
    latency += step_latency[q];
    tile_tail += tile_latency[q];
  }
  const double cs = std::max(1, hw.core.scalar.cycles_per_instruction);
  const int scalar_pipe = static_cast<int>(isa::Pipe::scalar);
  per_tile[scalar_pipe] = issued * cs;
  // The scalar unit issues a tile's instructions in order: where its issue work exceeds every
  // pipe's occupancy (loop and address instructions around short vector instructions), the
  // chain waits for it beyond the busiest pipe's occupancy it overlaps.
  double widest_occupancy = 0;
  for (int q = 0; q < isa::kNumPipes; ++q)
    if (q != scalar_pipe) widest_occupancy = std::max(widest_occupancy, pipe_occupancy[q]);
  const double issue_excess = std::max(0.0, per_tile[scalar_pipe] - widest_occupancy);
  const double step_chain = (occupancy + issue_excess) / steps + latency + tile_tail;
  e.chain_cycles = occupancy + issue_excess + steps * latency + tile_tail;
  const double tiles = std::max(1.0, p.tiles);
  double steady = 0;
  int busiest = scalar_pipe;
  for (int q = 0; q < isa::kNumPipes; ++q) {
    e.busy[q] += tiles * per_tile[q];
    if (per_tile[q] > per_tile[busiest]) busiest = q;
  }
  e.busy[scalar_pipe] += exposed_issue * cs;
  const char* bound = isa::pipe_name(static_cast<isa::Pipe>(busiest));
  // Pipelined (double buffering): the first step's chain, then every further step in its share
  // of the steady tile. Single-buffered: each tile's chain in turn, nothing overlapped (no fill
  // on top: the first tile is one of the `tiles`).
  double fill = 0;
  if (p.double_buffer) {
    steady = per_tile[busiest];
    if (e.chain_cycles / 2 > steady) {
      steady = e.chain_cycles / 2;
      bound = "latency";
    }
    fill = std::max(0.0, step_chain - steady / steps);
  } else {
    steady = std::max(e.chain_cycles, per_tile[busiest]);
    bound = "latency";
  }
  e.steady_tile_cycles = steady;
  e.fill_cycles = fill;
  e.core_cycles = tiles * steady + fill + e.exposed_cycles;
  // The channel moves every core's bytes; what it cannot overlap is the first step's chain
  // apart from that step's own GM transfers (already counted in the channel's time).
  e.dram_cycles =
      static_cast<double>(dram_transfer_cycles(hw, static_cast<uint64_t>(p.dram_bytes))) +
      std::max(0.0, step_chain - gm_occupancy / steps);
  e.cycles = std::max(e.core_cycles, e.dram_cycles);
  e.bound = e.dram_cycles > e.core_cycles ? "dram" : bound;
  return e;
}

}  // namespace

CostEstimate estimate_kernel(const HwConfig& hw, const KernelProfile& p) {
  // A kernel split over c cores runs the same code on each, so their GM transfers reach the FIFO
  // channel (simulator/dram.cpp serves requests in arrival order) together while it is busy: a
  // transfer waits for (c - 1) / 2 of the others' on average, weighted by the channel's
  // utilisation without that wait (its time over the pipeline's: an idle channel lets the cores
  // drift apart, a saturated one keeps them queued), which holds its pipe that much longer.
  if (p.cores_used <= 1 || p.dram_bytes <= 0) return estimate_with(hw, p, 0);
  const CostEstimate alone = estimate_with(hw, p, 0);
  const double channel =
      static_cast<double>(dram_transfer_cycles(hw, static_cast<uint64_t>(p.dram_bytes)));
  const double utilisation = std::min(1.0, channel / std::max(1.0, alone.core_cycles));
  return estimate_with(hw, p, (p.cores_used - 1) / 2.0 * utilisation);
}

}  // namespace tessel::npu
