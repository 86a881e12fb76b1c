// Functional semantics of every NPU instruction: plain C++ over byte arrays, shared by the
// SystemC simulator and by the fast functional interpreter (isa/interpreter.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/support/error.h"
#include "isa/isa.h"
#include "npu_model/hw_config.h"

namespace tessel::isa {

/// The memories one core can address: GM (shared) and its scratchpads, as byte spans.
struct CoreMemory {
  std::array<uint8_t*, kNumScopes> base{};  // indexed by Scope
  std::array<uint64_t, kNumScopes> size{};  // bytes
};

/// Executes the data effect of one dispatched (non-scalar, non-sync) instruction whose MemRefs
/// have been resolved: every MemRef's `reg` is 0 and `offset` is the absolute byte address.
/// `hw` supplies the cube fractal shape. Throws tessel::Error naming the opcode, scope and range
/// when an access falls outside a memory.
void execute(const npu::HwConfig& hw, const Instruction& resolved, CoreMemory& mem);

/// fix's requantisation of one int32 accumulator to `dst` (i8 or u8; docs/isa.md, "fix"), as
/// ONNX Runtime's MlasRequantizeOutput: v = acc + bias (int32, wrapping); x = float(v) * scale
/// (fp32, one rounding to nearest even); x clamped to [lo - zero_point, hi - zero_point], where
/// [lo, hi] is the dtype's range with lo raised to zero_point by `relu`; the result is
/// nearbyint(x) (round half to even) + zero_point. A NaN x gives zero_point (saturated).
int32_t fix_requantize(int32_t acc, int32_t bias, float scale, int32_t zero_point, DType dst,
                       bool relu);

/// Replaces every MemRef of `instr` by its absolute address x[reg] + offset.
Instruction resolve(const Instruction& instr, const std::array<int64_t, kNumRegs>& regs);

/// Executes one scalar-unit ALU, branch or jump instruction (isa::is_scalar_alu_or_branch) on the
/// registers `x` (64-bit, two's complement wrap-around; writes to x0 are dropped): `next` is the
/// index of the next instruction, set to the target when a branch is taken. `in` must hold
/// ScalarArgs with registers < kNumRegs (check_stream). Shared by the interpreter and the SystemC
/// core, so that both execute exactly the docs/isa.md semantics.
inline void execute_scalar(Opcode op, const ScalarArgs& s, std::array<int64_t, kNumRegs>& x,
                           size_t& next) {
  const uint64_t rs = static_cast<uint64_t>(x[s.rs]), rt = static_cast<uint64_t>(x[s.rt]);
  const uint64_t imm = static_cast<uint64_t>(s.imm);
  switch (op) {
    case Opcode::li:
      x[s.rd] = s.imm;
      break;
    case Opcode::addi:
      x[s.rd] = static_cast<int64_t>(rs + imm);
      break;
    case Opcode::add:
      x[s.rd] = static_cast<int64_t>(rs + rt);
      break;
    case Opcode::sub:
      x[s.rd] = static_cast<int64_t>(rs - rt);
      break;
    case Opcode::mul:
      x[s.rd] = static_cast<int64_t>(rs * rt);
      break;
    case Opcode::muli:
      x[s.rd] = static_cast<int64_t>(rs * imm);
      break;
    case Opcode::blt:
      if (x[s.rs] < x[s.rt]) next = static_cast<size_t>(s.target);
      break;
    case Opcode::blti:
      if (x[s.rs] < s.imm) next = static_cast<size_t>(s.target);
      break;
    case Opcode::jmp:
      next = static_cast<size_t>(s.target);
      break;
    default:
      internal_fail("execute_scalar: {} is not a scalar-unit ALU or branch instruction",
                    opcode_name(op));
  }
  x[0] = 0;
}
/// The same on an Instruction (its ScalarArgs).
inline void execute_scalar(const Instruction& in, std::array<int64_t, kNumRegs>& x, size_t& next) {
  execute_scalar(in.op, std::get<ScalarArgs>(in.args), x, next);
}

/// Executes lbu (the one instruction of kind `load`): x[rd] = the byte of GM at address
/// a = x[rs] + imm, zero-extended (0..255; docs/isa.md, "Scalar unit"). `gm` holds `gm_bytes`
/// bytes; nullptr (a timing-only simulation, which holds no values) reads 1, so that every
/// guarded block of a compiled If runs and a timing-only run times both branches (an upper bound).
/// Throws tessel::Error "lbu: read of gm byte a is outside the N-byte gm" when a is negative or >=
/// gm_bytes. `in` must hold ScalarArgs with registers < kNumRegs (check_stream).
inline void execute_load(const ScalarArgs& s, std::array<int64_t, kNumRegs>& x, const uint8_t* gm,
                         uint64_t gm_bytes) {
  const uint64_t a = static_cast<uint64_t>(x[s.rs]) + static_cast<uint64_t>(s.imm);
  if (a >= gm_bytes)
    fail("lbu: read of gm byte {} is outside the {}-byte gm", static_cast<int64_t>(a), gm_bytes);
  x[s.rd] = gm ? gm[a] : 1;
  x[0] = 0;
}

/// Byte ranges [begin, end) an instruction reads and writes, per scope (for hazard checks and
/// capacity checks). Only meaningful on resolved instructions. Each range is the bounding range of
/// the bytes one operand touches (begin = lowest byte, end = one past the highest), so a range lies
/// inside a memory exactly when every accessed byte does. Operands that touch nothing (zero
/// extents, an empty dma valid window on the source) produce no range. A negative address yields a
/// range whose begin wraps to a huge value (so it fails every bounds check). Throws tessel::Error
/// for an instruction that is not a data instruction or has an illegal scope (e.g. mmad reading UB,
/// dma gm->gm).
struct AccessRange {
  Scope scope = Scope::gm;
  uint64_t begin = 0, end = 0;
  bool write = false;
};
std::vector<AccessRange> access_ranges(const npu::HwConfig& hw, const Instruction& resolved);

/// At most this many ranges per instruction (mmad: A, B, C read, C write; vmla: src0, src1,
/// dst read, dst write; vsel: src0, src1, src2 read, dst write).
inline constexpr int kMaxAccessRanges = 4;

/// The same ranges as access_ranges() in a fixed-capacity list (no heap allocation; for the
/// simulator's per-instruction hot path).
struct AccessRangeList {
  std::array<AccessRange, kMaxAccessRanges> items{};
  int count = 0;
  const AccessRange* begin() const { return items.data(); }
  const AccessRange* end() const { return items.data() + count; }
};
AccessRangeList access_range_list(const npu::HwConfig& hw, const Instruction& resolved);

/// Checks every range of `ranges` against `mem.size`; throws tessel::Error
/// "<opcode>: <read|write> of <scope> bytes [begin, end) is outside the <size>-byte <scope>"
/// for the first one that falls outside. `what` prefixes the message (e.g. "core 0 instruction 7
/// (vadd)"); empty means the opcode name alone.
void check_ranges(const Instruction& resolved, const AccessRangeList& ranges,
                  const std::array<uint64_t, kNumScopes>& sizes, const char* what = nullptr);

/// Static checks the executors rely on, for one core's stream: every opcode is declared, every
/// instruction's operand struct matches its opcode (isa::args_index), scalar register indices are <
/// kNumRegs, branch targets lie in [0, code.size()] (code.size() = fall off the end). Throws
/// tessel::Error naming the core and the instruction index.
void check_stream(const std::vector<Instruction>& code, size_t core);
/// check_stream's checks of one instruction, `index` of a stream of `size` instructions of core
/// `core` (the same errors): for a caller that reads every instruction anyway (the simulator's
/// core checks and decodes its stream in one pass).
void check_instruction(const Instruction& in, size_t index, size_t size, size_t core);

// is_data_instruction(op) (the instructions execute() accepts) and is_vector_opcode(op) are in
// isa/isa.h, derived from the instruction records.

/// Which operands a vector opcode uses, from its record: src0, src1, src2 read; dst read (trait
/// reads_dst: vmla); reduction (dst has one element per repeat); vdup reads no source at all.
/// Throws tessel::InternalError for a non-vector opcode.
struct VectorAccess {
  bool src0 = false, src1 = false, src2 = false, dst_read = false, reduction = false;
};
VectorAccess vector_access(Opcode op);

}  // namespace tessel::isa
