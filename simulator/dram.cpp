// GM target: next-free-time arbitration of the shared DRAM channel and the functional copy.
#include "simulator/dram.h"

#include "compiler/support/error.h"
#include "npu_model/timing.h"
#include "simulator/run_state.h"

namespace tessel::sim {

Dram::Dram(sc_core::sc_module_name name, RunState& run)
    : sc_core::sc_module(name),
      socket("socket"),
      run_(run),
      bytes_per_cycle_(static_cast<uint64_t>(run.hw->dram.bytes_per_cycle)),
      latency_cycles_(static_cast<uint64_t>(run.hw->dram.latency_cycles)) {
  if (run.hw->dram.bytes_per_cycle <= 0)
    fail("hardware config: memory.dram.bytes_per_cycle is {}, expected a positive value",
         run.hw->dram.bytes_per_cycle);
  if (run.hw->dram.latency_cycles < 0)
    fail("hardware config: memory.dram.latency_cycles is {}, expected >= 0",
         run.hw->dram.latency_cycles);
  socket.register_b_transport(this, &Dram::b_transport);
}

void Dram::b_transport(int /*id*/, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  DmaExtension* ext = trans.get_extension<DmaExtension>();
  if (!ext || !ext->instr) internal_fail("Dram: transaction without a DmaExtension");
  const uint64_t issue = sc_core::sc_time_stamp().value() + delay.value();
  const uint64_t g = trans.get_data_length();
  // The channel moves whole bursts: it is busy for the burst-rounded bytes (== g when
  // memory.dram.burst_bytes is 1).
  const auto* dma = std::get_if<isa::DmaArgs>(&ext->instr->args);
  if (!dma) internal_fail("Dram: transaction for a non-dma instruction");
  const uint64_t burst_bytes = g > 0 ? npu::dma_gm_burst_bytes(*run_.hw, *dma) : 0;
  uint64_t done = issue;
  if (burst_bytes > 0) {
    const uint64_t start = std::max(issue, next_free_cycle_);
    done = start + (burst_bytes + bytes_per_cycle_ - 1) / bytes_per_cycle_;
    next_free_cycle_ = done;
    if (run_.tracing) run_.dram_transfers.push_back({start, done, burst_bytes, trans.is_read()});
  }
  if (trans.is_read())
    run_.result.dram_read_bytes += g;
  else
    run_.result.dram_write_bytes += g;
  run_.result.dram_burst_bytes += burst_bytes;
  if (ext->functional) {
    isa::CoreMemory mem = *ext->memory;
    mem.base[int(isa::Scope::gm)] = run_.gm;
    mem.size[int(isa::Scope::gm)] = run_.gm_bytes;
    isa::execute(*run_.hw, *ext->instr, mem);
  }
  ext->dram_done_cycle = done;
  ext->dram_latency_cycles = latency_cycles_;
  delay = sc_core::sc_time::from_value(done - sc_core::sc_time_stamp().value());
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tessel::sim
