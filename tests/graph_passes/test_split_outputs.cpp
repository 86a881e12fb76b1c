// split_outputs: a three-way Split becomes three Slices and a LayerNormalization whose Mean and
// InvStdDev are used becomes primitive ops, every output with the reference's values (to fp32
// rounding) and its name; the compiled targets then run the graph.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/driver/compare.h"
#include "compiler/driver/runner.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "npu_model/hw_config.h"
#include "passes/graph/graph_passes.h"
#include "tests/graph_passes/gp_util.h"
#include "tests/test_graph_builder.h"

namespace tessel {
namespace {

const char* kGraph =
    R"(graph g opset 17 (%x: f32[2,9,4], %s: f32[9,4], %b: f32[9,4]) -> (%p, %q, %r, %y, %mean, %inv) {
  %sp: i64[3] = const [2, 3, 4]
  %p: f32[2,2,4], %q: f32[2,3,4], %r: f32[2,4,4] = Split(%x, %sp) {axis=1}  # split
  %y: f32[2,9,4], %mean: f32[2,1,1], %inv: f32[2,1,1] = LayerNormalization(%x, %s, %b) {axis=1, epsilon=0.001}  # ln
}
)";

using testing::count_op;

TEST(SplitOutputs, SplitAndLayerNormBecomeSingleOutputNodesWithTheSameValues) {
  auto g = parse_graph(kGraph, "g");
  ops::infer_graph(*g);
  verify_graph(*g);
  const std::map<std::string, Tensor> in = {{"x", testing::random_tensor({2, 9, 4}, 1, -2, 2)},
                                            {"s", testing::random_tensor({9, 4}, 2)},
                                            {"b", testing::random_tensor({9, 4}, 3)}};
  const auto before = ops::run_reference(*g, in);
  ASSERT_TRUE(graph_passes::needs_split_outputs(*g));
  EXPECT_TRUE(graph_passes::split_outputs(*g));
  verify_graph(*g);
  EXPECT_FALSE(graph_passes::needs_split_outputs(*g));
  EXPECT_EQ(count_op(*g, "Split"), 0u);
  EXPECT_EQ(count_op(*g, "Slice"), 3u);
  EXPECT_EQ(count_op(*g, "LayerNormalization"), 0u);
  EXPECT_EQ(count_op(*g, "ReduceMean"), 2u);
  for (const auto& n : g->nodes()) EXPECT_EQ(n->outputs.size(), 1u) << n->describe();
  const auto after = ops::run_reference(*g, in);
  for (const auto& [name, t] : before) {
    ASSERT_TRUE(after.count(name)) << name;
    const auto a = after.at(name).to_float_vector(), e = t.to_float_vector();
    ASSERT_EQ(a.size(), e.size()) << name;
    for (size_t i = 0; i < a.size(); ++i)  // fp32: a few ulp of the largest output
      EXPECT_NEAR(a[i], e[i], 1e-5 * (1 + std::abs(e[i]))) << name << "[" << i << "]";
  }
  // The compiled targets refuse the multi-output nodes, and run the rewritten graph: run_model
  // applies split_outputs itself (on a copy).
  auto original = parse_graph(kGraph, "g");
  ops::infer_graph(*original);
  const auto cpu = driver::run_model(*original, driver::Target::cpu, nullptr, in);
  for (const auto& [name, t] : before) {
    const auto a = cpu.outputs.at(name).to_float_vector(), e = t.to_float_vector();
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], e[i], 1e-5 * (1 + std::abs(e[i]))) << "cpu " << name << "[" << i << "]";
  }
}

TEST(SplitOutputs, LeavesALayerNormWithOnlyItsFirstOutputUsed) {
  auto g = parse_graph(R"(graph g opset 17 (%x: f32[3,8], %s: f32[8]) -> (%y) {
  %y: f32[3,8], %m: f32[3,1], %v: f32[3,1] = LayerNormalization(%x, %s)  # ln
}
)",
                       "g");
  ops::infer_graph(*g);
  EXPECT_FALSE(graph_passes::needs_split_outputs(*g));
  EXPECT_FALSE(graph_passes::split_outputs(*g));
  EXPECT_EQ(count_op(*g, "LayerNormalization"), 1u);
}

