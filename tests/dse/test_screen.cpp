// The analytical screening of a sweep (compiler/dse/screen.h, docs/dse.md "Screening"): Kendall's
// tau-b on known rankings, a kernel's estimate re-priced for another DRAM channel derived by hand,
// a lowered model's estimate equal to the cost model's sum, and `tessel dse` with `screen:` end
// to end (estimates stored, the best K simulated, tau printed, mistakes are errors).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "compiler/backend/npu/compile.h"
#include "compiler/driver/report.h"
#include "compiler/driver/runner.h"
#include "compiler/dse/screen.h"
#include "compiler/dse/store.h"
#include "compiler/support/error.h"
#include "tests/cli/cli_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = TESSEL_SOURCE_DIR;
const std::string kModels = TESSEL_MODELS_DIR;

TEST(DseScreen, KendallTauOnKnownRankings) {
  const std::vector<double> x = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(dse::kendall_tau(x, {10, 20, 30, 40, 50}), 1.0);
  EXPECT_DOUBLE_EQ(dse::kendall_tau(x, {5, 4, 3, 2, 1}), -1.0);
  // One adjacent swap: 10 pairs, 1 discordant, 9 concordant: (9 - 1) / 10.
  EXPECT_DOUBLE_EQ(dse::kendall_tau(x, {2, 1, 3, 4, 5}), 0.8);
  // A tie in x: 6 pairs, the tied one neither concordant nor discordant, 5 concordant:
  // tau-b = 5 / sqrt((6 - 1) (6 - 0)) = 0.912871 (scipy.stats.kendalltau([1,2,2,3],[1,2,3,4])).
  EXPECT_NEAR(dse::kendall_tau({1, 2, 2, 3}, {1, 2, 3, 4}), 5 / std::sqrt(30.0), 1e-12);
  EXPECT_THROW(dse::kendall_tau({1, 2}, {1, 2, 3}), Error);
  EXPECT_THROW(dse::kendall_tau({1}, {1}), Error);
  EXPECT_THROW(dse::kendall_tau({3, 3, 3}, {1, 2, 3}), Error);
}

/// A GM -> L1 load of `elems` contiguous fp16 elements.
isa::Instruction gm_load(uint32_t elems) {
  isa::Instruction in;
  in.op = isa::Opcode::dma;
  isa::DmaArgs d;
  d.dtype = isa::DType::f16;
  d.src = {isa::Scope::gm, 0, 0};
  d.dst = {isa::Scope::l1, 0, 0};
  d.ndims = 1;
  d.extent[0] = elems;
  d.src_stride[0] = d.dst_stride[0] = 1;
  d.valid_end[0] = elems;
  in.args = d;
  return in;
}

