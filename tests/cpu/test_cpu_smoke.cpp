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
  // The Relu is fused into the convolution's kernel (BLIS schedule, epilogue at the store).
  auto prog = cpu_backend::compile_cpu(*g);
  int gemm = 0, fused = 0;
  for (auto& k : prog.kernels) {
    gemm += k.kind == "gemm";
    fused += k.kind == "fused";
  }
  EXPECT_EQ(gemm, 1);
  EXPECT_EQ(fused, 1);
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
  EXPECT_TRUE(all_close(r.outputs.at(y->name), want.at(y->name), 1e-6));
}
}  // namespace
}  // namespace tessel::testing

namespace tessel::testing {
namespace {
// ResNet's residual block: Add(branch A, branch B) where branch B is computed after branch A's
// convolution in graph order. The Add (and the Relu after it) may fuse into B's kernel only: fused
// into A's kernel it would run before B exists, or be computed twice (the bug ResNet-50 showed).
TEST(CpuSmoke, ResidualAddFusesIntoTheLaterBranch) {
  CpuGraph b;
  Value* x = b.input("x", {1, 8, 9, 10});
  Value* a = b.node("Conv", {x, b.constant("wa", cpu_random({8, 8, 1, 1}, 61))});
  Value* bn = b.node(
      "BatchNormalization",
      {a, b.constant("s", cpu_random({8}, 62)), b.constant("bb", cpu_random({8}, 63)),
       b.constant("m", cpu_random({8}, 64)), b.constant("v", cpu_random({8}, 65, 0.5f, 2.f))});
  Value* c = b.node("Conv", {x, b.constant("wb", cpu_random({8, 8, 3, 3}, 66))},
                    attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* add = b.node("Add", {bn, c});
  Value* r = b.node("Relu", {add});
  auto g = b.finish({r});
  auto prog = cpu_backend::compile_cpu(*g);
  int with_add = 0;
  for (const auto& k : prog.kernels)
    if (!k.function.empty())
      for (const auto& f : k.fused) with_add += f == add->producer->name;
  EXPECT_EQ(with_add, 1);  // the Add is computed in exactly one kernel
  check_cpu(*g, {{"x", cpu_random({1, 8, 9, 10}, 67)}}, 2e-5);
}
}  // namespace
}  // namespace tessel::testing

#include <atomic>

#include "compiler/backend/cpu/runtime/cpu_runtime.h"
namespace tessel::testing {
namespace {
// The runtime's parallel_for runs every iteration exactly once, for any pool size and range,
// including ranges smaller than the pool and nested calls (which run serially).
TEST(CpuRuntime, ParallelForRunsEveryIterationOnce) {
  struct Closure {
    std::vector<std::atomic<int>>* hits;
  };
  const int prev = tessel_cpu_get_threads();
  for (int threads : {1, 2, 3, 5}) {
    tessel_cpu_set_threads(threads);
    for (int64_t n : {1, 2, 3, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      Closure c{&hits};
      for (int rep = 0; rep < 3; ++rep)
        tessel_cpu_parallel_for(
            n,
            [](void* p, int64_t b, int64_t e) {
              auto* cl = static_cast<Closure*>(p);
              for (int64_t i = b; i < e; ++i) (*cl->hits)[static_cast<size_t>(i)]++;
            },
            &c);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 3) << "threads " << threads << " n " << n;
    }
  }
  // Nested: the inner loop runs serially inside each outer chunk.
  tessel_cpu_set_threads(2);
  std::atomic<int64_t> total{0};
  tessel_cpu_parallel_for(
      8,
      [](void* p, int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          tessel_cpu_parallel_for(
              10,
              [](void* q, int64_t b2, int64_t e2) {
                *static_cast<std::atomic<int64_t>*>(q) += e2 - b2;
              },
              p);
      },
      &total);
  EXPECT_EQ(total.load(), 80);
  tessel_cpu_set_threads(prev);
}
}  // namespace
}  // namespace tessel::testing

namespace tessel::testing {
namespace {
// Threads split the GEMM's M/N tasks and the generic nests' outer loops, never a reduction: the
// result with 2 threads equals the single-threaded one bit for bit.
TEST(CpuRuntime, ParallelRunEqualsSerialBitForBit) {
  CpuGraph b;
  Value* x = b.input("x", {1, 16, 23, 29});
  Value* w = b.constant("w", cpu_random({24, 16, 3, 3}, 71));
  Value* c = b.node("Conv", {x, w}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* r = b.node("Relu", {c});
  Value* s = b.node("Softmax", {r}, attrs({{"axis", int64_t{1}}}));
  auto g = b.finish({s});
  const std::map<std::string, Tensor> in = {{"x", cpu_random({1, 16, 23, 29}, 72)}};
  const int prev = tessel_cpu_get_threads();
  std::vector<Tensor> outs;
  for (int threads : {1, 2}) {
    tessel_cpu_set_threads(threads);
    cpu_backend::CpuCompileOptions o;
    o.target.threads = threads;
    cpu_backend::CpuJit jit(cpu_backend::compile_cpu(*g, o));
    outs.push_back(jit.run(in).outputs.at(s->name));
  }
  tessel_cpu_set_threads(prev);
  ASSERT_EQ(outs[0].numel(), outs[1].numel());
  for (int64_t i = 0; i < outs[0].numel(); ++i)
    ASSERT_EQ(outs[0].data<float>()[i], outs[1].data<float>()[i]) << i;
}
}  // namespace
}  // namespace tessel::testing
