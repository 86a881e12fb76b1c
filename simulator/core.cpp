// Core module: scalar unit + pipes. The timing rules implemented here are docs/isa.md, "Timing":
//  - scalar unit: every instruction takes c_s cycles; a pipe instruction issued at t enters its
//    queue at q = max(t + c_s, start cycle of the entry `depth` places ahead of it in that queue);
//    the next instruction issues at q.
//  - pipe: start s = max(q, pipe_free, hazard_ready); completion = s + occupancy + latency.
//  - set_flag: sets its flag at max(s, completion of every earlier instruction of the pipe).
//  - wait_flag: holds the pipe until the flag is positive, then decrements it.
//  - barrier: the scalar unit continues at max(t + c_s, completion of everything dispatched).
#include "simulator/core.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "compiler/support/error.h"
#include "isa/asm.h"
#include "isa/operand_classes.h"
#include "npu_model/timing.h"
#ifdef TESSEL_HAVE_RTL
#include "simulator/rtl/rtl_cube.h"
#endif

namespace tessel::sim {

using isa::Opcode;
using isa::Pipe;
using isa::Scope;

namespace {

std::string text_of(const isa::Instruction& in) {
  try {
    return isa::format_instruction(in);
  } catch (const std::exception&) {
    return isa::opcode_name(in.op);
  }
}

template <class R>
bool overlaps(const R& a, const R& b) {
  return a.scope == b.scope && a.begin < b.end && b.begin < a.end;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

void CoreBarrier::arrive(uint64_t arrival_cycle) {
  max_arrival_ = std::max(max_arrival_, arrival_cycle);
  if (++arrived_ < cores_) return;
  release_ = max_arrival_;
  arrived_ = 0;
  max_arrival_ = 0;
  ++generation_;
  if (multicast_) multicast_->clear();
  kernel_.notify(released_);
}

// ---------------------------------------------------------------------------------------------

Core::ZeroedBytes::ZeroedBytes(uint64_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fail("cannot map {} bytes of scratchpad memory: {}", bytes, std::strerror(errno));
  data_ = static_cast<uint8_t*>(p);
}

Core::ZeroedBytes::~ZeroedBytes() {
  if (data_) ::munmap(data_, bytes_);
}

Core::ZeroedBytes& Core::ZeroedBytes::operator=(ZeroedBytes&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, bytes_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Core::Core(sc_core::sc_module_name name, int id, RunState& run, CoreBarrier& barrier)
    : sc_core::sc_module(name),
      id_(id),
      run_(run),
      kernel_(run.kernel),
      core_barrier_(barrier),
      hw_(*run.hw),
      code_((*run.code)[id]),
      stats_(run.result.cores[id]),
      cs_(static_cast<uint64_t>(std::max(0, run.hw->core.scalar.cycles_per_instruction))),
      depth_(static_cast<size_t>(std::max(0, run.hw->core.scalar.issue_queue_depth))),
      events_(run.hw->core.sync_event_ids),
      load_latency_(static_cast<uint64_t>(std::max(0, run.hw->dram.latency_cycles))),
      functional_(run.options->functional) {
  const auto& core = hw_.core;
  if (core.scalar.cycles_per_instruction < 1)
    fail("hardware config: core.scalar.cycles_per_instruction is {}, expected >= 1",
         core.scalar.cycles_per_instruction);
  if (core.scalar.issue_queue_depth < 1)
    fail("hardware config: core.scalar.issue_queue_depth is {}, expected >= 1",
         core.scalar.issue_queue_depth);
  if (events_ < 0) fail("hardware config: core.sync.event_ids is {}, expected >= 0", events_);

  const auto& b = core.buffers_bytes;
  const std::array<int64_t, isa::kNumScopes> bytes{0, b.l1, b.l0a, b.l0b, b.l0c, b.ub};
  sizes_[int(Scope::gm)] = run.gm_bytes;
  memory_.base[int(Scope::gm)] = run.gm;
  for (int s = 1; s < isa::kNumScopes; ++s) {
    if (bytes[s] < 0)
      fail("hardware config: core.buffers_bytes.{} is {}, expected >= 0", isa::scope_name(Scope(s)),
           bytes[s]);
    sizes_[s] = static_cast<uint64_t>(bytes[s]);
    if (functional_) {
      scratch_[s] = ZeroedBytes(sizes_[s]);
      memory_.base[s] = scratch_[s].data();
    }
  }
  memory_.size = sizes_;
  flags_.assign(size_t{isa::kNumPipes} * isa::kNumPipes * std::max(events_, 0), 0);
  if (run.tracing) {
    set_seq_.assign(flags_.size(), 0);
    wait_seq_.assign(flags_.size(), 0);
  }

  // The stream checked (isa::check_stream's checks) and decoded (Decoded) in one pass: the only
  // time a run reads the whole stream (at 1,024 cores the streams exceed the host's caches).
  decoded_.resize(code_.size());
  for (size_t i = 0; i < code_.size(); ++i) {
    const isa::Instruction& in = code_[i];
    isa::check_instruction(in, i, code_.size(), static_cast<size_t>(id_));
    Decoded& d = decoded_[i];
    d.op = in.op;
    d.kind = isa::instr_info(in.op).kind;
    d.pipe = in.pipe();
    d.op_index = in.op_index;
    if (in.op_index >= 0) op_count_ = std::max(op_count_, static_cast<size_t>(in.op_index) + 1);
    // A pipe no instruction of the stream runs on gets no process (below).
    const int pipe = int(d.pipe);  // scalar (0) for what the scalar unit executes itself
    if (pipe > 0 && pipe < isa::kNumPipes) has_process_[pipe] = true;  // dispatch rejects others
    switch (d.kind) {
      case isa::InstrKind::alu:
      case isa::InstrKind::load:
      case isa::InstrKind::branch:
      case isa::InstrKind::jump:
        d.scalar = std::get<isa::ScalarArgs>(in.args);
        break;
      case isa::InstrKind::set_flag:
      case isa::InstrKind::wait_flag:
        d.sync = std::get<isa::SyncArgs>(in.args);
        break;
      case isa::InstrKind::data: {
        d.cost = {};
        d.is_dma = std::holds_alternative<isa::DmaArgs>(in.args);
        d.x0_only = true;
        // The registers isa::resolve reads (x0 reads as 0; an invalid one fails at dispatch).
        std::visit(
            [&](const auto& a) {
              using A = std::decay_t<decltype(a)>;
              isa::opclass::for_each_field<A>([&](const auto& f) {
                using K = typename std::decay_t<decltype(f)>::kind_type;
                if constexpr (isa::opclass::kIsMemory<K>) {
                  const uint8_t r = isa::opclass::mem_ref(f.get(a)).reg;
                  if (r != 0) d.x0_only = false;
                  if (r == 0 || r >= isa::kNumRegs) return;
                  for (uint8_t k = 0; k < d.nregs; ++k)
                    if (d.regs[k] == r) return;
                  if (d.nregs < d.regs.size()) d.regs[d.nregs++] = r;
                }
              });
            },
            in.args);
        // The cost formulas read no address (npu/timing.h), so the unresolved instruction's cost
        // is the resolved one's. An instruction they reject is priced again when it starts, and
        // fails there as it always did.
        try {
          const npu::InstrCost c = npu::instruction_cost(hw_, in);
          d.cost.occupancy = c.occupancy_cycles;
          d.cost.latency = c.latency_cycles;
          d.cost_known = true;
        } catch (...) {
        }
        // An instruction whose operands all use x0 is its own resolved form: its access ranges
        // are the same at every dispatch. One that fails these checks is resolved and checked at
        // dispatch, and fails there as it always did.
        if (d.x0_only) {
          try {
            const isa::AccessRangeList ranges = isa::access_range_list(hw_, in);
            isa::check_ranges(in, ranges, sizes_);
            d.cost.ranges_at = static_cast<uint32_t>(static_ranges_.size());
            d.cost.nranges = static_cast<uint8_t>(ranges.count);
            for (const isa::AccessRange& r : ranges)
              static_ranges_.push_back(Range{r.begin, r.end, r.scope, r.write});
            d.cost.ranges_known = true;
          } catch (...) {
          }
        }
        // Its statistics, while the instruction is in cache (flush_stats reads the classes, not
        // the instruction): a class of the stream's that adds the same, else a new one. A stream
        // repeats a few shapes (the tiles of a kernel), so the recent classes are looked at.
        // One the formulas reject gets none (kNoStatClass): flush_stats prices it from the
        // instruction if it ever executed, as it always did.
        try {
          StatClass c;
          c.traffic = npu::scope_traffic(hw_, in);
          npu::count_ops(hw_, d.pipe, in, c.traffic, c.ops);
          const size_t n = stat_classes_.size(), lo = n > 8 ? n - 8 : 0;
          size_t k = n;
          for (size_t j = n; j-- > lo;)
            if (stat_classes_[j].traffic.read == c.traffic.read &&
                stat_classes_[j].traffic.written == c.traffic.written &&
                stat_classes_[j].ops == c.ops) {
              k = j;
              break;
            }
          if (k >= kNoStatClass) throw 0;  // more classes than the field holds: none
          if (k == n) stat_classes_.push_back(c);
          d.stat_class = static_cast<uint16_t>(k);
        } catch (...) {
          d.stat_class = kNoStatClass;
        }
        // What lets the pipe start it from its entry alone (Entry::kFastStart).
        d.cost.start_flags = 0;
        d.cost.gm_bytes = d.cost.burst_bytes = 0;
        const bool l2_hint = d.op == Opcode::l2_prefetch || d.op == Opcode::l2_discard;
        const bool fits =
            d.cost_known && d.cost.occupancy <= UINT32_MAX && d.cost.latency <= UINT32_MAX;
        if (fits && !functional_ && !l2_hint && d.op != Opcode::dma_mc) {
          if (!d.is_dma) {
            d.cost.start_flags = Entry::kFastStart;
          } else if (const auto* dma = std::get_if<isa::DmaArgs>(&in.args);
                     dma && d.cost.ranges_known) {
            const bool gm = dma->src.scope == Scope::gm || dma->dst.scope == Scope::gm;
            const uint64_t g = gm ? npu::dma_gm_bytes(*dma) : 0;
            const uint64_t burst = g > 0 ? npu::dma_gm_burst_bytes(hw_, *dma) : 0;
            if (g <= UINT32_MAX && burst <= UINT32_MAX) {
              d.cost.start_flags = Entry::kFastStart;
              if (gm) d.cost.start_flags |= Entry::kGmDma;
              if (dma->src.scope == Scope::gm) d.cost.start_flags |= Entry::kGmLoad;
              d.cost.gm_bytes = static_cast<uint32_t>(g);
              d.cost.burst_bytes = static_cast<uint32_t>(burst);
            }
          }
        }
        break;
      }
      default:
        break;
    }
  }

  // A pipe no instruction of the stream runs on gets no process: it would only wait, idle, for
  // the whole run (a 1,024-core run whose kernel uses three pipes per core spawns half the
  // processes). Its PipeUnit stays idle and empty, which is all the barrier, drained() and the
  // reports read.
  for (int p = 1; p < isa::kNumPipes; ++p) {
    if (!has_process_[p]) continue;
    PipeUnit& pu = pipes_[p];
    if (depth_ > UINT32_MAX / 2)
      fail("hardware config: core.scalar.issue_queue_depth is {}, expected at most {}", depth_,
           UINT32_MAX / 2);
    pu.ring.resize(depth_);
    pu.entries = pu.ring.data();
    pu.depth = static_cast<uint32_t>(depth_);
    pu.writes.reserve(32);
  }

  // core.cube.model: rtl (docs/rtl.md): the verilated cube executes the cube pipe's int8 mmads.
  if (core.cube.model == npu::CubeModel::rtl && has_process_[int(Pipe::cube)]) {
    const std::string config = hw_.source_file.empty() ? "hardware config" : hw_.source_file;
#ifdef TESSEL_HAVE_RTL
    if (!functional_)
      fail("{}: core.cube.model: rtl needs a functional run (the RTL computes the values)", config);
    rtl::check_rtl_cube_config(hw_, config);
    run_.result.rtl.enabled = true;
    // The RTL is clocked by SystemC: the kernel hands every time advance to SystemC.
    run_.kernel.set_yield_at_time_advance(true);
    const npu::CubeFractal f = core.cube.int8_fractal();
    rtl_cube_.reset(new rtl::RtlCube(
        "rtl_cube", memory_, rtl::RtlCubeShape{f.m, f.k, f.n, core.cube.pipeline_latency_cycles}));
    rtl_cube_->on_complete = [this](const rtl::RtlCompletion& done) {
      try {
        rtl_complete(done);
      } catch (...) {
        run_.fail_with(std::current_exception());
      }
    };
    rtl_cube_->on_error = [this](const std::string& message) {
      const int32_t pc = rtl_checks_.empty() ? -1 : rtl_checks_.front().pc;
      try {
        fail("core {} {}: RTL cube: {}", id_, where(pc), message);
      } catch (...) {
        run_.fail_with(std::current_exception());
      }
    };
#else
    fail(
        "{}: core.cube.model: rtl, but this tessel was built without Verilator (no RTL cube; "
        "scripts/install_deps.sh installs it, docs/rtl.md)",
        config);
#endif
  }

  // The kernel's processes (header comment), in the order the SC_METHODs were spawned: the
  // scalar unit, then the pipes. Each runs once at initialisation, then when what it waited for
  // happens. The events: progress_, then each pipe's pushed and flag_set (every pipe's, so that
  // a pipe finds another's flag_set from progress_ alone, without reading that pipe's state).
  kernel_.add_process(this, &Core::scalar_process, 0, &Core::scalar_prefetch);
  for (int p = 1; p < isa::kNumPipes; ++p)
    if (has_process_[p])
      kernel_.add_process(this, &Core::pipe_process, static_cast<uint32_t>(p),
                          &Core::pipe_prefetch);
  progress_ = kernel_.add_event();
  for (int p = 1; p < isa::kNumPipes; ++p) {
    pipes_[p].pushed = kernel_.add_event();    // = progress_ + 2p - 1
    pipes_[p].flag_set = kernel_.add_event();  // = progress_ + 2p
    pipes_[p].progress = progress_;
  }
  // The payload carries ext_ from here (nothing below can throw: a constructor that throws runs
  // no ~Core, and the payload would delete its extension) until ~Core. Set per transaction, the
  // payload's extension array was one more cache miss per dma at 1,024 cores.
  trans_.set_extension(&ext_);
}

Core::~Core() {
  trans_.clear_extension(&ext_);  // the payload would delete a member extension
}

void Core::scalar_process(void* core, uint32_t) { static_cast<Core*>(core)->scalar_method(); }

void Core::pipe_process(void* core, uint32_t pipe) {
  static_cast<Core*>(core)->pipe_method(Pipe(pipe));
}

void Core::scalar_prefetch(void* core, uint32_t, bool deep) {
  const Core& c = *static_cast<const Core*>(core);
  if (!deep) {  // the scalar unit's state
    __builtin_prefetch(&c.decoded_);
    __builtin_prefetch(&c.progress_);
    __builtin_prefetch(&c.dispatch_waited_);
    return;
  }
  // The instruction it fetches or dispatches next, and the entry it fills if that one is queued.
  if (c.pc_ >= c.decoded_.size()) return;
  const Decoded& d = c.decoded_[c.pc_];
  __builtin_prefetch(&d);
  __builtin_prefetch(&d + 1);
}

void Core::pipe_prefetch(void* core, uint32_t pipe, bool deep) {
  const Core& c = *static_cast<const Core*>(core);
  const PipeUnit& pu = c.pipes_[pipe];
  if (!deep) {  // the pipe's state (PipeUnit: its first two lines) and the core's constants
    __builtin_prefetch(&pu);
    __builtin_prefetch(reinterpret_cast<const char*>(&pu) + 64);
    __builtin_prefetch(&c.id_);  // id_, run_, kernel_, ...: the line of the core's constants
    return;
  }
  // The flag counter a set_flag or wait_flag step reads (flags_: another allocation, a miss at
  // 1,024 cores otherwise).
  if (pu.step == PipeStep::set_flag || pu.step == PipeStep::wait_flag)
    __builtin_prefetch(
        &c.flags_[(size_t(pu.flag.src) * isa::kNumPipes + size_t(pu.flag.dst)) * c.events_ +
                  pu.flag.event]);
  // The entry it starts next (48 bytes: it may span two lines).
  if (pu.size == 0) return;
  const Entry* head = &pu.entries[pu.head];
  __builtin_prefetch(head);
  __builtin_prefetch(reinterpret_cast<const char*>(head + 1) - 1);
}

bool Core::wait_until(uint64_t target_cycle) {
  const uint64_t now = kernel_.now();
  if (target_cycle <= now) return false;
  kernel_.wait_cycles(target_cycle - now);
  return true;
}

int64_t& Core::flag(const isa::SyncArgs& s) {
  return flags_[(size_t(s.src) * isa::kNumPipes + size_t(s.dst)) * events_ + s.event];
}

bool Core::drained() const {
  for (int p = 1; p < isa::kNumPipes; ++p)
    if (pipes_[p].size != 0 || pipes_[p].state != PipeState::idle) return false;
  return true;
}

bool Core::finished() const { return scalar_state_ == ScalarState::done && drained(); }

uint64_t Core::finish_cycle() const {
  uint64_t t = scalar_end_cycle_;
  for (int p = 1; p < isa::kNumPipes; ++p) t = std::max(t, pipes_[p].max_completion);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Scalar unit

void Core::scalar_method() {
  try {
    run_scalar();
  } catch (...) {
    run_.fail_with(std::current_exception());
  }
}

void Core::run_scalar() {
  const size_t n = code_.size();
  for (;;) {
    switch (scalar_step_) {
      case ScalarStep::fetch: {
        if (pc_ >= n) {
          scalar_end_cycle_ = t_;
          scalar_state_ = ScalarState::done;
          scalar_step_ = ScalarStep::done;
          auto& sp = stats_.pipes[int(Pipe::scalar)];
          sp.instructions += executed_;
          sp.busy_cycles += fetched_ * cs_;
          run_.result.instructions += fetched_;
          return;  // no wait: the process does not run again
        }
        const Decoded& d = decoded_[pc_];
        scalar_pc_ = static_cast<int32_t>(pc_);
        ++fetched_;
        const isa::InstrKind kind = d.kind;
        if (kind == isa::InstrKind::alu || kind == isa::InstrKind::branch ||
            kind == isa::InstrKind::jump) {
          size_t next = pc_ + 1;
          isa::execute_scalar(d.op, d.scalar, regs_, next);
          t_ += cs_;
          ++executed_;
          if (!advance(next)) return;
        } else if (kind == isa::InstrKind::load) {
          // lbu: the byte GM holds now (a barrier before it orders it after earlier stores; in a
          // timing-only run GM holds no values and it reads 1: every guarded block runs); the
          // scalar unit waits dram.latency_cycles for it (docs/isa.md, "Timing").
          try {
            isa::execute_load(d.scalar, regs_, functional_ ? memory_.base[int(Scope::gm)] : nullptr,
                              sizes_[int(Scope::gm)]);
          } catch (const Error& e) {
            fail("core {} instruction {}: {}", id_, pc_, e.what());
          }
          t_ += cs_ + load_latency_;
          ++executed_;
          if (!advance(pc_ + 1)) return;
        } else if (kind == isa::InstrKind::barrier || kind == isa::InstrKind::core_barrier) {
          ++executed_;
          barrier_arrival_ = t_;
          scalar_state_ = ScalarState::barrier;
          scalar_step_ = ScalarStep::barrier;
        } else {
          dispatch_waited_ = false;
          scalar_step_ = ScalarStep::dispatch;
        }
        break;
      }
      case ScalarStep::dispatch:
        if (!dispatch(decoded_[pc_], static_cast<int32_t>(pc_))) return;
        if (!advance(pc_ + 1)) return;
        break;
      case ScalarStep::barrier: {
        if (!drained()) {
          kernel_.wait_event(progress_);
          return;
        }
        uint64_t done = 0;
        for (int p = 1; p < isa::kNumPipes; ++p) done = std::max(done, pipes_[p].max_completion);
        t_ = std::max({t_ + cs_, done, kernel_.now()});
        if (decoded_[pc_].kind == isa::InstrKind::core_barrier) {
          scalar_state_ = ScalarState::core_barrier;
          barrier_generation_ = core_barrier_.completed();
          scalar_step_ = ScalarStep::core_barrier;
          core_barrier_.arrive(t_);
          break;  // the core_barrier step: waits, or continues at once when this core came last
        }
        end_barrier();
        if (!advance(pc_ + 1)) return;
        break;
      }
      case ScalarStep::core_barrier:
        if (core_barrier_.completed() == barrier_generation_) {
          kernel_.wait_event(core_barrier_.released());
          return;
        }
        t_ = core_barrier_.release_cycle();
        end_barrier();
        if (!advance(pc_ + 1)) return;
        break;
      case ScalarStep::done:
        return;
    }
  }
}

void Core::end_barrier() {
  const Decoded& in = decoded_[pc_];
  if (run_.tracing)
    run_.trace.push_back(TraceEvent{static_cast<uint32_t>(id_), Pipe::scalar, in.op,
                                    static_cast<int32_t>(pc_), in.op_index, barrier_arrival_,
                                    t_ - barrier_arrival_, t_});
  scalar_state_ = ScalarState::running;
  since_sync_ = 0;
}

bool Core::advance(size_t next) {
  const size_t n = code_.size();
  pc_ = next;
  scalar_step_ = ScalarStep::fetch;
  const uint64_t max_cycles = run_.options->max_cycles;
  if (max_cycles && t_ > max_cycles)
    fail("simulation exceeded max_cycles = {}: core {} scalar unit is at cycle {} at {}",
         max_cycles, id_, t_, where(static_cast<int32_t>(pc_ < n ? pc_ : n - 1)));
  if (++since_sync_ >= kQuantum) {
    since_sync_ = 0;
    if (wait_until(t_)) return false;
  }
  return true;
}

bool Core::dispatch(Decoded& in, int32_t pc) {
  const isa::InstrKind kind = in.kind;
  const bool is_sync = kind == isa::InstrKind::set_flag || kind == isa::InstrKind::wait_flag;
  if (is_sync && !dispatch_waited_) {  // validate before the pipe is looked up (a flag may name
                                       // the scalar unit)
    const isa::SyncArgs& s = in.sync;
    if (s.src == Pipe::scalar || s.dst == Pipe::scalar || s.src == s.dst ||
        int(s.src) >= isa::kNumPipes || int(s.dst) >= isa::kNumPipes)
      fail(
          "core {} instruction {} ({}): flag pipes must be two different pipes (not the scalar "
          "unit), got src {} dst {}",
          id_, pc, text_of(code_[pc]), isa::pipe_name(s.src), isa::pipe_name(s.dst));
    if (s.event >= events_)
      fail(
          "core {} instruction {} ({}): event id {} is out of range: the hardware has "
          "core.sync.event_ids = {}",
          id_, pc, text_of(code_[pc]), s.event, events_);
  }
  const Pipe p = in.pipe;
  PipeUnit& pu = pipes_[int(p)];
  uint64_t q = t_ + cs_;
  if (pu.size == depth_) {
    // The queue holds `depth` instructions that have not started: wait until one starts.
    scalar_state_ = ScalarState::dispatch_wait;
    scalar_blocked_pipe_ = p;
    dispatch_waited_ = true;
    kernel_.wait_event(progress_);
    return false;
  }
  if (dispatch_waited_) {
    scalar_state_ = ScalarState::running;
    const uint64_t wanted = q;
    q = std::max(q, kernel_.now());
    if (run_.tracing && q > wanted) {
      TraceEvent stall{
          static_cast<uint32_t>(id_), Pipe::scalar, in.op, pc, in.op_index, wanted, q - wanted, q};
      stall.queue = p;
      run_.trace.push_back(stall);
    }
  }
  uint32_t slot = pu.head + pu.size;  // the queue has room (size < depth)
  if (slot >= pu.depth) slot -= pu.depth;
  Entry& e = pu.entries[slot];
  e.nranges = 0;
  if (!is_sync && kind == isa::InstrKind::data && in.cost.ranges_known) {
    e.ranges = static_ranges_.data() + in.cost.ranges_at;  // no copy: the decoded ranges
    e.nranges = in.cost.nranges;
  } else if (!is_sync) {
    try {
      run_.resolved = isa::resolve(code_[pc], regs_);
      const isa::AccessRangeList ranges = isa::access_range_list(hw_, run_.resolved);
      isa::check_ranges(run_.resolved, ranges, sizes_);
      if (pu.resolved.empty()) pu.resolved.resize(pu.depth);  // the pipe's first one
      Resolved& r = pu.resolved[slot];
      for (const isa::AccessRange& a : ranges)
        r.ranges[e.nranges++] = Range{a.begin, a.end, a.scope, a.write};
      e.ranges = r.ranges.data();
      for (uint8_t k = 0; k < in.nregs; ++k) r.reg_values[k] = regs_[in.regs[k]];
    } catch (const Error& err) {
      fail("core {} instruction {} ({}): {}", id_, pc, text_of(code_[pc]), err.what());
    }
  }
  e.pc = pc;
  e.op_index = in.op_index;
  e.kind = kind;
  e.op = in.op;
  if (is_sync) e.sync = in.sync;
  if (kind == isa::InstrKind::data) {
    ++in.executed;  // its scope traffic and operation counts: flush_stats
    e.start_flags = in.cost.start_flags;
    if (e.start_flags & Entry::kFastStart) {
      e.occupancy = static_cast<uint32_t>(in.cost.occupancy);
      e.latency = static_cast<uint32_t>(in.cost.latency);
      e.gm_bytes = in.cost.gm_bytes;
      e.burst_bytes = in.cost.burst_bytes;
    }
  }
  e.enqueue_cycle = q;
  // Only a pipe waiting for an entry waits on `pushed` (an immediate notification nobody waits
  // for does nothing, and at 1,024 cores the event is one more cache miss).
  if (pu.size++ == 0 && pu.step == PipeStep::idle) kernel_.notify(pu.pushed);
  t_ = q;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Pipes

void Core::pipe_method(Pipe p) {
  try {
    run_pipe(p);
  } catch (...) {
    run_.fail_with(std::current_exception());
  }
}

void Core::run_pipe(Pipe p) {
  PipeUnit& pu = pipes_[int(p)];
  for (;;) {
    switch (pu.step) {
      case PipeStep::next:
        if (pu.size == 0) {
          pu.state = PipeState::idle;
          pu.pc = -1;
          kernel_.notify(pu.progress);  // a barrier may wait for this (else: nothing happens)
          pu.step = PipeStep::idle;
          kernel_.wait_event(pu.pushed);
          return;
        }
        [[fallthrough]];
      case PipeStep::idle: {
        if (pu.size == 0) {
          kernel_.wait_event(pu.pushed);
          return;
        }
        const Entry& head = pu.queued(0);
        const uint64_t now = kernel_.now();
        uint64_t s = std::max({now, head.enqueue_cycle, pu.free_cycle});
        if (!pu.writes.empty()) {
          // Drop writes that completed; then RAW/WAW against the rest (docs/isa.md: hazard_ready).
          std::erase_if(pu.writes,
                        [now](const InflightWrite& w) { return w.completion_cycle <= now; });
          for (const InflightWrite& w : pu.writes)
            for (const Range& r : head)
              if (overlaps(r, w.range)) s = std::max(s, w.completion_cycle);
        }
        pu.state = PipeState::waiting_start;
        pu.pc = head.pc;
        pu.start_cycle = s;
        pu.step = PipeStep::start;
        if (wait_until(s)) return;
        [[fallthrough]];
      }
      case PipeStep::start: {
        // Start: take the entry out of the queue (frees a place for the scalar unit). The entry
        // is read in place: the scalar unit, the only writer of the ring, cannot run before this
        // activation returns (the sync cases copy what they need first).
        const uint64_t s = pu.start_cycle;
        const uint32_t slot = pu.head;
        const Entry& cur = pu.entries[slot];
        pu.head = pu.after(pu.head);
        --pu.size;
        kernel_.notify(pu.progress);  // the scalar unit may wait for a place in the queue
        ++pu.instructions;
        switch (cur.kind) {
          case isa::InstrKind::set_flag:
            pu.flag = cur.sync;
            pu.op_index = cur.op_index;
            pu.set_cycle = std::max(s, pu.max_completion);
            pu.state = PipeState::draining;
            pu.step = PipeStep::set_flag;
            if (wait_until(pu.set_cycle)) return;
            break;
          case isa::InstrKind::wait_flag:
            pu.flag = cur.sync;
            pu.op_index = cur.op_index;
            pu.state = PipeState::flag_wait;
            pu.step = PipeStep::wait_flag;
            break;
          default:
            execute_data(p, cur, slot, s);  // does not yield: `cur` stays as it is until it returns
            pu.step = PipeStep::next;
            break;
        }
        break;
      }
      case PipeStep::set_flag: {
        const uint64_t t_set = pu.set_cycle;
        ++flag(pu.flag);
        // The dst's flag_set, found without reading the dst's state: only its wait_flag step
        // waits on it, and a notification nobody waits for does nothing.
        kernel_.notify(pu.progress + 2 * uint32_t(pu.flag.dst));
        pu.free_cycle = t_set;
        pu.max_completion = std::max(pu.max_completion, t_set);
        record(p, Opcode::set_flag, pu.pc, pu.op_index, pu.start_cycle, t_set - pu.start_cycle,
               t_set, run_.tracing ? flow_id(pu.flag, set_seq_) : 0);
        pu.step = PipeStep::next;
        break;
      }
      case PipeStep::wait_flag: {
        int64_t& f = flag(pu.flag);
        if (f == 0) {
          kernel_.wait_event(pu.flag_set);
          return;
        }
        --f;
        const uint64_t t = kernel_.now();
        pu.free_cycle = t;
        pu.max_completion = std::max(pu.max_completion, t);
        record(p, Opcode::wait_flag, pu.pc, pu.op_index, pu.start_cycle, t - pu.start_cycle, t,
               run_.tracing ? flow_id(pu.flag, wait_seq_) : 0);
        pu.step = PipeStep::next;
        break;
      }
    }
  }
}

const isa::Instruction& Core::resolve_entry(const PipeUnit& pu, const Entry& e, uint32_t slot) {
  const Decoded& d = decoded_[e.pc];
  if (d.x0_only) return code_[e.pc];          // isa::resolve would copy it unchanged
  std::array<int64_t, isa::kNumRegs> regs{};  // only the registers the operands use matter
  const Resolved& r = pu.resolved[slot];      // dispatch resolved it (not x0_only)
  for (uint8_t k = 0; k < d.nregs; ++k) regs[d.regs[k]] = r.reg_values[k];
  run_.resolved = isa::resolve(code_[e.pc], regs);
  return run_.resolved;
}

void Core::gm_transaction(tlm::tlm_command command, uint64_t address, unsigned char* data,
                          unsigned int bytes, const isa::Instruction* in, bool functional,
                          const char* target, uint64_t burst_bytes) {
  trans_.set_command(command);
  trans_.set_address(address);
  trans_.set_data_ptr(data);
  trans_.set_data_length(bytes);
  trans_.set_streaming_width(bytes);
  trans_.set_byte_enable_ptr(nullptr);
  trans_.set_dmi_allowed(false);
  trans_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  ext_.instr = in;
  ext_.memory = &memory_;
  ext_.functional = functional;
  ext_.core = id_;
  ext_.burst_bytes = burst_bytes;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;  // ext_ is set on trans_ for the core's life
  if (!target_) internal_fail("core {} has no memory target (Core::connect)", id_);
  target_->b_transport(trans_, delay);  // MTE3 (writes) and MTE2 (reads) reach the same target
  if (trans_.get_response_status() != tlm::TLM_OK_RESPONSE)
    internal_fail("{} returned {}", target, trans_.get_response_string());
}

void Core::execute_data(Pipe p, const Entry& e, uint32_t slot, uint64_t s) {
  PipeUnit& pu = pipes_[int(p)];
  uint64_t occupancy = 0, latency = 0;
  if (e.start_flags & Entry::kFastStart) {
    // Started from the entry alone (Entry::kFastStart): no decoded_, no code_.
    occupancy = e.occupancy;
    latency = e.latency;
    if (e.start_flags & Entry::kGmDma) {
      uint64_t gm_address = 0;
      for (const Range& r : e)
        if (r.scope == Scope::gm) gm_address = r.begin;
      const bool load = (e.start_flags & Entry::kGmLoad) != 0;
      try {
        gm_transaction(load ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND, gm_address,
                       run_.gm && gm_address < run_.gm_bytes ? run_.gm + gm_address : nullptr,
                       e.gm_bytes, &code_[e.pc], false, "Dram", e.burst_bytes);
      } catch (const Error& err) {
        fail("core {} instruction {} ({}): {}", id_, e.pc, text_of(code_[e.pc]), err.what());
      }
      occupancy = std::max(occupancy, ext_.dram_done_cycle - s);
      latency += ext_.dram_latency_cycles;
    }
  } else {
    execute_data_slow(pu, e, slot, s, occupancy, latency);
  }
  const uint64_t completion = s + occupancy + latency;
  pu.free_cycle = s + occupancy;
  pu.max_completion = std::max(pu.max_completion, completion);
  for (const Range& r : e)
    if (r.write) pu.writes.push_back({r, completion});
  pu.busy_cycles += occupancy;
  if (e.op_index >= 0 && static_cast<size_t>(e.op_index) < run_.result.op_busy_cycles.size())
    run_.result.op_busy_cycles[e.op_index][int(p)] += occupancy;
  record(p, e.op, e.pc, e.op_index, s, occupancy, completion);
  const uint64_t max_cycles = run_.options->max_cycles;
  if (max_cycles && completion > max_cycles)
    fail("simulation exceeded max_cycles = {}: core {} {} completes at cycle {}", max_cycles, id_,
         where(e.pc), completion);
}

void Core::execute_data_slow(PipeUnit& pu, const Entry& e, uint32_t slot, uint64_t s,
                             uint64_t& occupancy, uint64_t& latency) {
  const Decoded& d = decoded_[e.pc];
  try {
    // The instruction itself is read only when its operands matter here: a dma or an L2 hint (GM
    // address, descriptor), a functional run, or a cost not known from decoding.
    const bool l2_hint = d.op == Opcode::l2_prefetch || d.op == Opcode::l2_discard;
    const isa::Instruction* in =
        d.is_dma || l2_hint || functional_ || !d.cost_known ? &resolve_entry(pu, e, slot) : nullptr;
    if (d.cost_known) {
      occupancy = d.cost.occupancy;
      latency = d.cost.latency;
    } else {
      const npu::InstrCost cost = npu::instruction_cost(hw_, *in);
      occupancy = cost.occupancy_cycles;
      latency = cost.latency_cycles;
    }
    const auto* dma = d.is_dma ? std::get_if<isa::DmaArgs>(&in->args) : nullptr;
    MulticastTable::Read received;
    const bool multicast = d.op == Opcode::dma_mc;
    if (multicast) {
      ++run_.result.multicast.requests;
    }
    if (multicast && run_.multicast.take(id_, *dma, &received)) {
      // Another member of the core set made this read: its data arrives without a memory access.
      ++run_.result.multicast.received;
      run_.result.multicast.saved_bytes += npu::dma_gm_bytes(*dma);
      if (functional_) isa::execute(hw_, *in, memory_);
      occupancy = std::max(
          occupancy, received.dram_done_cycle > s ? received.dram_done_cycle - s : uint64_t{0});
      latency += received.latency_cycles;
    } else if (const auto* h = l2_hint ? std::get_if<isa::L2HintArgs>(&in->args) : nullptr) {
      // l2_prefetch / l2_discard: handed to the L2 (its one issue cycle on MTE2); without an L2
      // they do nothing. They never change a value.
      if (hw_.l2.enabled())
        gm_transaction(tlm::TLM_READ_COMMAND, static_cast<uint64_t>(h->src.offset), nullptr,
                       static_cast<unsigned int>(h->bytes), in, false, "L2");
    } else if (dma && (dma->src.scope == Scope::gm || dma->dst.scope == Scope::gm)) {
      // GM access: one TLM-2.0 transaction to the shared DRAM target (arbitration + copy).
      const bool load = dma->src.scope == Scope::gm;
      uint64_t gm_address = 0;
      for (const Range& r : e)
        if (r.scope == Scope::gm) gm_address = r.begin;
      const uint64_t g = npu::dma_gm_bytes(*dma);
      if (g > UINT32_MAX) fail("dma moves {} GM bytes, more than one transaction carries", g);
      gm_transaction(load ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND, gm_address,
                     run_.gm && gm_address < run_.gm_bytes ? run_.gm + gm_address : nullptr,
                     static_cast<unsigned int>(g), in, functional_, "Dram");
      occupancy = std::max(occupancy, ext_.dram_done_cycle - s);
      latency += ext_.dram_latency_cycles;
      if (multicast)
        run_.multicast.add(id_, *dma, {ext_.dram_done_cycle, ext_.dram_latency_cycles});
    } else if (rtl_cube_ && d.op == Opcode::mmad) {
      // core.cube.rtl_sample: the first N int8 mmads of each kernel (op_index) run on the RTL.
      const int64_t sample = hw_.core.cube.rtl_sample;
      const size_t kernel = d.op_index >= 0 ? static_cast<size_t>(d.op_index) + 1 : 0;
      if (kernel >= rtl_sampled_.size()) rtl_sampled_.resize(kernel + 1, 0);
      if (!isa::mmad_int8(std::get<isa::MmadArgs>(in->args))) {  // the RTL has the int8 mode only
        ++run_.result.rtl.float_mmads;
        isa::execute(hw_, *in, memory_);
      } else if (sample == 0 || rtl_sampled_[kernel] < static_cast<uint64_t>(sample)) {
        ++rtl_sampled_[kernel];
        rtl_issue(e.pc, *in, s, occupancy + latency);
      } else {
        ++run_.result.rtl.unsampled_mmads;
        isa::execute(hw_, *in, memory_);
      }
    } else if (functional_) {
      isa::execute(hw_, *in, memory_);
    }
  } catch (const Error& err) {
    fail("core {} instruction {} ({}): {}", id_, e.pc, text_of(code_[e.pc]), err.what());
  }
}

void Core::RtlCubeDeleter::operator()(rtl::RtlCube* cube) const {
#ifdef TESSEL_HAVE_RTL
  delete cube;
#else
  (void)cube;  // never set without the RTL
#endif
}

#ifdef TESSEL_HAVE_RTL
void Core::rtl_issue(int32_t pc, const isa::Instruction& resolved, uint64_t start,
                     uint64_t cycles) {
  const auto& a = std::get<isa::MmadArgs>(resolved.args);
  const npu::CubeFractal f = hw_.core.cube.int8_fractal();
  RtlCheck c;
  c.pc = pc;
  c.issue_cycle = start;
  c.expected_cycles = cycles;
  c.c_offset = a.c.offset;
  c.m1 = a.m1;
  c.n1 = a.n1;
  // The expected C: isa/semantics' mmad on the operands as they are now, into a copy of C (the
  // dispatch checked C's range against L0C).
  const uint64_t c_bytes = uint64_t{a.m1} * a.n1 * f.m * f.n * 4;
  const uint8_t* l0c = memory_.base[int(Scope::l0c)] + a.c.offset;
  c.expected.assign(l0c, l0c + c_bytes);
  isa::CoreMemory ref = memory_;
  ref.base[int(Scope::l0c)] = c.expected.data();
  ref.size[int(Scope::l0c)] = c_bytes;
  isa::Instruction at_zero = resolved;
  std::get<isa::MmadArgs>(at_zero.args).c.offset = 0;
  isa::execute(hw_, at_zero, ref);
  rtl_checks_.push_back(std::move(c));
  rtl_cube_->issue(a, static_cast<uint64_t>(pc), start + cycles);
}

void Core::rtl_complete(const rtl::RtlCompletion& done) {
  if (rtl_checks_.empty()) internal_fail("core {}: RTL cube completed an mmad never issued", id_);
  const RtlCheck c = std::move(rtl_checks_.front());
  rtl_checks_.pop_front();
  RtlStats& st = run_.result.rtl;
  ++st.mmad_checked;
  const uint8_t* got = memory_.base[int(Scope::l0c)] + c.c_offset;
  if (std::memcmp(got, c.expected.data(), c.expected.size()) != 0) {
    ++st.value_mismatches;
    const npu::CubeFractal f = hw_.core.cube.int8_fractal();
    size_t i = 0;
    while (std::memcmp(got + 4 * i, c.expected.data() + 4 * i, 4) == 0) ++i;
    int32_t rtl_value, want;
    std::memcpy(&rtl_value, got + 4 * i, 4);
    std::memcpy(&want, c.expected.data() + 4 * i, 4);
    const size_t block = i / (size_t(f.m) * f.n), in_block = i % (size_t(f.m) * f.n);
    fail(
        "core {} {} (issued in cycle {}): RTL cube result differs from isa/semantics: C block "
        "(mb {}, nb {}) of {} x {} blocks, element (row {}, col {}) at l0c byte {}: RTL {}, "
        "semantics {}",
        id_, where(c.pc), c.issue_cycle, block / c.n1, block % c.n1, c.m1, c.n1, in_block / f.n,
        in_block % f.n, c.c_offset + int64_t(4 * i), rtl_value, want);
  }
  const uint64_t rtl_cycles = done.completion_cycle - done.issue_cycle;
  const uint64_t error = rtl_cycles > c.expected_cycles ? rtl_cycles - c.expected_cycles
                                                        : c.expected_cycles - rtl_cycles;
  st.max_cycle_error = std::max(st.max_cycle_error, error);
  if (error != 0) {
    ++st.cycle_mismatches;
    fail(
        "core {} {} (issued in cycle {}): RTL cube took {} cycles (completion at {}), "
        "npu::instruction_cost {} (occupancy + latency)",
        id_, where(c.pc), c.issue_cycle, rtl_cycles, done.completion_cycle, c.expected_cycles);
  }
}
#else
void Core::rtl_issue(int32_t, const isa::Instruction&, uint64_t, uint64_t) {
  internal_fail("core.cube.model: rtl in a build without Verilator");
}
void Core::rtl_complete(const rtl::RtlCompletion&) {
  internal_fail("core.cube.model: rtl in a build without Verilator");
}
#endif

void Core::flush_stats() {
#ifdef TESSEL_HAVE_RTL
  if (rtl_cube_) run_.result.rtl.rtl_cycles += rtl_cube_->clock_edges();
#endif
  for (int p = 1; p < isa::kNumPipes; ++p) {
    PipeUnit& pu = pipes_[p];
    stats_.pipes[p].instructions += std::exchange(pu.instructions, 0);
    stats_.pipes[p].busy_cycles += std::exchange(pu.busy_cycles, 0);
  }
  // Scope traffic and operation counts read no address (npu/timing.h, npu/area_energy.h): the
  // unresolved instruction's are every execution's, and count_ops only adds, so n executions add
  // n times one execution's counts (the StatClass found while decoding).
  for (size_t pc = 0; pc < decoded_.size(); ++pc) {
    Decoded& d = decoded_[pc];
    if (d.kind != isa::InstrKind::data || d.executed == 0) continue;
    if (d.stat_class != kNoStatClass) {
      stat_classes_[d.stat_class].executed += std::exchange(d.executed, 0);
      continue;
    }
    const isa::Instruction& in = code_[pc];
    const npu::ScopeTraffic traffic = npu::scope_traffic(hw_, in);
    for (int sc = 0; sc < isa::kNumScopes; ++sc) {
      stats_.bytes_read[sc] += traffic.read[sc] * d.executed;
      stats_.bytes_written[sc] += traffic.written[sc] * d.executed;
    }
    for (uint64_t i = 0; i < d.executed; ++i) npu::count_ops(hw_, d.pipe, in, traffic, stats_.ops);
    d.executed = 0;
  }
  for (StatClass& c : stat_classes_) {
    const uint64_t n = std::exchange(c.executed, 0);
    if (n == 0) continue;
    for (int sc = 0; sc < isa::kNumScopes; ++sc) {
      stats_.bytes_read[sc] += c.traffic.read[sc] * n;
      stats_.bytes_written[sc] += c.traffic.written[sc] * n;
    }
    npu::OpCounts& o = stats_.ops;
    o.cube_macs += c.ops.cube_macs * n;
    for (int k = 0; k < npu::kNumVectorOpClasses; ++k)
      for (int t = 0; t < npu::kNumTechTypes; ++t)
        o.vector_elem_ops[k][t] += c.ops.vector_elem_ops[k][t] * n;
    for (int p = 0; p < isa::kNumPipes; ++p)
      o.pipe_bytes_written[p] += c.ops.pipe_bytes_written[p] * n;
  }
}

void Core::record(Pipe p, Opcode opcode, int32_t pc, int32_t op, uint64_t start, uint64_t duration,
                  uint64_t completion, uint64_t flow) {
  if (op >= 0 && static_cast<size_t>(op) < run_.op_first_start.size()) {
    run_.op_first_start[op] = std::min(run_.op_first_start[op], start);
    run_.op_last_completion[op] = std::max(run_.op_last_completion[op], completion);
  }
  if (run_.tracing)
    run_.trace.push_back(TraceEvent{static_cast<uint32_t>(id_), p, opcode, pc, op, start, duration,
                                    completion, flow});
}

uint64_t Core::flow_id(const isa::SyncArgs& s, std::vector<uint64_t>& seq) {
  const size_t index = (size_t(s.src) * isa::kNumPipes + size_t(s.dst)) * events_ + s.event;
  // (flag of this core, n-th use) -> one id per run: the n-th set and the n-th wait share it.
  const uint64_t flag = static_cast<uint64_t>(id_) * flags_.size() + index;
  return (flag << 32 | seq[index]++) + 1;
}

// ---------------------------------------------------------------------------------------------
// Reports

std::string Core::where(int32_t pc) const {
  if (pc < 0 || static_cast<size_t>(pc) >= code_.size()) return fmt::format("instruction {}", pc);
  return fmt::format("instruction {} ({})", pc, text_of(code_[pc]));
}

std::string Core::pipe_line(int p) const {
  const PipeUnit& pu = pipes_[p];
  std::string s;
  switch (pu.state) {
    case PipeState::idle:
      s = "idle";
      break;
    case PipeState::waiting_start:
      s = fmt::format("about to start {}", where(pu.pc));
      break;
    case PipeState::draining:
      s = fmt::format("draining for {}", where(pu.pc));
      break;
    case PipeState::flag_wait:
      s = fmt::format(
          "blocked at {} waiting for flag (src {}, dst {}, event {}) = {}", where(pu.pc),
          isa::pipe_name(pu.flag.src), isa::pipe_name(pu.flag.dst), pu.flag.event,
          flags_[(size_t(pu.flag.src) * isa::kNumPipes + size_t(pu.flag.dst)) * events_ +
                 pu.flag.event]);
      break;
  }
  // Entries still queued (the one being started is already counted by waiting_start).
  const size_t queued = pu.size - (pu.state == PipeState::waiting_start ? 1 : 0);
  if (queued > 0) {
    s += fmt::format(", {} more queued (next: {})", queued, where(pu.queued(pu.size - queued).pc));
  }
  return s;
}

std::string Core::state_report() const {
  std::string scalar;
  switch (scalar_state_) {
    case ScalarState::running:
      scalar = fmt::format("running at {}", where(scalar_pc_));
      break;
    case ScalarState::dispatch_wait:
      scalar = fmt::format("stalled dispatching {} into the full {} queue ({} entries)",
                           where(scalar_pc_), isa::pipe_name(scalar_blocked_pipe_), depth_);
      break;
    case ScalarState::barrier:
      scalar = fmt::format("in barrier at {}, waiting for the pipes to drain", where(scalar_pc_));
      break;
    case ScalarState::core_barrier:
      scalar = fmt::format("in core_barrier #{} at {}, waiting for the other cores",
                           core_barrier_.completed(), where(scalar_pc_));
      break;
    case ScalarState::done:
      scalar = "done (ran off the end of its stream)";
      break;
  }
  std::string out = fmt::format("core {}: scalar: {}", id_, scalar);
  for (int p = 1; p < isa::kNumPipes; ++p)
    out += fmt::format("; {}: {}", isa::pipe_name(Pipe(p)), pipe_line(p));
  return out;
}

std::vector<std::string> Core::blocked_waits() const {
  std::vector<std::string> out;
  for (int p = 1; p < isa::kNumPipes; ++p) {
    const PipeUnit& pu = pipes_[p];
    if (pu.state != PipeState::flag_wait) continue;
    out.push_back(fmt::format(
        "core {} pipe {} is blocked at {} waiting for flag (src {}, dst {}, event {}) = {}", id_,
        isa::pipe_name(Pipe(p)), where(pu.pc), isa::pipe_name(pu.flag.src),
        isa::pipe_name(pu.flag.dst), pu.flag.event,
        flags_[(size_t(pu.flag.src) * isa::kNumPipes + size_t(pu.flag.dst)) * events_ +
               pu.flag.event]));
  }
  return out;
}

}  // namespace tessel::sim
