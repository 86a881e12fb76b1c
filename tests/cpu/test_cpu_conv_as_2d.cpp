// 1-D convolution and pooling through graph pass conv_as_2d on the CPU backend: the compiled 2-D
// form against the reference interpreter's 1-D ops on the original graph (fp32 both sides; the
// K-term sums reassociated: 2e-5 of the largest output, tests/cpu/test_cpu_ops.cpp).
#include "passes/graph/graph_passes.h"
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

TEST(CpuConvAs2d, Conv1dPoolsAndConvTranspose1d) {
  CpuGraph b;
  Value* x = b.input("x", {2, 6, 45});
  Value* c = b.node(
      "Conv", {x, b.constant("w", cpu_random({4, 3, 5}, 61)), b.constant("b", cpu_random({4}, 62))},
      attrs({{"group", int64_t{2}},
             {"strides", std::vector<int64_t>{2}},
             {"pads", std::vector<int64_t>{2, 1}}}));
  Value* m = b.node(
      "MaxPool", {c},
      attrs({{"kernel_shape", std::vector<int64_t>{3}}, {"dilations", std::vector<int64_t>{2}}}));
  Value* a = b.node("AveragePool", {m},
                    attrs({{"kernel_shape", std::vector<int64_t>{2}},
                           {"strides", std::vector<int64_t>{2}},
                           {"ceil_mode", int64_t{1}}}));
  Value* t = b.node(
      "ConvTranspose", {a, b.constant("wt", cpu_random({4, 3, 2}, 63))},
      attrs({{"kernel_shape", std::vector<int64_t>{2}}, {"strides", std::vector<int64_t>{2}}}));
  auto g = b.finish({t});
  std::map<std::string, Tensor> in{{"x", cpu_random({2, 6, 45}, 64)}};
  const auto expected = ops::run_reference(*g, in);
  ASSERT_TRUE(graph_passes::conv_as_2d(*g));
  EXPECT_FALSE(graph_passes::needs_conv_as_2d(*g));
  auto r = check_cpu(*g, in, 2e-5);
  // The rewritten graph's outputs are the original's.
  for (const auto& [name, ref] : expected) {
    const Tensor got = ops::run_reference(*g, in).at(name);
    ASSERT_EQ(got.shape(), ref.shape());
    for (int64_t i = 0; i < ref.numel(); ++i)
      EXPECT_NEAR(got.get_as_double(i), ref.get_as_double(i), 1e-5) << i;
  }
}

}  // namespace
}  // namespace tessel::testing
