// The instruction records (isa/instruction_list.h) and what is derived from them: the record table
// is indexed by opcode, each kind has the operand class it needs, the operands each opcode uses
// (and so prints, encodes and verifies) are the documented ones, and every record has the rest of
// what an instruction needs: semantics (isa/semantics.h) and a timing formula (npu_model/timing.h).
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "compiler/support/error.h"
#include "compiler/support/fp16.h"
#include "isa/asm.h"
#include "isa/semantics.h"
#include "isa_test_programs.h"
#include "npu_model/timing.h"

namespace tessel::isa {
namespace {

using namespace test_programs;

TEST(Records, IndexedByOpcodeWithUniqueMnemonics) {
  std::set<std::string> names;
  for (int i = 0; i < kNumOpcodes; ++i) {
    const InstrInfo& r = kInstructions[i];
    EXPECT_EQ(static_cast<int>(r.op), i);
    EXPECT_TRUE(names.insert(r.mnemonic).second) << r.mnemonic;
    Opcode back{};
    ASSERT_TRUE(opcode_from_name(r.mnemonic, back)) << r.mnemonic;
    EXPECT_EQ(back, r.op);
    EXPECT_STREQ(opcode_name(r.op), r.mnemonic);
  }
  // The binary opcodes of encoding version 3 (tests/isa/encoding_test.cpp has the golden bytes).
  EXPECT_EQ(static_cast<int>(Opcode::li), 0);
  EXPECT_EQ(static_cast<int>(Opcode::jmp), 8);
  EXPECT_EQ(static_cast<int>(Opcode::dma), 13);
  EXPECT_EQ(static_cast<int>(Opcode::vadd), 18);
  EXPECT_EQ(static_cast<int>(Opcode::vrmin), 40);
  EXPECT_EQ(static_cast<int>(Opcode::vcmp_eq), 41);  // encoding version 3
  EXPECT_EQ(static_cast<int>(Opcode::vconv), 50);
  EXPECT_EQ(static_cast<int>(Opcode::dma_mc), 51);       // encoding version 4
  EXPECT_EQ(static_cast<int>(Opcode::l2_prefetch), 52);  // encoding version 6
  EXPECT_EQ(static_cast<int>(Opcode::l2_discard), 53);
  EXPECT_EQ(static_cast<int>(Opcode::lbu), 54);  // encoding version 8
  EXPECT_EQ(kNumOpcodes, 55);
  EXPECT_FALSE(is_valid_opcode(static_cast<Opcode>(55)));
}

TEST(Records, KindsHaveTheirOperandClassAndPipe) {
  for (const InstrInfo& r : kInstructions) {
    switch (r.kind) {
      case InstrKind::alu:
      case InstrKind::load:
      case InstrKind::branch:
      case InstrKind::jump:
      case InstrKind::barrier:
      case InstrKind::core_barrier:
        EXPECT_EQ(r.cls, ArgsClass::scalar) << r.mnemonic;
        EXPECT_EQ(r.pipe, Pipe::scalar) << r.mnemonic;
        break;
      case InstrKind::set_flag:
      case InstrKind::wait_flag:
        EXPECT_EQ(r.cls, ArgsClass::sync) << r.mnemonic;
        EXPECT_EQ(r.pipe_rule, PipeRule::by_flag) << r.mnemonic;
        break;
      case InstrKind::data:
        EXPECT_NE(r.cls, ArgsClass::scalar) << r.mnemonic;
        EXPECT_NE(r.cls, ArgsClass::sync) << r.mnemonic;
        EXPECT_TRUE(r.pipe_rule != PipeRule::fixed || r.pipe != Pipe::scalar) << r.mnemonic;
        break;
    }
  }
  // The pipe rules: set_flag runs in its src pipe, wait_flag in its dst pipe, dma by direction.
  EXPECT_EQ(make(Opcode::set_flag, SyncArgs{Pipe::mte2, Pipe::vector, 0}).pipe(), Pipe::mte2);
  EXPECT_EQ(make(Opcode::wait_flag, SyncArgs{Pipe::mte2, Pipe::vector, 0}).pipe(), Pipe::vector);
  DmaArgs d;
  d.src = mem(Scope::gm, 0, 0), d.dst = mem(Scope::ub, 0, 0);
  EXPECT_EQ(make(Opcode::dma, d).pipe(), Pipe::mte2);
  std::swap(d.src, d.dst);
  EXPECT_EQ(make(Opcode::dma, d).pipe(), Pipe::mte3);
  d.dst.scope = Scope::l1;
  EXPECT_EQ(make(Opcode::dma, d).pipe(), Pipe::mte3);
  EXPECT_EQ(make(Opcode::mmad, MmadArgs{}).pipe(), Pipe::cube);
  EXPECT_EQ(make(Opcode::vexp, VectorArgs{}).pipe(), Pipe::vector);
  EXPECT_EQ(make(Opcode::core_barrier, ScalarArgs{}).pipe(), Pipe::scalar);
}

TEST(Records, OperandUseIsTheDocumentedOne) {
  // docs/isa.md, Vector instructions: binary ops, vmla, comparisons and binary logic read src0 and
  // src1; vsel src0, src1 and src2; the scalar forms src0 and scalar; vdup the scalar only; unary
  // ops, vnot, vconv and reductions src0 only.
  const std::set<Opcode> binary = {
      Opcode::vadd,    Opcode::vsub, Opcode::vmul,    Opcode::vdiv,    Opcode::vmax,
      Opcode::vmin,    Opcode::vmla, Opcode::vcmp_eq, Opcode::vcmp_ne, Opcode::vcmp_lt,
      Opcode::vcmp_le, Opcode::vsel, Opcode::vand,    Opcode::vor,     Opcode::vxor};
  const std::set<Opcode> with_scalar = {Opcode::vadds, Opcode::vmuls, Opcode::vmaxs, Opcode::vmins};
  const std::set<Opcode> reductions = {Opcode::vrsum, Opcode::vrmax, Opcode::vrmin};
  int vector_ops = 0;
  for (const InstrInfo& r : kInstructions) {
    if (!is_vector_opcode(r.op)) {
      EXPECT_FALSE(vector_operand_use(r.op).src0 || vector_operand_use(r.op).scalar) << r.mnemonic;
      continue;
    }
    ++vector_ops;
    const VectorOperandUse u = vector_operand_use(r.op);
    const VectorAccess a = vector_access(r.op);
    EXPECT_EQ(u.src1, binary.count(r.op) == 1) << r.mnemonic;
    EXPECT_EQ(u.scalar, with_scalar.count(r.op) == 1 || r.op == Opcode::vdup) << r.mnemonic;
    EXPECT_EQ(u.src0, r.op != Opcode::vdup) << r.mnemonic;
    EXPECT_EQ(a.src0, u.src0);
    EXPECT_EQ(a.src1, u.src1);
    EXPECT_EQ(a.src2, r.op == Opcode::vsel) << r.mnemonic;
    EXPECT_EQ(r.uses(Field::src_dtype), r.op == Opcode::vconv) << r.mnemonic;
    EXPECT_EQ(a.dst_read, r.op == Opcode::vmla) << r.mnemonic;
    EXPECT_EQ(a.reduction, reductions.count(r.op) == 1) << r.mnemonic;
  }
  EXPECT_EQ(vector_ops, 33);
  // Scalar forms: the positional operands of the text form.
  EXPECT_EQ(format_instruction(make(Opcode::blti, sargs(7, 1, 2, 12, 3))),
            "blti x1, 12, L3, rd=x7, rt=x2");
  EXPECT_EQ(format_instruction(make(Opcode::muli, sargs(7, 1, 2, 12, 3))),
            "muli x7, x1, 12, rt=x2, target=3");
  // Branches are exactly the instructions with a target.
  for (const InstrInfo& r : kInstructions)
    EXPECT_EQ(is_branch(r.op), r.uses(Field::target)) << r.mnemonic;
}

TEST(Records, ReadsDestination) {
  VectorArgs v;
  EXPECT_TRUE(reads_destination(make(Opcode::vmla, v)));
  EXPECT_FALSE(reads_destination(make(Opcode::vadd, v)));
  EXPECT_FALSE(reads_destination(make(Opcode::vrsum, v)));
  MmadArgs m;
  EXPECT_FALSE(reads_destination(make(Opcode::mmad, m)));
  m.accumulate = true;
  EXPECT_TRUE(reads_destination(make(Opcode::mmad, m)));
  FixArgs f;
  f.relu = true;
  EXPECT_FALSE(reads_destination(make(Opcode::fix, f)));
  EXPECT_FALSE(reads_destination(make(Opcode::li, ScalarArgs{})));
}

TEST(Records, EveryScalarInstructionHasSemantics) {
  // x1 = 7, x2 = -3; each alu instruction writes x3 (the value derived per opcode below), branches
  // set the next instruction index (taken: the target 9; not taken: it stays 6).
  for (const InstrInfo& r : kInstructions) {
    if (!is_scalar_alu_or_branch(r.op)) continue;
    std::array<int64_t, kNumRegs> x{};
    x[1] = 7, x[2] = -3;
    size_t next = 6;
    ASSERT_NO_THROW(execute_scalar(make(r.op, sargs(3, 1, 2, 10, 9)), x, next)) << r.mnemonic;
    EXPECT_EQ(x[0], 0);
    switch (r.op) {
      case Opcode::li:
        EXPECT_EQ(x[3], 10);
        break;  // imm
      case Opcode::addi:
        EXPECT_EQ(x[3], 17);
        break;  // 7 + 10
      case Opcode::add:
        EXPECT_EQ(x[3], 4);
        break;  // 7 + -3
      case Opcode::sub:
        EXPECT_EQ(x[3], 10);
        break;  // 7 - -3
      case Opcode::mul:
        EXPECT_EQ(x[3], -21);
        break;  // 7 * -3
      case Opcode::muli:
        EXPECT_EQ(x[3], 70);
        break;  // 7 * 10
      case Opcode::blt:
        EXPECT_EQ(next, 6u);
        break;  // 7 < -3 is false
      case Opcode::blti:
        EXPECT_EQ(next, 9u);
        break;  // 7 < 10
      case Opcode::jmp:
        EXPECT_EQ(next, 9u);
        break;
      default:
        ADD_FAILURE() << "no expected value for " << r.mnemonic;
    }
  }
  std::array<int64_t, kNumRegs> x{};
  size_t next = 0;
  EXPECT_THROW(execute_scalar(make(Opcode::barrier, ScalarArgs{}), x, next), InternalError);
}

// A valid instruction of data opcode `op` (operand class from its record) on small operands.
Instruction small_data_instruction(Opcode op) {
  switch (instr_info(op).cls) {
    case ArgsClass::dma: {
      DmaArgs d;
      d.dst = mem(Scope::ub, 0, 0), d.src = mem(Scope::gm, 0, 0);
      d.extent[0] = 16, d.dst_stride[0] = d.src_stride[0] = 1, d.valid_end[0] = 16;
      if (op == Opcode::dma_mc) d.cores = 1;
      return make(op, d);
    }
    case ArgsClass::load2d: {
      Load2dArgs l;
      l.dst = mem(Scope::l0a, 0, 0), l.src = mem(Scope::l1, 0, 0);
      l.rows = l.cols = 16, l.src_row_stride = 16;
      return make(op, l);
    }
    case ArgsClass::img2col: {
      Img2colArgs g;
      g.dst = mem(Scope::l0b, 0, 0), g.src = mem(Scope::l1, 0, 0);
      g.c = 1, g.h = g.w = 4, g.oh = g.ow = 4;
      return make(op, g);
    }
    case ArgsClass::mmad: {
      MmadArgs m;
      m.c = mem(Scope::l0c, 0, 0), m.a = mem(Scope::l0a, 0, 0), m.b = mem(Scope::l0b, 0, 0);
      m.m1 = m.k1 = m.n1 = 1;
      return make(op, m);
    }
    case ArgsClass::fix: {
      FixArgs f;
      f.dst = mem(Scope::ub, 0, 0), f.src = mem(Scope::l0c, 0, 0);
      f.m = f.n = 16, f.dst_row_stride = 16;
      return make(op, f);
    }
    case ArgsClass::vector: {
      // bits_only instructions on the same bytes read as u16.
      VectorArgs v =
          vargs(instr_info(op).bits_only ? DType::u16 : DType::f16, vec(Scope::ub, 0, 0, 1, 0),
                vec(Scope::ub, 0, 64, 1, 0), vec(Scope::ub, 0, 128, 1, 0), 16, 1, 0.25f);
      v.src2 = vec(Scope::ub, 0, 192, 1, 0);
      v.src_dtype = DType::f16;
      return make(op, v);
    }
    case ArgsClass::l2hint:
      return make(op, L2HintArgs{mem(Scope::gm, 0, 0), 4096});
    default:
      ADD_FAILURE() << opcode_name(op) << " has no memory operands";
      return {};
  }
}

TEST(Records, ScalarLoadReadsOneGmByteZeroExtended) {
  // lbu x3, x1, 10 with x1 = 7 reads GM byte 17 (0xc8 = 200, zero-extended, not -56).
  std::vector<uint8_t> gm(32, 0);
  gm[17] = 0xc8;
  std::array<int64_t, kNumRegs> x{};
  x[1] = 7;
  execute_load(sargs(3, 1, 0, 10, -1), x, gm.data(), gm.size());
  EXPECT_EQ(x[3], 200);
  execute_load(sargs(0, 1, 0, 10, -1), x, gm.data(), gm.size());  // x0 stays 0
  EXPECT_EQ(x[0], 0);
  execute_load(sargs(3, 1, 0, 10, -1), x, nullptr, gm.size());  // no values (timing-only): 1
  EXPECT_EQ(x[3], 1);
  // Byte 32 of a 32-byte GM and a negative address are errors.
  EXPECT_THROW(execute_load(sargs(3, 1, 0, 25, -1), x, gm.data(), gm.size()), Error);
  EXPECT_THROW(execute_load(sargs(3, 1, 0, -8, -1), x, gm.data(), gm.size()), Error);
  // Its cost: c_s on the scalar unit plus the wait for the byte, dram.latency_cycles.
  const npu::HwConfig hw = test_hw();
  const npu::InstrCost c = npu::instruction_cost(hw, make(Opcode::lbu, sargs(3, 1, 0, 10, -1)));
  EXPECT_EQ(c.occupancy_cycles, static_cast<uint64_t>(hw.core.scalar.cycles_per_instruction));
  EXPECT_EQ(c.latency_cycles, static_cast<uint64_t>(hw.dram.latency_cycles));
}

TEST(Records, EveryDataInstructionHasSemanticsAndTiming) {
  const npu::HwConfig hw = test_hw(1);
  const auto& b = hw.core.buffers_bytes;
  const int64_t sizes[kNumScopes] = {4096, b.l1, b.l0a, b.l0b, b.l0c, b.ub};
  int data_ops = 0;
  for (const InstrInfo& r : kInstructions) {
    if (!is_data_instruction(r.op)) continue;
    ++data_ops;
    std::array<std::vector<uint8_t>, kNumScopes> bytes;
    CoreMemory m;
    for (int s = 0; s < kNumScopes; ++s) {
      bytes[s].assign(static_cast<std::size_t>(sizes[s]), 0);
      m.base[s] = bytes[s].data();
      m.size[s] = bytes[s].size();
    }
    // UB: src0 = 2.0 at byte 64, src1 = 0.5 at 128, dst = 1.0 at 0 (16 f16 elements each).
    for (int i = 0; i < 16; ++i) {
      const uint16_t one = f32_to_f16_bits(1.0f), two = f32_to_f16_bits(2.0f),
                     half = f32_to_f16_bits(0.5f);
      std::memcpy(&bytes[int(Scope::ub)][2 * i], &one, 2);
      std::memcpy(&bytes[int(Scope::ub)][64 + 2 * i], &two, 2);
      std::memcpy(&bytes[int(Scope::ub)][128 + 2 * i], &half, 2);
    }
    const Instruction in = small_data_instruction(r.op);
    ASSERT_NO_THROW(execute(hw, in, m)) << format_instruction(in);
    const npu::InstrCost cost = npu::instruction_cost(hw, in);
    EXPECT_GE(cost.occupancy_cycles, 1u) << r.mnemonic;
    if (r.cls == ArgsClass::l2hint)  // L2 hints move no data through the core (1-cycle issue)
      EXPECT_EQ(cost.bytes_written + cost.bytes_read, 0u) << r.mnemonic;
    else
      EXPECT_GT(cost.bytes_written, 0u) << r.mnemonic;
    if (r.op == Opcode::vmla) {  // reads its destination: 1 + 2 * 0.5
      uint16_t h;
      std::memcpy(&h, &bytes[int(Scope::ub)][0], 2);
      EXPECT_EQ(f16_bits_to_f32(h), 2.0f);
    }
  }
  EXPECT_EQ(data_ops, 41);
}

}  // namespace
}  // namespace tessel::isa
