// Tests of the ISA text form (isa/asm.h): golden text, exact round trips in both directions,
// hand-written (non-canonical) syntax, and one test per assembler error class.
#include <gtest/gtest.h>

#include <set>

#include "compiler/support/error.h"
#include "isa/asm.h"
#include "isa_test_programs.h"

namespace tessel::isa {
namespace {

using namespace test_programs;

// Asserts that assembling `text` throws tessel::Error whose message contains every fragment.
void expect_asm_error(const std::string& text, std::initializer_list<std::string> fragments) {
  try {
    assemble(text, "k.s");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& f : fragments) {
      EXPECT_NE(msg.find(f), std::string::npos) << "message '" << msg << "' lacks '" << f << "'";
    }
  }
}

TEST(AsmGolden, BriefExamples) {
  // vadd with per-operand {elem_stride, repeat_stride}.
  VectorArgs v = vargs(DType::f16, vec(Scope::ub, 4, 0, 1, 128), vec(Scope::ub, 5, 256, 1, 128),
                       vec(Scope::ub, 6, 0, 0, 1), 128, 8, 0.0f);
  EXPECT_EQ(format_instruction(make(Opcode::vadd, v)),
            "vadd.f16 ub[x4+0]{1,128}, ub[x5+256]{1,128}, ub[x6+0]{0,1}, count=128, repeat=8");

  DmaArgs d;
  d.dtype = DType::f16;
  d.dst = mem(Scope::ub, 2, 0);
  d.src = mem(Scope::gm, 3, 4096);
  d.ndims = 3;
  d.extent = {8, 24, 96, 0};
  d.dst_stride = {2304, 96, 1, 0};
  d.src_stride = {4608, 192, 1, 0};
  d.valid_begin = {0, 1, 0, 0};
  d.valid_end = {8, 24, 96, 0};
  EXPECT_EQ(format_instruction(make(Opcode::dma, d)),
            "dma.f16 ub[x2+0], gm[x3+4096], extent=[8,24,96], dst_stride=[2304,96,1], "
            "src_stride=[4608,192,1], valid=[0:8,1:24,0:96]");
  // A full valid window and pad 0 are the defaults: both omitted.
  d.valid_begin = {0, 0, 0, 0};
  d.pad_value = 0.0f;
  EXPECT_EQ(format_instruction(make(Opcode::dma, d)),
            "dma.f16 ub[x2+0], gm[x3+4096], extent=[8,24,96], dst_stride=[2304,96,1], "
            "src_stride=[4608,192,1]");
  d.pad_value = -0.0f;  // not bit-equal to the default: printed
  EXPECT_EQ(format_instruction(make(Opcode::dma, d)),
            "dma.f16 ub[x2+0], gm[x3+4096], extent=[8,24,96], dst_stride=[2304,96,1], "
            "src_stride=[4608,192,1], pad=-0");

  EXPECT_EQ(format_instruction(make(Opcode::set_flag, SyncArgs{Pipe::mte2, Pipe::vector, 0})),
            "set_flag mte2, vector, 0");
  EXPECT_EQ(format_instruction(make(Opcode::blti, sargs(0, 1, 0, 12, 3))), "blti x1, 12, L3");
  EXPECT_EQ(format_instruction(make(Opcode::lbu, sargs(1, 0, 0, 4096, -1))), "lbu x1, x0, 4096");
  EXPECT_EQ(assemble(".core 0\n  lbu x1, x0, 4096\n", "l.s").cores[0][0],
            make(Opcode::lbu, sargs(1, 0, 0, 4096, -1)));

  MmadArgs m;
  m.c = mem(Scope::l0c, 0, 0);
  m.a = mem(Scope::l0a, 0, 0);
  m.b = mem(Scope::l0b, 0, 0);
  m.m1 = 2, m.k1 = 9, m.n1 = 4, m.accumulate = true;
  EXPECT_EQ(format_instruction(make(Opcode::mmad, m)),
            "mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=2, k1=9, n1=4, acc=1");
}

TEST(AsmGolden, OtherForms) {
  EXPECT_EQ(format_instruction(make(Opcode::li, sargs(7, 0, 0, -42, -1))), "li x7, -42");
  EXPECT_EQ(format_instruction(make(Opcode::jmp, sargs(0, 0, 0, 0, -1))), "jmp -1");
  EXPECT_EQ(format_instruction(make(Opcode::barrier, ScalarArgs{})), "barrier");
  EXPECT_EQ(format_instruction(make(Opcode::li, sargs(1, 9, 0, 5, -1))), "li x1, 5, rs=x9");
  EXPECT_EQ(format_instruction(make(Opcode::wait_flag, SyncArgs{Pipe::fix, Pipe::mte3, 7})),
            "wait_flag fix, mte3, 7");
  VectorArgs s = vargs(DType::f32, vec(Scope::ub, 1, 0, 1, 64), vec(Scope::ub, 2, -8, 1, 64),
                       VecOperand{}, 64, 1, 0.1f);
  EXPECT_EQ(format_instruction(make(Opcode::vmuls, s)),
            "vmuls.f32 ub[x1+0]{1,64}, ub[x2-8]{1,64}, 0.1, count=64");
  s.scalar = test_programs::float_from_bits(0x7f800001u);
  EXPECT_EQ(format_instruction(make(Opcode::vdup, s)),
            "vdup.f32 ub[x1+0]{1,64}, nan(0x7f800001), count=64, src0=ub[x2-8]{1,64}");
  FixArgs f;
  f.dst_dtype = DType::f16;
  f.dst = mem(Scope::ub, 3, 0);
  f.src = mem(Scope::l0c, 0, 0);
  f.m = 16, f.n = 32, f.dst_row_stride = 32;
  EXPECT_EQ(format_instruction(make(Opcode::fix, f)),
            "fix.f16 ub[x3+0], l0c[x0+0], m=16, n=32, dst_row_stride=32");
  Img2colArgs g;
  g.dst = mem(Scope::l0b, 0, 0);
  g.src = mem(Scope::l1, 1, 0);
  g.c = 16, g.h = 8, g.w = 8, g.kh = 3, g.kw = 3, g.pad_top = 1, g.pad_left = 1, g.oh = 8, g.ow = 8;
  EXPECT_EQ(format_instruction(make(Opcode::img2col, g)),
            "img2col.f16 l0b[x0+0], l1[x1+0], c=16, h=8, w=8, kh=3, kw=3, pad_top=1, pad_left=1, "
            "oh=8, ow=8");
  // Wrong operand class: printed (for diagnostics), never thrown.
  EXPECT_EQ(format_instruction(make(Opcode::vadd, SyncArgs{})),
            "vadd <operands of class SyncArgs, expected VectorArgs>");
}

TEST(AsmGolden, WholeProgram) {
  Program p;
  p.name = "tile add";
  p.gm_bytes = 8192;
  p.op_names = {"add0"};
  p.buffers.push_back({"a", GmKind::input, 0, 4096, DType::f16, {2048}, {}});
  p.buffers.push_back({"c", GmKind::output, 0x1000, 4096, DType::f16, {2048}, {}});
  p.cores.resize(1);
  auto& s = p.cores[0];
  s.push_back(make(Opcode::li, sargs(1, 0, 0, 0, -1)));
  s.push_back(make(Opcode::addi, sargs(1, 1, 0, 256, -1), 0));
  s.push_back(make(Opcode::blti, sargs(0, 1, 0, 4096, 1), 0));
  const std::string expected =
      ".program \"tile add\"\n"
      ".gm_bytes 8192\n"
      ".op 0 add0\n"
      ".buffer a kind=input addr=0x0 bytes=4096 dtype=f16 shape=[2048]\n"
      ".buffer c kind=output addr=0x1000 bytes=4096 dtype=f16 shape=[2048]\n"
      "\n"
      ".core 0\n"
      "  li x1, 0\n"
      "L1:\n"
      "  addi x1, x1, 256  # op=0\n"
      "  blti x1, 4096, L1  # op=0\n";
  EXPECT_EQ(disassemble(p), expected);
  EXPECT_EQ(program_difference(assemble(expected), p), "");
}

TEST(AsmRoundTrip, EveryOpcodeBothDirections) {
  const Program p = every_opcode_program();
  std::set<Opcode> used;
  for (const auto& core : p.cores) {
    for (const Instruction& in : core) used.insert(in.op);
  }
  ASSERT_EQ(used.size(), static_cast<std::size_t>(kNumOpcodes))
      << "the program must use every opcode";

  const std::string text = disassemble(p);
  const Program q = assemble(text, "every_opcode.s");
  EXPECT_EQ(program_difference(p, q), "");
  EXPECT_EQ(disassemble(q), text);  // disassemble(assemble(t)) == t on canonical text
}

TEST(AsmRoundTrip, RandomInstructions) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 20; ++trial) {
    Program p;
    p.name = "random";
    p.cores.resize(3);
    for (auto& core : p.cores) {
      for (int i = 0; i < 100; ++i) core.push_back(random_instruction(rng, /*text_safe=*/true));
    }
    const std::string text = disassemble(p);
    Program q;
    ASSERT_NO_THROW(q = assemble(text)) << text;
    ASSERT_EQ(program_difference(p, q), "") << "trial " << trial;
    ASSERT_EQ(disassemble(q), text);
  }
}

