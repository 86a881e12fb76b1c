// The analytical screening of `tessel dse` (compiler/dse/screen.h, docs/dse.md "Screening") on
// zoo:resnet50 (1x3x224x224, the default graph passes) for hw_configs/npu_4core.yaml:
//  BM_ScreenLowerAnchor: one structural config lowered with the analytical default schedules and
//    every kernel's cost-model profile kept (what a sweep pays once per distinct cube shape /
//    buffer sizes / cores ...).
//  BM_ScreenEstimatePoint/C: points priced in the loop a sweep runs, on anchor C cores: per point
//    the per-point keys set (DRAM bytes per cycle cycling over 32 .. 512, latency over 100 ..
//    400) and the estimate summed over every kernel; items/s = design points per second on one
//    host thread. The anchor is lowered outside the timed loop.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/npu/compile.h"
#include "compiler/driver/runner.h"
#include "compiler/dse/screen.h"
#include "npu_model/hw_config.h"

namespace tessel::bench {
namespace {

const Graph& resnet50() {
  static std::unique_ptr<Graph> g = [] {
    graph_passes::PipelineOptions passes;
    passes.available = driver::target_ops(driver::Target::npu);
    return driver::load_model("zoo:resnet50", {{"input", {1, 3, 224, 224}}}, passes);
  }();
  return *g;
}

npu::HwConfig config(int cores) {
  return npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml",
                             {{"cores", std::to_string(cores)}});
}

void BM_ScreenLowerAnchor(benchmark::State& state) {
  const Graph& g = resnet50();
  const npu::HwConfig hw = config(4);
  size_t kernels = 0;
  for (auto _ : state) {
    const dse::ScreenAnchor a = dse::lower_anchor(g, hw, {});
    kernels = a.kernels.size();
    benchmark::DoNotOptimize(kernels);
  }
  state.counters["kernels"] = static_cast<double>(kernels);
}
BENCHMARK(BM_ScreenLowerAnchor)->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_ScreenEstimatePoint(benchmark::State& state) {
  const Graph& g = resnet50();
  npu::HwConfig hw = config(static_cast<int>(state.range(0)));
  const dse::ScreenAnchor a = dse::lower_anchor(g, hw, {});
  std::vector<std::pair<double, double>> points;  // (bytes per cycle, latency)
  for (int i = 0; i < 1024; ++i) points.push_back({32.0 + (i * 37) % 481, 100.0 + (i * 13) % 301});
  dse::ScreenScratch scratch;
  size_t i = 0;
  double sum = 0;
  for (auto _ : state) {
    const auto& [bpc, lat] = points[i++ & 1023];
    dse::set_screen_point_key(hw, "memory.dram.bytes_per_cycle", bpc);
    dse::set_screen_point_key(hw, "memory.dram.latency_cycles", lat);
    sum += dse::estimate_cycles(a, hw, scratch);
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations());
  state.counters["kernels"] = static_cast<double>(a.kernels.size());
}
BENCHMARK(BM_ScreenEstimatePoint)->Arg(1)->Arg(4);

}  // namespace
}  // namespace tessel::bench

BENCHMARK_MAIN();