TEST(DseScreen, RepricedKernelEstimateByHand) {
  npu::HwConfig hw = npu::load_hw_config(kSrc + "/hw_configs/npu_4core.yaml");
  ASSERT_EQ(hw.core.mte2.bytes_per_cycle, 64);
  ASSERT_EQ(hw.core.mte2.latency_cycles, 100);
  ASSERT_EQ(hw.dram.bytes_per_cycle, 102);
  ASSERT_EQ(hw.dram.latency_cycles, 200);
  // A kernel of 10 tiles, each one GM load of 4096 fp16 = 8192 bytes (256 whole 32-byte bursts).
  npu::KernelProfile p;
  p.add(hw, gm_load(4096), 1);
  p.tiles = 10;
  p.dram_bytes = 10 * 8192;
  // On npu_4core: MTE2 occupancy 8192 / 64 = 128 >= the DRAM transfer ceil(8192 / 102) = 81;
  // latency 100 (MTE2) + 200 (DRAM) = 300. One step's chain c = 128 + 300 = 428; double buffered,
  // a tile takes max(128, 428 / 2) = 214 in steady state (latency-bound); the first tile's chain
  // and then 9 more at 214: core = 10 x 214 + (428 - 214) = 2354; DRAM = ceil(81920 / 102) + the
  // chain apart from its own transfer (428 - 128 = 300) = 804 + 300 = 1104; the estimate is the
  // larger, 2354.
  dse::ScreenAnchor a;
  a.kernels = {p};
  a.priced_dram_latency_cycles = 200;
  dse::ScreenScratch scratch;
  EXPECT_DOUBLE_EQ(dse::estimate_cycles(a, hw, scratch), 2354);
  // At 16 B/cycle and 400 cycles of DRAM latency: occupancy max(128, 8192 / 16 = 512) = 512,
  // latency 100 + 400 = 500, c = 1012, steady max(512, 506) = 512; core = 10 x 512 + (1012 - 512)
  // = 5620, DRAM = 81920 / 16 + (1012 - 512) = 5620: 5620.
  dse::set_screen_point_key(hw, "memory.dram.bytes_per_cycle", 16);
  dse::set_screen_point_key(hw, "memory.dram.latency_cycles", 400);
  EXPECT_DOUBLE_EQ(dse::estimate_cycles(a, hw, scratch), 5620);
  // Re-pricing gives what pricing the same instruction on that config gives.
  npu::KernelProfile q;
  q.add(hw, gm_load(4096), 1);
  q.tiles = 10;
  q.dram_bytes = 10 * 8192;
  EXPECT_DOUBLE_EQ(npu::estimate_kernel(hw, q).cycles, 5620);
  // The same kernel split over 4 cores (each with 10 tiles, 40 x 8192 bytes in all) on npu_4core:
  // each load is priced on the whole channel plus the wait for (4 - 1) / 2 of the other cores'
  // loads in the FIFO channel, weighted by the channel's utilisation without it (3213 channel
  // cycles over a 2354-cycle pipeline: saturated, 1): occupancy 128 + 1.5 x 81 = 249.5, c = 549.5,
  // steady max(249.5, 274.75) = 274.75, core = 10 x 274.75 + 274.75 = 3022.25; the cores share the
  // channel through the kernel's DRAM time: ceil(327680 / 102) + (549.5 - 249.5) = 3213 + 300 =
  // 3513, the estimate (DRAM-bound).
  dse::set_screen_point_key(hw, "memory.dram.bytes_per_cycle", 102);
  dse::set_screen_point_key(hw, "memory.dram.latency_cycles", 200);
  a.kernels[0].cores_used = 4;
  a.kernels[0].dram_bytes = 40 * 8192;
  EXPECT_DOUBLE_EQ(dse::estimate_cycles(a, hw, scratch), 3513);
  EXPECT_THROW(dse::set_screen_point_key(hw, "memory.dram.bytes_per_cycle", 0), Error);
  EXPECT_THROW(dse::set_screen_point_key(hw, "memory.dram.bytes_per_cycle", 2.5), Error);
  EXPECT_THROW(dse::set_screen_point_key(hw, "core.cube.m", 16), Error);
  EXPECT_TRUE(dse::is_screen_point_key("memory.dram.latency_cycles"));
  EXPECT_FALSE(dse::is_screen_point_key("core.cube.m"));
}

/// A UB -> GM store of `elems` contiguous fp16 elements.
isa::Instruction gm_store(uint32_t elems) {
  isa::Instruction in = gm_load(elems);
  auto& d = std::get<isa::DmaArgs>(in.args);
  d.src = {isa::Scope::ub, 0, 0};
  d.dst = {isa::Scope::gm, 0, 0};
  return in;
}