TEST(AsmRoundTrip, FloatsAreBitExact) {
  const uint32_t patterns[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007fffffu,
                               0x00800000u, 0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u,
                               0x7fc00000u, 0xffc00000u, 0x7fc00001u, 0xff800001u, 0x3dcccccdu,
                               0x3eaaaaabu, 0x4b800001u, 0xc2f6e979u};
  Program p;
  p.cores.resize(1);
  for (uint32_t b : patterns) {
    VectorArgs v = vargs(DType::f32, vec(Scope::ub, 0, 0, 1, 0), VecOperand{}, VecOperand{}, 8, 1,
                         float_from_bits(b));
    p.cores[0].push_back(make(Opcode::vdup, v));
  }
  const Program q = assemble(disassemble(p));
  ASSERT_EQ(q.cores.size(), 1u);
  for (std::size_t i = 0; i < std::size(patterns); ++i) {
    uint32_t got;
    const float f = std::get<VectorArgs>(q.cores[0][i].args).scalar;
    std::memcpy(&got, &f, 4);
    EXPECT_EQ(got, patterns[i]) << format_instruction(p.cores[0][i]);
  }
}

TEST(AsmRoundTrip, ConstantDataIsNotText) {
  Program p;
  p.gm_bytes = 16;
  p.buffers.push_back({"w", GmKind::constant, 0, 4, DType::f16, {2}, {1, 2, 3, 4}});
  const Program q = assemble(disassemble(p));
  ASSERT_EQ(q.buffers.size(), 1u);
  EXPECT_TRUE(q.buffers[0].init.empty());
  EXPECT_EQ(q.buffers[0].bytes, 4u);
  EXPECT_EQ(q.buffers[0].kind, GmKind::constant);
}

