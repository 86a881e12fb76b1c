// Text assembler and disassembler for isa::Program (syntax specified in docs/isa.md).
// disassemble(assemble(t)) reproduces t's instructions; assemble(disassemble(p)) == p.
#pragma once

#include <string>

#include "isa/isa.h"

namespace tessel::isa {

/// One instruction in assembly syntax. Branch targets print as "L<index>".
std::string format_instruction(const Instruction& instr);

/// The whole program: `.program`, `.buffer` (memory map, without constant data), `.core N` sections,
/// labels "L<index>:" before every branch target, one instruction per line.
std::string disassemble(const Program& program);

/// Parses assembly text. Throws tessel::Error naming `source_name`, the line and what was expected.
/// Constant buffers parse with empty `init` (data is not part of the text form).
Program assemble(const std::string& text, const std::string& source_name = "<asm>");

}  // namespace tessel::isa
