// One NPU core as a SystemC module: a scalar unit that fetches, executes scalar instructions and
// dispatches the rest into bounded in-order per-pipe issue queues, and one process per pipe (mte2,
// mte1, cube, fix, vector, mte3) its stream uses. Timing follows docs/isa.md, "Timing".
//
// Time: 1 SystemC time unit (resolution 1 ns) = 1 core cycle. The scalar unit runs ahead of
// SystemC time with a local clock (temporal decoupling): it only synchronises when it must (a full
// issue queue, a barrier, a core_barrier, and every kQuantum instructions). This is exact because
// the scalar unit's behaviour depends on the pipes only through those three points. Pipes run in
// SystemC time (they wait until each instruction's start cycle), so flags, DRAM arbitration and the
// functional effects happen in global time order.
//
// Processes: every unit is an SC_METHOD written as a resumable state machine (ScalarStep,
// PipeStep): where a thread would wait, the method records where it stopped, calls next_trigger
// with what the thread would have waited for, and returns. A method has no coroutine stack to map
// and no context switch (docs/results.md, "Scale with cores", has the host times). Every process
// is a method, and SystemC queues methods as it queues threads (a runnable queue in trigger order,
// an event's waiters in the order they waited), so the processes run in the order the threads ran
// and every simulated cycle is the same.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "isa/semantics.h"
#include "simulator/dram.h"
#include "simulator/run_state.h"

namespace tessel::rtl {
class RtlCube;
struct RtlCompletion;
}  // namespace tessel::rtl

namespace tessel::sim {

/// Synchronises the scalar units of all cores at core_barrier (the n-th of each core match).
class CoreBarrier {
 public:
  /// `multicast`: the run's pending dma_mc reads, dropped at every release (may be null).
  explicit CoreBarrier(int cores, MulticastTable* multicast = nullptr)
      : cores_(cores), multicast_(multicast) {}
  /// Called by a scalar unit that reached a core_barrier at `arrival_cycle` (its local time, after
  /// the local barrier). The last core to arrive releases the barrier: completed() grows by one,
  /// release_cycle() = max(arrival_cycle over cores), released() is notified. A caller whose
  /// completed() is still what it read before arriving waits on released().
  void arrive(uint64_t arrival_cycle);
  int arrived() const { return arrived_; }
  uint64_t completed() const { return generation_; }
  uint64_t release_cycle() const { return release_; }
  const sc_core::sc_event& released() const { return released_; }

 private:
  int cores_;
  MulticastTable* multicast_;
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

  /// With core.cube.model: rtl the core instantiates the verilated cube (rtl::RtlCube) and its
  /// int8 mmads run on it (docs/rtl.md); throws tessel::Error when the build has no RTL, the run
  /// is not functional or the config's cube is not the verilated one.
  Core(sc_core::sc_module_name name, int id, RunState& run, CoreBarrier& barrier);
  ~Core() override;

  /// True when the scalar unit ran off the end of its stream and every pipe is idle.
  bool finished() const;
  /// Cycle at which the core's last instruction completed (scalar unit or pipe; of a stuck run:
  /// the latest completion of what did start).
  uint64_t finish_cycle() const;
  /// Adds what the run kept per instruction and per pipe to the core's CoreStats: pipe
  /// instructions and busy cycles, scope traffic and operation counts (each executed data
  /// instruction's npu::scope_traffic and npu::count_ops, times its executions). Call once,
  /// after the run.
  void flush_stats();
  /// One line per unit describing what it is doing (for deadlock reports).
  std::string state_report() const;
  /// Descriptions of pipes blocked in wait_flag, e.g. "core 0 pipe vector is blocked at
  /// instruction 3 (wait_flag ...) waiting for flag (src mte2, dst vector, event 1), count 0".
  std::vector<std::string> blocked_waits() const;
  /// The scalar unit's state when it is blocked in a core_barrier: its instruction index, else -1.
  int32_t core_barrier_pc() const {
    return scalar_state_ == ScalarState::core_barrier ? scalar_pc_ : -1;
  }
  /// 1 + the largest op_index of the core's stream (0 when none): found while decoding it, so
  /// that Simulator::run sizes its per-op tables without a pass of its own over the program.
  size_t op_count() const { return op_count_; }
  /// The processes this core spawned (the scalar unit, then each pipe its stream uses), in spawn
  /// order; NpuTop::end_processes kills them after a finished run.
  std::vector<sc_core::sc_process_handle>& processes() { return processes_; }

