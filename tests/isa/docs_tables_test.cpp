// docs/isa.md cannot drift from the instruction records: its operand table and its compact-form
// table are exactly what isa/reference.h generates from the records and operand classes
// (TESSEL_UPDATE_GOLDEN=1 rewrites them in place), every instruction has its line in the
// "Instructions" (semantics) section, and the syntax examples cover every opcode.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "isa/isa.h"
#include "isa/reference.h"

namespace tessel::isa {
namespace {

const std::string kDocs = std::string(TESSEL_SOURCE_DIR) + "/docs/isa.md";

std::string read_docs() {
  std::ifstream in(kDocs);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void expect_block(const std::string& name, const std::string& generated) {
  std::string docs = read_docs();
  if (std::getenv("TESSEL_UPDATE_GOLDEN")) {
    ASSERT_TRUE(replace_generated_block(docs, name, generated))
        << "markers <!-- " << name << ":begin/end --> missing in " << kDocs;
    std::ofstream(kDocs) << docs;
    GTEST_SKIP() << "updated the " << name << " block of " << kDocs;
  }
  ASSERT_NE(docs.find("<!-- " + name + ":begin -->"), std::string::npos)
      << "markers <!-- " << name << ":begin/end --> missing in " << kDocs;
  EXPECT_EQ(generated_block(docs, name), generated)
      << "the " << name << " table of docs/isa.md differs from the instruction records; run "
      << "TESSEL_UPDATE_GOLDEN=1 build/bin/test_isa --gtest_filter='DocsTables.*' to regenerate it";
}

TEST(DocsTables, OperandTableIsGeneratedFromTheRecords) {
  expect_block("isa:instructions", instruction_table_markdown());
}

TEST(DocsTables, CompactFormTableIsGeneratedFromTheRecords) {
  expect_block("isa:compact", compact_form_table_markdown());
}

TEST(DocsTables, GeneratedTablesListEveryOpcodeOnce) {
  // Each table's first column lists mnemonics; together they hold every opcode exactly once.
  for (const std::string& table : {instruction_table_markdown(), compact_form_table_markdown()}) {
    std::multiset<std::string> listed;
    std::istringstream lines(table);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("| `", 0) != 0) continue;
      std::istringstream words(line.substr(3, line.find('`', 3) - 3));
      for (std::string w; words >> w;) listed.insert(w);
    }
    ASSERT_EQ(listed.size(), static_cast<std::size_t>(kNumOpcodes)) << table;
    for (const InstrInfo& r : kInstructions) EXPECT_EQ(listed.count(r.mnemonic), 1u) << r.mnemonic;
  }
}

// The text of one "<!-- SECTION: name" section of docs/isa.md.
std::string section(const std::string& docs, const std::string& name) {
  const auto b = docs.find("<!-- SECTION: " + name);
  const auto e = docs.find("<!-- SECTION:", b + 1);
  EXPECT_NE(b, std::string::npos) << "section " << name << " missing in " << kDocs;
  return b == std::string::npos ? "" : docs.substr(b, e - b);
}

// The words of every `code span` of `text`.
std::set<std::string> code_words(const std::string& text) {
  std::set<std::string> words;
  static const std::regex span("`([^`]*)`"), word("[A-Za-z_][A-Za-z0-9_]*");
  for (std::sregex_iterator s(text.begin(), text.end(), span), end; s != end; ++s) {
    const std::string inner = (*s)[1];
    for (std::sregex_iterator w(inner.begin(), inner.end(), word); w != end; ++w)
      words.insert(w->str());
  }
  return words;
}

TEST(DocsTables, EveryInstructionHasItsSemanticsLine) {
  // A new instruction is its record, its semantics, its timing formula and its line in the
  // "Instructions" section (the semantics): its mnemonic must appear there in code.
  const std::set<std::string> words = code_words(section(read_docs(), "semantics"));
  for (const InstrInfo& r : kInstructions)
    EXPECT_TRUE(words.count(r.mnemonic))
        << "docs/isa.md, section Instructions, does not describe `" << r.mnemonic << "`";
}

TEST(DocsTables, SyntaxExamplesCoverEveryOpcode) {
  // The example table of "### Instructions" (its examples are checked to be canonical text by
  // docs_example_test.cpp): every opcode is listed in exactly one row, whose example uses one of
  // the row's mnemonics.
  const std::string syntax = section(read_docs(), "assembly syntax");
  const auto b = syntax.find("### Instructions");
  const auto e = syntax.find("Notes on `dma`");
  ASSERT_TRUE(b != std::string::npos && e != std::string::npos);
  std::multiset<std::string> listed;
  std::istringstream lines(syntax.substr(b, e - b));
  static const std::regex row(R"(^\| `([^`]*)` \| `([a-z_0-9]+)([ .][^`]*)?` \|$)");
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (!std::regex_match(line, m, row)) continue;
    std::set<std::string> mnemonics;
    std::istringstream words(m[1].str());
    for (std::string w; words >> w;) mnemonics.insert(w), listed.insert(w);
    EXPECT_TRUE(mnemonics.count(m[2].str())) << line;
  }
  for (const InstrInfo& r : kInstructions) EXPECT_EQ(listed.count(r.mnemonic), 1u) << r.mnemonic;
  EXPECT_EQ(listed.size(), static_cast<std::size_t>(kNumOpcodes));
}

}  // namespace
}  // namespace tessel::isa
