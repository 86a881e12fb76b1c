// Tests of the area and energy model (npu_model/area_energy.h) and its technology tables
// (hw_configs/tech/*.yaml): a tiny program's area and energy derived by hand, the 45 nm table's
// numbers against their sources, energy growing with exactly the counts that should drive it,
// and bad tables / bad `tech` keys giving errors that name the file, line and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/support/error.h"
#include "npu_model/area_energy.h"
#include "npu_model/hw_config.h"
#include "simulator/simulator.h"
#include "tests/npu_model/npu_model_test_util.h"

namespace tessel::npu {
namespace {

const std::string kSourceDir = TESSEL_SOURCE_DIR;
const std::string kRoundTable = kSourceDir + "/tests/npu_model/data/tech_round.yaml";
const std::string kTech45 = kSourceDir + "/hw_configs/tech/45nm.yaml";

using testutil::read_text;
using testutil::replaced;

/// The message of the tessel::Error `f` throws ("" and a test failure when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no tessel::Error thrown";
  return "";
}

// The small NPU of the hand derivations: 2 cores at 0.5 GHz, cube 4x4x4 fp16 -> fp32, vector
// 64 B, L1 16 KiB, L0A/L0B/L0C 4 KiB, UB 16 KiB, MTE1/FIX 64 B/cycle, MTE2/MTE3 32 B/cycle,
// DRAM 16 B/cycle in 32-byte bursts.
const std::string kSmallNpu = R"(name: small
clock_ghz: 0.5
cores: 2
core:
  scalar: {cycles_per_instruction: 1, issue_queue_depth: 16}
  cube: {m: 4, k: 4, n: 4, input_dtype: fp16, acc_dtype: fp32, pipeline_latency_cycles: 8}
  vector: {width_bytes: 64, pipeline_latency_cycles: 4}
  buffers_bytes: {l1: 16384, l0a: 4096, l0b: 4096, l0c: 4096, ub: 16384}
  dma:
    mte1: {bytes_per_cycle: 64, latency_cycles: 4}
    mte2: {bytes_per_cycle: 32, latency_cycles: 100}
    mte3: {bytes_per_cycle: 32, latency_cycles: 100}
    fix: {bytes_per_cycle: 64, latency_cycles: 4}
  sync: {event_ids: 8}
memory:
  dram: {bytes_per_cycle: 16, latency_cycles: 200, capacity_bytes: 1048576, burst_bytes: 32}
)";

// One 4x4x4 GEMM tile on core 0 (core 1 idle), fp16 A, B and C:
//   dma GM->L1 A, B (16 f16 = 32 B each); load2d L1->L0A, L1->L0B (32 B each); mmad 1x1x1;
//   fix L0C->UB (64 B of fp32 accumulators -> 32 B fp16); vrelu.f16 16 (UB -> UB);
//   vmul.f16 16 (two UB sources); dma UB->GM C (32 B); 15 instructions fetched with the syncs;
//   1000 cycles.
// Bytes per scope: l1 written 64 (the two loads), read 64 (load2d) -> 128;
//   l0a 32 + 32 = 64; l0b 64; l0c written 64 (mmad), read 64 (fix) -> 128;
//   ub written 32 (fix) + 32 (vrelu) + 32 (vmul), read 32 (vrelu) + 64 (vmul) + 32 (MTE3) -> 224.
// Pipes delivered: MTE2 64, MTE1 64, FIX 32, MTE3 32 bytes. DRAM: three aligned 32-byte bursts.
Activity gemm_tile_activity() {
  Activity a;
  a.cycles = 1000;
  a.scalar_instructions = 15;
  a.ops.cube_macs = 4 * 4 * 4;
  a.ops.vector_elem_ops[int(VectorOpClass::add)][int(TechType::fp16)] = 16;   // vrelu
  a.ops.vector_elem_ops[int(VectorOpClass::mult)][int(TechType::fp16)] = 16;  // vmul
  auto scope = [&](isa::Scope s, uint64_t read, uint64_t written) {
    a.bytes_read[int(s)] = read;
    a.bytes_written[int(s)] = written;
  };
  scope(isa::Scope::gm, 64, 32);
  scope(isa::Scope::l1, 64, 64);
  scope(isa::Scope::l0a, 32, 32);
  scope(isa::Scope::l0b, 32, 32);
  scope(isa::Scope::l0c, 64, 64);
  scope(isa::Scope::ub, 128, 96);
  a.ops.pipe_bytes_written[int(isa::Pipe::mte2)] = 64;
  a.ops.pipe_bytes_written[int(isa::Pipe::mte1)] = 64;
  a.ops.pipe_bytes_written[int(isa::Pipe::fix)] = 32;
  a.ops.pipe_bytes_written[int(isa::Pipe::mte3)] = 32;
  a.ops.pipe_bytes_written[int(isa::Pipe::cube)] = 64;  // L0C: the cube is not a DMA engine
  a.dram_burst_bytes = 96;
  return a;
}