// The latencies a tile exposes, as the simulator overlaps them: two GM loads issued back to back
// on MTE2 in each K step and one set_flag after them hold MTE2 for one latency per step, not one
// per load; the epilogue's store (once per tile) adds its latency to the chain once per tile, not
// once per step.
TEST(DseScreen, BackToBackTransfersShareOneLatency) {
  npu::HwConfig hw = npu::load_hw_config(kSrc + "/hw_configs/npu_4core.yaml");
  ASSERT_EQ(hw.core.mte3.bytes_per_cycle, 64);
  ASSERT_EQ(hw.core.mte3.latency_cycles, 100);
  ASSERT_EQ(hw.core.scalar.cycles_per_instruction, 1);
  // 10 tiles of 2 K steps; per step two flagged loads of 8192 bytes (occupancy max(128, ceil(8192
  // / 102) = 81) = 128, latency 100 + 200 = 300), per tile one flagged store of 8192 bytes (MTE3
  // occupancy 128, latency 300).
  npu::KernelProfile p;
  p.add(hw, gm_load(4096), 2, 0, true);
  p.add(hw, gm_load(4096), 2, 0, true);
  p.add(hw, gm_store(4096), 1, 0, true);
  p.tiles = 10;
  p.steps_per_tile = 2;
  p.dram_bytes = 10 * 5 * 8192;
  // MTE2 per tile: 4 x 128 + 2 steps x one latency 300 = 1112 (the old model: 4 x (128 + 300) =
  // 1712); MTE3: 128 + 300 = 428. The chain: occupancies 640 + 2 steps x MTE2's 300 + the
  // store's 300 once = 1540, half of it 770 < 1112: steady 1112 (MTE2). One step's chain: 640 / 2
  // + 300 + 300 = 920, of which the fill is what one step's share of the steady tile (1112 / 2 =
  // 556) does not cover: 364. core = 10 x 1112 + 364 = 11484; DRAM = ceil(409600 / 102) + the
  // step's chain apart from its own transfers (920 - 640 / 2 = 600) = 4016 + 600 = 4616: 11484.
  const npu::CostEstimate e = npu::estimate_kernel(hw, p);
  EXPECT_DOUBLE_EQ(e.steady_tile_cycles, 1112);
  EXPECT_DOUBLE_EQ(e.chain_cycles, 1540);
  EXPECT_DOUBLE_EQ(e.dram_cycles, 4616);
  EXPECT_DOUBLE_EQ(e.cycles, 11484);
  EXPECT_STREQ(e.bound, "mte2");
  // Loads issued a different number of times per tile are behind different set_flags: one load
  // per step and one per tile (a residual input) hold MTE2 for 2 + 1 latencies per tile.
  npu::KernelProfile r;
  r.add(hw, gm_load(4096), 2, 0, true);
  r.add(hw, gm_load(4096), 1, 0, true);
  r.tiles = 10;
  r.steps_per_tile = 2;
  EXPECT_DOUBLE_EQ(npu::estimate_kernel(hw, r).busy[static_cast<int>(isa::Pipe::mte2)],
                   10 * (3 * 128 + 3 * 300));
  // Loads issued as often but behind different set_flags (flag groups: the input and weights of
  // a step read by the cube, a bias read only by the epilogue's vector stage, as insert_sync
  // places them) hold MTE2 once per set_flag: 2 groups x 300 per step, not one 300.
  npu::KernelProfile g;
  g.add(hw, gm_load(4096), 1, 0, true, 0);
  g.add(hw, gm_load(4096), 1, 0, true, 0);
  g.add(hw, gm_load(16), 1, 0, true, 1);
  g.tiles = 10;
  // MTE2 per tile: 2 x 128 + the 32-byte bias (occupancy max(ceil(32 / 64), ceil(32 / 102)) = 1)
  // + 2 x 300 = 857.
  EXPECT_DOUBLE_EQ(npu::estimate_kernel(hw, g).busy[static_cast<int>(isa::Pipe::mte2)],
                   10 * (2 * 128 + 1 + 2 * 300));
}

// Single-buffered tiles run one after another: N tiles take N chains, with no fill on top (the
// first tile is one of them); the scalar unit's own instructions (loops, addresses) lengthen a
// chain where they exceed the busiest pipe's occupancy.
TEST(DseScreen, SingleBufferedTilesAndScalarIssue) {
  npu::HwConfig hw = npu::load_hw_config(kSrc + "/hw_configs/npu_4core.yaml");
  npu::KernelProfile p;
  p.add(hw, gm_load(4096), 1, 0, true);
  p.add(hw, gm_store(4096), 1, 0, true);
  p.tiles = 3;
  p.double_buffer = false;
  // Chain: 128 + 128 + 300 (MTE2) + 300 (MTE3) = 856; MTE2 per tile 428. 3 x 856 = 2568.
  EXPECT_DOUBLE_EQ(npu::estimate_kernel(hw, p).core_cycles, 3 * 856);
  // 1,000 scalar instructions per tile (besides the 2 issues): 1002 > the busiest pipe's
  // occupancy 128 by 874, so the chain is 856 + 874 = 1730, and the scalar unit (1002 per tile)
  // does not bound it: 3 x 1730.
  p.scalar_per_tile = 1000;
  const npu::CostEstimate e = npu::estimate_kernel(hw, p);
  EXPECT_DOUBLE_EQ(e.chain_cycles, 1730);
  EXPECT_DOUBLE_EQ(e.core_cycles, 3 * 1730);
  EXPECT_DOUBLE_EQ(e.busy[static_cast<int>(isa::Pipe::scalar)], 3 * 1002);
}

