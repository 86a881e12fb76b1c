// Cycle-exact tests of dma_mc (docs/isa.md, dma_mc and Timing, "Multicast"): one GM read delivered
// to a set of cores vs one unicast dma per core. Numbers from testutil::test_hw() with the DRAM
// slowed to 16 B/cycle, so the channel bounds every load: a lone dma of 2048 B at s = 1 is served
// 1..129, occupancy max(ceil(2048/64) = 32, 128) = 128, completes 1 + 128 + MTE2 100 + DRAM 200 =
// 429.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "simulator/simulator.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;

npu::HwConfig slow_dram_hw(int cores) {
  npu::HwConfig hw = test_hw(cores);
  hw.dram.bytes_per_cycle = 16;
  return hw;
}

Instruction dma_mc(DType t, MemRef dst, MemRef src, std::vector<uint32_t> extent, uint32_t cores) {
  isa::DmaArgs d = dma_args(t, dst, src, std::move(extent));
  d.cores = cores;
  Instruction in = dma(d);
  in.op = Opcode::dma_mc;
  return in;
}

sim::SimResult simulate(const isa::Program& p, const npu::HwConfig& hw) {
  sim::Simulator s(hw, sim::SimOptions{});
  s.load(p);
  return s.run();
}

isa::Program on_cores(int cores, const std::vector<Instruction>& code) {
  isa::Program p = program(code);
  p.cores.assign(static_cast<size_t>(cores), code);
  return p;
}

TEST(Multicast, FourCoresReadOnceVersusFourUnicastReads) {
  // dma_mc to the set of 4: core 0..3 all start at 1. The first is the set's read: DRAM 1..129,
  // occupancy 128, completes 429. The other three take it: dram_done 129, occupancy
  // max(32, 129 - 1) = 128, latency 100 + 200: complete 429 too. DRAM read 2048 B.
  const auto mc =
      simulate(on_cores(4, {dma_mc(DType::f16, l1(0), gm(4096), {1024}, 4)}), slow_dram_hw(4));
  EXPECT_EQ(mc.total_cycles, 429u);
  EXPECT_EQ(mc.dram_read_bytes, 2048u);
  EXPECT_EQ(mc.multicast.requests, 4u);
  EXPECT_EQ(mc.multicast.received, 3u);
  EXPECT_EQ(mc.multicast.saved_bytes, 3u * 2048);
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(mc.cores[c].finish_cycle, 429u) << c;
    EXPECT_EQ(mc.cores[c].pipes[int(Pipe::mte2)].busy_cycles, 128u) << c;
  }
  // Four unicast dmas queue on the channel: 1..129, ..257, ..385, ..513; the last core's
  // occupancy is 512: it completes 1 + 512 + 300 = 813. DRAM read 4 x 2048 B.
  const auto uc =
      simulate(on_cores(4, {dma(DType::f16, l1(0), gm(4096), {1024})}), slow_dram_hw(4));
  EXPECT_EQ(uc.total_cycles, 813u);
  EXPECT_EQ(uc.dram_read_bytes, 8192u);
  EXPECT_EQ(uc.multicast.requests, 0u);
}

TEST(Multicast, TwoSetsOfTwoReadTwice) {
  // dma_mc with cores = 2 on 4 cores: sets {0, 1} and {2, 3}, one read each: DRAM 1..129 and
  // 129..257. Set {2, 3} (or {0, 1}, whichever the channel serves second) has dram_done 257:
  // occupancy 256, completes 1 + 256 + 300 = 557. DRAM read 2 x 2048 B.
  const auto r =
      simulate(on_cores(4, {dma_mc(DType::f16, ub(0), gm(0), {1024}, 2)}), slow_dram_hw(4));
  EXPECT_EQ(r.total_cycles, 557u);
  EXPECT_EQ(r.dram_read_bytes, 4096u);
  EXPECT_EQ(r.multicast.received, 2u);
}