/// A TopK node on x [3, 6] (axis 1), k = 3, with ties: values and indices as graph outputs.
std::unique_ptr<Graph> topk_graph(int64_t largest) {
  auto g = std::make_unique<Graph>();
  g->opset = 17;
  Value* x = g->add_value("x", DType::f32, {3, 6});
  g->inputs = {x};
  Value* k = g->add_constant("k", Tensor::from_int64s({1}, {3}));
  Value* v = g->add_value("values", DType::undefined, {});
  Value* i = g->add_value("indices", DType::undefined, {});
  g->outputs = {v, i};
  Attributes a;
  a.set("axis", int64_t{1});
  a.set("largest", largest);
  g->add_node("TopK", "topk", {x, k}, {v, i}, a);
  ops::infer_graph(*g);
  return g;
}

TEST(SplitOutputs, TopKBecomesReductionsWithTiesInIndexOrder) {
  // Row 0 has ties (2 at 1, 3, 5; -1 at 0, 2, 4): the spec puts the lower index first.
  const Tensor x = Tensor::from_floats(
      {3, 6}, {-1, 2, -1, 2, -1, 2, 0.5f, -3, 4, 0.25f, 1, -2, 7, 6, 5, 4, 3, 2});
  for (int64_t largest : {1, 0}) {
    SCOPED_TRACE(largest);
    auto g = topk_graph(largest);
    const auto want = ops::run_reference(*g, {{"x", x}});
    EXPECT_EQ(want.at("indices").to_int64_vector(),
              largest ? std::vector<int64_t>({1, 3, 5, 2, 4, 0, 0, 1, 2})
                      : std::vector<int64_t>({0, 2, 4, 1, 5, 3, 5, 4, 3}));
    ASSERT_TRUE(graph_passes::needs_split_outputs(*g));
    EXPECT_TRUE(graph_passes::split_outputs(*g));
    verify_graph(*g);
    EXPECT_EQ(count_op(*g, "TopK"), 0u);
    EXPECT_EQ(count_op(*g, largest ? "ArgMax" : "ArgMin"), 3u);
    const auto got = ops::run_reference(*g, {{"x", x}});
    EXPECT_EQ(got.at("indices").to_int64_vector(), want.at("indices").to_int64_vector());
    EXPECT_EQ(got.at("values").to_float_vector(), want.at("values").to_float_vector());
    // The NPU runs the original graph (run_model splits it); fp16 holds these values exactly.
    const npu::HwConfig hw =
        npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml");
    const auto npu = driver::run_model(*topk_graph(largest), driver::Target::npu, &hw, {{"x", x}});
    EXPECT_EQ(npu.outputs.at("indices").to_int64_vector(), want.at("indices").to_int64_vector());
    EXPECT_EQ(npu.outputs.at("values").to_float_vector(), want.at("values").to_float_vector());
  }
}

TEST(SplitOutputs, InferenceDropoutMaskIsAllTrueAndATrainingOneStays) {
  auto make = [](bool training_input) {
    auto g = std::make_unique<Graph>();
    g->opset = 17;
    Value* x = g->add_value("x", DType::f32, {2, 3});
    g->inputs = {x};
    std::vector<Value*> ins = {x};
    if (training_input) {
      ins.push_back(g->add_constant("ratio", Tensor::scalar_f32(0.5f)));
      Value* t = g->add_value("t", DType::boolean, {});
      g->inputs.push_back(t);
      ins.push_back(t);
    }
    Value* y = g->add_value("y", DType::undefined, {});
    Value* m = g->add_value("mask", DType::undefined, {});
    g->outputs = {y, m};
    g->add_node("Dropout", "drop", ins, {y, m});
    ops::infer_graph(*g);
    return g;
  };
  auto g = make(false);
  EXPECT_TRUE(graph_passes::split_outputs(*g));
  verify_graph(*g);
  EXPECT_EQ(count_op(*g, "Dropout"), 0u);
  const Tensor x = testing::random_tensor({2, 3}, 4);
  const auto got = ops::run_reference(*g, {{"x", x}});
  EXPECT_EQ(got.at("y").to_float_vector(), x.to_float_vector());
  EXPECT_EQ(got.at("mask").to_int64_vector(), std::vector<int64_t>(6, 1));
  // training_mode known only at run time with ratio 0.5: random, left for the backend to refuse.
  auto t = make(true);
  EXPECT_FALSE(graph_passes::needs_split_outputs(*t));
  EXPECT_FALSE(graph_passes::split_outputs(*t));
  EXPECT_EQ(count_op(*t, "Dropout"), 1u);
}

}  // namespace
}  // namespace tessel
