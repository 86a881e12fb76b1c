// Burst-granular DRAM cost (docs/isa.md, Timing, "DRAM"; npu::dma_gm_burst_bytes): the channel
// moves whole aligned blocks of B = dram.burst_bytes, so a dma costs the blocks its contiguous GM
// runs touch. The cycle-exact tests derive every number from testutil::test_hw() with the DRAM
// slowed to 16 B/cycle so that the channel, not MTE2/MTE3 (64 B/cycle), bounds the dma:
//   s = 1 (dispatched at 0, queued at 1); DRAM serves G_B bytes from 1 for ceil(G_B / 16) cycles;
//   occupancy = max(ceil(B_dst / 64), dram_done - 1); latency = MTE 100 + DRAM 200;
//   completion = 1 + occupancy + 300.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "compiler/support/error.h"
#include "npu_model/timing.h"
#include "simulator/simulator.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;

npu::HwConfig burst_hw(int burst_bytes) {
  npu::HwConfig hw = test_hw();
  hw.dram.bytes_per_cycle = 16;
  hw.dram.burst_bytes = burst_bytes;
  return hw;
}

sim::SimResult simulate(const isa::DmaArgs& d, const npu::HwConfig& hw) {
  sim::Simulator s(hw, sim::SimOptions{});
  s.load(program({dma(d)}));
  return s.run();
}

uint64_t mte_busy(const sim::SimResult& r, Pipe p) { return r.cores[0].pipes[int(p)].busy_cycles; }

// ---------------------------------------------------------------------------------------------
// Cycle-exact: one dma on the simulator with B = 32 and B = 1.

TEST(DramBurst, ContiguousAlignedLoadCostsNoMore) {
  // 1024 f16 = 2048 B from GM 4096 (= 128 * 32, aligned): one run of 2048 B = 64 whole blocks,
  // G_B = G = 2048. DRAM ceil(2048/16) = 128 cycles -> done 129; occupancy max(ceil(2048/64) = 32,
  // 128) = 128; completes 1 + 128 + 300 = 429, with B = 32 and with B = 1 alike.
  const auto d = dma_args(DType::f16, ub(0), gm(4096), {1024});
  const auto r32 = simulate(d, burst_hw(32));
  EXPECT_EQ(r32.total_cycles, 429u);
  EXPECT_EQ(mte_busy(r32, Pipe::mte2), 128u);
  EXPECT_EQ(r32.dram_read_bytes, 2048u);
  EXPECT_EQ(r32.dram_burst_bytes, 2048u);
  const auto r1 = simulate(d, burst_hw(1));
  EXPECT_EQ(r1.total_cycles, 429u);
  EXPECT_EQ(r1.dram_burst_bytes, 2048u);
}

TEST(DramBurst, MisalignedRunTakesOneMoreBurst) {
  // The same 2048 B from GM 4098: bytes 4098..6145 touch blocks floor(4098/32) = 128 to
  // floor(6145/32) = 192: 65 blocks, G_B = 2080. DRAM ceil(2080/16) = 130 cycles -> done 131;
  // occupancy 130; completes 1 + 130 + 300 = 431 (B = 1: 429 as above).
  const auto d = dma_args(DType::f16, ub(0), gm(4098), {1024});
  const auto r = simulate(d, burst_hw(32));
  EXPECT_EQ(r.total_cycles, 431u);
  EXPECT_EQ(mte_busy(r, Pipe::mte2), 130u);
  EXPECT_EQ(r.dram_read_bytes, 2048u);  // the real bytes are still reported
  EXPECT_EQ(r.dram_burst_bytes, 2080u);
  EXPECT_EQ(simulate(d, burst_hw(1)).total_cycles, 429u);
}

TEST(DramBurst, StridedShortRowsCostOneBurstEach) {
  // 16 rows x 10 f16 (20 B a row) at a GM row stride of 32 elements (64 B) from GM 4096: 16 runs
  // of 20 B at 4096 + 64 r, each inside one 32-byte block: G = 320, G_B = 16 * 32 = 512.
  // DRAM ceil(512/16) = 32 cycles -> done 33; occupancy max(ceil(320/64) = 5, 32) = 32;
  // completes 1 + 32 + 300 = 333. With B = 1: ceil(320/16) = 20 -> 1 + 20 + 300 = 321.
  auto d = dma_args(DType::f16, ub(0), gm(4096), {16, 10});
  d.src_stride = {32, 1};
  const auto r = simulate(d, burst_hw(32));
  EXPECT_EQ(r.total_cycles, 333u);
  EXPECT_EQ(r.dram_read_bytes, 320u);
  EXPECT_EQ(r.dram_burst_bytes, 512u);
  EXPECT_EQ(simulate(d, burst_hw(1)).total_cycles, 321u);
}

