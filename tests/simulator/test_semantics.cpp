// Instruction semantics (isa/semantics.h) with exact values: dma strides/padding, fractal layouts,
// im2col against a naive loop, mmad against a naive matmul, fix rounding/ReLU, vector f16
// rounding, broadcasts, reductions, in-place order, bounds errors; and the functional
// interpreter (isa/interpreter.h).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compiler/support/error.h"
#include "isa/interpreter.h"
#include "isa/semantics.h"
#include "npu_model/timing.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;

// ---------------------------------------------------------------------------------------------
// dma

TEST(Semantics, DmaStridedWithValidWindowAndPadding) {
  // src: an 8 x 10 f16 matrix in GM (row stride 10), value r*100 + c. Load a 4 x 6 window whose
  // element (i, j) reads src[(i + 1) * 10 + (j + 2)] (the base points at (1, 2)) into UB with
  // destination row stride 8; only rows [1, 3) and columns [1, 5) are valid, the rest is 7.5.
  Mem m;
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 10; ++c) put_f16(m[Scope::gm], (r * 10 + c) * 2, r * 100 + c);
  isa::DmaArgs d;
  d.dtype = DType::f16;
  d.dst = ub(64);
  d.src = gm((1 * 10 + 2) * 2);
  d.ndims = 2;
  d.extent = {4, 6};
  d.dst_stride = {8, 1};
  d.src_stride = {10, 1};
  d.valid_begin = {1, 1};
  d.valid_end = {3, 5};
  d.pad_value = 7.5f;
  m.run(dma(d));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) {
      const bool valid = i >= 1 && i < 3 && j >= 1 && j < 5;
      const float expect = valid ? (i + 1) * 100 + (j + 2) : 7.5f;
      EXPECT_EQ(get_f16(m[Scope::ub], 64 + (i * 8 + j) * 2), expect) << i << "," << j;
    }
  // Elements between the destination rows (columns 6, 7) are untouched.
  EXPECT_EQ(get_f16(m[Scope::ub], 64 + 6 * 2), 0.0f);
  // GM traffic counts valid elements only: 2 * 4 * 2 bytes; the destination gets all 24.
  EXPECT_EQ(npu::dma_gm_bytes(d), 16u);
  const auto t = npu::scope_traffic(m.hw, dma(d));
  EXPECT_EQ(t.written[int(Scope::ub)], 48u);
  // The source range starts at the first valid element (1+1, 2+1) and ends after (2+1, 4+2).
  const auto ranges = isa::access_ranges(m.hw, dma(d));
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].scope, Scope::gm);
  EXPECT_EQ(ranges[0].begin, uint64_t((2 * 10 + 3) * 2));
  EXPECT_EQ(ranges[0].end, uint64_t((3 * 10 + 6 + 1) * 2));
  EXPECT_EQ(ranges[1].begin, 64u);
  EXPECT_EQ(ranges[1].end, uint64_t(64 + (3 * 8 + 5 + 1) * 2));
}

TEST(Semantics, Dma3dTransposeMatchesNaiveLoop) {
  // f32, extent {3, 4, 5}; the destination is written transposed ([k][j][i] with strides
  // {1, 3, 12}); source strides {40, 8, 1} (padded rows). Checked against the definition.
  Mem m;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-10, 10);
  for (int i = 0; i < 3 * 40; ++i) put_f32(m[Scope::ub], 4 * i, u(rng));
  isa::DmaArgs d;
  d.dtype = DType::f32;
  d.dst = gm(1000);
  d.src = ub(0);
  d.ndims = 3;
  d.extent = {3, 4, 5};
  d.dst_stride = {1, 3, 12};
  d.src_stride = {40, 8, 1};
  d.valid_end = {3, 4, 5};
  m.run(dma(d));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k)
        EXPECT_EQ(get_f32(m[Scope::gm], 1000 + 4 * (i + 3 * j + 12 * k)),
                  get_f32(m[Scope::ub], 4 * (40 * i + 8 * j + k)));
  // A store writes every element to GM: 60 * 4 bytes of GM traffic.
  EXPECT_EQ(npu::dma_gm_bytes(d), 240u);
}

