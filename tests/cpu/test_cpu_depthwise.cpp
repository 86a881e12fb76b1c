// The depthwise convolution schedule (passes/loop/cpu_depthwise.cpp) against the reference
// interpreter, on the geometries that choose between its modes:
//   * flat mode (stride 1 along H): a row block's outputs in one pitched index, for rows shorter
//     than a vector (the PP-OCRv4 detector's 10x10 depthwise 5x5 with a fused HardSwish), and
//     forced on a stride-2-along-W case (de-interleaved loads of the staged rows);
//   * rows mode: stride 2 along H, and forced on stride-1 planes;
//   * row blocks with a short last block (rows knob), asymmetric padding, dilation without
//     padding, batch 2, a fused residual Add read through the masked row stores, and a plane
//     larger than the ~16 KiB stage (several blocks chosen by the pass).
// Every case checks the kernel took the schedule (kind "depthwise", the mode in its knobs, no
// padded load left in its loop IR: the window reads the zero-padded stage) and the values.
//
// Tolerance: at most KH * KW = 49 products of magnitude <= 1 per output, fp32 with FMA and
// reassociation against the reference's sequential sum: <= 49 u max|y| ~ 49 * 6e-8 = 3e-6
// relative (the epilogue adds a few roundings); 2e-5 as in test_cpu_ops.cpp.
#include <fmt/format.h>

#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

struct DwCase {
  const char* name;
  Shape x;  // N C H W; the weights are [C, 1, KH, KW]
  int64_t kh, kw;
  std::vector<int64_t> strides, pads, dilations;
  const char* epilogue;  // "", "Relu", "HardSwish", "Add" (a residual graph input)
  int flat_knob;         // CpuDepthwiseKnobs::flat given to the pass
  int64_t rows_knob;     // CpuDepthwiseKnobs::rows given to the pass
  int expect_flat;       // the mode the kernel must end up with
};

void PrintTo(const DwCase& c, std::ostream* os) { *os << c.name; }

const DwCase kCases[] = {
    // The detector's layer: 10x10 plane, 5x5 window, pad 2, bias + HardSwish fused.
    {"k5_10x10_hardswish",
     {1, 20, 10, 10},
     5,
     5,
     {1, 1},
     {2, 2, 2, 2},
     {1, 1},
     "HardSwish",
     -1,
     0,
     1},
    {"k5_10x10_rows_forced",
     {1, 6, 10, 10},
     5,
     5,
     {1, 1},
     {2, 2, 2, 2},
     {1, 1},
     "HardSwish",
     0,
     0,
     0},
    // Row blocks of 3 rows over 10: the last block has one row.
    {"k3_blocks_of_3_flat", {1, 5, 10, 13}, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, "Relu", 1, 3, 1},
    {"k3_blocks_of_3_rows", {1, 5, 10, 21}, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, "Relu", 0, 3, 0},
    // Stride 2: rows mode (flat needs stride 1 along H); rows of 19 = one vector + a masked one
    // with AVX-512.
    {"k3_s2_batch2_relu", {2, 6, 23, 37}, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, "Relu", -1, 0, 0},
    // Stride 2 along W only, flat forced: stride-2 loads of the staged rows.
    {"k3_s1x2_flat", {1, 3, 12, 30}, 3, 3, {1, 2}, {1, 1, 1, 1}, {1, 1}, "", 1, 0, 1},
    // Asymmetric padding (top 0, left 1, bottom 2, right 1) and a 5x3 window.
    {"k5x3_asym_pads", {1, 4, 11, 9}, 5, 3, {1, 1}, {0, 1, 2, 1}, {1, 1}, "", -1, 0, 1},
    // Dilation 2 without padding: OW = 41 of IW = 45.
    {"k3_dilated_valid", {1, 4, 17, 45}, 3, 3, {1, 1}, {0, 0, 0, 0}, {2, 2}, "Relu", -1, 0, 1},
    // A residual Add fused into the store (its operand read through the masked row stores).
    {"k3_residual_add", {1, 8, 9, 9}, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, "Add", -1, 0, 1},
    {"k3_residual_add_rows", {1, 8, 9, 9}, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, "Add", 0, 0, 0},
    // 70 x 150: more than the stage holds, several row blocks chosen by the pass.
    {"k3_large_plane", {1, 2, 70, 150}, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, "HardSwish", -1, 0, -1},
    // 7x7 window with stride 2, pad 3.
    {"k7_s2", {1, 3, 28, 28}, 7, 7, {2, 2}, {3, 3, 3, 3}, {1, 1}, "", -1, 0, 0},
};

class CpuDepthwise : public ::testing::TestWithParam<DwCase> {};

TEST_P(CpuDepthwise, MatchesReference) {
  const DwCase& c = GetParam();
  const int64_t channels = c.x[1];
  CpuGraph b;
  Value* x = b.input("x", c.x);
  Value* w = b.constant("w", cpu_random({channels, 1, c.kh, c.kw}, 51));
  Value* bias = b.constant("b", cpu_random({channels}, 52));
  Value* y = b.node("Conv", {x, w, bias},
                    attrs({{"strides", c.strides},
                           {"pads", c.pads},
                           {"dilations", c.dilations},
                           {"group", channels}}));
  const std::string epi = c.epilogue;
  Value* r = nullptr;
  if (epi == "Add") {
    r = b.input("r", y->shape);
    y = b.node("Add", {y, r});
  } else if (!epi.empty()) {
    y = b.node(epi, {y});
  }
  auto g = b.finish({y});
  cpu_backend::CpuCompileOptions opts;
  opts.keep_loop_ir = true;
  passes::CpuDepthwiseKnobs k;
  k.flat = c.flat_knob;
  k.rows = c.rows_knob;
  opts.depthwise_knobs[g->nodes().back()->name] = k;
  auto prog = cpu_backend::compile_cpu(*g, opts);
  int depthwise = 0;
  for (const auto& ki : prog.kernels) {
    if (ki.function.empty()) continue;
    EXPECT_EQ(ki.kind, "depthwise") << ki.node;
    if (ki.kind != "depthwise") continue;
    ++depthwise;
    if (c.expect_flat >= 0) EXPECT_EQ(ki.depthwise.flat, c.expect_flat);
    if (c.rows_knob > 0) EXPECT_EQ(ki.depthwise.rows, c.rows_knob);
    // flops = 2 * N * C * OH * OW * KH * KW
    const Shape& os = y->shape;
    EXPECT_DOUBLE_EQ(ki.flops, 2.0 * os[0] * os[1] * os[2] * os[3] * c.kh * c.kw);
    EXPECT_NE(ki.loop_ir.find(".S["), std::string::npos) << ki.loop_ir;
    EXPECT_EQ(ki.loop_ir.find("|pad="), std::string::npos) << ki.loop_ir;
    EXPECT_NE(ki.loop_ir.find("vectorized"), std::string::npos) << ki.loop_ir;
  }
  EXPECT_EQ(depthwise, 1);
  std::map<std::string, Tensor> inputs = {{"x", cpu_random(c.x, 53)}};
  if (r) inputs["r"] = cpu_random(r->shape, 54);
  check_cpu(*g, inputs, 2e-5, opts);
}

INSTANTIATE_TEST_SUITE_P(Geometries, CpuDepthwise, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// The 70 x 150 plane does not fit the stage in one block: the pass splits it into equal blocks.
TEST(CpuDepthwiseKnobs, LargePlaneIsBlocked) {
  CpuGraph b;
  Value* x = b.input("x", {1, 2, 70, 150});
  Value* w = b.constant("w", cpu_random({2, 1, 3, 3}, 61));
  Value* y = b.node("Conv", {x, w},
                    attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{2}}}));
  auto g = b.finish({y});
  auto prog = cpu_backend::compile_cpu(*g, {});
  ASSERT_EQ(prog.timed_kernels().size(), 1u);
  const auto& k = *prog.timed_kernels()[0];
  EXPECT_EQ(k.kind, "depthwise");
  EXPECT_GT(k.depthwise.rows, 1);
  EXPECT_LT(k.depthwise.rows, 70);
}

// flat=1 where the pass cannot use it (stride 2 along H) is an error naming the kernel.
TEST(CpuDepthwiseKnobs, FlatWithStrideTwoIsRefused) {
  CpuGraph b;
  Value* x = b.input("x", {1, 3, 12, 12});
  Value* w = b.constant("w", cpu_random({3, 1, 3, 3}, 62));
  Value* y = b.node("Conv", {x, w},
                    attrs({{"strides", std::vector<int64_t>{2, 2}}, {"group", int64_t{3}}}));
  auto g = b.finish({y});
  cpu_backend::CpuCompileOptions opts;
  passes::CpuDepthwiseKnobs k;
  k.flat = 1;
  const std::string node = g->nodes().back()->name;
  opts.depthwise_knobs[node] = k;
  try {
    cpu_backend::compile_cpu(*g, opts);
    ADD_FAILURE() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(node), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("flat=1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessel::testing
