// The NPU cycle model: a SystemC/TLM-2.0 simulation of an isa::Program on a HwConfig.
//
// Event-driven at instruction granularity: per core a scalar-unit process fetches and dispatches,
// one process per pipe executes its queue in order, flags/barriers synchronise, DMA engines reach
// a shared DRAM model through TLM-2.0 b_transport with bandwidth arbitration by next-free-time.
// Functional mode executes every instruction's semantics (isa/semantics.h) on real scratchpad and
// GM bytes; timing-only mode skips the arithmetic but keeps control flow (scalar registers).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "isa/isa.h"
#include "npu_model/area_energy.h"
#include "npu_model/hw_config.h"

namespace tessel::sim {

struct SimOptions {
  bool functional = true;   // false: timing-only (data is not computed)
  std::string trace_path;   // when set, write a Chrome/Perfetto trace JSON there
  uint64_t max_cycles = 0;  // 0: unlimited; otherwise stop with tessel::Error when exceeded
  /// Timing-only runs whose caller never reads or writes GM contents (e.g. the compiler's
  /// measured tile selection): load() checks the buffers but builds no GM image, so a short
  /// kernel of a large model does not pay for zero-filling the model's whole GM, and skips the
  /// memory.dram.capacity_bytes check (such a run measures one kernel; the caller checks the
  /// whole program's GM need, e.g. driver::compile_for_npu). Ignored when `functional`;
  /// write_gm/read_gm then fail.
  bool skip_gm_image = false;
  /// When set, write every DRAM request there (docs/memory.md, "--dram-trace"): one line per
  /// request, written whole or not at all. (Last: positional SimOptions{...} stay valid.)
  std::string dram_trace_path;
};

/// Per-unit statistics. For a pipe: busy_cycles = sum of the occupancy of its data instructions
/// (set_flag / wait_flag add nothing: draining and waiting is not work), instructions = dynamic
/// count of everything it executed (sync included). For the scalar unit (index isa::Pipe::scalar):
/// instructions = those it executes itself (li .. jmp, barrier, core_barrier), busy_cycles =
/// c_s x every instruction it fetched (issue work; stalls excluded).
struct PipeStats {
  uint64_t busy_cycles = 0;   // sum of occupancy cycles of its instructions
  uint64_t instructions = 0;  // executed (dynamic) instructions
};

struct CoreStats {
  std::array<PipeStats, isa::kNumPipes> pipes{};       // indexed by isa::Pipe
  std::array<uint64_t, isa::kNumScopes> bytes_read{};  // by isa::Scope
  std::array<uint64_t, isa::kNumScopes> bytes_written{};
  /// Cube MACs, vector element operations by class and dtype, bytes each pipe delivered: what the
  /// area and energy model prices (npu::count_ops per executed data instruction).
  npu::OpCounts ops;
  uint64_t finish_cycle = 0;  // when this core's last instruction completed
};

/// Counters of one DRAM channel over a run. Bytes are burst bytes (reads + writes add up to
/// SimResult::dram_burst_bytes over the channels). The simple model has one channel; it counts
/// transfers as requests and no row-buffer events. The banked model (simulator/dram_banked.h)
/// counts bursts: a row hit finds its row open, a row miss finds the bank precharged (ACT), a
/// bank conflict finds another row open (PRE + ACT); refresh_stall_cycles sums over requests the
/// NPU cycles a refresh delayed them.
struct DramChannelStats {
  uint64_t read_bytes = 0, write_bytes = 0;
  uint64_t requests = 0;
  uint64_t row_hits = 0, row_misses = 0, bank_conflicts = 0;
  uint64_t activates = 0, precharges = 0, refreshes = 0;
  uint64_t refresh_stall_cycles = 0;
  uint64_t busy_cycles = 0;  // NPU cycles the channel's data bus moved data
};

/// Shared-L2 statistics of one run (memory.l2; all zero when the config has no L2). A line is
/// counted once per request that touches it. Bytes: read/write = the GM bytes of the dma requests
/// (npu::dma_gm_bytes), fill = whole lines DRAM delivered into L2 on misses, writeback = dirty
/// lines L2 wrote to DRAM on eviction (write_back) or the forwarded writes (write_through).
struct L2Stats {
  uint64_t requests = 0;      // dma transactions L2 served
  uint64_t hit_requests = 0;  // ... every line of which was resident
  uint64_t read_hit_lines = 0, read_miss_lines = 0;
  uint64_t write_hit_lines = 0, write_miss_lines = 0;
  uint64_t read_bytes = 0, write_bytes = 0;
  uint64_t fill_bytes = 0, writeback_bytes = 0;
  uint64_t dirty_bytes_at_end = 0;  // dirty lines still in L2 when the run ended (not flushed)
  // Placement hints (l2_prefetch, l2_discard; memory.l2.placement). fill_bytes includes
  // prefetch_fill_bytes; the requests above do not count the hints.
  uint64_t prefetch_requests = 0;       // l2_prefetch instructions received
  uint64_t prefetch_bytes = 0;          // GM bytes they asked for
  uint64_t prefetch_fill_bytes = 0;     // lines the background fills brought from DRAM
  uint64_t prefetch_used_lines = 0;     // demand read lines that hit on a prefetched line
  uint64_t prefetch_dropped_bytes = 0;  // asked for but not fetched when the run ended
  uint64_t discard_requests = 0;        // l2_discard instructions received
  uint64_t discarded_bytes = 0;         // resident lines dropped
  uint64_t discarded_dirty_bytes = 0;   // ... of them dirty: write-backs that never happen
  bool operator==(const L2Stats&) const = default;
};

/// Multicast statistics (dma_mc, docs/isa.md): a member's request either reads GM (a "leader",
/// its data delivered to every core of its set) or receives a read another member made.
struct MulticastStats {
  uint64_t requests = 0;     // dma_mc instructions executed, all cores
  uint64_t received = 0;     // ... served by another member's read (no memory access)
  uint64_t saved_bytes = 0;  // GM bytes of the received ones (reads not made)
  bool operator==(const MulticastStats&) const = default;
};

/// The RTL cube's lockstep checks (core.cube.model: rtl, docs/rtl.md): each int8 mmad the
/// verilated cube executed, its L0C result compared bit for bit with isa/semantics' mmad and its
/// cycles (completion - issue) with npu::instruction_cost's occupancy + latency. A mismatch fails
/// the run, so a finished run has value_mismatches = cycle_mismatches = 0; they count what a
/// failing run had seen when it stopped.
struct RtlStats {
  bool enabled = false;           // core.cube.model is rtl
  uint64_t mmad_checked = 0;      // int8 mmads the RTL executed and the checks compared
  uint64_t value_mismatches = 0;  // ... whose L0C bytes differed from isa/semantics
  uint64_t cycle_mismatches = 0;  // ... whose cycles differed from instruction_cost
  uint64_t max_cycle_error = 0;   // largest |RTL cycles - instruction_cost cycles|
  uint64_t float_mmads = 0;       // float-mode mmads (no RTL: transaction-level)
  uint64_t unsampled_mmads = 0;   // int8 mmads beyond core.cube.rtl_sample (transaction-level)
  uint64_t rtl_cycles = 0;        // clock edges the RTL cubes simulated, all cores (gated clock)
  bool operator==(const RtlStats&) const = default;
};

/// The banked DRAM's row-buffer outcomes of one op's requests (SimResult::op_dram).
struct OpDramStats {
  uint64_t requests = 0, row_hits = 0, row_misses = 0, bank_conflicts = 0;
};

/// The statistics of one run. Cycles are core cycles from 0. Bytes per scope (CoreStats) count
/// what each instruction reads/writes (npu::scope_traffic, see npu_model/timing.h); DRAM bytes are
/// the GM bytes of every dma (npu::dma_gm_bytes): read = GM -> core, write = core -> GM. With an
/// L2 (memory.l2) they are what DRAM itself moved: L2's line fills (read) and its write-backs or
/// forwarded writes (write); the dma requests' own bytes are in `l2`.
/// total_cycles = max over cores of finish_cycle.
struct SimResult {
  uint64_t total_cycles = 0;
  uint64_t instructions = 0;  // dynamic, all cores, all pipes incl. scalar
  uint64_t dram_read_bytes = 0;
  uint64_t dram_write_bytes = 0;
  /// Bytes the DRAM channel was busy moving: every dma's GM access rounded to the aligned blocks
  /// of memory.dram.burst_bytes it touches (npu::dma_gm_burst_bytes), reads and writes together.
  /// Equals dram_read_bytes + dram_write_bytes when burst_bytes is 1.
  uint64_t dram_burst_bytes = 0;
  std::string dram_model = "simple";            // memory.dram.model
  std::vector<DramChannelStats> dram_channels;  // per channel
  L2Stats l2;                                   // zero without memory.l2
  MulticastStats multicast;                     // zero without dma_mc
  RtlStats rtl;                                 // core.cube.model: rtl only
  std::vector<CoreStats> cores;
  std::vector<uint64_t> op_cycles;  // per op_index: cycles from its first start to last completion
                                    // of its pipe instructions (0 if it has none); sized
                                    // max(program.op_names.size(), max op_index + 1)
  double host_seconds = 0;          // wall-clock time of run()
  /// Per op_index (sized as op_cycles): busy cycles of each pipe (indexed by isa::Pipe) summed
  /// over cores, counted as PipeStats::busy_cycles (data instructions' occupancy; the scalar entry
  /// stays 0: fetch work is not attributed to ops).
  std::vector<std::array<uint64_t, isa::kNumPipes>> op_busy_cycles;
  /// Per op_index (sized as op_cycles): the banked DRAM's requests and their row-buffer outcomes
  /// (all zero with the simple model).
  std::vector<OpDramStats> op_dram;
};

/// Owns the GM image and runs programs. Each run() builds a fresh SystemC context, so many
/// simulations can run in one process (sequentially; one Simulator at a time per thread, SystemC
/// keeps its kernel in globals). Time: 1 SystemC time unit (resolution 1 ns) = 1 core cycle.
/// Programs may have fewer streams than hw.cores (the other cores stay idle), not more.
class Simulator {
 public:
  Simulator(const npu::HwConfig& hw, SimOptions options = {});