TEST(DseScreen, BandwidthOctaves) {
  // round(log2(B)): 257 -> 8.006 -> 256; 362 -> 8.4998 -> 256; 363 -> 8.504 -> 512; 370 -> 512.
  EXPECT_EQ(dse::bandwidth_octave(257), 8);
  EXPECT_EQ(dse::bandwidth_octave(362), 8);
  EXPECT_EQ(dse::bandwidth_octave(363), 9);
  EXPECT_EQ(dse::octave_bytes_per_cycle(dse::bandwidth_octave(370)), 512);
  EXPECT_EQ(dse::octave_bytes_per_cycle(dse::bandwidth_octave(102)), 128);
  EXPECT_EQ(dse::octave_bytes_per_cycle(dse::bandwidth_octave(1)), 1);
  EXPECT_EQ(dse::bandwidth_octave(0), 0);  // clamped to 1 B/cycle
  // Latency bands likewise: 100 -> 6.64 -> 128; 181 -> 7.499 -> 128; 182 -> 7.508 -> 256; 200 ->
  // 256; 400 -> 8.64 -> 512; 0 cycles -> band 0 (1 cycle).
  EXPECT_EQ(dse::band_latency_cycles(dse::latency_band(100)), 128);
  EXPECT_EQ(dse::latency_band(181), 7);
  EXPECT_EQ(dse::latency_band(182), 8);
  EXPECT_EQ(dse::band_latency_cycles(dse::latency_band(200)), 256);
  EXPECT_EQ(dse::band_latency_cycles(dse::latency_band(400)), 512);
  EXPECT_EQ(dse::latency_band(0), 0);
}

// A swept DRAM latency splits the anchors by band as the bandwidth does by octave: the tiles an
// anchor's estimates price are chosen near each point's latency.
TEST(DseScreen, LatencyBandsAreAnchors) {
  const fs::path d = temp_dir("dse_screen_latency");
  write(d / "e.yaml", "name: s\nsweep:\n  base: " + kSrc +
                          "/hw_configs/npu_4core.yaml\n  grid: {core.cube.m: [8, 16], "
                          "memory.dram.latency_cycles: [100, 120, 400]}\nworkloads: [{model: " +
                          kModels +
                          "/hello_deepa.onnx}]\nobjectives: [cycles]\nscreen: {keep: 2}\n");
  const auto r = run_tessel("dse " + (d / "e.yaml").string() + " --out " + (d / "o").string(),
                            "dse_screen_latency");
  ASSERT_EQ(r.code, 0) << r.err;
  // 6 points: 2 structural configs x latency bands 7 (100, 120: lowered at 128) and 9 (400: at
  // 512).
  EXPECT_CONTAINS(r.out,
                  "6 points x 1 workload screened analytically (0 dropped by where:): 2 "
                  "structural configs, 4 anchors lowered");
}

TEST(DseScreen, LoweredModelEstimateIsTheCostModelSumAndFollowsDram) {
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::npu);
  const auto g = driver::load_model(kModels + "/hello_deepa.onnx", {}, passes);
  // One core: no channel sharing, so at the anchor's own config the estimate is the cost
  // model's sum over the analytical default's kernels plus one scalar issue per kernel barrier.
  npu::HwConfig hw = npu::load_hw_config(kSrc + "/hw_configs/npu_4core.yaml", {{"cores", "1"}});
  const dse::ScreenAnchor a = dse::lower_anchor(*g, hw, {});
  const npu_backend::LoweredGraph lowered(*g, hw, {});
  ASSERT_EQ(a.kernels.size(), lowered.kernels().size());
  ASSERT_GT(a.kernels.size(), 1u);
  double sum = static_cast<double>(a.kernels.size());
  for (const auto& k : lowered.kernels())
    sum += npu::estimate_kernel(hw, k.schedule->profile(k.knobs)).cycles;
  dse::ScreenScratch scratch;
  EXPECT_DOUBLE_EQ(dse::estimate_cycles(a, hw, scratch), sum);
  // Less DRAM bandwidth or more latency never makes it faster; far less makes it slower.
  const double at102 = sum;
  dse::set_screen_point_key(hw, "memory.dram.bytes_per_cycle", 8);
  const double at8 = dse::estimate_cycles(a, hw, scratch);
  EXPECT_GT(at8, 1.5 * at102);
  dse::set_screen_point_key(hw, "memory.dram.latency_cycles", 1000);
  EXPECT_GT(dse::estimate_cycles(a, hw, scratch), at8);
  // On 4 cores as well: the screen prices each transfer as the cost model does (the channel
  // shared by a split kernel's cores is its DRAM term), so at the anchor's own config the
  // estimate is the cost model's sum.
  const npu::HwConfig hw4 = npu::load_hw_config(kSrc + "/hw_configs/npu_4core.yaml");
  const dse::ScreenAnchor a4 = dse::lower_anchor(*g, hw4, {});
  const npu_backend::LoweredGraph lowered4(*g, hw4, {});
  double sum4 = static_cast<double>(a4.kernels.size());
  bool split = false;
  for (const auto& k : lowered4.kernels()) {
    const npu::KernelProfile p = k.schedule->profile(k.knobs);
    sum4 += npu::estimate_kernel(hw4, p).cycles;
    split |= p.cores_used > 1;
  }
  ASSERT_TRUE(split);
  EXPECT_DOUBLE_EQ(dse::estimate_cycles(a4, hw4, scratch), sum4);
}

