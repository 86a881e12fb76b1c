// The SystemC model as a whole: functional results equal the interpreter's on randomized and
// double-buffered programs, timing-only equals functional in cycles, deadlocks and out-of-bounds
// accesses are reported with the unit/instruction/flag, many runs per process work, the Chrome
// trace is valid JSON with the expected events, max_cycles stops runaway programs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "compiler/support/error.h"
#include "isa/interpreter.h"
#include "isa/semantics.h"
#include "simulator/simulator.h"
#include "tests/simulator/sim_test_util.h"

namespace tessel {
namespace {

using namespace testutil;

// ---------------------------------------------------------------------------------------------
// Random program generator: data instructions of every class with random shapes, strides,
// windows and addresses (all in bounds), totally ordered by set_flag/wait_flag pairs between
// consecutive instructions on different pipes, plus scalar loops over register-addressed vector
// ops fenced by barriers. Results must not depend on timing, so simulator == interpreter exactly.
class RandomProgram {
 public:
  struct Layout {
    int64_t gm_bytes;
    int64_t input_end;               // GM [0, input_end) holds random inputs (read only)
    int64_t store_begin, store_end;  // random ub->gm stores land here
    int64_t dump_begin;              // the final UB dump (128 KiB) lands here
  };

  RandomProgram(uint32_t seed, Layout layout) : rng_(seed), layout_(layout) {}

  std::vector<Instruction> generate(int n_instructions) {
    code_.clear();
    last_ = Pipe::scalar;
    for (int i = 0; i < n_instructions; ++i) {
      if (rnd(0, 9) == 0) {
        loop();
      } else {
        emit(random_data());
      }
    }
    // Observe UB: dump [0, 128 KiB) to GM.
    emit(dma(DType::f16, gm(layout_.dump_begin), ub(0), {65536}));
    return code_;
  }

  void emit(const Instruction& in) {
    const Pipe p = in.pipe();
    if (last_ != Pipe::scalar && last_ != p) {
      const auto e = static_cast<uint8_t>(event_++ % 8);
      code_.push_back(set_flag(last_, p, e));
      code_.push_back(wait_flag(last_, p, e));
    }
    code_.push_back(in);
    last_ = p;
  }

 private:
  int rnd(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  DType dt() { return rnd(0, 1) ? DType::f16 : DType::f32; }
  int64_t addr(int64_t lo, int64_t hi, int align = 4) {
    return (std::uniform_int_distribution<int64_t>(lo, hi)(rng_) / align) * align;
  }

  // In bounds for every register value in `reg_values` (x5 takes these values in loops).
  bool fits(const Instruction& in, const std::vector<int64_t>& reg_values = {0}) {
    const auto& b = hw_.core.buffers_bytes;
    const std::array<uint64_t, isa::kNumScopes> sizes{uint64_t(layout_.gm_bytes),
                                                      uint64_t(b.l1),
                                                      uint64_t(b.l0a),
                                                      uint64_t(b.l0b),
                                                      uint64_t(b.l0c),
                                                      uint64_t(b.ub)};
    for (int64_t v : reg_values) {
      std::array<int64_t, isa::kNumRegs> regs{};
      regs[5] = v;
      const Instruction r = isa::resolve(in, regs);
      for (const auto& range : isa::access_ranges(hw_, r)) {
        if (range.end > sizes[int(range.scope)]) return false;
        // Read GM inputs only, and keep stores in their region (no cross-core races).
        if (range.scope == Scope::gm && range.write &&
            (int64_t(range.begin) < layout_.store_begin || int64_t(range.end) > layout_.store_end))
          return false;
        if (range.scope == Scope::gm && !range.write && int64_t(range.end) > layout_.input_end)
          return false;
      }
    }
    return true;
  }

  isa::DmaArgs random_dma(Scope dst_scope, Scope src_scope) {
    isa::DmaArgs d;
    d.dtype = dt();
    d.ndims = static_cast<uint8_t>(rnd(1, 3));
    int64_t src_stride = 1, dst_stride = 1;
    for (int k = d.ndims - 1; k >= 0; --k) {
      const int ext = k == d.ndims - 1 ? rnd(1, 48) : rnd(1, 5);
      d.extent[k] = ext;
      d.src_stride[k] = src_stride;
      d.dst_stride[k] = dst_stride;
      src_stride *= ext + rnd(0, 3);
      dst_stride *= ext + rnd(0, 2);
      d.valid_begin[k] = rnd(0, 1) ? 0 : rnd(0, ext);
      d.valid_end[k] = rnd(0, 1) ? ext : rnd(0, ext + 2);
    }
    if (rnd(0, 4) == 0) std::swap(d.dst_stride[0], d.dst_stride[d.ndims - 1]);  // transposing
    d.pad_value = static_cast<float>(rnd(-8, 8)) * 0.25f;
    auto place = [&](Scope s) -> MemRef {
      switch (s) {
        case Scope::gm:
          return dst_scope == Scope::gm ? gm(addr(layout_.store_begin, layout_.store_end - 1))
                                        : gm(addr(0, layout_.input_end - 4096));
        case Scope::ub:
          return ub(addr(0, 120000));
        default:
          return l1(addr(0, 900000));
      }
    };
    d.dst = place(dst_scope);
    d.src = place(src_scope);
    return d;
  }

  Instruction random_data() {
    for (;;) {
      Instruction in;
      switch (rnd(0, 9)) {
        case 0:
          in = dma(random_dma(Scope::ub, Scope::gm));
          break;
        case 1:
          in = dma(random_dma(Scope::l1, Scope::gm));
          break;
        case 2:
          in = dma(random_dma(Scope::gm, Scope::ub));
          break;
        case 3:
          in = dma(random_dma(Scope::l1, Scope::ub));
          break;
        case 4: {
          const uint32_t rows = rnd(1, 40), cols = rnd(1, 40);
          const bool tr = rnd(0, 1);
          in = load2d(DType::f16, rnd(0, 1) ? l0a(addr(0, 40000, 512)) : l0b(addr(0, 40000, 512)),
                      l1(addr(0, 200000)), rows, cols, (tr ? rows : cols) + rnd(0, 8), tr);
          break;
        }
        case 5: {
          isa::Img2colArgs g;
          g.dtype = DType::f16;
          g.c = rnd(1, 3), g.h = rnd(1, 8), g.w = rnd(1, 8), g.kh = rnd(1, 3), g.kw = rnd(1, 3);
          g.stride_h = rnd(1, 2), g.stride_w = rnd(1, 2);
          g.dilation_h = rnd(1, 2), g.dilation_w = rnd(1, 2);
          g.pad_top = rnd(0, 1), g.pad_left = rnd(0, 1);
          const int oh =
              (int(g.h) + 2 * g.pad_top - int(g.dilation_h * (g.kh - 1)) - 1) / int(g.stride_h) + 1;
          const int ow =
              (int(g.w) + 2 * g.pad_left - int(g.dilation_w * (g.kw - 1)) - 1) / int(g.stride_w) +
              1;
          if (oh <= 0 || ow <= 0) continue;
          g.oh = oh, g.ow = ow;
          g.src = l1(addr(0, 200000));
          g.dst = rnd(0, 1) ? l0a(addr(0, 40000, 512)) : l0b(addr(0, 40000, 512));
          in = img2col(g);
          break;
        }
        case 6:
          in = mmad(l0c(addr(0, 200000, 1024)), l0a(addr(0, 40000, 512)), l0b(addr(0, 40000, 512)),
                    rnd(1, 2), rnd(1, 2), rnd(1, 2), rnd(0, 1));
          break;
        case 7: {
          const uint32_t m = rnd(1, 40), n = rnd(1, 40);
          in = fix(dt(), ub(addr(0, 120000)), l0c(addr(0, 200000, 1024)), m, n, n + rnd(0, 8),
                   rnd(0, 1));
          break;
        }
        default:
          in = random_vector(0);
          break;
      }
      if (fits(in)) return in;
    }
  }

  Instruction random_vector(uint8_t reg) {
    const Opcode op = Opcode(rnd(int(Opcode::vadd), int(Opcode::vrmin)));
    const uint32_t count = rnd(1, 80), repeat = rnd(1, 4);
    auto operand = [&](bool is_dst) {
      const int es = is_dst ? rnd(1, 2) : rnd(0, 2);
      return vo(ub(addr(0, 120000), reg), es, int(count) * std::max(es, 1) + rnd(0, 8));
    };
    const auto d = operand(true);
    const auto s0 = operand(false);
    const auto s1 = operand(false);
    return vec(op, dt(), d, s0, s1, count, repeat, static_cast<float>(rnd(-8, 8)) * 0.5f);
  }

  // barrier; x5 = 0; L: barrier; k vector ops on ub[x5 + ...]; x5 += 256; if x5 < 256*n goto L;
  // barrier.
  void loop() {
    const int iters = rnd(1, 4);
    std::vector<int64_t> values;
    for (int i = 0; i < iters; ++i) values.push_back(256 * i);
    code_.push_back(barrier());
    code_.push_back(li(5, 0));
    const int32_t top = static_cast<int32_t>(code_.size());
    code_.push_back(barrier());
    last_ = Pipe::scalar;
    const int k = rnd(1, 3);
    for (int i = 0; i < k; ++i) {
      Instruction v;
      do v = random_vector(5);
      while (!fits(v, values));
      emit(v);
    }
    code_.push_back(addi(5, 5, 256));
    code_.push_back(blti(5, 256 * iters, top));
    code_.push_back(barrier());
    last_ = Pipe::scalar;
  }

  std::mt19937 rng_;
  Layout layout_;
  npu::HwConfig hw_ = test_hw();
  std::vector<Instruction> code_;
  Pipe last_ = Pipe::scalar;
  int event_ = 0;
};

std::vector<uint8_t> random_gm(uint64_t bytes, uint64_t input_bytes, uint32_t seed) {
  std::vector<uint8_t> gm(bytes, 0);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-64, 64);
  for (uint64_t i = 0; i + 1 < input_bytes; i += 2) put_f16(gm, i, u(rng) / 16.0f);
  return gm;
}

struct Outcome {
  std::vector<uint8_t> gm;
  sim::SimResult result;
};

Outcome simulate(const isa::Program& p, const std::vector<uint8_t>& gm, const npu::HwConfig& hw,
                 bool functional = true) {
  sim::SimOptions o;
  o.functional = functional;
  sim::Simulator s(hw, o);
  s.load(p);
  s.write_gm(0, gm.data(), gm.size());
  Outcome out;
  out.result = s.run();
  out.gm = s.gm();
  return out;
}

TEST(Simulator, RandomProgramsMatchInterpreter) {
  const RandomProgram::Layout layout{512 << 10, 128 << 10, 128 << 10, 256 << 10, 256 << 10};
  for (uint32_t seed = 1; seed <= 25; ++seed) {
    RandomProgram gen(seed, layout);
    auto p = program(gen.generate(40), layout.gm_bytes);
    const auto gm0 = random_gm(layout.gm_bytes, layout.input_end, seed);
    std::vector<uint8_t> expect = gm0;
    const auto stats = isa::interpret(p, test_hw(), expect);
    const Outcome f = simulate(p, gm0, test_hw(), true);
    ASSERT_EQ(f.gm.size(), expect.size());
    // Compare the dump region element-wise first for a readable failure, then all bytes.
    size_t first_diff = 0;
    while (first_diff < expect.size() && f.gm[first_diff] == expect[first_diff]) ++first_diff;
    EXPECT_EQ(first_diff, expect.size())
        << "seed " << seed << ": GM differs at byte " << first_diff;
    EXPECT_EQ(f.result.instructions, stats.instructions) << "seed " << seed;
    // The run must have done real work (the dump alone moves 128 KiB).
    EXPECT_GE(f.result.dram_write_bytes, 131072u);
    // Timing-only mode: identical cycles and statistics.
    const Outcome t = simulate(p, gm0, test_hw(), false);
    EXPECT_EQ(t.result.total_cycles, f.result.total_cycles) << "seed " << seed;
    EXPECT_EQ(t.result.instructions, f.result.instructions);
    for (int pp = 0; pp < isa::kNumPipes; ++pp)
      EXPECT_EQ(t.result.cores[0].pipes[pp].busy_cycles, f.result.cores[0].pipes[pp].busy_cycles);
    // Timing-only leaves GM untouched.
    EXPECT_EQ(t.gm, gm0);
  }
}

TEST(Simulator, RandomTwoCoreProgramsWithCoreBarrierMatchInterpreter) {
  // Each core runs its own random program (stores in its own GM region, dump to its own region),
  // then a core_barrier, then each core reads the other core's dump, scales it and stores it.
  for (uint32_t seed = 100; seed < 108; ++seed) {
    isa::Program p;
    p.gm_bytes = 1 << 20;
    for (int c = 0; c < 2; ++c) {
      const RandomProgram::Layout layout{1 << 20, 128 << 10, (128 << 10) + c * (64 << 10),
                                         (192 << 10) + c * (64 << 10),
                                         (256 << 10) + c * (128 << 10)};
      RandomProgram gen(seed * 2 + c, layout);
      auto code = gen.generate(25);
      code.push_back(core_barrier());
      const int64_t other_dump = (256 << 10) + (1 - c) * (128 << 10);
      code.push_back(dma(DType::f16, ub(0), gm(other_dump + 4096), {2048}));
      code.push_back(set_flag(Pipe::mte2, Pipe::vector, 0));
      code.push_back(wait_flag(Pipe::mte2, Pipe::vector, 0));
      code.push_back(vec(Opcode::vmuls, DType::f16, vo(ub(8192), 1, 128), vo(ub(0), 1, 128),
                         vo(ub(0)), 128, 16, -1.5f));
      code.push_back(set_flag(Pipe::vector, Pipe::mte3, 0));
      code.push_back(wait_flag(Pipe::vector, Pipe::mte3, 0));
      code.push_back(dma(DType::f16, gm((512 << 10) + c * 8192), ub(8192), {2048}));
      p.cores.push_back(std::move(code));
    }
    const auto gm0 = random_gm(p.gm_bytes, 128 << 10, seed);
    std::vector<uint8_t> expect = gm0;
    isa::interpret(p, test_hw(2), expect);
    const Outcome f = simulate(p, gm0, test_hw(2));
    EXPECT_TRUE(f.gm == expect) << "seed " << seed;
    // The exchanged data is really the other core's dump times -1.5.
    for (int c = 0; c < 2; ++c) {
      const int64_t other_dump = (256 << 10) + (1 - c) * (128 << 10);
      for (int i = 0; i < 2048; i += 97) {
        const float x = get_f16(f.gm, other_dump + 4096 + 2 * i);
        const float got = get_f16(f.gm, (512 << 10) + c * 8192 + 2 * i);
        if (std::isnan(x))
          EXPECT_TRUE(std::isnan(got));
        else
          EXPECT_EQ(got, round_to_f16(x * -1.5f));
      }
    }
    const Outcome t = simulate(p, gm0, test_hw(2), false);
    EXPECT_EQ(t.result.total_cycles, f.result.total_cycles);
  }
}

// A double-buffered mte2 -> vector -> mte3 pipeline over `tiles` tiles of 1024 f16, two tiles per
// loop iteration (buffers b = 0, 1 use event b): out = in * 3.
isa::Program double_buffered(int tiles, int64_t out_base) {
  std::vector<Instruction> c = {li(1, 0),
                                li(2, out_base),
                                li(3, 0),
                                set_flag(Pipe::vector, Pipe::mte2, 0),
                                set_flag(Pipe::vector, Pipe::mte2, 1),
                                set_flag(Pipe::mte3, Pipe::vector, 0),
                                set_flag(Pipe::mte3, Pipe::vector, 1)};
  const int32_t top = static_cast<int32_t>(c.size());
  for (uint8_t b = 0; b < 2; ++b) {
    c.push_back(wait_flag(Pipe::vector, Pipe::mte2, b));
    c.push_back(dma(DType::f16, ub(b * 2048), gm(b * 2048, 1), {1024}));
    c.push_back(set_flag(Pipe::mte2, Pipe::vector, b));
    c.push_back(wait_flag(Pipe::mte2, Pipe::vector, b));
    c.push_back(wait_flag(Pipe::mte3, Pipe::vector, b));
    c.push_back(vec(Opcode::vmuls, DType::f16, vo(ub(4096 + b * 2048), 1, 128),
                    vo(ub(b * 2048), 1, 128), vo(ub(0)), 128, 8, 3.0f));
    c.push_back(set_flag(Pipe::vector, Pipe::mte2, b));
    c.push_back(set_flag(Pipe::vector, Pipe::mte3, b));
    c.push_back(wait_flag(Pipe::vector, Pipe::mte3, b));
    c.push_back(dma(DType::f16, gm(b * 2048, 2), ub(4096 + b * 2048), {1024}));
    c.push_back(set_flag(Pipe::mte3, Pipe::vector, b));
  }
  c.push_back(addi(1, 1, 4096));
  c.push_back(addi(2, 2, 4096));
  c.push_back(addi(3, 3, 1));
  c.push_back(blti(3, tiles / 2, top));
  c.push_back(barrier());
  return program(c, 1 << 20);
}

TEST(Simulator, DoubleBufferedPipelineComputesAndOverlaps) {
  const int tiles = 8;
  auto p = double_buffered(tiles, 512 << 10);
  const auto gm0 = random_gm(1 << 20, tiles * 2048, 9);
  std::vector<uint8_t> expect = gm0;
  isa::interpret(p, test_hw(), expect);
  const Outcome f = simulate(p, gm0, test_hw());
  ASSERT_TRUE(f.gm == expect);
  for (int i = 0; i < tiles * 1024; ++i)
    ASSERT_EQ(get_f16(f.gm, (512 << 10) + 2 * i), round_to_f16(get_f16(gm0, 2 * i) * 3.0f)) << i;
  const auto& s = f.result.cores[0];
  // Busy cycles: every dma moves 2048 B at 64 B/cycle (the shared DRAM at 128 B/cycle never
  // limits a single stream): 8 * 32 on MTE2 and MTE3; each vmuls is 8 repeats of 1 cycle.
  EXPECT_EQ(s.pipes[int(Pipe::mte2)].busy_cycles, 8u * 32);
  EXPECT_EQ(s.pipes[int(Pipe::mte3)].busy_cycles, 8u * 32);
  EXPECT_EQ(s.pipes[int(Pipe::vector)].busy_cycles, 8u * 8);
  EXPECT_EQ(f.result.dram_read_bytes, 8u * 2048);
  EXPECT_EQ(f.result.dram_write_bytes, 8u * 2048);
  // Exact schedule. Prologue: 3 li + 4 set_flag (the initial "buffer free" flags, all set by
  // cycle 7). Tile 0: wait_flag queued at 8 passes at once; load 0 queued at 9 starts S0 = 9 and
  // completes C0 = 9 + 32 + 300 = 341. Each load's set_flag drains MTE2 until the load completed,
  // so load k starts at C(k-1): S_k = 9 + 332k, C_k = 341 + 332k (its buffer was freed long before,
  // by vector k-2 at C(k-2) + 12). vmuls k starts at C_k (8 cycles + latency 4: done C_k + 12 = 353
  // + 332k; the output buffer's store k-2 completed at 685 + 332(k-2), earlier). Store k starts at
  // max(353 + 332k, completion of store k-1 which drained MTE3: 685 + 332(k-1)) = 353 + 332k and
  // completes 685 + 332k; the last (k = 7) at 685 + 2324 = 3009. A schedule without overlap would
  // need 8 * (332 + 12 + 332) = 5408.
  EXPECT_EQ(f.result.total_cycles, 3009u);
  EXPECT_EQ(simulate(p, gm0, test_hw(), false).result.total_cycles, f.result.total_cycles);
}

// ---------------------------------------------------------------------------------------------
// Errors

std::string run_error(const isa::Program& p, const npu::HwConfig& hw = test_hw(),
                      sim::SimOptions o = {}) {
  try {
    sim::Simulator s(hw, o);
    s.load(p);
    s.run();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Simulator, DeadlockMissingSetFlagNamesTheFlag) {
  // The vector pipe waits for (mte2 -> vector, event 3) but nobody sets it.
  auto p = program({dma(DType::f16, ub(0), gm(0), {1024}), wait_flag(Pipe::mte2, Pipe::vector, 3),
                    vec(Opcode::vadd, DType::f16, vo(ub(8192)), vo(ub(0)), vo(ub(256)), 128)});
  for (bool functional : {true, false}) {
    sim::SimOptions o;
    o.functional = functional;
    const std::string msg = run_error(p, test_hw(), o);
    ASSERT_FALSE(msg.empty());
    // The dma completed at 333 (see test_timing.cpp, DmaGmToUb): nothing happens after that.
    EXPECT_NE(msg.find("deadlock (no unit can make progress after cycle 333)"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("core 0 pipe vector is blocked at instruction 1 (wait_flag"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("waiting for flag (src mte2, dst vector, event 3) = 0"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("mte2: idle"), std::string::npos) << msg;     // what the others are doing
    EXPECT_NE(msg.find("1 more queued"), std::string::npos) << msg;  // the vadd behind it
  }
}

TEST(Simulator, DeadlockWithScalarStalledOnFullQueue) {
  // Depth 1: the vector queue holds the vadd behind the blocked wait_flag, so the scalar unit
  // stalls dispatching the next vadd; the report says so.
  auto hw = test_hw();
  hw.core.scalar.issue_queue_depth = 1;
  const auto v = vec(Opcode::vadd, DType::f16, vo(ub(8192)), vo(ub(0)), vo(ub(256)), 128);
  auto p = program({wait_flag(Pipe::mte3, Pipe::vector, 0), v, v});
  const std::string msg = run_error(p, hw);
  EXPECT_NE(msg.find("waiting for flag (src mte3, dst vector, event 0)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("scalar: stalled dispatching instruction 2"), std::string::npos) << msg;
}

TEST(Simulator, CoreBarrierMismatchIsADeadlock) {
  isa::Program p;
  p.gm_bytes = 4096;
  p.cores = {{core_barrier()}, {li(1, 2)}};
  const std::string msg = run_error(p, test_hw(2));
  EXPECT_NE(msg.find("deadlock"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cores 0 wait in a core_barrier that cores 1 never reach"), std::string::npos)
      << msg;
}

TEST(Simulator, OutOfBoundsScratchpadAccessIsAnError) {
  // 1024 f16 into UB at 262144 - 1024: [261120, 263168) exceeds the 262144-byte UB.
  auto p = program({li(2, 262144 - 1024), dma(DType::f16, ub(0, 2), gm(0), {1024})});
  const std::string msg = run_error(p);
  EXPECT_NE(msg.find("core 0 instruction 1 (dma"), std::string::npos) << msg;
  EXPECT_NE(msg.find("write of ub bytes [261120, 263168) is outside the 262144-byte ub"),
            std::string::npos)
      << msg;
  // GM too: reading past program.gm_bytes.
  const std::string gm_msg = run_error(program({dma(DType::f16, ub(0), gm(4000), {1024})}, 4096));
  EXPECT_NE(gm_msg.find("outside the 4096-byte gm"), std::string::npos) << gm_msg;
  // Bad flag event id and a flag between a pipe and itself.
  EXPECT_NE(run_error(program({set_flag(Pipe::mte2, Pipe::vector, 8)})).find("event id 8"),
            std::string::npos);
  EXPECT_NE(run_error(program({set_flag(Pipe::mte2, Pipe::mte2, 0)})).find("two different pipes"),
            std::string::npos);
  EXPECT_NE(run_error(program({set_flag(Pipe::scalar, Pipe::vector, 0)}))
                .find("core 0 instruction 0 (set_flag"),
            std::string::npos);
}

TEST(Simulator, LimitsAndLoadChecks) {
  sim::SimOptions o;
  o.max_cycles = 10000;
  // An endless scalar loop stops at max_cycles.
  EXPECT_NE(run_error(program({jmp(0)}), test_hw(), o).find("exceeded max_cycles = 10000"),
            std::string::npos);
  // A dma completing at 333 exceeds max_cycles = 100.
  o.max_cycles = 100;
  EXPECT_NE(run_error(program({dma(DType::f16, ub(0), gm(0), {1024})}), test_hw(), o)
                .find("completes at cycle 333"),
            std::string::npos);
  // More core streams than cores; GM larger than the DRAM capacity.
  isa::Program two;
  two.gm_bytes = 64;
  two.cores = {{}, {}};
  sim::Simulator s(test_hw(1));
  EXPECT_THROW(s.load(two), Error);
  auto hw = test_hw();
  hw.dram.capacity_bytes = 1024;
  sim::Simulator small(hw);
  EXPECT_THROW(small.load(program({}, 4096)), Error);
  EXPECT_THROW(sim::Simulator(test_hw()).run(), Error);  // nothing loaded
}

// load copies, takes over or shares the program (no copy), and the run is the same; an
// instruction addressed through x0 (access ranges decoded once) and the same one addressed
// through a register (resolved at dispatch) time the same, hazards included.
TEST(Simulator, CopiedMovedAndSharedLoadsAndStaticRangesRunTheSame) {
  auto code = [](bool through_register) {
    const uint8_t r = through_register ? 1 : 0;
    const int64_t base = through_register ? 0 : 4096;
    // Two dmas on MTE2 writing overlapping UB bytes (a WAW hazard), then one to GM on MTE3.
    return std::vector<Instruction>{
        li(1, 4096),
        dma(DType::f16, ub(0), gm(base, r), {256}),
        dma(DType::f16, ub(256), gm(base + 512, r), {256}),
        dma(DType::f16, gm(base + 8192, r), ub(0), {64}),
    };
  };
  auto run = [](sim::Simulator& s) {
    const sim::SimResult r = s.run();
    return std::make_pair(r.total_cycles, r.instructions);
  };
  sim::Simulator copied(test_hw());
  const isa::Program p = program(code(false));
  copied.load(p);
  const auto expected = run(copied);
  EXPECT_GT(expected.first, 0u);
  EXPECT_EQ(expected.second, 4u);
  sim::Simulator moved(test_hw());
  moved.load(program(code(false)));
  EXPECT_EQ(run(moved), expected);
  const auto shared = std::make_shared<const isa::Program>(program(code(false)));
  sim::Simulator a(test_hw()), b(test_hw());
  a.load(shared);
  b.load(shared);
  EXPECT_EQ(run(a), expected);
  EXPECT_EQ(run(b), expected);
  sim::Simulator through_register(test_hw());
  through_register.load(program(code(true)));
  EXPECT_EQ(run(through_register), expected);
  // The same bytes arrive: GM [4096, 4224) copied to [12288, 12416) by both forms.
  std::vector<uint8_t> in(128), out_x0(128), out_reg(128);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7 + 1);
  copied.write_gm(4096, in.data(), in.size());
  through_register.write_gm(4096, in.data(), in.size());
  run(copied);
  run(through_register);
  copied.read_gm(12288, out_x0.data(), out_x0.size());
  through_register.read_gm(12288, out_reg.data(), out_reg.size());
  EXPECT_EQ(out_x0, in);
  EXPECT_EQ(out_reg, in);
  sim::Simulator none(test_hw());
  try {
    none.load(std::shared_ptr<const isa::Program>());
    FAIL() << "a null program was loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("null pointer"), std::string::npos) << e.what();
  }
}

TEST(Simulator, MalformedProgramsAndConfigsAreErrorsAndLaterRunsWork) {
  // An opcode whose operand struct does not match, a register index >= 32, a branch target past
  // the end: simulator and interpreter both name the instruction.
  Instruction bad = li(1, 0);
  bad.args = isa::VectorArgs{};
  std::vector<uint8_t> gm;
  for (const auto& p : {program({li(1, 0), bad}), program({li(40, 1)}), program({jmp(7)})}) {
    const std::string msg = run_error(p);
    EXPECT_NE(msg.find("core 0 instruction"), std::string::npos) << msg;
    EXPECT_THROW(isa::interpret(p, test_hw(), gm), Error);
  }
  // Config errors found while the modules are built (inside a fresh SystemC context).
  auto hw = test_hw();
  hw.core.scalar.cycles_per_instruction = 0;
  EXPECT_NE(run_error(program({li(1, 0)}), hw).find("core.scalar.cycles_per_instruction is 0"),
            std::string::npos);
  hw = test_hw();
  hw.dram.bytes_per_cycle = 0;
  EXPECT_NE(run_error(program({li(1, 0)}), hw).find("memory.dram.bytes_per_cycle is 0"),
            std::string::npos);
  // A normal run afterwards still works (the doc example: 6 cycles).
  sim::Simulator s(test_hw());
  s.load(program({vec(Opcode::vadd, DType::f16, vo(ub(0)), vo(ub(256)), vo(ub(512)), 128)}));
  EXPECT_EQ(s.run().total_cycles, 6u);
}

// ---------------------------------------------------------------------------------------------
// Many runs, trace

TEST(Simulator, ManyRunsInOneProcess) {
  // A program that increments 1024 f16 of GM by 1 each run: GM accumulates across runs of one
  // Simulator; fresh Simulators and deadlocking runs in between do not disturb later runs.
  auto p = program({dma(DType::f16, ub(0), gm(0), {1024}), set_flag(Pipe::mte2, Pipe::vector, 0),
                    wait_flag(Pipe::mte2, Pipe::vector, 0),
                    vec(Opcode::vadds, DType::f16, vo(ub(0), 1, 128), vo(ub(0), 1, 128), vo(ub(0)),
                        128, 8, 1.0f),
                    set_flag(Pipe::vector, Pipe::mte3, 0), wait_flag(Pipe::vector, Pipe::mte3, 0),
                    dma(DType::f16, gm(0), ub(0), {1024})},
                   4096);
  sim::Simulator s(test_hw());
  s.load(p);
  uint64_t cycles = 0;
  for (int run = 1; run <= 40; ++run) {
    const auto r = s.run();
    if (run == 1) cycles = r.total_cycles;
    EXPECT_EQ(r.total_cycles, cycles);
    if (run % 10 == 0) {
      // A failing run in between (deadlock) must not break the next ones.
      EXPECT_FALSE(run_error(program({wait_flag(Pipe::mte2, Pipe::cube, 1)})).empty());
    }
  }
  // mte2 done at 333 (flag set at 333); vadds starts 333, 8 cycles, completes 345; set_flag
  // vector->mte3 at 345; the store starts 345, completes 345 + 32 + 300 = 677.
  EXPECT_EQ(cycles, 677u);
  std::vector<uint8_t> gm(4096);
  s.read_gm(0, gm.data(), gm.size());
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(get_f16(gm, 2 * i), 40.0f);
}

TEST(Simulator, ChromeTraceHasPipeScalarOpFlowAndDramTracks) {
  // The FlagsOverlapTwoPipes program of test_timing.cpp, with op indices: op 0 = the dma and its
  // set_flag, op 1 = the vmul, op 2 = the wait_flag and the vadd; then a barrier.
  auto p = program({dma(DType::f16, ub(0), gm(0), {1024}),
                    vec(Opcode::vmul, DType::f16, vo(ub(65536), 1, 128), vo(ub(69632), 2, 256),
                        vo(ub(73728), 1, 128), 128, 4),
                    set_flag(Pipe::mte2, Pipe::vector, 0), wait_flag(Pipe::mte2, Pipe::vector, 0),
                    vec(Opcode::vadd, DType::f16, vo(ub(8192)), vo(ub(0)), vo(ub(256)), 128),
                    barrier()});
  const int32_t ops[] = {0, 1, 0, 2, 2};
  for (int i = 0; i < 5; ++i) p.cores[0][i].op_index = ops[i];
  p.op_names = {"load", "scale", "add"};
  const auto path = std::filesystem::temp_directory_path() /
                    ("tessel_trace_" + std::to_string(::getpid()) + ".json");
  sim::SimOptions o;
  o.trace_path = path.string();
  sim::Simulator s(test_hw(), o);
  s.load(p);
  const auto r = s.run();
  // The barrier waits for the pipes: it ends when the vadd completes, no later.
  EXPECT_EQ(r.total_cycles, 338u);
  // op 0: first start 1 (dma), last completion 333 (dma and flag) -> 332; op 1: vmul [2, 70) -> 68;
  // op 2: wait_flag starts 66, vadd completes 338 -> 272.
  EXPECT_EQ(r.op_cycles, (std::vector<uint64_t>{332, 68, 272}));

  std::ifstream in(path);
  ASSERT_TRUE(in.good());
  const nlohmann::json doc = nlohmann::json::parse(in);  // throws if not valid JSON
  std::filesystem::remove(path);
  // Time: ts/dur in microseconds of simulated time; at 1 GHz a cycle is 1 ns = 0.001 us.
  EXPECT_EQ(doc.at("displayTimeUnit"), "ns");
  EXPECT_EQ(doc.at("otherData").at("clock_ghz"), 1.0);
  std::vector<nlohmann::json> x, counters;
  std::map<std::pair<int, int>, std::string> thread_names;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "X") x.push_back(e);
    if (e.at("ph") == "C") counters.push_back(e);
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      thread_names[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
  }
  // Core 0: ops, the scalar unit and six pipes; the NPU process (pid 1): the ops of all cores.
  EXPECT_EQ(thread_names.size(), 9u);
  EXPECT_EQ(thread_names.at({0, 7}), "ops");
  EXPECT_EQ(thread_names.at({0, 0}), "scalar unit");
  EXPECT_EQ(thread_names.at({0, int(Pipe::mte2)}), "mte2");
  auto find = [&](const std::string& name, int pid = 0) {
    for (const auto& e : x)
      if (e.at("name") == name && e.at("pid") == pid) return e;
    ADD_FAILURE() << "no event " << name << " of pid " << pid;
    return nlohmann::json();
  };
  auto cycles = [](const nlohmann::json& e) {
    return std::make_pair(e.at("args").at("start_cycle").get<uint64_t>(),
                          e.at("args").at("duration_cycles").get<uint64_t>());
  };
  const auto d = find("dma");
  EXPECT_EQ(d.at("tid"), int(Pipe::mte2));
  EXPECT_EQ(cycles(d), std::make_pair(uint64_t{1}, uint64_t{32}));
  EXPECT_DOUBLE_EQ(d.at("ts").get<double>(), 0.001);
  EXPECT_DOUBLE_EQ(d.at("dur").get<double>(), 0.032);
  EXPECT_EQ(d.at("args").at("op"), "load");
  EXPECT_EQ(d.at("args").at("completion_cycle"), 333);
  const auto w = find("wait_flag");
  EXPECT_EQ(w.at("tid"), int(Pipe::vector));
  EXPECT_EQ(cycles(w), std::make_pair(uint64_t{66}, uint64_t{333 - 66}));
  EXPECT_EQ(cycles(find("vadd")), std::make_pair(uint64_t{333}, uint64_t{1}));
  EXPECT_EQ(find("vmul").at("args").at("duration_cycles"), 64);
  // The set_flag (starts 33, sets at 333) released the wait_flag: one flow joins them.
  const auto sf = find("set_flag");
  EXPECT_EQ(cycles(sf), std::make_pair(uint64_t{33}, uint64_t{300}));
  EXPECT_EQ(sf.at("args").at("flag"), "mte2 -> vector event 0");
  EXPECT_EQ(w.at("args").at("flag"), "mte2 -> vector event 0");
  ASSERT_TRUE(sf.contains("bind_id"));
  EXPECT_EQ(sf.at("bind_id"), w.at("bind_id"));
  EXPECT_EQ(sf.value("flow_out", false), true);
  EXPECT_EQ(w.value("flow_in", false), true);
  // Scalar unit: 5 instructions issued at cycles 1..5; the barrier fetched at 5 waits to 338.
  const auto b = find("barrier");
  EXPECT_EQ(b.at("tid"), 0);
  EXPECT_EQ(cycles(b), std::make_pair(uint64_t{5}, uint64_t{333}));
  // Op spans, per core (tid 7) and over all cores (pid 1): the report's op cycles.
  const std::string names[] = {"load", "scale", "add"};
  for (int op = 0; op < 3; ++op) {
    for (int pid : {0, 1}) {
      const auto sp = find(names[op], pid);
      EXPECT_EQ(sp.at("cat"), "op");
      EXPECT_EQ(sp.at("tid"), pid == 0 ? 7 : 0);
      EXPECT_EQ(sp.at("args").at("cycles"), r.op_cycles[op]) << names[op] << " pid " << pid;
    }
  }
  EXPECT_EQ(find("load", 1).at("args").at("start_cycle"), 1);
  EXPECT_EQ(find("add", 1).at("args").at("end_cycle"), 338);
  // DRAM: 1-cycle windows (338 cycles); the 2,048-byte load holds the 128 B/cycle channel for
  // cycles [1, 17): read 128 bytes per cycle there, 0 elsewhere; the counter sums to the bytes.
  EXPECT_EQ(doc.at("otherData").at("dram_counter_window_cycles"), 1);
  ASSERT_EQ(counters.size(), 339u);
  double read_bytes = 0;
  for (size_t i = 0; i < counters.size(); ++i) {
    const double v = counters[i].at("args").at("read");
    EXPECT_EQ(v, i >= 1 && i < 17 ? 128.0 : 0.0) << "window " << i;
    EXPECT_EQ(counters[i].at("args").at("write"), 0.0);
    read_bytes += v;
  }
  EXPECT_EQ(read_bytes, static_cast<double>(r.dram_burst_bytes));
  EXPECT_EQ(r.dram_burst_bytes, 2048u);

  // An unwritable trace path is a clear error.
  sim::SimOptions bad;
  bad.trace_path = "/nonexistent-dir/trace.json";
  EXPECT_NE(run_error(p, test_hw(), bad).find("/nonexistent-dir/trace.json"), std::string::npos);
}

}  // namespace
}  // namespace tessel
