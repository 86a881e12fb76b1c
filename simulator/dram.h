// The off-chip memory (GM) as a TLM-2.0 target: one channel shared by every core's MTE2/MTE3,
// arbitrated by next-free-time (docs/isa.md, Timing: "DRAM").
//
// Protocol: one blocking transaction (b_transport) per dma instruction, issued by the engine at
// the instruction's start cycle s with delay = 0. The generic payload carries the command
// (read = GM -> core, write = core -> GM), the lowest GM address touched and data_length = G, the
// GM bytes of the transfer (npu::dma_gm_bytes). The strided descriptor itself travels in a
// DmaExtension. The target serves the transfer from dram_start = max(s, next_free) for
// ceil(G_burst / dram.bytes_per_cycle) cycles, where G_burst is G rounded to the aligned
// dram.burst_bytes blocks the access touches (npu::dma_gm_burst_bytes; = G when burst_bytes is 1),
// performs the functional copy (isa::execute) when asked, and returns in `delay` the time from s
// until the channel finishes the transfer (dram_done - s); the extension also returns dram_done
// and the DRAM latency that comes on top of the completion.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <systemc>
#include <tlm>

#include <cstdint>

#include "isa/semantics.h"
#include "npu_model/hw_config.h"

namespace tessel::sim {

struct RunState;

/// Payload extension of a dma transaction: the resolved instruction and the issuing core's memory.
struct DmaExtension : tlm::tlm_extension<DmaExtension> {
  const isa::Instruction* instr = nullptr;  // resolved dma instruction
  isa::CoreMemory* memory = nullptr;        // the core's scratchpads (GM base is the Dram's)
  bool functional = false;                  // perform the copy (false: timing only)
  // Returned by the target:
  uint64_t dram_done_cycle = 0;      // when the channel finished this transfer
  uint64_t dram_latency_cycles = 0;  // added to the instruction's completion

  tlm::tlm_extension_base* clone() const override { return new DmaExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const DmaExtension&>(other);
  }
};

/// GM target module: owns no storage (the Simulator's GM image is used in place).
class Dram : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Dram> socket;

  Dram(sc_core::sc_module_name name, RunState& run);

  /// Cycle at which the channel becomes free (for tests and stats).
  uint64_t next_free_cycle() const { return next_free_cycle_; }

 private:
  void b_transport(int id, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);

  RunState& run_;
  uint64_t bytes_per_cycle_;
  uint64_t latency_cycles_;
  uint64_t next_free_cycle_ = 0;
};

}  // namespace tessel::sim
