// One NPU core as a SystemC module: a scalar-unit thread that fetches, executes scalar
// instructions and dispatches the rest into bounded in-order per-pipe issue queues, and one thread
// per pipe (mte2, mte1, cube, fix, vector, mte3). Timing follows docs/isa.md, "Timing".
//
// Time: 1 SystemC time unit (resolution 1 ns) = 1 core cycle. The scalar unit runs ahead of
// SystemC time with a local clock (temporal decoupling): it only synchronises when it must (a full
// issue queue, a barrier, a core_barrier, and every kQuantum instructions). This is exact because
// the scalar unit's behaviour depends on the pipes only through those three points. Pipes run in
// SystemC time (they wait until each instruction's start cycle), so flags, DRAM arbitration and the
// functional effects happen in global time order.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "isa/semantics.h"
#include "simulator/dram.h"
#include "simulator/run_state.h"

namespace tessel::sim {

/// Synchronises the scalar units of all cores at core_barrier (the n-th of each core match).
class CoreBarrier {
 public:
  explicit CoreBarrier(int cores) : cores_(cores) {}
  /// Called by a scalar-unit thread that reached a core_barrier at `arrival_cycle` (its local
  /// time, after the local barrier). Blocks until every core arrived; returns the release cycle
  /// max(arrival_cycle over cores).
  uint64_t arrive(uint64_t arrival_cycle);
  int arrived() const { return arrived_; }
  uint64_t completed() const { return generation_; }

 private:
  int cores_;
  int arrived_ = 0;
  uint64_t max_arrival_ = 0, release_ = 0, generation_ = 0;
  sc_core::sc_event released_;
};

class Core : public sc_core::sc_module {
 public:
  /// Yield to the SystemC kernel at least every kQuantum scalar-unit instructions.
  static constexpr uint64_t kQuantum = 4096;

  tlm_utils::simple_initiator_socket<Core> mte2_socket;  // GM loads
  tlm_utils::simple_initiator_socket<Core> mte3_socket;  // GM stores

  Core(sc_core::sc_module_name name, int id, RunState& run, CoreBarrier& barrier);

  /// True when the scalar unit ran off the end of its stream and every pipe is idle.
  bool finished() const;
  /// Cycle at which the core's last instruction completed (scalar unit or pipe; of a stuck run:
  /// the latest completion of what did start).
  uint64_t finish_cycle() const;
  /// One line per unit describing what it is doing (for deadlock reports).
  std::string state_report() const;
  /// Descriptions of pipes blocked in wait_flag, e.g. "core 0 pipe vector is blocked at
  /// instruction 3 (wait_flag ...) waiting for flag (src mte2, dst vector, event 1), count 0".
  std::vector<std::string> blocked_waits() const;
  /// The scalar unit's state when it is blocked in a core_barrier: its instruction index, else -1.
  int32_t core_barrier_pc() const {
    return scalar_state_ == ScalarState::core_barrier ? scalar_pc_ : -1;
  }
  /// Appends, in the order this core spawned its processes (the scalar unit, then each pipe its
  /// stream uses), the event each of them waits on once the core finished. Notifying one after
  /// RunState::ending is set makes that process return (NpuTop::end_processes).
  void append_idle_events(std::vector<sc_core::sc_event*>& events);

 private:
  struct Entry {
    isa::Instruction instr;  // resolved (MemRefs absolute) for data instructions
    isa::AccessRangeList ranges;
    int32_t pc = 0;
    uint64_t enqueue_cycle = 0;
  };
  struct InflightWrite {
    isa::AccessRange range;
    uint64_t completion_cycle;
  };
  enum class PipeState : uint8_t { idle, waiting_start, draining, flag_wait };
  enum class ScalarState : uint8_t { running, dispatch_wait, barrier, core_barrier, done };

