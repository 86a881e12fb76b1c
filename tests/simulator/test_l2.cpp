// Cycle-exact tests of the shared L2 (memory.l2; simulator/l2.h, docs/isa.md, Timing, "L2").
// Every number is derived from testutil::test_hw() with the DRAM slowed to 16 B/cycle (so that
// DRAM, not MTE2/MTE3 at 64 B/cycle, bounds a miss) and l2_hw()'s L2:
//   64 KiB, 128-byte lines, 4 ways (128 sets), 4 banks of 32 B/cycle, latency 20, write_back.
// A lone dma is dispatched at 0, queued at 1 and starts at s = 1. A request's lines on bank b keep
// it busy ceil(bytes_b / 32) cycles; misses go to DRAM as one read per run of consecutive lines
// (ceil(bytes / 16) cycles on the channel); the dma's occupancy is max(ceil(B / 64), done - s);
// its completion s + occupancy + MTE 100 + L2 20 (+ DRAM 200 when it waited on DRAM).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "npu_model/hw_config.h"
#include "simulator/simulator.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;

npu::HwConfig l2_hw(int cores = 1, npu::L2WritePolicy policy = npu::L2WritePolicy::write_back) {
  npu::HwConfig hw = test_hw(cores);
  hw.dram.bytes_per_cycle = 16;
  hw.l2.capacity_bytes = 64 << 10;
  hw.l2.line_bytes = 128;
  hw.l2.ways = 4;
  hw.l2.banks = 4;
  hw.l2.bytes_per_cycle = 32;
  hw.l2.latency_cycles = 20;
  hw.l2.write_policy = policy;
  return hw;
}

sim::SimResult simulate(const isa::Program& p, const npu::HwConfig& hw) {
  sim::Simulator s(hw, sim::SimOptions{});
  s.load(p);
  return s.run();
}

uint64_t busy(const sim::SimResult& r, Pipe p, int core = 0) {
  return r.cores[core].pipes[int(p)].busy_cycles;
}

isa::Program cores_program(int cores, const std::vector<Instruction>& code) {
  isa::Program p = program(code);
  p.cores.assign(static_cast<size_t>(cores), code);
  return p;
}

TEST(L2, MissFillsTheLinesFromDram) {
  // 1024 f16 = 2048 B from GM 4096: lines 32..47 (16 lines), all misses. Banks: 4 lines = 512 B
  // each, ceil(512/32) = 16 cycles -> 17. DRAM: one 2048-byte fill from 1, ceil(2048/16) = 128
  // cycles -> 129. done 129; occupancy max(32, 128) = 128; completes 1 + 128 + 100 + 20 + 200 =
  // 449 (without an L2: 1 + 128 + 300 = 429).
  const auto p = program({dma(DType::f16, ub(0), gm(4096), {1024})});
  const auto r = simulate(p, l2_hw());
  EXPECT_EQ(r.total_cycles, 449u);
  EXPECT_EQ(busy(r, Pipe::mte2), 128u);
  EXPECT_EQ(r.l2.requests, 1u);
  EXPECT_EQ(r.l2.hit_requests, 0u);
  EXPECT_EQ(r.l2.read_miss_lines, 16u);
  EXPECT_EQ(r.l2.read_hit_lines, 0u);
  EXPECT_EQ(r.l2.read_bytes, 2048u);
  EXPECT_EQ(r.l2.fill_bytes, 2048u);
  EXPECT_EQ(r.dram_read_bytes, 2048u);
  npu::HwConfig no_l2 = l2_hw();
  no_l2.l2 = npu::L2Config{};
  EXPECT_EQ(simulate(p, no_l2).total_cycles, 429u);
}