std::string experiment(const std::string& extra) {
  return "name: s\nsweep:\n  base: " + kSrc +
         "/hw_configs/npu_4core.yaml\n  grid: {core.cube.m: [8, 16], memory.dram.bytes_per_cycle: "
         "[8, 32, 128]}\nworkloads: [{model: " +
         kModels + "/hello_deepa.onnx}]\nobjectives: [cycles, dram_bytes]\n" + extra;
}

std::vector<std::vector<std::string>> csv_rows(const fs::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(slurp_file(p));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::string cell;
    std::istringstream ls(line);
    while (std::getline(ls, cell, ',')) f.push_back(cell);
    if (!line.empty() && line.back() == ',') f.push_back("");
    rows.push_back(f);
  }
  return rows;
}

TEST(DseScreen, SweepSimulatesTheBestEstimatesAndReportsTau) {
  const fs::path d = temp_dir("dse_screen");
  write(d / "e.yaml", experiment("screen: {keep: 3}\n"));
  const auto r =
      run_tessel("dse " + (d / "e.yaml").string() + " --out " + (d / "o").string(), "dse_screen");
  ASSERT_EQ(r.code, 0) << r.err;
  // 6 points, 2 structural configs (cube m) x 3 DRAM bandwidth octaves (8, 32, 128 B/cycle:
  // octaves 3, 5, 7), each anchor lowered once.
  EXPECT_CONTAINS(r.out,
                  "6 points x 1 workload screened analytically (0 dropped by where:): 2 "
                  "structural configs, 6 anchors lowered");
  EXPECT_CONTAINS(r.out, "simulating the 3 best");
  EXPECT_CONTAINS(r.out, "screen hello_deepa: Kendall tau-b");
  EXPECT_CONTAINS(r.out, "over 3 simulated points");
  const auto sc = csv_rows(d / "o" / "screen.csv");
  ASSERT_EQ(sc.size(), 7u);
  EXPECT_EQ(sc[0], (std::vector<std::string>{"point", "workload", "core.cube.m",
                                             "memory.dram.bytes_per_cycle", "status", "reason",
                                             "estimated_cycles", "fidelity", "total_cycles"}));
  // The 3 simulated points are the 3 lowest estimates, and only they have simulated cycles.
  std::vector<std::pair<double, std::string>> est;
  for (size_t i = 1; i < sc.size(); ++i) {
    EXPECT_EQ(sc[i][4], "estimated");
    est.emplace_back(std::stod(sc[i][6]), sc[i][0]);
  }
  std::sort(est.begin(), est.end());
  std::set<std::string> best = {est[0].second, est[1].second, est[2].second};
  size_t simulated = 0;
  for (size_t i = 1; i < sc.size(); ++i) {
    const bool sim = sc[i][7] == "simulated";
    simulated += sim;
    EXPECT_EQ(sim, best.count(sc[i][0]) > 0) << "point " << sc[i][0];
    EXPECT_EQ(sim, !sc[i][8].empty());
    // DRAM at 8 B/cycle is never among the best estimates of hello_deepa.
    if (sc[i][3] == "8") EXPECT_FALSE(sim);
  }
  EXPECT_EQ(simulated, 3u);
  // Each point's estimate is priced on the anchor lowered at its octave's bandwidth: the point
  // m = 8, 32 B/cycle has the estimate of hello_deepa's tiles chosen at 32 B/cycle (not at the
  // base config's 102 B/cycle, where the analytical default picks other tiles).
  {
    graph_passes::PipelineOptions passes;
    passes.available = driver::target_ops(driver::Target::npu);
    const auto g = driver::load_model(kModels + "/hello_deepa.onnx", {}, passes);
    const npu::HwConfig hw32 =
        npu::load_hw_config(kSrc + "/hw_configs/npu_4core.yaml",
                            {{"core.cube.m", "8"}, {"memory.dram.bytes_per_cycle", "32"}});
    dse::ScreenScratch scratch;
    const double expected = dse::estimate_cycles(dse::lower_anchor(*g, hw32, {}), hw32, scratch);
    bool found = false;
    for (size_t i = 1; i < sc.size(); ++i)
      if (sc[i][2] == "8" && sc[i][3] == "32") {
        EXPECT_EQ(sc[i][6], fmt::format("{:.0f}", expected));
        found = true;
      }
    EXPECT_TRUE(found);
  }
  // results.csv holds the simulated points only; the store holds every estimate.
  EXPECT_EQ(csv_rows(d / "o" / "results.csv").size(), 4u);
  const auto store = dse::ResultStore::open((d / "o" / "results.sqlite").string());
  EXPECT_EQ(store.screen_count(), 6);
  const auto s0 = store.screen_rows(0);
  ASSERT_EQ(s0.size(), 1u);
  EXPECT_EQ(s0[0].status, "estimated");
  EXPECT_EQ(fmt::format("{:.0f}", *s0[0].estimated_cycles), sc[1][6]);
  // --explain of a point that was estimated but not simulated gives its estimate.
  for (size_t i = 1; i < sc.size(); ++i)
    if (sc[i][7] == "estimate") {
      const auto e =
          run_tessel("dse --explain " + (d / "o").string() + " " + sc[i][0], "dse_screen");
      ASSERT_EQ(e.code, 0) << e.err;
      EXPECT_CONTAINS(e.out, "workload hello_deepa: screened, not simulated: estimated " +
                                 driver::with_commas(std::stoull(sc[i][6])) +
                                 " cycles (analytical model)");
      break;
    }
  // A resume recomputes the same screening and runs nothing more.
  const std::string first = slurp_file(d / "o" / "screen.csv");
  const auto again =
      run_tessel("dse " + (d / "e.yaml").string() + " --out " + (d / "o").string() + " --resume",
                 "dse_screen");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_CONTAINS(again.out, "ran 0 point runs");
  EXPECT_EQ(slurp_file(d / "o" / "screen.csv"), first);
}

