// expand_mvn: MeanVarianceNormalization expanded into ReduceMean/Sub/Mul/Sqrt/Add/Div gives the
// reference kernel's values (compiler/ops/norm.cpp) for the default axes and for given ones
// (negative included); the NPU and the CPU run the original graph (driver::run_model expands it)
// within their tolerances.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/driver/compare.h"
#include "compiler/driver/runner.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "npu_model/hw_config.h"
#include "passes/graph/graph_passes.h"
#include "tests/test_graph_builder.h"

namespace tessel {
namespace {

std::unique_ptr<Graph> mvn_graph(const Shape& shape, std::optional<std::vector<int64_t>> axes) {
  testing::GraphBuilder b;
  Value* x = b.input("x", shape);
  Attributes a;
  if (axes) a.set("axes", *axes);
  Value* y = b.node("MeanVarianceNormalization", {x}, a);
  return b.finish({y});
}

TEST(ExpandMvn, MatchesTheReferenceAndTheDefinition) {
  // x [2, 3] with axes [-1]: row 0 = [1, 2, 3] -> m 2, v 2/3 -> [-1, 0, 1] / sqrt(2/3).
  auto g = mvn_graph({2, 3}, std::vector<int64_t>{-1});
  std::map<std::string, Tensor> in = {{"x", Tensor::from_floats({2, 3}, {1, 2, 3, 5, 5, 8})}};
  const auto want = ops::run_reference(*g, in);
  ASSERT_TRUE(graph_passes::needs_expand_mvn(*g));
  ASSERT_TRUE(graph_passes::expand_mvn(*g));
  EXPECT_FALSE(graph_passes::needs_expand_mvn(*g));
  for (const auto& n : g->nodes()) EXPECT_NE(n->op_type, "MeanVarianceNormalization");
  const auto got = ops::run_reference(*g, in);
  const Tensor& y = got.at(want.begin()->first);
  const double s0 = std::sqrt(2.0 / 3.0), s1 = std::sqrt(2.0);  // row 1: m 6, v (1+1+4)/3
  const std::vector<double> hand = {-1 / s0, 0, 1 / s0, -1 / s1, -1 / s1, 2 / s1};
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(y.get_as_double(i), hand[i], 1e-6) << i;
    EXPECT_NEAR(y.get_as_double(i), want.begin()->second.get_as_double(i), 1e-6) << i;
  }
}

TEST(ExpandMvn, DefaultAxesOnTheNpuAndTheCpu) {
  // [N, C, H, W] = [3, 4, 5, 6], axes [0, 2, 3]: per-channel statistics.
  auto g = mvn_graph({3, 4, 5, 6}, std::nullopt);
  std::map<std::string, Tensor> feeds = {{"x", testing::random_tensor({3, 4, 5, 6}, 21, -3, 5)}};
  const npu::HwConfig hw =
      npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml");
  std::map<std::string, Tensor> want;
  const auto tol = driver::npu_tolerances(hw, *g, feeds, &want);
  const auto npu = driver::run_model(*g, driver::Target::npu, &hw, feeds).outputs;
  const auto cpu = driver::run_model(*g, driver::Target::cpu, nullptr, feeds).outputs;
  for (const auto& [name, e] : want) {
    const auto c = driver::compare_output(name, npu.at(name), e, tol.at(name));
    EXPECT_TRUE(c.pass) << name << ": max abs error " << c.max_abs_error << ", atol "
                        << tol.at(name).atol;
    EXPECT_LT(tol.at(name).atol, 0.05) << name;
    for (int64_t i = 0; i < e.numel(); ++i)
      ASSERT_NEAR(cpu.at(name).get_as_double(i), e.get_as_double(i), 1e-4) << i;
  }
}

TEST(ExpandMvn, AnAxisOutOfRangeIsAnErrorNamingTheNode) {
  auto g = mvn_graph({2, 3}, std::vector<int64_t>{0, 1});
  // Shape inference refuses it; the pass checks on its own for graphs edited afterwards.
  g->nodes().front()->attrs.set("axes", std::vector<int64_t>{0, 2});
  try {
    graph_passes::expand_mvn(*g);
    FAIL() << "expanded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MeanVarianceNormalization"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessel
