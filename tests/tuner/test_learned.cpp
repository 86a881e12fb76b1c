// The learned cost model (compiler/tuner/learned.h) ranks the points of tasks it was not trained
// on: trained on the simulated cycles of some conv tasks, it orders the points of other conv
// tasks better than chance, and it finds their fastest point among its 8 best-scored.
#include <gtest/gtest.h>

#include <cstdio>

#include "compiler/backend/npu/compile.h"
#include "compiler/tuner/learned.h"
#include "compiler/tuner/measure.h"
#include "compiler/tuner/tuner.h"
#include "npu_model/cost_model.h"
#include "tests/test_graph_builder.h"
#include "tests/tuner/tuner_test_util.h"

namespace tessel::testing {
namespace {

// Eight small convs (3x3, pad 1, different channel counts and image sizes): eight conv tasks.
// For each, 24 points spread over its analytical screening (every k-th point, so fast and slow
// ones) are simulated alone. The model is trained on the first four tasks and scores the other
// four; the analytical estimate's own ranking is the baseline it is compared with.
TEST(LearnedModel, RanksThePointsOfTasksItWasNotTrainedOn) {
  GraphBuilder b;
  const struct {
    int64_t cin, cout, hw;
  } convs[] = {{16, 32, 12}, {32, 32, 10}, {16, 64, 8}, {32, 16, 14},
               {64, 32, 8},  {16, 16, 16}, {32, 64, 6}, {48, 32, 10}};
  std::vector<Value*> outs;
  uint32_t seed = 1;
  for (const auto& c : convs) {
    Value* x = b.input("x" + std::to_string(seed), {1, c.cin, c.hw, c.hw});
    Value* w = b.constant("w" + std::to_string(seed),
                          random_tensor({c.cout, c.cin, 3, 3}, seed, -0.1f, 0.1f));
    Attributes a;
    a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    a.set("kernel_shape", std::vector<int64_t>{3, 3});
    outs.push_back(b.node("Conv", {x, w}, a));
    ++seed;
  }
  auto g = b.finish(outs);
  const npu::HwConfig hw = preset("npu_4core");
  const npu_backend::LoweredGraph lowered(*g, hw, {});
  const auto tasks = tuner::tasks_of(lowered);
  ASSERT_EQ(tasks.size(), 8u);
  std::vector<tuner::Example> train, test;
  std::vector<double> estimate_scores;
  std::vector<std::vector<float>> test_rows;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const auto& task = tasks[t];
    const passes::KernelSchedule& s = *lowered.kernels()[task.kernels.front()].schedule;
    const passes::Screened screened = passes::screen(s, hw);
    ASSERT_GE(screened.size(), 24u) << task.key;
    for (size_t i = 0; i < 24; ++i) {
      const passes::Knobs k = screened.knobs(i * (screened.size() - 1) / 23);
      const tuner::Measurement m =
          tuner::Measurer::measure_one(lowered, hw, {task.kernels.front(), k});
      ASSERT_TRUE(m.ok()) << m.error;
      const npu::KernelProfile p = s.profile(k);
      const npu::CostEstimate e = npu::estimate_kernel(hw, p);
      tuner::Example ex{static_cast<uint32_t>(t),
                        tuner::point_features(hw, task.kind, k, p, e, task.roofline_cycles),
                        static_cast<double>(m.cycles)};
      if (t < 4) {
        train.push_back(std::move(ex));
      } else {
        test_rows.push_back(ex.features);
        estimate_scores.push_back(e.cycles);
        test.push_back(std::move(ex));
      }
    }
  }
  tuner::LearnedModel model;
  model.train(train, 60, 0);
  ASSERT_TRUE(model.trained());
  const std::vector<double> scores = model.score(test_rows);
  const double learned = tuner::pairwise_accuracy(test, scores);
  const double analytical = tuner::pairwise_accuracy(test, estimate_scores);
  const double recall = tuner::top_k_recall(test, scores, 8);
  RecordProperty("learned_pairwise_accuracy", std::to_string(learned));
  RecordProperty("analytical_pairwise_accuracy", std::to_string(analytical));
  RecordProperty("learned_top8_recall", std::to_string(recall));
  std::printf("held-out tasks: learned pairwise %.3f, analytical %.3f, learned top-8 recall %.2f\n",
              learned, analytical, recall);
  // Chance is 0.5; a model that learned nothing transferable stays near it.
  EXPECT_GE(learned, 0.75);
  EXPECT_GE(recall, 0.75);
  // The same examples train the same model (one thread, fixed seed): same scores.
  tuner::LearnedModel again;
  again.train(train, 60, 0);
  EXPECT_EQ(again.score(test_rows), scores);
}

}  // namespace
}  // namespace tessel::testing
