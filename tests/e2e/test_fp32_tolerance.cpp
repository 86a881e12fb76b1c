// The fp32 tolerance of `tessel check` against independent data (compiler/driver/compare.h,
// fp32_tolerances): the rounding counts it starts from, the fixed tolerance where a model does not
// amplify rounding, and a widened atol, still tight, where it does.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/driver/compare.h"
#include "tests/test_graph_builder.h"

namespace tessel::testing {
namespace {

/// fp32_roundings of the single node `op` over x [4, 37] (and y for binary ops).
double roundings(const std::string& op, const Shape& y_shape = {}, Attributes a = {}) {
  GraphBuilder b;
  std::vector<Value*> in = {b.input("x", {4, 37})};
  if (!y_shape.empty()) in.push_back(b.input("y", y_shape));
  b.node(op, in, std::move(a));
  return driver::fp32_roundings(*b.g->nodes().back());
}

TEST(Fp32Roundings, SumsRoundAtEveryAddition) {
  EXPECT_EQ(roundings("Relu"), 0);
  EXPECT_EQ(roundings("Add", {37}), 1);
  EXPECT_EQ(roundings("Sigmoid"), 3);
  // x [4, 37] x y [37, 5]: one rounding per product, 36 additions of 37 terms.
  EXPECT_EQ(roundings("MatMul", {37, 5}), 37);
  // exp(x - max) (2), the sum of 37 terms (36), the division (1). The NPU's count for the same
  // node is 4 + 37 / 8192 (fp32 accumulation of fp16 terms, one fp16 rounding).
  EXPECT_EQ(roundings("Softmax", {}, attrs({{"axis", int64_t{-1}}})), 39);
}

TEST(Fp32Tolerance, TheFixedToleranceWhereTheModelDoesNotAmplify) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* w = b.constant("w", Tensor::from_floats({3, 2}, {0.5f, -1, 0.25f, 2, -0.75f, 1}));
  Value* y = b.node("Sigmoid", {b.node("MatMul", {x, w})});
  auto g = b.finish({y});
  const auto t = driver::fp32_tolerances(
      *g, {{"x", Tensor::from_floats({2, 3}, {-1, 0.25f, 1.5f, -0.75f, 1, 0.5f})}});
  const driver::Tolerance fixed = driver::reference_tolerance();
  EXPECT_EQ(t.at(y->name).atol, fixed.atol);
  EXPECT_EQ(t.at(y->name).rtol, fixed.rtol);
  EXPECT_EQ(t.at(y->name).basis, fixed.basis);
}

// (x + 4096) - 4096 for x in [0, 1): the sum rounds to a spacing of 2^-11 near 4096, so any fp32
// implementation returns x only to about 2^-12, far outside atol 1e-5 for the small elements.
// The derived atol covers that and stays far below the output's scale: a result off by 1e-2
// still fails.
TEST(Fp32Tolerance, WidenedWhereTheModelAmplifiesRoundingAndStillTight) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 64});
  Value* c = b.constant("c", Tensor::from_floats({1}, {4096}));
  Value* y = b.node("Sub", {b.node("Add", {x, c}), c});
  auto g = b.finish({y});
  std::vector<float> xs(64), fp32(64), off(64);
  for (int i = 0; i < 64; ++i) {
    xs[i] = static_cast<float>(i) / 64.0f + 1.0f / 4096;
    fp32[i] = (xs[i] + 4096.0f) - 4096.0f;  // what an fp32 implementation computes
    off[i] = xs[i] + 0.01f;
  }
  const Tensor in = Tensor::from_floats({1, 64}, xs);
  const auto t = driver::fp32_tolerances(*g, {{"x", in}});
  const driver::Tolerance& tol = t.at(y->name);
  EXPECT_GT(tol.atol, 1e-5);
  EXPECT_LT(tol.atol, 5e-3);
  EXPECT_EQ(tol.rtol, 1e-3);
  EXPECT_NE(tol.basis.find("widened"), std::string::npos) << tol.basis;
  // The fixed tolerance rejects the fp32 result of the same graph; the derived one accepts it.
  const Tensor fp32_out = Tensor::from_floats({1, 64}, fp32);
  EXPECT_FALSE(driver::compare_output("y", fp32_out, in, driver::reference_tolerance()).pass);
  EXPECT_TRUE(driver::compare_output("y", fp32_out, in, tol).pass);
  EXPECT_FALSE(driver::compare_output("y", Tensor::from_floats({1, 64}, off), in, tol).pass);
}

// Where rounding alone moves an output by its whole scale -- (x + 2^23) - 2^23 keeps nothing of x
// in [0, 1) but whether it rounds up -- the bound is capped at rtol x max|expected|.
TEST(Fp32Tolerance, CappedAtRtolOfTheOutputsScale) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 64});
  Value* c = b.constant("c", Tensor::from_floats({1}, {8388608}));
  Value* y = b.node("Sub", {b.node("Add", {x, c}), c});
  auto g = b.finish({y});
  std::vector<float> xs(64);
  for (int i = 0; i < 64; ++i) xs[i] = static_cast<float>(i) / 64.0f;
  const auto t = driver::fp32_tolerances(*g, {{"x", Tensor::from_floats({1, 64}, xs)}});
  const driver::Tolerance& tol = t.at(y->name);
  EXPECT_DOUBLE_EQ(tol.atol, 1e-3);  // max|expected| = 1 (the values that rounded up)
  EXPECT_NE(tol.basis.find("capped"), std::string::npos) << tol.basis;
}

}  // namespace
}  // namespace tessel::testing
