// Every tuned program is a correct program (issue 11, Correctness): the best record of every
// tuning task of the real models (the golden cases of tests/data/cases) and of the zoo models the
// issue measures (ResNet-50, the BERT layer) is compiled from a stored tuning log
// (tests/tuner/data/*.jsonl: the best record per task of a `tessel tune --oracle sim` run, see
// tests/tuner/data/README.md), run on the simulator's functional execution, and every kernel is
// checked on its own against the reference interpreter within its derived NPU bound
// (driver::kernel_checks, compiler/driver/compare.h: the kernel's nodes run on the reference on
// exactly the inputs the NPU read), so a schedule point that computes a wrong value fails its
// kernel however deep in the model it sits. The graph's outputs are compared too (within
// driver::npu_tolerances of the whole graph). Every kernel must take its knobs from the log (a
// stale log -- task keys that no longer match -- fails), and some tasks' best records must differ
// from the analytical default (else the test would only re-check the default schedules).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>
#include <set>

#include "compiler/driver/compare.h"
#include "compiler/driver/runner.h"
#include "compiler/driver/zoo.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/tuner/log.h"
#include "tests/tuner/tuner_test_util.h"

namespace tessel::testing {
namespace {

const std::string kSrc = TESSEL_SOURCE_DIR;

struct TunedCase {
  std::string name;   // tests/tuner/data/NAME.jsonl; a golden case dir or zoo model
  std::string model;  // path under tests/data/cases, or zoo:NAME
  std::string input;  // graph input name
};

void PrintTo(const TunedCase& c, std::ostream* os) { *os << c.name; }

/// The graph and inputs of a case: a golden case's model and its stored input, or a zoo model
/// with inputs uniform in [-sqrt(3), sqrt(3)) (the zoo's unit mean square convention).
struct Loaded {
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> inputs;
};

Loaded load(const TunedCase& c) {
  Loaded l;
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::npu);
  if (c.model.rfind("zoo:", 0) == 0) {
    l.graph = driver::load_model(c.model, {}, passes);
    const Shape shape = l.graph->inputs.at(0)->shape;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-std::sqrt(3.0f), std::sqrt(3.0f));
    std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
    for (auto& x : v) x = dist(rng);
    l.inputs[c.input] = Tensor::from_floats(shape, v);
  } else {
    const std::string dir = kSrc + "/tests/data/cases/" + c.model;
    const Tensor in = frontend::load_tensor_pb(dir + "/test_data_set_0/input_0.pb");
    l.inputs[c.input] = in;
    l.graph = driver::load_model(dir + "/model.onnx", {{c.input, in.shape()}}, passes);
  }
  return l;
}

class TunedModels : public ::testing::TestWithParam<TunedCase> {};

TEST_P(TunedModels, TheBestRecordOfEveryTaskComputesTheReference) {
  const TunedCase& c = GetParam();
  const std::string log_path = kSrc + "/tests/tuner/data/" + c.name + ".jsonl";
  Loaded l = load(c);
  const npu::HwConfig hw = preset("npu_4core");
  const tuner::TuningLog log = tuner::TuningLog::read(log_path);
  const auto best = log.best(tuner::hw_hash(hw));
  ASSERT_FALSE(best.empty()) << log_path << " has no record for npu_4core";

  driver::RunOptions o;
  o.read_all_values = true;
  o.schedule.tuning_log = log_path;
  o.schedule.measure_default = false;  // every task must come from the log (checked below)
  const auto run = driver::run_model(*l.graph, driver::Target::npu, &hw, l.inputs, o);
  ASSERT_TRUE(run.npu.has_value());

  // Every kernel was compiled from its task's best record; count the tasks whose record is not
  // the analytical default (the first candidate the lowering kept).
  std::set<std::string> tasks, tuned_away;
  const npu_backend::LoweredGraph lowered(*l.graph, hw, {});
  for (const auto& k : lowered.kernels()) {  // (braces: gcc's dangling-else warning)
    const auto* cands = lowered.candidates(k.task);
    if (cands && best.count(k.task) && cands->front() != best.at(k.task)->knobs)
      tuned_away.insert(k.task);
  }
  // The value of the first kernel of each task is checked (the others run the same code).
  std::set<std::string> first_values;
  std::map<std::string, const Node*> node_of;
  for (const auto& n : l.graph->nodes()) node_of[n->name] = n.get();
  for (const auto& k : run.npu->module.kernels)
    for (const auto& s : k.schedules) {
      EXPECT_EQ(s.source, npu_backend::KnobSource::log)
          << k.node << ": task " << s.task << " has no record in " << log_path
          << " (a stale log: regenerate it, tests/tuner/data/README.md)";
      if (auto it = best.find(s.task); it != best.end()) {
        EXPECT_EQ(s.knobs, it->second->knobs) << k.node;
      }
      if (tasks.insert(s.task).second && node_of.count(k.node))
        for (const Value* v : node_of.at(k.node)->outputs)
          if (v) first_values.insert(v->name);
    }
  EXPECT_GT(tuned_away.size(), 0u) << "every best record is the analytical default";

  const auto checks = driver::kernel_checks(hw, *l.graph, l.inputs, run.outputs, &first_values);
  // A task's kernel may store no value of its own (a split op's parts, a kernel whose node
  // writes into a Concat), but most do.
  EXPECT_GE(checks.size() * 2, tasks.size());
  double worst = 0;
  for (const auto& k : checks) {
    EXPECT_TRUE(k.check.pass) << k.node << " (" << k.ops << ") " << k.value << ": error / bound "
                              << k.check.worst_ratio << "; " << k.check.tolerance.basis;
    worst = std::max(worst, k.check.worst_ratio);
  }
  std::cout << "  " << c.name << ": " << tasks.size() << " tasks (" << tuned_away.size()
            << " tuned away from the analytical default), " << checks.size()
            << " kernels checked, largest error / bound " << worst << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Logs, TunedModels,
    ::testing::Values(TunedCase{"hello_deepa", "hello_deepa", "onnx::Flatten_0"},
                      TunedCase{"ppocr_cls_b1", "ppocr_cls_b1", "x"},
                      TunedCase{"ppocr_det_64x96", "ppocr_det_64x96_strokes", "x"},
                      TunedCase{"ppocr_rec_48x320", "ppocr_rec_48x320", "x"},
                      TunedCase{"bert_layer", "zoo:bert_layer", "hidden_states"},
                      TunedCase{"resnet50", "zoo:resnet50", "input"}),
    [](const ::testing::TestParamInfo<TunedCase>& i) { return i.param.name; });

}  // namespace
}  // namespace tessel::testing
