// Cycle-exact tests of the SystemC model, one (or more) per instruction class. Every expected
// number is derived in the comment from testutil::test_hw() and docs/isa.md, "Timing":
//   c_s = 1, queue depth 16; vector 256 B/cycle, latency 4; cube 16x16x16 f16->f32, latency 8;
//   MTE2/MTE3 64 B/cycle, latency 100; MTE1 256 B/cycle, latency 4; FIX 256 B/cycle, latency 4;
//   DRAM 128 B/cycle, latency 200 (one channel shared by all cores).
// A lone pipe instruction is dispatched at 0, enters its queue at 1 and starts at s = 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "simulator/simulator.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;

sim::SimResult simulate(const isa::Program& p, const npu::HwConfig& hw = test_hw(),
                        bool functional = true) {
  sim::SimOptions o;
  o.functional = functional;
  sim::Simulator s(hw, o);
  s.load(p);
  return s.run();
}

const sim::PipeStats& pipe(const sim::SimResult& r, Pipe p, int core = 0) {
  return r.cores[core].pipes[int(p)];
}

TEST(Timing, DocExampleLoneVadd) {
  // docs/isa.md example: vadd.f16 count 128 repeat 1: queued at 1, starts 1, occupancy
  // ceil(128*2/256) = 1, completes 1+1+4 = 6.
  auto p = program({vec(Opcode::vadd, DType::f16, vo(ub(0)), vo(ub(256)), vo(ub(512)), 128)});
  const auto r = simulate(p);
  EXPECT_EQ(r.total_cycles, 6u);
  EXPECT_EQ(pipe(r, Pipe::vector).busy_cycles, 1u);
  EXPECT_EQ(pipe(r, Pipe::vector).instructions, 1u);
  EXPECT_EQ(r.instructions, 1u);
  EXPECT_EQ(r.cores[0].finish_cycle, 6u);
  // Traffic: two sources of 256 B read, 256 B written, all in UB.
  EXPECT_EQ(r.cores[0].bytes_read[int(Scope::ub)], 512u);
  EXPECT_EQ(r.cores[0].bytes_written[int(Scope::ub)], 256u);
}

TEST(Timing, DmaGmToUb) {
  // 1024 f16 = B = G = 2048 bytes. s = 1. DRAM: start max(1, 0) = 1 for ceil(2048/128) = 16
  // cycles -> dram_done 17. occupancy = max(ceil(2048/64) = 32, 17 - 1) = 32, latency = MTE2 100 +
  // DRAM 200 = 300: completes 1 + 32 + 300 = 333.
  auto p = program({dma(DType::f16, ub(0), gm(4096), {1024})});
  auto r = simulate(p);
  EXPECT_EQ(r.total_cycles, 333u);
  EXPECT_EQ(pipe(r, Pipe::mte2).busy_cycles, 32u);
  EXPECT_EQ(pipe(r, Pipe::mte2).instructions, 1u);
  EXPECT_EQ(r.dram_read_bytes, 2048u);
  EXPECT_EQ(r.dram_write_bytes, 0u);
  EXPECT_EQ(r.cores[0].bytes_read[int(Scope::gm)], 2048u);
  EXPECT_EQ(r.cores[0].bytes_written[int(Scope::ub)], 2048u);

  // DRAM latency is part of the completion: with dram.latency_cycles = 0 it is 1 + 32 + 100 = 133.
  auto hw = test_hw();
  hw.dram.latency_cycles = 0;
  EXPECT_EQ(simulate(p, hw).total_cycles, 133u);
}

