// convt_as_conv (passes/graph/convt_as_conv.cpp): every ConvTranspose the backends do not compile
// directly becomes per-phase stride-1 Convs whose interleaved outputs equal the reference
// interpreter's ConvTranspose on the original graph: 1-D and 2-D, any kernel, stride, pads,
// output_padding, output_shape, auto_pad, group and dilation (random data over a sweep of
// geometries), plus one case derived by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "passes/graph/graph_passes.h"
#include "tests/graph_passes/gp_util.h"
#include "tests/test_graph_builder.h"

namespace tessel {
namespace {

using testing::attrs;
using testing::random_tensor;

struct Geometry {
  Shape x;  // [N, C, spatial...]
  int64_t m = 1, group = 1;
  std::vector<int64_t> kernel, strides, dilations, pads, output_padding, output_shape;
  std::string auto_pad;
  bool bias = true;
};

std::unique_ptr<Graph> convt_graph(const Geometry& ge, uint32_t seed) {
  testing::GraphBuilder b;
  Value* x = b.input("x", ge.x);
  Shape ws = {ge.x[1], ge.m / ge.group};
  for (int64_t k : ge.kernel) ws.push_back(k);
  std::vector<Value*> ins = {x, b.constant("w", random_tensor(ws, seed))};
  if (ge.bias) ins.push_back(b.constant("b", random_tensor({ge.m}, seed + 1)));
  Attributes a;
  a.set("kernel_shape", ge.kernel);
  if (!ge.strides.empty()) a.set("strides", ge.strides);
  if (!ge.dilations.empty()) a.set("dilations", ge.dilations);
  if (!ge.pads.empty()) a.set("pads", ge.pads);
  if (!ge.output_padding.empty()) a.set("output_padding", ge.output_padding);
  if (!ge.output_shape.empty()) a.set("output_shape", ge.output_shape);
  if (!ge.auto_pad.empty()) a.set("auto_pad", ge.auto_pad);
  if (ge.group != 1) a.set("group", ge.group);
  Value* y = b.node("ConvTranspose", ins, a);
  return b.finish({y});
}

/// Runs conv_as_2d and convt_as_conv on the graph of `ge` and compares the reference
/// interpreter's outputs before and after (fp32 sums reassociated: 1e-5 of the largest output).
void expect_same_values(const Geometry& ge, uint32_t seed) {
  auto g = convt_graph(ge, seed);
  const std::map<std::string, Tensor> in = {{"x", random_tensor(ge.x, seed + 2)}};
  const auto before = ops::run_reference(*g, in);
  graph_passes::conv_as_2d(*g);
  ASSERT_TRUE(graph_passes::convt_as_conv(*g));
  EXPECT_FALSE(graph_passes::needs_convt_as_conv(*g));
  EXPECT_EQ(testing::count_op(*g, "ConvTranspose"), 0u);
  ops::infer_graph(*g);
  verify_graph(*g);
  const auto after = ops::run_reference(*g, in);
  for (const auto& [name, ref] : before) {
    const Tensor& got = after.at(name);
    ASSERT_EQ(got.shape(), ref.shape()) << name;
    double peak = 0;
    for (int64_t i = 0; i < ref.numel(); ++i) peak = std::max(peak, std::abs(ref.get_as_double(i)));
    for (int64_t i = 0; i < ref.numel(); ++i)
      ASSERT_NEAR(got.get_as_double(i), ref.get_as_double(i), 1e-5 * peak + 1e-6)
          << name << " element " << i << " (seed " << seed << ")";
  }
}

TEST(ConvTAsConv, HandDerived1d) {
  // x = [1, 2, 3], w = [1, 10, 100], stride 2, pads [1, 1], output_padding 1, bias 0.5:
  // the full output u[2i + k] += x[i] w[k] is [1, 10, 102, 20, 203, 30, 300, 0] (8 = 2*2 + 1 +
  // 2 + 1 with the output padding); pads drop u[0] and u[7]: y = u[1..6] + 0.5.
  testing::GraphBuilder b;
  Value* x = b.input("x", {1, 1, 3});
  Value* y = b.node("ConvTranspose",
                    {x, b.constant("w", Tensor::from_floats({1, 1, 3}, {1, 10, 100})),
                     b.constant("b", Tensor::from_floats({1}, {0.5f}))},
                    attrs({{"strides", std::vector<int64_t>{2}},
                           {"pads", std::vector<int64_t>{1, 1}},
                           {"output_padding", std::vector<int64_t>{1}}}));
  auto g = b.finish({y});
  graph_passes::conv_as_2d(*g);
  ASSERT_TRUE(graph_passes::convt_as_conv(*g));
  EXPECT_EQ(testing::count_op(*g, "Conv"), 2u);  // two phases, one tap (odd) and two (even)
  const auto out =
      ops::run_reference(*g, {{"x", Tensor::from_floats({1, 1, 3}, {1, 2, 3})}}).begin()->second;
  ASSERT_EQ(out.shape(), (Shape{1, 1, 6}));
  const std::vector<double> want = {10.5, 102.5, 20.5, 203.5, 30.5, 300.5};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out.get_as_double(i), want[i]) << i;
}

TEST(ConvTAsConv, DecoderAndNodeSuiteGeometries) {
  // The decoder form (stride 2, pads 1, output_padding 1), output_shape, SAME, VALID, groups,
  // dilation larger than / a multiple of the stride, a stride-1 transposed conv, kernel < stride
  // (bias-only phases), pads beyond the kernel extent (negative Conv padding: slices of x).
  std::vector<Geometry> cases = {
      {{1, 8, 6, 6}, 4, 1, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, {1, 1}},
      {{2, 3, 5, 4}, 6, 3, {3, 2}, {3, 2}, {2, 1}, {0, 1, 2, 0}, {1, 0}},
      {{1, 2, 3, 3}, 4, 1, {3, 3}, {3, 2}, {}, {}, {}, {10, 8}},
      {{1, 2, 3, 3}, 4, 2, {3, 3}, {2, 2}, {}, {}, {}, {}, "SAME_UPPER"},
      {{1, 2, 3, 3}, 4, 1, {3, 3}, {2, 2}, {}, {}, {}, {}, "SAME_LOWER", false},
      {{1, 2, 4, 3}, 2, 1, {2, 3}, {2, 3}, {}, {}, {}, {}, "VALID"},
      {{1, 3, 4, 4}, 3, 3, {3, 3}, {2, 2}, {4, 2}, {2, 2, 2, 2}, {1, 1}},
      {{1, 2, 4, 5}, 3, 1, {3, 3}, {1, 1}, {2, 1}, {1, 2, 0, 1}},
      {{1, 2, 4, 4}, 2, 1, {1, 1}, {3, 2}, {}, {}, {2, 1}},
      {{1, 2, 4, 5}, 2, 1, {2, 2}, {2, 2}, {}, {3, 3, 3, 3}},
      {{1, 1, 7}, 2, 1, {5}, {3}, {2}, {2, 3}, {1}},
      {{2, 4, 9}, 4, 2, {4}, {4}, {}, {1, 2}, {3}},
  };
  uint32_t seed = 100;
  for (const Geometry& ge : cases) {
    SCOPED_TRACE(::testing::Message() << "case seeded " << seed);
    expect_same_values(ge, seed);
    seed += 10;
  }
}

TEST(ConvTAsConv, RandomGeometrySweep) {
  // 150 geometries from a fixed LCG: kernel 1..4, stride 1..3, dilation 1..3, pads 0..3 each side,
  // output_padding < max(stride, dilation), group 1..2, with and without bias.
  uint64_t state = 12345;
  auto next = [&](int64_t lo, int64_t hi) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(hi - lo + 1));
  };
  int tried = 0;
  for (int t = 0; tried < 150 && t < 1000; ++t) {
    Geometry ge;
    ge.group = next(1, 2);
    ge.x = {next(1, 2), ge.group * next(1, 2), next(1, 5), next(1, 5)};
    ge.m = ge.group * next(1, 2);
    ge.bias = next(0, 1) == 1;
    bool ok = true;
    for (int a = 0; a < 2; ++a) {
      ge.kernel.push_back(next(1, 4));
      ge.strides.push_back(next(1, 3));
      ge.dilations.push_back(next(1, 3));
      ge.output_padding.push_back(next(0, std::max(ge.strides[a], ge.dilations[a]) - 1));
    }
    for (int a = 0; a < 4; ++a) ge.pads.push_back(next(0, 3));
    for (int a = 0; a < 2; ++a) {
      const int64_t full = ge.strides[a] * (ge.x[2 + a] - 1) + ge.output_padding[a] +
                           (ge.kernel[a] - 1) * ge.dilations[a] + 1;
      ok &= full - ge.pads[a] - ge.pads[a + 2] >= 1;
    }
    const bool direct = ge.group == 1 && ge.kernel == ge.strides &&
                        ge.dilations == std::vector<int64_t>{1, 1} &&
                        ge.pads == std::vector<int64_t>{0, 0, 0, 0} &&
                        ge.output_padding == std::vector<int64_t>{0, 0};
    if (!ok || direct) continue;
    SCOPED_TRACE(::testing::Message() << "sweep case " << tried);
    expect_same_values(ge, 1000 + static_cast<uint32_t>(t));
    ++tried;
  }
  EXPECT_EQ(tried, 150);
}

TEST(ConvTAsConv, LeavesTheDirectFormAlone) {
  // kernel == stride without padding: lower::op_parts compiles it (one 1x1 conv per tap).
  Geometry ge{{1, 4, 3, 3}, 8, 1, {2, 2}, {2, 2}};
  auto g = convt_graph(ge, 7);
  EXPECT_FALSE(graph_passes::needs_convt_as_conv(*g));
  EXPECT_FALSE(graph_passes::convt_as_conv(*g));
  EXPECT_EQ(testing::count_op(*g, "ConvTranspose"), 1u);
}

}  // namespace
}  // namespace tessel
