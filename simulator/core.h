// One NPU core as a SystemC module: a scalar unit that fetches, executes scalar instructions and
// dispatches the rest into bounded in-order per-pipe issue queues, and one process per pipe (mte2,
// mte1, cube, fix, vector, mte3) its stream uses. Timing follows docs/isa.md, "Timing".
//
// Time: 1 time unit = 1 core cycle. The scalar unit runs ahead of simulated time with a local
// clock (temporal decoupling): it only synchronises when it must (a full issue queue, a barrier,
// a core_barrier, and every kQuantum instructions). This is exact because the scalar unit's
// behaviour depends on the pipes only through those three points. Pipes run in simulated time
// (they wait until each instruction's start cycle), so flags, DRAM arbitration and the
// functional effects happen in global time order.
//
// Processes: every unit is a process of the run's MethodKernel (simulator/method_kernel.h: the
// scheduling of SystemC's SC_METHODs, in compact arrays inside one SystemC method), written as a
// resumable state machine (ScalarStep, PipeStep): where a thread would wait, the unit records
// where it stopped, asks the kernel for what the thread would have waited for (an event, or a
// number of cycles) and returns. The kernel runs the processes in the order SystemC runs one
// SC_METHOD per unit, so every simulated cycle is the same as with SystemC's own processes
// (docs/results.md, "Scale with cores", has the host times).
#pragma once

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
#include "simulator/method_kernel.h"
#include "simulator/run_state.h"

namespace tessel::rtl {
class RtlCube;
struct RtlCompletion;
}  // namespace tessel::rtl

namespace tessel::sim {

/// Synchronises the scalar units of all cores at core_barrier (the n-th of each core match).
class CoreBarrier {
 public:
  /// `multicast`: the run's pending dma_mc reads, dropped at every release (may be null);
  /// released() is an event of `kernel`.
  CoreBarrier(int cores, MethodKernel& kernel, MulticastTable* multicast = nullptr)
      : cores_(cores), multicast_(multicast), kernel_(kernel), released_(kernel.add_event()) {}
  /// Called by a scalar unit that reached a core_barrier at `arrival_cycle` (its local time, after
  /// the local barrier). The last core to arrive releases the barrier: completed() grows by one,
  /// release_cycle() = max(arrival_cycle over cores), released() is notified. A caller whose
  /// completed() is still what it read before arriving waits on released().
  void arrive(uint64_t arrival_cycle);
  int arrived() const { return arrived_; }
  uint64_t completed() const { return generation_; }
  uint64_t release_cycle() const { return release_; }
  /// The kernel event notified at every release.
  uint32_t released() const { return released_; }

 private:
  int cores_;
  MulticastTable* multicast_;
  MethodKernel& kernel_;
  int arrived_ = 0;
  uint64_t max_arrival_ = 0, release_ = 0, generation_ = 0;
  uint32_t released_;
};

class Core : public sc_core::sc_module {
 public:
  /// Yield to the SystemC kernel at least every kQuantum scalar-unit instructions.
  static constexpr uint64_t kQuantum = 4096;

  /// With core.cube.model: rtl the core instantiates the verilated cube (rtl::RtlCube) and its
  /// int8 mmads run on it (docs/rtl.md); throws tessel::Error when the build has no RTL, the run
  /// is not functional or the config's cube is not the verilated one.
  Core(sc_core::sc_module_name name, int id, RunState& run, CoreBarrier& barrier);
  ~Core() override;

  /// Connects MTE2 (GM loads, L2 hints) and MTE3 (GM stores) to the memory target (the Dram, or
  /// the L2): TLM-2.0 b_transport through its forward interface (CoreTarget, dram.h).
  void connect(tlm::tlm_fw_transport_if<>& target) { target_ = &target; }

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

