// Instruction semantics of the integer and bool dtypes (docs/isa.md, "Data types" and "Vector
// instructions"), with exact values: dma of 1/2/4/8-byte elements with padding converted to the
// dtype, wrapping integer arithmetic, integer division, signed vs unsigned max/min, comparisons
// (bool destinations, NaN), vsel, bitwise logic, vconv (ONNX Cast rules), the dtype traits
// (float_only, bits_only) in the executor and the verifier, and the timing/traffic of operands of
// different element sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/support/error.h"
#include "isa/semantics.h"
#include "isa/verifier.h"
#include "npu_model/timing.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;

// A vector instruction over `count` contiguous elements: dst at UB 0, src0 at 256, src1 at 512,
// src2 at 768.
Instruction vop(Opcode op, DType t, uint32_t count, float scalar = 0.0f,
                DType src_dtype = DType::f16) {
  Instruction in = vec(op, t, vo(ub(0)), vo(ub(256)), vo(ub(512)), count, 1, scalar);
  auto& v = std::get<isa::VectorArgs>(in.args);
  v.src2 = vo(ub(768));
  v.src_dtype = src_dtype;
  return in;
}

// ---------------------------------------------------------------------------------------------
// dma

TEST(IntSemantics, DmaMovesEveryElementSizeWithConvertedPadding) {
  // A 3 x 4 window of a 3 x 5 row-major source (row stride 5), column 3 padded, for each element
  // size; the pad value -1.5 converts per dtype (ONNX Cast: truncate toward zero, saturate).
  Mem m;
  auto run = [&](DType t) {
    isa::DmaArgs d = dma_args(t, ub(0), gm(0), {3, 4});
    d.src_stride = {5, 1};
    d.valid_end = {3, 3};
    d.pad_value = -1.5f;
    m.run(dma(d));
    // 12 elements of dtype_bytes(t) written; 9 valid ones read from GM.
    const auto tr = npu::scope_traffic(m.hw, dma(d));
    EXPECT_EQ(tr.written[int(Scope::ub)], 12u * isa::dtype_bytes(t));
    EXPECT_EQ(npu::dma_gm_bytes(d), 9u * isa::dtype_bytes(t));
  };
  // i8: source r*5 + c - 7 (negative values survive as one byte).
  for (int i = 0; i < 15; ++i) m.put<int8_t>(Scope::gm, i, static_cast<int8_t>(i - 7));
  run(DType::i8);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(m.get<int8_t>(Scope::ub, r * 4 + c), c == 3 ? -1 : r * 5 + c - 7) << r << c;
  // u8: the pad -1.5 saturates to 0.
  run(DType::u8);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 3), 0);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 4), static_cast<uint8_t>(5 - 7));  // (1, 0) = -2 as a byte
  // i16: values beyond a byte.
  for (int i = 0; i < 15; ++i)
    m.put<int16_t>(Scope::gm, 2 * i, static_cast<int16_t>(1000 * i - 9000));
  run(DType::i16);
  EXPECT_EQ(m.get<int16_t>(Scope::ub, 2 * (2 * 4 + 2)), 1000 * 12 - 9000);
  EXPECT_EQ(m.get<int16_t>(Scope::ub, 2 * 3), -1);
  // i64: bit patterns that no float could carry.
  for (int i = 0; i < 15; ++i)
    m.put<int64_t>(Scope::gm, 8 * i, int64_t{0x0123456789abcdef} * (i + 1) - i);
  run(DType::i64);
  EXPECT_EQ(m.get<int64_t>(Scope::ub, 8 * (1 * 4 + 2)), int64_t{0x0123456789abcdef} * 8 - 7);
  EXPECT_EQ(m.get<int64_t>(Scope::ub, 8 * (2 * 4 + 3)), -1);
  // u32: the pad saturates to 0; bool: the pad is != 0, so 1.
  run(DType::u32);
  EXPECT_EQ(m.get<uint32_t>(Scope::ub, 4 * 3), 0u);
  run(DType::boolean);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 3), 1);
  // 4-byte elements of a 1 x 4 load cost ceil(16 / 64) = 1 MTE2 cycle; 8-byte ones 1 too; 64
  // i64 elements ceil(512 / 64) = 8.
  EXPECT_EQ(npu::instruction_cost(m.hw, dma(DType::i64, ub(0), gm(0), {64})).occupancy_cycles, 8u);
  EXPECT_EQ(npu::instruction_cost(m.hw, dma(DType::i8, ub(0), gm(0), {64})).occupancy_cycles, 1u);
}

// ---------------------------------------------------------------------------------------------
// integer arithmetic

