// The banked DRAM model (simulator/dram_banked.h, docs/memory.md), cycle-exact.
//
// Every number is derived from banked_hw() below: NPU 1 GHz and tCK = 1000 ps, so one DRAM clock
// is one NPU cycle; one channel, one rank, 2 bank groups x B banks, 1 KB rows, a 64-bit bus with
// BL4 at 2 transfers per clock: a 32-byte burst holds the data bus tBURST = 4 / 2 = 2 clocks, peak
// 16 B/cycle. Timings (nCK): tRCD 10, tRP 10, tCL 12, tCWL 4, tRAS 24, tRRD_S 3, tRRD_L 5,
// tFAW 20, tCCD_S 2, tCCD_L 4, tRTP 4, tWR 8, tWTR 6, tREFI 10000, tRFC 100; tRC = tRAS + tRP = 34.
// Address mapping "row bank column bank_group": above the 5-bit burst offset, 1 bank-group bit,
// 5 column bits (32 bursts per 1 KB row), the bank bits, then the row: consecutive bursts
// alternate bank groups; addr(bg, bank, row, col) below builds an address.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/support/error.h"
#include "npu_model/timing.h"
#include "simulator/dram_banked.h"
#include "simulator/simulator.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;
using sim::BankedDram;

npu::HwConfig banked_hw(int banks_per_group = 2,
                        npu::PagePolicy policy = npu::PagePolicy::open_page) {
  npu::HwConfig hw = test_hw();
  hw.dram.burst_bytes = 32;
  hw.dram.capacity_bytes = int64_t{1} << 28;
  hw.dram.model = npu::DramModel::banked;
  npu::DramBankedConfig& b = hw.dram.banked;
  b.name = "test DRAM";
  b.channels = 1;
  b.ranks = 1;
  b.bank_groups = 2;
  b.banks_per_group = banks_per_group;
  b.rows = 65536;
  b.row_bytes = 1024;
  b.bus_width_bits = 64;
  b.burst_length = 4;
  b.transfers_per_ck = 2;
  b.queue_depth = 32;
  b.address_mapping = "row bank column bank_group";
  b.page_policy = policy;
  b.timing = {1000, 10, 10, 12, 4, 24, 3, 5, 20, 2, 4, 4, 8, 6, 10000, 100};
  npu::finalize_hw_config(hw);  // the loader's checks, as for a file
  return hw;
}

uint64_t addr(const npu::HwConfig& hw, uint64_t bg, uint64_t bank, uint64_t row, uint64_t col) {
  const uint64_t banks = static_cast<uint64_t>(hw.dram.banked.banks_per_group);
  return (((row * banks + bank) * 32 + col) * 2 + bg) * 32;
}

sim::DramChannelStats stats(const BankedDram& d) { return d.stats().at(0); }

TEST(DramBanked, AddressMappingSlicesTheBurstIndex) {
  const npu::HwConfig hw = banked_hw();
  BankedDram d(hw);
  const npu::DramCoord c = d.address_map().map(addr(hw, 1, 1, 77, 9) + 31);
  EXPECT_EQ(c.bank_group, 1u);
  EXPECT_EQ(c.bank, 1u);
  EXPECT_EQ(c.row, 77u);
  EXPECT_EQ(c.column, 9u);
  EXPECT_EQ(c.channel, 0u);
}

TEST(DramBanked, RowMissCostsRcdPlusClPlusBurst) {
  // Idle bank, arrival 0: ACT at 0, RD at tRCD = 10, data 10 + tCL = 22 .. 24.
  const npu::HwConfig hw = banked_hw();
  BankedDram d(hw);
  EXPECT_EQ(d.serve(0, true, {addr(hw, 0, 0, 5, 0)}), 24u);
  EXPECT_EQ(stats(d).row_misses, 1u);
  EXPECT_EQ(stats(d).activates, 1u);
  EXPECT_EQ(stats(d).read_bytes, 32u);
}

TEST(DramBanked, RowHitCostsClPlusBurst) {
  // The row opened by the first read stays open (open page): a read of it arriving at 100 issues
  // RD at 100 (tRCD, tCCD_L long past), data 112 .. 114.
  const npu::HwConfig hw = banked_hw();
  BankedDram d(hw);
  d.serve(0, true, {addr(hw, 0, 0, 5, 0)});
  EXPECT_EQ(d.serve(100, true, {addr(hw, 0, 0, 5, 3)}), 114u);
  EXPECT_EQ(stats(d).row_hits, 1u);
  EXPECT_EQ(stats(d).row_misses, 1u);
}