const ComponentEstimate& component(const AreaEnergy& r, const std::string& name) {
  for (const ComponentEstimate& c : r.components)
    if (c.name == name) return c;
  ADD_FAILURE() << "no component " << name;
  static const ComponentEstimate none;
  return none;
}

TEST(AreaEnergy, GemmTileDerivedByHand) {
  const HwConfig hw = parse_hw_config(kSmallNpu, "<small>");
  const TechTable tech = load_tech_table(kRoundTable);
  const AreaEnergy r = estimate_area_energy(hw, tech, gemm_tile_activity());
  ASSERT_EQ(r.components.size(), 14u);
  const char* order[] = {"cube", "vector", "scalar", "l1",   "l0a",  "l0b", "l0c",
                         "ub",   "l2",     "mte1",   "mte2", "mte3", "fix", "dram"};
  for (size_t i = 0; i < 14; ++i) EXPECT_EQ(r.components[i].name, order[i]);
  // Run time: 1000 cycles / 0.5e9 Hz = 2e-6 s.
  EXPECT_DOUBLE_EQ(r.seconds, 2e-6);
  constexpr double kEps = 1e-12;  // uJ and mm2 figures here are >= 1e-4: exact but for rounding
  struct Want {
    const char* name;
    double area_mm2, dynamic_uj, leakage_uj;
  };
  // Areas (um2 per core x 2 cores / 1e6 -> mm2); dynamic energy (pJ / 1e6 -> uJ); leakage =
  // area x density (logic 10, SRAM 20 mW/mm2) x 1e-3 x 2e-6 s x 1e6 uJ/J = area x density x 2e-3.
  const Want want[] = {
      // cube: 4*4*4 = 64 MAC units x (fp16 mult 300 + fp32 add 400 um2) = 44800 um2 per core;
      // 64 MACs x (1.5 + 1) pJ = 160 pJ. Leakage 0.0896 x 10 x 2e-3.
      {"cube", 0.0896, 160e-6, 0.0896 * 10 * 2e-3},
      // vector: 64 B / 4 = 16 fp32 lanes x (400 + 800) = 19200 um2; 16 adds x 0.5 + 16 mults x
      // 1.5 (fp16) = 32 pJ.
      {"vector", 0.0384, 32e-6, 0.0384 * 10 * 2e-3},
      // scalar: 32 x 64 bits x 5 um2 + int64 adder 200 + multiplier 1000 = 11440 um2; 15
      // instructions x 50 pJ = 750 pJ.
      {"scalar", 0.02288, 750e-6, 0.02288 * 10 * 2e-3},
      // SRAMs: area = bytes x 8 x 0.5 um2 / 0.5 efficiency x (1 + 0.25 (ports - 1)); energy =
      // bytes / 8 (64-bit accesses) x E(C), E(C) = sqrt(C / 1024) pJ (the points lie on it).
      // l1: 131072 um2 x 1.5 (3 ports) = 196608 per core; 128 B = 16 accesses x E(16384) = 4 pJ.
      {"l1", 0.393216, 64e-6, 0.393216 * 20 * 2e-3},
      // l0a, l0b: 32768 x 1.25 (2 ports) = 40960; 64 B = 8 accesses x E(4096) = 2 pJ = 16 pJ.
      {"l0a", 0.08192, 16e-6, 0.08192 * 20 * 2e-3},
      {"l0b", 0.08192, 16e-6, 0.08192 * 20 * 2e-3},
      // l0c: 40960 (2 ports); 128 B = 16 accesses x 2 pJ = 32 pJ.
      {"l0c", 0.08192, 32e-6, 0.08192 * 20 * 2e-3},
      // ub: 131072 x 1.75 (4 ports) = 229376; 224 B = 28 accesses x 4 pJ = 112 pJ.
      {"ub", 0.458752, 112e-6, 0.458752 * 20 * 2e-3},
      // l2: this config has none.
      {"l2", 0, 0, 0},
      // DMA engines: staging bytes_per_cycle x 8 x 2 x 5 um2 + 4 x (int32 adder 50 + 64 x 5)
      // = 1480 um2 of address generators; energy = bytes x 8 x 2 x 0.01 pJ = bytes x 0.16 pJ.
      // mte1: 5120 + 1480 = 6600 um2; 64 B -> 10.24 pJ.
      {"mte1", 0.0132, 10.24e-6, 0.0132 * 10 * 2e-3},
      // mte2: 2560 + 1480 = 4040 um2; 64 B -> 10.24 pJ.
      {"mte2", 0.00808, 10.24e-6, 0.00808 * 10 * 2e-3},
      // mte3: 4040 um2; 32 B -> 5.12 pJ.
      {"mte3", 0.00808, 5.12e-6, 0.00808 * 10 * 2e-3},
      // fix: 6600 um2; 32 B -> 5.12 pJ.
      {"fix", 0.0132, 5.12e-6, 0.0132 * 10 * 2e-3},
      // dram (chip-wide): 16 B/cycle x 0.5 GHz = 8 GB/s x 0.2 mm2 per GB/s = 1.6 mm2;
      // 96 burst bytes x 8 x 10 pJ/bit = 7680 pJ.
      {"dram", 1.6, 7680e-6, 1.6 * 10 * 2e-3},
  };
  double area = 0, dynamic = 0, leakage = 0;
  for (const Want& w : want) {
    SCOPED_TRACE(w.name);
    const ComponentEstimate& c = component(r, w.name);
    EXPECT_NEAR(c.area_mm2, w.area_mm2, kEps);
    EXPECT_NEAR(c.dynamic_uj, w.dynamic_uj, kEps);
    EXPECT_NEAR(c.leakage_uj, w.leakage_uj, kEps);
    area += w.area_mm2;
    dynamic += w.dynamic_uj;
    leakage += w.leakage_uj;
  }
  // Totals: area 2.891168 mm2; dynamic 8892.72 pJ = 0.00889272 uJ; leakage 0.07977792 uJ;
  // energy 0.08867064 uJ; EDP = 0.08867064 uJ x 2e-6 s; power = 0.08867064e-6 J / 2e-6 s.
  EXPECT_NEAR(area, 2.891168, kEps);
  EXPECT_NEAR(r.area_mm2, 2.891168, kEps);
  EXPECT_NEAR(r.dynamic_uj, 0.00889272, kEps);
  EXPECT_NEAR(r.leakage_uj, 0.07977792, kEps);
  EXPECT_NEAR(r.energy_uj, 0.08867064, kEps);
  EXPECT_NEAR(r.edp_uj_s, 0.08867064 * 2e-6, 1e-18);
  EXPECT_NEAR(r.average_power_w, 0.04433532, kEps);
  EXPECT_NEAR(dynamic + leakage, r.energy_uj, kEps);
  EXPECT_EQ(r.tech_name, "round");
  EXPECT_EQ(r.tech_file, kRoundTable);
}

