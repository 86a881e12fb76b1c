// The NPU's derived tolerances (compiler/driver/compare.h): the rounding counts they start from,
// how they follow the computation, and the per-kernel check on the golden real models
// (tests/data/cases), where every kernel must be within its own bound and every such bound must
// be tight enough that a 1% error of the kernel fails.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "compiler/driver/compare.h"
#include "compiler/driver/runner.h"
#include "compiler/frontend/onnx_import.h"
#include "tests/test_compare.h"
#include "tests/test_graph_builder.h"

namespace tessel::testing {
namespace {

const std::string kSrc = TESSEL_SOURCE_DIR;
constexpr double u = 1.0 / 2048;  // fp16 unit roundoff

npu::HwConfig npu_4core() { return npu::load_hw_config(kSrc + "/hw_configs/npu_4core.yaml"); }

/// npu_roundings of the single node `op` over x [4, 37] (and a [37] second operand for binary
/// ops).
double roundings(const std::string& op, int inputs = 1, Attributes a = {}) {
  GraphBuilder b;
  std::vector<Value*> in = {b.input("x", {4, 37})};
  if (inputs == 2) in.push_back(b.input("y", {37}));
  b.node(op, in, std::move(a));
  return driver::npu_roundings(*b.g->nodes().back());
}

// The counts follow the vector instructions tensorize_vector.cpp emits (compare.h).
TEST(NpuRoundings, CountedFromEachOpsCompute) {
  EXPECT_EQ(roundings("Relu"), 0);  // max(x, 0): one of its operands
  EXPECT_EQ(roundings("Abs"), 0);
  EXPECT_EQ(roundings("Add", 2), 1);
  EXPECT_EQ(roundings("Exp"), 1);
  EXPECT_EQ(roundings("Sigmoid"), 3);  // vexp, vadds, vrec
  EXPECT_EQ(roundings("Tanh"), 4);
  EXPECT_EQ(roundings("Erf"), 14);
  EXPECT_EQ(roundings("LeakyRelu", 1, attrs({{"alpha", 0.1f}})), 2);  // x alpha, + max(x, 0)
  // 0.5 x (1 + erf(x / sqrt 2)): x / sqrt 2 (1), erf (14), + 1 (1), x (0.5 x) (1).
  EXPECT_EQ(roundings("Gelu"), 17);
  // Softmax over the last axis (37): exp(x - max) (2), the fp32 sum of 37 terms (1 + 37/8192),
  // the division (1).
  EXPECT_DOUBLE_EQ(roundings("Softmax", 1, attrs({{"axis", int64_t{-1}}})), 4 + 37.0 / 8192);
  // Views round nothing.
  GraphBuilder b;
  Value* x = b.input("x", {4, 37});
  b.node("Reshape", {x, b.constant("s", Tensor::from_int64s({2}, {37, 4}))});
  EXPECT_EQ(driver::npu_roundings(*b.g->nodes().back()), 0);
}

/// A precision plan with every float value of `g` in fp16 (as the NPU stored everything before
/// the mixed-precision plan of compiler/backend/npu/precision.h; still what a value read only by
/// cube kernels, and the chain after one, is stored in): the fp16 derivation on a small graph.
std::map<std::string, DType> all_fp16(const Graph& g) {
  std::map<std::string, DType> plan;
  for (const auto& v : g.values())
    if (dtype_is_float(v->dtype)) plan[v->name] = DType::f16;
  return plan;
}

TEST(NpuTolerance, AnExactOpOnFp16InputsGetsTheFloor) {
  // Inputs exact in fp16 (multiples of 1/4 below 2) and Relu: nothing rounds, so no run moves the
  // output: atol is the floor (fp16's smallest normal, 2^-14), rtol u.
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* y = b.node("Relu", {x});
  auto g = b.finish({y});
  const std::map<std::string, Tensor> in = {
      {"x", Tensor::from_floats({2, 3}, {-1, 0.25f, 1.5f, -0.75f, 1, 0.5f})}};
  const auto plan = all_fp16(*g);
  const auto t = driver::npu_tolerances(npu_4core(), *g, in, nullptr, &plan);
  EXPECT_EQ(t.at(y->name).atol, std::ldexp(1.0, -14));
  EXPECT_EQ(t.at(y->name).rtol, u);
  // With the NPU's own plan a vector kernel on an fp32 input is fp32: fp32's smallest normal,
  // rtol 2u = 2^-23.
  const auto f = driver::npu_tolerances(npu_4core(), *g, in);
  EXPECT_EQ(f.at(y->name).atol, std::ldexp(1.0, -126));
  EXPECT_EQ(f.at(y->name).rtol, std::ldexp(1.0, -23));
}

// Where storage alone moves an output further than 128 u of its scale, the bound is capped there
// (compare.h): Softmax of [10000, 10001, 10002, 10003] (ONNX's softmax_large_number) sees four
// equal fp16 inputs (the spacing at 8192..16384 is 8), so the NPU answers 0.25 each instead of
// 0.032 .. 0.644: the derivation measures that move (about 0.4) and the cap, 128 u x 0.644 +
// 128 x 2^-24 = 0.0403, keeps such a result from passing.
TEST(NpuTolerance, CappedWhereStorageAloneDecidesTheOutput) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4});
  Value* y = b.node("Softmax", {x}, attrs({{"axis", int64_t{-1}}}));
  auto g = b.finish({y});
  const auto plan = all_fp16(*g);
  const std::map<std::string, Tensor> large = {
      {"x", Tensor::from_floats({1, 4}, {10000, 10001, 10002, 10003})}};
  const auto t = driver::npu_tolerances(npu_4core(), *g, large, nullptr, &plan);
  const double max_expected = 1 / (1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0));
  EXPECT_NEAR(t.at(y->name).atol, 128 * (u * max_expected + std::ldexp(1.0, -24)), 1e-6);
  EXPECT_NE(t.at(y->name).basis.find("capped at 128 u"), std::string::npos);
  // The NPU's plan keeps this softmax in fp32 (its input is an fp32 graph input): the inputs are
  // exact, and the bound is a few fp32 roundings of 0.644, far below the cap.
  const auto f32 = driver::npu_tolerances(npu_4core(), *g, large);
  EXPECT_LT(f32.at(y->name).atol, 1e-5);
  EXPECT_EQ(f32.at(y->name).basis.find("capped"), std::string::npos);
  // The same softmax of inputs fp16 represents is far below the cap.
  const auto small = driver::npu_tolerances(
      npu_4core(), *g, {{"x", Tensor::from_floats({1, 4}, {1, 2, 3, 4})}}, nullptr, &plan);
  EXPECT_LT(small.at(y->name).atol, 0.01);
  EXPECT_EQ(small.at(y->name).basis.find("capped"), std::string::npos);
}

// The bound follows how the model propagates rounding. z = a - b of inputs in [-S, S) is off by
// the inputs' rounding, u |a| + u |b| ~ u S, also where z is near 0 -- and there a sigmoid's slope
// is 1/4, so y = Sigmoid(z) is off by up to ~ u S / 2: ten times larger inputs, a bound several
// times larger, although the output's range is the same [0, 1].
TEST(NpuTolerance, FollowsAmplificationThroughTheModel) {
  const auto hw = npu_4core();
  auto atol = [&](float s) {
    GraphBuilder b;
    Value* a = b.input("a", {16, 64});
    Value* c = b.input("b", {16, 64});
    Value* y = b.node("Sigmoid", {b.node("Sub", {a, c})});
    auto g = b.finish({y});
    const std::map<std::string, Tensor> in = {{"a", random_tensor({16, 64}, 1, -s, s)},
                                              {"b", random_tensor({16, 64}, 2, -s, s)}};
    const auto plan = all_fp16(*g);  // the fp16 derivation (an fp32 plan has no inputs' rounding)
    return driver::npu_tolerances(hw, *g, in, nullptr, &plan).at(y->name).atol;
  };
  const double small = atol(4), large = atol(40);
  std::cout << "  Sigmoid(a - b) bound with |a|, |b| < 4: " << small << ", < 40: " << large << "\n";
  EXPECT_GT(large, 3 * small);
  EXPECT_GT(large, 0.25 * u * 40);  // the propagated rounding, at least a quarter of it
  EXPECT_EQ(atol(40), large);       // seeded: the same runs, the same bound
}