TEST(L2, SecondReadOfTheSameLinesHits) {
  // Two loads of the same 2048 B on MTE2. The first as in MissFillsTheLinesFromDram (pipe free at
  // 129, completes 449). The second starts at 129; its 16 lines hit: banks free since 17, busy
  // 129..145; done 145; occupancy max(32, 16) = 32; completes 129 + 32 + 100 + 20 = 281. Total
  // 449; MTE2 busy 128 + 32 = 160; DRAM read 2048 B (once).
  const auto r = simulate(program({dma(DType::f16, ub(0), gm(4096), {1024}),
                                   dma(DType::f16, ub(8192), gm(4096), {1024})}),
                          l2_hw());
  EXPECT_EQ(r.total_cycles, 449u);
  EXPECT_EQ(busy(r, Pipe::mte2), 160u);
  EXPECT_EQ(r.l2.requests, 2u);
  EXPECT_EQ(r.l2.hit_requests, 1u);
  EXPECT_EQ(r.l2.read_hit_lines, 16u);
  EXPECT_EQ(r.l2.read_miss_lines, 16u);
  EXPECT_EQ(r.dram_read_bytes, 2048u);
  // A second read of other lines misses: starts 129, DRAM 129..257, occupancy 128, completes
  // 129 + 128 + 320 = 577; DRAM read 4096 B.
  const auto m = simulate(program({dma(DType::f16, ub(0), gm(4096), {1024}),
                                   dma(DType::f16, ub(8192), gm(65536), {1024})}),
                          l2_hw());
  EXPECT_EQ(m.total_cycles, 577u);
  EXPECT_EQ(busy(m, Pipe::mte2), 256u);
  EXPECT_EQ(m.l2.hit_requests, 0u);
  EXPECT_EQ(m.l2.read_miss_lines, 32u);
  EXPECT_EQ(m.dram_read_bytes, 4096u);
}

TEST(L2, FourCoresReadingTheSameWeightsShareOneFill) {
  // Four cores load the same 2048 B at s = 1. The first request misses (DRAM fill 1..129, its
  // lines ready at 129); the other three hit lines whose fill is in flight, so they wait for 129
  // (their banks: 17..33, 33..49, 49..65). All occupancies 128; the leader completes
  // 1 + 128 + 320 = 449, the others 1 + 128 + 120 = 249. DRAM read 2048 B.
  const auto p = cores_program(4, {dma(DType::f16, ub(0), gm(4096), {1024})});
  const auto r = simulate(p, l2_hw(4));
  EXPECT_EQ(r.total_cycles, 449u);
  EXPECT_EQ(r.dram_read_bytes, 2048u);
  EXPECT_EQ(r.l2.hit_requests, 3u);
  EXPECT_EQ(r.l2.read_hit_lines, 48u);
  uint64_t finish = 0;
  for (const auto& c : r.cores) finish += c.finish_cycle;
  EXPECT_EQ(finish, 449u + 3 * 249u);
  // Without an L2 the four reads queue on the channel: 1..129, ..257, ..385, ..513; the last
  // core's occupancy is 512, it completes 1 + 512 + 300 = 813; DRAM read 4 x 2048 B.
  npu::HwConfig no_l2 = l2_hw(4);
  no_l2.l2 = npu::L2Config{};
  const auto u = simulate(p, no_l2);
  EXPECT_EQ(u.total_cycles, 813u);
  EXPECT_EQ(u.dram_read_bytes, 8192u);
}

TEST(L2, WriteBackKeepsWritesOnChip) {
  // 512 f32 = 2048 B UB -> GM 0 on MTE3: 16 lines allocated dirty without a fill; banks 1..17;
  // done 17; occupancy max(32, 16) = 32; completes 1 + 32 + 100 + 20 = 153. DRAM moves nothing.
  const auto r = simulate(program({dma(DType::f32, gm(0), ub(0), {512})}), l2_hw());
  EXPECT_EQ(r.total_cycles, 153u);
  EXPECT_EQ(r.dram_write_bytes, 0u);
  EXPECT_EQ(r.l2.write_miss_lines, 16u);
  EXPECT_EQ(r.l2.write_bytes, 2048u);
  EXPECT_EQ(r.l2.dirty_bytes_at_end, 2048u);
}