  /// Loads the program (copied; `program` need not outlive this): sizes GM to program.gm_bytes
  /// (zero-filled) and writes every constant buffer's init bytes. Throws tessel::Error if it
  /// does not fit the configured DRAM capacity (when hw.dram.capacity_bytes > 0 and not
  /// skip_gm_image), has more cores than hw.cores, or a buffer lies outside GM.
  void load(const isa::Program& program);
  /// The same, taking the program over (no copy of its instruction streams).
  void load(isa::Program&& program);
  /// The same, sharing an immutable program (no copy): a program simulated many times, or on
  /// many configs, is held once (at 1,024 cores a kernel's streams are tens of MB; copying them
  /// per run cost more than a tenth of the run, docs/results.md "Scale with cores"). Throws
  /// tessel::Error for a null pointer.
  void load(std::shared_ptr<const isa::Program> program);
  /// Writes/reads raw bytes of GM (e.g. inputs before run(), outputs after). Throws tessel::Error
  /// for a range outside GM.
  void write_gm(uint64_t address, const void* data, uint64_t bytes);
  void read_gm(uint64_t address, void* data, uint64_t bytes) const;

  /// Runs the loaded program to completion. Throws tessel::Error on: deadlock (names the core,
  /// pipe, instruction and the flag it waits on), a scratchpad or GM access out of bounds (names
  /// the instruction and the buffer size), exceeding max_cycles. GM keeps the results (functional
  /// mode); running again starts from the GM as left by the previous run.
  SimResult run();

  /// The current GM image.
  const std::vector<uint8_t>& gm() const { return gm_; }
  const SimOptions& options() const { return options_; }
  void set_options(const SimOptions& options) { options_ = options; }

 private:
  /// load's checks and the GM image (gm_, gm_bytes_) of `program`.
  void load_image(const isa::Program& program);

  npu::HwConfig hw_;
  SimOptions options_;
  std::shared_ptr<const isa::Program> program_;  // the loaded program (null before load)
  std::vector<uint8_t> gm_;
  uint64_t gm_bytes_ = 0;  // the loaded program's GM size (gm_.size() unless skip_gm_image)
};

}  // namespace tessel::sim
