// The NPU top-level SystemC module: N cores (simulator/core.h) whose MTE2/MTE3 call one shared
// DRAM target (simulator/dram.h), or the shared L2 (simulator/l2.h) in front of it when the
// config has memory.l2, through its TLM-2.0 forward interface (CoreTarget), plus the cross-core
// barrier. Its one SystemC
// process (kernel_method) runs the run's MethodKernel, whose processes are every unit of every
// core (simulator/method_kernel.h).
#pragma once

#include <systemc>

#include <memory>
#include <string>
#include <vector>

#include "simulator/core.h"
#include "simulator/dram.h"
#include "simulator/l2.h"
#include "simulator/run_state.h"

namespace tessel::sim {

class NpuTop : public sc_core::sc_module {
 public:
  /// Builds one Core per stream of run.code (at most hw.cores) and the Dram, and connects them.
  NpuTop(sc_core::sc_module_name name, RunState& run);
  /// Deletes the cores newest first: SystemC's registries search a removed object from their
  /// newest entry (oldest first is quadratic in the core count).
  ~NpuTop() override;

  /// Records the memory system's end-of-run statistics (L2 lines left dirty).
  void finish_memory();

  /// True when every core finished (no unit holds work).
  bool finished() const;
  /// Describes a run that stopped with work left: the blocked waits (flags, core barriers) first,
  /// then the state of every unit of every core. `cycle` is the SystemC time it stopped at.
  std::string deadlock_report(uint64_t cycle) const;

  const std::vector<std::unique_ptr<Core>>& cores() const { return cores_; }
  Dram& dram() { return *dram_; }

 private:
  /// The SC_METHOD: runs the kernel to its end (starvation or an error) in one activation.
  void kernel_method();

  RunState& run_;
  std::unique_ptr<CoreBarrier> barrier_;
  std::unique_ptr<Dram> dram_;
  std::unique_ptr<L2> l2_;  // memory.l2; null without one
  std::vector<std::unique_ptr<Core>> cores_;
};

/// Writes run.trace as Chrome trace-event JSON (chrome://tracing, Perfetto; docs/trace.md). Time:
/// ts/dur are microseconds of simulated time (cycles / (1000 x clock_ghz)), displayTimeUnit "ns"
/// (at 1 GHz a cycle shows as 1 ns); every event's args give its exact cycles. Per core (pid =
/// core): an "ops" track (tid 7: each op from its first start to its last completion on that
/// core), the scalar unit (tid 0: barrier, core_barrier and full-queue stalls) and one track per
/// pipe (tid = isa::Pipe: "X" events per instruction, name = opcode, args = {op_index, op,
/// instruction, start_cycle, duration_cycles, completion_cycle, flag}); each set_flag and the
/// wait_flag it released share a flow (bind_id, flow_out / flow_in). Process pid = cores ("NPU
/// (all cores)"): the ops over all cores (the report's op cycles) and a DRAM bandwidth counter
/// (read and write bytes per cycle, mean per window). Written atomically (temporary file +
/// rename). Throws tessel::Error if the file cannot be written.
void write_chrome_trace(const std::string& path, const RunState& run,
                        const std::vector<std::string>& op_names);

}  // namespace tessel::sim
