// Reference tables of docs/isa.md generated from the instruction records and operand classes
// (isa/instruction_list.h, isa/operand_classes.h), so that the documented operand lists and
// binary layouts are the ones the assembler and encoder implement. tests/isa/docs_tables_test.cpp
// checks that docs/isa.md holds exactly these tables (TESSEL_UPDATE_GOLDEN=1 rewrites them).
#pragma once

#include <string>

namespace tessel::isa {

/// The instruction table of docs/isa.md ("Assembly syntax"): one Markdown row per run of
/// consecutive opcodes with the same operand class, pipe, syntax and operand roles, with columns
/// instruction(s), operand class, pipe, syntax (positional operands, then key=value fields;
/// `[, key=default]` for optional ones), what it reads and what it writes (with the scopes
/// allowed). Ends with a newline.
std::string instruction_table_markdown();

/// The compact-form table of docs/isa.md ("Binary encoding"): per run of opcodes with the same
/// layout, the bytes after the opcode byte: the flag byte's bits, then the payload fields with
/// their wire types (u8, uv, sv, f32; `mem`/`vec` operands as described there) and, for optional
/// groups, the flag bit that marks them present and their defaults. Ends with a newline.
std::string compact_form_table_markdown();

/// Replaces the text between the lines `<!-- NAME:begin -->` and `<!-- NAME:end -->` of
/// `document` by `body`. Returns false (document unchanged) when the markers are missing.
bool replace_generated_block(std::string& document, const std::string& name,
                             const std::string& body);

/// The text between the markers of replace_generated_block; empty when they are missing.
std::string generated_block(const std::string& document, const std::string& name);

}  // namespace tessel::isa