 private:
  /// One instruction as the simulator's hot path reads it, decoded once at construction: 56
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
    // data: its StatClass (stat_classes_), found while decoding: flush_stats reads these, not
    // the instruction (at 1,024 cores a second pass over the 192-byte instructions).
    uint16_t stat_class = 0;      // kNoStatClass: none (flush_stats prices the instruction)
    bool cost_known : 1 = false;  // data: `occupancy`/`latency` hold npu::instruction_cost
    bool is_dma : 1 = false;      // data: dma or dma_mc (needs the resolved operands at start)
    bool x0_only : 1 = false;  // data: every memory operand uses x0 (the instruction is resolved)
    // data: times dispatched, which in a run that finishes (the only one whose stats are read)
    // is the times started; the stats are summed in flush_stats.
    uint64_t executed = 0;
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
        // The entry's start flags (Entry::kFastStart ...) and, for a dma with them, the GM
        // bytes it moves and the burst-rounded bytes the DRAM charges (npu::dma_gm_bytes,
        // npu::dma_gm_burst_bytes: both address-independent for a ranges_known dma).
        uint8_t start_flags;
        uint32_t gm_bytes, burst_bytes;
      } cost;
    };
    Decoded() : scalar() {}
  };
  /// What one execution of a data instruction adds to CoreStats (npu::scope_traffic and
  /// npu::count_ops: both read no address, and count_ops only adds), shared by the stream's
  /// instructions that add the same.
  static_assert(sizeof(Decoded) <= 56, "the decoded record stays within 56 bytes");
  static constexpr uint16_t kNoStatClass = UINT16_MAX;
  struct StatClass {
    npu::ScopeTraffic traffic;
    npu::OpCounts ops;
    uint64_t executed = 0;  // flush_stats: executions of its instructions
  };
  /// An access range in 24 bytes (isa::AccessRange pads to 32).
  struct Range {
    uint64_t begin = 0, end = 0;
    isa::Scope scope = isa::Scope::gm;
    bool write = false;
  };
  /// A queued instruction in 48 bytes: its index and its access ranges, which are the
  /// instruction's precomputed ones (static_ranges_) or, for an instruction whose operands use
  /// registers, its ring place's Resolved record (ranges and the register values at dispatch:
  /// the instruction is resolved from code_ and these when it starts). No copy of the
  /// instruction. The entry carries what its pipe needs to start it, copied from the Decoded
  /// record while the scalar unit has that in cache: a sync instruction's kind, flag and
  /// op_index; a data instruction with kFastStart its cost and (a dma) its GM bytes. The pipe
  /// then starts it reading the entry alone, not decoded_ and code_ too (at 1,024 cores every
  /// separate record is a cache miss).
  struct Entry {
    /// start_flags: kFastStart = the cost is occupancy/latency and nothing but a plain GM dma
    /// (kGmDma, kGmLoad: GM is its source) needs the instruction (no dma_mc, no L2 hint; the run
    /// computes no values).
    static constexpr uint8_t kFastStart = 1, kGmDma = 2, kGmLoad = 4;
    uint64_t enqueue_cycle = 0;
    const Range* ranges = nullptr;  // nranges of them
    int32_t pc = 0;
    int32_t op_index = -1;
    uint32_t occupancy = 0, latency = 0;     // kFastStart: cycles
    uint32_t gm_bytes = 0, burst_bytes = 0;  // kGmDma: npu::dma_gm_bytes, dma_gm_burst_bytes
    isa::Opcode op = isa::Opcode::li;
    isa::InstrKind kind = isa::InstrKind::data;
    isa::SyncArgs sync{};  // set_flag / wait_flag
    uint8_t nranges = 0;
    uint8_t start_flags = 0;
    const Range* begin() const { return ranges; }
    const Range* end() const { return ranges + nranges; }
  };
  /// What an entry of an instruction resolved at dispatch holds (one per ring place, allocated
  /// only for a pipe whose stream has such instructions): its ranges and the values of the
  /// registers its memory operands use (Decoded::regs).
  struct Resolved {
    std::array<Range, isa::kMaxAccessRanges> ranges{};
    std::array<int64_t, 4> reg_values{};
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

  /// One pipe: its issue queue and the state of the instruction in progress, the fields every
  /// activation reads first, in its first cache line (at 1,024 cores each line a core touches is
  /// a miss: docs/results.md, "Scale with cores").
  struct alignas(64) PipeUnit {
    // Where the process resumes and what the instruction in progress carries across it.
    PipeStep step = PipeStep::next;
    PipeState state = PipeState::idle;
    isa::SyncArgs flag{};   // the flag set (set_flag step) or waited on (flag_wait)
    int32_t pc = -1;        // instruction being started / executed
    int32_t op_index = -1;  // sync instructions: op_index (their entry is already consumed)
    // The issue queue: `depth` entries in issue order, a ring from `head` (the next to start).
    uint32_t head = 0, size = 0, depth = 0;
    uint32_t pushed = MethodKernel::kNone;    // event: an entry was added (waited on when empty)
    uint32_t flag_set = MethodKernel::kNone;  // event: a flag whose dst is this pipe was set
    uint32_t progress = MethodKernel::kNone;  // the core's progress_ (a copy, in this line)
    Entry* entries = nullptr;                 // ring_[0, depth)
    uint64_t free_cycle = 0;                  // start + occupancy of the previous instruction
    uint64_t max_completion = 0;              // completion of every instruction started so far
    uint64_t start_cycle = 0;                 // s of the instruction in progress
    uint64_t set_cycle = 0;                   // set_flag: t_set
    // PipeStats of this pipe, kept here (hot) and added to stats_ by flush_stats.
    uint64_t instructions = 0, busy_cycles = 0;
    std::vector<InflightWrite> writes;  // written ranges of instructions not yet complete
    std::vector<Entry> ring;            // the queue's storage (entries points here)
    std::vector<Resolved> resolved;     // per ring place, for instructions resolved at dispatch
    const Entry& queued(size_t i) const { return entries[(head + i) % depth]; }
    /// Ring place `i` + 1 (i < depth): a compare, not a division (at every start).
    uint32_t after(uint32_t i) const { return i + 1 == depth ? 0 : i + 1; }
  };

  /// The kernel's process bodies: the scalar unit (arg 0) and pipe `arg`.
  static void scalar_process(void* core, uint32_t arg);
  static void pipe_process(void* core, uint32_t pipe);
  /// Their prefetch hints (MethodKernel::Prefetch): the lines their next activation reads.
  static void scalar_prefetch(void* core, uint32_t arg, bool deep);
  static void pipe_prefetch(void* core, uint32_t pipe, bool deep);
  void scalar_method();
  void pipe_method(isa::Pipe p);
  void run_pipe(isa::Pipe p);
  void run_scalar();
  /// Starts data instruction `e` (ring place `slot`) of pipe `p` at cycle `start`.
  void execute_data(isa::Pipe p, const Entry& e, uint32_t slot, uint64_t start);
  /// execute_data without kFastStart: from the decoded record and the (resolved) instruction;
  /// sets the instruction's occupancy and latency.
  void execute_data_slow(PipeUnit& pu, const Entry& e, uint32_t slot, uint64_t start,
                         uint64_t& occupancy, uint64_t& latency);
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
  /// `burst_bytes` > 0: npu::dma_gm_burst_bytes of `in`, known to the caller (DmaExtension).
  void gm_transaction(tlm::tlm_command command, uint64_t address, unsigned char* data,
                      unsigned int bytes, const isa::Instruction* in, bool functional,
                      const char* target, uint64_t burst_bytes = 0);
  /// Enters the instruction at scalar_pc_ into its pipe's queue at max(t + c_s, ...); false when
  /// the queue is full (the method then waits on progress_ and calls it again).
  bool dispatch(Decoded& d, int32_t pc);
  /// Resolves code_[e.pc] with the register values of its entry (in slot `slot` of pipe `pu`)
  /// into run_.resolved.
  const isa::Instruction& resolve_entry(const PipeUnit& pu, const Entry& e, uint32_t slot);
  /// After an instruction the scalar unit handled: moves to `next`, checks max_cycles; false when
  /// it yields to SystemC (every kQuantum instructions).
  bool advance(size_t next);
  /// Ends a barrier or core_barrier: its trace event, the scalar unit running again.
  void end_barrier();
  /// Op cycle bounds and (when tracing) the trace event of one instruction of pipe `p`.
  void record(isa::Pipe p, isa::Opcode opcode, int32_t pc, int32_t op_index, uint64_t start,
              uint64_t duration, uint64_t completion, uint64_t flow_id = 0);
  /// The trace flow id of the next use of flag `s` counted in `seq` (set_seq_ or wait_seq_).
  uint64_t flow_id(const isa::SyncArgs& s, std::vector<uint64_t>& seq);
  bool drained() const;
  /// True (after waiting for the time left) when the kernel's time is before `target_cycle`:
  /// the calling process returns and resumes at that cycle.
  bool wait_until(uint64_t target_cycle);
  int64_t& flag(const isa::SyncArgs& s);
  std::string where(int32_t pc) const;
  std::string pipe_line(int p) const;

  const int id_;
  RunState& run_;
  MethodKernel& kernel_;
  CoreBarrier& core_barrier_;
  const npu::HwConfig& hw_;
  const std::vector<isa::Instruction>& code_;
  std::vector<Decoded> decoded_;         // code_ decoded (Decoded), one per instruction
  std::vector<Range> static_ranges_;     // the access ranges of the ranges_known instructions
  std::vector<StatClass> stat_classes_;  // Decoded::stat_class
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

  // The scalar unit's state (read by every activation of the scalar unit), then the flags.
  // Kernel event: a pipe started an instruction or went idle (the scalar unit waits on it). The
  // core's events are progress_ + k: k = 0 progress_, 2p - 1 pipe p's pushed, 2p its flag_set.
  uint32_t progress_ = MethodKernel::kNone;
  ScalarState scalar_state_ = ScalarState::running;
  int32_t scalar_pc_ = 0;
  isa::Pipe scalar_blocked_pipe_ = isa::Pipe::scalar;
  uint64_t scalar_end_cycle_ = 0;
  // The scalar unit's method: its resume point and the state a thread would keep in locals.
  ScalarStep scalar_step_ = ScalarStep::fetch;
  uint64_t t_ = 0;  // local time of the scalar unit (>= the kernel's time)
  uint64_t fetched_ = 0, executed_ = 0, since_sync_ = 0;
  size_t pc_ = 0;
  uint64_t barrier_arrival_ = 0;     // barrier / core_barrier: the cycle the scalar unit arrived
  uint64_t barrier_generation_ = 0;  // core_barrier: CoreBarrier::completed() when it arrived
  bool dispatch_waited_ = false;     // dispatch: the queue was full at the first try

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

  std::vector<int64_t> flags_;  // [src pipe][dst pipe][event]
  std::array<int64_t, isa::kNumRegs> regs_{};

  std::array<PipeUnit, isa::kNumPipes> pipes_;
  std::array<bool, isa::kNumPipes> has_process_{};    // pipes the stream uses
  std::array<ZeroedBytes, isa::kNumScopes> scratch_;  // functional mode only
  isa::CoreMemory memory_;
  std::array<uint64_t, isa::kNumScopes> sizes_{};
  std::vector<uint64_t> set_seq_, wait_seq_;  // tracing: sets / waits of each flag so far

  tlm::tlm_fw_transport_if<>* target_ = nullptr;  // connect()
  tlm::tlm_generic_payload trans_;
  DmaExtension ext_;
};

}  // namespace tessel::sim