// The small NPU with a 16 KiB shared L2 of 128-byte lines, 4 ways: 16384 / (128 x 4) = 32 sets.
TEST(AreaEnergy, L2DerivedByHand) {
  const HwConfig hw = parse_hw_config(
      kSmallNpu + "  l2: {capacity_bytes: 16384, line_bytes: 128, ways: 4}\n", "<small+l2>");
  ASSERT_TRUE(hw.l2.enabled());
  // Tag: the 1 MiB GM has 8192 lines, 256 per set -> 8 bits; + valid, dirty + 2 LRU bits = 12.
  EXPECT_EQ(l2_tag_bits(hw), 12);
  const TechTable tech = load_tech_table(kRoundTable);
  Activity a = gemm_tile_activity();
  a.l2_data_bytes = 256;  // e.g. 128 B of requests + one 128-byte line fill
  a.l2_line_lookups = 4;
  const AreaEnergy with = estimate_area_energy(hw, tech, a);
  const AreaEnergy without =
      estimate_area_energy(parse_hw_config(kSmallNpu, "<small>"), tech, gemm_tile_activity());
  const ComponentEstimate& l2 = component(with, "l2");
  // Area (chip-wide): (16384 x 8 data bits + 128 lines x 12 tag bits) x 0.5 / 0.5 um2 =
  // 131072 + 1536 = 132608 um2 (one port: no port factor).
  EXPECT_NEAR(l2.area_mm2, 0.132608, 1e-12);
  // Energy: 256 B = 32 64-bit accesses x E(16384) = 4 pJ = 128 pJ; tags: 4 lookups x 4 ways x 12
  // bits = 192 bits = 3 accesses x E(192 B) = sqrt(192 / 1024) = 0.4330127 pJ = 1.2990381 pJ.
  EXPECT_NEAR(l2.dynamic_uj, (128 + 3 * std::sqrt(0.1875)) * 1e-6, 1e-12);
  EXPECT_NEAR(l2.dynamic_uj, 129.2990381e-6, 1e-12);
  // Leakage: 0.132608 mm2 x 20 mW/mm2 x 2e-6 s.
  EXPECT_NEAR(l2.leakage_uj, 0.132608 * 20 * 2e-3, 1e-12);
  // Everything else is as without the L2.
  EXPECT_NEAR(with.area_mm2, without.area_mm2 + 0.132608, 1e-12);
  EXPECT_NEAR(with.dynamic_uj, without.dynamic_uj + 129.2990381e-6, 1e-12);
}

