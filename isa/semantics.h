// Functional semantics of every NPU instruction: plain C++ over byte arrays, shared by the
// SystemC simulator and by the fast functional interpreter (isa/interpreter.h).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "isa/isa.h"
#include "npu_model/hw_config.h"

namespace tessel::isa {

/// The memories one core can address: GM (shared) and its scratchpads, as byte spans.
struct CoreMemory {
  std::array<uint8_t*, kNumScopes> base{};    // indexed by Scope
  std::array<uint64_t, kNumScopes> size{};    // bytes
};

/// Executes the data effect of one dispatched (non-scalar, non-sync) instruction whose MemRefs
/// have been resolved: every MemRef's `reg` is 0 and `offset` is the absolute byte address.
/// `hw` supplies the cube fractal shape. Throws tessel::Error naming the opcode, scope and range
/// when an access falls outside a memory.
void execute(const npu::HwConfig& hw, const Instruction& resolved, CoreMemory& mem);

/// Replaces every MemRef of `instr` by its absolute address x[reg] + offset.
Instruction resolve(const Instruction& instr, const std::array<int64_t, kNumRegs>& regs);

/// Byte ranges [begin, end) an instruction reads and writes, per scope (for hazard checks and
/// capacity checks). Only meaningful on resolved instructions.
struct AccessRange {
  Scope scope;
  uint64_t begin, end;
  bool write;
};
std::vector<AccessRange> access_ranges(const npu::HwConfig& hw, const Instruction& resolved);

}  // namespace tessel::isa
