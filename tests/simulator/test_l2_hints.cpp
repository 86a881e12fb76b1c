// Cycle-exact tests of the L2 placement hints l2_prefetch and l2_discard (docs/isa.md, Timing, "L2
// hints"; simulator/l2.h). The L2 is test_l2.cpp's: 64 KiB, 128-byte lines, 4 ways, 4 banks of
// 32 B/cycle, latency 20, write_back, on testutil::test_hw() (MTE2/MTE3 64 B/cycle latency 100,
// DRAM latency 200) with the DRAM at `dram` B/cycle. A hint occupies MTE2 1 cycle, latency 0.
// Instructions are dispatched one per cycle from 0 and queued a cycle later: the k-th MTE2
// instruction starts at max(k + 1, the pipe's free cycle). A dma's occupancy is
// max(ceil(B / 64), done - s); its completion s + occupancy + 100 + 20 (+ 200 when it waited on
// DRAM). A prefetch chunk (2048 B) is issued at c = max(dram_free, its issue) when c is before the
// arriving request, its lines ready at its DRAM end + 200.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "npu_model/hw_config.h"
#include "simulator/simulator.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;

npu::HwConfig hint_hw(int dram_bytes_per_cycle, int cores = 1) {
  npu::HwConfig hw = test_hw(cores);
  hw.dram.bytes_per_cycle = dram_bytes_per_cycle;
  hw.l2.capacity_bytes = 64 << 10;
  hw.l2.line_bytes = 128;
  hw.l2.ways = 4;
  hw.l2.banks = 4;
  hw.l2.bytes_per_cycle = 32;
  hw.l2.latency_cycles = 20;
  return hw;
}

Instruction hint(Opcode op, int64_t address, uint32_t bytes) {
  Instruction in;
  in.op = op;
  in.args = isa::L2HintArgs{gm(address), bytes};
  return in;
}

sim::SimResult simulate(const isa::Program& p, const npu::HwConfig& hw) {
  sim::Simulator s(hw, sim::SimOptions{});
  s.load(p);
  return s.run();
}

TEST(L2Hints, PrefetchFillsWhileTheEngineIsBusyAndTheLoadHits) {
  // DRAM 128 B/cycle: an 8192-byte load keeps MTE2 busy 128 cycles but DRAM only 64.
  //  0: l2_prefetch 2048 B at GM 4096 (lines 32..47), s = 1: queued; MTE2 free at 2.
  //  1: load 8192 B from GM 65536 at s = 2. First the chunk: c = max(0, 1) = 1 < 2, DRAM 1..17
  //     (2048 / 128), lines ready at 17 + 200 = 217. Then the load's 64 misses fill on DRAM from
  //     max(2, 17) = 17 to 81; banks 2048 B each, 2..66; done 81; occupancy max(128, 79) = 128;
  //     completes 2 + 128 + 320 = 450.
  //  2: load the prefetched 2048 B at s = 130: 16 hits on lines ready at 217; banks 130..146;
  //     done 217; occupancy max(32, 87) = 87; completes 130 + 87 + 120 = 337.
  // Total 450. With an l2_discard of an absent range in slot 0 instead (the same 1-cycle issue,
  // no effect): the 8192 B fill runs 2..66 (completes 450), the last load misses at 130: DRAM
  // 130..146, occupancy 32, completes 130 + 32 + 320 = 482.
  const Instruction big = dma(DType::f16, ub(0), gm(65536), {4096});
  const Instruction again = dma(DType::f16, ub(16384), gm(4096), {1024});
  const auto r =
      simulate(program({hint(Opcode::l2_prefetch, 4096, 2048), big, again}), hint_hw(128));
  EXPECT_EQ(r.total_cycles, 450u);
  EXPECT_EQ(r.cores[0].pipes[int(Pipe::mte2)].busy_cycles, 1u + 128u + 87u);
  EXPECT_EQ(r.l2.prefetch_requests, 1u);
  EXPECT_EQ(r.l2.prefetch_bytes, 2048u);
  EXPECT_EQ(r.l2.prefetch_fill_bytes, 2048u);
  EXPECT_EQ(r.l2.prefetch_used_lines, 16u);
  EXPECT_EQ(r.l2.prefetch_dropped_bytes, 0u);
  EXPECT_EQ(r.l2.read_hit_lines, 16u);
  EXPECT_EQ(r.l2.read_miss_lines, 64u);
  EXPECT_EQ(r.l2.fill_bytes, 2048u + 8192u);
  EXPECT_EQ(r.dram_read_bytes, 2048u + 8192u);
  EXPECT_EQ(r.l2.requests, 2u);  // the hint is not a request
  const auto n =
      simulate(program({hint(Opcode::l2_discard, 1 << 19, 2048), big, again}), hint_hw(128));
  EXPECT_EQ(n.total_cycles, 482u);
  EXPECT_EQ(n.l2.discarded_bytes, 0u);
  EXPECT_EQ(n.dram_read_bytes, 2048u + 8192u);
}