TEST(AreaEnergy, ActivityOfSumsTheCores) {
  sim::SimResult s;
  s.total_cycles = 77;
  s.instructions = 9;
  s.dram_burst_bytes = 640;
  s.cores.resize(2);
  s.cores[0].ops.cube_macs = 100;
  s.cores[1].ops.cube_macs = 23;
  s.cores[0].ops.vector_elem_ops[1][2] = 5;
  s.cores[1].ops.vector_elem_ops[1][2] = 6;
  s.cores[0].ops.pipe_bytes_written[int(isa::Pipe::mte2)] = 10;
  s.cores[1].ops.pipe_bytes_written[int(isa::Pipe::mte2)] = 1;
  s.cores[0].bytes_read[int(isa::Scope::ub)] = 3;
  s.cores[1].bytes_read[int(isa::Scope::ub)] = 4;
  s.cores[1].bytes_written[int(isa::Scope::l1)] = 8;
  s.l2.read_bytes = 1;
  s.l2.write_bytes = 2;
  s.l2.fill_bytes = 4;
  s.l2.writeback_bytes = 8;
  s.l2.read_hit_lines = 16;
  s.l2.read_miss_lines = 32;
  s.l2.write_hit_lines = 64;
  s.l2.write_miss_lines = 128;
  const Activity a = activity_of(s);
  EXPECT_EQ(a.l2_data_bytes, 15u);
  EXPECT_EQ(a.l2_line_lookups, 240u);
  EXPECT_EQ(a.cycles, 77u);
  EXPECT_EQ(a.scalar_instructions, 9u);
  EXPECT_EQ(a.dram_burst_bytes, 640u);
  EXPECT_EQ(a.ops.cube_macs, 123u);
  EXPECT_EQ(a.ops.vector_elem_ops[1][2], 11u);
  EXPECT_EQ(a.ops.pipe_bytes_written[int(isa::Pipe::mte2)], 11u);
  EXPECT_EQ(a.bytes_read[int(isa::Scope::ub)], 7u);
  EXPECT_EQ(a.bytes_written[int(isa::Scope::l1)], 8u);
  // area_energy() is estimate_area_energy with hw's table and this activity.
  const HwConfig hw = parse_hw_config(kSmallNpu, "<small>");
  const AreaEnergy one = area_energy(hw, s);
  const AreaEnergy two = estimate_area_energy(hw, default_tech_table(), a);
  EXPECT_EQ(one.energy_uj, two.energy_uj);
  EXPECT_EQ(one.area_mm2, two.area_mm2);
  EXPECT_EQ(one.tech_name, "45nm");
}