TEST(DramBanked, BankConflictCostsRpPlusRcdPlusCl) {
  // Row 5 open (ACT 0, RD 10). Row 6 of the same bank arrives at 30: PRE at max(30, tRAS = 24,
  // RD + tRTP = 14) = 30, ACT at 30 + tRP = 40 (tRC = 34 already met), RD at 50, data 62 .. 64:
  // 34 = tRP + tRCD + tCL + tBURST after the arrival.
  const npu::HwConfig hw = banked_hw();
  BankedDram d(hw);
  d.serve(0, true, {addr(hw, 0, 0, 5, 0)});
  EXPECT_EQ(d.serve(30, true, {addr(hw, 0, 0, 6, 0)}), 64u);
  EXPECT_EQ(stats(d).bank_conflicts, 1u);
  EXPECT_EQ(stats(d).precharges, 1u);
  EXPECT_EQ(stats(d).activates, 2u);
}

TEST(DramBanked, BackToBackConflictWaitsForTrc) {
  // Both rows of one bank in one transfer at 0: row 5 as above (ACT 0); row 6: PRE at tRAS = 24,
  // ACT at max(24 + tRP, tRC) = 34, RD 44, data 56 .. 58.
  const npu::HwConfig hw = banked_hw();
  BankedDram d(hw);
  EXPECT_EQ(d.serve(0, true, {addr(hw, 0, 0, 5, 0), addr(hw, 0, 0, 6, 0)}), 58u);
}

TEST(DramBanked, ClosedPagePrechargesAfterEveryAccess) {
  // Closed page: the first read's row is precharged at max(tRAS = 24, RD + tRTP = 14) = 24, so a
  // read of the same row at 100 is a miss: ACT 100, RD 110, data 122 .. 124 (open page: 114).
  const npu::HwConfig hw = banked_hw(2, npu::PagePolicy::closed_page);
  BankedDram d(hw);
  d.serve(0, true, {addr(hw, 0, 0, 5, 0)});
  EXPECT_EQ(d.serve(100, true, {addr(hw, 0, 0, 5, 1)}), 124u);
  EXPECT_EQ(stats(d).row_misses, 2u);
  EXPECT_EQ(stats(d).row_hits, 0u);
  EXPECT_EQ(stats(d).precharges, 2u);
}

TEST(DramBanked, ReadAfterWriteWaitsForTwtr) {
  // WR (miss): ACT 0, WR at 10, data 10 + tCWL = 14 .. 16. A read of the same row arriving at 0
  // next: RD at max(tCCD_L after WR = 14, write data end + tWTR = 22) = 22, data 34 .. 36.
  const npu::HwConfig hw = banked_hw();
  BankedDram d(hw);
  EXPECT_EQ(d.serve(0, false, {addr(hw, 0, 0, 5, 0)}), 16u);
  EXPECT_EQ(d.serve(0, true, {addr(hw, 0, 0, 5, 1)}), 36u);
  EXPECT_EQ(stats(d).write_bytes, 32u);
}

TEST(DramBanked, RefreshStallsARequestThatReachesIt) {
  // A read arriving at 9995 would issue RD at 10005, past the refresh due at tREFI = 10000: the
  // refresh goes first (all banks idle: REF at 10000, banks blocked until 10000 + tRFC = 10100),
  // then ACT 10100, RD 10110, data 10122 .. 10124. Stall = 10110 - 10005 = 105 cycles.
  const npu::HwConfig hw = banked_hw();
  BankedDram d(hw);
  EXPECT_EQ(d.serve(9995, true, {addr(hw, 0, 0, 5, 0)}), 10124u);
  EXPECT_EQ(stats(d).refreshes, 1u);
  EXPECT_EQ(stats(d).refresh_stall_cycles, 105u);
  // A refresh closes open rows: the row opened at 10100 is closed by the one due at 20000, so a
  // read of it at 25000 is a miss (ACT 25000, data 25022 .. 25024), not a hit.
  EXPECT_EQ(d.serve(25000, true, {addr(hw, 0, 0, 5, 1)}), 25024u);
  EXPECT_EQ(stats(d).refreshes, 2u);
  EXPECT_EQ(stats(d).row_misses, 2u);
}

