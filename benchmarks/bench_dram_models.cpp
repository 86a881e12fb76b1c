// The banked DRAM model against the simple one on the same program (docs/memory.md,
// docs/results.md): zoo:resnet50 at 1x3x224x224 and the PP-OCR classifier, compiled once for
// hw_configs/npu_4core.yaml (benchmarks/compiled_models.h: the default schedule), then simulated
// timing-only with that config (simple model), with hw_configs/npu_4core_lpddr5.yaml (the same
// NPU, LPDDR5-6400 banked, XOR-hashed channels) and with it at channel_hash: none, alternating in
// every iteration so that all see the same machine load. Timed: Simulator construction + load +
// run() of each model (what `tessel sim` spends after compiling). Counters: host_s_simple,
// host_s_banked (wall seconds per run), banked_over_simple (their ratio), cycles_simple,
// cycles_banked. After the timed loop it prints the per-kernel table of docs/results.md (simulated
// cycles with each model and the banked model's row-buffer outcomes per kernel, the slowest 20 by
// banked cycles). Run: build/bin/bench_bench_dram_models --benchmark_filter=resnet50
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "benchmarks/compiled_models.h"
#include "simulator/simulator.h"

namespace {

using namespace tessel;

sim::SimResult simulate(const npu::HwConfig& hw, const isa::Program& program, double* seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  sim::SimOptions options;
  options.functional = false;
  if (const char* dir = std::getenv("TESSEL_BENCH_TRACE_DIR"))  // Chrome traces, for analysis
  {
    options.trace_path = std::string(dir) + "/" + hw.name + ".json";
    options.dram_trace_path = std::string(dir) + "/" + hw.name + ".dram.txt";
  }
  sim::Simulator s(hw, options);
  s.load(program);
  sim::SimResult r = s.run();
  *seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void print_kernels(const std::string& which, const bench::CompiledModel& c,
                   const sim::SimResult& simple, const sim::SimResult& banked) {
  std::vector<const npu_backend::KernelInfo*> ks;
  for (const auto& k : c.module.kernels)
    if (k.op_index >= 0 && static_cast<size_t>(k.op_index) < banked.op_cycles.size())
      ks.push_back(&k);
  std::stable_sort(ks.begin(), ks.end(), [&](auto* a, auto* b) {
    return banked.op_cycles[a->op_index] > banked.op_cycles[b->op_index];
  });
  std::printf("\n%s: %zu kernels; total %llu cycles simple, %llu banked (%+.1f%%)\n", which.c_str(),
              ks.size(), static_cast<unsigned long long>(simple.total_cycles),
              static_cast<unsigned long long>(banked.total_cycles),
              100.0 * (double(banked.total_cycles) / double(simple.total_cycles) - 1));
  std::printf("%-16s %10s %10s %7s %9s %6s %8s %9s\n", "kernel", "simple", "banked", "diff",
              "requests", "hits", "misses", "conflicts");
  for (size_t i = 0; i < ks.size() && i < 20; ++i) {
    const auto& k = *ks[i];
    const uint64_t a = simple.op_cycles[k.op_index], b = banked.op_cycles[k.op_index];
    const sim::OpDramStats& d = banked.op_dram[k.op_index];
    std::printf("%-16s %10llu %10llu %+6.1f%% %9llu %5.1f%% %8llu %9llu\n", k.node.c_str(),
                static_cast<unsigned long long>(a), static_cast<unsigned long long>(b),
                a ? 100.0 * (double(b) / double(a) - 1) : 0.0,
                static_cast<unsigned long long>(d.requests),
                d.requests ? 100.0 * double(d.row_hits) / double(d.requests) : 0.0,
                static_cast<unsigned long long>(d.row_misses),
                static_cast<unsigned long long>(d.bank_conflicts));
  }
  std::fflush(stdout);
}

void BM_DramModels(benchmark::State& state, const std::string& which) {
  const bench::CompiledModel& c = bench::compiled_model(which);
  const npu::HwConfig banked_hw =
      npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core_lpddr5.yaml");
  npu::HwConfig sliced_hw =
      npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core_lpddr5.yaml",
                          {{"memory.dram.banked.channel_hash", "none"}});
  sliced_hw.name += "-nohash";
  double t_simple = 0, t_banked = 0, t_sliced = 0;
  sim::SimResult simple, banked, sliced;
  for (auto _ : state) {
    simple = simulate(c.hw, c.module.program, &t_simple);
    banked = simulate(banked_hw, c.module.program, &t_banked);
    sliced = simulate(sliced_hw, c.module.program, &t_sliced);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["host_s_simple"] = t_simple / n;
  state.counters["host_s_banked"] = t_banked / n;
  state.counters["banked_over_simple"] = t_banked / t_simple;
  state.counters["cycles_simple"] = static_cast<double>(simple.total_cycles);
  state.counters["cycles_banked"] = static_cast<double>(banked.total_cycles);
  state.counters["cycles_banked_nohash"] = static_cast<double>(sliced.total_cycles);
  std::printf("\n(banked = npu_4core_lpddr5 as shipped, channel_hash: xor)");
  print_kernels(which, c, simple, banked);
  std::printf("\n(banked with channel_hash: none, the plain bit-slice interleave)");
  print_kernels(which, c, simple, sliced);
}

BENCHMARK_CAPTURE(BM_DramModels, resnet50, std::string("resnet50"))
    ->Iterations(3)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_DramModels, ppocr_cls, std::string("ppocr_cls"))
    ->Iterations(3)
    ->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