TEST(Semantics, DmaIllegalScopePairIsAnError) {
  Mem m;
  try {
    m.run(dma(DType::f16, gm(0), gm(64), {16}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("illegal scope pair gm -> gm"), std::string::npos)
        << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// load2d fractal layouts

TEST(Semantics, Load2dFractalLayoutL0A) {
  // A 3 x 18 f16 matrix (row stride 20 in L1, value r*100 + c) to L0A: blocks [1][2] of 16 x 16.
  // Element (r, c) lands at ((c / 16) * 16 + r) * 16 + c % 16; everything else of the two blocks is
  // zero (the destination is pre-filled with garbage to see it).
  Mem m;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 20; ++c) put_f16(m[Scope::l1], (r * 20 + c) * 2, r * 100 + c);
  std::fill(m[Scope::l0a].begin(), m[Scope::l0a].begin() + 2048, 0x55);
  m.run(load2d(DType::f16, l0a(0), l1(0), 3, 18, 20));
  for (int blk = 0; blk < 2; ++blk)
    for (int rr = 0; rr < 16; ++rr)
      for (int cc = 0; cc < 16; ++cc) {
        const int r = rr, c = blk * 16 + cc;
        const float expect = (r < 3 && c < 18) ? r * 100 + c : 0.0f;
        EXPECT_EQ(get_f16(m[Scope::l0a], ((blk * 16 + rr) * 16 + cc) * 2), expect);
      }
  // Explicit spot checks: (2, 17) -> block 1, row 2, col 1 = element 256 + 33 = 289.
  EXPECT_EQ(get_f16(m[Scope::l0a], 289 * 2), 217.0f);
  EXPECT_EQ(get_f16(m[Scope::l0a], 34 * 2), 202.0f);  // (2, 2): block 0, element 2*16 + 2
  // Bytes past the two blocks are untouched.
  EXPECT_EQ(m[Scope::l0a][1024], 0x55);
}

TEST(Semantics, Load2dTransposeToL0B) {
  // Transposed: element (r, c) of the 20 x 5 B matrix is read at src + c * 24 + r. L0B blocks are
  // k0 x n0 = 16 x 16: [ceil(20/16) = 2][1]; (r, c) lands at ((r / 16) * 16 + r % 16) * 16 + c.
  Mem m;
  for (int i = 0; i < 5 * 24; ++i) put_f32(m[Scope::l1], i * 4, static_cast<float>(i));
  m.run(load2d(DType::f32, l0b(128), l1(0), 20, 5, 24, true));
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 16; ++c) {
      const float expect = (r < 20 && c < 5) ? static_cast<float>(c * 24 + r) : 0.0f;
      EXPECT_EQ(get_f32(m[Scope::l0b], 128 + ((r / 16) * 256 + (r % 16) * 16 + c) * 4), expect);
    }
}

// ---------------------------------------------------------------------------------------------
// img2col

// The im2col matrix X[k][p] straight from docs/isa.md.
float naive_x(const std::vector<float>& fm, const isa::Img2colArgs& g, int k, int p) {
  const int s = k % g.kw, r = (k / g.kw) % g.kh, ci = k / (g.kw * g.kh);
  const int i = p / g.ow, j = p % g.ow;
  const int hh = i * g.stride_h + r * g.dilation_h - g.pad_top;
  const int ww = j * g.stride_w + s * g.dilation_w - g.pad_left;
  if (hh < 0 || hh >= int(g.h) || ww < 0 || ww >= int(g.w)) return 0.0f;
  return fm[(ci * g.h + hh) * g.w + ww];
}

TEST(Semantics, Img2colPaddedStridedDilatedMatchesNaiveLoop) {
  // c=2, 5 x 6 map, 3 x 2 kernel, stride (2, 1), dilation (1, 2), pad top/left 1, 3 x 5 output
  // (rows 2i + r - 1 reach 5 and columns j + 2s - 1 reach -1: padding on every side).
  // K = 2*3*2 = 12, N = 15. Values are small integers (exact in f16).
  isa::Img2colArgs g;
  g.dtype = DType::f16;
  g.src = l1(32);
  g.c = 2, g.h = 5, g.w = 6, g.kh = 3, g.kw = 2, g.stride_h = 2, g.stride_w = 1;
  g.dilation_h = 1, g.dilation_w = 2, g.pad_top = 1, g.pad_left = 1, g.oh = 3, g.ow = 5;
  std::vector<float> fm(2 * 5 * 6);
  for (size_t i = 0; i < fm.size(); ++i) fm[i] = static_cast<float>(i + 1);
  for (int to_a = 0; to_a < 2; ++to_a) {
    Mem m;
    for (size_t i = 0; i < fm.size(); ++i) put_f16(m[Scope::l1], 32 + i * 2, fm[i]);
    g.dst = to_a ? l0a(0) : l0b(0);
    std::vector<uint8_t>& dst = to_a ? m[Scope::l0a] : m[Scope::l0b];
    std::fill(dst.begin(), dst.begin() + 4096, 0x77);
    m.run(img2col(g));
    const int K = 12, N = 15;
    // L0B: B = X (K x N), blocks [1][1] of 16 x 16. L0A: A = X^T (N x K), blocks [1][1].
    for (int row = 0; row < 16; ++row)
      for (int col = 0; col < 16; ++col) {
        float expect = 0.0f;
        if (!to_a && row < K && col < N) expect = naive_x(fm, g, row, col);
        if (to_a && row < N && col < K) expect = naive_x(fm, g, col, row);
        EXPECT_EQ(get_f16(dst, (row * 16 + col) * 2), expect)
            << (to_a ? "L0A" : "L0B") << " " << row << "," << col;
      }
    EXPECT_EQ(dst[512], 0x77);  // one fractal written, the rest untouched
  }
  // Spot check of the definition: k = 1 (ci 0, r 0, s 1), p = 0 (i 0, j 0): row 0*2 + 0 - 1 = -1
  // -> padding; k = 3 (ci 0, r 1, s 1), p = 0: row 0, col 0 + 2 - 1 = 1 -> fm[0][0][1] = 2.
  EXPECT_EQ(naive_x(fm, g, 1, 0), 0.0f);
  EXPECT_EQ(naive_x(fm, g, 3, 0), 2.0f);
}

TEST(Semantics, Img2colNc1hwc0MatchesNaiveLoop) {
  // The map of Img2colPaddedStridedDilatedMatchesNaiveLoop with c = 3 stored as NC1HWC0 with
  // c0 = 2: a [2][5][6][2] block, fm[ci][y][x] at ((ci / 2) * 5 + y) * 12 + x * 2 + ci % 2. The
  // pad channel (ci = 3 of block 1) holds 999, which must never appear in the output; every
  // element must equal the docs/isa.md definition evaluated on the dense map.
  isa::Img2colArgs g;
  g.dtype = DType::f16;
  g.src = l1(64);
  g.c = 3, g.h = 5, g.w = 6, g.kh = 3, g.kw = 2, g.stride_h = 2, g.stride_w = 1;
  g.dilation_h = 1, g.dilation_w = 2, g.pad_top = 1, g.pad_left = 1, g.oh = 3, g.ow = 5;
  g.c0 = 2;
  std::vector<float> fm(3 * 5 * 6);
  for (size_t i = 0; i < fm.size(); ++i) fm[i] = static_cast<float>(i + 1);
  for (int to_a = 0; to_a < 2; ++to_a) {
    Mem m;
    for (int i = 0; i < 2 * 5 * 6 * 2; ++i) put_f16(m[Scope::l1], 64 + i * 2, 999.0f);
    for (int ci = 0; ci < 3; ++ci)
      for (int y = 0; y < 5; ++y)
        for (int x = 0; x < 6; ++x)
          put_f16(m[Scope::l1], 64 + (((ci / 2) * 5 + y) * 12 + x * 2 + ci % 2) * 2,
                  fm[(ci * 5 + y) * 6 + x]);
    g.dst = to_a ? l0a(0) : l0b(0);
    std::vector<uint8_t>& dst = to_a ? m[Scope::l0a] : m[Scope::l0b];
    std::fill(dst.begin(), dst.begin() + 4096, 0x77);
    m.run(img2col(g));
    const int K = 18, N = 15;  // K = 3*3*2, N = 3*5: one 16 x 16 fractal would not hold K
    // L0B: B = X (K x N), blocks [2][1]. L0A: A = X^T (N x K), blocks [1][2].
    const int R = to_a ? N : K, C = to_a ? K : N, C1 = to_a ? 2 : 1;
    for (int row = 0; row < 32; ++row)
      for (int col = 0; col < 16 * C1; ++col) {
        if (to_a && row >= 16) continue;  // L0A has one block row
        if (!to_a && col >= 16) continue;
        const float expect = row < R && col < C
                                 ? (to_a ? naive_x(fm, g, col, row) : naive_x(fm, g, row, col))
                                 : 0.0f;
        const int off = ((row / 16) * C1 + col / 16) * 256 + (row % 16) * 16 + col % 16;
        EXPECT_EQ(get_f16(dst, off * 2), expect) << (to_a ? "L0A " : "L0B ") << row << "," << col;
      }
    EXPECT_EQ(dst[1024], 0x77);  // two fractals (1024 bytes) written, the rest untouched
  }
}

TEST(Semantics, Img2colMultiFractal) {
  // K = 3*3*3 = 27 > 16 and N = 6*6 = 36 > 16: B is blocks [2][3]; compare every element.
  isa::Img2colArgs g;
  g.dtype = DType::f32;
  g.src = l1(0);
  g.dst = l0b(0);
  g.c = 3, g.h = 6, g.w = 6, g.kh = 3, g.kw = 3, g.pad_top = 1, g.pad_left = 1, g.oh = 6, g.ow = 6;
  std::vector<float> fm(3 * 36);
  for (size_t i = 0; i < fm.size(); ++i) fm[i] = static_cast<float>(i) * 0.5f - 7;
  Mem m;
  for (size_t i = 0; i < fm.size(); ++i) put_f32(m[Scope::l1], i * 4, fm[i]);
  m.run(img2col(g));
  for (int k = 0; k < 32; ++k)
    for (int p = 0; p < 48; ++p) {
      const float expect = (k < 27 && p < 36) ? naive_x(fm, g, k, p) : 0.0f;
      const int off = ((k / 16) * 3 + p / 16) * 256 + (k % 16) * 16 + p % 16;
      EXPECT_EQ(get_f32(m[Scope::l0b], off * 4), expect) << k << "," << p;
    }
}

// ---------------------------------------------------------------------------------------------
// mmad and fix

TEST(Semantics, MmadMatchesNaiveMatmulAndAccumulates) {
  // M = 32, K = 48, N = 16 (m1 = 2, k1 = 3, n1 = 1), f16 inputs with 1/8 steps (exact in f16),
  // f32 accumulation in k order: the naive loop below computes the same sums in the same order, so
  // the result is bit-exact.
  const int m1 = 2, k1 = 3, n1 = 1, M = 32, K = 48, N = 16;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> u(-40, 40);
  std::vector<float> A(M * K), B(K * N);
  for (float& v : A) v = u(rng) / 8.0f;
  for (float& v : B) v = u(rng) / 8.0f;
  Mem m;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < K; ++c)
      put_f16(m[Scope::l0a], (((r / 16) * k1 + c / 16) * 256 + (r % 16) * 16 + c % 16) * 2,
              A[r * K + c]);
  for (int r = 0; r < K; ++r)
    for (int c = 0; c < N; ++c)
      put_f16(m[Scope::l0b], (((r / 16) * n1 + c / 16) * 256 + (r % 16) * 16 + c % 16) * 2,
              B[r * N + c]);
  auto c_at = [&](int r, int c) {
    return get_f32(m[Scope::l0c], (((r / 16) * n1 + c / 16) * 256 + (r % 16) * 16 + c % 16) * 4);
  };
  std::fill(m[Scope::l0c].begin(), m[Scope::l0c].end(), 0x3f);  // garbage: overwritten
  m.run(mmad(l0c(0), l0a(0), l0b(0), m1, k1, n1, false));
  std::vector<float> C(M * N);
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];
      C[r * N + c] = acc;
      EXPECT_EQ(c_at(r, c), acc) << r << "," << c;
    }
  m.run(mmad(l0c(0), l0a(0), l0b(0), m1, k1, n1, true));  // C += A x B
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) EXPECT_EQ(c_at(r, c), C[r * N + c] + C[r * N + c]);
}

