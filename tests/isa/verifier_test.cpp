// Tests of the static verifier (isa/verifier.h): a valid program passes; each class of problem is
// reported with the core, the instruction index and the formatted instruction.
#include <gtest/gtest.h>

#include "compiler/support/error.h"
#include "isa/asm.h"
#include "isa/semantics.h"
#include "isa/verifier.h"
#include "isa_test_programs.h"

namespace tessel::isa {
namespace {

using namespace test_programs;

// A valid single-core program: two dma loads, a vadd, a dma store, with flags.
Program valid_program() {
  return assemble(
      ".program ok\n"
      ".gm_bytes 24576\n"
      ".op 0 add\n"
      ".buffer a kind=input addr=0x0 bytes=8192 dtype=f16 shape=[4096]\n"
      ".buffer b kind=input addr=0x2000 bytes=8192 dtype=f16 shape=[64,64]\n"
      ".buffer c kind=output addr=0x4000 bytes=8192 dtype=f16 shape=[4096]\n"
      ".core 0\n"
      "  li x1, 0\n"
      "L1:\n"
      "  dma.f16 ub[x0+0], gm[x1+0], extent=[1024], dst_stride=[1], src_stride=[1]  # op=0\n"
      "  dma.f16 ub[x0+2048], gm[x1+8192], extent=[1024], dst_stride=[1], src_stride=[1]  # op=0\n"
      "  set_flag mte2, vector, 0\n"
      "  wait_flag mte2, vector, 0\n"
      "  vadd.f16 ub[x0+4096]{1,128}, ub[x0+0]{1,128}, ub[x0+2048]{1,128}, count=128, repeat=8  # "
      "op=0\n"
      "  set_flag vector, mte3, 7\n"
      "  wait_flag vector, mte3, 7\n"
      "  dma.f16 gm[x1+16384], ub[x0+4096], extent=[1024], dst_stride=[1], src_stride=[1]  # op=0\n"
      "  addi x1, x1, 2048\n"
      "  blti x1, 8192, L1\n"
      "  barrier\n"
      "  jmp L13\n"
      "L13:\n",
      "ok.s");
}

// Runs the verifier on `p` after `mutate`, expects exactly one message containing each fragment.
template <class F>
void expect_problem(F mutate, std::initializer_list<std::string> fragments, int cores = 1) {
  Program p = valid_program();
  mutate(p);
  const std::vector<std::string> msgs = verify_program(p, test_hw(cores));
  ASSERT_EQ(msgs.size(), 1u) << ::testing::PrintToString(msgs);
  for (const std::string& f : fragments) {
    EXPECT_NE(msgs[0].find(f), std::string::npos) << "'" << msgs[0] << "' lacks '" << f << "'";
  }
}

Instruction& at(Program& p, std::size_t i) { return p.cores[0][i]; }

TEST(Verifier, AcceptsValidProgram) {
  EXPECT_EQ(verify_program(valid_program(), test_hw(1)), std::vector<std::string>{});
}

TEST(Verifier, CoreCount) {
  const auto msgs = verify_program(valid_program(), test_hw(4));
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0], "program: 1 core streams, but hw config 'test-hw' has cores = 4");
}

TEST(Verifier, RegisterOutOfRange) {
  expect_problem([](Program& p) { std::get<ScalarArgs>(at(p, 0).args).rd = 32; },
                 {"core 0, instruction 0 (li x32, 0): register x32 of rd out of range"});
  expect_problem([](Program& p) { std::get<DmaArgs>(at(p, 1).args).src.reg = 40; },
                 {"core 0, instruction 1 (dma.f16", "register x40 of src out of range"});
}

TEST(Verifier, BranchTarget) {
  expect_problem(
      [](Program& p) { std::get<ScalarArgs>(at(p, 10).args).target = 14; },
      {"core 0, instruction 10 (blti x1, 8192, L14)", "branch target 14 out of range (0..13"});
  expect_problem([](Program& p) { std::get<ScalarArgs>(at(p, 12).args).target = -1; },
                 {"core 0, instruction 12 (jmp -1)", "branch target -1 out of range"});
}

TEST(Verifier, ScalarLoadOutsideGm) {
  // gm_bytes 24576: lbu of byte 24575 is fine, 24576 and -1 are outside; through x1 it is checked
  // at run time only.
  auto lbu = [](int64_t imm, uint8_t rs = 0) {
    return make(Opcode::lbu, ScalarArgs{2, rs, 0, imm, -1});
  };
  Program ok = valid_program();
  ok.cores[0].insert(ok.cores[0].begin(), lbu(24575));
  ok.cores[0].insert(ok.cores[0].begin(), lbu(1 << 20, 1));
  for (Instruction& in : ok.cores[0])  // the branch targets move by the two instructions
    if (is_branch(in.op)) std::get<ScalarArgs>(in.args).target += 2;
  EXPECT_EQ(verify_program(ok, test_hw(1)), std::vector<std::string>{});
  expect_problem([&](Program& p) { at(p, 0) = lbu(24576); },
                 {"core 0, instruction 0 (lbu x2, x0, 24576)",
                  "lbu of GM byte 24576 outside the program's 24576 GM bytes"});
  expect_problem([&](Program& p) { at(p, 0) = lbu(-1); }, {"lbu of GM byte -1 outside"});
}

TEST(Verifier, IllegalScope) {
  // mmad reading UB (the assembler rejects this text, so the program is built in code).
  expect_problem(
      [](Program& p) {
        MmadArgs m;
        m.c = mem(Scope::l0c, 0, 0), m.a = mem(Scope::ub, 0, 0), m.b = mem(Scope::l0b, 0, 0);
        m.m1 = m.k1 = m.n1 = 1;
        at(p, 5) = make(Opcode::mmad, m);
      },
      {"core 0, instruction 5 (mmad l0c[x0+0], ub[x0+0], l0b[x0+0], m1=1, k1=1, n1=1)",
       "mmad operand 2 (a) must be in l0a, not ub"});
  expect_problem([](Program& p) { std::get<DmaArgs>(at(p, 1).args).dst.scope = Scope::l0c; },
                 {"instruction 1", "dst of a dma from gm", "l1 or ub, not l0c"});
  expect_problem(
      [](Program& p) { std::get<VectorArgs>(at(p, 5).args).src1.addr.scope = Scope::l1; },
      {"instruction 5", "vadd operand 3 (src1) must be in ub, not l1"});
}

TEST(Verifier, WrongOperandClass) {
  expect_problem([](Program& p) { at(p, 5).args = DmaArgs{}; },
                 {"instruction 5", "holds DmaArgs operands, vadd needs VectorArgs"});
}

TEST(Verifier, InvalidEnumValue) {
  expect_problem(
      [](Program& p) { std::get<DmaArgs>(at(p, 1).args).dst.scope = static_cast<Scope>(6); },
      {"core 0, instruction 1 (dma.f16 ?[x0+0]", "invalid scope value 6"});
}

TEST(Verifier, SyncProblems) {
  expect_problem([](Program& p) { std::get<SyncArgs>(at(p, 3).args).event = 8; },
                 {"core 0, instruction 3 (set_flag mte2, vector, 8)",
                  "event id 8 >= core.sync.event_ids = 8"});
  expect_problem([](Program& p) { std::get<SyncArgs>(at(p, 6).args).dst = Pipe::vector; },
                 {"instruction 6 (set_flag vector, vector, 7)", "between pipe vector and itself"});
}

TEST(Verifier, ZeroExtents) {
  expect_problem([](Program& p) { std::get<DmaArgs>(at(p, 1).args).extent[0] = 0; },
                 {"instruction 1", "zero extent in dimension 0"});
  expect_problem([](Program& p) { std::get<VectorArgs>(at(p, 5).args).count = 0; },
                 {"instruction 5", "zero extent: count = 0"});
  expect_problem([](Program& p) { std::get<DmaArgs>(at(p, 1).args).ndims = 0; },
                 {"instruction 1", "ndims = 0 (expected 1..4)"});
}

TEST(Verifier, OversizeExtents) {
  // 131072 f16 elements = 256 KiB + 0 bytes fits ub (256 KiB) exactly; 131073 does not.
  expect_problem(
      [](Program& p) {
        auto& d = std::get<DmaArgs>(at(p, 1).args);
        d.extent[0] = 131073;  // the valid window stays [0, 1024): the GM read is in range
      },
      {"instruction 1", "dst spans 262146 bytes, more than ub holds (262144 bytes)"});
  // mmad with m1 = 9, k1 = 16: A = 9 * 16 fractals * 16 * 16 * 2 bytes = 73728 > l0a (65536).
  expect_problem(
      [](Program& p) {
        MmadArgs m;
        m.c = mem(Scope::l0c, 1, 0), m.a = mem(Scope::l0a, 1, 0), m.b = mem(Scope::l0b, 1, 0);
        m.m1 = 9, m.k1 = 16, m.n1 = 1;
        at(p, 5) = make(Opcode::mmad, m);
      },
      {"instruction 5", "a spans 73728 bytes, more than l0a holds (65536 bytes)"});
}

TEST(Verifier, ConstantAddressOutsideScratchpad) {
  // vadd dst at ub 261120 + 1024 elements * 2 bytes = 263168 > 262144.
  expect_problem([](Program& p) { std::get<VectorArgs>(at(p, 5).args).dst.addr.offset = 261120; },
                 {"instruction 5", "dst accesses ub[261120, 263168), outside ub (262144 bytes)"});
  expect_problem([](Program& p) { std::get<DmaArgs>(at(p, 1).args).dst.offset = -2; },
                 {"instruction 1", "dst accesses ub[-2, 2046)"});
  // A GM operand with base x0 is checked against gm_bytes.
  expect_problem(
      [](Program& p) { std::get<DmaArgs>(at(p, 8).args).dst = mem(Scope::gm, 0, 24000); },
      {"instruction 8", "dst accesses gm[24000, 26048), outside gm (24576 bytes)"});
  // The same offsets through a non-zero register are not checked statically.
  Program p = valid_program();
  std::get<VectorArgs>(at(p, 5).args).dst.addr = mem(Scope::ub, 3, 261120);
  EXPECT_TRUE(verify_program(p, test_hw(1)).empty());
}

TEST(Verifier, DtypeAndSizeConsistency) {
  expect_problem(
      [](Program& p) {
        Load2dArgs l;
        l.dtype = DType::f32;
        l.dst = mem(Scope::l0a, 0, 0), l.src = mem(Scope::l1, 0, 0);
        l.rows = 16, l.cols = 16, l.src_row_stride = 16;
        at(p, 5) = make(Opcode::load2d, l);
      },
      {"instruction 5", "dtype f32 differs from the cube input dtype f16"});
  expect_problem(
      [](Program& p) {
        auto& d = std::get<DmaArgs>(at(p, 1).args);
        d.valid_begin[0] = 5, d.valid_end[0] = 2000;
      },
      {"instruction 1", "valid window [5, 2000) of dimension 0 is not within [0, extent = 1024]"});
  expect_problem(
      [](Program& p) {
        FixArgs f;
        f.dst = mem(Scope::ub, 0, 0), f.src = mem(Scope::l0c, 0, 0);
        f.m = 16, f.n = 32, f.dst_row_stride = 16;
        at(p, 5) = make(Opcode::fix, f);
      },
      {"instruction 5", "dst_row_stride 16 < n = 32"});
  expect_problem(
      [](Program& p) {
        FixArgs f;
        f.dst_dtype = DType::i8;
        f.dst = mem(Scope::ub, 0, 0), f.src = mem(Scope::l0c, 0, 0);
        f.m = 16, f.n = 16, f.dst_row_stride = 16;
        f.quant = mem(Scope::ub, 0, 4096);
        f.per_channel = f.per_row = true;
        at(p, 5) = make(Opcode::fix, f);
      },
      {"instruction 5", "per_row and per_channel both set"});
  expect_problem([](Program& p) { at(p, 1).op_index = 3; },
                 {"instruction 1", "op_index 3 has no entry in op_names (1 names)"});
}

TEST(Verifier, MulticastRules) {
  // Instruction 1 of valid_program() is a dma gm -> ub of 1024 f16.
  auto to_mc = [](Program& p, uint32_t cores) {
    at(p, 1).op = Opcode::dma_mc;
    std::get<DmaArgs>(at(p, 1).args).cores = cores;
  };
  EXPECT_EQ(verify_program(
                [&] {
                  Program p = valid_program();
                  to_mc(p, 1);
                  return p;
                }(),
                test_hw(1)),
            std::vector<std::string>{});
  expect_problem([&](Program& p) { to_mc(p, 2); },
                 {"instruction 1", "dma_mc core set of 2 cores (expected 1..cores = 1)"});
  expect_problem([&](Program& p) { to_mc(p, 0); },
                 {"instruction 1", "dma_mc core set of 0 cores (expected 1..cores = 1)"});
  expect_problem([](Program& p) { std::get<DmaArgs>(at(p, 1).args).cores = 4; },
                 {"instruction 1", "cores = 4 on a dma (a core set is for dma_mc only)"});
  Program p = valid_program();
  to_mc(p, 1);
  npu::HwConfig no_mc = test_hw(1);
  no_mc.multicast = false;
  const std::vector<std::string> msgs = verify_program(p, no_mc);
  ASSERT_EQ(msgs.size(), 1u) << ::testing::PrintToString(msgs);
  EXPECT_NE(msgs[0].find("dma_mc on hardware without multicast (hw config 'test-hw': "
                         "memory.multicast is none)"),
            std::string::npos)
      << msgs[0];
}

TEST(Verifier, L2HintRules) {
  // Instruction 1 of valid_program() replaced by an L2 hint: valid inside GM; a zero byte count is
  // a zero extent; a range past gm_bytes (base register x0) is reported; src must be in GM.
  auto hint = [](Program& p, MemRef src, uint32_t bytes) {
    at(p, 1).op = Opcode::l2_prefetch;
    at(p, 1).args = L2HintArgs{src, bytes};
  };
  EXPECT_EQ(verify_program(
                [&] {
                  Program p = valid_program();
                  hint(p, MemRef{Scope::gm, 0, 0}, 64);
                  return p;
                }(),
                test_hw(1)),
            std::vector<std::string>{});
  expect_problem(
      [&](Program& p) {
        hint(p, MemRef{Scope::gm, 0, 0}, 0);
      },
      {"instruction 1", "zero extent"});
  expect_problem(
      [&](Program& p) {
        hint(p, MemRef{Scope::gm, 0, static_cast<int64_t>(p.gm_bytes)}, 64);
        at(p, 1).op = Opcode::l2_discard;
      },
      {"instruction 1", "l2_discard of GM bytes", "outside the program's"});
  expect_problem(
      [&](Program& p) {
        hint(p, MemRef{Scope::ub, 0, 0}, 64);
      },
      {"instruction 1", "must be in gm"});
}

TEST(Verifier, Buffers) {
  expect_problem([](Program& p) { p.buffers[2].address = 0x5000; },
                 {"buffer 2 'c': [0x5000, 0x7000) lies outside gm_bytes = 24576"});
  expect_problem(
      [](Program& p) {
        p.buffers[1].shape = {64, 63};
      },
      {"buffer 1 'b': bytes = 8192, but shape [64,63] of f16 needs 8064"});
  expect_problem([](Program& p) { p.buffers[1].name = "a"; },
                 {"buffer 1 'a': name already used by buffer 0"});
  expect_problem(
      [](Program& p) {
        p.buffers[0].kind = GmKind::constant;
        p.buffers[0].init.assign(100, 0);
      },
      {"buffer 0 'a': init holds 100 bytes, expected bytes = 8192"});
  expect_problem([](Program& p) { p.buffers[2].init.assign(8192, 0); },
                 {"buffer 2 'c': only constant buffers carry init data"});
}

TEST(Verifier, EveryOpcodeProgramFootprints) {
  // The every-opcode program uses registers for almost every address, so only the instructions
  // with x0 bases or fixed sizes can be judged: the f32 load2d to L0B (cube input dtype is f16).
  const auto msgs = verify_program(every_opcode_program(), test_hw(2));
  ASSERT_EQ(msgs.size(), 1u) << ::testing::PrintToString(msgs);
  EXPECT_NE(msgs[0].find("core 0, instruction 17 (load2d.f32"), std::string::npos) << msgs[0];
}

TEST(Verifier, ScopeRulesTable) {
  // The assembler and verifier share check_operand_scopes: every legal dma pair passes, the rest
  // fail.
  for (int d = 0; d < kNumScopes; ++d) {
    for (int s = 0; s < kNumScopes; ++s) {
      DmaArgs a;
      a.dst.scope = static_cast<Scope>(d);
      a.src.scope = static_cast<Scope>(s);
      ScopeViolation v;
      const bool ok = check_operand_scopes(make(Opcode::dma, a), v);
      const bool legal =
          (a.src.scope == Scope::gm && (a.dst.scope == Scope::l1 || a.dst.scope == Scope::ub)) ||
          (a.src.scope == Scope::ub && (a.dst.scope == Scope::gm || a.dst.scope == Scope::l1));
      EXPECT_EQ(ok, legal) << scope_name(a.dst.scope) << " <- " << scope_name(a.src.scope);
    }
  }
}