TEST(DramBanked, StreamingReadReachesThePeakBandwidth) {
  // N consecutive bursts alternate bank groups (bank 0, row 0; bank 1 from burst 64 on).
  // ACT BG0 at 0, ACT BG1 at tRRD_S = 3. RD 0 at 10, RD 1 at max(3 + tRCD, 10 + tCCD_S) = 13, then
  // every tCCD_S = 2 (the same bank group is tCCD_L = 4 apart: met), so RD i = 13 + 2 (i - 1).
  // Bank 1's ACTs (at 6 and 9) go long before their reads. Last data end = RD + tCL + tBURST:
  // N = 64: 13 + 126 + 14 = 153 - 2 = 151; N = 128: 151 + 128 = 279. The 64 extra bursts
  // (2048 B) take 128 cycles: 16 B/cycle = 64 bit x 2 transfers per clock, the bus peak.
  const npu::HwConfig hw = banked_hw();
  std::vector<uint64_t> a;
  for (uint64_t i = 0; i < 128; ++i) a.push_back(i * 32);
  BankedDram d64(hw), d128(hw);
  EXPECT_EQ(d64.serve(0, true, std::vector<uint64_t>(a.begin(), a.begin() + 64)), 151u);
  EXPECT_EQ(d128.serve(0, true, a), 279u);
  EXPECT_EQ(stats(d128).row_hits, 124u);
  EXPECT_EQ(stats(d128).row_misses, 4u);
  EXPECT_EQ(stats(d128).busy_cycles, 256u);
}

TEST(DramBanked, FrFcfsInterleavesBankGroupsThatFcfsServesInTurn) {
  // The same 64 bursts mapped "row bank bank_group column": bursts 0..31 are row 0 of BG0's bank
  // 0, bursts 32..63 row 0 of BG1's bank 0. FCFS (queue_depth 1): RD 0 at 10, then every tCCD_L =
  // 4 (same bank group): RD 31 at 134; burst 32 (ACT at tRRD_S = 3) at 134 + tCCD_S = 136, then
  // every 4: RD 63 at 136 + 31 x 4 = 260, data end 260 + 14 = 274 (half the peak). FR-FCFS over a
  // 32-entry window sees bursts of both groups and alternates them every tCCD_S = 2: the
  // streaming schedule above, 151.
  npu::HwConfig hw = banked_hw();
  hw.dram.banked.address_mapping = "row bank bank_group column";
  hw.dram.banked.queue_depth = 1;
  npu::finalize_hw_config(hw);
  std::vector<uint64_t> a;
  for (uint64_t i = 0; i < 64; ++i) a.push_back(i * 32);
  BankedDram fcfs(hw);
  EXPECT_EQ(fcfs.serve(0, true, a), 274u);
  hw.dram.banked.queue_depth = 32;
  BankedDram frfcfs(hw);
  EXPECT_EQ(frfcfs.serve(0, true, a), 151u);
}

/// Requests i = 0 .. n-1 to bank group i % 2, bank (i / 2) % banks, a new row every round over
/// the banks, column 0: every request after the first round is a bank conflict.
std::vector<uint64_t> round_robin_rows(const npu::HwConfig& hw, int banks, int n) {
  std::vector<uint64_t> a;
  for (int i = 0; i < n; ++i) a.push_back(addr(hw, i % 2, (i / 2) % banks, 1 + i / (2 * banks), 0));
  return a;
}

TEST(DramBanked, RandomAccessIsBoundByTrcWithFourBanks) {
  // 4 banks (2 groups x 2), every request opens a row. ACTs: 0, 3 (tRRD_S), 6 (max(3 + tRRD_S,
  // 0 + tRRD_L)), 9; then each bank again tRC = 34 after its last ACT (PRE at tRAS = 24, + tRP =
  // 34; tFAW: 0 + 20 < 34): request 4k + j has ACT 34k + 3j. RD = ACT + 10, data end = ACT + 24.
  // n = 64: last ACT 34 x 15 + 9 = 519, done 543. Bound from the timings: 4 banks x 32 B per tRC
  // = 128 / 34 = 3.76 B/cycle; measured over the last 60 requests: 60 x 32 / (543 - 33) = 3.76.
  const npu::HwConfig hw = banked_hw(2);
  BankedDram d(hw);
  EXPECT_EQ(d.serve(0, true, round_robin_rows(hw, 2, 64)), 543u);
  EXPECT_EQ(stats(d).bank_conflicts, 60u);
  EXPECT_EQ(stats(d).row_misses, 4u);
  EXPECT_EQ(stats(d).activates, 64u);
}

