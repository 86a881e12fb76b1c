// The NPU top-level SystemC module: N cores (simulator/core.h) whose MTE2/MTE3 initiator sockets
// are bound to one shared DRAM target (simulator/dram.h), plus the cross-core barrier.
#pragma once

#include <systemc>

#include <memory>
#include <string>
#include <vector>

#include "simulator/core.h"
#include "simulator/dram.h"
#include "simulator/run_state.h"

namespace tessel::sim {

class NpuTop : public sc_core::sc_module {
 public:
  /// Builds one Core per stream of run.code (at most hw.cores) and the Dram, and binds them.
  NpuTop(sc_core::sc_module_name name, RunState& run);

  /// True when every core finished (no unit holds work).
  bool finished() const;
  /// Describes a run that stopped with work left: the blocked waits (flags, core barriers) first,
  /// then the state of every unit of every core. `cycle` is the SystemC time it stopped at.
  std::string deadlock_report(uint64_t cycle) const;

  const std::vector<std::unique_ptr<Core>>& cores() const { return cores_; }

 private:
  RunState& run_;
  std::unique_ptr<CoreBarrier> barrier_;
  std::unique_ptr<Dram> dram_;
  std::vector<std::unique_ptr<Core>> cores_;
};

/// Writes run.trace as Chrome trace-event JSON (chrome://tracing, Perfetto): one process per core
/// (pid = core), one thread per pipe (tid = isa::Pipe), "X" events with ts/dur in cycles (the
/// viewer shows 1 cycle as 1 us), name = opcode, args = {op_index, op (graph op name if known),
/// instruction, completion_cycle}. Throws tessel::Error if the file cannot be written.
void write_chrome_trace(const std::string& path, const RunState& run,
                        const std::vector<std::string>& op_names);

}  // namespace tessel::sim