TEST(AreaEnergy, EnergyGrowsWithExactlyTheCountsThatDriveEachComponent) {
  const HwConfig hw = parse_hw_config(kSmallNpu, "<small>");
  const TechTable tech = load_tech_table(kRoundTable);
  const Activity base = gemm_tile_activity();
  const AreaEnergy r0 = estimate_area_energy(hw, tech, base);
  struct Bump {
    const char* what;
    const char* component;  // the only component whose dynamic energy may change
    void (*apply)(Activity&);
  };
  const Bump bumps[] = {
      {"cube MACs", "cube", [](Activity& a) { a.ops.cube_macs += 64; }},
      {"vector fp32 adds", "vector",
       [](Activity& a) {
         a.ops.vector_elem_ops[int(VectorOpClass::add)][int(TechType::fp32)] += 8;
       }},
      {"vector int8 MACs", "vector",
       [](Activity& a) {
         a.ops.vector_elem_ops[int(VectorOpClass::mac)][int(TechType::int8)] += 8;
       }},
      {"scalar instructions", "scalar", [](Activity& a) { a.scalar_instructions += 1; }},
      {"L1 bytes read", "l1", [](Activity& a) { a.bytes_read[int(isa::Scope::l1)] += 64; }},
      {"L0A bytes written", "l0a",
       [](Activity& a) { a.bytes_written[int(isa::Scope::l0a)] += 64; }},
      {"L0B bytes read", "l0b", [](Activity& a) { a.bytes_read[int(isa::Scope::l0b)] += 64; }},
      {"L0C bytes read", "l0c", [](Activity& a) { a.bytes_read[int(isa::Scope::l0c)] += 64; }},
      {"UB bytes written", "ub", [](Activity& a) { a.bytes_written[int(isa::Scope::ub)] += 64; }},
      {"MTE1 bytes", "mte1",
       [](Activity& a) { a.ops.pipe_bytes_written[int(isa::Pipe::mte1)] += 8; }},
      {"MTE2 bytes", "mte2",
       [](Activity& a) { a.ops.pipe_bytes_written[int(isa::Pipe::mte2)] += 8; }},
      {"MTE3 bytes", "mte3",
       [](Activity& a) { a.ops.pipe_bytes_written[int(isa::Pipe::mte3)] += 8; }},
      {"FIX bytes", "fix", [](Activity& a) { a.ops.pipe_bytes_written[int(isa::Pipe::fix)] += 8; }},
      {"DRAM bursts", "dram", [](Activity& a) { a.dram_burst_bytes += 32; }},
  };
  for (const Bump& b : bumps) {
    SCOPED_TRACE(b.what);
    Activity a = base;
    b.apply(a);
    const AreaEnergy r = estimate_area_energy(hw, tech, a);
    EXPECT_GT(r.energy_uj, r0.energy_uj);
    EXPECT_EQ(r.area_mm2, r0.area_mm2);
    EXPECT_EQ(r.leakage_uj, r0.leakage_uj);
    for (size_t i = 0; i < r.components.size(); ++i) {
      if (r.components[i].name == b.component)
        EXPECT_GT(r.components[i].dynamic_uj, r0.components[i].dynamic_uj);
      else
        EXPECT_EQ(r.components[i].dynamic_uj, r0.components[i].dynamic_uj) << r.components[i].name;
    }
  }
  // Counts the model must not price: GM bytes (priced as DRAM bursts) and the cube's own
  // written bytes (L0C traffic is priced at the SRAM).
  Activity a = base;
  a.bytes_read[int(isa::Scope::gm)] += 4096;
  a.ops.pipe_bytes_written[int(isa::Pipe::cube)] += 4096;
  EXPECT_EQ(estimate_area_energy(hw, tech, a).energy_uj, r0.energy_uj);
  // Cycles: only leakage grows (linearly), dynamic energy stays.
  a = base;
  a.cycles *= 2;
  const AreaEnergy slow = estimate_area_energy(hw, tech, a);
  EXPECT_EQ(slow.dynamic_uj, r0.dynamic_uj);
  EXPECT_NEAR(slow.leakage_uj, 2 * r0.leakage_uj, 1e-15);
  EXPECT_NEAR(slow.edp_uj_s, slow.energy_uj * 4e-6, 1e-18);
}

TEST(AreaEnergy, AreaGrowsWithCapacityCubeAndCores) {
  const TechTable tech = load_tech_table(kRoundTable);
  const Activity act = gemm_tile_activity();
  const AreaEnergy base = estimate_area_energy(parse_hw_config(kSmallNpu, "<s>"), tech, act);
  auto with = [&](const std::string& key, const std::string& value) {
    return estimate_area_energy(parse_hw_config(kSmallNpu, "<s>", {{key, value}}), tech, act);
  };
  // Twice the UB: twice its area; and each access costs sqrt(2) as much (E ~ C^0.5).
  const AreaEnergy ub = with("core.buffers_bytes.ub", "32768");
  EXPECT_NEAR(component(ub, "ub").area_mm2, 2 * component(base, "ub").area_mm2, 1e-12);
  EXPECT_NEAR(component(ub, "ub").dynamic_uj, std::sqrt(2.0) * component(base, "ub").dynamic_uj,
              1e-15);
  EXPECT_EQ(component(ub, "l1").area_mm2, component(base, "l1").area_mm2);
  // An 8x4x4 cube has twice the MAC units.
  EXPECT_NEAR(component(with("core.cube.m", "8"), "cube").area_mm2,
              2 * component(base, "cube").area_mm2, 1e-12);
  // Four cores instead of two: every per-core component doubles, the DRAM interface does not.
  const AreaEnergy four = with("cores", "4");
  for (size_t i = 0; i < four.components.size(); ++i) {
    SCOPED_TRACE(four.components[i].name);
    const double factor = four.components[i].name == "dram" ? 1.0 : 2.0;
    EXPECT_NEAR(four.components[i].area_mm2, factor * base.components[i].area_mm2, 1e-12);
  }
}