TEST(DramBurst, InnermostStridedDmaMakesEveryElementABurst) {
  // 64 f16 with GM element stride 16 (32 B): the innermost GM stride is not 1, so every element is
  // its own 2-byte run, each in its own block: G = 128, G_B = 64 * 32 = 2048. DRAM ceil(2048/16)
  // = 128 -> occupancy max(ceil(128/64) = 2, 128) = 128; completes 1 + 128 + 300 = 429.
  // With B = 1: ceil(128/16) = 8 -> 1 + 8 + 300 = 309.
  auto d = dma_args(DType::f16, ub(0), gm(0), {64});
  d.src_stride = {16};
  const auto r = simulate(d, burst_hw(32));
  EXPECT_EQ(r.total_cycles, 429u);
  EXPECT_EQ(r.dram_burst_bytes, 2048u);
  EXPECT_EQ(simulate(d, burst_hw(1)).total_cycles, 309u);
}

TEST(DramBurst, PaddedLoadReadsNoBurstsForPads) {
  // extent {4, 256} f16 from GM 0 (row stride 256 elements = 512 B), valid rows [1, 3) and
  // columns [3, 253): 2 runs of 250 elements = 500 B (the valid columns are not the whole row, so
  // the rows do not merge), at 512 + 6 = 518 and 1030. Blocks: floor(1017/32) - floor(518/32) + 1
  // = 31 - 16 + 1 = 16 and floor(1529/32) - floor(1030/32) + 1 = 47 - 32 + 1 = 16: G = 1000,
  // G_B = 32 * 32 = 1024 (the pad rows and columns read nothing). B_dst = 4 * 256 * 2 = 2048.
  // DRAM ceil(1024/16) = 64 -> done 65; occupancy max(ceil(2048/64) = 32, 64) = 64; completes
  // 1 + 64 + 300 = 365. With B = 1: ceil(1000/16) = 63 -> 1 + 63 + 300 = 364.
  auto d = dma_args(DType::f16, ub(0), gm(0), {4, 256});
  d.valid_begin = {1, 3};
  d.valid_end = {3, 253};
  const auto r = simulate(d, burst_hw(32));
  EXPECT_EQ(r.total_cycles, 365u);
  EXPECT_EQ(r.dram_read_bytes, 1000u);
  EXPECT_EQ(r.dram_burst_bytes, 1024u);
  EXPECT_EQ(simulate(d, burst_hw(1)).total_cycles, 364u);
}

TEST(DramBurst, StoreChargesTheBlocksItWrites) {
  // UB -> GM, 100 f32 = 400 B to GM 4112 (16 B into a block): bytes 4112..4511 touch blocks
  // floor(4112/32) = 128 to floor(4511/32) = 140: 13 blocks, G_B = 416. MTE3 ceil(400/64) = 7;
  // DRAM ceil(416/16) = 26 -> done 27; occupancy max(7, 26) = 26; completes 1 + 26 + 300 = 327.
  // With B = 1: ceil(400/16) = 25 -> 1 + 25 + 300 = 326.
  const auto d = dma_args(DType::f32, gm(4112), ub(0), {100});
  const auto r = simulate(d, burst_hw(32));
  EXPECT_EQ(r.total_cycles, 327u);
  EXPECT_EQ(mte_busy(r, Pipe::mte3), 26u);
  EXPECT_EQ(r.dram_write_bytes, 400u);
  EXPECT_EQ(r.dram_burst_bytes, 416u);
  EXPECT_EQ(simulate(d, burst_hw(1)).total_cycles, 326u);
}

TEST(DramBurst, BurstBytesDelayTheNextRequestOnTheSharedChannel) {
  // Two loads on one core, back to back on MTE2 (no hazard): the first (16 strided rows, G_B =
  // 512 as above) holds the channel from 1 to 1 + 32 = 33. The second, 64 f16 = 128 B aligned at
  // GM 8192 (4 blocks, G_B = 128), starts at s2 = pipe_free = 1 + 32 = 33 and is served from
  // max(33, 33) = 33 for ceil(128/16) = 8 cycles -> done 41; occupancy max(ceil(128/64) = 2, 8)
  // = 8; completes 33 + 8 + 300 = 341.
  auto a = dma_args(DType::f16, ub(0), gm(4096), {16, 10});
  a.src_stride = {32, 1};
  const auto b = dma_args(DType::f16, ub(4096), gm(8192), {64});
  sim::Simulator s(burst_hw(32), sim::SimOptions{});
  s.load(program({dma(a), dma(b)}));
  const auto r = s.run();
  EXPECT_EQ(r.total_cycles, 341u);
  EXPECT_EQ(mte_busy(r, Pipe::mte2), 32u + 8u);
  EXPECT_EQ(r.dram_burst_bytes, 512u + 128u);
}