TEST(Timing, DmaWithPaddingBoundByDram) {
  // DRAM slowed to 16 B/cycle. 2-D dma, extent {4, 256} f16, valid rows [1, 3): B = 4*256*2 = 2048
  // bytes written, G = 2*256*2 = 1024 GM bytes (padding reads nothing). DRAM serves G from 1 for
  // ceil(1024/16) = 64 cycles -> dram_done 65; occupancy = max(ceil(2048/64) = 32, 65 - 1 = 64) =
  // 64; completes 1 + 64 + 100 + 200 = 365.
  auto hw = test_hw();
  hw.dram.bytes_per_cycle = 16;
  auto d = dma_args(DType::f16, ub(0), gm(0), {4, 256});
  d.valid_begin = {1, 0};
  d.valid_end = {3, 256};
  d.pad_value = -2.5f;
  const auto r = simulate(program({dma(d)}), hw);
  EXPECT_EQ(r.total_cycles, 365u);
  EXPECT_EQ(pipe(r, Pipe::mte2).busy_cycles, 64u);
  EXPECT_EQ(r.dram_read_bytes, 1024u);
  EXPECT_EQ(r.cores[0].bytes_written[int(Scope::ub)], 2048u);
}

TEST(Timing, DmaUbToGm) {
  // 512 f32 = 2048 bytes on MTE3: DRAM 16 cycles from 1; occupancy max(32, 16) = 32; latency
  // MTE3 100 + DRAM 200: completes 1 + 32 + 300 = 333.
  const auto r = simulate(program({dma(DType::f32, gm(0), ub(0), {512})}));
  EXPECT_EQ(r.total_cycles, 333u);
  EXPECT_EQ(pipe(r, Pipe::mte3).busy_cycles, 32u);
  EXPECT_EQ(pipe(r, Pipe::mte2).instructions, 0u);
  EXPECT_EQ(r.dram_write_bytes, 2048u);
}

TEST(Timing, DmaUbToL1) {
  // UB -> L1 runs on MTE3 without DRAM: occupancy ceil(2048/64) = 32, latency 100:
  // completes 1 + 32 + 100 = 133.
  const auto r = simulate(program({dma(DType::f16, l1(0), ub(0), {1024})}));
  EXPECT_EQ(r.total_cycles, 133u);
  EXPECT_EQ(pipe(r, Pipe::mte3).busy_cycles, 32u);
  EXPECT_EQ(r.dram_read_bytes + r.dram_write_bytes, 0u);
  EXPECT_EQ(r.cores[0].bytes_written[int(Scope::l1)], 2048u);
}

TEST(Timing, Load2d) {
  // 20 x 20 f16 to L0A: W = ceil(20/16)*16 * ceil(20/16)*16 * 2 = 32*32*2 = 2048 bytes;
  // occupancy ceil(2048/256) = 8, latency 4: completes 1 + 8 + 4 = 13.
  auto r = simulate(program({load2d(DType::f16, l0a(0), l1(0), 20, 20, 20)}));
  EXPECT_EQ(r.total_cycles, 13u);
  EXPECT_EQ(pipe(r, Pipe::mte1).busy_cycles, 8u);
  EXPECT_EQ(r.cores[0].bytes_written[int(Scope::l0a)], 2048u);
  EXPECT_EQ(r.cores[0].bytes_read[int(Scope::l1)], 800u);
  // 20 x 40 transposed to L0B (K x N = 20 x 40): W = 32 * 48 * 2 = 3072 bytes -> 12 cycles:
  // 1 + 12 + 4 = 17.
  r = simulate(program({load2d(DType::f16, l0b(0), l1(0), 20, 40, 20, true)}));
  EXPECT_EQ(r.total_cycles, 17u);
}