TEST(Multicast, DifferentOperandsDoNotCombine) {
  // Core 1 reads another GM address than core 0: two reads (DRAM 1..129, 129..257), nothing
  // received; the later completes 1 + 256 + 300 = 557.
  isa::Program p = program({});
  p.cores = {{dma_mc(DType::f16, l1(0), gm(0), {1024}, 2)},
             {dma_mc(DType::f16, l1(0), gm(8192), {1024}, 2)}};
  const auto r = simulate(p, slow_dram_hw(2));
  EXPECT_EQ(r.total_cycles, 557u);
  EXPECT_EQ(r.multicast.received, 0u);
  EXPECT_EQ(r.dram_read_bytes, 4096u);
}

TEST(Multicast, ALateMemberTakesTheReadAfterItArrived) {
  // Core 1 first runs a 2048-byte unicast load on its MTE2 (DRAM channel time shared with core 0's
  // multicast read: core 0's dma_mc 1..129 on the channel, core 1's dma 129..257), then its
  // dma_mc at s = 257 (pipe free after occupancy 256): it takes core 0's read (dram_done 129 < s):
  // occupancy ceil(2048/64) = 32, completes 257 + 32 + 300 = 589. Core 0: 429. DRAM 4096 B.
  isa::Program p = program({});
  p.cores = {
      {dma_mc(DType::f16, l1(0), gm(0), {1024}, 2)},
      {dma(DType::f16, ub(0), gm(65536), {1024}), dma_mc(DType::f16, l1(0), gm(0), {1024}, 2)}};
  const auto r = simulate(p, slow_dram_hw(2));
  EXPECT_EQ(r.cores[0].finish_cycle, 429u);
  EXPECT_EQ(r.cores[1].finish_cycle, 589u);
  EXPECT_EQ(r.multicast.received, 1u);
  EXPECT_EQ(r.dram_read_bytes, 4096u);
}

TEST(Multicast, ACoreBarrierDropsUntakenReads) {
  // Core 0 multicasts before a core barrier, core 1 issues the same dma_mc after it: the read was
  // dropped at the barrier, so core 1 reads again (DRAM 2 x 2048 B, nothing received).
  isa::Program p = program({});
  p.cores = {{dma_mc(DType::f16, l1(0), gm(0), {1024}, 2), barrier(), core_barrier()},
             {core_barrier(), dma_mc(DType::f16, l1(0), gm(0), {1024}, 2)}};
  const auto r = simulate(p, slow_dram_hw(2));
  EXPECT_EQ(r.multicast.received, 0u);
  EXPECT_EQ(r.dram_read_bytes, 4096u);
}

TEST(Multicast, EveryMemberGetsTheData) {
  // Functional: 2 cores multicast 8 f32 from GM into UB, then each stores them to its own GM
  // region; both regions hold the values.
  const std::vector<Instruction> code0 = {
      dma_mc(DType::f32, ub(0), gm(0), {8}, 2), set_flag(Pipe::mte2, Pipe::mte3, 0),
      wait_flag(Pipe::mte2, Pipe::mte3, 0), dma(DType::f32, gm(1024), ub(0), {8})};
  std::vector<Instruction> code1 = code0;
  code1[3] = dma(DType::f32, gm(2048), ub(0), {8});
  isa::Program p = program({});
  p.cores = {code0, code1};
  sim::Simulator s(slow_dram_hw(2), sim::SimOptions{});
  s.load(p);
  const float v[8] = {1, -2, 3.5f, 4, 5, 6, 7, -8.25f};
  s.write_gm(0, v, sizeof v);
  const auto r = s.run();
  EXPECT_EQ(r.multicast.received, 1u);
  for (uint64_t at : {1024u, 2048u}) {
    float out[8] = {};
    s.read_gm(at, out, sizeof out);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], v[i]) << at << " " << i;
  }
}

}  // namespace
}  // namespace tessel