struct CaseData {
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> inputs;
};

CaseData load_case(const std::string& name) {
  const std::string dir = kSrc + "/tests/data/cases/" + name;
  CaseData c;
  const Tensor in = frontend::load_tensor_pb(dir + "/test_data_set_0/input_0.pb");
  const std::string input_name = name == "hello_deepa" ? "onnx::Flatten_0" : "x";
  c.inputs[input_name] = in;
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::npu);
  c.graph = driver::load_model(dir + "/model.onnx", {{input_name, in.shape()}}, passes);
  return c;
}

class KernelChecks : public ::testing::TestWithParam<std::string> {};

// Every kernel of the model, run on the reference with the inputs the NPU read, is within its
// own derived bound, and that bound is below 1% of the kernel's largest output, so a 1% error of
// any one op would fail (kernels whose outputs all lie below 100 x fp16's smallest normal, where
// the format keeps no relative precision, are counted apart).
TEST_P(KernelChecks, EveryKernelWithinItsOwnBoundWhichABugOfOnePercentExceeds) {
  CaseData c = load_case(GetParam());
  const auto hw = npu_4core();
  driver::RunOptions o;
  o.read_all_values = true;
  const auto run = driver::run_model(*c.graph, driver::Target::npu, &hw, c.inputs, o);
  const auto checks = driver::kernel_checks(hw, *c.graph, c.inputs, run.outputs);
  ASSERT_GT(checks.size(), 3u);
  double worst_ratio = 0, worst_bound = 0;
  int tiny = 0;
  for (const auto& k : checks) {
    EXPECT_TRUE(k.check.pass) << k.node << " (" << k.ops << ") " << k.value << ": error / bound "
                              << k.check.worst_ratio << "; " << k.check.tolerance.basis;
    worst_ratio = std::max(worst_ratio, k.check.worst_ratio);
    const double m = k.check.max_expected;
    if (m < 100 * std::ldexp(1.0, -14)) {
      ++tiny;
      continue;
    }
    const double at_max = k.check.tolerance.atol + k.check.tolerance.rtol * m;
    worst_bound = std::max(worst_bound, at_max / m);
    EXPECT_LT(at_max, 0.01 * m) << k.node << " (" << k.ops
                                << "): its bound is loose: " << k.check.tolerance.basis;
  }
  std::cout << "  " << GetParam() << ": " << checks.size() << " kernels, largest error / bound "
            << worst_ratio << ", largest bound " << worst_bound << " of the kernel's max|y| ("
            << tiny << " kernels with tiny outputs)\n";
}

INSTANTIATE_TEST_SUITE_P(Cases, KernelChecks,
                         ::testing::Values("ppocr_cls_b1", "hello_deepa", "ppocr_rec_48x320",
                                           "ppocr_det_64x96_strokes"));

// The per-kernel check catches a 1% error in any one kernel of a real model: each kernel's NPU
// result of hello_deepa scaled by 1.01 in turn fails that kernel's check, the others still pass.
TEST(KernelChecks, AOnePercentErrorInAnyOneKernelFailsIt) {
  CaseData c = load_case("hello_deepa");
  const auto hw = npu_4core();
  driver::RunOptions o;
  o.read_all_values = true;
  const auto run = driver::run_model(*c.graph, driver::Target::npu, &hw, c.inputs, o);
  const auto clean = driver::kernel_checks(hw, *c.graph, c.inputs, run.outputs);
  ASSERT_EQ(clean.size(), 5u);
  for (const auto& k : clean) {
    auto values = run.outputs;
    Tensor& t = values.at(k.value);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, 1.01 * t.get_as_double(i));
    for (const auto& r : driver::kernel_checks(hw, *c.graph, c.inputs, values))
      if (r.value == k.value) {
        EXPECT_FALSE(r.check.pass) << k.value << " x 1.01 still passes";
      }
  }
}

}  // namespace
}  // namespace tessel::testing