TEST(Verifier, FootprintsAgreeWithSemantics) {
  // For constant (x0) addresses the verifier's static footprint check must flag exactly the
  // instructions whose run-time bounds check (isa/semantics.h access_range_list + check_ranges, an
  // independent implementation) fails. Random legal data instructions with offsets and sizes
  // around the edges of small scratchpads; a 4 x 4 x 4 cube keeps fractal padding visible.
  npu::HwConfig hw = test_hw(1);
  hw.core.cube.m = hw.core.cube.k = hw.core.cube.n = 4;
  hw.core.buffers_bytes = {4096, 1024, 1024, 2048, 4096};
  Program base;
  base.gm_bytes = 8192;
  base.cores.resize(1);
  const std::array<uint64_t, kNumScopes> sizes = {8192, 4096, 1024, 1024, 2048, 4096};
  std::mt19937_64 rng(99);
  auto u = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  auto off = [&](Scope s) { return u(-64, static_cast<int64_t>(sizes[static_cast<int>(s)]) + 64); };
  auto at0 = [&](Scope s) { return mem(s, 0, off(s)); };
  int flagged = 0, total = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    Instruction in;
    switch (u(0, 5)) {
      case 0: {
        DmaArgs d;
        d.dtype = u(0, 1) ? DType::f32 : DType::f16;
        const Scope pairs[4][2] = {{Scope::l1, Scope::gm},
                                   {Scope::ub, Scope::gm},
                                   {Scope::gm, Scope::ub},
                                   {Scope::l1, Scope::ub}};
        const auto& pr = pairs[u(0, 3)];
        d.dst = at0(pr[0]), d.src = at0(pr[1]);
        d.ndims = static_cast<uint8_t>(u(1, 3));
        for (int k = 0; k < d.ndims; ++k) {
          d.extent[k] = static_cast<uint32_t>(u(1, 12));
          d.dst_stride[k] = u(-20, 40);
          d.src_stride[k] = u(-20, 40);
          d.valid_begin[k] = static_cast<uint32_t>(u(0, d.extent[k]));
          d.valid_end[k] = static_cast<uint32_t>(u(d.valid_begin[k], d.extent[k]));
        }
        in = make(Opcode::dma, d);
        break;
      }
      case 1: {
        Load2dArgs l;
        l.dst = at0(u(0, 1) ? Scope::l0a : Scope::l0b), l.src = at0(Scope::l1);
        l.rows = static_cast<uint32_t>(u(1, 20)), l.cols = static_cast<uint32_t>(u(1, 20));
        l.src_row_stride = u(-30, 40), l.transpose = u(0, 1);
        in = make(Opcode::load2d, l);
        break;
      }
      case 2: {
        Img2colArgs g;
        g.dst = at0(u(0, 1) ? Scope::l0a : Scope::l0b), g.src = at0(Scope::l1);
        g.c = static_cast<uint32_t>(u(1, 3)), g.h = static_cast<uint32_t>(u(1, 9));
        g.w = static_cast<uint32_t>(u(1, 9)), g.kh = static_cast<uint32_t>(u(1, 3));
        g.kw = static_cast<uint32_t>(u(1, 3)), g.oh = static_cast<uint32_t>(u(1, 6));
        g.ow = static_cast<uint32_t>(u(1, 6));
        if (u(0, 1)) g.c0 = static_cast<uint32_t>(u(1, 5));  // NC1HWC0 source: a larger block
        in = make(Opcode::img2col, g);
        break;
      }
      case 3: {
        MmadArgs m;
        m.c = at0(Scope::l0c), m.a = at0(Scope::l0a), m.b = at0(Scope::l0b);
        m.m1 = static_cast<uint32_t>(u(1, 4)), m.k1 = static_cast<uint32_t>(u(1, 4));
        m.n1 = static_cast<uint32_t>(u(1, 4)), m.accumulate = u(0, 1);
        in = make(Opcode::mmad, m);
        break;
      }
      case 4: {
        FixArgs f;
        f.dst_dtype = u(0, 1) ? DType::f32 : DType::f16;
        f.dst = at0(Scope::ub), f.src = at0(Scope::l0c);
        f.m = static_cast<uint32_t>(u(1, 20)), f.n = static_cast<uint32_t>(u(1, 20));
        f.dst_row_stride = u(f.n, 40);
        in = make(Opcode::fix, f);
        break;
      }
      default: {
        const Opcode ops[] = {Opcode::vadd, Opcode::vmla, Opcode::vadds,
                              Opcode::vexp, Opcode::vdup, Opcode::vrsum};
        const Opcode op = ops[u(0, 5)];
        auto v = [&] {
          return VecOperand{at0(Scope::ub), static_cast<int32_t>(u(-4, 8)),
                            static_cast<int32_t>(u(-64, 128))};
        };
        VectorArgs a = vargs(u(0, 1) ? DType::f32 : DType::f16, v(), v(), v(),
                             static_cast<uint32_t>(u(1, 64)), static_cast<uint32_t>(u(1, 8)), 1.0f);
        const VectorOperandUse use = vector_operand_use(op);
        if (!use.src0) a.src0 = VecOperand{};
        if (!use.src1) a.src1 = VecOperand{};
        in = make(op, a);
        break;
      }
    }
    Program p = base;
    p.cores[0].push_back(in);
    bool verifier_flags = false;
    for (const std::string& m : verify_program(p, hw)) {
      if (m.find(" accesses ") != std::string::npos || m.find(" spans ") != std::string::npos) {
        verifier_flags = true;
      }
    }
    bool runtime_fails = false;
    try {
      check_ranges(in, access_range_list(hw, in), sizes);
    } catch (const Error&) {
      runtime_fails = true;
    }
    ASSERT_EQ(verifier_flags, runtime_fails) << format_instruction(in);
    flagged += verifier_flags;
    ++total;
  }
  // Both outcomes occur often enough for the comparison to mean something.
  EXPECT_GT(flagged, total / 10);
  EXPECT_LT(flagged, total * 9 / 10);
}

}  // namespace
}  // namespace tessel::isa
