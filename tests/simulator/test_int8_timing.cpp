// Cycle-exact test of a small int8 program on the SystemC model, derived by hand from
// testutil::test_hw() (with the DaVinci int8 fractal core.cube.int8 = 16 x 32 x 16) and
// docs/isa.md, "Timing": c_s = 1; MTE2/MTE3 64 B/cycle, latency 100; DRAM 128 B/cycle, latency
// 200; MTE1 256 B/cycle, latency 4; cube latency 8; FIX 256 B/cycle, latency 4. The program
// computes one 16 x 16 tile of a QLinearMatMul-like product: A u8 [16][64] x B i8 [64][16] on the
// int8 cube (m1 = 1, k1 = 2, n1 = 1) and fix requantises per channel into i8; the values are
// checked against a naive integer loop and isa::fix_requantize (itself checked bit for bit against
// ONNX Runtime's MlasRequantizeOutput in tests/isa/int8_cube_test.cpp).
#include <gtest/gtest.h>

#include <random>

#include "isa/semantics.h"
#include "simulator/simulator.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;

TEST(Int8Timing, QuantisedTileMmadFixIsCycleExact) {
  npu::HwConfig hw = test_hw();
  hw.core.cube.int8 = {16, 32, 16};
  const int M = 16, K = 64, N = 16;
  // GM: table (16 entries of f32 scale, i32 bias) at 0, A at 4096, B at 8192, output at 12288.
  std::vector<uint8_t> table(N * 8), A(M * K), B(K * N);
  std::mt19937 rng(21);
  std::uniform_int_distribution<int> byte(0, 255), bias(-2000, 2000);
  std::vector<float> scale(N);
  std::vector<int32_t> bias_v(N);
  for (int j = 0; j < N; ++j) {
    scale[j] = 1.0f / (2000.0f + 37.0f * j);  // not a power of two: inexact fp32 products
    bias_v[j] = bias(rng);
    std::memcpy(&table[j * 8], &scale[j], 4);
    std::memcpy(&table[j * 8 + 4], &bias_v[j], 4);
  }
  for (auto& v : A) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : B) v = static_cast<uint8_t>(byte(rng));

  auto wait = [](Pipe s, Pipe d) { return wait_flag(s, d, 0); };
  auto set = [](Pipe s, Pipe d) { return set_flag(s, d, 0); };
  isa::Instruction mm = mmad(l0c(0), l0a(0), l0b(0), 1, 2, 1);
  std::get<isa::MmadArgs>(mm.args).a_dtype = DType::u8;
  std::get<isa::MmadArgs>(mm.args).b_dtype = DType::i8;
  isa::Instruction fx = fix(DType::i8, ub(0), l0c(0), M, N, N);
  auto& f = std::get<isa::FixArgs>(fx.args);
  f.per_channel = true, f.quant = ub(4096), f.zero_point = 5;
  // Cycle by cycle (instruction i is issued at cycle i, enters its queue at i + 1):
  //  0 dma table 128 B -> ub: s 1; DRAM 1..2 (ceil(128/128) = 1); occupancy max(ceil(128/64) =
  //    2, 2 - 1) = 2, mte2 free 3; completes 1 + 2 + 100 + 200 = 303.
  //  1 dma A 1024 B -> l1: s max(2, 3) = 3; DRAM 3..11; occupancy max(16, 8) = 16, free 19;
  //    completes 3 + 16 + 300 = 319.
  //  2 dma B 1024 B -> l1: s 19; DRAM 19..27; free 35; completes 19 + 16 + 300 = 335.
  //  3 set_flag mte2->mte1: s 35, sets at max(35, 335) = 335.
  //  4 wait_flag (mte1): released at 335.
  //  5 load2d.u8 A -> L0A: 16 x 64 in 16 x 32 fractals = 1024 B, ceil(1024/256) = 4; s 335,
  //    free 339, completes 339 + 4 = 343.
  //  6 load2d.i8 B -> L0B: 64 x 16 in 32 x 16 fractals = 1024 B: s 339, free 343, completes 347.
  //  7 set_flag mte1->cube: s 343, sets at 347.   8 wait_flag (cube): released at 347.
  //  9 mmad u8 x i8, 1 x 2 x 1 int8 fractals: occupancy 2, s 347, free 349, completes 357.
  // 10 set_flag cube->fix: sets at 357.   11 wait_flag (fix): released at 357.
  // 12 fix.i8 16 x 16: R = 16 * 16 * 4 (int32) = 1024 B, ceil(1024/256) = 4: s 357, free 361,
  //    completes 365.
  // 13 set_flag fix->mte3: sets at 365.   14 wait_flag (mte3): released at 365.
  // 15 dma ub -> gm 256 B: s 365; DRAM 365..367; occupancy max(ceil(256/64) = 4, 2) = 4;
  //    completes 365 + 4 + 300 = 669.
  isa::Program p =
      program({dma(DType::i32, ub(4096), gm(0), {32}), dma(DType::u8, l1(0), gm(4096), {1024}),
               dma(DType::i8, l1(4096), gm(8192), {1024}), set(Pipe::mte2, Pipe::mte1),
               wait(Pipe::mte2, Pipe::mte1), load2d(DType::u8, l0a(0), l1(0), M, K, K),
               load2d(DType::i8, l0b(0), l1(4096), K, N, N), set(Pipe::mte1, Pipe::cube),
               wait(Pipe::mte1, Pipe::cube), mm, set(Pipe::cube, Pipe::fix),
               wait(Pipe::cube, Pipe::fix), fx, set(Pipe::fix, Pipe::mte3),
               wait(Pipe::fix, Pipe::mte3), dma(DType::i8, gm(12288), ub(0), {256})},
              16384);
  sim::Simulator s(hw);
  s.load(p);
  s.write_gm(0, table.data(), table.size());
  s.write_gm(4096, A.data(), A.size());
  s.write_gm(8192, B.data(), B.size());
  const sim::SimResult r = s.run();
  EXPECT_EQ(r.total_cycles, 669u);
  const auto& pipes = r.cores[0].pipes;
  EXPECT_EQ(pipes[int(Pipe::mte2)].busy_cycles, 2u + 16 + 16);
  EXPECT_EQ(pipes[int(Pipe::mte1)].busy_cycles, 8u);
  EXPECT_EQ(pipes[int(Pipe::cube)].busy_cycles, 2u);
  EXPECT_EQ(pipes[int(Pipe::fix)].busy_cycles, 4u);
  EXPECT_EQ(pipes[int(Pipe::mte3)].busy_cycles, 4u);
  // DRAM bytes: the three loads (128 + 1024 + 1024) and the 256-byte int8 result (an fp16 result
  // would be 512).
  EXPECT_EQ(r.dram_read_bytes, 2176u);
  EXPECT_EQ(r.dram_write_bytes, 256u);
  // Scratchpad traffic: fix reads 1024 L0C bytes and the 128-byte table from UB.
  EXPECT_EQ(r.cores[0].bytes_read[int(Scope::l0c)], 1024u);
  std::vector<uint8_t> out(M * N);
  s.read_gm(12288, out.data(), out.size());
  int saturated = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int32_t acc = 0;
      for (int k = 0; k < K; ++k)
        acc += int32_t{A[i * K + k]} * int32_t{static_cast<int8_t>(B[k * N + j])};
      const int32_t q = isa::fix_requantize(acc, bias_v[j], scale[j], 5, DType::i8, false);
      saturated += q == 127 || q == -128;
      EXPECT_EQ(static_cast<int8_t>(out[i * N + j]), q) << i << "," << j;
    }
  EXPECT_LT(saturated, M * N / 2);  // the scales keep most results inside the range
}

}  // namespace
}  // namespace tessel
