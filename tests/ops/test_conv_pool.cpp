// Unit tests of Conv, ConvTranspose and the pooling ops with hand-computed values.
#include <cmath>

#include "tests/ops/op_test_util.h"

namespace tessel::testing_ops {
namespace {

std::vector<float> iota_f(size_t n, float start = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

TEST(Conv, Stride2Pad1OnesKernel) {
  // X = 0..24 as 5x5 (x[r][c] = 5r + c), W = 3x3 ones, stride 2, pads 1:
  // out = floor((5 + 2 - 3) / 2) + 1 = 3; out(i,j) sums rows 2i-1..2i+1, cols 2j-1..2j+1 in range:
  //   (0,0) = 0+1+5+6 = 12            (0,1) = 1+2+3 + 6+7+8 = 27        (0,2) = 3+4+8+9 = 24
  //   (1,0) = 5+6+10+11+15+16 = 63    (1,1) = 21+36+51 = 108             (1,2) = 17+27+37 = 81
  //   (2,0) = 15+16+20+21 = 72        (2,1) = 51+66 = 117                (2,2) = 37+47 = 84
  Tensor y = run1(
      "Conv", {in(f32({1, 1, 5, 5}, iota_f(25))), cst(f32({1, 1, 3, 3}, std::vector<float>(9, 1)))},
      attrs({{"strides", std::vector<int64_t>{2, 2}},
             {"pads", std::vector<int64_t>{1, 1, 1, 1}},
             {"kernel_shape", std::vector<int64_t>{3, 3}}}));
  expect_tensor(y, DType::f32, {1, 1, 3, 3}, {12, 27, 24, 63, 108, 81, 72, 117, 84});
}

TEST(Conv, DepthwiseAndGroupedWithBias) {
  // Depthwise (group = C = 2), 1x1 weights [2, 3], bias [1, -1]:
  // channel 0 = 2*[1,2] + 1 = [3,5]; channel 1 = 3*[3,4] - 1 = [8,11].
  Tensor y = run1(
      "Conv",
      {in(f32({1, 2, 1, 2}, {1, 2, 3, 4})), in(f32({2, 1, 1, 1}, {2, 3})), in(f32({2}, {1, -1}))},
      attrs({{"group", int64_t{2}}}));
  expect_tensor(y, DType::f32, {1, 2, 1, 2}, {3, 5, 8, 11});
  // group = 2, C = 4, M = 2: out0 = 1*x0 + 2*x1, out1 = 3*x2 + 4*x3 (one pixel each).
  Tensor g =
      run1("Conv", {in(f32({1, 4, 1, 1}, {1, 10, 100, 1000})), in(f32({2, 2, 1, 1}, {1, 2, 3, 4}))},
           attrs({{"group", int64_t{2}}}));
  expect_tensor(g, DType::f32, {1, 2, 1, 1}, {21, 4300});
}

TEST(Conv, DilationAndAutoPad) {
  const Tensor x = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  // Dilation 2 with W = [1, 10, 100]: taps x[i], x[i+2], x[i+4]; one output = 1 + 30 + 500.
  expect_tensor(run1("Conv", {in(x), in(f32({1, 1, 3}, {1, 10, 100}))},
                     attrs({{"dilations", std::vector<int64_t>{2}}})),
                DType::f32, {1, 1, 1}, {531});
  const Tensor x4 = f32({1, 1, 4}, {1, 2, 3, 4});
  const Tensor w = f32({1, 1, 2}, {1, 10});
  // SAME_UPPER, stride 1, kernel 2: total pad 1, at the end: y[i] = x[i] + 10 x[i+1].
  expect_tensor(run1("Conv", {in(x4), in(w)}, attrs({{"auto_pad", std::string("SAME_UPPER")}})),
                DType::f32, {1, 1, 4}, {21, 32, 43, 4});
  // SAME_LOWER: the pad goes first: y[i] = x[i-1] + 10 x[i].
  expect_tensor(run1("Conv", {in(x4), in(w)}, attrs({{"auto_pad", std::string("SAME_LOWER")}})),
                DType::f32, {1, 1, 4}, {10, 21, 32, 43});
  // SAME_UPPER, stride 2 on 5: out = ceil(5/2) = 3, total pad = 2*2 + 2 - 5 = 1 at the end:
  // y = [x0 + 10 x1, x2 + 10 x3, x4 + 0] = [21, 43, 5].
  expect_tensor(
      run1("Conv", {in(x), in(w)},
           attrs({{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2}}})),
      DType::f32, {1, 1, 3}, {21, 43, 5});
  // VALID, stride 2: out = floor((5 - 2) / 2) + 1 = 2.
  expect_tensor(
      run1("Conv", {in(x), in(w)},
           attrs({{"auto_pad", std::string("VALID")}, {"strides", std::vector<int64_t>{2}}})),
      DType::f32, {1, 1, 2}, {21, 43});
}

TEST(Conv, ThreeSpatialDimsAndF64) {
  // 2x2x2 input 1..8 with a 2x2x2 ones kernel and bias 1: 36 + 1.
  Tensor y = run1("Conv", {in(f32({1, 1, 2, 2, 2}, iota_f(8, 1))),
                           in(f32({1, 1, 2, 2, 2}, std::vector<float>(8, 1))), in(f32({1}, {1}))});
  expect_tensor(y, DType::f32, {1, 1, 1, 1, 1}, {37});
  // f64 stays f64: 1-D [1, 2, 3] * [1, -1] = [-1, -1].
  Tensor d = run1("Conv", {in(f64({1, 1, 3}, {1, 2, 3})), in(f64({1, 1, 2}, {1, -1}))});
  expect_tensor(d, DType::f64, {1, 1, 2}, {-1, -1});
}

TEST(Conv, ShapeErrorsNameTheNode) {
  OneNode ch("Conv",
             {in(f32({1, 2, 4, 4}, std::vector<float>(32))),
              in(f32({1, 3, 3, 3}, std::vector<float>(27)))},
             {}, 1, "conv7");
  std::string msg = error_of([&] { ch.infer(); });
  EXPECT_NE(msg.find("Conv 'conv7'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("channels"), std::string::npos) << msg;
  OneNode ap("Conv", {in(f32({1, 1, 4}, std::vector<float>(4))), in(f32({1, 1, 2}, {1, 1}))},
             attrs({{"auto_pad", std::string("SAME")}}));
  EXPECT_NE(error_of([&] { ap.infer(); }).find("auto_pad"), std::string::npos);
  OneNode big("Conv", {in(f32({1, 1, 2}, {1, 1})), in(f32({1, 1, 3}, {1, 1, 1}))});
  EXPECT_NE(error_of([&] { big.infer(); }).find("exceeds"), std::string::npos);
  OneNode grp("Conv", {in(f32({1, 3, 2}, std::vector<float>(6))), in(f32({2, 1, 1}, {1, 1}))},
              attrs({{"group", int64_t{2}}}));
  EXPECT_NE(error_of([&] { grp.infer(); }).find("group"), std::string::npos);
  OneNode ints("Conv", {in(i64({1, 1, 2}, {1, 1})), in(i64({1, 1, 1}, {1}))});
  EXPECT_NE(error_of([&] { ints.infer(); }).find("float"), std::string::npos);
}

TEST(ConvTranspose, ScattersWithStridePadsAndOutputShape) {
  const Tensor x = f32({1, 1, 2}, {1, 2});
  const Tensor w = f32({1, 1, 3}, {1, 1, 1});
  const auto s2 = std::vector<int64_t>{2};
  // Stride 2, kernel 3: out = 2*(2-1) + 3 = 5; x0 covers 0..2, x1 covers 2..4: [1, 1, 3, 2, 2].
  expect_tensor(run1("ConvTranspose", {in(x), in(w)}, attrs({{"strides", s2}})), DType::f32,
                {1, 1, 5}, {1, 1, 3, 2, 2});
  // pads [1, 1] crop one element at each end.
  expect_tensor(run1("ConvTranspose", {in(x), in(w)},
                     attrs({{"strides", s2}, {"pads", std::vector<int64_t>{1, 1}}})),
                DType::f32, {1, 1, 3}, {1, 3, 2});
  // output_padding 1 appends one (zero) element.
  expect_tensor(run1("ConvTranspose", {in(x), in(w)},
                     attrs({{"strides", s2}, {"output_padding", std::vector<int64_t>{1}}})),
                DType::f32, {1, 1, 6}, {1, 1, 3, 2, 2, 0});
  // output_shape 4: total padding 5 - 4 = 1, the odd element at the beginning (NOTSET).
  expect_tensor(run1("ConvTranspose", {in(x), in(w)},
                     attrs({{"strides", s2}, {"output_shape", std::vector<int64_t>{4}}})),
                DType::f32, {1, 1, 4}, {1, 3, 2, 2});
  // Two input channels into one output channel (W [C=2, M=1, 1]) with bias 0.5: x0 + x1 + 0.5.
  expect_tensor(run1("ConvTranspose", {in(f32({1, 2, 2}, {1, 2, 10, 20})),
                                       in(f32({2, 1, 1}, {1, 1})), in(f32({1}, {0.5f}))}),
                DType::f32, {1, 1, 2}, {11.5, 22.5});
}

TEST(Pool, MaxPoolWithIndices) {
  // 4x4 input 0..15, kernel 2, stride 2: maxima are the bottom-right elements 5, 7, 13, 15.
  OneNode n("MaxPool", {in(f32({1, 1, 4, 4}, iota_f(16)))},
            attrs({{"kernel_shape", std::vector<int64_t>{2, 2}},
                   {"strides", std::vector<int64_t>{2, 2}}}),
            2);
  auto outs = n.run();
  expect_tensor(outs[0], DType::f32, {1, 1, 2, 2}, {5, 7, 13, 15});
  expect_tensor(outs[1], DType::i64, {1, 1, 2, 2}, {5, 7, 13, 15});
  // storage_order=1: column-major index h + w * H: (1,1) -> 5, (1,3) -> 13, (3,1) -> 7, (3,3)
  // -> 15.
  OneNode c("MaxPool", {in(f32({1, 1, 4, 4}, iota_f(16)))},
            attrs({{"kernel_shape", std::vector<int64_t>{2, 2}},
                   {"strides", std::vector<int64_t>{2, 2}},
                   {"storage_order", int64_t{1}}}),
            2);
  expect_tensor(c.run()[1], DType::i64, {1, 1, 2, 2}, {5, 13, 7, 15});
}

TEST(Pool, MaxPoolCeilModeDilationAndUint8) {
  const Tensor x = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  const auto k2 = std::vector<int64_t>{2};
  // floor((5 - 2) / 2) + 1 = 2 windows; ceil mode adds a third covering only x4.
  expect_tensor(run1("MaxPool", {in(x)}, attrs({{"kernel_shape", k2}, {"strides", k2}})),
                DType::f32, {1, 1, 2}, {2, 4});
  expect_tensor(run1("MaxPool", {in(x)},
                     attrs({{"kernel_shape", k2}, {"strides", k2}, {"ceil_mode", int64_t{1}}})),
                DType::f32, {1, 1, 3}, {2, 4, 5});
  // Dilation 2, kernel 2 (extent 3) on [1,5,2,4,3]: max(x0,x2), max(x1,x3), max(x2,x4).
  expect_tensor(run1("MaxPool", {in(f32({1, 1, 5}, {1, 5, 2, 4, 3}))},
                     attrs({{"kernel_shape", k2}, {"dilations", k2}})),
                DType::f32, {1, 1, 3}, {2, 5, 3});
  // uint8 input with padding: padded positions never win (max of [7] and pad is 7).
  expect_tensor(run1("MaxPool", {in(typed(DType::u8, {1, 1, 2}, {7, 200}))},
                     attrs({{"kernel_shape", k2}, {"pads", std::vector<int64_t>{1, 0}}})),
                DType::u8, {1, 1, 2}, {7, 200});
}

TEST(Pool, AveragePoolPadCounting) {
  // 3x3 ones, kernel 3, pads 1, stride 1. Excluding the pad every window averages ones -> 1.
  // Including it: corners see 4 of 9 ones (4/9), edges 6/9, the centre 9/9.
  const Tensor x = f32({1, 1, 3, 3}, std::vector<float>(9, 1));
  const auto a = attrs(
      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  expect_tensor(run1("AveragePool", {in(x)}, a), DType::f32, {1, 1, 3, 3},
                std::vector<double>(9, 1.0));
  Attributes inc = a;
  inc.set("count_include_pad", int64_t{1});
  const double c = 4.0 / 9, e = 6.0 / 9;
  expect_tensor(run1("AveragePool", {in(x)}, inc), DType::f32, {1, 1, 3, 3},
                {c, e, c, e, 1, e, c, e, c});
  // Ceil mode on [1..5], kernel 2, stride 2: windows [1,2], [3,4], [5] -> 1.5, 3.5, 5.
  expect_tensor(run1("AveragePool", {in(f32({1, 1, 5}, {1, 2, 3, 4, 5}))},
                     attrs({{"kernel_shape", std::vector<int64_t>{2}},
                            {"strides", std::vector<int64_t>{2}},
                            {"ceil_mode", int64_t{1}}})),
                DType::f32, {1, 1, 3}, {1.5, 3.5, 5});
}

TEST(Pool, GlobalPools) {
  // [1, 2, 2, 2]: channel 0 = 1..4, channel 1 = 5..8.
  const Tensor x = f32({1, 2, 2, 2}, iota_f(8, 1));
  expect_tensor(run1("GlobalAveragePool", {in(x)}), DType::f32, {1, 2, 1, 1}, {2.5, 6.5});
  expect_tensor(run1("GlobalMaxPool", {in(x)}), DType::f32, {1, 2, 1, 1}, {4, 8});
}

TEST(Pool, LpPools) {
  // p = 2 over windows of 2: sqrt(3^2 + 4^2) = 5, sqrt(0 + 1) = 1; global: sqrt(9+16+0+1).
  const Tensor x = f32({1, 1, 4}, {3, 4, 0, 1});
  expect_tensor(run1("LpPool", {in(x)},
                     attrs({{"kernel_shape", std::vector<int64_t>{2}},
                            {"strides", std::vector<int64_t>{2}}})),
                DType::f32, {1, 1, 2}, {5, 1});
  expect_tensor(run1("GlobalLpPool", {in(x)}), DType::f32, {1, 1, 1}, {std::sqrt(26.0)}, 1e-5);
}

TEST(Pool, AttributeErrors) {
  const Tensor x = f32({1, 1, 4}, {1, 2, 3, 4});
  OneNode nok("MaxPool", {in(x)}, {}, 1, "mp");
  std::string msg = error_of([&] { nok.infer(); });
  EXPECT_NE(msg.find("MaxPool 'mp'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kernel_shape"), std::string::npos) << msg;
  // AveragePool-11 has no dilations.
  OneNode dil(
      "AveragePool", {in(x)},
      attrs({{"kernel_shape", std::vector<int64_t>{2}}, {"dilations", std::vector<int64_t>{2}}}));
  EXPECT_TRUE(throws_unsupported([&] { dil.infer(); }));
  OneNode st(
      "MaxPool", {in(x)},
      attrs({{"kernel_shape", std::vector<int64_t>{2}}, {"strides", std::vector<int64_t>{0}}}));
  EXPECT_NE(error_of([&] { st.infer(); }).find("strides"), std::string::npos);
}

}  // namespace
}  // namespace tessel::testing_ops