TEST(L2Hints, ADemandRequestWaitsForOneChunkAtMost) {
  // DRAM 16 B/cycle: a chunk takes 128 cycles.
  //  0: l2_prefetch 16384 B at GM 4096 (8 chunks), s = 1.
  //  1: load 2048 B from GM 65536 at s = 2: chunk 0 goes first (c = 1 < 2): DRAM 1..129; chunk
  //     1 would start at 129 >= 2: not yet. The load's fill: 129..257; done 257; occupancy
  //     max(32, 255) = 255; completes 2 + 255 + 320 = 577.
  //  2: load the range's last 2048 B (GM 18432, chunk 7) at s = 257: chunk 1 would start at
  //     max(257, 1) = 257, not before the request: the load misses and fills 257..385; occupancy
  //     128; completes 257 + 128 + 320 = 705.
  // The DRAM is never idle again: 7 chunks (14336 B) are still queued at the end (dropped).
  const auto r = simulate(
      program({hint(Opcode::l2_prefetch, 4096, 16384), dma(DType::f16, ub(0), gm(65536), {1024}),
               dma(DType::f16, ub(4096), gm(18432), {1024})}),
      hint_hw(16));
  EXPECT_EQ(r.total_cycles, 705u);
  EXPECT_EQ(r.l2.prefetch_fill_bytes, 2048u);
  EXPECT_EQ(r.l2.prefetch_dropped_bytes, 14336u);
  EXPECT_EQ(r.l2.prefetch_used_lines, 0u);
  EXPECT_EQ(r.dram_read_bytes, 3u * 2048u);
}

TEST(L2Hints, DiscardDropsDirtyLinesWithoutWritingThemBack) {
  // test_l2.cpp's EvictingDirtyLinesWritesThemBack with an l2_discard between the store and the
  // load. A 512-byte L2 (one set of 4 ways), DRAM 16 B/cycle. Store 512 B to GM 0 (lines 0..3
  // dirty, completes 129), flag MTE3 -> MTE2 set at 129; the discard of GM [0, 512) starts at 129
  // and drops the four dirty lines (MTE2 free at 130); the load of GM 4096..4608 at 130 misses
  // into empty ways: fill 130..162, no write-back; occupancy max(8, 32) = 32; completes
  // 130 + 32 + 320 = 482 (481 without the discard, but with 512 B written back).
  npu::HwConfig hw = hint_hw(16);
  hw.l2.capacity_bytes = 512;
  const auto r =
      simulate(program({dma(DType::f32, gm(0), ub(0), {128}), set_flag(Pipe::mte3, Pipe::mte2, 0),
                        wait_flag(Pipe::mte3, Pipe::mte2, 0), hint(Opcode::l2_discard, 0, 512),
                        dma(DType::f32, ub(4096), gm(4096), {128})}),
               hw);
  EXPECT_EQ(r.total_cycles, 482u);
  EXPECT_EQ(r.l2.discard_requests, 1u);
  EXPECT_EQ(r.l2.discarded_bytes, 512u);
  EXPECT_EQ(r.l2.discarded_dirty_bytes, 512u);
  EXPECT_EQ(r.l2.writeback_bytes, 0u);
  EXPECT_EQ(r.dram_write_bytes, 0u);
  EXPECT_EQ(r.dram_read_bytes, 512u);
  EXPECT_EQ(r.l2.dirty_bytes_at_end, 0u);
}

TEST(L2Hints, DiscardKeepsLinesPartlyOutsideItsRange) {
  // Store 512 B to GM 0 (lines 0..3 dirty); discard GM [64, 448): only lines 1 and 2 lie wholly
  // inside; lines 0 and 3 stay dirty (256 B at the end).
  const auto r =
      simulate(program({dma(DType::f32, gm(0), ub(0), {128}), set_flag(Pipe::mte3, Pipe::mte2, 0),
                        wait_flag(Pipe::mte3, Pipe::mte2, 0), hint(Opcode::l2_discard, 64, 384)}),
               hint_hw(16));
  EXPECT_EQ(r.l2.discarded_bytes, 256u);
  EXPECT_EQ(r.l2.discarded_dirty_bytes, 256u);
  EXPECT_EQ(r.l2.dirty_bytes_at_end, 256u);
}

TEST(L2Hints, WithoutAnL2HintsOnlyTakeTheirIssueCycle) {
  // No L2, DRAM 128 B/cycle: the prefetch occupies MTE2 at 1; the load starts at 2, DRAM 2..18,
  // occupancy max(32, 16) = 32, completes 2 + 32 + 300 = 334. DRAM moves the load's 2048 B only.
  npu::HwConfig hw = test_hw();
  const auto r = simulate(
      program({hint(Opcode::l2_prefetch, 4096, 2048), dma(DType::f16, ub(0), gm(4096), {1024})}),
      hw);
  EXPECT_EQ(r.total_cycles, 334u);
  EXPECT_EQ(r.dram_read_bytes, 2048u);
  EXPECT_EQ(r.l2.prefetch_requests, 0u);
  EXPECT_EQ(r.cores[0].pipes[int(Pipe::mte2)].busy_cycles, 1u + 32u);
}

TEST(L2Hints, ValuesAreUnchanged) {
  // Functional: GM 1024 -> UB -> GM 256 with a prefetch of the source and a discard of an
  // unrelated range first; GM 256 holds the values.
  sim::Simulator s(hint_hw(16), sim::SimOptions{});
  s.load(program({hint(Opcode::l2_prefetch, 1024, 16), hint(Opcode::l2_discard, 8192, 4096),
                  dma(DType::f32, ub(0), gm(1024), {4}), set_flag(Pipe::mte2, Pipe::mte3, 0),
                  wait_flag(Pipe::mte2, Pipe::mte3, 0), dma(DType::f32, gm(256), ub(0), {4})}));
  const float v[4] = {1.5f, -2.0f, 3.25f, 8.0f};
  s.write_gm(1024, v, sizeof v);
  s.run();
  float out[4] = {};
  s.read_gm(256, out, sizeof out);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], v[i]) << i;
}

}  // namespace
}  // namespace tessel
