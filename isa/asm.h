// Text assembler and disassembler for isa::Program (syntax specified in docs/isa.md; every
// instruction's operands come from its record and operand class, isa/operand_classes.h).
// disassemble(assemble(t)) reproduces t's instructions; assemble(disassemble(p)) == p.
#pragma once

#include <cstddef>
#include <string>

#include "isa/isa.h"

namespace tessel::isa {

/// One instruction in assembly syntax. Branch targets print as "L<index>".
std::string format_instruction(const Instruction& instr);

/// The whole program: `.program`, `.buffer` (memory map, without constant data), `.core N`
/// sections, labels "L<index>:" before every branch target, one instruction per line.
std::string disassemble(const Program& program);

/// Parses assembly text. Throws tessel::Error naming `source_name`, the line and what was expected.
/// Constant buffers parse with empty `init` (data is not part of the text form).
Program assemble(const std::string& text, const std::string& source_name = "<asm>");

// ---- helpers shared by asm, encoding and verifier ----
// kNumOpcodes and args_index(op) (the index of the Instruction::args alternative an opcode uses)
// are in isa/isa.h, derived from the instruction records.

/// Which VectorArgs fields a vector opcode uses besides `dst` (always used), from its record:
/// binary ops and vmla read src0 and src1; vadds/vmuls/vmaxs/vmins read src0 and scalar; vdup
/// reads scalar only; unary ops and reductions read src0 only. All false for a non-vector opcode.
struct VectorOperandUse {
  bool src0 = false, src1 = false, scalar = false;
};
VectorOperandUse vector_operand_use(Opcode op);

/// "" when the opcode and every enum field of `instr.args` (scopes, pipes, dtypes) hold one of
/// their enumerators, else a description of the first that does not, e.g. "invalid scope value 9".
/// Such instructions cannot be printed or encoded (disassemble and encode throw).
std::string invalid_enum_field(const Instruction& instr);

/// The opcode whose mnemonic is `mnemonic` (e.g. "vadd"); false if there is none.
bool opcode_from_name(const std::string& mnemonic, Opcode& op);

/// Compares two programs field by field, exactly: floats by bit pattern, op_index, buffer `init`
/// bytes and the args alternative included (Instruction::operator== ignores op_index and treats
/// NaN != NaN). Returns "" when identical, else a description of the first difference.
std::string program_difference(const Program& a, const Program& b);

}  // namespace tessel::isa
