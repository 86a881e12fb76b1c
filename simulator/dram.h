// The off-chip memory (GM) as a TLM-2.0 target shared by every core's MTE2/MTE3, with one of two
// timing models (memory.dram.model):
//  - simple (default): one channel arbitrated by next-free-time (docs/isa.md, Timing: "DRAM");
//  - banked: channels, ranks, banks and rows with JEDEC timing and FR-FCFS (dram_banked.h).
//
// Protocol: one blocking transaction (b_transport) per dma instruction, issued by the engine at
// the instruction's start cycle s (the run's MethodKernel time, RunState::kernel) with delay = 0.
// The generic payload carries the command (read = GM -> core, write = core -> GM), the lowest GM
// address touched and data_length = G, the GM bytes of the transfer (npu::dma_gm_bytes). The
// strided descriptor itself travels in a DmaExtension. The target serves the transfer and returns
// in `delay` the time from s until the DRAM has taken it (dram_done - s: the engine is busy until
// then); the extension also returns dram_done and the latency that comes on top of the completion
// (memory.dram.latency_cycles, and with the banked model the data still in flight). It performs the
// functional copy (isa::execute) when asked.
//  - simple: served from dram_start = max(s, next_free) for ceil(G_burst / dram.bytes_per_cycle)
//    cycles, where G_burst is G rounded to the aligned dram.burst_bytes blocks the access touches
//    (npu::dma_gm_burst_bytes; = G when burst_bytes is 1).
//  - banked: the same blocks become one burst request each, all arriving at s; dram_done is the
//    NPU cycle after the last one's column command (the DRAM has accepted every request; a next
//    transfer's commands may follow), and the latency adds the time until its last data beat has
//    moved (BankedDram::serve), so consecutive dmas overlap their data with the device latency.
// Anything that sits in front of the DRAM (an L2) can call serve_runs() with the GM byte runs it
// misses on: that is the whole timing interface.
//
// --dram-trace (SimOptions::dram_trace_path): every request as one text line (docs/memory.md):
//   CYCLE CORE CHANNEL ADDRESS BYTES R|W
// banked: one line per burst; simple: one line per contiguous run, its address rounded down and
// its size up to whole bursts. The BYTES of all lines add up to SimResult::dram_burst_bytes.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <systemc>
#include <tlm>

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "isa/semantics.h"
#include "npu_model/hw_config.h"
#include "simulator/dram_banked.h"

namespace tessel::sim {

struct RunState;

/// Payload extension of a dma transaction: the resolved instruction and the issuing core's memory.
struct DmaExtension : tlm::tlm_extension<DmaExtension> {
  const isa::Instruction* instr = nullptr;  // resolved dma instruction
  isa::CoreMemory* memory = nullptr;        // the core's scratchpads (GM base is the Dram's)
  bool functional = false;                  // perform the copy (false: timing only)
  int core = -1;                            // the issuing core (for --dram-trace)
  /// > 0: npu::dma_gm_burst_bytes(hw, *instr), computed by the initiator, so that the simple
  /// model's fast path reads nothing of the instruction (at 1,024 cores a cache miss).
  uint64_t burst_bytes = 0;
  // Returned by the target:
  uint64_t dram_done_cycle = 0;      // when the DRAM has taken this transfer (engine free)
  uint64_t dram_latency_cycles = 0;  // added to the instruction's completion

  tlm::tlm_extension_base* clone() const override { return new DmaExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const DmaExtension&>(other);
  }
};

/// What a core's MTE2/MTE3 reach a memory target (the Dram, or the L2 in front of it) through:
/// the target's TLM-2.0 forward interface, held by pointer (Core::connect) instead of through a
/// socket bound per core. Why: SystemC 2.3.4 binds an initiator socket to a multi-passthrough
/// target socket after scanning every interface bound to it so far (sc_port_b::add_interface),
/// so the 2,048 sockets of 1,024 cores cost 2 M steps per elaboration, and every socket is an
/// sc_object filed by name in the context's object table (docs/results.md, "Scale with cores").
/// Only b_transport is served (the simulator's one protocol); the other calls are refused.
class CoreTarget : public tlm::tlm_fw_transport_if<> {
 public:
  using Transport = void (*)(void* module, tlm::tlm_generic_payload& trans,
                             sc_core::sc_time& delay);
  CoreTarget(void* module, Transport transport) : module_(module), transport_(transport) {}
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) override {
    transport_(module_, trans, delay);
  }
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& trans, tlm::tlm_phase&,
                                     sc_core::sc_time&) override {
    trans.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return tlm::TLM_COMPLETED;
  }
  bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
  unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }

 private:
  void* module_;
  Transport transport_;
};

/// One contiguous GM byte range of a transfer.
struct GmRun {
  uint64_t address = 0, bytes = 0;
};

/// When the DRAM has served a transfer (NPU cycles): `accepted` = it has taken every request (the
/// issuing engine is free; simple model: the channel finished), `done` = the last byte has moved.
struct DramServed {
  uint64_t accepted_cycle = 0, done_cycle = 0;
};

/// GM target module: owns no storage (the Simulator's GM image is used in place).
class Dram : public sc_core::sc_module {
 public:
  /// Bound by the L2's DRAM side when there is one (the cores call core_target()).
  tlm_utils::multi_passthrough_target_socket_optional<Dram> socket;

  /// Throws tessel::Error on an invalid memory.dram config or an unwritable --dram-trace file.
  Dram(sc_core::sc_module_name name, RunState& run);
  ~Dram() override;  // removes an uncommitted --dram-trace temporary file

  /// The cores' way in when there is no L2 (CoreTarget).
  tlm::tlm_fw_transport_if<>& core_target() { return core_target_; }

  /// Cycle at which the simple model's channel becomes free (for tests and stats).
  uint64_t next_free_cycle() const { return next_free_cycle_; }

  /// The timing of one transfer: the GM byte runs of a read or write by `core` arriving at NPU
  /// cycle `issue`, rounded to whole bursts; adds the burst bytes to `*burst_bytes` and writes the
  /// --dram-trace lines. (memory.dram.latency_cycles is not included.)
  DramServed serve_runs(uint64_t issue, bool read, int core, const std::vector<GmRun>& runs,
                        uint64_t* burst_bytes);

  /// Per-channel counters so far (SimResult::dram_channels).
  std::vector<DramChannelStats> channel_stats() const;

  /// After a successful run: finishes the --dram-trace file (rename over the requested path).
  /// Throws tessel::Error if it cannot be written.
  void commit_trace();

 private:
  void b_transport(int id, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  void record(uint64_t issue, bool read, int core, const std::vector<uint64_t>& bursts,
              const std::vector<DramRequestResult>& results);

  RunState& run_;
  CoreTarget core_target_;
  uint64_t bytes_per_cycle_;
  uint64_t latency_cycles_;
  uint64_t burst_bytes_;  // memory.dram.burst_bytes
  uint64_t next_free_cycle_ = 0;
  DramChannelStats simple_stats_;       // the simple model's one channel
  std::unique_ptr<BankedDram> banked_;  // memory.dram.model: banked
  std::vector<GmRun> runs_;             // scratch: one transfer's runs
  std::vector<uint64_t> bursts_;        // scratch: its burst addresses
  std::vector<DramRequestResult> results_;
  OpDramStats last_;  // the row-buffer outcomes of the last serve_runs (banked)
  std::string trace_path_, trace_tmp_;
  std::ofstream trace_;
};

}  // namespace tessel::sim
