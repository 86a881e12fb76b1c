// split_outputs: a three-way Split becomes three Slices and a LayerNormalization whose Mean and
// InvStdDev are used becomes primitive ops, every output with the reference's values (to fp32
// rounding) and its name; the compiled targets then run the graph.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/driver/runner.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
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

}  // namespace
}  // namespace tessel
