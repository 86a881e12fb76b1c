// The shared L2 (memory.l2) as a TLM-2.0 module between the cores' MTE2/MTE3 (which call its
// forward interface, core_target()) and the DRAM target (simulator/dram.h). Present only when
// the config has an L2; without one the cores call the DRAM directly and nothing here runs.
//
// Organisation: capacity_bytes of line_bytes lines, `ways`-way set-associative, set = line % sets,
// LRU replacement, lines interleaved over `banks` banks by line index (bank = line % banks). Every
// GM dma is one request (one b_transport, as with the DRAM alone); its GM access is split into
// lines (npu::for_each_gm_run), each line looked up once per request.
//  - read: a resident line is a hit; a missing one is allocated (the LRU way of its set; a dirty
//    victim is written back) and filled from DRAM. The missing lines of one request go to DRAM as
//    one read per maximal run of consecutive lines (line_bytes each), issued at the request's
//    start; write-backs follow them on the channel.
//  - write, write_back: the line is allocated without a fill (per-byte valid masks, as GPU L2s
//    keep them) and marked dirty; DRAM sees it only when it is evicted.
//  - write, write_through: the write goes on to DRAM as it came (the DRAM model rounds it to its
//    bursts); a resident line is updated (a hit), a missing one is not allocated (a miss).
// Timing (docs/isa.md, Timing, "L2"): the request's bytes on bank b keep that bank busy
// ceil(bytes_b / bytes_per_cycle) cycles from max(start, bank b free); the request is served when
// every bank and every DRAM transfer it waits on (its fills; a write_through write) is done;
// latency_cycles is added to its completion, plus the DRAM latency when it waited on DRAM (a read
// with a miss, a write_through write). Dirty lines left at the end are counted, not flushed.
//
// Placement hints (docs/isa.md, l2_prefetch, l2_discard; the cores send them only with an L2):
//  - l2_prefetch [a, a + n) at cycle t queues the range (FIFO, with its core and t) and returns
//    at once (the MTE2 pipe is busy its 1 issue cycle). The queue is served in kPrefetchChunkBytes
//    chunks (aligned; the lines of [a, a + n) in that chunk) in DRAM idle time: before any demand
//    request arriving at cycle t_d (and any hint) is served, the head chunk is issued at
//    s = max(dram_free, its range's t) as long as s < t_d, where dram_free is when the DRAM last
//    accepted a transfer from the L2 (the L2 is the DRAM's only client). A chunk whose lines are
//    all resident takes no time; otherwise its missing lines are allocated (LRU, dirty victims
//    written back, posted) and read as one DRAM transfer per run of consecutive lines at s,
//    ready at the DRAM's done cycle + memory.dram.latency_cycles. So demand requests wait at most
//    for the chunk in flight when they arrive. Ranges still queued at the end are counted as
//    dropped. Prefetch fills are attributed to the issuing core in --dram-trace.
//  - l2_discard [a, a + n): every resident line wholly inside the range is invalidated without a
//    write-back (its data is dead); lines partly outside stay. Takes no L2 or DRAM time.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "npu_model/hw_config.h"
#include "simulator/dram.h"

namespace tessel::sim {

struct RunState;

/// Shared L2 target/initiator module. Throws tessel::Error (through the request) if the config's
/// L2 is inconsistent (it was not validated).
class L2 : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<L2> dram_socket;  // to Dram::socket

  /// `dram` is the module dram_socket is bound to (prefetch fills are timed on it directly, at
  /// cycles that may precede the current simulation time).
  L2(sc_core::sc_module_name name, RunState& run, Dram& dram);

  /// The cores' way in (CoreTarget, dram.h).
  tlm::tlm_fw_transport_if<>& core_target() { return core_target_; }

  /// Prefetch fills are issued in chunks of this many bytes (aligned).
  static constexpr uint64_t kPrefetchChunkBytes = 2048;

  /// Writes the end-of-run statistics (dirty lines left) into run.result.l2.
  void finish();

 private:
  struct Way {
    uint64_t line = UINT64_MAX;  // GM line index held (UINT64_MAX: empty)
    uint64_t last_use = 0;       // LRU stamp
    uint64_t ready_cycle = 0;    // when its data is there (a fill in flight: the fill's end)
    bool dirty = false;
    bool prefetched = false;  // brought by a prefetch and not read since
  };
  struct PrefetchRange {
    uint64_t next = 0, end = 0;  // GM bytes [next, end) still to fetch
    uint64_t issue = 0;          // cycle the l2_prefetch reached the L2
    int core = -1;
  };

  void b_transport(int id, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  /// An l2_prefetch / l2_discard arriving at `issue`.
  void hint(const isa::Instruction& in, int core, uint64_t issue);
  /// Issues queued prefetch chunks that start before cycle `until` (DRAM idle time).
  void drain_prefetches(uint64_t until);
  /// A transfer of runs on the DRAM at `issue` (may precede the simulation time), counted as the
  /// Dram target counts its own; returns when it was accepted and done.
  DramServed dram_direct(bool read, int core, uint64_t issue);
  /// The runs of consecutive lines of a sorted line list as GM byte runs (lines of 1 << shift).
  static void line_runs(const std::vector<std::pair<uint64_t, Way*>>& lines, int shift,
                        std::vector<GmRun>& runs);
  /// Looks `line` up; on a miss with `allocate`, takes its set's LRU way (a dirty victim's line
  /// index is appended to victims_). Returns whether it hit; *way is the way (nullptr: not held).
  bool access(uint64_t line, bool allocate, Way** way);
  /// One DRAM transaction of `bytes` at GM `address` (read: a fill, else a write), issued at
  /// cycle `issue`; returns the cycle the channel finishes it.
  uint64_t dram_access(bool read, uint64_t address, uint64_t bytes, uint64_t issue);
  /// DRAM transactions for the sorted line list, one per run of consecutive lines; returns the
  /// last done cycle (issue when empty). For fills, sets each line's way's ready_cycle to the end
  /// of its run's transfer.
  uint64_t dram_lines(bool read, const std::vector<std::pair<uint64_t, Way*>>& lines,
                      uint64_t issue);

  CoreTarget core_target_;
  RunState& run_;
  Dram& dram_;
  npu::L2Config cfg_;
  int line_shift_ = 0;
  uint64_t sets_ = 0;
  std::vector<Way> ways_;  // sets_ x cfg_.ways
  std::vector<uint64_t> bank_free_cycle_;
  std::vector<uint64_t> bank_bytes_;                         // per request, scratch
  std::vector<std::pair<uint64_t, Way*>> misses_, victims_;  // (line, its way; victims: null)
  uint64_t clock_ = 0;                                       // LRU counter
  int core_ = -1;           // the core of the request being served (its DRAM transfers' core)
  uint64_t dram_free_ = 0;  // when the DRAM last accepted a transfer the L2 made
  std::deque<PrefetchRange> prefetch_;
  std::vector<GmRun> direct_runs_;  // scratch: dram_direct's runs
  // The sub-transaction to DRAM (one at a time: b_transport is blocking).
  tlm::tlm_generic_payload dram_trans_;
  DmaExtension dram_ext_;
  isa::Instruction dram_instr_;
};

}  // namespace tessel::sim
