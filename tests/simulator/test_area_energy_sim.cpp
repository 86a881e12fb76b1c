// The simulator's counts that feed the area and energy model (sim::CoreStats::ops,
// npu::count_ops) on one GEMM tile, and npu::area_energy over the run with the built-in 45 nm
// table (hw_configs/tech/45nm.yaml): each figure derived by hand below.
#include <gtest/gtest.h>

#include "npu_model/area_energy.h"
#include "simulator/simulator.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;

// One 16x16x16 fp16 GEMM tile, each step fenced by a barrier:
//   dma GM->L1 A and B (256 f16 = 512 B each) | load2d L1->L0A, L1->L0B (512 B each) | mmad 1x1x1
//   | fix L0C -> UB (16x16 fp32 = 1024 B read, 512 B fp16 written) | vrelu.f16 256 (UB -> UB)
//   | dma UB -> GM (512 B). 8 data instructions + 5 barriers = 13 fetched.
isa::Program gemm_tile(uint32_t n1 = 1) {
  return program({dma(DType::f16, l1(0), gm(0), {256}), dma(DType::f16, l1(512), gm(512), {256}),
                  barrier(), load2d(DType::f16, l0a(0), l1(0), 16, 16, 16),
                  load2d(DType::f16, l0b(0), l1(512), 16, 16, 16), barrier(),
                  mmad(l0c(0), l0a(0), l0b(0), 1, 1, n1), barrier(),
                  fix(DType::f16, ub(0), l0c(0), 16, 16, 16), barrier(),
                  vec(Opcode::vrelu, DType::f16, vo(ub(512)), vo(ub(0)), vo(ub(0)), 256), barrier(),
                  dma(DType::f16, gm(4096), ub(512), {256})});
}

sim::SimResult run(const isa::Program& p, const npu::HwConfig& hw) {
  sim::SimOptions o;
  o.functional = false;
  sim::Simulator s(hw, o);
  s.load(p);
  return s.run();
}

double dynamic_of(const npu::AreaEnergy& r, const std::string& name) {
  for (const auto& c : r.components)
    if (c.name == name) return c.dynamic_uj;
  ADD_FAILURE() << name;
  return 0;
}

TEST(AreaEnergySim, GemmTileCountsAndEnergy) {
  const npu::HwConfig hw = test_hw();  // no tech key: the built-in 45 nm table
  const sim::SimResult r = run(gemm_tile(), hw);
  const npu::OpCounts& c = r.cores[0].ops;
  EXPECT_EQ(c.cube_macs, 4096u);  // one 16x16x16 fractal
  EXPECT_EQ(c.vector_elem_ops[int(npu::VectorOpClass::add)][int(npu::TechType::fp16)], 256u);
  uint64_t vector_ops = 0;
  for (const auto& cls : c.vector_elem_ops)
    for (uint64_t n : cls) vector_ops += n;
  EXPECT_EQ(vector_ops, 256u);
  // Bytes each pipe delivered: MTE2 2 x 512 into L1, MTE1 2 x 512 fractal bytes, CUBE 1024 into
  // L0C, FIX 512 fp16 into UB, VECTOR 512, MTE3 512 into GM.
  EXPECT_EQ(c.pipe_bytes_written[int(Pipe::mte2)], 1024u);
  EXPECT_EQ(c.pipe_bytes_written[int(Pipe::mte1)], 1024u);
  EXPECT_EQ(c.pipe_bytes_written[int(Pipe::cube)], 1024u);
  EXPECT_EQ(c.pipe_bytes_written[int(Pipe::fix)], 512u);
  EXPECT_EQ(c.pipe_bytes_written[int(Pipe::vector)], 512u);
  EXPECT_EQ(c.pipe_bytes_written[int(Pipe::mte3)], 512u);
  EXPECT_EQ(r.instructions, 13u);
  EXPECT_EQ(r.dram_burst_bytes, 1536u);  // test_hw is byte-granular: 512 + 512 + 512

  const npu::AreaEnergy e = npu::area_energy(hw, r);
  EXPECT_EQ(e.tech_name, "45nm");
  // cube: 4096 MACs x (fp16 mult 1.1 + fp32 add 0.9 pJ) = 8192 pJ.
  EXPECT_NEAR(dynamic_of(e, "cube"), 8192e-6, 1e-12);
  // vector: 256 fp16 add-class ops x 0.4 pJ = 102.4 pJ.
  EXPECT_NEAR(dynamic_of(e, "vector"), 102.4e-6, 1e-12);
  // scalar: 13 instructions x 70 pJ = 910 pJ.
  EXPECT_NEAR(dynamic_of(e, "scalar"), 910e-6, 1e-12);
  // L1 (1 MiB): 1024 written + 1024 read = 2048 B = 256 64-bit accesses x E(1 MiB) = 100.635 pJ
  // (the fit through Horowitz's 8 KB / 32 KB / 1 MB points) = 25762.6 pJ.
  EXPECT_NEAR(dynamic_of(e, "l1"), 25762.6e-6, 0.1e-6);
  // L0A (64 KiB): 1024 B = 128 accesses x E(64 KiB) = 27.144 pJ = 3474.5 pJ.
  EXPECT_NEAR(dynamic_of(e, "l0a"), 3474.5e-6, 0.1e-6);
  // MTE2: 1024 B x 8 x 2 x 0.009 pJ = 147.456 pJ; FIX: 512 B -> 73.728 pJ.
  EXPECT_NEAR(dynamic_of(e, "mte2"), 147.456e-6, 1e-12);
  EXPECT_NEAR(dynamic_of(e, "fix"), 73.728e-6, 1e-12);
  // DRAM: 1536 burst bytes x 8 x 20 pJ/bit = 245760 pJ.
  EXPECT_NEAR(dynamic_of(e, "dram"), 245760e-6, 1e-12);
  // Leakage over the run: (logic and SRAM density are both 12.6 mW/mm2 in the table) area x
  // 12.6e-3 W x total_cycles / 1e9 s, in uJ.
  const double seconds = static_cast<double>(r.total_cycles) / 1e9;
  EXPECT_NEAR(e.seconds, seconds, 1e-18);
  EXPECT_NEAR(e.leakage_uj, e.area_mm2 * 12.6e-3 * seconds * 1e6, 1e-12);
  EXPECT_NEAR(e.edp_uj_s, e.energy_uj * seconds, 1e-18);

  // Three fractals (n1 = 3) instead of one: three times the cube MACs and cube energy; the other
  // components' dynamic energy is unchanged except L0B and L0C, which the mmad reads and writes
  // per fractal.
  const sim::SimResult r3 = run(gemm_tile(3), hw);
  EXPECT_EQ(r3.cores[0].ops.cube_macs, 3u * 4096);
  const npu::AreaEnergy e3 = npu::area_energy(hw, r3);
  EXPECT_NEAR(dynamic_of(e3, "cube"), 3 * 8192e-6, 1e-12);
  EXPECT_GT(dynamic_of(e3, "l0b"), dynamic_of(e, "l0b"));
  EXPECT_GT(dynamic_of(e3, "l0c"), dynamic_of(e, "l0c"));
  EXPECT_EQ(dynamic_of(e3, "l1"), dynamic_of(e, "l1"));
  EXPECT_EQ(dynamic_of(e3, "dram"), dynamic_of(e, "dram"));
  EXPECT_EQ(e3.area_mm2, e.area_mm2);
  EXPECT_GT(e3.energy_uj, e.energy_uj);
}

// The same tile behind a 64 KiB shared L2 (128-byte lines, 16 ways: 32 sets; write-back).
// A and B (512 B each at GM 0 and 512) miss in 8 lines, filled from DRAM (1024 B); the store of
// C (512 B at 4096) allocates 4 lines without a fill and stays dirty. L2 data bytes = 1024
// requested + 1024 filled + 512 written + 512 dirty flushed at the end = 3072 = 384 64-bit
// accesses x E(64 KiB) = 27.1442 pJ = 10423.4 pJ; lines looked up 8 + 4 = 12, each reading 16
// tags of 26 bits (the 4 GiB GM's 2^25 lines over 32 sets: 20 bits, + valid, dirty, 4 LRU
// bits) = 4992 bits = 78 accesses x E(512 lines x 26 bits = 1664 B) = 4.7832 pJ = 373.1 pJ.
// Total 10796.4 pJ.
TEST(AreaEnergySim, GemmTileBehindAnL2) {
  npu::HwConfig hw = test_hw();
  hw.l2.capacity_bytes = 64 << 10;
  const sim::SimResult r = run(gemm_tile(), hw);
  EXPECT_EQ(r.l2.read_bytes, 1024u);
  EXPECT_EQ(r.l2.fill_bytes, 1024u);
  EXPECT_EQ(r.l2.write_bytes, 512u);
  EXPECT_EQ(r.l2.writeback_bytes, 0u);
  EXPECT_EQ(r.l2.dirty_bytes_at_end, 512u);
  const npu::Activity a = npu::activity_of(r);
  EXPECT_EQ(a.l2_data_bytes, 2560u);
  EXPECT_EQ(a.l2_line_lookups, 12u);
  EXPECT_EQ(npu::l2_tag_bits(hw), 26);
  const npu::AreaEnergy e = npu::area_energy(hw, r);
  EXPECT_NEAR(dynamic_of(e, "l2"), 10796.4e-6, 0.1e-6);
  // DRAM moved the fills (1024 B); the 512 dirty bytes are charged as their eventual write:
  // 1536 B x 8 x 20 pJ, as without the L2.
  EXPECT_EQ(r.dram_burst_bytes, 1024u);
  EXPECT_NEAR(dynamic_of(e, "dram"), 1536 * 8 * 20e-6, 1e-12);
}

}  // namespace
}  // namespace tessel
