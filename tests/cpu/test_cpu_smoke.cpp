#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

TEST(CpuSmoke, Relu) {
  CpuGraph b;
  Value* x = b.input("x", {2, 3, 17, 40});
  Value* y = b.node("Relu", {x});
  auto g = b.finish({y});
  check_cpu(*g, {{"x", cpu_random({2, 3, 17, 40}, 1)}}, 0);
}

TEST(CpuSmoke, Conv) {
  CpuGraph b;
  Value* x = b.input("x", {1, 8, 10, 12});
  Value* w = b.constant("w", cpu_random({16, 8, 3, 3}, 2));
  Value* bias = b.constant("b", cpu_random({16}, 3));
  Value* y = b.node("Conv", {x, w, bias}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* r = b.node("Relu", {y});
  auto g = b.finish({r});
  cpu_backend::CpuCompileOptions o;
  o.keep_loop_ir = true;
  auto prog = cpu_backend::compile_cpu(*g, o);
  for (auto& k : prog.kernels) std::cout << k.node << " " << k.kind << "\n" << k.loop_ir << "\n";
  check_cpu(*g, {{"x", cpu_random({1, 8, 10, 12}, 1)}}, 1e-5);
}

TEST(CpuSmoke, MatMul) {
  CpuGraph b;
  Value* x = b.input("x", {37, 50});
  Value* w = b.input("w", {50, 70});
  Value* y = b.node("MatMul", {x, w});
  auto g = b.finish({y});
  check_cpu(*g, {{"x", cpu_random({37, 50}, 1)}, {"w", cpu_random({50, 70}, 2)}}, 1e-5);
}

}  // namespace
}  // namespace tessel::testing

#include "compiler/driver/runner.h"
namespace tessel::testing {
namespace {
TEST(CpuSmoke, RunModel) {
  CpuGraph b;
  Value* x = b.input("x", {4, 33});
  Value* y = b.node("Sigmoid", {x});
  auto g = b.finish({y});
  auto in = cpu_random({4, 33}, 5);
  auto r = driver::run_model(*g, driver::Target::cpu, nullptr, {{"x", in}});
  ASSERT_TRUE(r.cpu.has_value());
  auto want = ops::run_reference(*g, {{"x", in}});
  EXPECT_LE(max_diff(r.outputs.at(y->name), want.at(y->name)), 1e-6);
}
}  // namespace
}  // namespace tessel::testing
