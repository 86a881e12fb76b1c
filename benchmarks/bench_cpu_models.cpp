// End-to-end latency at batch 1: the PP-OCR direction classifier (models/, 1x3x48x192) and
// ResNet-50 (tessel zoo resnet50, 1x3x224x224) on tessel's CPU backend (JIT-compiled once outside
// the timed loop; 1 thread and every core) side by side with the reference interpreter
// (compiler/ops/reference.h, single thread), same graph after the CPU's graph passes. Before
// timing, the CPU outputs are checked against the reference (|diff| <= 1e-3 max|ref| + 1e-5),
// so a wrong program never reports a time. Compile time is printed as a counter (compile_s).
//
//   build/bin/bench_bench_cpu_models
// Results: docs/results.md ("## CPU backend").
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>

#include "compiler/backend/cpu/compile.h"
#include "compiler/backend/cpu/jit.h"
#include "compiler/backend/cpu/runtime/cpu_runtime.h"
#include "compiler/driver/runner.h"
#include "compiler/driver/zoo.h"
#include "compiler/ops/reference.h"

namespace {

using namespace tessel;
namespace fs = std::filesystem;

struct Model {
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> inputs;
  std::unique_ptr<cpu_backend::CpuJit> jit;
  double compile_seconds = 0;
  bool checked = false, ok = false;
};

Tensor random_tensor(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (auto& x : v) x = d(rng);
  return Tensor::from_floats(s, v);
}

/// Model 0: PP-OCR classifier; 1: ResNet-50. Loaded (and compiled) once.
Model* model(int which) {
  static std::map<int, std::unique_ptr<Model>> cache;
  auto& m = cache[which];
  if (m) return m.get();
  m = std::make_unique<Model>();
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::cpu);
  std::string path;
  Shape shape;
  if (which == 0) {
    path = std::string(TESSEL_MODELS_DIR) + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
    if (!fs::exists(path)) return nullptr;
    shape = {1, 3, 48, 192};
    m->graph = driver::load_model(path, {{"x", shape}}, passes);
  } else {
    path = (fs::temp_directory_path() / "tessel_bench_resnet50.onnx").string();
    const auto proto = zoo::build_zoo_model("resnet50");
    std::ofstream(path, std::ios::binary) << zoo::serialize_model(proto);
    shape = zoo::find_zoo_model("resnet50").input_shape;
    m->graph = driver::load_model(path, {}, passes);
    fs::remove(path);
  }
  m->inputs[m->graph->inputs.at(0)->name] = random_tensor(shape, 7);
  const auto t0 = std::chrono::steady_clock::now();
  m->jit = std::make_unique<cpu_backend::CpuJit>(cpu_backend::compile_cpu(*m->graph));
  m->compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m.get();
}

const char* kNames[] = {"ppocr_cls", "resnet50"};

void BM_Model_Reference(benchmark::State& state) {
  Model* m = model(static_cast<int>(state.range(0)));
  if (!m) {
    state.SkipWithError("model missing: run scripts/fetch_models.sh");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(ops::run_reference(*m->graph, m->inputs));
  state.SetLabel(kNames[state.range(0)]);
}

void BM_Model_Tessel(benchmark::State& state) {
  Model* m = model(static_cast<int>(state.range(0)));
  if (!m) {
    state.SkipWithError("model missing: run scripts/fetch_models.sh");
    return;
  }
  const int threads = static_cast<int>(state.range(1));
  tessel_cpu_set_threads(threads);
  if (!m->checked) {
    m->checked = true;
    auto got = m->jit->run(m->inputs).outputs;
    auto want = ops::run_reference(*m->graph, m->inputs);
    m->ok = true;
    for (const auto& [name, ref] : want) {
      double diff = 0, mag = 0;
      const Tensor& t = got.at(name);
      for (int64_t i = 0; i < ref.numel(); ++i) {
        diff = std::max(diff, std::abs(t.get_as_double(i) - ref.get_as_double(i)));
        mag = std::max(mag, std::abs(ref.get_as_double(i)));
      }
      m->ok = m->ok && diff <= 1e-3 * mag + 1e-5;
    }
  }
  if (!m->ok) {
    state.SkipWithError("CPU outputs differ from the reference");
    return;
  }
  // Raw buffers, as a deployed caller (no tensor conversion in the timed loop).
  std::vector<std::vector<float>> ins, outs;
  std::vector<const float*> in_ptrs;
  std::vector<float*> out_ptrs;
  for (const auto& b : m->jit->program().inputs) {
    const Tensor& t = m->inputs.at(b.value);
    ins.emplace_back(t.data<float>(), t.data<float>() + t.numel());
    in_ptrs.push_back(ins.back().data());
  }
  for (const auto& b : m->jit->program().outputs)
    outs.emplace_back(static_cast<size_t>(std::max<int64_t>(1, shape_numel(b.shape))));
  for (auto& o : outs) out_ptrs.push_back(o.data());
  for (auto _ : state) {
    m->jit->run(in_ptrs.data(), out_ptrs.data());
    benchmark::ClobberMemory();
  }
  state.counters["compile_s"] = m->compile_seconds;
  state.SetLabel(
      fmt::format("{} {} thread{}", kNames[state.range(0)], threads, threads > 1 ? "s" : ""));
  tessel_cpu_set_threads(1);
}

BENCHMARK(BM_Model_Reference)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_Model_Tessel)
    ->Args({0, 1})
    ->Args({0, 2})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