TEST(Timing, Img2col) {
  // c = 2, 5x5 map, 3x3 kernel, stride 2, pad 1 -> 3x3 output. K = 2*3*3 = 18, N = 9.
  // To L0B (K x N): W = 32 * 16 * 2 = 1024 bytes -> ceil(1024/256) = 4 cycles: 1 + 4 + 4 = 9.
  isa::Img2colArgs g;
  g.dtype = DType::f16;
  g.dst = l0b(0);
  g.src = l1(0);
  g.c = 2, g.h = 5, g.w = 5, g.kh = 3, g.kw = 3, g.stride_h = 2, g.stride_w = 2;
  g.pad_top = 1, g.pad_left = 1, g.oh = 3, g.ow = 3;
  auto r = simulate(program({img2col(g)}));
  EXPECT_EQ(r.total_cycles, 9u);
  EXPECT_EQ(pipe(r, Pipe::mte1).busy_cycles, 4u);
  // To L0A (N x K = 9 x 18): W = 16 * 32 * 2 = 1024 bytes: same 9 cycles.
  g.dst = l0a(0);
  r = simulate(program({img2col(g)}));
  EXPECT_EQ(r.total_cycles, 9u);
  // L1 traffic: in-bounds taps per axis: output i in {0,1,2}, kernel r in {0,1,2}, position
  // 2i + r - 1 in [0, 5): 7 of 9 pairs (i=0, r=0 -> -1 and i=2, r=2 -> 5 fall outside);
  // 2 channels * 7 * 7 taps * 2 B.
  EXPECT_EQ(r.cores[0].bytes_read[int(Scope::l1)], 2u * 7 * 7 * 2);
  // From an NC1HWC0 map (c0 = 16: one block of 16 channels, 14 of them padding): the same
  // 9 cycles (MTE1 cost = W bytes written) and the same L1 bytes (only real channels are read).
  g.c0 = 16;
  r = simulate(program({img2col(g)}));
  EXPECT_EQ(r.total_cycles, 9u);
  EXPECT_EQ(pipe(r, Pipe::mte1).busy_cycles, 4u);
  EXPECT_EQ(r.cores[0].bytes_read[int(Scope::l1)], 2u * 7 * 7 * 2);
}

TEST(Timing, Mmad) {
  // m1 * k1 * n1 = 2*3*4 = 24 cycles of occupancy, latency 8: completes 1 + 24 + 8 = 33.
  const auto r = simulate(program({mmad(l0c(0), l0a(0), l0b(0), 2, 3, 4)}));
  EXPECT_EQ(r.total_cycles, 33u);
  EXPECT_EQ(pipe(r, Pipe::cube).busy_cycles, 24u);
  EXPECT_EQ(r.cores[0].bytes_written[int(Scope::l0c)], 2u * 4 * 256 * 4);
}

TEST(Timing, Fix) {
  // 20 x 20 block: R = 32*32*4 = 4096 accumulator bytes -> ceil(4096/256) = 16 cycles, latency 4:
  // completes 1 + 16 + 4 = 21.
  const auto r = simulate(program({fix(DType::f16, ub(0), l0c(0), 20, 20, 24, true)}));
  EXPECT_EQ(r.total_cycles, 21u);
  EXPECT_EQ(pipe(r, Pipe::fix).busy_cycles, 16u);
  EXPECT_EQ(r.cores[0].bytes_written[int(Scope::ub)], 20u * 20 * 2);
}

TEST(Timing, VectorContiguous) {
  // vadd.f16 count 128 repeat 4 (repeat stride 128): per repeat ceil(256/256) = 1 -> occupancy 4:
  // 1 + 4 + 4 = 9.
  auto r = simulate(program({vec(Opcode::vadd, DType::f16, vo(ub(0), 1, 128), vo(ub(4096), 1, 128),
                                 vo(ub(8192), 1, 128), 128, 4)}));
  EXPECT_EQ(r.total_cycles, 9u);
  // vmul.f32 count 100 repeat 3: per repeat ceil(400/256) = 2 -> 6: 1 + 6 + 4 = 11. A src1 with
  // elem_stride 0 (broadcast) still counts as contiguous.
  r = simulate(program({vec(Opcode::vmul, DType::f32, vo(ub(0), 1, 100), vo(ub(4096), 1, 100),
                            vo(ub(8192), 0, 0), 100, 3)}));
  EXPECT_EQ(r.total_cycles, 11u);
  EXPECT_EQ(pipe(r, Pipe::vector).busy_cycles, 6u);
}

