// Resize in every mode (graph pass resize_as_matmul) and 3-D Conv / MaxPool / AveragePool
// (conv_3d_as_2d, pool_3d_as_2d) on the NPU: the passes leave no Resize other than pixel
// repetition and no rank-5 window op, the rewritten graph computes the original's values on the
// reference interpreter, and the compiled form matches the reference interpreter's op on the
// original graph within the fp16 bound (check_npu: interpreter == SystemC model, multicore ==
// one core).
#include <gtest/gtest.h>

#include "compiler/ir/graph.h"
#include "passes/graph/graph_passes.h"
#include "tests/compiler/npu_test_util.h"

namespace tessel::testing {
namespace {

constexpr double u = 1.0 / 2048;

Tensor floats(const Shape& s, std::vector<float> v) { return Tensor::from_floats(s, v); }
Tensor int64s(const Shape& s, std::vector<int64_t> v) { return Tensor::from_int64s(s, v); }

/// Runs the three passes on `g`, checks the rewritten graph against the original on the
/// reference (1e-5 of max |y|: the MatMul sums the reference's taps in fp32), then on the NPU.
void check_lowered(std::unique_ptr<Graph> g, const std::map<std::string, Tensor>& in, Bound bound) {
  const auto expected = ops::run_reference(*g, in);
  graph_passes::pool_3d_as_2d(*g);
  graph_passes::conv_3d_as_2d(*g);
  graph_passes::resize_as_matmul(*g);
  EXPECT_FALSE(graph_passes::needs_resize_as_matmul(*g));
  EXPECT_FALSE(graph_passes::needs_conv_3d_as_2d(*g));
  EXPECT_FALSE(graph_passes::needs_pool_3d_as_2d(*g));
  for (const auto& n : g->nodes()) {
    EXPECT_NE(n->op_type, "Resize") << n->describe();
    if (n->op_type == "Conv" || n->op_type == "MaxPool" || n->op_type == "AveragePool")
      EXPECT_EQ(n->input(0)->shape.size(), 4u) << n->describe();
  }
  const auto rewritten = ops::run_reference(*g, in);
  for (const auto& [name, ref] : expected) {
    const Tensor& got = rewritten.at(name);
    ASSERT_EQ(got.shape(), ref.shape()) << name;
    for (int64_t i = 0; i < ref.numel(); ++i)
      ASSERT_NEAR(got.get_as_double(i), ref.get_as_double(i), 1e-5 * (max_abs(ref) + 1))
          << name << " " << i;
  }
  const NpuCheck r = check_npu(*g, in, "npu_4core", bound);
  for (const auto& [name, ref] : expected) {
    const TensorDiff d = diff_tensors(r.outputs.at(name), ref, bound.atol, bound.rtol);
    EXPECT_LE(d.worst_ratio, 1.0) << name;
  }
}

TEST(ResizeAsMatmul, LinearHalfPixelValues) {
  // [1, 3] upsampled 2x, half_pixel: x_original = (x + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25
  // -> 1 (clamped), 0.75 * 1 + 0.25 * 3, 0.25 * 1 + 0.75 * 3, 3 (clamped).
  GraphBuilder b;
  Value* x = b.input("x", {1, 1, 1, 2});
  Value* y = b.node(
      "Resize",
      {x, b.constant("roi", floats({0}, {})), b.constant("scales", floats({4}, {1, 1, 1, 2}))},
      attrs({{"mode", std::string("linear")}}));
  auto g = b.finish({y});
  std::map<std::string, Tensor> in{{"x", floats({1, 1, 1, 2}, {1, 3})}};
  graph_passes::resize_as_matmul(*g);
  const NpuCheck r = check_npu(*g, in, "npu_4core", {0, 0});
  const Tensor& got = r.outputs.at(y->name);
  ASSERT_EQ(got.shape(), (Shape{1, 1, 1, 4}));
  const std::vector<double> want = {1, 1.5, 2.5, 3};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(got.get_as_double(i), want[i]) << i;
}

TEST(ResizeAsMatmul, LinearHalfPixelSizesFeatureMap) {
  // The M-LSD form (TensorFlow export, opset 11): linear half_pixel by `sizes`, 2x on H and W.
  GraphBuilder b;
  Value* x = b.input("x", {1, 24, 10, 10});
  Value* y = b.node("Resize",
                    {x, b.constant("roi", floats({0}, {})), b.constant("scales", floats({0}, {})),
                     b.constant("sizes", int64s({4}, {1, 24, 20, 20}))},
                    attrs({{"mode", std::string("linear")},
                           {"coordinate_transformation_mode", std::string("half_pixel")}}));
  // Weights 1/4, 3/4 are exact in fp16: input, output and the 2-term sum round.
  check_lowered(b.finish({y}), {{"x", random_tensor({1, 24, 10, 10}, 301)}}, {4 * u, 2 * u});
}

TEST(ResizeAsMatmul, CubicAlignCornersAndDownsample) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 7, 9});
  Value* up = b.node("Resize",
                     {x, b.constant("roi", floats({0}, {})),
                      b.constant("scales", floats({4}, {1, 1, 1.5f, 2.0f}))},
                     attrs({{"mode", std::string("cubic")},
                            {"coordinate_transformation_mode", std::string("align_corners")}}));
  Value* down = b.node("Resize",
                       {up, b.constant("roi2", floats({0}, {})),
                        b.constant("scales2", floats({4}, {1, 1, 0.6f, 0.5f}))},
                       attrs({{"mode", std::string("cubic")},
                              {"cubic_coeff_a", -0.5f},
                              {"exclude_outside", int64_t{1}}}));
  // Cubic weights round to fp16 (u each, sum |w| <= 1.3 per axis) over two Resizes of two axes.
  check_lowered(b.finish({down}), {{"x", random_tensor({2, 3, 7, 9}, 302)}}, {24 * u, 4 * u});
}