TEST(DramBanked, RandomAccessIsBoundByTfawWithEightBanks) {
  // 8 banks (2 groups x 4): tRC alone would allow 8 ACTs per 34 cycles, but tFAW allows 4 per 20.
  // ACTs 0, 3, 6, 9; then ACT i = ACT (i - 4) + 20 (tFAW; tRRD and each bank's tRC = 34 < 40 met):
  // request 4k + j has ACT 20k + 3j. n = 64: last ACT 20 x 15 + 9 = 309, done 333. Bound: 4 x 32 B
  // per tFAW = 6.4 B/cycle; over the last 60 requests 60 x 32 / (333 - 33) = 6.4.
  const npu::HwConfig hw = banked_hw(4);
  BankedDram d(hw);
  EXPECT_EQ(d.serve(0, true, round_robin_rows(hw, 4, 64)), 333u);
  EXPECT_EQ(stats(d).activates, 64u);
}

TEST(DramBanked, DramClockConvertsToNpuCycles) {
  // tCK = 1250 ps at 1 GHz: NPU cycle 1 = 1000 ps arrives at DRAM clock ceil(0.8) = 1; the miss
  // ends at clock 1 + 24 = 25 = 31,250 ps, NPU cycle ceil(31.25) = 32.
  npu::HwConfig hw = banked_hw();
  hw.dram.banked.timing.tCK_ps = 1250;
  npu::finalize_hw_config(hw);
  BankedDram d(hw);
  EXPECT_EQ(d.to_dram_ck(100), 80u);
  EXPECT_EQ(d.to_npu_cycles(24), 30u);
  EXPECT_EQ(d.serve(1, true, {addr(hw, 0, 0, 5, 0)}), 32u);
}

// ---------------------------------------------------------------------------------------------
// Through the simulator: one dma, as tests/simulator/test_dram_burst.cpp derives the pipeline:
// s = 1 (dispatched at 0, queued at 1); occupancy = max(ceil(bytes / 64) (MTE2), dram_done - 1);
// completion = 1 + occupancy + MTE latency 100 + memory.dram.latency_cycles 200.

sim::SimResult simulate(const std::vector<Instruction>& code, const npu::HwConfig& hw,
                        const std::string& dram_trace = "") {
  sim::SimOptions o;
  o.dram_trace_path = dram_trace;
  sim::Simulator s(hw, o);
  s.load(program(code));
  return s.run();
}

TEST(DramBanked, DmaLoadThroughTheSimulator) {
  // 32 f16 = 64 B from GM 0: bursts 0 (BG0) and 1 (BG1), arriving at 1: ACT 1 and 4, RD 11 and
  // 14, data ends 25 and 28. The DRAM has taken both requests after the last RD: dram_done = 15,
  // so MTE2 is busy max(ceil(64 / 64) = 1, 15 - 1) = 14; the data in flight (28 - 15 = 13) comes
  // on top with the latencies: completion 1 + 14 + 100 + 200 + 13 = 328 (= the last data beat
  // at 28 + 300).
  const npu::HwConfig hw = banked_hw();
  Instruction load = dma(DType::f16, ub(0), gm(0), {32});
  load.op_index = 1;
  const sim::SimResult r = simulate({load}, hw);
  EXPECT_EQ(r.total_cycles, 328u);
  EXPECT_EQ(r.cores[0].pipes[int(Pipe::mte2)].busy_cycles, 14u);
  ASSERT_EQ(r.op_dram.size(), 2u);  // per op: its requests' row-buffer outcomes
  EXPECT_EQ(r.op_dram[1].requests, 2u);
  EXPECT_EQ(r.op_dram[1].row_misses, 2u);
  EXPECT_EQ(r.op_dram[0].requests, 0u);
  EXPECT_EQ(r.dram_model, "banked");
  ASSERT_EQ(r.dram_channels.size(), 1u);
  EXPECT_EQ(r.dram_channels[0].row_misses, 2u);
  EXPECT_EQ(r.dram_channels[0].read_bytes, 64u);
  EXPECT_EQ(r.dram_burst_bytes, 64u);
}

