// The transposed orientation of the BLIS schedule (passes/loop/cpu_gemm.cpp, knob
// CpuGemmKnobs::transposed): a convolution with few output pixels vectorizes along its output
// channels (weights packed as the vector panels, the input packed at run time as the broadcast
// operand, C stored through strided scatters). Against the reference interpreter on geometries
// with partial micro-tiles along both axes (output channels not a multiple of the vector width,
// 49 pixels), padding (the input pack reads the padded window), stride 2, groups, batch 2,
// several K blocks (C loaded back through gathers between blocks) and a fused BN + residual +
// Relu epilogue (the residual read through gathers); and the automatic choice: ResNet-50's 7x7
// layers take it, a 56x56 layer does not.
//
// Tolerance: K <= 600 terms of magnitude <= 1 in fp32 with FMA and reassociation differ from the
// reference's sequential sum by <= K u max|y| ~ 600 * 6e-8 = 3.6e-5 relative; 1e-4.
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

struct TCase {
  const char* name;
  Shape x;  // N C H W
  Shape w;  // OC IC/group KH KW
  int64_t stride, pad, group;
  bool residual;   // + BatchNormalization + Add(x) + Relu (needs OC == C and a same-size output)
  int transposed;  // the knob (-1: the schedule's choice)
  int expect;      // the orientation the schedule must take
};

void PrintTo(const TCase& c, std::ostream* os) { *os << c.name; }

const TCase kCases[] = {
    // ResNet-50 layer4 class: 3x3 pad 1 on 7x7 (49 of 64 lanes by pixels), 48 channels (whole
    // vectors), chosen automatically.
    {"s1_7x7_residual_auto", {1, 48, 7, 7}, {48, 48, 3, 3}, 1, 1, 1, true, -1, 1},
    // layer4.0's stride-2 3x3 (14x14 -> 7x7), two groups of 24 channels, batch 2, forced.
    {"s2_groups_batch2", {2, 16, 14, 14}, {48, 8, 3, 3}, 2, 1, 2, false, 1, 1},
    // A 1x1 over 600 input channels: several K blocks, forced.
    {"k600_1x1", {1, 600, 5, 9}, {33, 600, 1, 1}, 1, 0, 1, false, 1, 1},
    // layer1 class (56x56 pixels): vectorizing the pixels wastes nothing, the schedule keeps it.
    {"s1_56x56_auto", {1, 16, 56, 56}, {32, 16, 3, 3}, 1, 1, 1, false, -1, 0},
};

class CpuConvTransposed : public ::testing::TestWithParam<TCase> {};

TEST_P(CpuConvTransposed, MatchesReference) {
  const TCase& c = GetParam();
  CpuGraph b;
  Value* x = b.input("x", c.x);
  Value* y = b.node("Conv", {x, b.constant("w", cpu_random(c.w, 51))},
                    attrs({{"strides", std::vector<int64_t>{c.stride, c.stride}},
                           {"pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad}},
                           {"group", c.group}}));
  if (c.residual) {
    const int64_t ch = c.w[0];
    y = b.node("BatchNormalization",
               {y, b.constant("s", cpu_random({ch}, 52, 0.5f, 1.5f)),
                b.constant("o", cpu_random({ch}, 53)), b.constant("mu", cpu_random({ch}, 54)),
                b.constant("var", cpu_random({ch}, 55, 0.5f, 1.5f))});
    y = b.node("Relu", {b.node("Add", {y, x})});
  }
  auto g = b.finish({y});
  cpu_backend::CpuCompileOptions opts;
  if (c.transposed >= 0) {
    passes::CpuGemmKnobs k;
    k.transposed = c.transposed;
    opts.gemm_knobs[g->nodes().back()->name] = k;
  }
  auto prog = cpu_backend::compile_cpu(*g, opts);
  int gemm = 0;
  for (const auto& k : prog.kernels) {
    if (k.kind != "gemm") continue;
    ++gemm;
    EXPECT_EQ(k.gemm.transposed, c.expect) << k.node;
  }
  EXPECT_EQ(gemm, 1);
  check_cpu(*g, {{"x", cpu_random(c.x, 56)}}, 1e-4, opts);
}

INSTANTIATE_TEST_SUITE_P(Geometries, CpuConvTransposed, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CpuConvTransposedKnob, RefusedWhereItCannotApply) {
  CpuGraph b;
  Value* x = b.input("x", {1, 4, 7, 7});
  Value* y = b.node("Conv", {x, b.constant("w", cpu_random({4, 4, 3, 3}, 57))},
                    attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  auto g = b.finish({y});
  cpu_backend::CpuCompileOptions opts;
  passes::CpuGemmKnobs k;
  k.transposed = 1;  // 4 output channels: fewer than a vector (8 or 16 lanes)
  opts.gemm_knobs[g->nodes().back()->name] = k;
  try {
    cpu_backend::compile_cpu(*g, opts);
    ADD_FAILURE() << "transposed=1 on 4 output channels was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("transposed=1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessel::testing
