// Fast functional interpreter for isa::Program: executes every core's stream in program order with
// the shared semantics (isa/semantics.h) and no timing. Cores run phase by phase between
// core_barrier instructions. It is the oracle the SystemC model is tested against.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/isa.h"
#include "npu_model/hw_config.h"

namespace tessel::isa {

struct InterpretStats {
  uint64_t instructions = 0;  // dynamic instruction count, all cores
};

/// Runs `program` on `gm` (which must already hold constants and inputs; resized to
/// program.gm_bytes if smaller). Throws tessel::Error on out-of-bounds accesses or a core_barrier
/// count mismatch between cores, or after `max_instructions` (0 = unlimited) dynamic instructions.
InterpretStats interpret(const Program& program, const npu::HwConfig& hw, std::vector<uint8_t>& gm,
                         uint64_t max_instructions = 0);

}  // namespace tessel::isa