TEST(ResizeAsMatmul, NearestModesAndChannelAxis) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 5, 6});
  // Non-integer factors and a resized channel axis: nearest round_prefer_ceil asymmetric.
  Value* y = b.node("Resize",
                    {x, b.constant("roi", floats({0}, {})), b.constant("scales", floats({0}, {})),
                     b.constant("sizes", int64s({4}, {1, 6, 8, 4}))},
                    attrs({{"mode", std::string("nearest")},
                           {"coordinate_transformation_mode", std::string("asymmetric")},
                           {"nearest_mode", std::string("round_prefer_ceil")}}));
  Value* z = b.node(
      "Resize",
      {y, b.constant("roi2", floats({0}, {})), b.constant("scales2", floats({4}, {1, 1, 2, 3}))},
      attrs({{"mode", std::string("nearest")},
             {"coordinate_transformation_mode", std::string("align_corners")},
             {"nearest_mode", std::string("ceil")}}));
  // A selection: the NPU's value is the fp16 input's.
  check_lowered(b.finish({z}), {{"x", random_tensor({1, 4, 5, 6}, 303)}}, {0, u});
}

TEST(ResizeAsMatmul, TfCropAndResizeExtrapolates) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 2, 6, 6});
  Value* y = b.node(
      "Resize",
      {x, b.constant("roi", floats({8}, {0, 0, -0.2f, 0.4f, 1, 1, 0.6f, 1.3f})),
       b.constant("scales", floats({0}, {})), b.constant("sizes", int64s({4}, {1, 2, 5, 7}))},
      attrs({{"mode", std::string("linear")},
             {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
             {"extrapolation_value", 10.0f}}));
  auto g = b.finish({y});
  std::map<std::string, Tensor> in{{"x", random_tensor({1, 2, 6, 6}, 304)}};
  const auto ref = ops::run_reference(*g, in).at(y->name);
  int extrapolated = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) extrapolated += ref.get_as_double(i) == 10.0;
  EXPECT_GT(extrapolated, 0);  // some rows / columns lie outside the roi
  EXPECT_LT(extrapolated, ref.numel());
  check_lowered(std::move(g), in, {8 * u, 2 * u});
}

TEST(Window3dAs2d, GroupedStridedPaddedConv3d) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 4, 6, 7, 5});
  Value* y = b.node("Conv",
                    {x, b.constant("w", random_tensor({6, 2, 3, 3, 2}, 311, -0.3f, 0.3f)),
                     b.constant("b", random_tensor({6}, 312))},
                    attrs({{"group", int64_t{2}},
                           {"strides", std::vector<int64_t>{2, 1, 2}},
                           {"dilations", std::vector<int64_t>{1, 2, 1}},
                           {"pads", std::vector<int64_t>{1, 2, 0, 2, 1, 1}}}));
  // K = 2 * 18 = 36 terms of |x| |w| <= 0.3, bias <= 1: sum <= 11.8.
  check_lowered(b.finish({y}), {{"x", random_tensor({2, 4, 6, 7, 5}, 313)}}, {0.02, 4 * u});
}

TEST(Window3dAs2d, SamePaddedConv3dNoBias) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 5, 6, 6});
  Value* y = b.node(
      "Conv", {x, b.constant("w", random_tensor({4, 3, 2, 3, 3}, 321, -0.2f, 0.2f))},
      attrs({{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2, 2, 1}}}));
  check_lowered(b.finish({y}), {{"x", random_tensor({1, 3, 5, 6, 6}, 322)}}, {0.02, 4 * u});
}

TEST(Window3dAs2d, MaxAndAveragePool3d) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 7, 8, 6});
  Value* m = b.node("MaxPool", {x},
                    attrs({{"kernel_shape", std::vector<int64_t>{3, 2, 3}},
                           {"strides", std::vector<int64_t>{2, 2, 1}},
                           {"pads", std::vector<int64_t>{1, 0, 1, 1, 1, 1}},
                           {"ceil_mode", int64_t{1}}}));
  Value* a = b.node("AveragePool", {m},
                    attrs({{"kernel_shape", std::vector<int64_t>{2, 3, 2}},
                           {"pads", std::vector<int64_t>{1, 1, 0, 0, 1, 1}},
                           {"count_include_pad", int64_t{0}}}));
  Value* c = b.node("AveragePool", {x},
                    attrs({{"kernel_shape", std::vector<int64_t>{2, 2, 2}},
                           {"strides", std::vector<int64_t>{2, 2, 2}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 0, 0, 0}},
                           {"count_include_pad", int64_t{1}}}));
  check_lowered(b.finish({a, c}), {{"x", random_tensor({2, 3, 7, 8, 6}, 331)}}, {4 * u, 4 * u});
}

}  // namespace
}  // namespace tessel::testing
