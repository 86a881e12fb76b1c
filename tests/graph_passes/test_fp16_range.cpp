// fp16_range (passes/graph/fp16_range.cpp): a contraction whose operand or result reaches 2^15 on
// the calibration inputs computes on its operand times 2^-k and is scaled back by 2^k in fp32,
// k derived by hand below; other nodes reaching 2^15 are marked fp32. The rewritten graph computes
// the original values bit for bit (power-of-two scaling is exact), and on the NPU it turns a
// power spectrum that overflows fp16 (an STFT-like MatMul, Pow 2, a mel-like MatMul: the shape of
// tests/data/cases/oww_melspectrogram) from inf into values within the derived fp16 bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "compiler/backend/npu/precision.h"
#include "compiler/driver/compare.h"
#include "compiler/driver/runner.h"
#include "compiler/ops/reference.h"
#include "npu_model/hw_config.h"
#include "passes/graph/graph_passes.h"
#include "tests/test_graph_builder.h"

namespace tessel {
namespace {

Tensor filled(const Shape& s, float v) {
  return Tensor::from_floats(s, std::vector<float>(static_cast<size_t>(shape_numel(s)), v));
}

/// x [2, 16] -> MatMul(W1 [16, 8]) -> Pow 2 -> MatMul(W2 [8, 4]) -> y.
std::unique_ptr<Graph> power_spectrum_graph(const Tensor& w1, const Tensor& w2) {
  testing::GraphBuilder b;
  Value* x = b.input("x", {2, 16});
  Value* s = b.node("MatMul", {x, b.constant("w1", w1)});
  Value* p = b.node("Pow", {s, b.constant("two", Tensor::scalar_f32(2.f))});
  Value* y = b.node("MatMul", {p, b.constant("w2", w2)});
  return b.finish({y});
}

const Node* node_named(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n->name == name) return n.get();
  return nullptr;
}

TEST(Fp16Range, ScalesTheMatMulOperandByAnExactPowerOfTwo) {
  // x = 1000, W1 = 1: s = 16 x 1000 = 16000 (below 2^15: MatMul_0 unchanged); Pow: 2.56e8
  // (marked fp32); W2 = 0.5: y = 8 x 0.5 x 2.56e8 = 1.024e9. For the second MatMul
  // max(2.56e8, 1.024e9) / 2^14 = 62500 and log2(62500) = 15.93, so k = 16: the scaled operand is
  // 2.56e8 / 2^16 = 3906.25, the scaled result 15625, both below 2^14.
  auto g = power_spectrum_graph(filled({16, 8}, 1.f), filled({8, 4}, 0.5f));
  const std::map<std::string, Tensor> in = {{"x", filled({2, 16}, 1000.f)}};
  const auto want = ops::run_reference(*g, in);
  const auto ranges = graph_passes::calibrated_max_abs(*g, in);
  EXPECT_EQ(ranges.at("x"), 1000.0);
  const std::string y = g->outputs[0]->name;
  EXPECT_EQ(ranges.at(y), 1.024e9);
  const auto changes = graph_passes::fp16_range(*g, ranges);
  // The MatMul (its scale-back Mul marked fp32: "in fp32") and the Pow marked fp32.
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_NE(changes[0].find("operand scaled by 2^-16, result by 2^16 in fp32"), std::string::npos)
      << changes[0];
  EXPECT_NE(changes[1].find("Pow"), std::string::npos) << changes[1];
  std::vector<std::string> ops;
  for (const auto& n : g->nodes()) ops.push_back(n->op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"MatMul", "Pow", "Mul", "MatMul", "Mul"}));
  const Node* pre = g->nodes()[2].get();
  const Node* mm = g->nodes()[3].get();
  const Node* post = g->nodes()[4].get();
  EXPECT_EQ(pre->input(1)->constant->get_as_double(0), std::ldexp(1.0, -16));
  EXPECT_EQ(mm->input(0), pre->outputs[0]);
  EXPECT_EQ(post->input(0), mm->outputs[0]);
  EXPECT_EQ(post->input(1)->constant->get_as_double(0), 65536.0);
  EXPECT_EQ(post->outputs[0]->name, y);  // the graph output keeps its name
  EXPECT_TRUE(post->attrs.has(graph_passes::kNpuFp32Attr));
  EXPECT_TRUE(g->nodes()[1]->attrs.has(graph_passes::kNpuFp32Attr));  // Pow: 2.56e8
  EXPECT_FALSE(g->nodes()[0]->attrs.has(graph_passes::kNpuFp32Attr));
  const auto scaled = graph_passes::calibrated_max_abs(*g, in);
  EXPECT_EQ(scaled.at(pre->outputs[0]->name), 3906.25);
  EXPECT_EQ(scaled.at(mm->outputs[0]->name), 15625.0);
  const auto plan = npu_backend::float_storage_plan(*g, DType::f16);
  EXPECT_EQ(plan.at(g->nodes()[1]->outputs[0]->name), DType::f32);
  EXPECT_EQ(plan.at(mm->outputs[0]->name), DType::f16);  // the cube's result, below 2^14
  EXPECT_EQ(plan.at(y), DType::f32);
  const auto got = ops::run_reference(*g, in);
  EXPECT_EQ(got.at(y).get_as_double(0), 1.024e9);
  EXPECT_EQ(0, std::memcmp(got.at(y).raw(), want.at(y).raw(), want.at(y).nbytes()));
}

