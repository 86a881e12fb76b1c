// The SystemVerilog cube unit alone (simulator/rtl/cube.sv through RtlCube, no core): random
// fractals and corner values (-128 x -128 over deep K, u8 x u8 and u8 x i8 extremes, int32
// wrap-around), every result bit checked against isa/semantics' mmad and every completion cycle
// against npu::instruction_cost (issue cycle + occupancy + latency), alone and back to back.
#include <gtest/gtest.h>

#include <systemc>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compiler/support/error.h"
#include "isa/semantics.h"
#include "npu_model/hw_config.h"
#include "npu_model/timing.h"
#include "simulator/rtl/rtl_cube.h"
#include "tests/rtl/rtl_harness.h"

namespace tessel {
namespace {

using namespace rtl_test;
using isa::DType;
using isa::Scope;

// The verilated shapes are the presets' int8 fractal (16 x 16 x 16: no core.cube.int8, so the
// float fractal) and DaVinci's 16 x 32 x 16, both with the presets' 8 cycles; edge_1core's
// 8 x 16 x 16 is rejected naming both.
TEST(RtlCube, VerilatedShapesAreThePresetsAndDaVincis) {
  const npu::HwConfig hw = preset();
  const std::vector<rtl::RtlCubeShape> v = rtl::verilated_cube_shapes();
  ASSERT_EQ(v.size(), 2u);
  const npu::CubeFractal f = hw.core.cube.int8_fractal();
  EXPECT_EQ(v[0].m, f.m);
  EXPECT_EQ(v[0].k, f.k);
  EXPECT_EQ(v[0].n, f.n);
  EXPECT_EQ(v[0].latency_cycles, hw.core.cube.pipeline_latency_cycles);
  EXPECT_EQ(v[1].k, 32);
  EXPECT_NO_THROW(rtl::check_rtl_cube_config(hw, "npu_4core.yaml"));
  EXPECT_NO_THROW(rtl::check_rtl_cube_config(davinci(), "npu_4core.yaml + int8 16x32x16"));
  npu::HwConfig edge =
      npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/edge_1core.yaml");
  try {
    rtl::check_rtl_cube_config(edge, "edge_1core.yaml");
    FAIL() << "edge_1core's 8 x 16 x 16 cube is not a verilated one";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("int8 fractal 16 x 16 x 16 or 16 x 32 x 16 with "
                                         "pipeline_latency_cycles 8; this config has 8 x 16 x 16"),
              std::string::npos)
        << e.what();
  }
}

// One mmad at a time, random operands, every dtype mix, with and without accumulation. Each is
// issued at cycle 5 into a fresh run; npu_4core's int8 fractal is 16 x 16 x 16 and its
// pipeline_latency_cycles 8, so e.g. m1 = 2, k1 = 3, n1 = 2 completes at 5 + 2 * 3 * 2 + 8 = 25.
TEST(RtlCube, RandomFractalsBitExactAndCycleExact) {
  const npu::HwConfig hw = preset();
  std::mt19937 rng(14);
  const DType dts[] = {DType::i8, DType::u8};
  struct Shape {
    uint32_t m1, k1, n1;
  };
  const Shape shapes[] = {{1, 1, 1}, {2, 3, 2}, {1, 5, 3}, {3, 1, 1}, {4, 2, 3}, {2, 7, 1}};
  int checked = 0;
  for (const Shape& s : shapes) {
    for (int mix = 0; mix < 4; ++mix) {
      for (bool acc : {false, true}) {
        Memory m(hw);
        fill_random(m.l0a, rng);
        fill_random(m.l0b, rng);
        fill_random(m.l0c, rng);
        Memory ref(m);
        const std::vector<Issue> issues = {
            {mmad(s.m1, s.k1, s.n1, acc, dts[mix & 1], dts[mix >> 1], 512, 1024, 2048), 5}};
        const auto done = run_rtl(m, issues);
        run_reference(hw, ref, issues);
        ASSERT_EQ(done.size(), 1u);
        EXPECT_EQ(first_difference(m, ref), "")
            << s.m1 << "x" << s.k1 << "x" << s.n1 << " mix " << mix << " acc " << acc;
        EXPECT_EQ(done[0].accepted_cycle, 5u);
        EXPECT_EQ(done[0].completion_cycle, 5 + uint64_t{s.m1} * s.k1 * s.n1 + 8);
        EXPECT_EQ(done[0].completion_cycle - done[0].issue_cycle, cost_cycles(hw, issues[0].args));
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 6 * 4 * 2);
}

// Back to back, as the cube pipe issues them: each mmad at its predecessor's issue cycle + its
// occupancy (m1 k1 n1), into disjoint C blocks, so they overlap in the pipeline. Every one must be
// taken in its issue cycle (no stall) and complete at issue + m1 k1 n1 + 8.
TEST(RtlCube, BackToBackOverlapInThePipeline) {
  const npu::HwConfig hw = preset();
  std::mt19937 rng(7);
  Memory m(hw);
  fill_random(m.l0a, rng);
  fill_random(m.l0b, rng);
  fill_random(m.l0c, rng);
  Memory ref(m);
  std::vector<Issue> issues;
  uint64_t t = 3;
  int64_t c = 0;
  std::uniform_int_distribution<uint32_t> dim(1, 3);
  for (int i = 0; i < 40; ++i) {
    const uint32_t m1 = dim(rng), k1 = dim(rng), n1 = dim(rng);
    const isa::MmadArgs a = mmad(m1, k1, n1, i % 3 == 0, i % 2 ? DType::u8 : DType::i8,
                                 i % 5 ? DType::i8 : DType::u8, 256 * (i % 7), 256 * (i % 5), c);
    issues.push_back({a, t});
    t += uint64_t{m1} * k1 * n1;
    c += int64_t{m1} * n1 * 16 * 16 * 4;
  }
  ASSERT_LE(c, static_cast<int64_t>(m.l0c.size()));
  const auto done = run_rtl(m, issues);
  run_reference(hw, ref, issues);
  ASSERT_EQ(done.size(), issues.size());
  EXPECT_EQ(first_difference(m, ref), "");
  for (size_t i = 0; i < issues.size(); ++i) {
    EXPECT_EQ(done[i].accepted_cycle, issues[i].cycle) << i;
    EXPECT_EQ(done[i].completion_cycle, issues[i].cycle + cost_cycles(hw, issues[i].args)) << i;
  }
}

// A command issued while the RTL is busy waits: the RTL takes it when its predecessor's last step
// has issued, and the completion moves by the wait (the cycles the formula also charges: the pipe
// is occupied). mmad 0 (2 x 2 x 2 = 8 steps) at cycle 1, mmad 1 (1 step) at cycle 2: taken at
// 1 + 8 = 9, complete at 9 + 1 + 8 = 18.
TEST(RtlCube, BusyCubeQueuesTheNextCommand) {
  const npu::HwConfig hw = preset();
  std::mt19937 rng(3);
  Memory m(hw);
  fill_random(m.l0a, rng);
  fill_random(m.l0b, rng);
  Memory ref(m);
  const std::vector<Issue> issues = {
      {mmad(2, 2, 2, false, DType::i8, DType::i8, 0, 0, 0), 1},
      {mmad(1, 1, 1, false, DType::i8, DType::i8, 0, 0, 4 * 1024 * 4), 2}};
  const auto done = run_rtl(m, issues);
  run_reference(hw, ref, issues);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(first_difference(m, ref), "");
  EXPECT_EQ(done[0].completion_cycle, 1u + 8 + 8);
  EXPECT_EQ(done[1].accepted_cycle, 9u);
  EXPECT_EQ(done[1].completion_cycle, 18u);
}

// -128 x -128 over deep K: every product is 2^14, one 16-deep fractal dot product 2^18, an
// mmad of k1 = 64 fractals 2^24 per element. 130 of them accumulate into the same 1 x 1 C block
// (each issued when its predecessor completes: the RAW hazard on C), 130 * 2^24 = 2^31 + 2^25,
// which wraps modulo 2^32 to -2^31 + 2^25 = -2,113,929,216 (isa/semantics: int32, two's
// complement). Each takes 64 + 8 = 72 cycles.
TEST(RtlCube, MinusOneTwentyEightSquaredOverDeepKWraps) {
  const npu::HwConfig hw = preset();
  Memory m(hw);
  std::fill(m.l0a.begin(), m.l0a.end(), uint8_t{0x80});  // -128 as i8
  std::fill(m.l0b.begin(), m.l0b.end(), uint8_t{0x80});
  Memory ref(m);
  std::vector<Issue> issues;
  for (int i = 0; i < 130; ++i)
    issues.push_back({mmad(1, 64, 1, i > 0, DType::i8, DType::i8, 0, 0, 0), 1 + 72 * uint64_t(i)});
  const auto done = run_rtl(m, issues);
  run_reference(hw, ref, issues);
  ASSERT_EQ(done.size(), 130u);
  EXPECT_EQ(first_difference(m, ref), "");
  int32_t v;
  std::memcpy(&v, m.l0c.data(), 4);
  EXPECT_EQ(v, -2113929216);
  std::memcpy(&v, m.l0c.data() + (16 * 16 - 1) * 4, 4);
  EXPECT_EQ(v, -2113929216);
  for (size_t i = 0; i < done.size(); ++i)
    EXPECT_EQ(done[i].completion_cycle - done[i].issue_cycle, 72u) << i;
}

// The extremes of each mix and int32 wrap from a preloaded C: u8 255 x u8 255 = 65,025 (x 16 per
// fractal, x k1 = 4: 4,161,600), u8 255 x i8 -128 = -32,640 (x 64: -2,088,960), i8 -128 x u8 255
// likewise; C preloaded with INT32_MAX (accumulate) wraps past it, INT32_MIN below it.
TEST(RtlCube, ExtremesOfEveryMixAndAccumulatorWrap) {
  const npu::HwConfig hw = preset();
  struct Case {
    uint8_t a, b;
    DType at, bt;
    int32_t c0;
    int32_t expect;
  };
  const int32_t max = std::numeric_limits<int32_t>::max(),
                min = std::numeric_limits<int32_t>::min();
  const Case cases[] = {
      {255, 255, DType::u8, DType::u8, 0, 4161600},
      {255, 0x80, DType::u8, DType::i8, 0, -2088960},
      {0x80, 255, DType::i8, DType::u8, 0, -2088960},
      {0x7f, 0x80, DType::i8, DType::i8, 0, -127 * 128 * 64},
      {255, 255, DType::u8, DType::u8, max, static_cast<int32_t>(uint32_t(max) + 4161600u)},
      {255, 0x80, DType::u8, DType::i8, min, static_cast<int32_t>(uint32_t(min) - 2088960u)},
  };
  for (const Case& k : cases) {
    Memory m(hw);
    std::fill(m.l0a.begin(), m.l0a.end(), k.a);
    std::fill(m.l0b.begin(), m.l0b.end(), k.b);
    for (size_t i = 0; i < 2 * 16 * 16; ++i) std::memcpy(&m.l0c[i * 4], &k.c0, 4);
    Memory ref(m);
    const std::vector<Issue> issues = {{mmad(2, 4, 1, true, k.at, k.bt, 0, 0, 0), 2}};
    const auto done = run_rtl(m, issues);
    run_reference(hw, ref, issues);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(first_difference(m, ref), "");
    for (size_t i = 0; i < 2 * 16 * 16; ++i) {
      int32_t v;
      std::memcpy(&v, &m.l0c[i * 4], 4);
      ASSERT_EQ(v, k.expect) << i;
    }
    EXPECT_EQ(done[0].completion_cycle, 2u + 8 + 8);  // 2 x 4 x 1 steps + 8
  }
}

// Empty sizes: k1 = 0 writes zeros into (or, accumulating, keeps) each of the m1 x n1 C blocks,
// one block per cycle: 2 x 3 = 6 cycles + 8 (instruction_cost charges m1 max(k1, 1) n1,
// docs/isa.md); m1 = 0 writes nothing in 1 cycle + 8.
TEST(RtlCube, EmptySizes) {
  const npu::HwConfig hw = preset();
  std::mt19937 rng(5);
  for (bool acc : {false, true}) {
    Memory m(hw);
    fill_random(m.l0a, rng);
    fill_random(m.l0b, rng);
    fill_random(m.l0c, rng);
    Memory ref(m);
    const std::vector<Issue> issues = {{mmad(2, 0, 3, acc, DType::i8, DType::u8, 0, 0, 0), 1},
                                       {mmad(0, 4, 3, acc, DType::i8, DType::u8, 0, 0, 65536), 7}};
    const auto done = run_rtl(m, issues);
    run_reference(hw, ref, issues);
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(first_difference(m, ref), "");
    EXPECT_EQ(done[0].completion_cycle, 1u + 6 + 8);
    EXPECT_EQ(done[0].completion_cycle - 1, cost_cycles(hw, issues[0].args));
    EXPECT_EQ(done[1].accepted_cycle, 7u);
    EXPECT_EQ(done[1].completion_cycle, 7u + 1 + 8);
    EXPECT_EQ(done[1].completion_cycle - 7, cost_cycles(hw, issues[1].args));
  }
}

// The clock is gated: a run clocks the cycles a command is pending or in flight only. One mmad of
// 2 x 2 x 2 issued at cycle 100 is sampled by the edge at 101 (the end of its issue cycle); done
// is high in cycle 100 + 8 + 8 - 1 = 115, so the edges at 101..115 (15) are clocked, not the 100
// idle cycles before them.
TEST(RtlCube, ClockRunsOnlyWhileBusy) {
  const npu::HwConfig hw = preset();
  Memory m(hw);
  uint64_t edges = 0;
  const auto done =
      run_rtl(m, {{mmad(2, 2, 2, false, DType::i8, DType::i8, 0, 0, 0), 100}}, &edges);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].completion_cycle, 116u);
  EXPECT_EQ(edges, 15u);
}

}  // namespace
}  // namespace tessel
