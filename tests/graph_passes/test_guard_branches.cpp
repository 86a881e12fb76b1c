// guard_branches: an If on a run-time condition (nested ones too) becomes both branches guarded by
// the condition, and the compiled targets run only the taken branch: every outcome of the two
// conditions gives the reference's values on the CPU (the untaken branch's kernels are skipped:
// time 0) and on the NPU (the untaken branch's kernels are jumped over by the scalar unit: fewer
// cycles for the lighter branch).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <iostream>

#include "compiler/driver/runner.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "compiler/support/error.h"
#include "npu_model/hw_config.h"
#include "passes/graph/graph_passes.h"
#include "tests/graph_passes/gp_util.h"

namespace tessel {
namespace {

using testing::count_op;

// y = c ? (d ? 2x + 10 : 2x - 10) : tanh(tanh(x + 10)), z = c ? -x : x.
const char* kGraph = R"(graph g opset 17 (%x: f32[4,64], %c: bool[], %d: bool[1]) -> (%y, %z) {
  %two: f32[] = const [2]
  %ten: f32[] = const [10]
  %y: f32[4,64], %z: f32[4,64] = If(%c, %x, %two, %ten, %d) {else_branch=graph e () captures (%x: f32[4,64], %two: f32[] known [2], %ten: f32[] known [10], %d: bool[1]) -> (%b, %x) {
      %b0: f32[4,64] = Add(%x, %ten)  # plus
      %b1: f32[4,64] = Tanh(%b0)  # tanh
      %b: f32[4,64] = Tanh(%b1)  # tanh2
    }, then_branch=graph t () captures (%x: f32[4,64], %two: f32[] known [2], %ten: f32[] known [10], %d: bool[1]) -> (%a, %n) {
      %a0: f32[4,64] = Mul(%x, %two)  # times
      %a: f32[4,64] = If(%d, %a0, %ten) {else_branch=graph e2 () captures (%a0: f32[4,64], %ten: f32[] known [10]) -> (%q) {
          %q: f32[4,64] = Sub(%a0, %ten)  # minus
        }, then_branch=graph t2 () captures (%a0: f32[4,64], %ten: f32[] known [10]) -> (%p) {
          %p: f32[4,64] = Add(%a0, %ten)  # plus2
        }}  # inner
      %n: f32[4,64] = Neg(%x)  # neg
    }}  # outer
}
)";

std::unique_ptr<Graph> graph() {
  auto g = parse_graph(kGraph, "g");
  ops::infer_graph(*g);
  verify_graph(*g);
  return g;
}

Tensor flag(bool v, Shape shape) {
  Tensor t(DType::boolean, shape);
  t.set_from_double(0, v ? 1.0 : 0.0);
  return t;
}

std::map<std::string, Tensor> feeds(bool c, bool d) {
  std::vector<float> x(4 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) / 4.0f - 1.5f;
  return {{"x", Tensor::from_floats({4, 64}, x)}, {"c", flag(c, {})}, {"d", flag(d, {1})}};
}

/// The values kGraph defines, computed here.
std::map<std::string, std::vector<float>> expected(bool c, bool d) {
  const std::vector<float> x = feeds(c, d).at("x").to_float_vector();
  std::vector<float> y(x.size()), z(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = c ? (d ? 2 * x[i] + 10 : 2 * x[i] - 10) : std::tanh(std::tanh(x[i] + 10));
    z[i] = c ? -x[i] : x[i];
  }
  return {{"y", y}, {"z", z}};
}

void expect_values(const std::map<std::string, Tensor>& got, bool c, bool d, float tol,
                   const std::string& what) {
  for (const auto& [name, want] : expected(c, d)) {
    const std::vector<float> v = got.at(name).to_float_vector();
    ASSERT_EQ(v.size(), want.size()) << what << " " << name;
    double worst = 0;
    for (size_t i = 0; i < v.size(); ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(v[i] - want[i])));
    EXPECT_LE(worst, tol) << what << " " << name << " c=" << c << " d=" << d;
  }
}

TEST(GuardBranches, BothBranchesGuardedNestedGuardsAnded) {
  auto g = graph();
  std::unique_ptr<Graph> cf = driver::compiled_form(*g);
  ASSERT_TRUE(cf);
  verify_graph(*cf);
  EXPECT_EQ(count_op(*cf, "If"), 0u);
  EXPECT_EQ(count_op(*cf, "Where"), 3u);  // y, z (outer) and a (inner)
  const Node* plus2 = cf->find_node("outer/then/inner/then/plus2");
  const Node* tanh2 = cf->find_node("outer/else/tanh2");
  const Node* neg = cf->find_node("outer/then/neg");
  ASSERT_TRUE(plus2 && tanh2 && neg);
  // Constant captures stay the enclosing constants (weights are not copied per branch).
  EXPECT_EQ(cf->find_node("outer/then/times")->input(1)->name, "two");
  EXPECT_EQ(plus2->input(1)->name, "ten");
  const Value* gneg = graph_passes::branch_guard(*cf, *neg);
  const Value* gtanh = graph_passes::branch_guard(*cf, *tanh2);
  const Value* gplus = graph_passes::branch_guard(*cf, *plus2);
  ASSERT_TRUE(gneg && gtanh && gplus);
  EXPECT_EQ(gneg->name, "c");  // the condition itself (already a scalar)
  EXPECT_EQ(gtanh->producer->op_type, "Not");
  EXPECT_EQ(gplus->producer->op_type, "And");  // outer guard and inner condition
  // Every outcome on the reference of the guarded graph (guards ignored: Where chooses).
  for (bool c : {false, true})
    for (bool d : {false, true})
      expect_values(ops::run_reference(*cf, feeds(c, d)), c, d, 1e-6f, "ref of compiled form");
}