TEST(Timing, VectorFp32HalfTheFp16Lanes) {
  // The mixed-precision plan (compiler/backend/npu/precision.h) keeps softmax/reduction chains in
  // fp32: the 256-byte vector unit takes 128 fp16 or 64 fp32 elements per cycle (DaVinci's
  // "2048bit INT8/FP16/FP32 vector"). vexp count 256 repeat 2, contiguous:
  //   f16: per repeat ceil(256*2/256) = 2 -> occupancy 4: 1 + 4 + 4 = 9;
  //   f32: per repeat ceil(256*4/256) = 4 -> occupancy 8: 1 + 8 + 4 = 13.
  for (const auto& [t, cycles, busy] :
       {std::tuple{DType::f16, 9u, 4u}, std::tuple{DType::f32, 13u, 8u}}) {
    auto r = simulate(program(
        {vec(Opcode::vexp, t, vo(ub(0), 1, 256), vo(ub(8192), 1, 256), vo(ub(0)), 256, 2)}));
    EXPECT_EQ(r.total_cycles, cycles) << isa::dtype_name(t);
    EXPECT_EQ(pipe(r, Pipe::vector).busy_cycles, busy) << isa::dtype_name(t);
  }
  // vconv.f32 from f16 (the conversion kernel between fp16 and fp32 storage), count 200 repeat 1:
  // E = the wider operand, 4 bytes: ceil(200*4/256) = 4 -> 1 + 4 + 4 = 9 (an f16 -> f16 copy of
  // 200 would be ceil(400/256) = 2 -> 7).
  Instruction cv = vec(Opcode::vconv, DType::f32, vo(ub(0)), vo(ub(4096)), vo(ub(0)), 200);
  std::get<isa::VectorArgs>(cv.args).src_dtype = DType::f16;
  auto r = simulate(program({cv}));
  EXPECT_EQ(r.total_cycles, 9u);
  EXPECT_EQ(pipe(r, Pipe::vector).busy_cycles, 4u);
  r = simulate(program({vec(Opcode::vcopy, DType::f16, vo(ub(0)), vo(ub(4096)), vo(ub(0)), 200)}));
  EXPECT_EQ(r.total_cycles, 7u);
}

TEST(Timing, VectorStrided) {
  // src0 elem_stride 2 makes it strided: per repeat ceil(128 / (256/32)) = 16 -> repeat 4 gives
  // occupancy 64: 1 + 64 + 4 = 69.
  const auto r = simulate(program({vec(Opcode::vmul, DType::f16, vo(ub(0), 1, 128),
                                       vo(ub(4096), 2, 256), vo(ub(8192), 1, 128), 128, 4)}));
  EXPECT_EQ(r.total_cycles, 69u);
  EXPECT_EQ(pipe(r, Pipe::vector).busy_cycles, 64u);
}

TEST(Timing, Reduction) {
  // vrsum.f32 count 64 repeat 8: src0 contiguous (a reduction's dst elem_stride is unused, here 5):
  // per repeat ceil(64*4/256) = 1 -> occupancy 8: 1 + 8 + 4 = 13.
  auto r = simulate(program(
      {vec(Opcode::vrsum, DType::f32, vo(ub(0), 5, 1), vo(ub(4096), 1, 64), vo(ub(0)), 64, 8)}));
  EXPECT_EQ(r.total_cycles, 13u);
  EXPECT_EQ(r.cores[0].bytes_written[int(Scope::ub)], 8u * 4);
  // vrmax with src0 elem_stride 2: per repeat ceil(64/8) = 8 -> 64: 1 + 64 + 4 = 69.
  r = simulate(program(
      {vec(Opcode::vrmax, DType::f32, vo(ub(0), 1, 1), vo(ub(4096), 2, 128), vo(ub(0)), 64, 8)}));
  EXPECT_EQ(r.total_cycles, 69u);
}

