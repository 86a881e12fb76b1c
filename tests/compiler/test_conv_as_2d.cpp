// 1-D convolution and pooling through graph pass conv_as_2d (passes/graph/conv_as_2d.cpp) on
// the NPU: the pass leaves no rank-3 window op, and the compiled 2-D form matches the reference
// interpreter's 1-D op on the original graph (the audio front-end shape: kernel 512, stride 160).
#include <gtest/gtest.h>

#include "compiler/ir/graph.h"
#include "passes/graph/graph_passes.h"
#include "tests/compiler/npu_test_util.h"

namespace tessel::testing {
namespace {

constexpr double u = 1.0 / 2048;

void check_1d(std::unique_ptr<Graph> g, const std::map<std::string, Tensor>& in, Bound bound) {
  const auto expected = ops::run_reference(*g, in);
  ASSERT_TRUE(graph_passes::conv_as_2d(*g));
  for (const auto& n : g->nodes())
    if (n->op_type != "Reshape") EXPECT_EQ(n->input(0)->shape.size(), 4u) << n->describe();
  const NpuCheck r = check_npu(*g, in, "npu_4core", bound);
  for (const auto& [name, ref] : expected) {
    const TensorDiff d = diff_tensors(r.outputs.at(name), ref, bound.atol, bound.rtol);
    EXPECT_LE(d.worst_ratio, 1.0) << name;
  }
}

TEST(ConvAs2d, AudioFrontEndConv1d) {
  // x [1, 1, 2080] * W [8, 1, 512], stride 160, pad 256 each side: K = 512 terms.
  GraphBuilder b;
  Value* x = b.input("x", {1, 1, 2080});
  Value* y = b.node("Conv",
                    {x, b.constant("w", random_tensor({8, 1, 512}, 201, -0.05f, 0.05f)),
                     b.constant("b", random_tensor({8}, 202))},
                    attrs({{"kernel_shape", std::vector<int64_t>{512}},
                           {"strides", std::vector<int64_t>{160}},
                           {"pads", std::vector<int64_t>{256, 256}}}));
  // sum|x||w| <= 512 * 0.05 = 25.6: (2u + 512 * 2^-24) * 25.6 + u (26.6 + 2).
  check_1d(b.finish({y}), {{"x", random_tensor({1, 1, 2080}, 203)}}, {0.05, u});
}

TEST(ConvAs2d, GroupedDilatedConv1dAndPools) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 6, 37});
  Value* c = b.node("Conv", {x, b.constant("w", random_tensor({4, 3, 3}, 204, -0.3f, 0.3f))},
                    attrs({{"group", int64_t{2}},
                           {"dilations", std::vector<int64_t>{2}},
                           {"auto_pad", std::string("SAME_UPPER")}}));
  Value* m = b.node("MaxPool", {c},
                    attrs({{"kernel_shape", std::vector<int64_t>{3}},
                           {"strides", std::vector<int64_t>{2}},
                           {"ceil_mode", int64_t{1}}}));
  Value* a = b.node("AveragePool", {m},
                    attrs({{"kernel_shape", std::vector<int64_t>{3}},
                           {"pads", std::vector<int64_t>{1, 1}},
                           {"count_include_pad", int64_t{0}}}));
  check_1d(b.finish({a}), {{"x", random_tensor({2, 6, 37}, 205)}}, {0.01, 4 * u});
}

}  // namespace
}  // namespace tessel::testing
