// Functional interpreter: every core's stream in program order, phase by phase between
// core_barriers (docs/isa.md). Sync instructions are no-ops here: program order already satisfies
// every flag and barrier of a correctly synchronised program.
#include "isa/interpreter.h"

#include <fmt/format.h>

#include "compiler/support/error.h"
#include "isa/semantics.h"

namespace tessel::isa {

namespace {

struct CoreState {
  std::array<int64_t, kNumRegs> regs{};
  std::array<std::vector<uint8_t>, kNumScopes> scratch;
  CoreMemory mem;
  size_t pc = 0;
  bool done = false;
};

}  // namespace

InterpretStats interpret(const Program& program, const npu::HwConfig& hw, std::vector<uint8_t>& gm,
                         uint64_t max_instructions) {
  if (gm.size() < program.gm_bytes) gm.resize(program.gm_bytes);
  const size_t ncores = program.cores.size();
  std::vector<CoreState> cores(ncores);
  const auto& b = hw.core.buffers_bytes;
  const std::array<int64_t, kNumScopes> sizes{0, b.l1, b.l0a, b.l0b, b.l0c, b.ub};
  for (size_t c = 0; c < ncores; ++c) {
    check_stream(program.cores[c], c);
    CoreState& st = cores[c];
    st.mem.base[int(Scope::gm)] = gm.data();
    st.mem.size[int(Scope::gm)] = gm.size();
    for (int s = 1; s < kNumScopes; ++s) {
      if (sizes[s] < 0) fail("hardware config: buffer {} has negative size", scope_name(Scope(s)));
      st.scratch[s].assign(static_cast<size_t>(sizes[s]), 0);
      st.mem.base[s] = st.scratch[s].data();
      st.mem.size[s] = st.scratch[s].size();
    }
  }

  InterpretStats stats;
  uint64_t phase = 0;
  for (;;) {
    // Run every core up to its next core_barrier (or its end).
    for (size_t c = 0; c < ncores; ++c) {
      CoreState& st = cores[c];
      const std::vector<Instruction>& code = program.cores[c];
      auto& x = st.regs;
      bool parked = false;
      while (!st.done && !parked) {
        if (st.pc >= code.size()) {
          st.done = true;
          break;
        }
        if (max_instructions && stats.instructions >= max_instructions)
          fail(
              "interpret: program '{}' exceeded the limit of {} dynamic instructions (core {} at "
              "instruction {})",
              program.name, max_instructions, c, st.pc);
        const Instruction& in = code[st.pc];
        ++stats.instructions;
        size_t next = st.pc + 1;
        switch (instr_info(in.op).kind) {
          case InstrKind::alu:
          case InstrKind::branch:
          case InstrKind::jump:
            execute_scalar(in, x, next);
            break;
          case InstrKind::load:
            try {
              execute_load(std::get<ScalarArgs>(in.args), x, gm.data(), gm.size());
            } catch (const Error& e) {
              fail("core {} instruction {}: {}", c, st.pc, e.what());
            }
            break;
          case InstrKind::set_flag:
          case InstrKind::wait_flag:
          case InstrKind::barrier:
            break;  // program order already satisfies them
          case InstrKind::core_barrier:
            parked = true;  // this core waits here for the others
            break;
          case InstrKind::data: {
            const Instruction r = resolve(in, x);
            try {
              execute(hw, r, st.mem);
            } catch (const Error& e) {
              fail("core {} instruction {}: {}", c, st.pc, e.what());
            }
          }
        }
        st.pc = next;
      }
    }
    // Every core is either done or parked after its core_barrier of this phase.
    size_t finished = 0;
    for (const CoreState& st : cores) finished += st.done;
    if (finished == ncores) break;
    if (finished != 0) {
      std::string waiting, ended;
      for (size_t c = 0; c < ncores; ++c)
        (cores[c].done ? ended : waiting) += fmt::format("{} ", c);
      fail(
          "interpret: core_barrier #{} is reached by cores [ {}] but cores [ {}] ended without it "
          "(every core must execute the same number of core_barriers)",
          phase, waiting, ended);
    }
    ++phase;
  }
  return stats;
}

}  // namespace tessel::isa