TEST(DramBanked, SimpleModelCountsOneChannel) {
  // The simple model (test_hw: 128 B/cycle): 64 B from 1 for ceil(64 / 128) = 1 cycle.
  const sim::SimResult r = simulate({dma(DType::f16, ub(0), gm(0), {32})}, test_hw());
  EXPECT_EQ(r.dram_model, "simple");
  ASSERT_EQ(r.dram_channels.size(), 1u);
  EXPECT_EQ(r.dram_channels[0].requests, 1u);
  EXPECT_EQ(r.dram_channels[0].read_bytes, 64u);
  EXPECT_EQ(r.dram_channels[0].busy_cycles, 1u);
}

// --dram-trace: the lines' BYTES add up to the run's DRAM burst bytes, in both models.
struct TraceLine {
  uint64_t cycle = 0, address = 0, bytes = 0;
  int core = 0, channel = 0;
  char op = '?';
};

std::vector<TraceLine> read_trace(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<TraceLine> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    TraceLine t;
    std::string a;
    s >> t.cycle >> t.core >> t.channel >> a >> t.bytes >> t.op;
    EXPECT_FALSE(s.fail()) << line;
    EXPECT_EQ(a.rfind("0x", 0), 0u) << line;
    t.address = std::stoull(a, nullptr, 16);
    lines.push_back(t);
  }
  return lines;
}

std::vector<Instruction> mixed_dmas() {
  // A contiguous load, a misaligned strided load (8 runs of 40 B, 100 B apart, from GM 4098), a
  // store: bursts shared by runs count once per run, as npu::dma_gm_burst_bytes counts them.
  isa::DmaArgs strided = dma_args(DType::f16, ub(4096), gm(4098), {8, 20});
  strided.src_stride = {50, 1};
  strided.dst_stride = {20, 1};
  return {dma(DType::f16, ub(0), gm(0), {1024}), dma(strided),
          dma(DType::f16, gm(65536), ub(0), {512})};
}

void check_trace_adds_up(const npu::HwConfig& hw, const char* name) {
  const std::string path = ::testing::TempDir() + "/dram_trace_" + name + ".txt";
  const sim::SimResult r = simulate(mixed_dmas(), hw, path);
  const std::vector<TraceLine> lines = read_trace(path);
  uint64_t bytes = 0, read = 0;
  for (const TraceLine& t : lines) {
    bytes += t.bytes;
    if (t.op == 'R') read += t.bytes;
    EXPECT_EQ(t.address % 32, 0u);
    EXPECT_EQ(t.core, 0);
  }
  EXPECT_EQ(bytes, r.dram_burst_bytes) << name;
  EXPECT_EQ(read, r.dram_channels.at(0).read_bytes) << name;
  // Store: 1024 B at 65536 = 32 bursts (banked) or one run (simple).
  EXPECT_EQ(bytes - read, 1024u);
  // 2048 B load = 64 bursts; the strided load's runs: 4098.. touch 2 or 3 bursts each.
  EXPECT_EQ(
      r.dram_burst_bytes,
      2048u + npu::dma_gm_burst_bytes(hw, std::get<isa::DmaArgs>(mixed_dmas()[1].args)) + 1024u);
}

TEST(DramBanked, DramTraceBytesAddUpToTheReport) {
  check_trace_adds_up(banked_hw(), "banked");
  npu::HwConfig simple = test_hw();
  simple.dram.burst_bytes = 32;
  check_trace_adds_up(simple, "simple");
  // Banked: one line per burst, the first at the dma's start cycle 1.
  const std::string path = ::testing::TempDir() + "/dram_trace_lines.txt";
  simulate({dma(DType::f16, ub(0), gm(0), {32})}, banked_hw(), path);
  const std::vector<TraceLine> lines = read_trace(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].cycle, 1u);
  EXPECT_EQ(lines[1].address, 32u);
  EXPECT_EQ(lines[1].op, 'R');
}