  struct PipeUnit {
    // The issue queue: `ring` holds, in issue order, the pool slots of the entries not yet
    // started (capacity = issue queue depth). Slots come from and go back to `free_slots` last
    // in, first out, so the few entries in flight stay in cache instead of the queue cycling
    // through depth x sizeof(Entry) bytes (at 1,024 cores that memory exceeds the host's caches).
    std::vector<Entry> pool;           // depth + 1 slots: the queue and the entry being started
    std::vector<uint32_t> free_slots;  // unused pool slots
    std::vector<uint32_t> ring;        // pool slots, ring buffer of depth entries
    size_t head = 0, size = 0;
    const Entry& queued(size_t i) const { return pool[ring[(head + i) % ring.size()]]; }
    sc_core::sc_event pushed;           // an entry was added (pipe thread waits when empty)
    sc_core::sc_event flag_set;         // a flag whose dst is this pipe was incremented
    uint64_t free_cycle = 0;            // start + occupancy of the previous instruction
    uint64_t max_completion = 0;        // completion of every instruction started so far
    std::vector<InflightWrite> writes;  // written ranges of instructions not yet complete
    PipeState state = PipeState::idle;
    int32_t pc = -1;       // instruction being started / executed
    isa::SyncArgs flag{};  // the flag waited on in flag_wait
  };

  void scalar_thread();
  void pipe_thread(isa::Pipe p);
  void run_pipe(isa::Pipe p);
  void run_scalar();
  void execute_data(isa::Pipe p, const Entry& e, uint64_t start);
  void dispatch(const isa::Instruction& in, int32_t pc, uint64_t& t,
                const std::array<int64_t, isa::kNumRegs>& regs);
  /// Op cycle bounds and (when tracing) the trace event of one instruction of pipe `p`.
  void record(isa::Pipe p, isa::Opcode opcode, int32_t pc, int32_t op_index, uint64_t start,
              uint64_t duration, uint64_t completion, uint64_t flow_id = 0);
  /// The trace flow id of the next use of flag `s` counted in `seq` (set_seq_ or wait_seq_).
  uint64_t flow_id(const isa::SyncArgs& s, std::vector<uint64_t>& seq);
  bool drained() const;
  void wait_cycles(uint64_t target_cycle);
  int64_t& flag(const isa::SyncArgs& s);
  std::string where(int32_t pc) const;
  std::string pipe_line(int p) const;

  const int id_;
  RunState& run_;
  CoreBarrier& core_barrier_;
  const npu::HwConfig& hw_;
  const std::vector<isa::Instruction>& code_;
  CoreStats& stats_;
  const uint64_t cs_;   // scalar cycles per instruction
  const size_t depth_;  // issue queue depth
  const int events_;    // sync event ids
  const bool functional_;

  /// Zero-filled bytes mapped on first touch (anonymous mmap): a scratchpad costs only the pages
  /// the program touches, so a 1,024-core run does not zero-fill 1,024 x buffers_bytes up front.
  class ZeroedBytes {
   public:
    ZeroedBytes() = default;
    explicit ZeroedBytes(uint64_t bytes);
    ~ZeroedBytes();
    ZeroedBytes(const ZeroedBytes&) = delete;
    ZeroedBytes& operator=(ZeroedBytes&& other) noexcept;
    uint8_t* data() const { return data_; }

   private:
    uint8_t* data_ = nullptr;
    uint64_t bytes_ = 0;
  };

  std::array<PipeUnit, isa::kNumPipes> pipes_;
  std::array<bool, isa::kNumPipes> has_thread_{};     // pipes the stream uses
  std::array<ZeroedBytes, isa::kNumScopes> scratch_;  // functional mode only
  isa::CoreMemory memory_;
  std::array<uint64_t, isa::kNumScopes> sizes_{};
  std::vector<int64_t> flags_;                // [src pipe][dst pipe][event]
  std::vector<uint64_t> set_seq_, wait_seq_;  // tracing: sets / waits of each flag so far

  sc_core::sc_event progress_;     // a pipe started an instruction or finished a wait_flag
  sc_core::sc_event scalar_idle_;  // the finished scalar unit waits on it (RunState::ending)
  bool scalar_listening_ = false;
  ScalarState scalar_state_ = ScalarState::running;
  int32_t scalar_pc_ = 0;
  isa::Pipe scalar_blocked_pipe_ = isa::Pipe::scalar;
  uint64_t scalar_end_cycle_ = 0;

  tlm::tlm_generic_payload trans_;
  DmaExtension ext_;
};

}  // namespace tessel::sim