TEST(AsmParse, HandWrittenSyntax) {
  // Named labels, hex numbers, omitted offsets/strides/defaults, keys in any order, CRLF, comments.
  const std::string text =
      "# a hand-written kernel\r\n"
      ".program k\r\n"
      ".buffer in kind=input addr=0x100 bytes=64 shape=[32]   # dtype defaults to f16\n"
      ".core 0\n"
      "  li x1, 0x10\n"
      "loop:  vadds.f32 ub[x1], ub[x2+0x20]{2,64}, -2.5e-3, repeat=4, count=64  # op=7\n"
      "  addi x1, x1, -1\n"
      "  blt x0, x1, loop\n"
      "  jmp done\n"
      "  dma.f16 ub[x0+0], gm[x3+8], extent=[4], src_stride=[1], dst_stride=[1], pad=+1\n"
      "done:\n";
  const Program p = assemble(text);
  ASSERT_EQ(p.cores.size(), 1u);
  ASSERT_EQ(p.cores[0].size(), 6u);
  EXPECT_EQ(p.name, "k");
  ASSERT_EQ(p.buffers.size(), 1u);
  EXPECT_EQ(p.buffers[0].address, 0x100u);
  EXPECT_EQ(p.buffers[0].dtype, DType::f16);
  EXPECT_EQ(p.buffers[0].shape, std::vector<int64_t>{32});
  EXPECT_EQ(std::get<ScalarArgs>(p.cores[0][0].args).imm, 16);
  const auto& v = std::get<VectorArgs>(p.cores[0][1].args);
  EXPECT_EQ(v.dst.addr, mem(Scope::ub, 1, 0));
  EXPECT_EQ(v.dst.elem_stride, 1);  // omitted braces: {1, 0}
  EXPECT_EQ(v.dst.repeat_stride, 0);
  EXPECT_EQ(v.src0, vec(Scope::ub, 2, 32, 2, 64));
  EXPECT_EQ(v.scalar, -2.5e-3f);
  EXPECT_EQ(v.count, 64u);
  EXPECT_EQ(v.repeat, 4u);
  EXPECT_EQ(p.cores[0][1].op_index, 7);
  EXPECT_EQ(std::get<ScalarArgs>(p.cores[0][3].args).target, 1);  // loop
  EXPECT_EQ(std::get<ScalarArgs>(p.cores[0][4].args).target, 6);  // done = end of stream
  const auto& d = std::get<DmaArgs>(p.cores[0][5].args);
  EXPECT_EQ(d.ndims, 1);
  EXPECT_EQ(d.valid_begin[0], 0u);
  EXPECT_EQ(d.valid_end[0], 4u);  // omitted valid = the full extent
  EXPECT_EQ(d.pad_value, 1.0f);
  // Canonical re-print renames labels by index.
  const std::string canon = disassemble(p);
  EXPECT_NE(
      canon.find(
          "L1:\n  vadds.f32 ub[x1+0]{1,0}, ub[x2+32]{2,64}, -0.0025, count=64, repeat=4  # op=7"),
      std::string::npos)
      << canon;
  EXPECT_NE(canon.find("  blt x0, x1, L1\n  jmp L6\n"), std::string::npos) << canon;
}