TEST(Timing, ScalarLoop) {
  // li x1,0; L: addi x1,x1,1; blti x1,10,L -> 1 + 10*2 = 21 instructions at 1 cycle each: 21.
  auto r = simulate(program({li(1, 0), addi(1, 1, 1), blti(1, 10, 1)}));
  EXPECT_EQ(r.total_cycles, 21u);
  EXPECT_EQ(r.instructions, 21u);
  EXPECT_EQ(pipe(r, Pipe::scalar).instructions, 21u);
  EXPECT_EQ(pipe(r, Pipe::scalar).busy_cycles, 21u);

  // A loop dispatching a vector op per iteration at address x2 (x2 += 256 bytes, so no hazards):
  //  0 li x1,0 | 1 li x2,0 | 2 vadds.f32 ub[x2] <- ub[x2] + 1 (64 elements) | 3 addi x2,x2,256 |
  //  4 addi x1,x1,1 | 5 blti x1,4,2.   2 + 4*4 = 18 instructions. Iteration i dispatches the vadds
  //  at 2 + 4i, it starts at 3 + 4i (occupancy ceil(256/256) = 1) and completes 3+4i+1+4 = 8+4i;
  //  the last (i = 3) at 20. The scalar unit ends at 18: total 20.
  r = simulate(
      program({li(1, 0), li(2, 0),
               vec(Opcode::vadds, DType::f32, vo(ub(0, 2)), vo(ub(0, 2)), vo(ub(0)), 64, 1, 1.0f),
               addi(2, 2, 256), addi(1, 1, 1), blti(1, 4, 2)}));
  EXPECT_EQ(r.total_cycles, 20u);
  EXPECT_EQ(r.instructions, 18u);
  EXPECT_EQ(pipe(r, Pipe::vector).instructions, 4u);
  EXPECT_EQ(pipe(r, Pipe::scalar).instructions, 14u);
}

TEST(Timing, FlagsOverlapTwoPipes) {
  //  0 dma gm->ub 2048 B (mte2): s 1, pipe free 33, completes 333 (see DmaGmToUb).
  //  1 vmul strided f16 (vector, occupancy 64, independent data): queued 2, starts 2, free 66.
  //  2 set_flag mte2->vector: queued 3, starts max(3, 33) = 33, sets the flag when the dma has
  //    completed: 333.
  //  3 wait_flag mte2->vector: queued 4, starts max(4, 66) = 66, holds the vector pipe until 333.
  //  4 vadd.f16 on the dma'd data: queued 5, starts 333, occupancy 1: completes 333+1+4 = 338.
  // The vmul overlapped the dma: the program takes 338 cycles, not 333 + 69 + ...
  auto p = program({dma(DType::f16, ub(0), gm(0), {1024}),
                    vec(Opcode::vmul, DType::f16, vo(ub(65536), 1, 128), vo(ub(69632), 2, 256),
                        vo(ub(73728), 1, 128), 128, 4),
                    set_flag(Pipe::mte2, Pipe::vector, 0), wait_flag(Pipe::mte2, Pipe::vector, 0),
                    vec(Opcode::vadd, DType::f16, vo(ub(8192)), vo(ub(0)), vo(ub(256)), 128)});
  const auto r = simulate(p);
  EXPECT_EQ(r.total_cycles, 338u);
  EXPECT_EQ(pipe(r, Pipe::vector).busy_cycles, 65u);  // waiting is not busy
  EXPECT_EQ(pipe(r, Pipe::vector).instructions, 3u);
  EXPECT_EQ(pipe(r, Pipe::mte2).instructions, 2u);
  EXPECT_EQ(pipe(r, Pipe::mte2).busy_cycles, 32u);
}

TEST(Timing, Barrier) {
  // dma (completes 333, see DmaGmToUb); barrier issued at 1 continues at max(1 + 1, 333) = 333;
  // vadd issued at 333, queued 334, starts 334, completes 334 + 1 + 4 = 339.
  const auto r =
      simulate(program({dma(DType::f16, ub(0), gm(0), {1024}), barrier(),
                        vec(Opcode::vadd, DType::f16, vo(ub(8192)), vo(ub(0)), vo(ub(256)), 128)}));
  EXPECT_EQ(r.total_cycles, 339u);
  EXPECT_EQ(r.instructions, 3u);
}

TEST(Timing, CoreBarrierTwoCores) {
  // core 0: dma (completes 333), core_barrier, vadd; core 1: core_barrier, vadd.
  // Arrivals: core 0 max(1 + 1, 333) = 333, core 1 max(0 + 1, 0) = 1 -> both released at 333.
  // Each vadd: issued 333, queued 334, completes 334 + 1 + 4 = 339 (core 1 alone would end at 7).
  isa::Program p;
  p.gm_bytes = 1 << 16;
  const auto v = vec(Opcode::vadd, DType::f16, vo(ub(8192)), vo(ub(0)), vo(ub(256)), 128);
  p.cores = {{dma(DType::f16, ub(0), gm(0), {1024}), core_barrier(), v}, {core_barrier(), v}};
  const auto r = simulate(p, test_hw(2));
  EXPECT_EQ(r.total_cycles, 339u);
  EXPECT_EQ(r.cores[0].finish_cycle, 339u);
  EXPECT_EQ(r.cores[1].finish_cycle, 339u);
  EXPECT_EQ(r.instructions, 5u);
}

TEST(Timing, DramContentionTwoCores) {
  // DRAM 64 B/cycle shared; each core loads 2048 B from its own GM region at s = 1.
  // First served: DRAM [1, 33) -> occupancy max(32, 32) = 32, completes 1 + 32 + 300 = 333.
  // Second: DRAM [33, 65) -> occupancy max(32, 64) = 64, completes 1 + 64 + 300 = 365.
  auto hw = test_hw(2);
  hw.dram.bytes_per_cycle = 64;
  isa::Program p;
  p.gm_bytes = 1 << 16;
  p.cores = {{dma(DType::f16, ub(0), gm(0), {1024})}, {dma(DType::f16, ub(0), gm(8192), {1024})}};
  const auto r = simulate(p, hw);
  EXPECT_EQ(r.total_cycles, 365u);
  std::vector<uint64_t> finish{r.cores[0].finish_cycle, r.cores[1].finish_cycle};
  std::sort(finish.begin(), finish.end());
  EXPECT_EQ(finish, (std::vector<uint64_t>{333, 365}));
  std::vector<uint64_t> busy{pipe(r, Pipe::mte2, 0).busy_cycles,
                             pipe(r, Pipe::mte2, 1).busy_cycles};
  std::sort(busy.begin(), busy.end());
  EXPECT_EQ(busy, (std::vector<uint64_t>{32, 64}));
  EXPECT_EQ(r.dram_read_bytes, 4096u);
  // Without contention (128 B/cycle: 16 cycles each, [1,17) and [17,33)) both occupancies stay
  // 32 (the second: max(32, 33 - 1) = 32): both complete at 333.
  EXPECT_EQ(simulate(p, test_hw(2)).total_cycles, 333u);
}

TEST(Timing, IssueQueueFullStall) {
  // Four strided vmul (occupancy 64 each, latency 4; distinct outputs, so no hazards), then a
  // 2048-byte dma on MTE2. Vector starts: 1, 65, 129, 193 -> the vector pipe ends at
  // 193 + 64 + 4 = 261.
  // Depth 16: the dma is issued at 4, queued 5, completes 5 + 32 + 300 = 337.
  // Depth 2: vmul #3 (issued at 3) finds two not-started entries (#1 starts 65, #2 starts 129):
  // it enters when #1 starts, at 65; the dma is issued at 65, queued 66, completes
  // 66 + 32 + 300 = 398.
  auto v = [](int i) {
    return vec(Opcode::vmul, DType::f16, vo(ub(16384 + 1024 * i), 1, 128), vo(ub(4096), 2, 256),
               vo(ub(8192), 1, 128), 128, 4);
  };
  auto p = program({v(0), v(1), v(2), v(3), dma(DType::f16, ub(65536), gm(0), {1024})});
  EXPECT_EQ(simulate(p).total_cycles, 337u);
  auto hw = test_hw();
  hw.core.scalar.issue_queue_depth = 2;
  const auto r = simulate(p, hw);
  EXPECT_EQ(r.total_cycles, 398u);
  EXPECT_EQ(pipe(r, Pipe::vector).busy_cycles, 256u);
  EXPECT_EQ(r.cores[0].finish_cycle, 398u);
  // With the same output for all four (write-after-write hazards) each vmul waits for the previous
  // one's completion: starts 1, 69, 137, 205; #3 enters when #1 starts (69), the dma is queued at
  // 70 and completes 70 + 32 + 300 = 402.
  auto same = program({v(0), v(0), v(0), v(0), dma(DType::f16, ub(65536), gm(0), {1024})});
  EXPECT_EQ(simulate(same, hw).total_cycles, 402u);
}