// ---------------------------------------------------------------------------------------------
// npu::dma_gm_burst_bytes directly.

TEST(DramBurstBytes, RunsAndBlocks) {
  auto hw = test_hw();
  hw.dram.burst_bytes = 32;
  // Dense 3-D block {2, 3, 16} f16 with dense strides: all dims merge into one 192-byte run at 64:
  // blocks 2..7 = 6, 192 B.
  EXPECT_EQ(npu::dma_gm_burst_bytes(hw, dma_args(DType::f16, ub(0), gm(64), {2, 3, 16})), 192u);
  // GM stride 8 elements (16 B) per f16 element: 8 elements share each block but each is its own
  // run, so each counts a block: 8 * 32 = 256 B for 16 B of data.
  auto d = dma_args(DType::f16, ub(0), gm(0), {8});
  d.src_stride = {8};
  EXPECT_EQ(npu::dma_gm_burst_bytes(hw, d), 256u);
  // A dimension with one index does not break merging: {4, 1, 8} f32 with GM strides {8, 1000, 1}
  // is one 128-byte run at 0 (dim 1 is dropped, dim 0 stride 8 = the 8 inner elements): 128 B.
  d = dma_args(DType::f32, ub(0), gm(0), {4, 1, 8});
  d.src_stride = {8, 1000, 1};
  EXPECT_EQ(npu::dma_gm_burst_bytes(hw, d), 128u);
  // Store with padding: every element is written, pads included. {2, 8} f32 valid only in row 0,
  // dense to GM 16: one 64-byte run at 16 touches blocks 0..2 -> 96 B.
  d = dma_args(DType::f32, gm(16), ub(0), {2, 8});
  d.valid_end = {1, 8};
  EXPECT_EQ(npu::dma_gm_burst_bytes(hw, d), 96u);
  EXPECT_EQ(npu::dma_gm_bytes(d), 64u);
  // A load with an empty valid box reads nothing.
  d = dma_args(DType::f32, ub(0), gm(16), {2, 8});
  d.valid_begin = {1, 0};
  d.valid_end = {1, 8};
  EXPECT_EQ(npu::dma_gm_burst_bytes(hw, d), 0u);
  // Neither side in GM: 0.
  EXPECT_EQ(npu::dma_gm_burst_bytes(hw, dma_args(DType::f16, l1(0), ub(0), {64})), 0u);
  // Rows that straddle: 3 rows of 24 B at row stride 40 B from 0: runs [0,24) [40,64) [80,104)
  // -> blocks {0}, {1}, {2, 3}: 4 blocks = 128 B. (f16 12 elements, stride 20 elements.)
  d = dma_args(DType::f16, ub(0), gm(0), {3, 12});
  d.src_stride = {20, 1};
  EXPECT_EQ(npu::dma_gm_burst_bytes(hw, d), 128u);
  // Many rows: the per-period sum must equal row-by-row counting. 1000 rows of 24 B at stride
  // 40 B: the start address mod 32 cycles 0, 8, 16, 24 (period 4); rows at 0 and 8 mod 32 fit in
  // one block, rows at 16 and 24 mod 32 span two: 1000 / 4 * (1 + 1 + 2 + 2) = 1500 blocks.
  d = dma_args(DType::f16, ub(0), gm(0), {1000, 12});
  d.src_stride = {20, 1};
  EXPECT_EQ(npu::dma_gm_burst_bytes(hw, d), 1500u * 32);
}

TEST(DramBurstBytes, InvalidBurstIsAnError) {
  auto hw = test_hw();
  hw.dram.burst_bytes = 48;
  EXPECT_THROW(npu::dma_gm_burst_bytes(hw, dma_args(DType::f16, ub(0), gm(0), {64})), Error);
  hw.dram.burst_bytes = 0;
  EXPECT_THROW(npu::dma_gm_burst_bytes(hw, dma_args(DType::f16, ub(0), gm(0), {64})), Error);
}

/// A random dma with up to 4 dims; GM strides arbitrary in [-3, 40] elements (the GM base is far
/// enough from 0 that every address stays positive), random padding, load or store.
isa::DmaArgs random_dma(std::mt19937& rng) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  isa::DmaArgs d;
  d.dtype = uni(0, 1) ? DType::f16 : DType::f32;
  const bool load = uni(0, 3) != 0;
  d.ndims = static_cast<uint8_t>(uni(1, 4));
  for (int k = 0; k < d.ndims; ++k) {
    d.extent[k] = static_cast<uint32_t>(uni(1, 9));
    d.valid_begin[k] = static_cast<uint32_t>(uni(0, 2));
    d.valid_end[k] = static_cast<uint32_t>(uni(int(d.valid_begin[k]), int(d.extent[k]) + 1));
    d.dst_stride[k] = d.src_stride[k] = uni(-3, 40);
  }
  const isa::MemRef g = gm(100000 + uni(0, 63)), u = ub(0);
  d.src = load ? g : u;
  d.dst = load ? u : g;
  return d;
}