// ---- one test per error class; each message names source, line and column ----

TEST(AsmErrors, UnknownMnemonic) {
  expect_asm_error(".core 0\n  li x1, 0\n  vadx.f16 ub[x1+0], ub[x1+0], count=1\n",
                   {"k.s:3:3:", "unknown mnemonic 'vadx'"});
}

TEST(AsmErrors, BadRegister) {
  expect_asm_error(".core 0\n  li x32, 0\n", {"k.s:2:6:", "bad register 'x32'", "x0..x31"});
  expect_asm_error(".core 0\n  add x1, y2, x3\n", {"k.s:2:11:", "bad register 'y2'"});
  expect_asm_error(".core 0\n  vcopy.f16 ub[x01+0], ub[x1+0], count=1\n",
                   {"k.s:2:16:", "bad register 'x01'"});
}

TEST(AsmErrors, UnknownLabel) {
  expect_asm_error(".core 0\nL0:\n  li x1, 0\n.core 1\n  jmp L0\n",
                   {"k.s:5:7:", "unknown label 'L0'", "core 1"});
}

TEST(AsmErrors, DuplicateLabel) {
  expect_asm_error(".core 0\nx:\n  barrier\nx:\n",
                   {"k.s:4:1:", "label 'x' already defined at line 2"});
}

TEST(AsmErrors, MissingOperand) {
  expect_asm_error(".core 0\n  addi x1, x2\n",
                   {"k.s:2:", "missing operand 3 of addi", "integer immediate"});
  expect_asm_error(".core 0\n  vadd.f16 ub[x1+0], ub[x2+0], ub[x3+0]\n",
                   {"k.s:2:", "missing field 'count=' of vadd"});
  expect_asm_error(".core 0\n  li x1,, 3\n", {"k.s:2:", "missing operand"});
  expect_asm_error(".core 0\n  vadd ub[x1+0], ub[x2+0], ub[x3+0], count=1\n",
                   {"k.s:2:7:", "missing dtype suffix"});
  expect_asm_error(".core 0\n  mmad l0c[x1+0], l0a[x1+0], l0b[x1+0], m1=1, k1=, n1=1\n",
                   {"k.s:2:", "missing value after 'k1='"});
}

TEST(AsmErrors, ScopeNotAllowed) {
  expect_asm_error(".core 0\n  mmad l0c[x0+0], ub[x0+0], l0b[x0+0], m1=1, k1=1, n1=1\n",
                   {"k.s:2:19:", "scope not allowed", "mmad operand 2 (a) must be in l0a, not ub"});
  expect_asm_error(
      ".core 0\n  dma.f16 l0a[x0+0], gm[x0+0], extent=[1], dst_stride=[1], src_stride=[1]\n",
      {"k.s:2:11:", "scope not allowed", "l1 or ub"});
  expect_asm_error(".core 0\n  vexp.f16 ub[x0+0]{1,0}, l1[x0+0]{1,0}, count=4\n",
                   {"k.s:2:27:", "scope not allowed", "src0"});
}

