// Keeps docs/isa.md honest: the worked example assembles, verifies and computes c = relu(a + b) on
// the functional interpreter, and every example of the instruction syntax table is canonical text
// (it parses and prints back unchanged).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "compiler/support/fp16.h"
#include "isa/asm.h"
#include "isa/interpreter.h"
#include "isa/verifier.h"
#include "isa_test_programs.h"

namespace tessel::isa {
namespace {

std::string read_docs() {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/docs/isa.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The text between `begin` and `end` (exclusive); fails the test if a marker is missing.
std::string between(const std::string& s, const std::string& begin, const std::string& end) {
  const auto b = s.find(begin);
  const auto e = s.find(end, b == std::string::npos ? 0 : b + begin.size());
  if (b == std::string::npos || e == std::string::npos) {
    ADD_FAILURE() << "markers '" << begin << "' / '" << end << "' not found in docs/isa.md";
    return "";
  }
  return s.substr(b + begin.size(), e - b - begin.size());
}

std::string worked_example() {
  std::string block = between(read_docs(), "<!-- example:begin -->", "<!-- example:end -->");
  return between(block, "```asm\n", "```");
}

void store_f16(std::vector<uint8_t>& gm, std::size_t addr, float v) {
  const uint16_t h = f32_to_f16_bits(v);
  gm[addr] = static_cast<uint8_t>(h & 0xff);
  gm[addr + 1] = static_cast<uint8_t>(h >> 8);
}

uint16_t load_f16_bits(const std::vector<uint8_t>& gm, std::size_t addr) {
  return static_cast<uint16_t>(gm[addr] | (gm[addr + 1] << 8));
}

TEST(DocsExample, AssemblesVerifiesAndRoundTrips) {
  const Program p = assemble(worked_example(), "docs/isa.md");
  ASSERT_EQ(p.cores.size(), 1u);
  EXPECT_EQ(p.cores[0].size(), 21u);
  EXPECT_EQ(p.buffers.size(), 3u);
  // `tile:` labels instruction 3; the loop branch goes back there.
  EXPECT_EQ(p.cores[0][17].op, Opcode::blti);
  EXPECT_EQ(std::get<ScalarArgs>(p.cores[0][17].args).target, 3);
  EXPECT_EQ(verify_program(p, test_programs::test_hw(1)), std::vector<std::string>{});
  EXPECT_EQ(program_difference(assemble(disassemble(p)), p), "");
  // As the docs say: the disassembly renames the label to L3.
  EXPECT_NE(disassemble(p).find("  blti x1, 8192, L3\n"), std::string::npos);
}

TEST(DocsExample, ComputesReluOfSum) {
  const Program p = assemble(worked_example(), "docs/isa.md");
  std::vector<uint8_t> gm(p.gm_bytes, 0);
  // a[i] = (i % 17 - 8) / 4, b[i] = (i % 13 - 6) / 8: multiples of 1/8 below 4, so a + b is exact
  // in fp32 and fp16 and the expected value is exactly max(a + b, 0) (an exact 0 sum is +0).
  for (std::size_t i = 0; i < 4096; ++i) {
    store_f16(gm, 0x0 + 2 * i, (static_cast<int>(i % 17) - 8) / 4.0f);
    store_f16(gm, 0x2000 + 2 * i, (static_cast<int>(i % 13) - 6) / 8.0f);
  }
  const InterpretStats stats = interpret(p, test_programs::test_hw(1), gm);
  // 3 before the loop + 4 iterations x 15 (instructions 3..17) + 3 after = 66 dynamic instructions.
  EXPECT_EQ(stats.instructions, 66u);
  for (std::size_t i = 0; i < 4096; ++i) {
    const float a = (static_cast<int>(i % 17) - 8) / 4.0f;
    const float b = (static_cast<int>(i % 13) - 6) / 8.0f;
    const float expected = a + b > 0 ? a + b : 0.0f;
    ASSERT_EQ(load_f16_bits(gm, 0x4000 + 2 * i), f32_to_f16_bits(expected)) << "element " << i;
  }
}

TEST(DocsExample, SyntaxTableExamplesAreCanonical) {
  const std::string section = between(read_docs(), "<!-- SECTION: assembly syntax -->",
                                      "<!-- SECTION: binary encoding -->");
  const std::string table = between(section, "### Instructions", "Notes on `dma`");
  // Labels L0..L63 are defined before the example (one barrier each), so any L<n> target resolves.
  std::string prefix = ".core 0\n";
  for (int i = 0; i < 64; ++i) prefix += fmt::format("L{}:\n  barrier\n", i);
  int checked = 0;
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    // Rows: | `mnemonics` | `syntax` | `example` |
    if (line.rfind("| `", 0) != 0) continue;
    const auto last_open = line.rfind("| `");
    const auto last_close = line.rfind("` |");
    ASSERT_NE(last_close, std::string::npos) << line;
    const std::string example = line.substr(last_open + 3, last_close - last_open - 3);
    Program p;
    ASSERT_NO_THROW(p = assemble(prefix + "  " + example + "\n", "docs/isa.md")) << example;
    EXPECT_EQ(format_instruction(p.cores[0].back()), example);
    ++checked;
  }
  EXPECT_EQ(checked, 28);  // one row per syntax form (mmad and fix twice: float and int8 mode;
                           // lbu apart from addi muli, whose form it shares)
}

}  // namespace
}  // namespace tessel::isa
