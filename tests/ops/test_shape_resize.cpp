// Unit tests of the data-movement / shape ops and Resize (hand-computed values, compile-time
// input requirements, shape-rule errors).
#include <limits>

#include "tests/ops/op_test_util.h"

namespace tessel::testing_ops {
namespace {

const Tensor kX23 = f32({2, 3}, {1, 2, 3, 4, 5, 6});

TEST(ShapeOps, ReshapeZeroMinusOneAndAllowzero) {
  expect_tensor(run1("Reshape", {in(kX23), cst(i64({2}, {0, -1}))}), DType::f32, {2, 3},
                {1, 2, 3, 4, 5, 6});
  expect_tensor(run1("Reshape", {in(kX23), cst(i64({2}, {3, -1}))}), DType::f32, {3, 2},
                {1, 2, 3, 4, 5, 6});
  // allowzero=1: 0 is a real zero-sized dim ([0,3] -> [3,0]); with allowzero=0 it would copy
  // input dim 1 (3) and the element counts (0 vs 9) would not match.
  const Tensor empty(DType::f32, {0, 3});
  expect_tensor(
      run1("Reshape", {in(empty), cst(i64({2}, {3, 0}))}, attrs({{"allowzero", int64_t{1}}})),
      DType::f32, {3, 0}, {});
  OneNode copy0("Reshape", {in(empty), cst(i64({2}, {3, 0}))});
  EXPECT_NE(error_of([&] { copy0.infer(); }).find("cannot reshape"), std::string::npos);
  OneNode two("Reshape", {in(kX23), cst(i64({2}, {-1, -1}))}, {}, 1, "rs");
  const std::string msg = error_of([&] { two.infer(); });
  EXPECT_NE(msg.find("Reshape 'rs'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("more than one -1"), std::string::npos) << msg;
  OneNode rt("Reshape", {in(kX23), in(i64({1}, {6}))});
  EXPECT_TRUE(throws_unsupported([&] { rt.infer(); }));
}

TEST(ShapeOps, FlattenSqueezeUnsqueeze) {
  expect_tensor(run1("Flatten", {in(kX23)}, attrs({{"axis", int64_t{0}}})), DType::f32, {1, 6},
                {1, 2, 3, 4, 5, 6});
  const Tensor x234(DType::f32, {2, 3, 4});
  EXPECT_EQ(run1("Flatten", {in(x234)}, attrs({{"axis", int64_t{-1}}})).shape(), (Shape{6, 4}));
  const Tensor x131 = f32({1, 3, 1}, {1, 2, 3});
  EXPECT_EQ(run1("Squeeze", {in(x131), cst(i64({1}, {0}))}).shape(), (Shape{3, 1}));
  EXPECT_EQ(run1("Squeeze", {in(x131)}).shape(), (Shape{3}));
  OneNode bad("Squeeze", {in(x131), cst(i64({1}, {1}))});
  EXPECT_NE(error_of([&] { bad.infer(); }).find("size 3"), std::string::npos);
  // Unsqueeze axes refer to the output rank (3): [3] -> [1, 3, 1].
  expect_tensor(run1("Unsqueeze", {in(f32({3}, {1, 2, 3})), cst(i64({2}, {0, -1}))}), DType::f32,
                {1, 3, 1}, {1, 2, 3});
}

TEST(ShapeOps, TransposeConcatSplit) {
  expect_tensor(run1("Transpose", {in(kX23)}), DType::f32, {3, 2}, {1, 4, 2, 5, 3, 6});
  // perm [1,0,2] on [2,2,1]: swaps the first two axes.
  expect_tensor(run1("Transpose", {in(f32({2, 2, 1}, {1, 2, 3, 4}))},
                     attrs({{"perm", std::vector<int64_t>{1, 0, 2}}})),
                DType::f32, {2, 2, 1}, {1, 3, 2, 4});
  OneNode bad("Transpose", {in(kX23)}, attrs({{"perm", std::vector<int64_t>{0, 0}}}));
  EXPECT_NE(error_of([&] { bad.infer(); }).find("permutation"), std::string::npos);
  // Concat along axis -1: [[1],[2]] ++ [[3,4],[5,6]] = [[1,3,4],[2,5,6]].
  expect_tensor(run1("Concat", {in(f32({2, 1}, {1, 2})), in(f32({2, 2}, {3, 4, 5, 6}))},
                     attrs({{"axis", int64_t{-1}}})),
                DType::f32, {2, 3}, {1, 3, 4, 2, 5, 6});
  OneNode mis("Concat", {in(f32({2, 1}, {1, 2})), in(f32({3, 1}, {1, 2, 3}))},
              attrs({{"axis", int64_t{1}}}));
  EXPECT_NE(error_of([&] { mis.infer(); }).find("differs"), std::string::npos);
  // Split [6] by [1,2,3].
  OneNode sp("Split", {in(f32({6}, {1, 2, 3, 4, 5, 6})), cst(i64({3}, {1, 2, 3}))}, {}, 3);
  auto parts = sp.run();
  expect_tensor(parts[0], DType::f32, {1}, {1});
  expect_tensor(parts[1], DType::f32, {2}, {2, 3});
  expect_tensor(parts[2], DType::f32, {3}, {4, 5, 6});
  // Equal parts along axis 1 of [2,3]... 3 does not split into 2.
  OneNode uneven("Split", {in(kX23)}, attrs({{"axis", int64_t{1}}}), 2);
  EXPECT_NE(error_of([&] { uneven.infer(); }).find("evenly"), std::string::npos);
}

TEST(ShapeOps, SliceClampingAndNegativeSteps) {
  std::vector<float> v(10);
  for (int i = 0; i < 10; ++i) v[i] = static_cast<float>(i);
  const Tensor x = f32({10}, v);
  // start -3 -> 7, end 100 clamps to 10.
  expect_tensor(run1("Slice", {in(x), cst(i64({1}, {-3})), cst(i64({1}, {100}))}), DType::f32, {3},
                {7, 8, 9});
  // start 8, end INT64_MIN (clamps to -1, i.e. through index 0), step -2: 8, 6, 4, 2, 0.
  expect_tensor(run1("Slice", {in(x), cst(i64({1}, {8})),
                               cst(i64({1}, {std::numeric_limits<int64_t>::min()})),
                               cst(i64({1}, {0})), cst(i64({1}, {-2}))}),
                DType::f32, {5}, {8, 6, 4, 2, 0});
  // 2-D with axes [1]: columns 1..2 of [[0,1,2,3],[4,5,6,7]].
  expect_tensor(run1("Slice", {in(f32({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})), cst(i64({1}, {1})),
                               cst(i64({1}, {3})), cst(i64({1}, {1}))}),
                DType::f32, {2, 2}, {1, 2, 5, 6});
  // An empty result (start beyond end).
  EXPECT_EQ(run1("Slice", {in(x), cst(i64({1}, {5})), cst(i64({1}, {2}))}).shape(), (Shape{0}));
  OneNode zero("Slice",
               {in(x), cst(i64({1}, {0})), cst(i64({1}, {5})), none(), cst(i64({1}, {0}))});
  EXPECT_NE(error_of([&] { zero.infer(); }).find("steps[0] is 0"), std::string::npos);
  OneNode rt("Slice", {in(x), in(i64({1}, {0})), cst(i64({1}, {5}))}, {}, 1, "sl");
  try {
    rt.infer();
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("'starts'"), std::string::npos) << e.what();
  }
}

TEST(ShapeOps, GatherAndGatherElements) {
  const Tensor d = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  // Rows 2 and -3 (= 0).
  expect_tensor(run1("Gather", {in(d), in(i64({2}, {2, -3}))}), DType::f32, {2, 2}, {5, 6, 1, 2});
  // axis 1 with [[1]] indices: shape [3, 1, 1], column 1.
  expect_tensor(run1("Gather", {in(d), in(i64({1, 1}, {1}))}, attrs({{"axis", int64_t{1}}})),
                DType::f32, {3, 1, 1}, {2, 4, 6});
  OneNode oob("Gather", {in(d), in(i64({1}, {3}))}, {}, 1, "g");
  const std::string msg = error_of([&] { oob.run(); });
  EXPECT_NE(msg.find("Gather 'g'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
  // GatherElements axis 1: [[1,2],[3,4]] with [[0,0],[1,0]] -> [[1,1],[4,3]].
  expect_tensor(
      run1("GatherElements", {in(f32({2, 2}, {1, 2, 3, 4})), in(i64({2, 2}, {0, 0, 1, 0}))},
           attrs({{"axis", int64_t{1}}})),
      DType::f32, {2, 2}, {1, 1, 4, 3});
}

TEST(ShapeOps, PadModes) {
  const Tensor x = f32({3}, {1, 2, 3});
  const Tensor pads = i64({2}, {2, 1});  // two before, one after
  expect_tensor(run1("Pad", {in(x), cst(pads)}), DType::f32, {6}, {0, 0, 1, 2, 3, 0});
  expect_tensor(run1("Pad", {in(x), cst(pads), in(f32({}, {9}))}), DType::f32, {6},
                {9, 9, 1, 2, 3, 9});
  // reflect mirrors about the edge element without repeating it; edge repeats it.
  expect_tensor(run1("Pad", {in(x), cst(pads)}, attrs({{"mode", std::string("reflect")}})),
                DType::f32, {6}, {3, 2, 1, 2, 3, 2});
  expect_tensor(run1("Pad", {in(x), cst(pads)}, attrs({{"mode", std::string("edge")}})), DType::f32,
                {6}, {1, 1, 1, 2, 3, 3});
  // Negative pads crop.
  expect_tensor(run1("Pad", {in(x), cst(i64({2}, {-1, 0}))}), DType::f32, {2}, {2, 3});
  OneNode wrap("Pad", {in(x), cst(pads)}, attrs({{"mode", std::string("wrap")}}));
  EXPECT_TRUE(throws_unsupported([&] { wrap.infer(); }));
}

TEST(ShapeOps, ExpandTileShapeSize) {
  // [3,1] expanded to [2,1,2] -> [2,3,2].
  expect_tensor(run1("Expand", {in(f32({3, 1}, {1, 2, 3})), cst(i64({3}, {2, 1, 2}))}), DType::f32,
                {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  expect_tensor(run1("Tile", {in(f32({1, 2}, {1, 2})), cst(i64({2}, {2, 2}))}), DType::f32, {2, 4},
                {1, 2, 1, 2, 1, 2, 1, 2});
  const Tensor x(DType::f32, {2, 3, 4, 5});
  expect_tensor(run1("Shape", {in(x)}, attrs({{"start", int64_t{1}}, {"end", int64_t{-1}}})),
                DType::i64, {2}, {3, 4});
  expect_tensor(run1("Size", {in(x)}), DType::i64, {}, {120});
}

TEST(ShapeOps, Generators) {
  Tensor seven = i64({1}, {7});
  expect_tensor(run1("ConstantOfShape", {cst(i64({2}, {2, 2}))}, attrs({{"value", seven}})),
                DType::i64, {2, 2}, {7, 7, 7, 7});
  expect_tensor(run1("ConstantOfShape", {cst(i64({1}, {3}))}), DType::f32, {3}, {0, 0, 0});
  // Range(10, 4, -3): ceil((4 - 10) / -3) = 2 elements: 10, 7.
  expect_tensor(run1("Range", {cst(i64({}, {10})), cst(i64({}, {4})), cst(i64({}, {-3}))}),
                DType::i64, {2}, {10, 7});
  expect_tensor(run1("Range", {cst(f32({}, {0})), cst(f32({}, {1})), cst(f32({}, {0.25f}))}),
                DType::f32, {4}, {0, 0.25, 0.5, 0.75});
  OneNode c("Constant", {}, attrs({{"value_ints", std::vector<int64_t>{4, 5}}}));
  expect_tensor(c.run()[0], DType::i64, {2}, {4, 5});
  // OneHot with a negative index (-1 = depth - 1).
  expect_tensor(run1("OneHot", {in(i64({3}, {0, 2, -1})), cst(i64({}, {3})), in(f32({2}, {0, 1}))}),
                DType::f32, {3, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 1});
  // NonZero of [[1,0],[0,2]]: rows [0,1], cols [0,1].
  expect_tensor(run1("NonZero", {cst(f32({2, 2}, {1, 0, 0, 2}))}), DType::i64, {2, 2},
                {0, 1, 0, 1});
  // Trilu: upper triangle of a 3x3 of ones; k=-1 lower triangle below the diagonal.
  const Tensor ones = f32({3, 3}, std::vector<float>(9, 1));
  expect_tensor(run1("Trilu", {in(ones)}), DType::f32, {3, 3}, {1, 1, 1, 0, 1, 1, 0, 0, 1});
  expect_tensor(run1("Trilu", {in(ones), in(i64({}, {-1}))}, attrs({{"upper", int64_t{0}}})),
                DType::f32, {3, 3}, {0, 0, 0, 1, 0, 0, 1, 1, 0});
}

TEST(ShapeOps, DepthToSpaceModes) {
  std::vector<float> v(8);
  for (int i = 0; i < 8; ++i) v[i] = static_cast<float>(i);
  const Tensor x = f32({1, 8, 1, 1}, v);
  const auto b2 = attrs({{"blocksize", int64_t{2}}});
  // DCR: out[c][bh][bw] = in[(bh*2 + bw)*2 + c] -> c0 = [[0,2],[4,6]], c1 = [[1,3],[5,7]].
  expect_tensor(run1("DepthToSpace", {in(x)}, b2), DType::f32, {1, 2, 2, 2},
                {0, 2, 4, 6, 1, 3, 5, 7});
  // CRD: out[c][bh][bw] = in[c*4 + bh*2 + bw] -> c0 = [[0,1],[2,3]], c1 = [[4,5],[6,7]].
  Attributes crd = b2;
  crd.set("mode", std::string("CRD"));
  expect_tensor(run1("DepthToSpace", {in(x)}, crd), DType::f32, {1, 2, 2, 2},
                {0, 1, 2, 3, 4, 5, 6, 7});
  // SpaceToDepth inverts DCR: [[0,1],[2,3]] -> channels 0,1,2,3.
  expect_tensor(run1("SpaceToDepth", {in(f32({1, 1, 2, 2}, {0, 1, 2, 3}))}, b2), DType::f32,
                {1, 4, 1, 1}, {0, 1, 2, 3});
}

TEST(Resize, NearestLinearAlignCorners) {
  const Tensor x = f32({1, 2}, {0, 10});
  auto mode = [](const char* m, const char* coord) {
    return attrs(
        {{"mode", std::string(m)}, {"coordinate_transformation_mode", std::string(coord)}});
  };
  const Tensor scales = f32({2}, {1, 2});
  // Nearest, asymmetric: x_original = x / 2 = 0, 0.5, 1, 1.5 -> round_prefer_floor 0, 0, 1, 1.
  expect_tensor(run1("Resize", {in(x), none(), cst(scales)}, mode("nearest", "asymmetric")),
                DType::f32, {1, 4}, {0, 0, 10, 10});
  // Linear, half_pixel: x_original = (x + 0.5)/2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped at the
  // edges: 0, 2.5, 7.5, 10.
  expect_tensor(run1("Resize", {in(x), none(), cst(scales)}, mode("linear", "half_pixel")),
                DType::f32, {1, 4}, {0, 2.5, 7.5, 10});
  // align_corners with sizes [1,3]: x_original = x * (2-1)/(3-1) = 0, 0.5, 1 -> 0, 5, 10.
  expect_tensor(run1("Resize", {in(x), none(), none(), cst(i64({2}, {1, 3}))},
                     mode("linear", "align_corners")),
                DType::f32, {1, 3}, {0, 5, 10});
}

TEST(Resize, CubicAndCropAndResize) {
  // Cubic (A = -0.75), asymmetric, scale 2 on [0,1,4,9]: output 3 has x_original = 1.5, ratio
  // 0.5, taps at 0..3 with weights [-0.09375, 0.59375, 0.59375, -0.09375]:
  // 0.59375*1 + 0.59375*4 - 0.09375*9 = 2.125. Output 2 (x_original = 1) is the sample 1.
  Tensor y = run1("Resize", {in(f32({4}, {0, 1, 4, 9})), none(), cst(f32({1}, {2}))},
                  attrs({{"mode", std::string("cubic")},
                         {"coordinate_transformation_mode", std::string("asymmetric")}}));
  ASSERT_EQ(y.shape(), (Shape{8}));
  EXPECT_NEAR(y.data<float>()[2], 1.0, 1e-6);
  EXPECT_NEAR(y.data<float>()[3], 2.125, 1e-6);
  // tf_crop_and_resize with roi [0.5, 1.5] on [0, 10, 20]: x_original = 0.5*2 + x*(1.0*2)/(3-1)
  // = 1, 2, 3 -> 10, 20, and 3 > 2 is outside: extrapolation_value 7.
  Tensor c =
      run1("Resize",
           {in(f32({3}, {0, 10, 20})), cst(f32({2}, {0.5f, 1.5f})), none(), cst(i64({1}, {3}))},
           attrs({{"mode", std::string("linear")},
                  {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                  {"extrapolation_value", 7.0f}}));
  expect_tensor(c, DType::f32, {3}, {10, 20, 7});
}

TEST(Resize, RequiresOneCompileTimeScalesOrSizes) {
  const Tensor x = f32({1, 2}, {0, 10});
  OneNode both("Resize", {in(x), none(), cst(f32({2}, {1, 2})), cst(i64({2}, {1, 4}))});
  EXPECT_NE(error_of([&] { both.infer(); }).find("exactly one"), std::string::npos);
  OneNode rt("Resize", {in(x), none(), in(f32({2}, {1, 2}))}, {}, 1, "rz");
  EXPECT_TRUE(throws_unsupported([&] { rt.infer(); }));
  OneNode mode("Resize", {in(x), none(), cst(f32({2}, {1, 2}))},
               attrs({{"mode", std::string("area")}}));
  EXPECT_NE(error_of([&] { mode.infer(); }).find("mode 'area'"), std::string::npos);
}

}  // namespace
}  // namespace tessel::testing_ops