 private:
  /// One instruction as the simulator's hot path reads it, decoded once at construction: 48
  /// bytes instead of the 192-byte isa::Instruction, which is read only where a data
  /// instruction is resolved (dispatch; start, for a dma or a functional run) and in reports.
  /// At 1,024 cores every core's state is touched once per simulated step and the cores'
  /// streams together exceed the host's caches (docs/results.md, "Scale with cores").
  struct Decoded {
    isa::Opcode op = isa::Opcode::li;
    isa::InstrKind kind = isa::InstrKind::alu;
    isa::Pipe pipe = isa::Pipe::scalar;
    uint8_t nregs = 0;  // data: the distinct registers its memory operands use, in `regs`
    std::array<uint8_t, 4> regs{};
    int32_t op_index = -1;
    bool cost_known = false;  // data: `occupancy`/`latency` hold npu::instruction_cost
    bool is_dma = false;      // data: dma or dma_mc (needs the resolved operands at start)
    bool x0_only = false;     // data: every memory operand uses x0 (the instruction is resolved)
    uint64_t executed = 0;    // data: times started (the stats are summed in flush_stats)
    union {
      isa::ScalarArgs scalar;  // alu / load / branch / jump
      isa::SyncArgs sync;      // set_flag / wait_flag
      struct {
        uint64_t occupancy, latency;  // data, when cost_known (address-independent)
        // data, when ranges_known (x0_only, and the ranges are inside the scratchpads and GM):
        // its access ranges are static_ranges_[ranges_at, ranges_at + nranges), so dispatch
        // neither reads the instruction nor resolves it.
        uint32_t ranges_at;
        uint8_t nranges;
        bool ranges_known;
      } cost;
    };
    Decoded() : scalar() {}
  };
  /// An access range in 24 bytes (isa::AccessRange pads to 32).
  struct Range {
    uint64_t begin = 0, end = 0;
    isa::Scope scope = isa::Scope::gm;
    bool write = false;
  };
  /// A queued instruction: its index, the values of the registers its memory operands use at
  /// dispatch (data instructions are resolved from code_ and these when they start) and its
  /// resolved access ranges. No copy of the instruction. A sync instruction's entry carries
  /// what its pipe needs (kind, flag, op_index), copied from the Decoded record while the scalar
  /// unit has it in cache: the pipe then starts it reading the entry alone, not the entry and
  /// then decoded_ (at 1,024 cores each is a cache miss, one waiting for the other).
  struct Entry {
    uint64_t enqueue_cycle = 0;
    int32_t pc = 0;
    int32_t op_index = -1;
    isa::InstrKind kind = isa::InstrKind::data;
    isa::SyncArgs sync{};  // set_flag / wait_flag
    uint8_t nranges = 0;
    std::array<Range, isa::kMaxAccessRanges> ranges{};
    std::array<int64_t, 4> reg_values{};
    const Range* begin() const { return ranges.data(); }
    const Range* end() const { return ranges.data() + nranges; }
  };
  struct InflightWrite {
    Range range;
    uint64_t completion_cycle;
  };
  enum class PipeState : uint8_t { idle, waiting_start, draining, flag_wait };
  enum class ScalarState : uint8_t { running, dispatch_wait, barrier, core_barrier, done };
  /// Where a pipe's method resumes: `next` (take the next entry, or wait for one), `idle` (waiting
  /// for an entry), `start` (waiting for the head's start cycle), `set_flag` (waiting for t_set),
  /// `wait_flag` (waiting for the flag to be positive).
  enum class PipeStep : uint8_t { next, idle, start, set_flag, wait_flag };
  /// Where the scalar unit's method resumes: `fetch` (the instruction at pc), `dispatch` (its
  /// pipe's queue was full), `barrier` (waiting for the pipes to drain), `core_barrier` (waiting
  /// for the other cores), `done`.
  enum class ScalarStep : uint8_t { fetch, dispatch, barrier, core_barrier, done };

  /// Pool slot indices, held in the PipeUnit itself up to kInline (a default-depth queue's ring
  /// and free list need no allocation of their own: at 1,024 cores each separate allocation is
  /// one more cache miss per dispatch and per start), on the heap beyond that.
  class Slots {
   public:
    Slots() = default;
    Slots(const Slots&) = delete;  // data_ may point into inline_
    Slots& operator=(const Slots&) = delete;
    void resize(size_t n) {
      heap_.assign(n > kInline ? n : 0, 0);
      data_ = n > kInline ? heap_.data() : inline_.data();
    }
    uint32_t& operator[](size_t i) { return data_[i]; }
    uint32_t operator[](size_t i) const { return data_[i]; }

