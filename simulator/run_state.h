// State shared by the SystemC modules of one simulation run (one Simulator::run()): the inputs,
// the statistics being accumulated, the trace, and the first error raised inside a process.
#pragma once

#include <cstdint>
#include <exception>
#include <vector>

#include "isa/isa.h"
#include "npu_model/hw_config.h"
#include "simulator/method_kernel.h"
#include "simulator/multicast.h"
#include "simulator/simulator.h"

namespace tessel::sim {

/// One "X" event of the Chrome trace: an instruction's busy interval on its pipe, or (pipe ==
/// scalar) an interval the scalar unit waited: in a barrier / core_barrier (op is that opcode) or
/// for a place in a full issue queue (op is the instruction it dispatches, `queue` its pipe).
struct TraceEvent {
  uint32_t core = 0;
  isa::Pipe pipe = isa::Pipe::scalar;
  isa::Opcode op = isa::Opcode::li;
  int32_t pc = 0;  // instruction index in the core's stream
  int32_t op_index = -1;
  uint64_t start_cycle = 0;
  uint64_t duration_cycles = 0;  // occupancy (sync instructions: time spent draining / waiting)
  uint64_t completion_cycle = 0;
  /// set_flag: the flow to the wait_flag it releases; wait_flag: the flow from the set_flag that
  /// released it (the n-th set of a flag releases its n-th wait); 0: none. Unique per run.
  uint64_t flow_id = 0;
  isa::Pipe queue = isa::Pipe::scalar;  // scalar-unit queue stall: the full queue's pipe
};

/// One DRAM channel transfer (recorded when tracing): the channel busy from start to done moving
/// `burst_bytes` (npu::dma_gm_burst_bytes). The banked model records one per channel a transfer
/// used (start/done: its first and last data beat there) with the row-buffer outcomes.
struct DramTransfer {
  uint64_t start_cycle = 0, done_cycle = 0, burst_bytes = 0;
  bool read = true;  // GM -> core
  uint32_t channel = 0;
  uint32_t row_hits = 0, row_misses = 0, bank_conflicts = 0;
};

/// Everything one run's modules share. Times are core cycles (MethodKernel time).
struct RunState {
  const npu::HwConfig* hw = nullptr;
  const SimOptions* options = nullptr;
  const std::vector<std::vector<isa::Instruction>>* code = nullptr;  // per core
  uint8_t* gm = nullptr;  // GM image (owned by the Simulator)
  uint64_t gm_bytes = 0;

  SimResult result;                          // cores[] sized at construction
  std::vector<uint64_t> op_first_start;      // per op_index, UINT64_MAX when never started
  std::vector<uint64_t> op_last_completion;  // per op_index
  std::vector<TraceEvent> trace;             // filled only when options->trace_path is set
  std::vector<DramTransfer> dram_transfers;  // likewise
  bool tracing = false;
  MulticastTable multicast;  // dma_mc reads pending for their core sets
  /// The data instruction a core is dispatching or starting, resolved (Core::resolve_entry): one
  /// per run, not one per queue entry, so that a 1,024-core run's working set fits the caches.
  /// Valid only within one activation of one core's process (SystemC runs one at a time).
  isa::Instruction resolved;

  /// The run's processes (every unit of every core), their events and the simulated time.
  MethodKernel kernel;

  std::exception_ptr error;  // first exception raised inside a process

  /// Records the exception (first one wins) and stops the simulation (the kernel, after the
  /// running activation).
  void fail_with(std::exception_ptr e);
};

}  // namespace tessel::sim
