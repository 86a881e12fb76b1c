// Resize in every mode (graph pass resize_as_matmul) and 3-D Conv / MaxPool / AveragePool
// (conv_3d_as_2d, pool_3d_as_2d) on the CPU backend: the compiled rewritten graph against the
// reference interpreter's ops on the original graph (fp32 both sides; the sums reassociated:
// 2e-5 of the largest output, as tests/cpu/test_cpu_conv_as_2d.cpp).
#include "passes/graph/graph_passes.h"
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

Tensor floats(const Shape& s, std::vector<float> v) { return Tensor::from_floats(s, v); }
Tensor int64s(const Shape& s, std::vector<int64_t> v) { return Tensor::from_int64s(s, v); }

/// Compiles the rewritten `g` for the CPU and compares with the original graph's reference.
void check_lowered(std::unique_ptr<Graph> g, const std::map<std::string, Tensor>& in) {
  const auto expected = ops::run_reference(*g, in);
  graph_passes::pool_3d_as_2d(*g);
  graph_passes::conv_3d_as_2d(*g);
  graph_passes::resize_as_matmul(*g);
  for (const auto& n : g->nodes()) EXPECT_NE(n->op_type, "Resize") << n->describe();
  cpu_backend::CpuJit jit(cpu_backend::compile_cpu(*g, {}));
  const auto got = jit.run(in, true);
  for (const auto& [name, ref] : expected) {
    ASSERT_TRUE(got.outputs.count(name)) << name;
    const Tensor& t = got.outputs.at(name);
    ASSERT_EQ(t.shape(), ref.shape()) << name;
    const double tol = 2e-5 * max_abs(ref) + 1e-6;
    for (int64_t i = 0; i < ref.numel(); ++i)
      ASSERT_NEAR(t.get_as_double(i), ref.get_as_double(i), tol) << name << " " << i;
  }
}

TEST(CpuResizeAsMatmul, LinearHalfPixelValues) {
  // [1, 3] upsampled 2x, half_pixel: 1 (clamped), 0.75 * 1 + 0.25 * 3, 0.25 * 1 + 0.75 * 3, 3.
  CpuGraph b;
  Value* x = b.input("x", {1, 1, 1, 2});
  Value* y = b.node(
      "Resize",
      {x, b.constant("roi", floats({0}, {})), b.constant("scales", floats({4}, {1, 1, 1, 2}))},
      attrs({{"mode", std::string("linear")}}));
  auto g = b.finish({y});
  graph_passes::resize_as_matmul(*g);
  cpu_backend::CpuJit jit(cpu_backend::compile_cpu(*g, {}));
  const auto got = jit.run({{"x", floats({1, 1, 1, 2}, {1, 3})}}, true);
  const Tensor& t = got.outputs.at(y->name);
  ASSERT_EQ(t.shape(), (Shape{1, 1, 1, 4}));
  const std::vector<double> want = {1, 1.5, 2.5, 3};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(t.get_as_double(i), want[i]) << i;
}

TEST(CpuResizeAsMatmul, EveryModeFamily) {
  CpuGraph b;
  Value* x = b.input("x", {2, 3, 7, 9});
  Value* lin =
      b.node("Resize",
             {x, b.constant("roi", floats({0}, {})), b.constant("scales", floats({0}, {})),
              b.constant("sizes", int64s({4}, {2, 3, 14, 18}))},
             attrs({{"mode", std::string("linear")},
                    {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}));
  Value* cub = b.node("Resize",
                      {lin, b.constant("roi2", floats({0}, {})),
                       b.constant("scales2", floats({4}, {1, 1, 0.7f, 0.5f}))},
                      attrs({{"mode", std::string("cubic")},
                             {"cubic_coeff_a", -0.5f},
                             {"exclude_outside", int64_t{1}}}));
  Value* nn =
      b.node("Resize",
             {cub, b.constant("roi3", floats({0}, {})), b.constant("scales3", floats({0}, {})),
              b.constant("sizes3b", int64s({4}, {2, 5, 13, 4}))},
             attrs({{"mode", std::string("nearest")},
                    {"coordinate_transformation_mode", std::string("half_pixel")},
                    {"nearest_mode", std::string("round_prefer_ceil")}}));
  Value* crop = b.node(
      "Resize",
      {nn, b.constant("roi4", floats({8}, {0, 0, 0.1f, -0.3f, 1, 1, 0.8f, 1.2f})),
       b.constant("scales4", floats({0}, {})), b.constant("sizes4", int64s({4}, {2, 5, 6, 7}))},
      attrs({{"mode", std::string("linear")},
             {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
             {"extrapolation_value", -2.0f}}));
  check_lowered(b.finish({crop}), {{"x", cpu_random({2, 3, 7, 9}, 71)}});
}

TEST(CpuWindow3dAs2d, Conv3dAndPools) {
  CpuGraph b;
  Value* x = b.input("x", {2, 4, 6, 7, 5});
  Value* c = b.node(
      "Conv",
      {x, b.constant("w", cpu_random({6, 2, 3, 3, 2}, 72)), b.constant("b", cpu_random({6}, 73))},
      attrs({{"group", int64_t{2}},
             {"strides", std::vector<int64_t>{2, 1, 2}},
             {"dilations", std::vector<int64_t>{1, 2, 1}},
             {"pads", std::vector<int64_t>{1, 2, 0, 2, 1, 1}}}));
  Value* m = b.node("MaxPool", {c},
                    attrs({{"kernel_shape", std::vector<int64_t>{2, 2, 2}},
                           {"pads", std::vector<int64_t>{1, 0, 1, 0, 1, 0}},
                           {"ceil_mode", int64_t{1}}}));
  Value* a = b.node("AveragePool", {m},
                    attrs({{"kernel_shape", std::vector<int64_t>{2, 2, 2}},
                           {"pads", std::vector<int64_t>{1, 1, 0, 0, 1, 1}},
                           {"count_include_pad", int64_t{0}}}));
  check_lowered(b.finish({a}), {{"x", cpu_random({2, 4, 6, 7, 5}, 74)}});
}

}  // namespace
}  // namespace tessel::testing