TEST(Semantics, FixReluAndF16Rounding) {
  // A 20 x 20 block of a [2][2][16][16] f32 tile to UB f16 with row stride 24 and ReLU.
  Mem m;
  auto src_off = [](int i, int j) {
    return (((i / 16) * 2 + j / 16) * 256 + (i % 16) * 16 + j % 16) * 4;
  };
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) put_f32(m[Scope::l0c], src_off(i, j), (i - 5) * 1.0f + j / 64.0f);
  // Rounding cases: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 -> even (1); 1 + 3*2^-11 is a tie
  // between 1 + 2^-10 and 1 + 2^-9 -> even (1 + 2^-9); 70000 overflows f16 -> inf.
  put_f32(m[Scope::l0c], src_off(6, 0), 1.0f + std::ldexp(1.0f, -11));
  put_f32(m[Scope::l0c], src_off(6, 1), 1.0f + 3 * std::ldexp(1.0f, -11));
  put_f32(m[Scope::l0c], src_off(17, 18), 70000.0f);
  m.run(fix(DType::f16, ub(0), l0c(0), 20, 20, 24, true));
  EXPECT_EQ(get_f16(m[Scope::ub], (6 * 24 + 0) * 2), 1.0f);
  EXPECT_EQ(get_f16(m[Scope::ub], (6 * 24 + 1) * 2), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isinf(get_f16(m[Scope::ub], (17 * 24 + 18) * 2)));
  for (int i = 0; i < 20; ++i)
    for (int j = 2; j < 20; ++j) {
      if (i == 17 && j == 18) continue;
      const float v = (i - 5) * 1.0f + j / 64.0f;
      EXPECT_EQ(get_f16(m[Scope::ub], (i * 24 + j) * 2), round_to_f16(std::max(v, 0.0f)));
    }
  EXPECT_EQ(get_f16(m[Scope::ub], (0 * 24 + 20) * 2), 0.0f);  // row padding untouched
  // Without ReLU to f32: exact values, negatives kept.
  m.run(fix(DType::f32, ub(4096), l0c(0), 3, 17, 17, false));
  EXPECT_EQ(get_f32(m[Scope::ub], 4096 + (0 * 17 + 16) * 4), -5.0f + 16 / 64.0f);
  EXPECT_EQ(get_f32(m[Scope::ub], 4096 + (2 * 17 + 3) * 4), -3.0f + 3 / 64.0f);
}

