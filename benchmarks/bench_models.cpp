// Simulator speed on whole models: host seconds to simulate one inference and simulated
// (dynamic) instructions per host second, timing-only (Arg 0) and functional (Arg 1).
//
//  BM_SimulateModel/resnet50: zoo:resnet50 at 1x3x224x224 (compiler/driver/zoo.h) on
//    hw_configs/npu_4core.yaml, the default schedule (double buffering, 4 cores).
//  BM_SimulateModel/ppocr_cls: the PP-OCR direction classifier at 1x3x48x192.
// Building, importing and compiling the model happen once, outside the timed loop; each iteration
// is Simulator construction + load (GM image with the constants) + input write + run(), i.e. what
// `tessel sim` spends after compiling. Counters: host_s (wall seconds per iteration), instr_per_s
// (SimResult::instructions / host_s), sim_cycles, static_instructions.
// Run: build/bin/bench_bench_models --benchmark_filter=resnet50 (one iteration each).
#include <benchmark/benchmark.h>

#include <chrono>

#include "benchmarks/compiled_models.h"
#include "simulator/simulator.h"

namespace {

using namespace tessel;

using Compiled = bench::CompiledModel;

void BM_SimulateModel(benchmark::State& state, const std::string& which) {
  const Compiled& c = bench::compiled_model(which);
  sim::SimOptions options;
  options.functional = state.range(0) != 0;
  uint64_t instructions = 0, cycles = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    sim::Simulator s(c.hw, options);
    s.load(c.module.program);
    // Inputs: zeros in the activation dtype are what load() leaves in GM; the values do not change
    // the timing, and in functional mode every instruction still computes.
    const sim::SimResult r = s.run();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    instructions += r.instructions;
    cycles = r.total_cycles;
  }
  uint64_t static_instructions = 0;
  for (const auto& core : c.module.program.cores) static_instructions += core.size();
  state.counters["host_s"] = seconds / static_cast<double>(state.iterations());
  state.counters["instr_per_s"] = static_cast<double>(instructions) / seconds;
  state.counters["sim_cycles"] = static_cast<double>(cycles);
  state.counters["static_instructions"] = static_cast<double>(static_instructions);
  state.SetLabel(options.functional ? "functional" : "timing-only");
}

BENCHMARK_CAPTURE(BM_SimulateModel, resnet50, std::string("resnet50"))
    ->Arg(0)
    ->Arg(1)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_SimulateModel, ppocr_cls, std::string("ppocr_cls"))
    ->Arg(0)
    ->Arg(1)
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