TEST(Fp16Range, ConvBiasScaledWithTheInput) {
  // x = 4000 everywhere, a 3x3 all-ones kernel with pads 1, bias {100, -100}: interior outputs
  // 9 x 4000 + 100 = 36100 >= 2^15; 36100 / 2^14 = 2.2, k = 2: the bias becomes {25, -25}.
  testing::GraphBuilder b;
  Value* x = b.input("x", {1, 1, 4, 4});
  Value* bias = b.constant("bias", Tensor::from_floats({2}, {100.f, -100.f}));
  Value* y = b.node("Conv", {x, b.constant("w", filled({2, 1, 3, 3}, 1.f)), bias},
                    testing::attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  auto g = b.finish({y});
  const std::map<std::string, Tensor> in = {{"x", filled({1, 1, 4, 4}, 4000.f)}};
  const auto want = ops::run_reference(*g, in);
  const auto changes = graph_passes::fp16_range(*g, graph_passes::calibrated_max_abs(*g, in));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_NE(changes[0].find("2^-2"), std::string::npos) << changes[0];
  const Node* conv = g->nodes()[1].get();
  ASSERT_EQ(conv->op_type, "Conv");
  EXPECT_EQ(conv->input(2)->constant->get_as_double(0), 25.0);
  EXPECT_EQ(conv->input(2)->constant->get_as_double(1), -25.0);
  const auto got = ops::run_reference(*g, in);
  EXPECT_EQ(got.at(y->name).get_as_double(5), 36100.0);  // (1, 1): interior
  EXPECT_EQ(0,
            std::memcmp(got.at(y->name).raw(), want.at(y->name).raw(), want.at(y->name).nbytes()));
}

TEST(Fp16Range, InsertedMulsRunUnderTheContractionsBranchGuard) {
  // A MatMul of an If branch (guard_branches: it runs when bool %g is true) rescaled: both Muls
  // carry its guard, so the NPU skips them with it.
  testing::GraphBuilder b;
  Value* x = b.input("x", {2, 16});
  b.input("g", {}, DType::boolean);
  Value* p = b.node("Pow", {b.node("MatMul", {x, b.constant("w1", filled({16, 8}, 1.f))}),
                            b.constant("two", Tensor::scalar_f32(2.f))});
  Value* y = b.node("MatMul", {p, b.constant("w2", filled({8, 4}, 0.5f))});
  auto g = b.finish({y});
  Node* mm = y->producer;
  mm->attrs.set(graph_passes::kBranchGuardAttr, std::string("g"));
  Tensor on(DType::boolean, {});
  on.set_from_double(0, 1);
  const std::map<std::string, Tensor> in = {{"x", filled({2, 16}, 1000.f)}, {"g", on}};
  graph_passes::fp16_range(*g, graph_passes::calibrated_max_abs(*g, in));
  int guarded = 0;
  for (const auto& n : g->nodes())
    if (n->op_type == "Mul") {
      ASSERT_TRUE(n->attrs.has(graph_passes::kBranchGuardAttr)) << n->name;
      EXPECT_EQ(graph_passes::branch_guard(*g, *n)->name, "g");
      ++guarded;
    }
  EXPECT_EQ(guarded, 2);
}

TEST(Fp16Range, BelowTheLimitNothingChanges) {
  auto g = power_spectrum_graph(filled({16, 8}, 1.f), filled({8, 4}, 0.5f));
  // x = 1: s = 16, Pow 256, y = 8 x 0.5 x 256 = 1024, all below 2^15.
  const std::map<std::string, Tensor> small = {{"x", filled({2, 16}, 1.f)}};
  EXPECT_TRUE(graph_passes::fp16_range(*g, graph_passes::calibrated_max_abs(*g, small)).empty());
  EXPECT_EQ(g->nodes().size(), 3u);
}

TEST(Fp16Range, PowerSpectrumOnTheNpuWithinTheDerivedBound) {
  // |x| < 3000 (the melspectrogram case's input range), W1 in [-1, 1): |s| up to ~2e4, s^2 up to
  // ~4e8: fp16 (largest 65504) overflows at the Pow without the pass; with it the Pow runs in
  // fp32, the second MatMul reads its operand times 2^-k in fp16 and y comes back in fp32,
  // within the bound npu_tolerances derives on the rewritten graph.
  const Tensor w1 = testing::random_tensor({16, 8}, 11, -1.f, 1.f);
  const Tensor w2 = testing::random_tensor({8, 4}, 12, 0.f, 1.f);
  const std::map<std::string, Tensor> in = {
      {"x", testing::random_tensor({2, 16}, 13, -3000.f, 3000.f)}};
  const npu::HwConfig hw =
      npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml");
  auto before = power_spectrum_graph(w1, w2);
  const std::string y = before->outputs[0]->name;
  const auto plain = driver::run_model(*before, driver::Target::npu, &hw, in).outputs.at(y);
  bool overflow = false;
  for (int64_t i = 0; i < plain.numel(); ++i) overflow |= std::isinf(plain.get_as_double(i));
  EXPECT_TRUE(overflow) << "without fp16_range the fp16 Pow overflows";

  auto g = power_spectrum_graph(w1, w2);
  ASSERT_FALSE(graph_passes::fp16_range(*g, graph_passes::calibrated_max_abs(*g, in)).empty());
  std::map<std::string, Tensor> want;
  const auto tol = driver::npu_tolerances(hw, *g, in, &want);
  const auto npu = driver::run_model(*g, driver::Target::npu, &hw, in).outputs.at(y);
  const auto c = driver::compare_output(y, npu, want.at(y), tol.at(y));
  EXPECT_TRUE(c.pass) << "max abs error " << c.max_abs_error << ", atol " << tol.at(y).atol
                      << ", max |expected| " << c.max_expected;
  EXPECT_GT(c.max_expected, 65504.0);
  // The bound is the derived one (fp32 storage of y, fp16 operands), not the ceiling.
  EXPECT_LT(tol.at(y).atol, 1e-2 * c.max_expected);
}

}  // namespace
}  // namespace tessel