// ---------------------------------------------------------------------------------------------
// vector

TEST(Semantics, VectorF16RoundsToNearestEven) {
  Mem m;
  const float tiny = std::ldexp(1.0f, -11);
  const float a[4] = {1.0f, 1.0f, 2048.0f, 0.1f};
  const float b[4] = {tiny, 3 * tiny, 1.0f, 0.2f};
  for (int i = 0; i < 4; ++i) {
    put_f16(m[Scope::ub], 100 + 2 * i, a[i]);
    put_f16(m[Scope::ub], 200 + 2 * i, b[i]);
  }
  m.run(vec(Opcode::vadd, DType::f16, vo(ub(300)), vo(ub(100)), vo(ub(200)), 4));
  EXPECT_EQ(get_f16(m[Scope::ub], 300), 1.0f);                         // tie -> even
  EXPECT_EQ(get_f16(m[Scope::ub], 302), 1.0f + std::ldexp(1.0f, -9));  // tie -> even (up)
  EXPECT_EQ(get_f16(m[Scope::ub], 304), 2048.0f);                      // 2049: tie -> 2048
  // 0.1 and 0.2 are first rounded to f16 on store; their f32 sum is rounded once.
  EXPECT_EQ(get_f16(m[Scope::ub], 306), round_to_f16(round_to_f16(0.1f) + round_to_f16(0.2f)));
  // f32 ops are plain fp32.
  put_f32(m[Scope::ub], 400, 3.0f);
  put_f32(m[Scope::ub], 404, 7.0f);
  m.run(vec(Opcode::vdiv, DType::f32, vo(ub(408)), vo(ub(400)), vo(ub(404)), 1));
  EXPECT_EQ(get_f32(m[Scope::ub], 408), 3.0f / 7.0f);
}