TEST(Timing, IntraPipeRawHazard) {
  // v0: vadd.f16 128 elements -> ub[0, 256): starts 1, completes 6 (pipe free at 2).
  // v1 reads ub[0, 256): queued 2, hazard_ready = 6 -> starts 6, completes 6 + 1 + 4 = 11.
  const auto v0 = vec(Opcode::vadd, DType::f16, vo(ub(0)), vo(ub(1024)), vo(ub(2048)), 128);
  auto raw =
      program({v0, vec(Opcode::vadd, DType::f16, vo(ub(4096)), vo(ub(0)), vo(ub(2048)), 128)});
  EXPECT_EQ(simulate(raw).total_cycles, 11u);
  // Reading ub[512, 768) instead (no overlap): starts 2, completes 7.
  auto independent =
      program({v0, vec(Opcode::vadd, DType::f16, vo(ub(4096)), vo(ub(512)), vo(ub(2048)), 128)});
  EXPECT_EQ(simulate(independent).total_cycles, 7u);
  // Write-after-write: v1 writes ub[128, 384), overlapping v0's output: starts 6, ends 11.
  auto waw =
      program({v0, vec(Opcode::vadd, DType::f16, vo(ub(128)), vo(ub(512)), vo(ub(2048)), 128)});
  EXPECT_EQ(simulate(waw).total_cycles, 11u);
}

TEST(Timing, TimingOnlyModeGivesSameCycles) {
  // The flag program of FlagsOverlapTwoPipes in timing-only mode: still 338 cycles.
  auto p = program({dma(DType::f16, ub(0), gm(0), {1024}), set_flag(Pipe::mte2, Pipe::vector, 0),
                    wait_flag(Pipe::mte2, Pipe::vector, 0),
                    vec(Opcode::vadd, DType::f16, vo(ub(8192)), vo(ub(0)), vo(ub(256)), 128)});
  const auto f = simulate(p, test_hw(), true), t = simulate(p, test_hw(), false);
  EXPECT_EQ(f.total_cycles, 338u);
  EXPECT_EQ(t.total_cycles, 338u);
  EXPECT_EQ(t.dram_read_bytes, f.dram_read_bytes);
}

// lbu x1, x0, 64 (the guard byte at GM 64); blti x1, 1, <end>; then the guarded block. `byte`
// is written to GM 64 before the run (functional runs only).
sim::SimResult run_guarded(const isa::Program& p, const npu::HwConfig& hw, uint8_t byte,
                           bool functional = true) {
  sim::SimOptions o;
  o.functional = functional;
  sim::Simulator s(hw, o);
  s.load(p);
  if (functional) s.write_gm(64, &byte, 1);
  return s.run();
}

TEST(Timing, ScalarLoadAndBranchSkipTheBlock) {
  //  0 lbu x1, x0, 64: issued at 0; the scalar unit waits c_s + dram.latency_cycles = 1 + 200,
  //    so the next instruction issues at 201.
  //  1 blti x1, 1, 4: issued at 201 (c_s = 1).
  //  byte 0: taken, the stream ends at 202: 202 cycles, 2 instructions, no vector work.
  //  byte 1 (or 0x80: zero-extended, 128 >= 1): not taken; vadd #1 issued 202, queued 203,
  //    starts 203, completes 203 + 1 + 4 = 208; vadd #2 (another output) issued 203, queued 204,
  //    starts 204 (pipe free at 204), completes 209: 209 cycles, 4 instructions.
  const auto v = [](int64_t out) {
    return vec(Opcode::vadd, DType::f16, vo(ub(out)), vo(ub(0)), vo(ub(256)), 128);
  };
  const auto p = program({scalar(Opcode::lbu, 1, 0, 0, 64), blti(1, 1, 4), v(4096), v(8192)});
  auto r = run_guarded(p, test_hw(), 0);
  EXPECT_EQ(r.total_cycles, 202u);
  EXPECT_EQ(r.instructions, 2u);
  EXPECT_EQ(pipe(r, Pipe::vector).instructions, 0u);
  EXPECT_EQ(pipe(r, Pipe::scalar).instructions, 2u);
  for (uint8_t byte : {uint8_t{1}, uint8_t{0x80}}) {
    r = run_guarded(p, test_hw(), byte);
    EXPECT_EQ(r.total_cycles, 209u) << int(byte);
    EXPECT_EQ(r.instructions, 4u) << int(byte);
    EXPECT_EQ(pipe(r, Pipe::vector).instructions, 2u) << int(byte);
  }
  // Timing-only: GM holds no values, lbu reads 1 and the block runs (both branches of a compiled
  // If are timed).
  EXPECT_EQ(run_guarded(p, test_hw(), 0, false).total_cycles, 209u);
  // The latency is dram.latency_cycles: 50 instead of 200 -> 202 - 150 = 52.
  auto fast = test_hw();
  fast.dram.latency_cycles = 50;
  EXPECT_EQ(run_guarded(p, fast, 0).total_cycles, 52u);
}

TEST(Timing, GuardedBlockWithCoreBarrierOnTwoCores) {
  // Each core: 0 lbu x1, x0, 64 | 1 blti x1, 1, 5 | 2 vadd | 3 core_barrier | 4 vadd.
  // Byte 0: both cores skip the block, core_barrier included (every core skips the same ones):
  //   202 cycles each, as in ScalarLoadAndBranchSkipTheBlock.
  // Byte 1: vadd issued 202, queued 203, completes 208; the core_barrier issued at 203 arrives at
  //   max(203 + 1, 208) = 208 on both cores; vadd #2 issued 208, queued 209, completes
  //   209 + 1 + 4 = 214.
  const auto v = [](int64_t out) {
    return vec(Opcode::vadd, DType::f16, vo(ub(out)), vo(ub(0)), vo(ub(256)), 128);
  };
  const std::vector<Instruction> code = {scalar(Opcode::lbu, 1, 0, 0, 64), blti(1, 1, 5), v(4096),
                                         core_barrier(), v(8192)};
  isa::Program p = program(code);
  p.cores.push_back(code);
  auto r = run_guarded(p, test_hw(2), 0);
  EXPECT_EQ(r.total_cycles, 202u);
  EXPECT_EQ(r.instructions, 4u);
  r = run_guarded(p, test_hw(2), 1);
  EXPECT_EQ(r.total_cycles, 214u);
  EXPECT_EQ(r.cores[0].finish_cycle, 214u);
  EXPECT_EQ(r.cores[1].finish_cycle, 214u);
  EXPECT_EQ(r.instructions, 10u);
}

TEST(Timing, ScalarLoadOutsideGmFails) {
  // GM is 1 MiB: byte 1 << 20 is one past its end.
  const auto p = program({scalar(Opcode::lbu, 1, 0, 0, int64_t{1} << 20)});
  try {
    run_guarded(p, test_hw(), 0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("lbu: read of gm byte 1048576 is outside the 1048576-byte gm"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessel
