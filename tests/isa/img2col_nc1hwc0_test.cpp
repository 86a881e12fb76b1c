// Tests of img2col reading an NC1HWC0 feature map from L1 (Img2colArgs::c0 > 0, docs/isa.md
// "img2col"): the data effect equals the dense variant on the same logical map, the pad channels
// are never read, the footprint (access_ranges), L1 traffic, text form, binary encoding and
// verifier all carry c0.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <random>
#include <vector>

#include "compiler/support/error.h"
#include "compiler/support/fp16.h"
#include "isa/asm.h"
#include "isa/encoding.h"
#include "isa/semantics.h"
#include "isa/verifier.h"
#include "isa_test_programs.h"
#include "npu_model/timing.h"

namespace tessel::isa {
namespace {

using namespace test_programs;

// The memories of one core, sized by `hw` (gm 4 KiB: img2col does not touch it).
struct Mem {
  std::array<std::vector<uint8_t>, kNumScopes> bytes;
  CoreMemory view;
  explicit Mem(const npu::HwConfig& hw) {
    const auto& b = hw.core.buffers_bytes;
    const int64_t sizes[kNumScopes] = {4096, b.l1, b.l0a, b.l0b, b.l0c, b.ub};
    for (int s = 0; s < kNumScopes; ++s) {
      bytes[s].assign(static_cast<std::size_t>(sizes[s]), 0x77);  // 0x77: "not written"
      view.base[s] = bytes[s].data();
      view.size[s] = bytes[s].size();
    }
  }
  std::vector<uint8_t>& operator[](Scope s) { return bytes[static_cast<int>(s)]; }
};

// Writes element `v` (dtype t) at element index `i` of `buf` starting at byte `base`.
void put(std::vector<uint8_t>& buf, int64_t base, int64_t i, DType t, float v) {
  uint8_t* p = buf.data() + base + i * dtype_bytes(t);
  if (t == DType::f16) {
    const uint16_t h = f32_to_f16_bits(v);
    std::memcpy(p, &h, 2);
  } else {
    std::memcpy(p, &v, 4);
  }
}
// Writes the sentinel bit pattern (a quiet NaN with a payload; also not a value the dense map
// holds) at element `i`.
void put_sentinel(std::vector<uint8_t>& buf, int64_t base, int64_t i, DType t) {
  uint8_t* p = buf.data() + base + i * dtype_bytes(t);
  if (t == DType::f16) {
    const uint16_t h = 0x7e5a;
    std::memcpy(p, &h, 2);
  } else {
    const uint32_t f = 0x7fc0beefu;
    std::memcpy(p, &f, 4);
  }
}
bool is_sentinel(const uint8_t* p, DType t) {
  if (t == DType::f16) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return h == 0x7e5a;
  }
  uint32_t f;
  std::memcpy(&f, p, 4);
  return f == 0x7fc0beefu;
}

// The NC1HWC0 element index of fm[ci][y][x] (docs/isa.md, img2col), written out independently of
// the implementation.
int64_t nc1hwc0_index(int64_t ci, int64_t y, int64_t x, int64_t h, int64_t w, int64_t c0) {
  return ((ci / c0) * h + y) * w * c0 + x * c0 + ci % c0;
}

// Runs img2col `g` twice on fresh memories: dense (c0 = 0) on the dense copy of a random map at
// L1 offset `dense_at`, and with `c0` on its NC1HWC0-packed copy (pad channels = the sentinel) at
// `packed_at`. Expects byte-identical L0A/L0B contents (the whole buffers, so also what lies
// beyond the written fractals) and no sentinel in the written destination.
void expect_same_as_dense(const npu::HwConfig& hw, Img2colArgs g, uint32_t c0, uint64_t seed,
                          int64_t dense_at = 64, int64_t packed_at = 192) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> val(-4.0f, 4.0f);
  const int64_t c = g.c, h = g.h, w = g.w;
  const int64_t c1 = (c + c0 - 1) / c0;
  Mem dense(hw), packed(hw);
  for (int64_t i = 0; i < c1 * h * w * c0; ++i)  // every packed element, pad channels included
    put_sentinel(packed[Scope::l1], packed_at, i, g.dtype);
  for (int64_t ci = 0; ci < c; ++ci)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const float v = val(rng);
        put(dense[Scope::l1], dense_at, (ci * h + y) * w + x, g.dtype, v);
        put(packed[Scope::l1], packed_at, nc1hwc0_index(ci, y, x, h, w, c0), g.dtype, v);
      }
  Img2colArgs gd = g, gp = g;
  gd.c0 = 0, gd.src = mem(Scope::l1, 0, dense_at);
  gp.c0 = c0, gp.src = mem(Scope::l1, 0, packed_at);
  const std::vector<uint8_t> l1_before = packed[Scope::l1];
  execute(hw, make(Opcode::img2col, gd), dense.view);
  execute(hw, make(Opcode::img2col, gp), packed.view);
  const Scope d = g.dst.scope;
  ASSERT_EQ(dense[d], packed[d]) << format_instruction(make(Opcode::img2col, gp));
  // The written range is the fractal-padded matrix; none of it may hold the sentinel.
  const auto ranges = access_ranges(hw, make(Opcode::img2col, gp));
  for (const AccessRange& r : ranges) {
    if (!r.write) continue;
    for (uint64_t b = r.begin; b < r.end; b += dtype_bytes(g.dtype))
      ASSERT_FALSE(is_sentinel(packed[d].data() + b, g.dtype)) << "sentinel read at " << b;
  }
  // The source was not modified.
  EXPECT_EQ(packed[Scope::l1], l1_before);
}

TEST(Img2colNc1hwc0, SameL0BytesAsDenseWithUnreadPadChannels) {
  // c = 35 = 2 * 16 + 3: the last C1 block holds 13 pad channels (the sentinel). 7 x 9 map,
  // 3 x 2 kernel, stride 2, dilation (2, 1), pad top 1 / left 2, 4 x 5 output: rows 2i + 2r - 1
  // reach -1 and 9 (>= 7) and columns 2j + s - 2 reach -2, so padding occurs on three sides.
  // K = 35 * 3 * 2 = 210 (not a multiple of 16), N = 20. Both destinations, both dtypes.
  npu::HwConfig hw = test_hw(1);
  Img2colArgs g;
  g.c = 35, g.h = 7, g.w = 9, g.kh = 3, g.kw = 2, g.stride_h = 2, g.stride_w = 2;
  g.dilation_h = 2, g.dilation_w = 1, g.pad_top = 1, g.pad_left = 2, g.oh = 4, g.ow = 5;
  for (DType t : {DType::f16, DType::f32}) {
    hw.core.cube.input_dtype = t;
    g.dtype = t;
    for (Scope d : {Scope::l0a, Scope::l0b}) {
      g.dst = mem(d, 0, 32);
      SCOPED_TRACE(fmt::format("{} to {}", t == DType::f16 ? "f16" : "f32", scope_name(d)));
      expect_same_as_dense(hw, g, 16, 7);
    }
  }
}

TEST(Img2colNc1hwc0, RandomGeometriesAndC0) {
  // Random shapes, strides, dilations, pads (also negative, i.e. cropping) and c0 in 1..20 (c0
  // larger than c gives a single, mostly padded block) on a 4 x 4 x 4 cube so that fractal
  // padding occurs on both matrix axes.
  npu::HwConfig hw = test_hw(1);
  hw.core.cube.m = hw.core.cube.k = hw.core.cube.n = 4;
  std::mt19937_64 rng(2024);
  auto u = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 200; ++trial) {
    Img2colArgs g;
    g.dtype = DType::f16;
    g.c = u(1, 40), g.h = u(1, 8), g.w = u(1, 8), g.kh = u(1, 3), g.kw = u(1, 3);
    g.stride_h = u(1, 3), g.stride_w = u(1, 3), g.dilation_h = u(1, 2), g.dilation_w = u(1, 2);
    g.pad_top = u(-1, 2), g.pad_left = u(-1, 2), g.oh = u(1, 6), g.ow = u(1, 6);
    g.dst = mem(u(0, 1) ? Scope::l0a : Scope::l0b, 0, 0);
    const uint32_t c0 = static_cast<uint32_t>(u(1, 20));
    SCOPED_TRACE(fmt::format("trial {} c0 {}", trial, c0));
    expect_same_as_dense(hw, g, c0, static_cast<uint64_t>(trial));
  }
}

TEST(Img2colNc1hwc0, FootprintAndTraffic) {
  const npu::HwConfig hw = test_hw(1);
  Img2colArgs g;
  g.dtype = DType::f16;
  g.dst = mem(Scope::l0b, 0, 0);
  g.src = mem(Scope::l1, 0, 1000);
  g.c = 35, g.h = 7, g.w = 9, g.kh = 3, g.kw = 2, g.stride_h = 2, g.stride_w = 2;
  g.dilation_h = 2, g.pad_top = 1, g.pad_left = 2, g.oh = 4, g.ow = 5, g.c0 = 16;
  auto l1_read = [&](const Img2colArgs& a) {
    for (const AccessRange& r : access_ranges(hw, make(Opcode::img2col, a)))
      if (r.scope == Scope::l1 && !r.write) return std::pair<uint64_t, uint64_t>{r.begin, r.end};
    return std::pair<uint64_t, uint64_t>{0, 0};
  };
  // NC1HWC0 block: ceil(35/16) = 3 blocks * 7 * 9 pixels * 16 channels * 2 bytes = 6048 bytes.
  EXPECT_EQ(l1_read(g), (std::pair<uint64_t, uint64_t>{1000, 1000 + 6048}));
  Img2colArgs dense = g;
  dense.c0 = 0;  // dense: 35 * 7 * 9 * 2 = 4410 bytes
  EXPECT_EQ(l1_read(dense), (std::pair<uint64_t, uint64_t>{1000, 1000 + 4410}));
  // c0 > c: one block of c0 channels, 1 * 7 * 9 * 64 * 2 = 8064 bytes.
  Img2colArgs wide = g;
  wide.c0 = 64;
  EXPECT_EQ(l1_read(wide), (std::pair<uint64_t, uint64_t>{1000, 1000 + 8064}));

  // L1 traffic counts the elements of X that are read, the same in both layouts (pad channels
  // are never read). In-bounds taps per axis: rows 2i + 2r - 1 in [0, 7) for i < 4, r < 3:
  // i=0: 1, 3; i=1: 1, 3, 5; i=2: 3, 5; i=3: 5 -> 8. Columns 2j + s - 2 in [0, 9) for j < 5,
  // s < 2: j=0: none; j=1..4: both -> 8. 35 channels * 8 * 8 taps * 2 bytes = 4480 bytes.
  const auto t = npu::scope_traffic(hw, make(Opcode::img2col, g));
  const auto td = npu::scope_traffic(hw, make(Opcode::img2col, dense));
  EXPECT_EQ(t.read[int(Scope::l1)], 35u * 8 * 8 * 2);
  EXPECT_EQ(td.read[int(Scope::l1)], t.read[int(Scope::l1)]);
  // The L0B bytes written and the MTE1 cost (W bytes written) do not depend on the layout:
  // K = 210 -> 14 fractal rows, N = 20 -> 2 fractal columns: W = 14 * 2 * 256 * 2 = 14336 bytes,
  // occupancy ceil(14336 / 256) = 56 cycles.
  EXPECT_EQ(t.written[int(Scope::l0b)], 14336u);
  const auto cost = npu::instruction_cost(hw, make(Opcode::img2col, g));
  EXPECT_EQ(cost.occupancy_cycles, 56u);
  EXPECT_EQ(cost.occupancy_cycles,
            npu::instruction_cost(hw, make(Opcode::img2col, dense)).occupancy_cycles);

  // A block of 2^32-1 channels x (2^32-1)^2 pixels (about 2^97 bytes) does not wrap around to a
  // small range: the size saturates at INT64_MAX bytes and fails every bounds check.
  Img2colArgs huge = g;
  huge.h = huge.w = huge.c0 = 4294967295u;
  huge.src = mem(Scope::l1, 0, 0);
  EXPECT_EQ(l1_read(huge), (std::pair<uint64_t, uint64_t>{0, INT64_MAX}));

  // Run-time bounds: the block ending exactly at the end of L1 runs; one element further is an
  // error naming the instruction and the range.
  Mem m(hw);
  const int64_t l1 = hw.core.buffers_bytes.l1;
  g.src = mem(Scope::l1, 0, l1 - 6048);
  EXPECT_NO_THROW(execute(hw, make(Opcode::img2col, g), m.view));
  EXPECT_THROW(execute(hw, make(Opcode::img2col, huge), m.view), Error);
  g.src = mem(Scope::l1, 0, l1 - 6046);
  try {
    execute(hw, make(Opcode::img2col, g), m.view);
    ADD_FAILURE() << "no error for an NC1HWC0 source past the end of L1";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find(fmt::format("img2col: read of l1 bytes [{}, {}) is outside "
                                               "the {}-byte l1",
                                               l1 - 6046, l1 + 2, l1)),
        std::string::npos)
        << e.what();
  }
}

TEST(Img2colNc1hwc0, AssemblyTextAndRoundTrip) {
  Img2colArgs g;
  g.dtype = DType::f16;
  g.dst = mem(Scope::l0a, 2, 512);
  g.src = mem(Scope::l1, 3, 0);
  g.c = 35, g.h = 7, g.w = 9, g.kh = 3, g.kw = 2, g.stride_h = 2, g.pad_top = 1, g.oh = 4, g.ow = 5,
  g.c0 = 16;
  const std::string text =
      "img2col.f16 l0a[x2+512], l1[x3+0], c=35, h=7, w=9, kh=3, kw=2, stride_h=2, pad_top=1, "
      "oh=4, ow=5, c0=16";
  // Canonical text: c0 last, printed only when non-zero.
  EXPECT_EQ(format_instruction(make(Opcode::img2col, g)), text);
  Img2colArgs dense = g;
  dense.c0 = 0;
  EXPECT_EQ(format_instruction(make(Opcode::img2col, dense)),
            "img2col.f16 l0a[x2+512], l1[x3+0], c=35, h=7, w=9, kh=3, kw=2, stride_h=2, "
            "pad_top=1, oh=4, ow=5");
  auto parse_one = [](const std::string& line) {
    const Program p = assemble(".core 0\n  " + line + "\n", "k.s");
    return p.cores.at(0).at(0);
  };
  // Text -> instruction -> text, and instruction -> text -> instruction.
  EXPECT_EQ(parse_one(text), make(Opcode::img2col, g));
  EXPECT_EQ(format_instruction(parse_one(text)), text);
  // Hand-written: c0 anywhere among the fields; c0=0 is the dense default and is not printed.
  EXPECT_EQ(parse_one("img2col.f16 l0a[x2+512], l1[x3+0], c0=16, c=35, h=7, w=9, kh=3, kw=2, "
                      "stride_h=2, pad_top=1, oh=4, ow=5"),
            make(Opcode::img2col, g));
  EXPECT_EQ(parse_one("img2col.f16 l0a[x2+512], l1[x3+0], c=35, h=7, w=9, kh=3, kw=2, "
                      "stride_h=2, pad_top=1, oh=4, ow=5, c0=0"),
            make(Opcode::img2col, dense));
  // The largest c0 round-trips; a negative one is a syntax error naming the field.
  g.c0 = 4294967295u;
  EXPECT_EQ(parse_one(format_instruction(make(Opcode::img2col, g))), make(Opcode::img2col, g));
  try {
    parse_one("img2col.f16 l0a[x2+512], l1[x3+0], c=35, h=7, w=9, kh=3, kw=2, oh=4, ow=5, c0=-1");
    ADD_FAILURE() << "c0=-1 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("number -1 out of range for c0"), std::string::npos)
        << e.what();
  }
}

// The bytes of instruction 0 of a one-instruction program named "t": the image is magic 0-3,
// version 4, core count 5, name 6-7, gm_bytes 8, ops 9, buffers 10, instruction count 11, the
// instruction from 12, then the 4-byte CRC.
std::vector<uint8_t> instruction_bytes(const Instruction& in) {
  Program p;
  p.name = "t";
  p.cores.resize(1);
  p.cores[0].push_back(in);
  const std::vector<uint8_t> img = encode(p);
  return std::vector<uint8_t>(img.begin() + 12, img.end() - 4);
}

TEST(Img2colNc1hwc0, EncodingGoldenBytesAndRoundTrip) {
  Img2colArgs g;
  g.dtype = DType::f16;
  g.dst = mem(Scope::l0b, 0, 0);
  g.src = mem(Scope::l1, 1, 64);
  g.c = 35, g.h = 7, g.w = 9, g.kh = 3, g.kw = 2, g.oh = 5, g.ow = 8;
  const uint8_t op = static_cast<uint8_t>(Opcode::img2col);
  // Without c0 (the layout before c0 existed, so old images decode to c0 = 0): opcode, flags 0,
  // dst l0b (3) | x0 << 3 = 0x03 offset 0, src l1 (1) | x1 << 3 = 0x09 offset 64 (zigzag 128:
  // 0x80 0x01), c h w kh kw oh ow.
  const std::vector<uint8_t> dense = {op, 0x00, 0x03, 0x00, 0x09, 0x80, 0x01, 35, 7, 9, 3, 2, 5, 8};
  EXPECT_EQ(instruction_bytes(make(Opcode::img2col, g)), dense);
  // With c0 = 16: flag bit 5 set (bits 0-3 are the dtype, bit 4 the geometry group) and c0
  // (uvarint 16) after the sizes.
  g.c0 = 16;
  std::vector<uint8_t> packed = dense;
  packed[1] = 0x20;
  packed.push_back(16);
  EXPECT_EQ(instruction_bytes(make(Opcode::img2col, g)), packed);
  // With geometry as well: c0 follows the geometry fields (stride_h 2, stride_w 1, dilations 1,
  // pad_top 1 -> zigzag 2, pad_left 0).
  g.stride_h = 2, g.pad_top = 1, g.c0 = 300;
  std::vector<uint8_t> both = dense;
  both[1] = 0x30;
  for (uint8_t b : {2, 1, 1, 1, 2, 0, 0xac, 0x02}) both.push_back(b);  // ... c0 300 = 0xac 0x02
  EXPECT_EQ(instruction_bytes(make(Opcode::img2col, g)), both);

  // Round trips: compact (x0..x31) and full form (a register >= 32), with and without c0.
  for (uint32_t c0 : {0u, 16u, 4294967295u}) {
    for (uint8_t reg : {uint8_t{1}, uint8_t{40}}) {
      Program p;
      p.cores.resize(1);
      g.c0 = c0;
      g.src = mem(Scope::l1, reg, 64);
      p.cores[0].push_back(make(Opcode::img2col, g, -1));
      const Program q = decode(encode(p));
      EXPECT_EQ(program_difference(p, q), "") << "c0 " << c0 << " reg " << int(reg);
      EXPECT_EQ(std::get<Img2colArgs>(q.cores[0][0].args).c0, c0);
    }
  }

  // Flag bit 6 is still reserved.
  Program p;
  p.name = "t";
  p.cores.resize(1);
  g.src = mem(Scope::l1, 1, 64);
  g.c0 = 16;
  p.cores[0].push_back(make(Opcode::img2col, g));
  std::vector<uint8_t> img = encode(p);
  img[13] |= 0x40;
  try {
    decode(img, "img.bin");
    ADD_FAILURE() << "reserved img2col flag bit accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("offset 13: the img2col flag byte = 0x70 sets reserved"),
              std::string::npos)
        << e.what();
  }
}

TEST(Img2colNc1hwc0, VerifierChecksTheNc1hwc0Footprint) {
  const npu::HwConfig hw = test_hw(1);
  const int64_t l1 = hw.core.buffers_bytes.l1;  // 1048576
  Img2colArgs g;
  g.dtype = DType::f16;
  g.dst = mem(Scope::l0b, 0, 0);
  g.c = 35, g.h = 7, g.w = 9, g.kh = 3, g.kw = 3, g.pad_top = 1, g.pad_left = 1, g.oh = 7, g.ow = 9;
  // Dense source: 4410 bytes; NC1HWC0 with c0 = 16: 6048 bytes (see FootprintAndTraffic).
  // At l1 - 5000 the dense map fits, the NC1HWC0 block ends 1048 bytes past the end of L1.
  g.src = mem(Scope::l1, 0, l1 - 5000);
  auto verify_one = [&](const Img2colArgs& a) {
    Program p;
    p.cores.resize(1);
    p.cores[0].push_back(make(Opcode::img2col, a));
    return verify_program(p, hw);
  };
  EXPECT_EQ(verify_one(g), std::vector<std::string>{});
  g.c0 = 16;
  auto msgs = verify_one(g);
  ASSERT_EQ(msgs.size(), 1u) << ::testing::PrintToString(msgs);
  EXPECT_NE(msgs[0].find("core 0, instruction 0 (img2col.f16 l0b[x0+0], l1[x0+1043576], c=35, "),
            std::string::npos)
      << msgs[0];
  EXPECT_NE(msgs[0].find(", c0=16): src accesses l1[1043576, 1049624), outside l1 (1048576 bytes)"),
            std::string::npos)
      << msgs[0];
  // The block ending exactly at the end of L1 is accepted.
  g.src = mem(Scope::l1, 0, l1 - 6048);
  EXPECT_EQ(verify_one(g), std::vector<std::string>{});
  // A c0 so large that the block alone exceeds L1: 1 * 7 * 9 * 16384 * 2 = 2064384 bytes.
  g.c0 = 16384;
  g.src = mem(Scope::l1, 0, 0);
  msgs = verify_one(g);
  ASSERT_EQ(msgs.size(), 1u) << ::testing::PrintToString(msgs);
  EXPECT_NE(msgs[0].find("c0=16384): src spans 2064384 bytes, more than l1 holds (1048576 bytes)"),
            std::string::npos)
      << msgs[0];
}

}  // namespace
}  // namespace tessel::isa
