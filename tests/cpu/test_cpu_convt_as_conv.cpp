// ConvTranspose through graph pass convt_as_conv on the CPU backend: the compiled per-phase Convs
// against the reference interpreter's ConvTranspose on the original graph (fp32 both sides, sums
// reassociated: 2e-5 of the largest output, tests/cpu/test_cpu_ops.cpp), for the decoder form,
// a grouped dilated one with output_shape and SAME_LOWER, and a 1-D one.
#include "passes/graph/graph_passes.h"
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

void check_convt_cpu(std::unique_ptr<Graph> g, const std::map<std::string, Tensor>& in) {
  const auto expected = ops::run_reference(*g, in);
  graph_passes::conv_as_2d(*g);
  ASSERT_TRUE(graph_passes::convt_as_conv(*g));
  EXPECT_FALSE(graph_passes::needs_convt_as_conv(*g));
  cpu_backend::CpuJit jit(cpu_backend::compile_cpu(*g, {}));
  auto got = jit.run(in, false);
  for (const auto& [name, ref] : expected) {
    ASSERT_TRUE(got.outputs.count(name)) << name;
    EXPECT_TRUE(all_close(got.outputs.at(name), ref, 2e-5 * max_abs(ref) + 1e-6)) << name;
  }
}

TEST(CpuConvTAsConv, DecoderStride2Pads1OutputPadding1) {
  CpuGraph b;
  Value* x = b.input("x", {1, 16, 7, 7});
  Value* y = b.node(
      "ConvTranspose",
      {x, b.constant("w", cpu_random({16, 8, 3, 3}, 71)), b.constant("b", cpu_random({8}, 72))},
      attrs({{"strides", std::vector<int64_t>{2, 2}},
             {"pads", std::vector<int64_t>{1, 1, 1, 1}},
             {"output_padding", std::vector<int64_t>{1, 1}}}));
  check_convt_cpu(b.finish({y}), {{"x", cpu_random({1, 16, 7, 7}, 73)}});
}

TEST(CpuConvTAsConv, GroupedDilatedOutputShapeAndSameLower) {
  CpuGraph b;
  Value* x = b.input("x", {2, 6, 5, 4});
  Value* y = b.node("ConvTranspose", {x, b.constant("w", cpu_random({6, 2, 3, 2}, 74))},
                    attrs({{"group", int64_t{3}},
                           {"strides", std::vector<int64_t>{3, 2}},
                           {"dilations", std::vector<int64_t>{2, 1}},
                           {"output_shape", std::vector<int64_t>{15, 9}}}));
  Value* z = b.node(
      "ConvTranspose", {y, b.constant("w2", cpu_random({6, 3, 3, 3}, 75))},
      attrs({{"strides", std::vector<int64_t>{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}}));
  check_convt_cpu(b.finish({z}), {{"x", cpu_random({2, 6, 5, 4}, 76)}});
}

TEST(CpuConvTAsConv, ConvTranspose1d) {
  CpuGraph b;
  Value* x = b.input("x", {2, 4, 9});
  Value* y =
      b.node("ConvTranspose",
             {x, b.constant("w", cpu_random({4, 2, 4}, 77)), b.constant("b", cpu_random({4}, 78))},
             attrs({{"group", int64_t{2}},
                    {"strides", std::vector<int64_t>{4}},
                    {"pads", std::vector<int64_t>{1, 2}},
                    {"output_padding", std::vector<int64_t>{3}}}));
  check_convt_cpu(b.finish({y}), {{"x", cpu_random({2, 4, 9}, 79)}});
}

}  // namespace
}  // namespace tessel::testing