TEST(DseScreen, ScreeningMistakesAreErrors) {
  const fs::path d = temp_dir("dse_screen_err");
  const auto fails = [&](const std::string& text, const std::string& message) {
    write(d / "e.yaml", text);
    const auto r = run_tessel("dse " + (d / "e.yaml").string() + " --out " + (d / "o").string(),
                              "dse_screen_err");
    EXPECT_EQ(r.code, 2) << text;
    EXPECT_CONTAINS(r.err, message);
  };
  fails(experiment("screen: {keep: 0}\n"), "screen.keep");
  fails(experiment("screen: {keep: 7}\n"), "expected 1 .. 6");
  fails(experiment("screen: {kep: 2}\n"), "unknown key");
  fails(experiment("screen: 4\n"), "expected a mapping such as {keep: 32}");
  fails(experiment("screen: {}\n"), "missing 'keep'");
  fails("name: s\nsweep:\n  base: " + kSrc +
            "/hw_configs/npu_4core.yaml\n  grid: {core.cube.m: [8, 16]}\n  search: {population: "
            "8, generations: 1}\nworkloads: [{model: " +
            kModels + "/hello_deepa.onnx}]\nscreen: {keep: 1}\n",
        "does not apply with sweep.search");
  fails("name: s\nsweep:\n  base: " + kSrc +
            "/hw_configs/npu_4core.yaml\n  grid: {core.cube.m: [8]}\nworkloads: [{model: " +
            kModels + "/hello_deepa.onnx}]\nscreen: {keep: 1}\n",
        "nothing to screen");
}

}  // namespace
}  // namespace tessel::testing