TEST(DramBurstBytes, BurstOfOneIsTheOldByteCountOnRandomDmas) {
  // With B = 1 a run of L bytes touches L blocks of 1 byte, so G_B = sum of run lengths = G.
  std::mt19937 rng(12345);
  auto hw = test_hw();
  hw.dram.burst_bytes = 1;
  for (int i = 0; i < 2000; ++i) {
    const isa::DmaArgs d = random_dma(rng);
    ASSERT_EQ(npu::dma_gm_burst_bytes(hw, d), npu::dma_gm_bytes(d)) << "dma " << i;
  }
}

/// Reference for dma_gm_burst_bytes: walks every accessed element in index order (dim 0
/// outermost), starts a new run unless the element's GM address follows the previous one, and
/// counts each run's blocks. It equals the dim-merging rule for the strides of
/// layered_random_dma (where inner blocks never interleave with the next outer index).
uint64_t brute_force_burst_bytes(const isa::DmaArgs& d, int64_t burst) {
  const bool load = d.src.scope == Scope::gm;
  const int64_t es = isa::dtype_bytes(d.dtype);
  const auto& stride = load ? d.src_stride : d.dst_stride;
  const int64_t base = (load ? d.src : d.dst).offset;
  std::array<uint32_t, isa::kMaxDmaDims> idx{};
  int64_t run_start = -1, run_end = -1, blocks = 0;
  auto close_run = [&] {
    if (run_start >= 0) blocks += (run_end - 1) / burst - run_start / burst + 1;
  };
  while (true) {
    bool valid = true;
    int64_t addr = base;
    for (int k = 0; k < d.ndims; ++k) {
      if (load && (idx[k] < d.valid_begin[k] || idx[k] >= d.valid_end[k])) valid = false;
      addr += int64_t{idx[k]} * stride[k] * es;
    }
    if (valid) {
      if (addr == run_end) {
        run_end += es;
      } else {
        close_run();
        run_start = addr;
        run_end = addr + es;
      }
    }
    int k = d.ndims - 1;
    while (k >= 0 && ++idx[k] == d.extent[k]) idx[k--] = 0;
    if (k < 0) break;
  }
  close_run();
  return static_cast<uint64_t>(blocks * burst);
}

/// A random dma whose GM strides are layered: each outer stride is either exactly the span of
/// the accessed inner block (contiguous with it when the inner block is contiguous) or larger
/// than it by a gap, so the inner blocks of consecutive outer indices never touch unless the dims
/// merge. Innermost stride 1 (mostly), 2 or 3.
isa::DmaArgs layered_random_dma(std::mt19937& rng) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  isa::DmaArgs d = random_dma(rng);
  const bool load = d.src.scope == Scope::gm;
  auto& stride = load ? d.src_stride : d.dst_stride;
  int64_t span = 1;        // elements from the first to one past the last of the inner block
  bool contiguous = true;  // the accessed inner block is one run
  for (int k = d.ndims - 1; k >= 0; --k) {
    const int64_t b = load ? std::min(d.valid_begin[k], d.extent[k]) : 0;
    const int64_t e = load ? std::min(d.valid_end[k], d.extent[k]) : d.extent[k];
    const int64_t n = std::max<int64_t>(e - b, 0);
    if (k == d.ndims - 1) {
      stride[k] = uni(0, 3) ? 1 : uni(2, 3);
      contiguous = stride[k] == 1 || n <= 1;
    } else {
      const bool exact = contiguous && uni(0, 1);
      stride[k] = span + (exact ? 0 : uni(1, 40));
      contiguous = exact || (contiguous && n <= 1);
    }
    if (n > 0) span = (n - 1) * stride[k] + span;
  }
  return d;
}

TEST(DramBurstBytes, MatchesAnElementByElementCountOnRandomDmas) {
  std::mt19937 rng(777);
  for (const int burst : {2, 32, 64}) {
    auto hw = test_hw();
    hw.dram.burst_bytes = burst;
    for (int i = 0; i < 2000; ++i) {
      const isa::DmaArgs d = layered_random_dma(rng);
      ASSERT_EQ(npu::dma_gm_burst_bytes(hw, d), brute_force_burst_bytes(d, burst))
          << "B = " << burst << ", dma " << i;
    }
  }
}

}  // namespace
}  // namespace tessel