TEST(Semantics, VectorOpsAllOpcodes) {
  // Every elementwise opcode on x = {-2, 0.5, 4} (and y = {3, -1, 2} where binary), f32.
  const float x[3] = {-2.0f, 0.5f, 4.0f}, y[3] = {3.0f, -1.0f, 2.0f}, d0[3] = {10, 20, 30};
  struct Case {
    Opcode op;
    float (*f)(float d, float a, float b, float s);
  };
  const Case cases[] = {
      {Opcode::vadd, [](float, float a, float b, float) { return a + b; }},
      {Opcode::vsub, [](float, float a, float b, float) { return a - b; }},
      {Opcode::vmul, [](float, float a, float b, float) { return a * b; }},
      {Opcode::vdiv, [](float, float a, float b, float) { return a / b; }},
      {Opcode::vmax, [](float, float a, float b, float) { return std::max(a, b); }},
      {Opcode::vmin, [](float, float a, float b, float) { return std::min(a, b); }},
      {Opcode::vmla, [](float d, float a, float b, float) { return d + a * b; }},
      {Opcode::vadds, [](float, float a, float, float s) { return a + s; }},
      {Opcode::vmuls, [](float, float a, float, float s) { return a * s; }},
      {Opcode::vmaxs, [](float, float a, float, float s) { return std::max(a, s); }},
      {Opcode::vmins, [](float, float a, float, float s) { return std::min(a, s); }},
      {Opcode::vexp, [](float, float a, float, float) { return std::exp(a); }},
      {Opcode::vsqrt, [](float, float a, float, float) { return std::sqrt(a); }},
      {Opcode::vrec, [](float, float a, float, float) { return 1.0f / a; }},
      {Opcode::vabs, [](float, float a, float, float) { return std::fabs(a); }},
      {Opcode::vrelu, [](float, float a, float, float) { return std::max(a, 0.0f); }},
      {Opcode::vneg, [](float, float a, float, float) { return -a; }},
      {Opcode::vcopy, [](float, float a, float, float) { return a; }},
      {Opcode::vdup, [](float, float, float, float s) { return s; }},
  };
  for (const Case& c : cases) {
    Mem m;
    for (int i = 0; i < 3; ++i) {
      put_f32(m[Scope::ub], 4 * i, x[i]);
      put_f32(m[Scope::ub], 64 + 4 * i, y[i]);
      put_f32(m[Scope::ub], 128 + 4 * i, d0[i]);
    }
    m.run(vec(c.op, DType::f32, vo(ub(128)), vo(ub(0)), vo(ub(64)), 3, 1, 1.5f));
    for (int i = 0; i < 3; ++i) {
      const float expect = c.f(d0[i], x[i], y[i], 1.5f);
      const float got = get_f32(m[Scope::ub], 128 + 4 * i);
      if (std::isnan(expect))
        EXPECT_TRUE(std::isnan(got)) << isa::opcode_name(c.op);
      else
        EXPECT_EQ(got, expect) << isa::opcode_name(c.op) << " element " << i;
    }
  }
  // vln of {e, 1} (f32).
  Mem m;
  put_f32(m[Scope::ub], 0, std::exp(1.0f));
  put_f32(m[Scope::ub], 4, 1.0f);
  m.run(vec(Opcode::vln, DType::f32, vo(ub(8)), vo(ub(0)), vo(ub(0)), 2));
  EXPECT_EQ(get_f32(m[Scope::ub], 8), std::log(std::exp(1.0f)));
  EXPECT_EQ(get_f32(m[Scope::ub], 12), 0.0f);
}