TEST(GuardBranches, CpuRunsOnlyTheTakenBranch) {
  auto g = graph();
  for (bool c : {false, true})
    for (bool d : {false, true}) {
      const driver::RunOutput out =
          driver::run_model(*g, driver::Target::cpu, nullptr, feeds(c, d));
      expect_values(out.outputs, c, d, 1e-5f, "cpu");
      ASSERT_TRUE(out.cpu);
      int then_run = 0, else_run = 0, inner_then = 0, inner_else = 0;
      for (const auto& k : out.cpu->kernels) {
        const bool ran = k.seconds > 0;
        if (k.node.rfind("outer/then/", 0) == 0) {
          if (k.node.rfind("outer/then/inner/then/", 0) == 0)
            inner_then += ran;
          else if (k.node.rfind("outer/then/inner/else/", 0) == 0)
            inner_else += ran;
          else
            then_run += ran;
        }
        if (k.node.rfind("outer/else/", 0) == 0) else_run += ran;
        if (!ran) EXPECT_EQ(k.seconds, 0.0) << k.node;
      }
      EXPECT_EQ(then_run > 0, c) << "c=" << c;
      EXPECT_EQ(else_run, c ? 0 : 3) << "c=" << c;  // plus, tanh, tanh2
      EXPECT_EQ(inner_then, c && d ? 1 : 0);
      EXPECT_EQ(inner_else, c && !d ? 1 : 0);
    }
}

/// The compiled form of kGraph with the guards dropped: both branches always run (what the NPU
/// did before guarded blocks).
std::unique_ptr<Graph> unguarded_compiled_form() {
  std::unique_ptr<Graph> cf = driver::compiled_form(*graph());
  for (const auto& n : cf->nodes()) n->attrs.erase(graph_passes::kBranchGuardAttr);
  return cf;
}

/// Pipe busy cycles of the kernels whose node names start with `prefix` (and not with `but`).
uint64_t busy_of(const driver::NpuRun& r, const std::string& prefix, const std::string& but = "") {
  uint64_t busy = 0;
  for (const auto& k : r.module.kernels) {
    if (k.op_index < 0 || k.node.rfind(prefix, 0) != 0) continue;
    if (!but.empty() && k.node.rfind(but, 0) == 0) continue;
    for (uint64_t b : r.sim.op_busy_cycles.at(static_cast<size_t>(k.op_index))) busy += b;
  }
  return busy;
}

TEST(GuardBranches, NpuRunsOnlyTheTakenBranch) {
  // On 4 cores (npu_4core): every core loads the guard byte and jumps over the untaken branch's
  // kernels (lbu + blti around each guarded block), so those kernels start no pipe instruction,
  // and the run is shorter than the same program computing both branches.
  const npu::HwConfig hw =
      npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml");
  auto g = graph();
  auto both = unguarded_compiled_form();
  for (bool c : {false, true})
    for (bool d : {false, true}) {
      const std::string what = fmt::format("npu c={} d={}", c, d);
      const driver::RunOutput out = driver::run_model(*g, driver::Target::npu, &hw, feeds(c, d));
      expect_values(out.outputs, c, d, 0.05f, what);
      ASSERT_TRUE(out.npu);
      const driver::NpuRun& r = *out.npu;
      // The untaken branches' kernels did no work; the taken ones did.
      EXPECT_EQ(busy_of(r, "outer/else/") == 0, c) << what;
      EXPECT_EQ(busy_of(r, "outer/then/", "outer/then/inner/") == 0, !c) << what;
      EXPECT_EQ(busy_of(r, "outer/then/inner/then/") == 0, !(c && d)) << what;
      EXPECT_EQ(busy_of(r, "outer/then/inner/else/") == 0, !(c && !d)) << what;
      const driver::RunOutput full =
          driver::run_model(*both, driver::Target::npu, &hw, feeds(c, d));
      expect_values(full.outputs, c, d, 0.05f, what + " (both branches)");
      ASSERT_TRUE(full.npu);
      EXPECT_GT(busy_of(full.npu.value(), "outer/else/"), 0u) << what;
      std::cout << "  " << what << ": " << r.sim.total_cycles << " cycles (both branches "
                << full.npu->sim.total_cycles << ")\n";
      EXPECT_LT(r.sim.total_cycles, full.npu->sim.total_cycles) << what;
    }
}

}  // namespace
}  // namespace tessel
