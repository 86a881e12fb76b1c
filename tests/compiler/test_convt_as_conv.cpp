// ConvTranspose through graph pass convt_as_conv (passes/graph/convt_as_conv.cpp) on the NPU: the
// per-phase Convs, interleaved, match the reference interpreter's ConvTranspose on the original
// graph (check_npu also checks simulator == interpreter and 4 cores == 1 core): the decoder form
// (stride 2, pads 1, output_padding 1), a grouped dilated one with output_shape, and the 1-D case
// derived by hand in tests/graph_passes/test_convt_as_conv.cpp.
#include <gtest/gtest.h>

#include "compiler/ir/graph.h"
#include "passes/graph/graph_passes.h"
#include "tests/compiler/npu_test_util.h"

namespace tessel::testing {
namespace {

constexpr double u = 1.0 / 2048;

void check_convt(std::unique_ptr<Graph> g, const std::map<std::string, Tensor>& in, Bound bound) {
  const auto expected = ops::run_reference(*g, in);
  graph_passes::conv_as_2d(*g);
  ASSERT_TRUE(graph_passes::convt_as_conv(*g));
  for (const auto& n : g->nodes()) EXPECT_NE(n->op_type, "ConvTranspose");
  const NpuCheck r = check_npu(*g, in, "npu_4core", bound);
  for (const auto& [name, ref] : expected) {
    const TensorDiff d = diff_tensors(r.outputs.at(name), ref, bound.atol, bound.rtol);
    EXPECT_LE(d.worst_ratio, 1.0) << name;
  }
}

TEST(ConvTAsConvNpu, DecoderStride2Pads1OutputPadding1) {
  // x [1, 16, 7, 7] -> [1, 8, 14, 14]; 16 * 4 taps of |w| <= 0.1 per output at most.
  GraphBuilder b;
  Value* x = b.input("x", {1, 16, 7, 7});
  Value* y = b.node("ConvTranspose",
                    {x, b.constant("w", random_tensor({16, 8, 3, 3}, 301, -0.1f, 0.1f)),
                     b.constant("b", random_tensor({8}, 302))},
                    attrs({{"strides", std::vector<int64_t>{2, 2}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"output_padding", std::vector<int64_t>{1, 1}}}));
  check_convt(b.finish({y}), {{"x", random_tensor({1, 16, 7, 7}, 303)}}, {0.01, 4 * u});
}

TEST(ConvTAsConvNpu, GroupedDilatedOutputShape) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 6, 5, 4});
  Value* y =
      b.node("ConvTranspose", {x, b.constant("w", random_tensor({6, 2, 3, 2}, 304, -0.3f, 0.3f))},
             attrs({{"group", int64_t{3}},
                    {"strides", std::vector<int64_t>{3, 2}},
                    {"dilations", std::vector<int64_t>{2, 1}},
                    {"output_shape", std::vector<int64_t>{15, 9}}}));
  check_convt(b.finish({y}), {{"x", random_tensor({2, 6, 5, 4}, 305)}}, {0.01, 4 * u});
}

TEST(ConvTAsConvNpu, HandDerived1d) {
  // y = [10, 102, 20, 203, 30, 300] + 0.5 (tests/graph_passes/test_convt_as_conv.cpp): integers
  // and halves below 2048 are exact in fp16.
  GraphBuilder b;
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
  const NpuCheck r =
      check_npu(*g, {{"x", Tensor::from_floats({1, 1, 3}, {1, 2, 3})}}, "npu_4core", {0, 0});
  const Tensor& out = r.outputs.begin()->second;
  const std::vector<double> want = {10.5, 102.5, 20.5, 203.5, 30.5, 300.5};
  ASSERT_EQ(out.numel(), 6);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out.get_as_double(i), want[i]) << i;
}

}  // namespace
}  // namespace tessel::testing
