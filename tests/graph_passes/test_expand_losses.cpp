// expand_losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss expanded into their ONNX
// function bodies give the reference kernel's values (compiler/ops/loss.cpp) for every reduction,
// with and without weights and ignore_index (a class id present in the targets, and a negative
// one), on N-d inputs; the NPU runs the original graph (driver::run_model expands it).
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

struct Loss {
  std::string op = "NegativeLogLikelihoodLoss";
  std::string reduction = "mean";
  Shape x = {3, 5, 2, 2};  // [N, C, d1, d2]
  bool weight = false;
  std::optional<int64_t> ignore_index;
  bool log_prob = false;  // SoftmaxCrossEntropyLoss's second output used
};

std::unique_ptr<Graph> make_graph(const Loss& l, std::map<std::string, Tensor>& feeds) {
  auto g = std::make_unique<Graph>();
  g->name = "loss";
  g->opset = 17;
  Shape ts = {l.x[0]};
  ts.insert(ts.end(), l.x.begin() + 2, l.x.end());
  Value* x = g->add_value("x", DType::f32, l.x);
  Value* t = g->add_value("t", DType::i64, ts);
  g->inputs = {x, t};
  feeds["x"] = testing::random_tensor(l.x, 5, -3, 0);
  // Class ids in [0, C); with a negative ignore_index some targets are that index instead.
  Tensor ids = testing::random_int_tensor(ts, DType::i64, 6, 0, l.x[1] - 1);
  if (l.ignore_index && *l.ignore_index < 0)
    for (int64_t i = 0; i < ids.numel(); i += 3) ids.set_from_double(i, double(*l.ignore_index));
  feeds["t"] = ids;
  std::vector<Value*> ins = {x, t};
  if (l.weight) {
    Value* w = g->add_value("w", DType::f32, {l.x[1]});
    g->inputs.push_back(w);
    feeds["w"] = testing::random_tensor({l.x[1]}, 7, 0.2f, 2);
    ins.push_back(w);
  }
  Attributes a;
  a.set("reduction", l.reduction);
  if (l.ignore_index) a.set("ignore_index", *l.ignore_index);
  std::vector<Value*> outs = {g->add_value("loss", DType::undefined, {})};
  g->outputs = {outs[0]};
  if (l.log_prob) {
    outs.push_back(g->add_value("log_prob", DType::undefined, {}));
    g->outputs.push_back(outs[1]);
  }
  g->add_node(l.op, "loss_node", ins, outs, a);
  ops::infer_graph(*g);
  verify_graph(*g);
  return g;
}

void expect_close(const std::map<std::string, Tensor>& got,
                  const std::map<std::string, Tensor>& want, double tol, const std::string& what) {
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.count(name)) << what << " " << name;
    ASSERT_EQ(got.at(name).shape(), t.shape()) << what << " " << name;
    const auto a = got.at(name).to_float_vector(), e = t.to_float_vector();
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], e[i], tol * (1 + std::abs(e[i]))) << what << " " << name << "[" << i << "]";
  }
}

void check(const Loss& l) {
  std::map<std::string, Tensor> feeds;
  auto g = make_graph(l, feeds);
  const auto want = ops::run_reference(*g, feeds);
  auto e = clone_graph(*g);
  ASSERT_TRUE(graph_passes::needs_expand_losses(*e));
  EXPECT_TRUE(graph_passes::expand_losses(*e));
  verify_graph(*e);
  EXPECT_FALSE(graph_passes::needs_expand_losses(*e));
  for (const auto& n : e->nodes()) EXPECT_EQ(n->outputs.size(), 1u) << n->describe();
  expect_close(ops::run_reference(*e, feeds), want, 1e-6, "expanded (ref)");
}

TEST(ExpandLosses, NllEveryReductionWeightAndIgnoreIndex) {
  for (const char* red : {"none", "sum", "mean"})
    for (bool w : {false, true})
      for (std::optional<int64_t> ii :
           {std::optional<int64_t>{}, std::optional<int64_t>{2}, std::optional<int64_t>{-4}}) {
        SCOPED_TRACE(fmt::format("{} weight={} ignore_index={}", red, w, ii ? *ii : 999));
        Loss l;
        l.reduction = red;
        l.weight = w;
        l.ignore_index = ii;
        check(l);
      }
}

TEST(ExpandLosses, NllOf2dInputAndMeanWithIgnoreIndexCountsOnlyTheKeptTargets) {
  // input [2, 3], target [0, 2], ignore_index 2: the mean is over the one kept target,
  // -input[0, 0] * w[0] / w[0] = 0.5.
  auto g = std::make_unique<Graph>();
  g->opset = 17;
  Value* x = g->add_constant("x", Tensor::from_floats({2, 3}, {-0.5f, -1, -2, -3, -4, -6}));
  Value* t = g->add_constant("t", Tensor::from_int64s({2}, {0, 2}));
  Value* w = g->add_constant("w", Tensor::from_floats({3}, {4, 5, 6}));
  Value* out = g->add_value("loss", DType::undefined, {});
  g->outputs = {out};
  Attributes a;
  a.set("ignore_index", int64_t{2});
  g->add_node("NegativeLogLikelihoodLoss", "nll", {x, t, w}, {out}, a);
  ops::infer_graph(*g);
  graph_passes::expand_losses(*g);
  verify_graph(*g);
  const auto r = ops::run_reference(*g, {});
  EXPECT_FLOAT_EQ(r.at("loss").get_as_double(0), 0.5);
}

TEST(ExpandLosses, SoftmaxCrossEntropyWithLogProb) {
  for (const char* red : {"none", "sum", "mean"})
    for (bool w : {false, true}) {
      SCOPED_TRACE(fmt::format("{} weight={}", red, w));
      Loss l;
      l.op = "SoftmaxCrossEntropyLoss";
      l.reduction = red;
      l.weight = w;
      l.ignore_index = -1;
      l.log_prob = true;
      check(l);
      l.log_prob = false;
      l.x = {4, 3};
      check(l);
    }
}

TEST(ExpandLosses, SceOnTheNpuWithinItsDerivedTolerance) {
  Loss l;
  l.op = "SoftmaxCrossEntropyLoss";
  l.weight = true;
  l.ignore_index = -2;
  l.log_prob = true;
  std::map<std::string, Tensor> feeds;
  auto g = make_graph(l, feeds);
  const npu::HwConfig hw =
      npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml");
  std::map<std::string, Tensor> want;
  const auto tol = driver::npu_tolerances(hw, *g, feeds, &want);
  const auto got = driver::run_model(*g, driver::Target::npu, &hw, feeds).outputs;
  for (const auto& [name, e] : want) {
    const auto c = driver::compare_output(name, got.at(name), e, tol.at(name));
    EXPECT_TRUE(c.pass) << name << ": max abs error " << c.max_abs_error << ", atol "
                        << tol.at(name).atol;
    EXPECT_LT(tol.at(name).atol, 0.05) << name;
  }
}

}  // namespace
}  // namespace tessel