TEST(Semantics, VectorStridesRepeatsAndBroadcast) {
  // dst(r, e) = src0(r, e) * src1(r, e): src0 elem_stride 2, repeat_stride 16; src1 broadcasts
  // one value per repeat (elem_stride 0, repeat_stride 1); dst dense (repeat_stride 4). f16.
  Mem m;
  for (int i = 0; i < 64; ++i) put_f16(m[Scope::ub], 2 * i, static_cast<float>(i));
  for (int r = 0; r < 3; ++r) put_f16(m[Scope::ub], 512 + 2 * r, static_cast<float>(r + 2));
  m.run(
      vec(Opcode::vmul, DType::f16, vo(ub(1024), 1, 4), vo(ub(0), 2, 16), vo(ub(512), 0, 1), 4, 3));
  for (int r = 0; r < 3; ++r)
    for (int e = 0; e < 4; ++e)
      EXPECT_EQ(get_f16(m[Scope::ub], 1024 + 2 * (4 * r + e)), float((16 * r + 2 * e) * (r + 2)));
}

TEST(Semantics, VectorInPlaceIsProcessedInOrder) {
  // vcopy with dst = src + 1 element, count 3: processed in e order, so each element copies the
  // value just written: {a, b, c, d} -> {a, a, a, a}.
  Mem m;
  for (int i = 0; i < 4; ++i) put_f32(m[Scope::ub], 4 * i, float(i + 1));
  m.run(vec(Opcode::vcopy, DType::f32, vo(ub(4)), vo(ub(0)), vo(ub(0)), 3));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(get_f32(m[Scope::ub], 4 * i), 1.0f);
}

