// How the simulator's host time grows with the core count (issue 10, "Scale"): host seconds per
// core per simulated kernel at 1, 4, 64, 256 and 1,024 cores of hw_configs/npu_4core.yaml
// (`cores` overridden, everything else as in the preset). The target is linear growth: the
// per-core cost at 1,024 cores within 2x of the per-core cost at 4.
//
//  BM_KernelAtCores/N: one kernel on N cores, as the compiler's measured tile selection runs
//    every candidate (compiler/backend/npu/compile.cpp, simulated_cycles): each core loads 16
//    tiles of 256 B GM -> UB, adds a scalar on the vector unit and stores them back, every step
//    ordered by set_flag/wait_flag (11 instructions a tile, each core its own GM region), then a
//    core_barrier. Each iteration is Simulator construction + load + run(), timing-only; the
//    program is built once, outside the timed loop, and shared (Simulator::load of a
//    shared_ptr<const isa::Program>: no copy), as a caller that simulates one program many times
//    holds it (the tile selection moves each candidate in: no copy either).
//  BM_KernelAtCoresCopy/N: the same with load(const isa::Program&), which copies the streams
//    every iteration (what every caller paid before the shared and moved loads).
//  BM_KernelAtCoresDramPerCore/N: the same kernel with memory.dram.bytes_per_cycle = 64 x N, so
//    the cores do not queue for the one DRAM channel: the simulated run is as long at every N
//    (what is left is the simulator's own per-core cost).
//  BM_BarrierAtCores/N: the same with every stream the core_barrier alone: what a run costs per
//    core before any instruction is simulated (modules, events, the scalar unit's process).
//  BM_ClassifierAtCores/N: the PP-OCR direction classifier (1x3x48x192, 75 kernels) compiled for
//    N cores once, outside the timed loop; each iteration simulates the whole program
//    timing-only (construction + load of the shared program with the constants' GM image +
//    run()).
// Counters: s_per_core_kernel = host seconds per iteration / (N x kernels); sim_cycles; processes
// (the MethodKernel processes of a run: one scalar unit per core plus one per pipe a core's
// stream uses).
// Run: build/bin/bench_bench_sim_scale (the 1,024-core classifier compile takes about a minute).
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

#include "benchmarks/bench_programs.h"
#include "benchmarks/compiled_models.h"
#include "isa/isa.h"
#include "npu_model/hw_config.h"
#include "simulator/simulator.h"