TEST(L2, WriteThroughForwardsTheWrite) {
  // The same store, write_through: DRAM 1..129 (2048 / 16); occupancy 128; completes 1 + 128 +
  // 100 + 20 + 200 = 449. The lines are not allocated (write misses), nothing stays dirty.
  const auto r = simulate(program({dma(DType::f32, gm(0), ub(0), {512})}),
                          l2_hw(1, npu::L2WritePolicy::write_through));
  EXPECT_EQ(r.total_cycles, 449u);
  EXPECT_EQ(r.dram_write_bytes, 2048u);
  EXPECT_EQ(r.l2.write_miss_lines, 16u);
  EXPECT_EQ(r.l2.dirty_bytes_at_end, 0u);
}

TEST(L2, EvictingDirtyLinesWritesThemBack) {
  // A 512-byte L2: one set of 4 ways. Store 512 B to GM 0 (lines 0..3 dirty; banks 1..5;
  // occupancy max(8, 4) = 8; completes 1 + 8 + 120 = 129), flag MTE3 -> MTE2 (set at 129), then
  // load 512 B from GM 4096 (lines 32..35) at 129: four misses evicting the four dirty lines.
  // Fill 512 B on DRAM 129..161, write-back 512 B after it 161..193 (posted). done 161;
  // occupancy max(8, 32) = 32; completes 129 + 32 + 100 + 20 + 200 = 481.
  npu::HwConfig hw = l2_hw();
  hw.l2.capacity_bytes = 512;
  const auto r = simulate(
      program({dma(DType::f32, gm(0), ub(0), {128}), set_flag(Pipe::mte3, Pipe::mte2, 0),
               wait_flag(Pipe::mte3, Pipe::mte2, 0), dma(DType::f32, ub(4096), gm(4096), {128})}),
      hw);
  EXPECT_EQ(r.total_cycles, 481u);
  EXPECT_EQ(r.dram_read_bytes, 512u);
  EXPECT_EQ(r.dram_write_bytes, 512u);
  EXPECT_EQ(r.l2.writeback_bytes, 512u);
  EXPECT_EQ(r.l2.dirty_bytes_at_end, 0u);
}

TEST(L2, DataPassesThroughUnchanged) {
  // Functional: core 0 copies GM 1024 -> UB -> GM 256 (a write_back store: held dirty in L2),
  // then after a core barrier core 1 copies GM 256 -> UB -> GM 512; GM 512 holds the values.
  const std::vector<Instruction> copy0 = {dma(DType::f32, ub(0), gm(1024), {4}),
                                          set_flag(Pipe::mte2, Pipe::mte3, 0),
                                          wait_flag(Pipe::mte2, Pipe::mte3, 0),
                                          dma(DType::f32, gm(256), ub(0), {4}),
                                          barrier(),
                                          core_barrier()};
  const std::vector<Instruction> copy1 = {
      core_barrier(), dma(DType::f32, ub(64), gm(256), {4}), set_flag(Pipe::mte2, Pipe::mte3, 0),
      wait_flag(Pipe::mte2, Pipe::mte3, 0), dma(DType::f32, gm(512), ub(64), {4})};
  isa::Program p = program({});
  p.cores = {copy0, copy1};
  sim::Simulator s(l2_hw(2), sim::SimOptions{});
  s.load(p);
  const float v[4] = {1.5f, -2.0f, 3.25f, 8.0f};
  s.write_gm(1024, v, sizeof v);
  const auto r = s.run();
  float out[4] = {};
  s.read_gm(512, out, sizeof out);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], v[i]) << i;
  EXPECT_EQ(r.l2.requests, 4u);
  EXPECT_EQ(r.l2.read_hit_lines, 1u);   // core 1's load of the line core 0 wrote
  EXPECT_EQ(r.l2.read_miss_lines, 1u);  // core 0's load of GM 1024
  EXPECT_EQ(r.l2.write_miss_lines, 2u);
}

}  // namespace
}  // namespace tessel
