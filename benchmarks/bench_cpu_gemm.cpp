// SGEMM C[M][N] = A[M][K] B[K][N] (fp32, row-major, M = N = K = 256, 1024, 2048), single thread:
// tessel's CPU backend (a MatMul of two run-time operands: BLIS schedule of
// passes/loop/cpu_gemm.cpp, JIT-compiled once outside the timed loop) side by side with OpenBLAS's
// cblas_sgemm in the same process. Counter GFLOP/s = 2 M N K / time. Before timing, each size's
// tessel result is checked against OpenBLAS (max |diff| <= 1e-4 * K^0.5 * max|C|, else the
// benchmark reports an error), so a wrong kernel can never report a speed.
//
//   build/bin/bench_cpu_gemm                       # both, OpenBLAS as the environment configures
//   it env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_VERBOSE=2 build/bin/bench_cpu_gemm
//                                                  # OpenBLAS's own kernel choice (prints it)
// Results and the machine's peak: docs/results.md ("## CPU backend"), docs/cpu_backend.md.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "compiler/backend/cpu/compile.h"
#include "compiler/backend/cpu/jit.h"
#include "compiler/backend/cpu/runtime/cpu_runtime.h"
#include "compiler/ops/op_registry.h"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename(void);

namespace {

using namespace tessel;

struct Problem {
  int64_t n = 0;
  std::vector<float> a, b, c;
};

Problem make_problem(int64_t n) {
  Problem p;
  p.n = n;
  std::mt19937 rng(static_cast<uint32_t>(n));
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  p.a.resize(static_cast<size_t>(n * n));
  p.b.resize(static_cast<size_t>(n * n));
  p.c.assign(static_cast<size_t>(n * n), 0.f);
  for (auto& x : p.a) x = d(rng);
  for (auto& x : p.b) x = d(rng);
  return p;
}

/// The JIT-compiled MatMul of an n x n by an n x n run-time operand, single-threaded.
const cpu_backend::CpuJit& tessel_gemm(int64_t n) {
  static std::map<int64_t, std::unique_ptr<cpu_backend::CpuJit>> cache;
  auto& slot = cache[n];
  if (!slot) {
    Graph g;
    g.name = "sgemm";
    g.opset = 17;
    Value* a = g.add_value("a", DType::f32, {n, n});
    Value* b = g.add_value("b", DType::f32, {n, n});
    g.inputs = {a, b};
    Value* c = g.add_value("c", DType::undefined, {});
    Node* node = g.add_node("MatMul", "matmul", {a, b}, {c}, {});
    ops::infer_node(*node);
    g.outputs = {c};
    cpu_backend::CpuCompileOptions o;
    o.target.threads = 1;  // single thread: no parallel task loop
    slot = std::make_unique<cpu_backend::CpuJit>(cpu_backend::compile_cpu(g, o));
  }
  return *slot;
}

void openblas_gemm(Problem& p) {
  const int n = static_cast<int>(p.n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, p.a.data(), n, p.b.data(), n,
              0.f, p.c.data(), n);
}

void set_counters(benchmark::State& state, int64_t n) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Sgemm_Tessel(benchmark::State& state) {
  const int64_t n = state.range(0);
  tessel_cpu_set_threads(1);
  Problem p = make_problem(n);
  const auto& jit = tessel_gemm(n);
  const float* in[] = {p.a.data(), p.b.data()};
  float* out[] = {p.c.data()};
  // Correctness first: against OpenBLAS (fp32 sums of n terms in different orders).
  jit.run(in, out);
  Problem q = p;
  openblas_set_num_threads(1);
  openblas_gemm(q);
  double diff = 0, mag = 0;
  for (size_t i = 0; i < p.c.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(p.c[i] - q.c[i])));
    mag = std::max(mag, static_cast<double>(std::abs(q.c[i])));
  }
  if (!(diff <= 1e-4 * std::sqrt(static_cast<double>(n)) * mag)) {
    state.SkipWithError("tessel SGEMM differs from OpenBLAS");
    return;
  }
  for (auto _ : state) {
    jit.run(in, out);
    benchmark::DoNotOptimize(p.c.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n);
}

void BM_Sgemm_OpenBLAS(benchmark::State& state) {
  const int64_t n = state.range(0);
  openblas_set_num_threads(1);
  Problem p = make_problem(n);
  for (auto _ : state) {
    openblas_gemm(p);
    benchmark::DoNotOptimize(p.c.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n);
  state.SetLabel(openblas_get_corename());
}

/// The machine's single-core fp32 peak, measured: 16 independent chains of 512-bit FMAs (AVX-512F)
/// or 256-bit ones (AVX2 + FMA), enough to cover FMA latency x pipes on current x86 cores. Counts
/// 2 FLOP per lane per FMA.
template <int kBits>
__attribute__((noinline)) float fma_chains(int64_t iters);

template <>
__attribute__((noinline, target("avx512f"))) float fma_chains<512>(int64_t iters) {
  typedef float v16 __attribute__((vector_size(64)));
  v16 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = v16{} + static_cast<float>(i) * 1e-3f;
  const v16 a = v16{} + 0.999999f, b = v16{} + 1e-7f;
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 16; ++i) acc[i] = __builtin_ia32_vfmaddps512_mask(acc[i], a, b, -1, 4);
  v16 s = acc[0];
  for (int i = 1; i < 16; ++i) s += acc[i];
  return s[0];
}

template <>
__attribute__((noinline, target("avx2,fma"))) float fma_chains<256>(int64_t iters) {
  typedef float v8 __attribute__((vector_size(32)));
  v8 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = v8{} + static_cast<float>(i) * 1e-3f;
  const v8 a = v8{} + 0.999999f, b = v8{} + 1e-7f;
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 16; ++i) acc[i] = __builtin_ia32_vfmaddps256(acc[i], a, b);
  v8 s = acc[0];
  for (int i = 1; i < 16; ++i) s += acc[i];
  return s[0];
}

template <int kBits>
void BM_PeakFma(benchmark::State& state) {
  if (!__builtin_cpu_supports(kBits == 512 ? "avx512f" : "fma")) {
    state.SkipWithError("the CPU lacks the instructions");
    return;
  }
  const int64_t iters = 1 << 20;
  for (auto _ : state) {
    int64_t n = iters;
    benchmark::DoNotOptimize(n);  // opaque: the (pure) call is not hoisted out of the loop
    benchmark::DoNotOptimize(fma_chains<kBits>(n));
  }
  state.counters["GFLOP/s"] = benchmark::Counter(iters * 16.0 * (kBits / 32) * 2 * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_TEMPLATE(BM_PeakFma, 512)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_PeakFma, 256)->Unit(benchmark::kMillisecond);

BENCHMARK(BM_Sgemm_Tessel)->Arg(256)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Sgemm_OpenBLAS)->Arg(256)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
