// State shared by the SystemC modules of one simulation run (one Simulator::run()): the inputs,
// the statistics being accumulated, the trace, and the first error raised inside a process.
#pragma once

#include <cstdint>
#include <exception>
#include <vector>

#include "isa/isa.h"
#include "npu_model/hw_config.h"
#include "simulator/simulator.h"

namespace tessel::sim {

/// One "X" event of the Chrome trace: an instruction's busy interval on its pipe.
struct TraceEvent {
  uint32_t core = 0;
  isa::Pipe pipe = isa::Pipe::scalar;
  isa::Opcode op = isa::Opcode::li;
  int32_t pc = 0;  // instruction index in the core's stream
  int32_t op_index = -1;
  uint64_t start_cycle = 0;
  uint64_t duration_cycles = 0;  // occupancy (sync instructions: time spent draining / waiting)
  uint64_t completion_cycle = 0;
};

/// Everything one run's modules share. Times are core cycles (1 SystemC time unit = 1 cycle).
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
  bool tracing = false;

  std::exception_ptr error;  // first exception raised inside a SystemC process

  /// Records the exception (first one wins) and stops the simulation.
  void fail_with(std::exception_ptr e);
};

}  // namespace tessel::sim