TEST(AreaEnergy, CountOpsPricesMmadVectorAndPipes) {
  const HwConfig hw = parse_hw_config(kSmallNpu, "<small>");
  OpCounts c;
  isa::Instruction mmad;
  mmad.op = isa::Opcode::mmad;
  isa::MmadArgs m;
  m.m1 = 2;
  m.k1 = 3;
  m.n1 = 4;
  mmad.args = m;
  ScopeTraffic t = scope_traffic(hw, mmad);
  count_ops(hw, isa::Pipe::cube, mmad, t, c);
  // 2*3*4 fractals x 4*4*4 MACs = 1536; the cube wrote 2*4 C fractals of 4*4 fp32 = 512 bytes.
  EXPECT_EQ(c.cube_macs, 1536u);
  EXPECT_EQ(c.pipe_bytes_written[int(isa::Pipe::cube)], 512u);
  isa::Instruction v;
  v.op = isa::Opcode::vmla;
  isa::VectorArgs va;
  va.dtype = isa::DType::f32;
  va.count = 10;
  va.repeat = 3;
  v.args = va;
  count_ops(hw, isa::Pipe::vector, v, scope_traffic(hw, v), c);
  EXPECT_EQ(c.vector_elem_ops[int(VectorOpClass::mac)][int(TechType::fp32)], 30u);
  // vconv f16 -> f32... written as dst f16 from src i32: priced at the wider (int32).
  v.op = isa::Opcode::vconv;
  va.dtype = isa::DType::f16;
  va.src_dtype = isa::DType::i32;
  va.count = 4;
  va.repeat = 1;
  v.args = va;
  count_ops(hw, isa::Pipe::vector, v, scope_traffic(hw, v), c);
  EXPECT_EQ(c.vector_elem_ops[int(VectorOpClass::add)][int(TechType::int32)], 4u);
  EXPECT_EQ(vector_op_class(isa::Opcode::vexp), VectorOpClass::mult);
  EXPECT_EQ(vector_op_class(isa::Opcode::vmax), VectorOpClass::add);
  EXPECT_EQ(tech_type(isa::DType::boolean), TechType::int8);
  EXPECT_EQ(tech_type(isa::DType::u16), TechType::int16);
}

TEST(TechTable, The45nmTableHoldsItsSourcesNumbersAndTheFit) {
  const TechTable t = load_tech_table(kTech45);
  EXPECT_EQ(t.name, "45nm");
  // Horowitz ISSCC 2014, 45 nm: fp16 MAC = mult 1.1 + add 0.4; the cube's fp16 x fp16 -> fp32
  // MAC is mult 1.1 + fp32 add 0.9 = 2.0 pJ, the "about 1 pJ per 16-bit MAC" class.
  EXPECT_EQ(t.ops[int(TechType::fp16)].mult_pj, 1.1);
  EXPECT_EQ(t.ops[int(TechType::fp32)].add_pj, 0.9);
  EXPECT_EQ(t.ops[int(TechType::int8)].mult_area_um2, 282);
  EXPECT_EQ(t.dram_pj_per_bit, 20);
  // The least-squares power law through (8 KiB, 10), (32 KiB, 20), (1 MiB, 100 pJ): with
  // x = ln(C / 8 KiB) = 0, 1.3863, 4.8520 and y = ln E = 2.3026, 2.9957, 4.6052:
  // b = (3 sum xy - sum x sum y) / (3 sum x^2 - (sum x)^2) = 0.4726, a = exp((sum y - b sum x)/3)
  // = 10.16 pJ: E(8 KiB) = 10.16, E(32 KiB) = 19.56, E(1 MiB) = 100.6 (the points within 2.2%).
  EXPECT_NEAR(t.sram_fit_exponent, 0.4726, 1e-4);
  EXPECT_NEAR(t.sram_fit_pj, 10.160, 1e-3);
  EXPECT_EQ(t.sram_fit_reference_bytes, 8192);
  EXPECT_NEAR(sram_access_pj(t, 32768), 19.56, 0.01);
  EXPECT_NEAR(sram_access_pj(t, 1048576), 100.63, 0.01);
  // The built-in default is this same file.
  const TechTable& d = default_tech_table();
  EXPECT_EQ(d.source_file, "<built-in hw_configs/tech/45nm.yaml>");
  EXPECT_EQ(d.ops, t.ops);
  EXPECT_EQ(d.sram_energy_points, t.sram_energy_points);
  EXPECT_EQ(d.sram_fit_exponent, t.sram_fit_exponent);
  EXPECT_EQ(d.leakage_logic_mw_per_mm2, t.leakage_logic_mw_per_mm2);
}

TEST(TechTable, FitIsExactOnAPowerLaw) {
  // E = 3 (C / 100)^0.25 at C = 100, 1600, 25600: x = 0, ln 16, ln 256; y = ln 3 + x / 4.
  const SramFit f = fit_sram_energy({{100, 3}, {1600, 6}, {25600, 12}});
  EXPECT_NEAR(f.exponent, 0.25, 1e-12);
  EXPECT_NEAR(f.a_pj, 3, 1e-12);
  EXPECT_EQ(f.reference_bytes, 100);
}

