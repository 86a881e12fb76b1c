// Static verifier for isa::Program: checks what can be checked without running it.
#pragma once

#include <string>
#include <vector>

#include "isa/isa.h"
#include "npu_model/hw_config.h"

namespace tessel::isa {

/// Returns one message per problem (empty = OK): register index out of range, branch target out of
/// range, operand scope illegal for the opcode (e.g. mmad reading UB), dtype/size inconsistencies,
/// zero or oversize extents, event id >= hw.core.sync_event_ids, set_flag/wait_flag between a pipe
/// and itself, a constant-address operand (reg x0) falling outside its scratchpad, a core count
/// different from hw.cores. Each message names the core and instruction index.
std::vector<std::string> verify_program(const Program& program, const npu::HwConfig& hw);

/// Static check of the set_flag/wait_flag pairing of every core's stream (docs/isa.md,
/// Synchronisation; isa/verifier_sync.cpp). Flags are counters, so the pairing is checked by
/// following each flag's count through the control-flow graph (branches taken and not taken):
///  - missing set_flag: a wait_flag reached on some path with count 0 (no earlier set_flag of its
///    flag is outstanding) -- its pipe would wait forever;
///  - missing wait_flag: a flag still positive at the end of the stream (set more often than
///    waited for), or a count that differs between paths joining at an instruction (a loop body
///    that sets a flag more or fewer times than it waits for it: the count drifts per iteration);
///  - redundant pair: a wait_flag that consumes a set made before a barrier/core_barrier that lies
///    between them (the barrier already orders everything before it; the pair orders nothing).
/// Also flags set_flag/wait_flag whose src/dst/event are out of range (then skips the pairing).
/// Returns one message per problem, "core C, instruction I (TEXT): ...", empty when the pairing is
/// sound. Cost: linear in the code size times the number of flags touched.
std::vector<std::string> verify_sync(const Program& program, const npu::HwConfig& hw);

// ---- additions (ISA text/encoding owner) ----

/// An operand whose memory scope the opcode does not allow. `operand` is the operand's position
/// in the assembly syntax (0 = first operand, e.g. the destination).
struct ScopeViolation {
  int operand = -1;
  std::string message;  // e.g. "mmad operand 2 (a) must be in l0a, not ub"
};

/// Checks the scopes of the operands `instr` uses against docs/isa.md: dma gm->l1, gm->ub, ub->gm,
/// ub->l1; load2d/img2col l1 -> l0a|l0b; mmad l0c <- l0a x l0b; fix l0c -> ub; vector ops ub only.
/// Returns false and fills `violation` for the first illegal operand. `instr.args` must hold the
/// opcode's operand class (args_index); otherwise returns true (the class is checked elsewhere).
bool check_operand_scopes(const Instruction& instr, ScopeViolation& violation);

}  // namespace tessel::isa