TEST(DramBanked, DramTraceAddsUpWithL2HintsAndNamesThePrefetchingCore) {
  // Two cores behind a 64 KiB L2 (128-byte lines, 4 ways, 4 banks). Core 0 loads 8192 B from GM
  // 65536. Core 1 prefetches GM [0, 8192), runs a 4000-repeat vdup (4000 cycles) and then, after a
  // flag, loads 2048 B from GM 131072: the DRAM is idle long before that load arrives, so the
  // prefetch's 4 chunks are filled first. Nobody else reads GM [0, 8192): its trace lines are the
  // prefetch fills, all under core 1, 8192 bytes. In both models the trace's bytes add up to the
  // report's DRAM burst bytes.
  for (const bool banked : {true, false}) {
    npu::HwConfig hw = banked ? banked_hw() : test_hw();
    hw.dram.burst_bytes = 32;
    hw.cores = 2;
    hw.l2.capacity_bytes = 64 << 10;
    hw.l2.ways = 4;
    hw.l2.banks = 4;
    hw.l2.bytes_per_cycle = 32;
    Instruction prefetch;
    prefetch.op = Opcode::l2_prefetch;
    prefetch.args = isa::L2HintArgs{gm(0), 8192};
    isa::Program p = program({dma(DType::f16, ub(0), gm(65536), {4096})});
    p.cores.push_back(
        {prefetch, vec(Opcode::vdup, DType::f16, vo(ub(0)), vo(ub(0)), vo(ub(0)), 128, 4000, 1.0f),
         set_flag(Pipe::vector, Pipe::mte2, 0), wait_flag(Pipe::vector, Pipe::mte2, 0),
         dma(DType::f16, ub(32768), gm(131072), {1024})});
    const std::string path = ::testing::TempDir() + "/dram_trace_hints.txt";
    sim::SimOptions o;
    o.dram_trace_path = path;
    sim::Simulator s(hw, o);
    s.load(p);
    const sim::SimResult r = s.run();
    uint64_t bytes = 0, prefetched = 0;
    for (const TraceLine& t : read_trace(path)) {
      bytes += t.bytes;
      if (t.address < 8192) {
        EXPECT_EQ(t.core, 1) << "prefetch fill at " << t.address;
        EXPECT_EQ(t.op, 'R');
        prefetched += t.bytes;
      }
    }
    EXPECT_EQ(r.l2.prefetch_fill_bytes, 8192u) << banked;
    EXPECT_EQ(prefetched, 8192u) << banked;
    EXPECT_EQ(bytes, r.dram_burst_bytes) << banked;
    EXPECT_EQ(r.dram_burst_bytes, 8192u + 8192u + 2048u) << banked;
  }
}