// A bad table: each problem names the file, line and column, the dotted key and what was
// expected; all problems of a file are reported together.
TEST(TechTable, BadTablesNameFileLineAndKey) {
  const std::string good = read_text(kRoundTable);
  // Missing key: ops.fp16 without add_pj. The map starts at line 6, column 9 (after "  fp16: ").
  std::string text = replaced(good, "fp16: {add_pj: 0.5, ", "fp16: {");
  EXPECT_EQ(error_of([&] { parse_tech_table(text, "t.yaml"); }),
            "t.yaml:6:9: ops.fp16: missing required key 'add_pj'; expected a number >= 0");
  // Negative number at line 23 (dram), column 20 (after "dram: {pj_per_bit: ").
  text = replaced(good, "pj_per_bit: 10,", "pj_per_bit: -10,");
  EXPECT_EQ(error_of([&] { parse_tech_table(text, "t.yaml"); }),
            "t.yaml:23:20: dram.pj_per_bit: expected a finite number >= 0, got -10, which is "
            "negative");
  // Unknown component under ops (fp8 is not priced; inserted as line 8) and an unknown section
  // (line 25 after that insertion), both reported.
  text = replaced(good, "  int8:", "  fp8: {add_pj: 0.1}\n  int8:");
  text = replaced(text, "leakage:", "leakge: {}\nleakage:");
  const std::string both = error_of([&] { parse_tech_table(text, "t.yaml"); });
  EXPECT_NE(both.find("t.yaml:8:3: ops.fp8: unknown key; expected one of fp16, fp32, int8, int16, "
                      "int32, int64 (did you mean 'fp16'?)"),
            std::string::npos)
      << both;
  EXPECT_NE(both.find("t.yaml:25:1: leakge: unknown key; expected one of name, source, ops, "
                      "register, scalar, sram, dram, leakage (did you mean 'leakage'?)"),
            std::string::npos)
      << both;
  // Not a number, quoted number, infinite.
  text = replaced(good, "instruction_pj: 50", "instruction_pj: lots");
  EXPECT_EQ(error_of([&] { parse_tech_table(text, "t.yaml"); }),
            "t.yaml:13:26: scalar.instruction_pj: expected a finite number >= 0, got 'lots'");
  text = replaced(good, "instruction_pj: 50", "instruction_pj: \"50\"");
  EXPECT_NE(error_of([&] { parse_tech_table(text, "t.yaml"); }).find("the quoted string '50'"),
            std::string::npos);
  text = replaced(good, "instruction_pj: 50", "instruction_pj: 1e999");
  EXPECT_NE(error_of([&] { parse_tech_table(text, "t.yaml"); }).find("which is out of range"),
            std::string::npos);
  // Range rules: efficiency in (0, 1], access_bits a multiple of 8, points distinct and > 0.
  text = replaced(good, "array_efficiency: 0.5", "array_efficiency: 1.5");
  EXPECT_EQ(error_of([&] { parse_tech_table(text, "t.yaml"); }),
            "t.yaml:21:21: sram.array_efficiency: expected a fraction in (0, 1] (cell area / "
            "macro area), got 1.5");
  text = replaced(good, "access_bits: 64", "access_bits: 12");
  EXPECT_NE(error_of([&] {
              parse_tech_table(text, "t.yaml");
            }).find("t.yaml:15:16: sram.access_bits: expected a positive multiple of 8"),
            std::string::npos);
  text = replaced(good, "{capacity_bytes: 4096, access_pj: 2}",
                  "{capacity_bytes: 1024, access_pj: 2}");
  EXPECT_NE(error_of([&] {
              parse_tech_table(text, "t.yaml");
            }).find("t.yaml:18:7: sram.energy_points[1].capacity_bytes: 1024 is given twice"),
            std::string::npos);
  text = replaced(good, "{capacity_bytes: 4096, access_pj: 2}",
                  "{capacity_bytes: 4096, access_pj: 0}");
  EXPECT_NE(error_of([&] {
              parse_tech_table(text, "t.yaml");
            }).find("sram.energy_points[1]: capacity_bytes and access_pj must be > 0"),
            std::string::npos);
  // A table with only a name: one problem per missing section, none about the sections' keys.
  EXPECT_EQ(error_of([&] { parse_tech_table("name: t\n", "t.yaml"); }),
            "t.yaml:1:1: missing required key 'source'; expected a non-empty string\n"
            "t.yaml:1:1: missing required key 'ops'; expected a map\n"
            "t.yaml:1:1: missing required key 'register'; expected a map\n"
            "t.yaml:1:1: missing required key 'scalar'; expected a map\n"
            "t.yaml:1:1: missing required key 'sram'; expected a map\n"
            "t.yaml:1:1: missing required key 'dram'; expected a map\n"
            "t.yaml:1:1: missing required key 'leakage'; expected a map");
  // A section that is not a map.
  text = replaced(good, "scalar: {instruction_pj: 50}", "scalar: 50");
  EXPECT_EQ(error_of([&] { parse_tech_table(text, "t.yaml"); }),
            "t.yaml:13:9: scalar: expected a map, got '50'");
  // YAML syntax error and an unreadable file.
  EXPECT_NE(error_of([&] { parse_tech_table("ops: [", "t.yaml"); }).find("t.yaml:"),
            std::string::npos);
  // A file over 1 MiB (a valid table padded with comment lines) is refused before parsing.
  const std::string big = testing::TempDir() + "/tessel_big_tech.yaml";
  {
    std::ofstream out(big);
    out << good;
    for (int i = 0; i < (1 << 20) / 64 + 1; ++i) out << "# " << std::string(61, 'x') << "\n";
  }
  EXPECT_NE(error_of([&] {
              load_tech_table(big);
            }).find(": cannot read technology table: larger than 1048576 bytes"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_tech_table("/nonexistent/x.yaml");
            }).find("/nonexistent/x.yaml: cannot read technology table: no such file"),
            std::string::npos);
}

// The config's `tech` key: optional (absent = the built-in 45 nm table), a path relative to the
// config file, checked when the config loads, stored absolute so the config text round-trips.
TEST(TechTable, HwConfigTechKey) {
  const std::string dir =
      (std::filesystem::path(testing::TempDir()) / "tessel_tech_key").lexically_normal().string();
  std::filesystem::create_directories(dir + "/tech");
  std::filesystem::copy_file(kRoundTable, dir + "/tech/round.yaml",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string cfg = dir + "/npu.yaml";
  { std::ofstream(cfg) << kSmallNpu << "tech: tech/round.yaml\n"; }
  const HwConfig hw = load_hw_config(cfg);
  const std::string abs = std::filesystem::absolute(dir + "/tech/round.yaml").lexically_normal();
  EXPECT_EQ(hw.tech, abs);
  EXPECT_EQ(tech_table_for(hw).name, "round");
  EXPECT_EQ(parse_hw_config(hw_config_to_yaml(hw), hw.source_file), hw);
  // Absent: empty, the default table, and not written back.
  const HwConfig plain = parse_hw_config(kSmallNpu, "<small>");
  EXPECT_EQ(plain.tech, "");
  EXPECT_EQ(&tech_table_for(plain), &default_tech_table());
  EXPECT_EQ(hw_config_to_yaml(plain).find("tech"), std::string::npos);
  // A missing file: the config's file, line (17: kSmallNpu has 16) and key, then the table's
  // own message.
  { std::ofstream(cfg) << kSmallNpu << "tech: tech/none.yaml\n"; }
  EXPECT_EQ(error_of([&] { load_hw_config(cfg); }),
            cfg + ":17:7: tech: cannot use the technology table 'tech/none.yaml' (" + dir +
                "/tech/none.yaml): " + dir +
                "/tech/none.yaml: cannot read technology table: no such file (expected a YAML "
                "file such as hw_configs/tech/45nm.yaml)");
  // A bad table: both files named.
  {
    std::ofstream(dir + "/tech/bad.yaml")
        << replaced(read_text(kRoundTable), "pj_per_bit: 10,", "pj_per_bit: -1,");
    std::ofstream(cfg) << kSmallNpu << "tech: tech/bad.yaml\n";
  }
  const std::string bad = error_of([&] { load_hw_config(cfg); });
  EXPECT_NE(bad.find(cfg + ":17:7: tech: cannot use the technology table 'tech/bad.yaml'"),
            std::string::npos)
      << bad;
  EXPECT_NE(bad.find(dir + "/tech/bad.yaml:23:20: dram.pj_per_bit: expected a finite number >= "
                           "0, got -1, which is negative"),
            std::string::npos)
      << bad;
  // An empty value and an override.
  EXPECT_NE(error_of([&] { parse_hw_config(kSmallNpu + "tech: \"\"\n", "<t>"); })
                .find("<t>:17:7: tech: expected a non-empty string (optional: when absent, the "
                      "built-in hw_configs/tech/45nm.yaml), got an empty string"),
            std::string::npos);
  const HwConfig over = parse_hw_config(kSmallNpu, "<t>", {{"tech", kRoundTable}});
  EXPECT_EQ(over.tech, kRoundTable);
  EXPECT_NE(error_of([&] {
              parse_hw_config(kSmallNpu, "<t>", {{"tech", "/none.yaml"}});
            }).find("<t>: --hw-set tech=/none.yaml: cannot use the technology table"),
            std::string::npos);
}

}  // namespace
}  // namespace tessel::npu