TEST(IntSemantics, ArithmeticWrapsAndDividesTowardZero) {
  Mem m;
  // i8: 100 + 100 = 200 - 256 = -56; -128 - 1 wraps to 127; 16 * 16 = 256 -> 0.
  m.ub_fill<int8_t>(256, {100, -128, 16, -7});
  m.ub_fill<int8_t>(512, {100, 1, 16, 2});
  m.run(vop(Opcode::vadd, DType::i8, 4));
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 0), -56);
  m.run(vop(Opcode::vsub, DType::i8, 4));
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 1), 127);
  m.run(vop(Opcode::vmul, DType::i8, 4));
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 2), 0);
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 3), -14);
  // vabs / vneg of the lowest value wrap to itself.
  m.run(vop(Opcode::vabs, DType::i8, 4));
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 1), -128);
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 3), 7);
  // i16 division: -7 / 2 = -3 (toward zero), 7 / -2 = -3, x / 0 = 0, lowest / -1 = lowest.
  m.ub_fill<int16_t>(256, {-7, 7, 5, -32768});
  m.ub_fill<int16_t>(512, {2, -2, 0, -1});
  m.run(vop(Opcode::vdiv, DType::i16, 4));
  EXPECT_EQ(m.get<int16_t>(Scope::ub, 0), -3);
  EXPECT_EQ(m.get<int16_t>(Scope::ub, 2), -3);
  EXPECT_EQ(m.get<int16_t>(Scope::ub, 4), 0);
  EXPECT_EQ(m.get<int16_t>(Scope::ub, 6), -32768);
  // i32 vmla: dst + src0 * src1 with the product wrapping: 65536 * 65536 = 2^32 -> 0, + 5.
  m.ub_fill<int32_t>(0, {5, -1});
  m.ub_fill<int32_t>(256, {65536, 3});
  m.ub_fill<int32_t>(512, {65536, 4});
  m.run(vop(Opcode::vmla, DType::i32, 2));
  EXPECT_EQ(m.get<int32_t>(Scope::ub, 0), 5);
  EXPECT_EQ(m.get<int32_t>(Scope::ub, 4), 11);
  // The scalar converts to the dtype first: 2.9 -> 2; -1.5 on u32 saturates to 0.
  m.run(vop(Opcode::vadds, DType::i32, 2, 2.9f));
  EXPECT_EQ(m.get<int32_t>(Scope::ub, 0), 65538);
  EXPECT_EQ(m.get<int32_t>(Scope::ub, 4), 5);
  m.run(vop(Opcode::vmaxs, DType::u32, 1, -1.5f));
  EXPECT_EQ(m.get<uint32_t>(Scope::ub, 0), 65536u);
  // vdup of i64 and the i64 sum wrapping past the top: max + 1 = lowest.
  m.ub_fill<int64_t>(256, {std::numeric_limits<int64_t>::max(), 1, 41});
  m.run(vop(Opcode::vrsum, DType::i64, 3));
  EXPECT_EQ(m.get<int64_t>(Scope::ub, 0), std::numeric_limits<int64_t>::lowest() + 41);
  m.run(vop(Opcode::vdup, DType::i64, 2, -3.0f));
  EXPECT_EQ(m.get<int64_t>(Scope::ub, 8), -3);
}

TEST(IntSemantics, MaxMinCompareSignedAndUnsigned) {
  Mem m;
  // The same bytes 0xc8 (200 unsigned, -56 signed) and 100.
  m.ub_fill<uint8_t>(256, {200, 7});
  m.ub_fill<uint8_t>(512, {100, 9});
  m.run(vop(Opcode::vmax, DType::u8, 2));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 200);
  m.run(vop(Opcode::vmax, DType::i8, 2));
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 0), 100);
  m.run(vop(Opcode::vmin, DType::i8, 2));
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 0), -56);
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 1), 7);
  m.run(vop(Opcode::vrmax, DType::i8, 2));  // max(-56, 7)
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 0), 7);
  m.run(vop(Opcode::vrmax, DType::u8, 2));  // max(200, 7)
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 200);
}

// ---------------------------------------------------------------------------------------------
// comparisons, select, logic, conversion