TEST(AsmErrors, NumberOutOfRange) {
  expect_asm_error(".core 0\n  vabs.f16 ub[x1+0]{1,0}, ub[x1+0]{1,0}, count=4294967296\n",
                   {"k.s:2:", "out of range for count", "0..4294967295"});
  expect_asm_error(".core 0\n  set_flag mte2, vector, 256\n",
                   {"k.s:2:26:", "out of range for an event id"});
  expect_asm_error(".core 0\n  li x1, 9223372036854775808\n", {"k.s:2:10:", "out of range"});
  expect_asm_error(".core 0\n  li x1, 99999999999999999999999\n", {"k.s:2:10:", "out of range"});
  expect_asm_error(".core 0\n  vdup.f32 ub[x0+0]{1,0}, 1e39, count=1\n",
                   {"k.s:2:", "out of range"});
  expect_asm_error(".core 0\n  vexp.f32 ub[x0+0]{2147483648,0}, ub[x0+0]{1,0}, count=1\n",
                   {"k.s:2:", "out of range for an element stride"});
  expect_asm_error(".core 0\n  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=1, n1=1, acc=2\n",
                   {"k.s:2:", "out of range for acc"});
}

TEST(AsmErrors, StructureAndDirectives) {
  expect_asm_error("  li x1, 0\n", {"k.s:1:3:", "outside a .core section"});
  expect_asm_error(".core 1\n", {"k.s:1:7:", "expected '.core 0'"});
  expect_asm_error(".prog x\n", {"k.s:1:1:", "unknown directive '.prog'"});
  expect_asm_error(".program a\n.program b\n", {"k.s:2:1:", "given twice"});
  expect_asm_error(".op 1 x\n", {"k.s:1:5:", "expected '.op 0'"});
  expect_asm_error(".buffer b kind=input addr=0\n", {"k.s:1:", "missing field 'bytes='"});
  expect_asm_error(".buffer b kind=inpt addr=0 bytes=2\n",
                   {"k.s:1:16:", "unknown buffer kind 'inpt'"});
  expect_asm_error(".buffer b kind=input addr=0 bytes=2 color=red\n",
                   {"k.s:1:37:", "unknown buffer field 'color'"});
  expect_asm_error(".program \"abc\n", {"k.s:1:10:", "unterminated string"});
  expect_asm_error(".core 0\n  li x1, 0 $\n", {"k.s:2:12:", "unexpected character '$'"});
}

TEST(AsmErrors, OperandForms) {
  expect_asm_error(".core 0\n  li x1, 2, 3\n",
                   {"k.s:2:13:", "too many operands for li: expected 2"});
  expect_asm_error(".core 0\n  li x1, 2, color=3\n", {"k.s:2:13:", "unknown field 'color' for li"});
  expect_asm_error(".core 0\n  li x1, 2, rs=x1, rs=x2\n", {"k.s:2:20:", "field 'rs' given twice"});
  expect_asm_error(".core 0\n  li x1, 2  # op=x\n", {"k.s:2:18:", "op index"});
  expect_asm_error(".core 0\n  barrier.f16\n", {"k.s:2:10:", "barrier takes no dtype suffix"});
  expect_asm_error(".core 0\n  vexp.f8 ub[x0+0], ub[x0+0], count=1\n",
                   {"k.s:2:8:", "unknown dtype 'f8'"});
  expect_asm_error(".core 0\n  set_flag mte2, vectr, 0\n", {"k.s:2:18:", "unknown pipe 'vectr'"});
  expect_asm_error(".core 0\n  vexp.f16 ram[x0+0], ub[x0+0], count=1\n",
                   {"k.s:2:12:", "unknown memory scope 'ram'"});
  expect_asm_error(".core 0\n  vexp.f16 ub[x0+0}, ub[x0+0], count=1\n",
                   {"k.s:2:19:", "expected ']'"});
  expect_asm_error(
      ".core 0\n  dma.f16 ub[x0+0], gm[x0+0], extent=[4,4], dst_stride=[4,1], src_stride=[1]\n",
      {"k.s:2:", "dma lists differ in length"});
  expect_asm_error(
      ".core 0\n  dma.f16 ub[x0+0], gm[x0+0], extent=[1,1,1,1,1], dst_stride=[1], src_stride=[1]\n",
      {"k.s:2:", "too many dimensions"});
  expect_asm_error(".core 0\n  vdup.f32 ub[x0+0], nan(0x3f800000), count=1\n",
                   {"k.s:2:", "is not a NaN"});
  expect_asm_error(".core 0\n  vdup.f32 ub[x0+0], 1.5x, count=1\n",
                   {"k.s:2:22:", "expected a scalar value, found '1.5x'"});
  expect_asm_error(".core 0\n  vadd.f16 ub[x1+0], count=1, ub[x2+0]\n",
                   {"k.s:2:", "positional operand after key=value"});
}