TEST(Semantics, Reductions) {
  // vrsum.f16 over {2048, 1, 1}: accumulated in fp32 (2050, exact in f16), not step-by-step in f16
  // (which would give 2048).
  Mem m;
  put_f16(m[Scope::ub], 0, 2048.0f);
  put_f16(m[Scope::ub], 2, 1.0f);
  put_f16(m[Scope::ub], 4, 1.0f);
  m.run(vec(Opcode::vrsum, DType::f16, vo(ub(64), 1, 1), vo(ub(0), 1, 3), vo(ub(0)), 3, 1));
  EXPECT_EQ(get_f16(m[Scope::ub], 64), 2050.0f);
  // vrmax / vrmin / vrsum per repeat over a 3 x 5 f32 matrix read with elem_stride 2 (every
  // other element of rows of 10), results one per repeat at dst repeat_stride 2.
  Mem n;
  const float v[3][10] = {{1, 0, -3, 0, 7, 0, 2, 0, 5, 0},
                          {-1, 0, -9, 0, -4, 0, -2, 0, -8, 0},
                          {0.5f, 0, 0.25f, 0, 8, 0, 16, 0, -32, 0}};
  for (int r = 0; r < 3; ++r)
    for (int e = 0; e < 10; ++e) put_f32(n[Scope::ub], 4 * (10 * r + e), v[r][e]);
  n.run(vec(Opcode::vrmax, DType::f32, vo(ub(400), 1, 2), vo(ub(0), 2, 10), vo(ub(0)), 5, 3));
  n.run(vec(Opcode::vrmin, DType::f32, vo(ub(500), 1, 2), vo(ub(0), 2, 10), vo(ub(0)), 5, 3));
  n.run(vec(Opcode::vrsum, DType::f32, vo(ub(600), 1, 2), vo(ub(0), 2, 10), vo(ub(0)), 5, 3));
  const float mx[3] = {7, -1, 16}, mn[3] = {-3, -9, -32}, sm[3] = {12, -24, -7.25f};
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(get_f32(n[Scope::ub], 400 + 8 * r), mx[r]);
    EXPECT_EQ(get_f32(n[Scope::ub], 500 + 8 * r), mn[r]);
    EXPECT_EQ(get_f32(n[Scope::ub], 600 + 8 * r), sm[r]);
    EXPECT_EQ(get_f32(n[Scope::ub], 404 + 8 * r), 0.0f);  // between results: untouched
  }
}

TEST(Semantics, OutOfBoundsAccessNamesScopeAndSize) {
  Mem m;
  // 256 f32 starting 512 bytes before the end of UB: [261632, 262656) > 262144.
  try {
    m.run(vec(Opcode::vadds, DType::f32, vo(ub(0)), vo(ub(262144 - 512)), vo(ub(0)), 256));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("vadds: read of ub bytes [261632, 262656) is outside the 262144-byte ub"),
              std::string::npos)
        << msg;
  }
  // A negative address (register value + offset < 0).
  std::array<int64_t, isa::kNumRegs> regs{};
  regs[3] = -64;
  const auto r = isa::resolve(dma(DType::f16, ub(0, 3), gm(0), {16}), regs);
  EXPECT_THROW(m.run(r), Error);
  // Wrong scope for an operand.
  EXPECT_THROW(m.run(mmad(l0c(0), ub(0), l0b(0), 1, 1, 1)), Error);
}

TEST(Semantics, ResolveAddsRegisterValues) {
  std::array<int64_t, isa::kNumRegs> regs{};
  regs[4] = 1000;
  regs[0] = 5;  // x0 always reads 0
  const auto r = isa::resolve(
      vec(Opcode::vadd, DType::f16, vo(ub(24, 4)), vo(ub(8, 0)), vo(ub(-8, 4)), 4), regs);
  const auto& v = std::get<isa::VectorArgs>(r.args);
  EXPECT_EQ(v.dst.addr, (MemRef{Scope::ub, 0, 1024}));
  EXPECT_EQ(v.src0.addr, (MemRef{Scope::ub, 0, 8}));
  EXPECT_EQ(v.src1.addr, (MemRef{Scope::ub, 0, 992}));
}

// ---------------------------------------------------------------------------------------------
// timing formulas (npu_model/timing.h), engine-side numbers

