// The cube's int8 mode (docs/isa.md, "mmad", "fix"): load2d/img2col of i8/u8 operands in the int8
// fractal, mmad's exact int32 accumulation (u8 x i8 mixes included), fix's int32 copy and its
// requantisation -- the rounding of every step at its ties (x.5 and -x.5 to even), saturation at
// both ends, relu, per-tensor and per-channel tables -- checked against an independent
// transcription of ONNX Runtime's MlasRequantizeOutput (the 1.5 * 2^23 magic-number rounding) and
// against naive integer loops; and the text and binary forms of the new fields.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "compiler/support/error.h"
#include "isa/asm.h"
#include "isa/encoding.h"
#include "isa/semantics.h"
#include "isa/verifier.h"
#include "npu_model/timing.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;

// ONNX Runtime's reference MlasRequantizeOutput (onnxruntime/core/mlas/lib/quantize.cpp, the
// scalar path; the SSE/AVX paths compute the same: cvtepi32_ps, mul_ps, max_ps/min_ps, cvtps_epi32
// in round-to-nearest-even), transcribed independently of isa/semantics.cpp.
template <class Out>
int32_t ort_requantize(int32_t acc, int32_t bias, float scale, Out zero_point) {
  const float min_v = float(std::numeric_limits<Out>::lowest() - zero_point);
  const float max_v = float(std::numeric_limits<Out>::max() - zero_point);
  int32_t iv = acc;
  iv += bias;
  float fv = float(iv);
  fv *= scale;
  fv = std::max(fv, min_v);
  fv = std::min(fv, max_v);
  const float magic = 12582912.0f;  // MLAS_ROUNDING_BIAS_MAGIC = 1.5 * 2^23
  const float biased = fv + magic;
  uint32_t bits;
  std::memcpy(&bits, &biased, 4);
  iv = static_cast<int32_t>(bits) - 0x4B400000;  // MLAS_ROUNDING_BIAS_MAGIC_BITS
  return static_cast<Out>(iv + zero_point);
}

TEST(Int8Fix, RequantizeRoundsTiesToEvenAndSaturates) {
  using isa::fix_requantize;
  // scale 0.5: acc 5 -> 2.5 -> 2, 7 -> 3.5 -> 4, -5 -> -2.5 -> -2, -7 -> -3.5 -> -4, 3 -> 1.5 -> 2,
  // 1 -> 0.5 -> 0, -1 -> -0.5 -> -0 = 0, -3 -> -1.5 -> -2 (ties to the even neighbour).
  const int32_t accs[] = {5, 7, -5, -7, 3, 1, -1, -3};
  const int32_t half_even[] = {2, 4, -2, -4, 2, 0, 0, -2};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(fix_requantize(accs[i], 0, 0.5f, 0, DType::i8, false), half_even[i]) << accs[i];
    // The zero point is added after rounding: +3 shifts each result by 3 (ties unchanged).
    EXPECT_EQ(fix_requantize(accs[i], 0, 0.5f, 3, DType::i8, false), half_even[i] + 3);
  }
  // Not a tie: 2.5000002 rounds up, 2.4999998 down (float(5) * 0.50000006 = 2.5000003).
  EXPECT_EQ(fix_requantize(5, 0, 0.50000006f, 0, DType::i8, false), 3);
  EXPECT_EQ(fix_requantize(5, 0, 0.49999997f, 0, DType::i8, false), 2);
  // Saturation at both ends, i8 and u8; the zero point moves the clamp window.
  EXPECT_EQ(fix_requantize(1000, 0, 1.0f, 0, DType::i8, false), 127);
  EXPECT_EQ(fix_requantize(-1000, 0, 1.0f, 0, DType::i8, false), -128);
  EXPECT_EQ(fix_requantize(127, 0, 1.0f, 1, DType::i8, false), 127);     // 127 + 1 saturates
  EXPECT_EQ(fix_requantize(-128, 0, 1.0f, -1, DType::i8, false), -128);  // -128 - 1 saturates
  EXPECT_EQ(fix_requantize(1000, 0, 1.0f, 0, DType::u8, false), 255);
  EXPECT_EQ(fix_requantize(-1000, 0, 1.0f, 128, DType::u8, false), 0);
  EXPECT_EQ(fix_requantize(-128, 0, 1.0f, 128, DType::u8, false), 0);   // exactly the low end
  EXPECT_EQ(fix_requantize(127, 0, 1.0f, 128, DType::u8, false), 255);  // exactly the high end
  // The largest accumulators: float(INT32_MAX) = 2^31 (rounded), still saturates cleanly.
  EXPECT_EQ(fix_requantize(std::numeric_limits<int32_t>::max(), 0, 1.0f, 0, DType::i8, false), 127);
  EXPECT_EQ(fix_requantize(std::numeric_limits<int32_t>::min(), 0, 1.0f, 0, DType::u8, false), 0);
  // Bias is added in int32 before the scale: (5 + 2) * 0.5 = 3.5 -> 4.
  EXPECT_EQ(fix_requantize(5, 2, 0.5f, 0, DType::i8, false), 4);
  // int32 -> fp32 rounds: 16777217 is not representable, float() gives 16777216; * 2^-24 = 1.
  EXPECT_EQ(fix_requantize(16777217, 0, 1.0f / 16777216.0f, 0, DType::i8, false), 1);
  // relu raises the lower bound to the zero point: -3.5 -> zp (10), 2.5 -> 2 + 10.
  EXPECT_EQ(fix_requantize(-7, 0, 0.5f, 10, DType::u8, true), 10);
  EXPECT_EQ(fix_requantize(5, 0, 0.5f, 10, DType::u8, true), 12);
  EXPECT_EQ(fix_requantize(-7, 0, 0.5f, -20, DType::i8, true), -20);
  // A NaN product (NaN scale) gives the zero point.
  EXPECT_EQ(fix_requantize(5, 0, std::nanf(""), 7, DType::i8, false), 7);
}

TEST(Int8Fix, RequantizeMatchesOnnxRuntimeBitForBit) {
  // Random accumulators, biases, scales and zero points, including exact ties (scale 2^-e with
  // odd accumulators) and values near the saturation bounds.
  std::mt19937 rng(13);
  std::uniform_int_distribution<int32_t> acc_d(-(1 << 20), 1 << 20), bias_d(-5000, 5000);
  std::uniform_int_distribution<int> exp_d(1, 14), zp_d(-128, 127), uzp_d(0, 255), kind(0, 2);
  std::uniform_real_distribution<float> scale_d(1e-6f, 0.05f);
  int ties = 0;
  for (int t = 0; t < 200000; ++t) {
    const int32_t acc = acc_d(rng), bias = bias_d(rng);
    const float scale = kind(rng) == 0 ? std::ldexp(1.0f, -exp_d(rng)) : scale_d(rng);
    const float x = float(acc + bias) * scale;
    ties += x - std::floor(x) == 0.5f;
    const int8_t zp = static_cast<int8_t>(zp_d(rng));
    const uint8_t uzp = static_cast<uint8_t>(uzp_d(rng));
    ASSERT_EQ(isa::fix_requantize(acc, bias, scale, zp, DType::i8, false),
              ort_requantize<int8_t>(acc, bias, scale, zp))
        << acc << " " << bias << " " << scale << " " << int{zp};
    ASSERT_EQ(isa::fix_requantize(acc, bias, scale, uzp, DType::u8, false),
              ort_requantize<uint8_t>(acc, bias, scale, uzp))
        << acc << " " << bias << " " << scale << " " << int{uzp};
  }
  EXPECT_GT(ties, 1000);  // the sweep does exercise ties
}

// The int8 test NPU: float fractal 16x16x16, int8 fractal 16x32x16 (DaVinci's).
Mem int8_mem() {
  Mem m;
  m.hw.core.cube.int8 = {16, 32, 16};
  return m;
}

Instruction mmad8(MemRef c, MemRef a, MemRef b, uint32_t m1, uint32_t k1, uint32_t n1, bool acc,
                  DType at, DType bt) {
  Instruction in = mmad(c, a, b, m1, k1, n1, acc);
  auto& x = std::get<isa::MmadArgs>(in.args);
  x.a_dtype = at, x.b_dtype = bt;
  return in;
}

Instruction fix8(DType t, MemRef dst, MemRef src, uint32_t m, uint32_t n, int64_t stride,
                 bool per_channel, MemRef quant, int32_t zp, bool relu = false) {
  Instruction in = fix(t, dst, src, m, n, stride, relu);
  auto& f = std::get<isa::FixArgs>(in.args);
  f.per_channel = per_channel, f.quant = quant, f.zero_point = zp;
  return in;
}

TEST(Int8Cube, Load2dMmadFixMatchNaiveIntegerLoops) {
  // M = 20, K = 40, N = 24: A u8 [20][40], B i8 [40][24] in L1; load2d into the 16x32 (L0A) and
  // 32x16 (L0B) int8 fractals (m1 = 2, k1 = 2, n1 = 2, zero-padded); mmad in int32; fix
  // requantises per channel into i8 with zero point -3, row stride 24.
  const int M = 20, K = 40, N = 24;
  Mem m = int8_mem();
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> ua(0, 255), ub8(-128, 127), ubias(-3000, 3000);
  std::vector<int> A(M * K), B(K * N);
  for (int i = 0; i < M * K; ++i) m[Scope::l1][i] = static_cast<uint8_t>(A[i] = ua(rng));
  for (int i = 0; i < K * N; ++i)
    m[Scope::l1][4096 + i] = static_cast<uint8_t>(static_cast<int8_t>(B[i] = ub8(rng)));
  m.run(load2d(DType::u8, l0a(0), l1(0), M, K, K));
  m.run(load2d(DType::i8, l0b(0), l1(4096), K, N, N));
  // L0A layout [m1=2][k1=2][16][32]: element (19, 33) is block (1, 1), row 3, column 1; the pad
  // rows 20..31 and columns 40..63 are zero.
  EXPECT_EQ(m[Scope::l0a][((1 * 2 + 1) * 16 + 3) * 32 + 1], A[19 * K + 33]);
  EXPECT_EQ(m[Scope::l0a][((1 * 2 + 1) * 16 + 4) * 32 + 1], 0);
  EXPECT_EQ(m[Scope::l0a][((0 * 2 + 1) * 16 + 0) * 32 + 8], 0);  // column 40
  std::vector<float> scales(N);
  std::vector<int32_t> biases(N);
  for (int j = 0; j < N; ++j) {
    scales[j] = std::ldexp(1.0f, -9 - j % 4);  // 2^-9 .. 2^-12: exact products, many ties
    biases[j] = ubias(rng);
    m.put<float>(Scope::ub, 32768 + j * 8, scales[j]);
    m.put<int32_t>(Scope::ub, 32768 + j * 8 + 4, biases[j]);
  }
  m.run(mmad8(l0c(0), l0a(0), l0b(0), 2, 2, 2, false, DType::u8, DType::i8));
  m.run(fix8(DType::i8, ub(0), l0c(0), M, N, N, true, ub(32768), -3));
  std::vector<int32_t> C(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int32_t acc = 0;
      for (int k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
      C[i * N + j] = acc;
      // L0C [m1][n1][16][16] int32.
      EXPECT_EQ(
          m.get<int32_t>(Scope::l0c, (((i / 16) * 2 + j / 16) * 256 + (i % 16) * 16 + j % 16) * 4),
          acc);
      EXPECT_EQ(static_cast<int8_t>(m[Scope::ub][i * N + j]),
                ort_requantize<int8_t>(acc, biases[j], scales[j], -3))
          << i << "," << j;
    }
  // Accumulate: C += A x B; fix to i32 adds the per-channel biases (relu clamps at 0); per
  // tensor to u8 uses entry 0 only.
  m.run(mmad8(l0c(0), l0a(0), l0b(0), 2, 2, 2, true, DType::u8, DType::i8));
  m.run(fix8(DType::i32, ub(8192), l0c(0), M, N, N, true, ub(32768), 0, true));
  m.run(fix8(DType::u8, ub(16384), l0c(0), M, N, N, false, ub(32768), 100));
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const int32_t acc2 = 2 * C[i * N + j];
      EXPECT_EQ(m.get<int32_t>(Scope::ub, 8192 + (i * N + j) * 4), std::max(acc2 + biases[j], 0));
      EXPECT_EQ(m[Scope::ub][16384 + i * N + j],
                ort_requantize<uint8_t>(acc2, biases[0], scales[0], 100));
    }
  // per_row (the convolution's form: its output channels are the rows): element (i, j) uses
  // entry i of the table, for i8 and i32.
  Instruction pr = fix8(DType::i8, ub(20480), l0c(0), M, N, N, false, ub(32768), 7);
  std::get<isa::FixArgs>(pr.args).per_row = true;
  m.run(pr);
  Instruction pr32 = fix8(DType::i32, ub(24576), l0c(0), M, N, N, false, ub(32768), 0);
  std::get<isa::FixArgs>(pr32.args).per_row = true;
  m.run(pr32);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const int32_t acc2 = 2 * C[i * N + j];
      EXPECT_EQ(static_cast<int8_t>(m[Scope::ub][20480 + i * N + j]),
                ort_requantize<int8_t>(acc2, biases[i], scales[i], 7))
          << i << "," << j;
      EXPECT_EQ(m.get<int32_t>(Scope::ub, 24576 + (i * N + j) * 4), acc2 + biases[i]);
    }
}

TEST(Int8Cube, SignednessOfEveryOperandMix) {
  // One 16x32x16 fractal with the bytes 0x80 (i8 -128, u8 128) and 0xFF (i8 -1, u8 255): every
  // (a_dtype, b_dtype) pair reads them with its own sign extension. A[0][k] = 0x80 for k < 16,
  // 0xFF for k >= 16; B[k][0] = 0xFF for k < 16, 0x80 for k >= 16: C[0][0] = 16 * (a0 * b0 +
  // a1 * b1).
  for (DType at : {DType::i8, DType::u8})
    for (DType bt : {DType::i8, DType::u8}) {
      Mem m = int8_mem();
      for (int k = 0; k < 32; ++k) {
        m[Scope::l0a][k] = k < 16 ? 0x80 : 0xFF;
        m[Scope::l0b][k * 16] = k < 16 ? 0xFF : 0x80;
      }
      m.run(mmad8(l0c(0), l0a(0), l0b(0), 1, 1, 1, false, at, bt));
      const int a80 = at == DType::i8 ? -128 : 128, aff = at == DType::i8 ? -1 : 255;
      const int b80 = bt == DType::i8 ? -128 : 128, bff = bt == DType::i8 ? -1 : 255;
      EXPECT_EQ(m.get<int32_t>(Scope::l0c, 0), 16 * (a80 * bff + aff * b80))
          << isa::dtype_name(at) << " x " << isa::dtype_name(bt);
    }
}

TEST(Int8Cube, Img2colOfInt8UsesTheInt8Fractal) {
  // A 2 x 3 x 3 u8 feature map, 2x2 kernel, stride 1, no pad: X is K = 8 x N = 4 pixels. To L0B
  // in 32x16 fractals: one block, rows 8..31 and columns 4..15 zero.
  Mem m = int8_mem();
  for (int i = 0; i < 18; ++i) m[Scope::l1][i] = static_cast<uint8_t>(10 + i);
  isa::Img2colArgs g;
  g.dtype = DType::u8;
  g.dst = l0b(0);
  g.src = l1(0);
  g.c = 2, g.h = 3, g.w = 3, g.kh = 2, g.kw = 2, g.oh = 2, g.ow = 2;
  std::fill(m[Scope::l0b].begin(), m[Scope::l0b].begin() + 1024, 0xAA);
  m.run(img2col(g));
  for (int k = 0; k < 32; ++k)
    for (int p = 0; p < 16; ++p) {
      int expect = 0;
      if (k < 8 && p < 4) {
        const int ci = k / 4, r = (k / 2) % 2, s = k % 2, i = p / 2, j = p % 2;
        expect = 10 + (ci * 3 + i + r) * 3 + j + s;
      }
      EXPECT_EQ(m[Scope::l0b][k * 16 + p], expect) << k << "," << p;
    }
  // Footprint: one 32x16 int8 block = 512 bytes written.
  const auto ranges = isa::access_ranges(m.hw, img2col(g));
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[1].end - ranges[1].begin, 512u);
}

TEST(Int8Cube, WithoutAnInt8FractalTheModeUsesTheFloatOne) {
  // core.cube.int8 absent: the int8 mode's fractal is 16x16x16. K = 32 is two k fractals.
  Mem m;  // test_hw(): no int8 key
  for (int k = 0; k < 32; ++k) {
    m[Scope::l1][k] = static_cast<uint8_t>(k + 1);  // A [16][32], row 0 only
    m[Scope::l1][1024 + k * 16] = 2;                // B [32][16], column 0 = 2
  }
  m.run(load2d(DType::u8, l0a(0), l1(0), 16, 32, 32));
  m.run(load2d(DType::u8, l0b(0), l1(1024), 32, 16, 16));
  // L0A [1][2][16][16]: A[0][16] starts the second block.
  EXPECT_EQ(m[Scope::l0a][256], 17);
  m.run(mmad8(l0c(0), l0a(0), l0b(0), 1, 2, 1, false, DType::u8, DType::u8));
  EXPECT_EQ(m.get<int32_t>(Scope::l0c, 0), 2 * (32 * 33 / 2));
}

TEST(Int8Cube, FixTiesThroughTheInstruction) {
  // Accumulators written directly into one 16x16 int32 L0C fractal, requantised per tensor with
  // scale 0.5 and zero point 0 into i8: the tie table of RequantizeRoundsTiesToEven.
  Mem m = int8_mem();
  const int32_t accs[] = {5, 7, -5, -7, 3, 1, -1, -3, 1000, -1000};
  const int8_t expect[] = {2, 4, -2, -4, 2, 0, 0, -2, 127, -128};
  for (int j = 0; j < 10; ++j) m.put<int32_t>(Scope::l0c, j * 4, accs[j]);
  m.put<float>(Scope::ub, 4096, 0.5f);
  m.put<int32_t>(Scope::ub, 4100, 0);
  m.run(fix8(DType::i8, ub(0), l0c(0), 1, 10, 10, false, ub(4096), 0));
  for (int j = 0; j < 10; ++j) EXPECT_EQ(static_cast<int8_t>(m[Scope::ub][j]), expect[j]) << j;
  // The fix reads one table entry (per tensor) and the n int32 accumulators.
  const auto ranges =
      isa::access_ranges(m.hw, fix8(DType::i8, ub(0), l0c(0), 1, 10, 10, false, ub(4096), 0));
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].scope, Scope::ub);  // the table
  EXPECT_EQ(ranges[0].begin, 4096u);
  EXPECT_EQ(ranges[0].end, 4104u);
  EXPECT_EQ(ranges[1].end, 40u);  // 10 int32 accumulators of row 0
  // Per channel: n entries.
  const auto pc =
      isa::access_ranges(m.hw, fix8(DType::i8, ub(0), l0c(0), 1, 10, 10, true, ub(4096), 0));
  EXPECT_EQ(pc[0].end - pc[0].begin, 80u);
}

TEST(Int8Cube, MixedModesAndBadDtypesAreErrors) {
  Mem m = int8_mem();
  EXPECT_THROW(m.run(mmad8(l0c(0), l0a(0), l0b(0), 1, 1, 1, false, DType::i8, DType::f16)), Error);
  EXPECT_THROW(m.run(mmad8(l0c(0), l0a(0), l0b(0), 1, 1, 1, false, DType::i16, DType::i16)), Error);
  EXPECT_THROW(m.run(load2d(DType::i16, l0a(0), l1(0), 16, 16, 16)), Error);
  EXPECT_THROW(m.run(fix(DType::i16, ub(0), l0c(0), 1, 1, 1)), Error);
  // The verifier says the same.
  isa::Program p = program({mmad8(l0c(0), l0a(0), l0b(0), 1, 1, 1, false, DType::u8, DType::f16),
                            fix(DType::u16, ub(0), l0c(0), 1, 1, 1),
                            load2d(DType::i8, l0a(0), l1(0), 16, 32, 32),
                            fix8(DType::u8, ub(0), l0c(0), 1, 1, 1, false, ub(64), 3)});
  const auto msgs = isa::verify_program(p, m.hw);
  ASSERT_EQ(msgs.size(), 2u) << fmt::format("{}", fmt::join(msgs, "\n"));
  EXPECT_NE(msgs[0].find("a_dtype u8 and b_dtype f16 are not both"), std::string::npos) << msgs[0];
  EXPECT_NE(msgs[1].find("not u16"), std::string::npos) << msgs[1];
}

TEST(Int8Cube, TextAndBinaryForms) {
  Mem m = int8_mem();
  isa::Program p =
      program({mmad8(l0c(512), l0a(0), l0b(1024), 2, 3, 4, true, DType::u8, DType::i8),
               fix8(DType::u8, ub(256), l0c(0), 20, 24, 32, true, ub(4096, 3), -5),
               mmad(l0c(0), l0a(0), l0b(0), 1, 1, 1), fix(DType::f16, ub(0), l0c(0), 16, 16, 16)});
  const std::string text = isa::disassemble(p);
  EXPECT_NE(text.find("mmad l0c[x0+512], l0a[x0+0], l0b[x0+1024], m1=2, k1=3, n1=4, acc=1, "
                      "a_dtype=u8, b_dtype=i8"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fix.u8 ub[x0+256], l0c[x0+0], m=20, n=24, dst_row_stride=32, "
                      "per_channel=1, quant=ub[x3+4096], zero_point=-5"),
            std::string::npos)
      << text;
  // Float-mode instructions print as before (the new fields at their defaults are not printed).
  EXPECT_NE(text.find("mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=1, n1=1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fix.f16 ub[x0+0], l0c[x0+0], m=16, n=16, dst_row_stride=16\n"),
            std::string::npos)
      << text;
  const isa::Program q = isa::assemble(text, "int8.s");
  ASSERT_EQ(q.cores.size(), 1u);
  EXPECT_TRUE(q.cores[0] == p.cores[0]);
  const isa::Program r = isa::decode(isa::encode(p));
  EXPECT_TRUE(r.cores[0] == p.cores[0]);
  // Compact form of the int8 mmad: opcode, flags (acc, group present), c, a, b (2 bytes each:
  // scope|reg, offset; 512 and 1024 take 2 offset bytes), m1, k1, n1, a_dtype, b_dtype.
  isa::Program one;
  one.cores.resize(1);
  isa::Program none;
  none.cores.resize(1);
  one.cores[0].push_back(mmad8(l0c(0), l0a(0), l0b(0), 1, 1, 1, false, DType::u8, DType::i8));
  // opcode + flags + 3 memory operands of 2 bytes + 3 sizes + 2 dtypes = 13 bytes (11 for the
  // float-mode mmad of docs/isa.md, "Sizes").
  EXPECT_EQ(isa::encode(one).size() - isa::encode(none).size(), 13u);
}

TEST(Int8Cube, TimingCountsTheModesBytes) {
  // int8 fractal 16x32x16: an mmad of 2x3x4 fractals occupies 24 cycles like the float one but
  // reads 2*3*512 B of A and 3*4*512 B of B (1-byte elements) and writes 8 fractals of 16*16*4 B.
  Mem m = int8_mem();
  const Instruction mm = mmad8(l0c(0), l0a(0), l0b(0), 2, 3, 4, false, DType::i8, DType::i8);
  EXPECT_EQ(npu::instruction_cost(m.hw, mm).occupancy_cycles, 24u);
  const auto t = npu::scope_traffic(m.hw, mm);
  EXPECT_EQ(t.read[int(Scope::l0a)], 2u * 3 * 512);
  EXPECT_EQ(t.read[int(Scope::l0b)], 3u * 4 * 512);
  EXPECT_EQ(t.written[int(Scope::l0c)], 8u * 1024);
  // fix 20 x 24 to i8 per channel: R = 32 x 32 int32 = 4096 B at 256 B/cycle = 16 cycles; the
  // table is 24 entries of 8 B read from UB; 480 B written.
  const Instruction fx = fix8(DType::i8, ub(0), l0c(0), 20, 24, 24, true, ub(8192), 0);
  EXPECT_EQ(npu::instruction_cost(m.hw, fx).occupancy_cycles, 16u);
  const auto ft = npu::scope_traffic(m.hw, fx);
  EXPECT_EQ(ft.read[int(Scope::l0c)], 4096u);
  EXPECT_EQ(ft.read[int(Scope::ub)], 24u * 8);
  EXPECT_EQ(ft.written[int(Scope::ub)], 480u);
  // load2d of a 20 x 40 i8 matrix to L0A: 2 x 2 blocks of 16x32 = 2048 B at 256 B/cycle = 8.
  EXPECT_EQ(
      npu::instruction_cost(m.hw, load2d(DType::i8, l0a(0), l1(0), 20, 40, 40)).occupancy_cycles,
      8u);
}

}  // namespace
}  // namespace tessel