namespace {

using namespace tessel;
using bench::dma;
using bench::flag;
using bench::scalar;
using bench::vec;
using isa::DType;
using isa::Instruction;
using isa::MemRef;
using isa::Opcode;
using isa::Pipe;
using isa::Scope;

/// npu_4core with `cores` cores; with `dram_per_core` the DRAM channel's bytes per cycle grow
/// with the cores (64 per core: every core's MTE2 at its full rate), so no core waits for another.
npu::HwConfig hw_with_cores(int64_t cores, bool dram_per_core = false) {
  std::vector<npu::HwOverride> set = {{"cores", std::to_string(cores)}};
  if (dram_per_core) set.push_back({"memory.dram.bytes_per_cycle", std::to_string(64 * cores)});
  return npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml", set);
}

/// The kernel of BM_KernelAtCores on `cores` cores: core c works on GM bytes [c * 8 KiB, +8 KiB).
/// With `tiles` 0 every stream is the core_barrier alone (BM_BarrierAtCores).
isa::Program kernel_program(int64_t cores, int64_t tiles = 16) {
  constexpr int64_t kTileBytes = 256, kRegionBytes = 8192;
  isa::Program p;
  p.name = "scale_kernel";
  p.gm_bytes = static_cast<uint64_t>(cores * kRegionBytes);
  for (int64_t c = 0; c < cores; ++c) {
    const int64_t in = c * kRegionBytes, out = in + kRegionBytes / 2;
    std::vector<Instruction> s;
    for (int64_t t = 0; t < tiles; ++t) {
      s.push_back(dma(MemRef{Scope::ub, 0, 0}, MemRef{Scope::gm, 0, in + t * kTileBytes}, 128));
      s.push_back(flag(Opcode::set_flag, Pipe::mte2, Pipe::vector));
      s.push_back(flag(Opcode::wait_flag, Pipe::mte2, Pipe::vector));
      s.push_back(vec(Opcode::vadds, 1024, 0, 128));
      s.push_back(flag(Opcode::set_flag, Pipe::vector, Pipe::mte3));
      s.push_back(flag(Opcode::wait_flag, Pipe::vector, Pipe::mte3));
      s.push_back(dma(MemRef{Scope::gm, 0, out + t * kTileBytes}, MemRef{Scope::ub, 0, 1024}, 128));
      s.push_back(flag(Opcode::set_flag, Pipe::mte3, Pipe::mte2));
      s.push_back(flag(Opcode::wait_flag, Pipe::mte3, Pipe::mte2));
      s.push_back(scalar(Opcode::addi, 1, 1, 1));
      s.push_back(scalar(Opcode::addi, 2, 2, 1));
    }
    s.push_back(scalar(Opcode::core_barrier, 0, 0, 0));
    p.cores.push_back(std::move(s));
  }
  return p;
}

/// The kernel processes a run of `p` has: per core the scalar unit and each pipe its stream uses.
double process_count(const isa::Program& p) {
  double n = 0;
  for (const auto& stream : p.cores) {
    bool used[isa::kNumPipes] = {};
    used[0] = true;
    for (const Instruction& in : stream) used[int(in.pipe())] = true;
    for (bool u : used) n += u;
  }
  return n;
}

void report(benchmark::State& state, int64_t cores, int64_t kernels, uint64_t cycles,
            const isa::Program& p) {
  state.counters["s_per_core_kernel"] = benchmark::Counter(
      static_cast<double>(cores * kernels),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["sim_cycles"] = static_cast<double>(cycles);
  state.counters["processes"] = process_count(p);
}

void run_kernel(benchmark::State& state, int64_t tiles, bool dram_per_core = false,
                bool copy = false) {
  const int64_t cores = state.range(0);
  const npu::HwConfig hw = hw_with_cores(cores, dram_per_core);
  const auto p = std::make_shared<const isa::Program>(kernel_program(cores, tiles));
  sim::SimOptions options;
  options.functional = false;
  options.skip_gm_image = true;  // as the measured tile selection runs its candidates
  uint64_t cycles = 0;
  for (auto _ : state) {
    sim::Simulator s(hw, options);
    if (copy)
      s.load(*p);
    else
      s.load(p);
    cycles = s.run().total_cycles;
  }
  report(state, cores, 1, cycles, *p);
}

void BM_KernelAtCores(benchmark::State& state) { run_kernel(state, 16); }
void BM_KernelAtCoresCopy(benchmark::State& state) { run_kernel(state, 16, false, true); }
void BM_BarrierAtCores(benchmark::State& state) { run_kernel(state, 0); }
void BM_KernelAtCoresDramPerCore(benchmark::State& state) { run_kernel(state, 16, true); }

void BM_ClassifierAtCores(benchmark::State& state) {
  const int64_t cores = state.range(0);
  const npu::HwConfig hw = hw_with_cores(cores);
  const npu_backend::NpuModule& m =
      bench::compiled_model("ppocr_cls", static_cast<int>(cores)).module;
  const auto program = std::make_shared<const isa::Program>(m.program);
  sim::SimOptions options;
  options.functional = false;
  uint64_t cycles = 0;
  for (auto _ : state) {
    sim::Simulator s(hw, options);
    s.load(program);
    cycles = s.run().total_cycles;
  }
  report(state, cores, static_cast<int64_t>(m.kernels.size()), cycles, m.program);
}

/// The core counts every benchmark runs at (side by side in one process).
void at_core_counts(benchmark::internal::Benchmark* b) {
  for (int64_t cores : {1, 4, 64, 256, 1024}) b->Arg(cores);
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_KernelAtCores)->Apply(at_core_counts);
BENCHMARK(BM_KernelAtCoresCopy)->Apply(at_core_counts);
BENCHMARK(BM_KernelAtCoresDramPerCore)->Apply(at_core_counts);
BENCHMARK(BM_BarrierAtCores)->Apply(at_core_counts);
BENCHMARK(BM_ClassifierAtCores)->Apply(at_core_counts)->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