TEST(TimingFormulas, InstructionCost) {
  const auto hw = test_hw();
  // GM dma: engine side only: ceil(2048 / 64) = 32 cycles, MTE2 latency 100 (DRAM arbitration and
  // its 200-cycle latency are added by the simulator).
  auto c = npu::instruction_cost(hw, dma(DType::f16, ub(0), gm(0), {1024}));
  EXPECT_EQ(c.occupancy_cycles, 32u);
  EXPECT_EQ(c.latency_cycles, 100u);
  EXPECT_EQ(c.bytes_read, 2048u);
  EXPECT_EQ(c.bytes_written, 2048u);
  // mmad 2x3x4: 24 cycles, latency 8; reads A 2*3 and B 3*4 fractals of 512 B, writes 8 of 1 KiB.
  c = npu::instruction_cost(hw, mmad(l0c(0), l0a(0), l0b(0), 2, 3, 4));
  EXPECT_EQ(c.occupancy_cycles, 24u);
  EXPECT_EQ(c.latency_cycles, 8u);
  EXPECT_EQ(c.bytes_read, (6u + 12u) * 512);
  EXPECT_EQ(c.bytes_written, 8u * 1024);
  // Scalar instructions cost c_s, sync instructions nothing here.
  EXPECT_EQ(npu::instruction_cost(hw, li(1, 2)).occupancy_cycles, 1u);
  EXPECT_EQ(npu::instruction_cost(hw, set_flag(Pipe::mte2, Pipe::vector, 0)).occupancy_cycles, 0u);
  // An empty dma still occupies its pipe one cycle.
  EXPECT_EQ(npu::instruction_cost(hw, dma(DType::f16, ub(0), gm(0), {0})).occupancy_cycles, 1u);
  // vdup uses only dst: elem_stride 1 -> contiguous, ceil(64 * 4 / 256) = 1 per repeat.
  EXPECT_EQ(npu::instruction_cost(hw, vec(Opcode::vdup, DType::f32, vo(ub(0), 1, 64),
                                          vo(ub(0), 3, 0), vo(ub(0), 3, 0), 64, 5))
                .occupancy_cycles,
            5u);
  EXPECT_EQ(npu::dram_transfer_cycles(hw, 129), 2u);
}

// ---------------------------------------------------------------------------------------------
// interpreter

TEST(Interpreter, LoopComputesAddressesAndMovesData) {
  // Loads 4 rows of 64 f16 from GM, doubles them with vmuls in a loop over x2, stores them back to
  // GM at +4096. Checks every value.
  std::vector<uint8_t> gm(8192);
  for (int i = 0; i < 256; ++i) put_f16(gm, 2 * i, float(i) - 100);
  auto p =
      program({dma(DType::f16, ub(0), testutil::gm(0), {256}), li(1, 0),
               li(2, 0),  // x1 = iteration, x2 = byte offset
               vec(Opcode::vmuls, DType::f16, vo(ub(0, 2)), vo(ub(0, 2)), vo(ub(0)), 64, 1, 2.0f),
               addi(2, 2, 128), addi(1, 1, 1), blti(1, 4, 3),
               dma(DType::f16, testutil::gm(4096), ub(0), {256})},
              8192);
  const auto stats = isa::interpret(p, test_hw(), gm);
  EXPECT_EQ(stats.instructions, 3u + 4 * 4 + 1);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(get_f16(gm, 4096 + 2 * i), 2 * (float(i) - 100));
}

TEST(Interpreter, CoreBarrierMismatchAndLimits) {
  isa::Program p;
  p.gm_bytes = 64;
  p.cores = {{core_barrier(), core_barrier()}, {core_barrier()}};
  std::vector<uint8_t> gm;
  try {
    isa::interpret(p, test_hw(2), gm);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("core_barrier #1"), std::string::npos) << e.what();
  }
  // An endless loop stops at max_instructions.
  auto loop = program({jmp(0)}, 64);
  EXPECT_THROW(isa::interpret(loop, test_hw(), gm, 1000), Error);
  // Out-of-bounds data access names the core and instruction.
  auto oob = program({li(1, 1 << 30), dma(DType::f16, ub(0, 1), testutil::gm(0), {16})}, 64);
  try {
    isa::interpret(oob, test_hw(), gm);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("core 0 instruction 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessel
