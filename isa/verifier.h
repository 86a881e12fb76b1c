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

}  // namespace tessel::isa