TEST(IntSemantics, ComparisonsWriteBoolAndFollowTheDtype) {
  Mem m;
  // u32 vs i32 on the same bits: 0xffffffff < 1 is false unsigned, true signed.
  m.ub_fill<uint32_t>(256, {0xffffffffu, 3, 4});
  m.ub_fill<uint32_t>(512, {1, 3, 2});
  m.ub_fill<uint8_t>(0, {7, 7, 7, 7});  // the 4th byte stays: 3 elements written
  m.run(vop(Opcode::vcmp_lt, DType::u32, 3));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 0);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 1), 0);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 2), 0);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 3), 7);
  m.run(vop(Opcode::vcmp_lt, DType::i32, 3));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 1);
  m.run(vop(Opcode::vcmp_le, DType::i32, 3));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 1), 1);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 2), 0);
  m.run(vop(Opcode::vcmp_eq, DType::i32, 3));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 0);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 1), 1);
  // f32 with a NaN: only vcmp_ne holds; -0 == +0.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  m.ub_fill<float>(256, {nan, -0.0f});
  m.ub_fill<float>(512, {nan, 0.0f});
  for (Opcode op : {Opcode::vcmp_eq, Opcode::vcmp_lt, Opcode::vcmp_le}) {
    m.run(vop(op, DType::f32, 2));
    EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 0) << isa::opcode_name(op);
  }
  m.run(vop(Opcode::vcmp_ne, DType::f32, 2));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 1);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 1), 0);
  m.run(vop(Opcode::vcmp_eq, DType::f32, 2));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 1), 1);
}

TEST(IntSemantics, SelectCopiesElementsBitExactly) {
  Mem m;
  // mask (bool, at 256): 1 0 2 0 (a non-zero byte reads as true); src1 at 512, src2 at 768.
  m.ub_fill<uint8_t>(256, {1, 0, 2, 0});
  m.ub_fill<int64_t>(512, {-1, -2, int64_t{1} << 62, -4});
  m.ub_fill<int64_t>(768, {10, 20, 30, std::numeric_limits<int64_t>::lowest()});
  m.run(vop(Opcode::vsel, DType::i64, 4));
  EXPECT_EQ(m.get<int64_t>(Scope::ub, 0), -1);
  EXPECT_EQ(m.get<int64_t>(Scope::ub, 8), 20);
  EXPECT_EQ(m.get<int64_t>(Scope::ub, 16), int64_t{1} << 62);
  EXPECT_EQ(m.get<int64_t>(Scope::ub, 24), std::numeric_limits<int64_t>::lowest());
  // f16: a NaN payload passes through unchanged.
  m.ub_fill<uint16_t>(512, {0x7e01});
  m.run(vop(Opcode::vsel, DType::f16, 1));
  EXPECT_EQ(m.get<uint16_t>(Scope::ub, 0), 0x7e01);
}

TEST(IntSemantics, LogicIsBitwiseAndBoolIsLogical) {
  Mem m;
  m.ub_fill<uint8_t>(256, {0x0f, 0xf0});
  m.ub_fill<uint8_t>(512, {0x3c, 0x3c});
  m.run(vop(Opcode::vand, DType::u8, 2));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 0x0c);
  m.run(vop(Opcode::vor, DType::u8, 2));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 1), 0xfc);
  m.run(vop(Opcode::vxor, DType::u8, 2));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 0x33);
  m.run(vop(Opcode::vnot, DType::u8, 2));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 0xf0);
  // bool: bytes 2 and 0 read as true and false; not gives 0 and 1, xor of true, true is 0.
  m.ub_fill<uint8_t>(256, {2, 0});
  m.ub_fill<uint8_t>(512, {1, 1});
  m.run(vop(Opcode::vnot, DType::boolean, 2));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 0);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 1), 1);
  m.run(vop(Opcode::vxor, DType::boolean, 2));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 0);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 1), 1);
  m.run(vop(Opcode::vand, DType::boolean, 2));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 1);
}

