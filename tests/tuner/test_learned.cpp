// The learned cost model (compiler/tuner/learned.h) ranks the points of tasks it was not trained
// on: trained on the simulated cycles of some conv tasks, it orders the points of other conv
// tasks better than chance, and it finds their fastest point among its 8 best-scored.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>

#include "compiler/backend/npu/compile.h"
#include "compiler/driver/runner.h"
#include "compiler/tuner/learned.h"
#include "compiler/tuner/log.h"
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

namespace tessel::testing {
namespace {

/// The simulated trials of a stored full tuning log (tests/tuner/data/trials) of a golden case
/// as examples: one group per task (numbered from `first_group` in task order), the features of
/// each point from the case's lowered graph; `parity` (0/1) keeps every other task, -1 all.
struct RealExamples {
  std::vector<tuner::Example> examples;
  std::vector<double> estimates;  // the analytical estimate of each example (the baseline)
  size_t tasks = 0;
};

RealExamples real_examples(const std::string& name, const std::string& case_dir, const Shape& shape,
                           int parity, uint32_t first_group) {
  const std::string src = TESSEL_SOURCE_DIR;
  const npu::HwConfig hw = preset("npu_4core");
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::npu);
  const auto graph = driver::load_model(src + "/tests/data/cases/" + case_dir + "/model.onnx",
                                        {{"x", shape}}, passes);
  const npu_backend::LoweredGraph lowered(*graph, hw, {});
  const tuner::TuningLog log =
      tuner::TuningLog::read(src + "/tests/tuner/data/trials/" + name + ".jsonl");
  RealExamples out;
  const auto tasks = tuner::tasks_of(lowered);
  for (size_t t = 0; t < tasks.size(); ++t) {
    if (parity >= 0 && static_cast<int>(t % 2) != parity) continue;
    const auto& task = tasks[t];
    const passes::KernelSchedule& s = *lowered.kernels()[task.kernels.front()].schedule;
    std::set<passes::Knobs> seen;
    const uint32_t group = first_group + static_cast<uint32_t>(t);
    size_t n = 0;
    for (const auto& r : log.trials()) {
      if (r.task != task.key || !r.ok() || r.oracle != "sim" || !seen.insert(r.knobs).second)
        continue;
      const npu::KernelProfile p = s.profile(r.knobs);
      const npu::CostEstimate e = npu::estimate_kernel(hw, p);
      out.examples.push_back(
          {group, tuner::point_features(hw, task.kind, r.knobs, p, e, task.roofline_cycles),
           static_cast<double>(r.cycles)});
      out.estimates.push_back(e.cycles);
      ++n;
    }
    out.tasks += n > 0;
  }
  return out;
}

// The learned model on real tasks it was not trained on: the trials of a 1,500-trial tuning run
// of the PP-OCRv4 detector (1x3x64x96) and an 800-trial run of the PP-OCR classifier
// (1x3x48x192), both `--oracle sim` (tests/tuner/data/README.md). Trained on every other task of
// both models, it scores the points of the remaining tasks; then, trained on the detector's
// tasks only, the classifier's (a model it has never seen). Pairwise rank accuracy and top-8
// recall of the true best are printed with the analytical estimate's own accuracy.
TEST(LearnedModel, RanksThePointsOfRealTasksItWasNotTrainedOn) {
  const RealExamples det_even =
      real_examples("ppocr_det_64x96", "ppocr_det_64x96_strokes", {1, 3, 64, 96}, 0, 0);
  const RealExamples det_odd =
      real_examples("ppocr_det_64x96", "ppocr_det_64x96_strokes", {1, 3, 64, 96}, 1, 0);
  const RealExamples cls_even =
      real_examples("ppocr_cls_b1", "ppocr_cls_b1", {1, 3, 48, 192}, 0, 1000);
  const RealExamples cls_odd =
      real_examples("ppocr_cls_b1", "ppocr_cls_b1", {1, 3, 48, 192}, 1, 1000);
  auto join = [](const RealExamples& a, const RealExamples& b) {
    RealExamples j = a;
    j.examples.insert(j.examples.end(), b.examples.begin(), b.examples.end());
    j.estimates.insert(j.estimates.end(), b.estimates.begin(), b.estimates.end());
    j.tasks += b.tasks;
    return j;
  };
  struct Split {
    const char* what;
    RealExamples train, test;
  };
  const Split splits[] = {
      {"every other task of det and cls", join(det_even, cls_even), join(det_odd, cls_odd)},
      {"det -> cls", join(det_even, det_odd), join(cls_even, cls_odd)}};
  for (const Split& s : splits) {
    ASSERT_GT(s.train.examples.size(), 200u) << s.what;
    ASSERT_GT(s.test.examples.size(), 200u) << s.what;
    tuner::LearnedModel model;
    model.train(s.train.examples, 60, 0);
    std::vector<std::vector<float>> rows;
    for (const auto& e : s.test.examples) rows.push_back(e.features);
    const std::vector<double> scores = model.score(rows);
    const double learned = tuner::pairwise_accuracy(s.test.examples, scores);
    const double analytical = tuner::pairwise_accuracy(s.test.examples, s.test.estimates);
    // Top-8 recall over the tasks with more than 8 measured points (in the others it is 1).
    std::map<uint32_t, size_t> sizes;
    for (const auto& e : s.test.examples) ++sizes[e.group];
    std::vector<tuner::Example> big;
    std::vector<double> big_scores, big_estimates;
    for (size_t i = 0; i < s.test.examples.size(); ++i)
      if (sizes[s.test.examples[i].group] > 8) {
        big.push_back(s.test.examples[i]);
        big_scores.push_back(scores[i]);
        big_estimates.push_back(s.test.estimates[i]);
      }
    size_t big_tasks = 0;
    for (const auto& [g, n] : sizes) big_tasks += n > 8;
    ASSERT_GT(big_tasks, 10u) << s.what;
    const double recall = tuner::top_k_recall(big, big_scores, 8);
    const double recall_analytical = tuner::top_k_recall(big, big_estimates, 8);
    std::printf(
        "  %s: trained on %zu tasks (%zu points), tested on %zu tasks (%zu points): pairwise "
        "learned %.3f, analytical %.3f; top-8 recall (%zu tasks of > 8 points) learned %.3f, "
        "analytical %.3f\n",
        s.what, s.train.tasks, s.train.examples.size(), s.test.tasks, s.test.examples.size(),
        learned, analytical, big_tasks, recall, recall_analytical);
    // Chance is 0.5; the target is 0.90 (not reached yet: docs/results.md).
    EXPECT_GE(learned, 0.75) << s.what;
    EXPECT_GE(recall, 0.75) << s.what;
  }
}

}  // namespace
}  // namespace tessel::testing