   private:
    static constexpr size_t kInline = 17;  // issue_queue_depth 16 (+ 1: the pool's size)
    std::array<uint32_t, kInline> inline_{};
    std::vector<uint32_t> heap_;
    uint32_t* data_ = inline_.data();
  };

  struct PipeUnit {
    // The issue queue: `ring` holds, in issue order, the pool slots of the entries not yet
    // started (capacity = issue queue depth). Slots come from and go back to `free_slots` last
    // in, first out, so the few entries in flight stay in cache instead of the queue cycling
    // through depth x sizeof(Entry) bytes (at 1,024 cores that memory exceeds the host's caches).
    std::vector<Entry> pool;  // depth + 1 slots: the queue and the entry being started
    Slots free_slots;         // unused pool slots, a stack of nfree
    size_t nfree = 0;
    Slots ring;  // pool slots, ring buffer of depth entries
    size_t head = 0, size = 0;
    size_t depth = 0;
    const Entry& queued(size_t i) const { return pool[ring[(head + i) % depth]]; }
    sc_core::sc_event* pushed = nullptr;    // an entry was added (the pipe waits when empty)
    sc_core::sc_event* flag_set = nullptr;  // a flag whose dst is this pipe was incremented
    uint64_t free_cycle = 0;                // start + occupancy of the previous instruction
    uint64_t max_completion = 0;            // completion of every instruction started so far
    std::vector<InflightWrite> writes;      // written ranges of instructions not yet complete
    PipeState state = PipeState::idle;
    int32_t pc = -1;       // instruction being started / executed
    isa::SyncArgs flag{};  // the flag set (set_flag step) or waited on (flag_wait)
    // The method's resume point and what the instruction in progress carries across it.
    PipeStep step = PipeStep::next;
    uint64_t start_cycle = 0;  // s of the instruction in progress
    uint64_t set_cycle = 0;    // set_flag: t_set
    int32_t op_index = -1;     // sync instructions: op_index (their entry is already freed)
    // PipeStats of this pipe, kept here (hot) and added to stats_ by flush_stats.
    uint64_t instructions = 0, busy_cycles = 0;
  };

  void scalar_method();
  void pipe_method(isa::Pipe p);
  void run_pipe(isa::Pipe p);
  void run_scalar();
  void execute_data(isa::Pipe p, const Entry& e, uint64_t start);
  /// core.cube.model: rtl. Hands the resolved int8 mmad at `pc`, started at `start` with
  /// instruction_cost `cycles` (occupancy + latency), to the RTL cube, after computing its
  /// expected L0C bytes with isa/semantics from the operands as they are at `start`.
  void rtl_issue(int32_t pc, const isa::Instruction& resolved, uint64_t start, uint64_t cycles);
  /// The RTL completed the oldest mmad handed to it: compares its L0C bytes and its cycles; a
  /// mismatch fails the run naming the instruction, the C block and the first differing element.
  void rtl_complete(const rtl::RtlCompletion& done);
  /// One TLM-2.0 transaction of `bytes` at GM `address` through MTE2 (reads, L2 hints) or MTE3
  /// (writes), carrying `in` in ext_; `data` may be null (timing only, or an L2 hint). Fails
  /// internally (naming `target`) when the target does not answer OK.
  void gm_transaction(tlm::tlm_command command, uint64_t address, unsigned char* data,
                      unsigned int bytes, const isa::Instruction* in, bool functional,
                      const char* target);
  /// Enters the instruction at scalar_pc_ into its pipe's queue at max(t + c_s, ...); false when
  /// the queue is full (the method then waits on progress_ and calls it again).
  bool dispatch(const Decoded& d, int32_t pc);
  /// Resolves code_[e.pc] with the register values of its entry into run_.resolved.
  const isa::Instruction& resolve_entry(const Entry& e);
  /// After an instruction the scalar unit handled: moves to `next`, checks max_cycles; false when
  /// it yields to SystemC (every kQuantum instructions).
  bool advance(size_t next);
  /// Ends a barrier or core_barrier: its trace event, the scalar unit running again.
  void end_barrier();
  /// Creates the core's events on the first run of any of its processes (unit_events_).
  void make_events();
  /// Op cycle bounds and (when tracing) the trace event of one instruction of pipe `p`.
  void record(isa::Pipe p, isa::Opcode opcode, int32_t pc, int32_t op_index, uint64_t start,
              uint64_t duration, uint64_t completion, uint64_t flow_id = 0);
  /// The trace flow id of the next use of flag `s` counted in `seq` (set_seq_ or wait_seq_).
  uint64_t flow_id(const isa::SyncArgs& s, std::vector<uint64_t>& seq);
  bool drained() const;
  /// True (after next_trigger for the time left) when SystemC time is before `target_cycle`:
  /// the calling method returns and resumes at that cycle.
  bool wait_until(uint64_t target_cycle);
  int64_t& flag(const isa::SyncArgs& s);
  std::string where(int32_t pc) const;
  std::string pipe_line(int p) const;

