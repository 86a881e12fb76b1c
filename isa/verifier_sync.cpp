// verify_sync: static pairing check of set_flag / wait_flag (see isa/verifier.h).
//
// Per core: basic blocks (leaders: 0, branch targets, the instruction after a branch), then a
// forward data-flow over the blocks whose state is, per flag (src, dst, event), the number of
// outstanding set_flags (`count`) and how many of them were made before the last barrier
// (`covered`). The scalar unit dispatches in program order and a wait_flag can only be satisfied
// by a set_flag dispatched before it (the compiler's convention and the worked example of
// docs/isa.md: loop-carried dependences are pre-set before the loop and drained after it), so the
// state at an instruction is a function of the path only through these counts; joins must agree.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <vector>

#include "isa/asm.h"
#include "isa/verifier.h"

namespace tessel::isa {

namespace {

struct FlagCount {
  int64_t count = 0;    // outstanding set_flags
  int64_t covered = 0;  // of them, set before the latest barrier
  bool operator==(const FlagCount&) const = default;
};

struct State {
  std::vector<FlagCount> flags;
  std::vector<int32_t> last_set;  // pc of the latest set_flag per flag (messages only)
  int32_t last_barrier = -1;      // pc of the latest barrier (messages only)
  bool same_counts(const State& o) const { return flags == o.flags; }
};

std::string text_of(const Instruction& in) {
  try {
    return format_instruction(in);
  } catch (const std::exception&) {
    return opcode_name(in.op);
  }
}

std::string flag_name(int index, int events) {
  const int ev = index % events;
  const int dst = (index / events) % kNumPipes;
  const int src = index / events / kNumPipes;
  return fmt::format("flag (src {}, dst {}, event {})", pipe_name(Pipe(src)), pipe_name(Pipe(dst)),
                     ev);
}

class CoreSync {
 public:
  CoreSync(int core, const std::vector<Instruction>& code, int events,
           std::vector<std::string>& out)
      : core_(core), code_(code), events_(events), out_(out) {}

