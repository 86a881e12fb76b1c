// The progress callback of a plain NPU compile (tuner::ScheduleRequest::progress, what `tessel
// compile|sim|run` print as one rewritten line on a terminal when a compile takes more than 2 s):
// the phases come in order (lower, measure, compile), each counts up from 0 to its total, the
// totals are the graph's nodes, the default candidates simulated and the kernels compiled, and
// the program is the same with or without the callback.
#include <gtest/gtest.h>

#include "compiler/driver/runner.h"
#include "compiler/tuner/tuner.h"
#include "isa/encoding.h"
#include "tests/tuner/tuner_test_util.h"

namespace tessel::testing {
namespace {

struct Call {
  std::string phase;
  size_t done, total;
};

TEST(CompileProgress, PhasesCountUpToTheirTotalsAndLeaveTheProgramAsIs) {
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::npu);
  const auto graph = driver::load_model(
      std::string(TESSEL_SOURCE_DIR) + "/tests/data/cases/ppocr_cls_b1/model.onnx",
      {{"x", {1, 3, 48, 192}}}, passes);
  const npu::HwConfig hw = preset("npu_4core");
  std::vector<Call> calls;
  tuner::ScheduleRequest request;
  request.progress = [&calls](const std::string& phase, size_t done, size_t total) {
    calls.push_back({phase, done, total});
  };
  const npu_backend::NpuModule with = tuner::compile_scheduled(*graph, hw, {}, request).module;
  const npu_backend::NpuModule without = tuner::compile_scheduled(*graph, hw, {}, {}).module;
  EXPECT_EQ(isa::encode(with.program), isa::encode(without.program));

  ASSERT_FALSE(calls.empty());
  std::vector<std::string> order;
  for (const Call& c : calls)
    if (order.empty() || order.back() != c.phase) order.push_back(c.phase);
  EXPECT_EQ(order, (std::vector<std::string>{"lower", "measure", "compile"}));
  size_t kernels = 0;
  for (const auto& k : with.kernels) kernels += k.schedules.size();
  for (const std::string phase : {"lower", "measure", "compile"}) {
    std::vector<Call> p;
    for (const Call& c : calls)
      if (c.phase == phase) p.push_back(c);
    ASSERT_FALSE(p.empty()) << phase;
    EXPECT_EQ(p.back().done, p.back().total) << phase;
    for (size_t i = 0; i < p.size(); ++i) {
      EXPECT_EQ(p[i].total, p.front().total) << phase;
      if (i > 0) EXPECT_GE(p[i].done, p[i - 1].done) << phase;
    }
    if (phase == std::string("lower")) EXPECT_EQ(p.front().total, graph->nodes().size());
    if (phase == std::string("compile")) {
      EXPECT_EQ(p.front().total, kernels);
      EXPECT_EQ(p.size(), kernels + 1);  // before each kernel, and once at the end
    }
    if (phase == std::string("measure")) EXPECT_GT(p.front().total, 0u);
  }
}

}  // namespace
}  // namespace tessel::testing
