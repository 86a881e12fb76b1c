// Unit tests of the elementwise ops (compiler/ops/elementwise.cpp): broadcasting, dtype rules,
// integer semantics, activations, Cast, Where, Clip, Dropout. Expected values are computed by
// hand in the comments.
#include <cmath>

#include "tests/ops/op_test_util.h"

namespace tessel::testing_ops {
namespace {

TEST(Elementwise, AddBroadcastsTrailingDims) {
  // [2,3] + [3]: row i of A plus B = [10, 20, 30].
  Tensor y = run1("Add", {in(f32({2, 3}, {0, 1, 2, 3, 4, 5})), in(f32({3}, {10, 20, 30}))});
  expect_tensor(y, DType::f32, {2, 3}, {10, 21, 32, 13, 24, 35});
}

TEST(Elementwise, MulBroadcastsBothWays) {
  // [2,1] * [1,3] -> [2,3]: outer product of [1, 2] and [3, 4, 5].
  Tensor y = run1("Mul", {in(f32({2, 1}, {1, 2})), in(f32({1, 3}, {3, 4, 5}))});
  expect_tensor(y, DType::f32, {2, 3}, {3, 4, 5, 6, 8, 10});
}

TEST(Elementwise, SubBroadcastsAScalarAndMiddleDims) {
  // [2,1,2] - [3,1]: out[i,j,k] = a[i,0,k] - b[j,0] -> shape [2,3,2].
  Tensor y = run1("Sub", {in(f32({2, 1, 2}, {1, 2, 3, 4})), in(f32({3, 1}, {0, 10, 100}))});
  expect_tensor(y, DType::f32, {2, 3, 2}, {1, 2, -9, -8, -99, -98, 3, 4, -7, -6, -97, -96});
  // A rank-0 operand broadcasts everywhere: 5 - [1, 2] = [4, 3].
  expect_tensor(run1("Sub", {in(f32({}, {5})), in(f32({2}, {1, 2}))}), DType::f32, {2}, {4, 3});
}

TEST(Elementwise, IncompatibleBroadcastNamesTheNode) {
  OneNode n("Add", {in(f32({2, 3}, std::vector<float>(6))), in(f32({4}, {1, 2, 3, 4}))}, {}, 1,
            "my_add");
  const std::string msg = error_of([&] { n.infer(); });
  EXPECT_NE(msg.find("Add 'my_add'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2,3]"), std::string::npos) << msg;
}

TEST(Elementwise, MixedDtypesAreRejected) {
  OneNode n("Add", {in(f32({2}, {1, 2})), in(i64({2}, {1, 2}))});
  EXPECT_NE(error_of([&] { n.infer(); }).find("same dtype"), std::string::npos);
}

TEST(Elementwise, IntegerDivisionTruncatesAndRejectsZero) {
  // C semantics: 7/2 = 3, -7/2 = -3 (toward zero), 7/-2 = -3.
  Tensor y = run1("Div", {in(i64({3}, {7, -7, 7})), in(i64({3}, {2, 2, -2}))});
  expect_tensor(y, DType::i64, {3}, {3, -3, -3});
  OneNode z("Div", {in(i64({1}, {1})), in(i64({1}, {0}))}, {}, 1, "div0");
  EXPECT_NE(error_of([&] { z.run(); }).find("integer division by zero"), std::string::npos);
}

TEST(Elementwise, Uint8ArithmeticWraps) {
  // 250 + 10 = 260 = 4 (mod 256); 3 - 5 = -2 = 254 (mod 256), like numpy uint8.
  Tensor a = typed(DType::u8, {2}, {250, 3});
  Tensor b = typed(DType::u8, {2}, {10, 5});
  expect_tensor(run1("Add", {in(a), in(b)}), DType::u8, {2}, {4, 8});
  expect_tensor(run1("Sub", {in(a), in(b)}), DType::u8, {2}, {240, 254});
}

TEST(Elementwise, ModFollowsDivisorSignUnlessFmod) {
  // fmod=0 (numpy mod): -7 mod 3 = 2, 7 mod -3 = -2, -7 mod -3 = -1.
  Tensor a = i64({3}, {-7, 7, -7});
  Tensor b = i64({3}, {3, -3, -3});
  expect_tensor(run1("Mod", {in(a), in(b)}), DType::i64, {3}, {2, -2, -1});
  // fmod=1 (C fmod, sign of the dividend): -7 % 3 = -1, 7 % -3 = 1, -7 % -3 = -1.
  expect_tensor(run1("Mod", {in(a), in(b)}, attrs({{"fmod", int64_t{1}}})), DType::i64, {3},
                {-1, 1, -1});
  // Floats need fmod=1: fmod(5.5, 2) = 1.5, fmod(-5.5, 2) = -1.5.
  expect_tensor(run1("Mod", {in(f32({2}, {5.5f, -5.5f})), in(f32({2}, {2, 2}))},
                     attrs({{"fmod", int64_t{1}}})),
                DType::f32, {2}, {1.5, -1.5});
  OneNode bad("Mod", {in(f32({1}, {1})), in(f32({1}, {1}))});
  EXPECT_NE(error_of([&] { bad.infer(); }).find("fmod=1"), std::string::npos);
}

TEST(Elementwise, PowMixedTypes) {
  // float base, int exponent: 2^3 = 8, 9^0.5 needs a float exponent -> use int 2: 9^2 = 81.
  expect_tensor(run1("Pow", {in(f32({2}, {2, 9})), in(i64({2}, {3, 2}))}), DType::f32, {2},
                {8, 81});
  // int base, int exponent: exact 3^4 = 81, 2^40 = 1099511627776 (beyond float precision).
  expect_tensor(run1("Pow", {in(i64({2}, {3, 2})), in(i64({2}, {4, 40}))}), DType::i64, {2},
                {81, 1099511627776.0});
  // int base, float exponent: pow in double, truncated toward zero: 2^1.5 = 2.83 -> 2.
  expect_tensor(run1("Pow", {in(i64({1}, {2})), in(f32({1}, {1.5f}))}), DType::i64, {1}, {2});
}

TEST(Elementwise, F16IsComputedInF32AndRoundedToNearestEven) {
  // 1 + 2^-11 lies exactly halfway between the f16 values 1 and 1 + 2^-10: ties to even -> 1.
  // 1 + 3*2^-11 is halfway between 1+2^-10 and 1+2^-9 -> even mantissa 1 + 2^-9.
  Tensor z = run1("Add", {in(f16({2}, {1, 1})), in(f16({2}, {0.00048828125f, 0.00146484375f}))});
  expect_tensor(z, DType::f16, {2}, {1.0, 1.001953125}, 0);
}

TEST(Elementwise, ComparisonsGiveBool) {
  Tensor a = f32({3}, {1, 2, 3});
  Tensor b = f32({1}, {2});
  expect_tensor(run1("Less", {in(a), in(b)}), DType::boolean, {3}, {1, 0, 0});
  expect_tensor(run1("GreaterOrEqual", {in(a), in(b)}), DType::boolean, {3}, {0, 1, 1});
  expect_tensor(run1("Equal", {in(boolean({2}, {1, 0})), in(boolean({2}, {1, 1}))}), DType::boolean,
                {2}, {1, 0});
}

TEST(Elementwise, LogicalOps) {
  Tensor a = boolean({4}, {0, 0, 1, 1});
  Tensor b = boolean({4}, {0, 1, 0, 1});
  expect_tensor(run1("And", {in(a), in(b)}), DType::boolean, {4}, {0, 0, 0, 1});
  expect_tensor(run1("Or", {in(a), in(b)}), DType::boolean, {4}, {0, 1, 1, 1});
  expect_tensor(run1("Xor", {in(a), in(b)}), DType::boolean, {4}, {0, 1, 1, 0});
  expect_tensor(run1("Not", {in(a)}), DType::boolean, {4}, {1, 1, 0, 0});
  OneNode bad("And", {in(f32({1}, {1})), in(f32({1}, {1}))});
  EXPECT_NE(error_of([&] { bad.infer(); }).find("bool"), std::string::npos);
}

TEST(Elementwise, Activations) {
  Tensor x = f32({4}, {-2, -0.5f, 0, 3});
  expect_tensor(run1("Relu", {in(x)}), DType::f32, {4}, {0, 0, 0, 3});
  // LeakyRelu alpha=0.1: -0.2, -0.05, 0, 3.
  expect_tensor(run1("LeakyRelu", {in(x)}, attrs({{"alpha", 0.1f}})), DType::f32, {4},
                {-0.2, -0.05, 0, 3});
  // HardSigmoid (alpha 0.2, beta 0.5): clamp(0.2x + 0.5, 0, 1) = 0.1, 0.4, 0.5, 1.
  expect_tensor(run1("HardSigmoid", {in(x)}), DType::f32, {4}, {0.1, 0.4, 0.5, 1});
  // HardSwish: x * clamp(x/6 + 1/2, 0, 1) = -2*(1/6), -0.5*(5/12), 0, 3*1.
  expect_tensor(run1("HardSwish", {in(x)}), DType::f32, {4}, {-1.0 / 3, -5.0 / 24, 0, 3});
  // Sigmoid(0) = 0.5; sigmoid(-2) = 1/(1+e^2) = 0.11920292; sigmoid(3) = 0.95257413.
  expect_tensor(run1("Sigmoid", {in(x)}), DType::f32, {4},
                {0.11920292, 1 / (1 + std::exp(0.5)), 0.5, 0.95257413});
  // Elu alpha 1: e^-2 - 1 = -0.86466472.
  expect_tensor(run1("Elu", {in(x)}), DType::f32, {4},
                {std::exp(-2.0) - 1, std::exp(-0.5) - 1, 0, 3});
  // Softplus(3) = log(1 + e^3) = 3.04858735; large inputs do not overflow: softplus(100) = 100.
  expect_tensor(run1("Softplus", {in(f32({2}, {3, 100}))}), DType::f32, {2}, {3.04858735, 100},
                1e-5);
  // Gelu(1) = 0.5 (1 + erf(1/sqrt 2)) = 0.84134475; tanh form: 0.84119199.
  expect_tensor(run1("Gelu", {in(f32({1}, {1}))}), DType::f32, {1}, {0.84134475});
  expect_tensor(run1("Gelu", {in(f32({1}, {1}))}, attrs({{"approximate", std::string("tanh")}})),
                DType::f32, {1}, {0.84119199});
  // Mish(1) = tanh(ln(1 + e)) = tanh(1.31326169) = 0.86509839; Celu(-1) (alpha 1) = e^-1 - 1.
  expect_tensor(run1("Mish", {in(f32({1}, {1}))}), DType::f32, {1}, {0.86509839});
  expect_tensor(run1("Celu", {in(f32({2}, {-1, 2}))}), DType::f32, {2}, {std::exp(-1.0) - 1, 2});
  // Sigmoid of a large negative number stays finite and positive.
  Tensor s = run1("Sigmoid", {in(f32({1}, {-100}))});
  EXPECT_GE(s.data<float>()[0], 0.0f);
  EXPECT_LT(s.data<float>()[0], 1e-40f);
}

TEST(Elementwise, RoundIsHalfToEven) {
  expect_tensor(run1("Round", {in(f32({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f}))}), DType::f32,
                {6}, {0, 2, 2, 0, -2, 2});
}

TEST(Elementwise, FloatOnlyOpRejectsIntegers) {
  OneNode n("Sqrt", {in(i64({1}, {4}))}, {}, 1, "sq");
  const std::string msg = error_of([&] { n.infer(); });
  EXPECT_NE(msg.find("Sqrt 'sq'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float"), std::string::npos) << msg;
}

TEST(Elementwise, ClipWithOptionalBounds) {
  Tensor x = f32({4}, {-3, -1, 1, 3});
  // min -2, max 2.
  expect_tensor(run1("Clip", {in(x), cst(f32({}, {-2})), cst(f32({}, {2}))}), DType::f32, {4},
                {-2, -1, 1, 2});
  // Only max (min omitted).
  expect_tensor(run1("Clip", {in(x), none(), cst(f32({}, {0}))}), DType::f32, {4}, {-3, -1, 0, 0});
  // int8 with only min.
  expect_tensor(
      run1("Clip", {in(typed(DType::i8, {3}, {-128, 0, 127})), in(typed(DType::i8, {}, {-5}))}),
      DType::i8, {3}, {-5, 0, 127});
  // min > max: every output is max (min applied first, then max).
  expect_tensor(run1("Clip", {in(x), cst(f32({}, {2})), cst(f32({}, {1}))}), DType::f32, {4},
                {1, 1, 1, 1});
  OneNode bad("Clip", {in(x), in(f32({2}, {0, 1}))});
  EXPECT_NE(error_of([&] { bad.infer(); }).find("scalar"), std::string::npos);
}

TEST(Elementwise, PReluBroadcastsSlopeOverChannels) {
  // X [1,2,2] with slope [2,1] (per channel): negatives times 0.5 in channel 0, 3 in channel 1.
  Tensor y = run1("PRelu", {in(f32({1, 2, 2}, {-2, 4, -1, 5})), in(f32({2, 1}, {0.5f, 3}))});
  expect_tensor(y, DType::f32, {1, 2, 2}, {-1, 4, -3, 5});
  OneNode bad("PRelu", {in(f32({2}, {1, 2})), in(f32({3}, {1, 2, 3}))});
  EXPECT_NE(error_of([&] { bad.infer(); }).find("slope"), std::string::npos);
}

TEST(Elementwise, VariadicOpsBroadcast) {
  Tensor a = f32({2, 1}, {1, 6});
  Tensor b = f32({3}, {2, 4, 5});
  Tensor c = f32({}, {3});
  // Sum: a[i] + b[j] + 3.
  expect_tensor(run1("Sum", {in(a), in(b), in(c)}), DType::f32, {2, 3}, {6, 8, 9, 11, 13, 14});
  // Max: max(a[i], b[j], 3).
  expect_tensor(run1("Max", {in(a), in(b), in(c)}), DType::f32, {2, 3}, {3, 4, 5, 6, 6, 6});
  // Min with one input is the identity.
  expect_tensor(run1("Min", {in(b)}), DType::f32, {3}, {2, 4, 5});
  // Mean of [1,6] and [3,2] = [2, 4].
  expect_tensor(run1("Mean", {in(f32({2}, {1, 6})), in(f32({2}, {3, 2}))}), DType::f32, {2},
                {2, 4});
  // Max propagates NaN like numpy.maximum.
  Tensor m = run1("Max", {in(f32({2}, {NAN, 1})), in(f32({2}, {1, 2}))});
  EXPECT_TRUE(std::isnan(m.data<float>()[0]));
  EXPECT_EQ(m.data<float>()[1], 2.0f);
}

TEST(Elementwise, WhereBroadcastsAllThree) {
  // cond [2,1], X [1,2], Y scalar: row 0 takes X, row 1 takes Y.
  Tensor y =
      run1("Where", {in(boolean({2, 1}, {1, 0})), in(i64({1, 2}, {7, 8})), in(i64({}, {-1}))});
  expect_tensor(y, DType::i64, {2, 2}, {7, 8, -1, -1});
}

TEST(Elementwise, CastSemantics) {
  // float -> int32 truncates toward zero.
  Tensor c = run1("Cast", {in(f32({4}, {-1.7f, -0.2f, 0.9f, 2.5f}))},
                  attrs({{"to", int64_t(DType::i32)}}));
  expect_tensor(c, DType::i32, {4}, {-1, 0, 0, 2});
  // int64 -> uint8 wraps: 300 = 44 (mod 256), -1 = 255.
  expect_tensor(run1("Cast", {in(i64({2}, {300, -1}))}, attrs({{"to", int64_t(DType::u8)}})),
                DType::u8, {2}, {44, 255});
  // float -> bool is (x != 0); bool -> float is 0/1.
  expect_tensor(
      run1("Cast", {in(f32({3}, {0, -0.5f, 2}))}, attrs({{"to", int64_t(DType::boolean)}})),
      DType::boolean, {3}, {0, 1, 1});
  // f32 -> f16 rounds to nearest even: 1 + 2^-11 -> 1.
  expect_tensor(
      run1("Cast", {in(f32({1}, {1.00048828125f}))}, attrs({{"to", int64_t(DType::f16)}})),
      DType::f16, {1}, {1.0}, 0);
  // CastLike takes the target type from input 1.
  expect_tensor(run1("CastLike", {in(f32({1}, {3.9f})), in(i64({1}, {0}))}), DType::i64, {1}, {3});
  // Strings are not supported.
  OneNode s("Cast", {in(f32({1}, {1}))}, attrs({{"to", int64_t(DType::string)}}));
  EXPECT_TRUE(throws_unsupported([&] { s.infer(); }));
}

TEST(Elementwise, DropoutIsIdentityInInference) {
  Tensor x = f32({3}, {1, 2, 3});
  OneNode n("Dropout", {in(x), cst(f32({}, {0.5f}))}, {}, 2);
  auto outs = n.run();
  expect_tensor(outs[0], DType::f32, {3}, {1, 2, 3});
  expect_tensor(outs[1], DType::boolean, {3}, {1, 1, 1});
  // Training mode with ratio > 0 is random: unsupported. Ratio 0 is the identity.
  OneNode t("Dropout", {in(x), cst(f32({}, {0.5f})), cst(boolean({}, {1}))});
  EXPECT_TRUE(throws_unsupported([&] { t.run(); }));
  OneNode z("Dropout", {in(x), cst(f32({}, {0})), cst(boolean({}, {1}))});
  expect_tensor(z.run()[0], DType::f32, {3}, {1, 2, 3});
}

TEST(Elementwise, IsInfAndIsNaN) {
  Tensor x = f32({4}, {INFINITY, -INFINITY, NAN, 1});
  expect_tensor(run1("IsNaN", {in(x)}), DType::boolean, {4}, {0, 0, 1, 0});
  expect_tensor(run1("IsInf", {in(x)}), DType::boolean, {4}, {1, 1, 0, 0});
  expect_tensor(run1("IsInf", {in(x)}, attrs({{"detect_negative", int64_t{0}}})), DType::boolean,
                {4}, {1, 0, 0, 0});
}

TEST(Elementwise, IntegerUnaryOps) {
  Tensor x = typed(DType::i32, {3}, {-5, 0, 7});
  expect_tensor(run1("Abs", {in(x)}), DType::i32, {3}, {5, 0, 7});
  expect_tensor(run1("Neg", {in(x)}), DType::i32, {3}, {5, 0, -7});
  expect_tensor(run1("Sign", {in(x)}), DType::i32, {3}, {-1, 0, 1});
  expect_tensor(run1("Relu", {in(x)}), DType::i32, {3}, {0, 0, 7});
}

TEST(Elementwise, BroadcastLoopCoversManyShapes) {
  // Cross-check the strided loop against index arithmetic on rank-4 operands with broadcast dims
  // in every position: out[i,j,k,l] = a[i,0,k,0] + b[j,1->0,l].
  const Shape sa = {2, 1, 3, 1}, sb = {4, 1, 5};
  std::vector<float> va(6), vb(20);
  for (size_t i = 0; i < va.size(); ++i) va[i] = static_cast<float>(i * 100);
  for (size_t i = 0; i < vb.size(); ++i) vb[i] = static_cast<float>(i);
  Tensor y = run1("Add", {in(f32(sa, va)), in(f32(sb, vb))});
  ASSERT_EQ(y.shape(), (Shape{2, 4, 3, 5}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k)
        for (int l = 0; l < 5; ++l)
          EXPECT_EQ(y.data<float>()[((i * 4 + j) * 3 + k) * 5 + l], va[i * 3 + k] + vb[j * 5 + l]);
}

}  // namespace
}  // namespace tessel::testing_ops