  const int id_;
  RunState& run_;
  CoreBarrier& core_barrier_;
  const npu::HwConfig& hw_;
  const std::vector<isa::Instruction>& code_;
  std::vector<Decoded> decoded_;      // code_ decoded (Decoded), one per instruction
  std::vector<Range> static_ranges_;  // the access ranges of the ranges_known instructions
  size_t op_count_ = 0;
  CoreStats& stats_;
  const uint64_t cs_;            // scalar cycles per instruction
  const size_t depth_;           // issue queue depth
  const int events_;             // sync event ids
  const uint64_t load_latency_;  // lbu's wait for its byte: dram.latency_cycles
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
  std::array<bool, isa::kNumPipes> has_process_{};    // pipes the stream uses
  std::array<ZeroedBytes, isa::kNumScopes> scratch_;  // functional mode only
  isa::CoreMemory memory_;
  std::array<uint64_t, isa::kNumScopes> sizes_{};
  std::vector<int64_t> flags_;                // [src pipe][dst pipe][event]
  std::vector<uint64_t> set_seq_, wait_seq_;  // tracing: sets / waits of each flag so far

  // The core's events: progress_, then each pipe's pushed and flag_set. Made when the simulation
  // runs (make_events), not at elaboration: SystemC names an event made during elaboration and
  // files the name in its object table (a map of strings, which at 1,024 cores cost more than
  // the rest of a core's construction); an event made while running is not named.
  std::unique_ptr<sc_core::sc_event[]> unit_events_;
  sc_core::sc_event* progress_ = nullptr;  // a pipe started an instruction or finished a wait_flag
  bool scalar_listening_ = false;
  ScalarState scalar_state_ = ScalarState::running;
  int32_t scalar_pc_ = 0;
  isa::Pipe scalar_blocked_pipe_ = isa::Pipe::scalar;
  uint64_t scalar_end_cycle_ = 0;
  // The scalar unit's method: its resume point and the state a thread would keep in locals.
  ScalarStep scalar_step_ = ScalarStep::fetch;
  std::array<int64_t, isa::kNumRegs> regs_{};
  uint64_t t_ = 0;  // local time of the scalar unit (>= SystemC time)
  uint64_t fetched_ = 0, executed_ = 0, since_sync_ = 0;
  size_t pc_ = 0;
  uint64_t barrier_arrival_ = 0;     // barrier / core_barrier: the cycle the scalar unit arrived
  uint64_t barrier_generation_ = 0;  // core_barrier: CoreBarrier::completed() when it arrived
  bool dispatch_waited_ = false;     // dispatch: the queue was full at the first try

  std::vector<sc_core::sc_process_handle> processes_;

  /// core.cube.model: rtl: the verilated cube, and the mmads handed to it, oldest first.
  struct RtlCheck {
    int32_t pc = 0;
    uint64_t issue_cycle = 0, expected_cycles = 0;
    int64_t c_offset = 0;           // L0C byte address of C
    uint32_t m1 = 0, n1 = 0;        // C's blocks
    std::vector<uint8_t> expected;  // C's bytes as isa/semantics computes them
  };
  /// Deletes the RtlCube (defined in core.cpp: a build without Verilator has no RtlCube, and its
  /// rtl_cube_ is always empty).
  struct RtlCubeDeleter {
    void operator()(rtl::RtlCube* cube) const;
  };
  std::unique_ptr<rtl::RtlCube, RtlCubeDeleter> rtl_cube_;
  std::deque<RtlCheck> rtl_checks_;
  std::vector<uint64_t> rtl_sampled_;  // int8 mmads sent to the RTL, per op_index + 1 (0: none)

  tlm::tlm_generic_payload trans_;
  DmaExtension ext_;
};

}  // namespace tessel::sim