TEST(DramBanked, ChromeTraceHasPerChannelAndRowBufferCounters) {
  // Two channels interleaved every burst; the per-channel counters (bytes per cycle, mean per
  // window W) sum back to each channel's burst bytes, the row-buffer counter to the requests.
  npu::HwConfig hw = banked_hw();
  hw.dram.banked.channels = 2;
  hw.dram.banked.address_mapping = "row bank column bank_group channel";
  npu::finalize_hw_config(hw);
  const std::string path = ::testing::TempDir() + "/dram_banked_trace.json";
  sim::SimOptions o;
  o.trace_path = path;
  sim::Simulator s(hw, o);
  s.load(program(mixed_dmas()));
  const sim::SimResult r = s.run();
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  const double window = doc["otherData"]["dram_counter_window_cycles"].get<double>();
  double bytes[2] = {0, 0}, total = 0;
  uint64_t outcomes = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "C") continue;
    const std::string name = e["name"];
    const double b = (e["args"].value("read", 0.0) + e["args"].value("write", 0.0)) * window;
    if (name.rfind("DRAM channel 0 ", 0) == 0) bytes[0] += b;
    if (name.rfind("DRAM channel 1 ", 0) == 0) bytes[1] += b;
    if (name.rfind("DRAM bytes per cycle", 0) == 0) total += b;
    if (name.rfind("DRAM row buffer", 0) == 0)
      outcomes += e["args"]["row_hits"].get<uint64_t>() + e["args"]["row_misses"].get<uint64_t>() +
                  e["args"]["bank_conflicts"].get<uint64_t>();
  }
  ASSERT_EQ(r.dram_channels.size(), 2u);
  for (int c = 0; c < 2; ++c)
    EXPECT_NEAR(bytes[c], double(r.dram_channels[c].read_bytes + r.dram_channels[c].write_bytes),
                1e-6);
  EXPECT_NEAR(total, double(r.dram_burst_bytes), 1e-6);
  EXPECT_EQ(outcomes, r.dram_channels[0].requests + r.dram_channels[1].requests);
  EXPECT_GT(r.dram_channels[0].requests, 0u);
  EXPECT_GT(r.dram_channels[1].requests, 0u);
}

}  // namespace
}  // namespace tessel
namespace tessel {
namespace {

TEST(DramBanked, Lpddr5PresetStreamsNearPeakAndCampsOnTwoChannelsAtA2KStride) {
  // hw_configs/npu_4core_lpddr5.yaml: 8 channels x 32 B per 2 nCK of 1.25 ns = 102.4 B/cycle at
  // 1 GHz. A 512 KB contiguous read spreads evenly (channels interleave every 128 B) and streams
  // row hits: it must reach at least 90% of the peak (refresh takes tRFC / tREFI = 7.2% of a
  // rank's time in steady state). Runs of 256 B every 2 KB (a weight tile of ResNet-50's layer4,
  // docs/results.md) touch 2 of the 8 channels (2 KB is a multiple of the 1 KB interleave
  // period) with the plain bit-slice interleave (channel_hash: none): at most 2 / 8 of the peak,
  // 25.6 B/cycle. The preset's XOR hash folds the address bits above the channel field into it:
  // the 512 runs (2 KB apart: bits 11.. vary) then cover all 8 channels and go faster than that.
  const std::string preset = std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core_lpddr5.yaml";
  const npu::HwConfig hw = npu::load_hw_config(preset);
  const npu::HwConfig sliced =
      npu::load_hw_config(preset, {{"memory.dram.banked.channel_hash", "none"}});
  ASSERT_TRUE(hw.dram.banked.channel_xor);
  std::vector<uint64_t> stream, camp;
  for (uint64_t i = 0; i < 512 * 1024 / 32; ++i) stream.push_back((1 << 20) + i * 32);
  for (uint64_t run = 0; run < 512; ++run)
    for (uint64_t b = 0; b < 8; ++b) camp.push_back((1 << 22) + run * 2048 + b * 32);
  BankedDram d1(hw), d2(sliced), d3(hw);
  const double stream_bpc = 512 * 1024.0 / double(d1.serve(0, true, stream));
  const double camp_bpc = 512 * 256.0 / double(d2.serve(0, true, camp));
  const double hashed_bpc = 512 * 256.0 / double(d3.serve(0, true, camp));
  EXPECT_GE(stream_bpc, 0.9 * 102.4);
  EXPECT_LE(stream_bpc, 102.4);
  EXPECT_LE(camp_bpc, 25.6);
  EXPECT_GT(hashed_bpc, 25.6);
  auto used = [](const BankedDram& d) {
    int n = 0;
    for (const sim::DramChannelStats& c : d.stats()) n += c.requests > 0;
    return n;
  };
  EXPECT_EQ(used(d2), 2);
  EXPECT_EQ(used(d3), 8);
}

TEST(DramBanked, XorHashFoldsTheBitsAboveTheChannel) {
  // 4 channels, mapping "row bank column bank_group channel": burst index bits 0-1 channel, bit 2
  // bank group, 5 column bits, 1 bank bit, row. XOR: channel ^= (index >> 2) & 3 ^ (index >> 4)
  // & 3 ^ ... Burst index 0b1_0110_0101 = 357: slice channel 1; above = 357 >> 2 = 89 =
  // 0b01_01_10_01: groups 01, 10, 01, 01 -> 1 ^ 2 ^ 1 ^ 1 = 3; channel 1 ^ 3 = 2. Other fields
  // keep their slice.
  npu::HwConfig hw = banked_hw();
  hw.dram.banked.channels = 4;
  hw.dram.banked.address_mapping = "row bank column bank_group channel";
  hw.dram.banked.channel_xor = true;
  npu::finalize_hw_config(hw);
  const npu::DramAddressMap map(hw.dram.banked);
  const npu::DramCoord c = map.map(357 * 32);
  EXPECT_EQ(c.channel, 2u);
  EXPECT_EQ(c.bank_group, 1u);  // bit 2 of 357
  EXPECT_EQ(c.column, 357u >> 3 & 31);
  hw.dram.banked.channel_xor = false;
  EXPECT_EQ(npu::DramAddressMap(hw.dram.banked).map(357 * 32).channel, 1u);
}

}  // namespace
}  // namespace tessel