TEST(IntSemantics, ConvertFollowsOnnxCast) {
  Mem m;
  // f32 -> i8: truncate toward zero, saturate, NaN -> 0.
  m.ub_fill<float>(256, {300.7f, -1.9f, -1000.0f, std::numeric_limits<float>::quiet_NaN()});
  m.run(vop(Opcode::vconv, DType::i8, 4, 0.0f, DType::f32));
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 0), 127);
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 1), -1);
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 2), -128);
  EXPECT_EQ(m.get<int8_t>(Scope::ub, 3), 0);
  // i32 -> f16: 2049 is halfway between 2048 and 2050, rounds to even 2048; 70000 overflows to inf.
  m.ub_fill<int32_t>(256, {2049, 2051, 70000});
  m.run(vop(Opcode::vconv, DType::f16, 3, 0.0f, DType::i32));
  EXPECT_EQ(get_f16(m[Scope::ub], 0), 2048.0f);
  EXPECT_EQ(get_f16(m[Scope::ub], 2), 2052.0f);
  EXPECT_TRUE(std::isinf(get_f16(m[Scope::ub], 4)));
  // i64 -> i32 keeps the low 32 bits; u8 -> f32 is exact; f16 -> bool is != 0.
  m.ub_fill<int64_t>(256, {(int64_t{5} << 32) + 7, -1});
  m.run(vop(Opcode::vconv, DType::i32, 2, 0.0f, DType::i64));
  EXPECT_EQ(m.get<int32_t>(Scope::ub, 0), 7);
  EXPECT_EQ(m.get<int32_t>(Scope::ub, 4), -1);
  m.ub_fill<uint8_t>(256, {255});
  m.run(vop(Opcode::vconv, DType::f32, 1, 0.0f, DType::u8));
  EXPECT_EQ(m.get<float>(Scope::ub, 0), 255.0f);
  put_f16(m[Scope::ub], 256, -0.0f);
  put_f16(m[Scope::ub], 258, 0.001f);
  m.run(vop(Opcode::vconv, DType::boolean, 2, 0.0f, DType::f16));
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 0), 0);
  EXPECT_EQ(m.get<uint8_t>(Scope::ub, 1), 1);
}

TEST(IntSemantics, DtypeTraitsAreCheckedByExecutorAndVerifier) {
  Mem m;
  EXPECT_THROW(m.run(vop(Opcode::vexp, DType::i32, 4)), Error);
  EXPECT_THROW(m.run(vop(Opcode::vand, DType::f16, 4)), Error);
  // The cube path takes float and int8-mode (i8, u8) operands only.
  Instruction l = load2d(DType::i16, l0a(0), l1(0), 16, 16, 16);
  EXPECT_THROW(m.run(l), Error);
  isa::Program p;
  p.name = "traits";
  p.gm_bytes = 1024;
  p.cores.resize(1);
  p.cores[0].push_back(vop(Opcode::vsqrt, DType::u16, 8));
  p.cores[0].push_back(vop(Opcode::vxor, DType::f32, 8));
  std::string all;
  for (const std::string& msg : isa::verify_program(p, m.hw)) all += msg + "\n";
  EXPECT_NE(all.find("vsqrt takes a float dtype (f16 or f32), not u16"), std::string::npos) << all;
  EXPECT_NE(all.find("vxor takes an integer dtype or bool, not f32"), std::string::npos) << all;
}

// ---------------------------------------------------------------------------------------------
// timing and traffic of operands of different element sizes

TEST(IntSemantics, TimingCountsTheWidestOperand) {
  const auto hw = test_hw();  // vector 256 B/cycle
  // vcmp_lt.f32, 128 elements: src0/src1 4 B, dst (bool) 1 B -> ceil(128 * 4 / 256) = 2 cycles.
  EXPECT_EQ(npu::instruction_cost(hw, vop(Opcode::vcmp_lt, DType::f32, 128)).occupancy_cycles, 2u);
  // vconv.f16 from i64, 64 elements: 8-byte source -> ceil(64 * 8 / 256) = 2 (f16 alone: 1).
  EXPECT_EQ(npu::instruction_cost(hw, vop(Opcode::vconv, DType::f16, 64, 0.0f, DType::i64))
                .occupancy_cycles,
            2u);
  EXPECT_EQ(npu::instruction_cost(hw, vop(Opcode::vcopy, DType::f16, 64)).occupancy_cycles, 1u);
  // Traffic: vcmp reads 2 * 128 * 4 B and writes 128 B; vsel.i16 of 100 reads the 100-byte mask
  // and 2 * 200 B, writes 200 B.
  auto t = npu::scope_traffic(hw, vop(Opcode::vcmp_lt, DType::f32, 128));
  EXPECT_EQ(t.read[int(Scope::ub)], 1024u);
  EXPECT_EQ(t.written[int(Scope::ub)], 128u);
  t = npu::scope_traffic(hw, vop(Opcode::vsel, DType::i16, 100));
  EXPECT_EQ(t.read[int(Scope::ub)], 500u);
  EXPECT_EQ(t.written[int(Scope::ub)], 200u);
  // access ranges: vsel's four operands, each with its own element size.
  const auto ranges = isa::access_ranges(hw, vop(Opcode::vsel, DType::i16, 100));
  ASSERT_EQ(ranges.size(), 4u);
  uint64_t mask_bytes = 0;
  for (const auto& r : ranges)
    if (r.begin == 256) mask_bytes = r.end - r.begin;
  EXPECT_EQ(mask_bytes, 100u);
}

}  // namespace
}  // namespace tessel