  void run() {
    const int32_t n = static_cast<int32_t>(code_.size());
    if (n == 0) return;
    // Basic blocks.
    std::vector<char> leader(static_cast<size_t>(n) + 1, 0);
    leader[0] = 1;
    for (int32_t pc = 0; pc < n; ++pc) {
      const Instruction& in = code_[pc];
      if (is_valid_opcode(in.op) && is_branch(in.op)) {
        const auto* a = std::get_if<ScalarArgs>(&in.args);
        if (!a || a->target < 0 || a->target > n) return;  // verify_program reports these
        leader[a->target] = 1;
        leader[pc + 1] = 1;
      }
    }
    std::vector<int32_t> block_of(static_cast<size_t>(n) + 1, -1);
    for (int32_t pc = 0; pc < n; ++pc)
      if (leader[pc]) {
        block_of[pc] = static_cast<int32_t>(starts_.size());
        starts_.push_back(pc);
      }
    block_of[n] = -2;  // the exit
    const size_t nflags = static_cast<size_t>(kNumPipes) * kNumPipes * events_;
    std::vector<State> in_state(starts_.size());
    std::vector<char> has(starts_.size(), 0), queued(starts_.size(), 0);
    std::set<std::pair<int32_t, int>> join_reported;
    State entry;
    entry.flags.assign(nflags, {});
    entry.last_set.assign(nflags, -1);
    in_state[0] = entry;
    has[0] = 1;
    std::vector<int32_t> work = {0};
    queued[0] = 1;
    auto propagate = [&](const State& s, int32_t from_pc, int32_t to_pc) {
      if (to_pc == n) {
        at_exit(s);
        return;
      }
      const int32_t b = block_of[to_pc];
      if (!has[b]) {
        in_state[b] = s;
        has[b] = 1;
        if (!queued[b]) {
          queued[b] = 1;
          work.push_back(b);
        }
        return;
      }
      if (in_state[b].same_counts(s)) return;
      for (size_t f = 0; f < nflags; ++f) {
        const FlagCount& a = in_state[b].flags[f];
        const FlagCount& c = s.flags[f];
        if (a == c || !join_reported.insert({to_pc, static_cast<int>(f)}).second) continue;
        if (a.count != c.count)
          report(to_pc,
                 "{} has count {} on one path into this instruction and {} on another (from "
                 "instruction {}): a loop body or branch sets it {} often than it waits for it "
                 "(a missing or redundant set_flag/wait_flag)",
                 flag_name(static_cast<int>(f), events_), a.count, c.count, from_pc,
                 c.count > a.count ? "more" : "less");
        else
          report(to_pc,
                 "{}: its outstanding set_flag is before a barrier on one path into this "
                 "instruction and not on another (from instruction {})",
                 flag_name(static_cast<int>(f), events_), from_pc);
      }
    };
    while (!work.empty()) {
      const int32_t b = work.back();
      work.pop_back();
      queued[b] = 0;
      State s = in_state[b];
      int32_t pc = starts_[b];
      for (;; ++pc) {
        if (pc == n) {
          at_exit(s);
          break;
        }
        if (pc != starts_[b] && leader[pc]) {
          propagate(s, pc - 1, pc);
          break;
        }
        const Instruction& in = code_[pc];
        if (!is_valid_opcode(in.op)) continue;  // verify_program reports it
        const InstrKind kind = instr_info(in.op).kind;
        if (kind == InstrKind::set_flag || kind == InstrKind::wait_flag) {
          const int f = flag_index(in);
          if (f < 0) continue;  // out of range: verify_program reports it
          FlagCount& c = s.flags[f];
          if (kind == InstrKind::set_flag) {
            ++c.count;
            s.last_set[f] = pc;
          } else if (c.count == 0) {
            report(pc,
                   "no set_flag of this flag is outstanding when it is reached (on some path): "
                   "a missing set_flag, the pipe would wait forever");
          } else {
            if (c.covered == c.count)
              report(pc,
                     "redundant set/wait pair: the set_flag it consumes (instruction {}) comes "
                     "before the barrier at instruction {}, which already orders the two pipes",
                     s.last_set[f], s.last_barrier);
            --c.count;
            c.covered = std::min(c.covered, c.count);
          }
        } else if (kind == InstrKind::barrier || kind == InstrKind::core_barrier) {
          for (FlagCount& c : s.flags) c.covered = c.count;
          s.last_barrier = pc;
        } else if (kind == InstrKind::jump) {
          propagate(s, pc, std::get<ScalarArgs>(in.args).target);
          break;
        } else if (kind == InstrKind::branch) {
          propagate(s, pc, std::get<ScalarArgs>(in.args).target);
          propagate(s, pc, pc + 1);
          break;
        }
      }
    }
  }

 private:
  int flag_index(const Instruction& in) const {
    const auto* a = std::get_if<SyncArgs>(&in.args);
    if (!a) return -1;
    const int src = static_cast<int>(a->src), dst = static_cast<int>(a->dst);
    if (src <= 0 || dst <= 0 || src >= kNumPipes || dst >= kNumPipes || src == dst ||
        a->event >= events_)
      return -1;
    return (src * kNumPipes + dst) * events_ + a->event;
  }

  void at_exit(const State& s) {
    if (exit_reported_) return;
    for (size_t f = 0; f < s.flags.size(); ++f)
      if (s.flags[f].count > 0) {
        exit_reported_ = true;
        report(s.last_set[f] >= 0 ? s.last_set[f] : 0,
               "{} is still set {} time(s) at the end of the stream: a set_flag without a "
               "matching wait_flag (a missing wait_flag or a redundant set_flag)",
               flag_name(static_cast<int>(f), events_), s.flags[f].count);
      }
  }

  template <typename... A>
  void report(int32_t pc, fmt::format_string<A...> f, A&&... a) {
    out_.push_back(fmt::format("core {}, instruction {} ({}): {}", core_, pc, text_of(code_[pc]),
                               fmt::format(f, std::forward<A>(a)...)));
  }

  int core_;
  const std::vector<Instruction>& code_;
  int events_;
  std::vector<std::string>& out_;
  std::vector<int32_t> starts_;
  bool exit_reported_ = false;
};

}  // namespace

std::vector<std::string> verify_sync(const Program& program, const npu::HwConfig& hw) {
  std::vector<std::string> out;
  const int events = std::max(1, hw.core.sync_event_ids);
  for (size_t c = 0; c < program.cores.size(); ++c)
    CoreSync(static_cast<int>(c), program.cores[c], events, out).run();
  return out;
}

}  // namespace tessel::isa