TEST(AsmErrors, DisassembleRejectsWrongOperandClass) {
  Program p;
  p.cores.resize(1);
  p.cores[0].push_back(make(Opcode::mmad, VectorArgs{}));
  try {
    disassemble(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("core 0, instruction 0: mmad holds VectorArgs operands"),
              std::string::npos)
        << e.what();
  }
}

TEST(AsmErrors, DisassembleRejectsInvalidEnumValues) {
  Program p;
  p.cores.resize(1);
  VectorArgs v;
  v.dst.addr.scope = static_cast<Scope>(7);
  p.cores[0].push_back(make(Opcode::vexp, v));
  EXPECT_EQ(invalid_enum_field(p.cores[0][0]), "invalid scope value 7");
  try {
    disassemble(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("core 0, instruction 0: invalid scope value 7"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(
      invalid_enum_field(make(Opcode::set_flag, SyncArgs{Pipe::mte2, static_cast<Pipe>(9), 0})),
      "invalid pipe value 9");
  EXPECT_EQ(invalid_enum_field(make(static_cast<Opcode>(99), ScalarArgs{})),
            "invalid opcode value 99");
  EXPECT_EQ(invalid_enum_field(make(Opcode::vexp, VectorArgs{})), "");
}

TEST(AsmHelpers, OpcodeNamesAndClasses) {
  for (int i = 0; i < kNumOpcodes; ++i) {
    const auto op = static_cast<Opcode>(i);
    Opcode back{};
    ASSERT_TRUE(opcode_from_name(opcode_name(op), back)) << opcode_name(op);
    EXPECT_EQ(back, op);
  }
  Opcode ignored{};
  EXPECT_FALSE(opcode_from_name("vfoo", ignored));
  EXPECT_EQ(args_index(Opcode::li), 0u);
  EXPECT_EQ(args_index(Opcode::core_barrier), 0u);
  EXPECT_EQ(args_index(Opcode::wait_flag), 1u);
  EXPECT_EQ(args_index(Opcode::dma), 2u);
  EXPECT_EQ(args_index(Opcode::img2col), 4u);
  EXPECT_EQ(args_index(Opcode::fix), 6u);
  EXPECT_EQ(args_index(Opcode::vrmin), 7u);
  const VectorOperandUse vd = vector_operand_use(Opcode::vdup);
  EXPECT_TRUE(!vd.src0 && !vd.src1 && vd.scalar);
  const VectorOperandUse vm = vector_operand_use(Opcode::vmla);
  EXPECT_TRUE(vm.src0 && vm.src1 && !vm.scalar);
}

TEST(AsmHelpers, ProgramDifferenceIsExact) {
  const Program p = every_opcode_program();
  Program q = p;
  EXPECT_EQ(program_difference(p, q), "");
  q.cores[0][3].op_index = 9;  // Instruction::operator== ignores op_index; this must not
  EXPECT_NE(program_difference(p, q), "");
  q = p;
  std::get<DmaArgs>(q.cores[0][13].args).pad_value = -1.5f;  // same value
  EXPECT_EQ(program_difference(p, q), "");
  std::get<DmaArgs>(q.cores[0][14].args).pad_value = test_programs::float_from_bits(0x7fa00002u);
  EXPECT_NE(program_difference(p, q), "");  // another NaN payload
  q = p;
  q.buffers[1].init = {1};
  EXPECT_NE(program_difference(p, q).find("init data differs"), std::string::npos);
}

}  // namespace
}  // namespace tessel::isa
