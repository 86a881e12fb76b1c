// Simulator speed: simulated (dynamic) instructions per host second, timing-only and functional,
// on synthetic programs built in code. Counters: instr_per_s (rate of SimResult::instructions),
// sim_cycles (simulated cycles of one run).
//
//  BM_DmaVectorFlagLoop: a loop of 11 instructions per iteration: dma gm->ub (256 B), flag pair,
//    vadds (128 f16), flag pair, dma ub->gm, flag pair, addi, blti -- every pipe instruction is
//    serialised by flags, so each costs SystemC context switches.
//  BM_VectorStream: a loop of 4 independent vector ops + 2 scalar instructions per iteration; the
//    issue queue fills, so the scalar unit stalls on every dispatch.
//  BM_ScalarLoop: a pure scalar loop (the scalar unit's local time decoupling).
#include <benchmark/benchmark.h>

#include "benchmarks/bench_programs.h"
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

npu::HwConfig bench_hw() {
  npu::HwConfig hw;
  hw.name = "bench-npu";
  hw.clock_ghz = 1.0;
  hw.cores = 1;
  auto& c = hw.core;
  c.scalar = {1, 16};
  c.cube = {16, 16, 16, DType::f16, DType::f32, 8};
  c.vector = {256, 4};
  c.buffers_bytes = {1 << 20, 64 << 10, 64 << 10, 256 << 10, 256 << 10};
  c.mte1 = {256, 4};
  c.mte2 = {64, 100};
  c.mte3 = {64, 100};
  c.fix = {256, 4};
  c.sync_event_ids = 8;
  hw.dram = {128, 200, int64_t{1} << 32};
  return hw;
}

isa::Program dma_vector_flag_loop(int64_t iterations) {
  isa::Program p;
  p.name = "dma_vector_flag_loop";
  p.gm_bytes = 1 << 16;
  p.cores = {{scalar(Opcode::li, 1, 0, 0),
              dma(MemRef{Scope::ub, 0, 0}, MemRef{Scope::gm, 0, 0}, 128),
              flag(Opcode::set_flag, Pipe::mte2, Pipe::vector),
              flag(Opcode::wait_flag, Pipe::mte2, Pipe::vector), vec(Opcode::vadds, 1024, 0, 128),
              flag(Opcode::set_flag, Pipe::vector, Pipe::mte3),
              flag(Opcode::wait_flag, Pipe::vector, Pipe::mte3),
              dma(MemRef{Scope::gm, 0, 4096}, MemRef{Scope::ub, 0, 1024}, 128),
              flag(Opcode::set_flag, Pipe::mte3, Pipe::mte2),
              flag(Opcode::wait_flag, Pipe::mte3, Pipe::mte2), scalar(Opcode::addi, 1, 1, 1),
              scalar(Opcode::blti, 0, 1, iterations, 1)}};
  return p;
}

isa::Program vector_stream(int64_t iterations) {
  isa::Program p;
  p.name = "vector_stream";
  p.gm_bytes = 4096;
  p.cores = {{scalar(Opcode::li, 1, 0, 0), vec(Opcode::vadd, 0, 4096, 128),
              vec(Opcode::vmul, 1024, 8192, 128), vec(Opcode::vexp, 2048, 12288, 128),
              vec(Opcode::vmax, 3072, 16384, 128), scalar(Opcode::addi, 1, 1, 1),
              scalar(Opcode::blti, 0, 1, iterations, 1)}};
  return p;
}

isa::Program scalar_loop(int64_t iterations) {
  isa::Program p;
  p.name = "scalar_loop";
  p.gm_bytes = 64;
  p.cores = {{scalar(Opcode::li, 1, 0, 0), scalar(Opcode::addi, 2, 2, 3),
              scalar(Opcode::addi, 1, 1, 1), scalar(Opcode::blti, 0, 1, iterations, 1)}};
  return p;
}

void run_bench(benchmark::State& state, const isa::Program& program) {
  sim::SimOptions options;
  options.functional = state.range(0) != 0;
  sim::Simulator sim(bench_hw(), options);
  sim.load(program);
  uint64_t instructions = 0, cycles = 0;
  for (auto _ : state) {
    const sim::SimResult r = sim.run();
    instructions += r.instructions;
    cycles = r.total_cycles;
  }
  state.counters["instr_per_s"] =
      benchmark::Counter(static_cast<double>(instructions), benchmark::Counter::kIsRate);
  state.counters["sim_cycles"] = static_cast<double>(cycles);
  state.SetLabel(options.functional ? "functional" : "timing-only");
}

void BM_DmaVectorFlagLoop(benchmark::State& state) {
  run_bench(state, dma_vector_flag_loop(20000));
}
void BM_VectorStream(benchmark::State& state) { run_bench(state, vector_stream(40000)); }
void BM_ScalarLoop(benchmark::State& state) { run_bench(state, scalar_loop(1000000)); }

BENCHMARK(BM_DmaVectorFlagLoop)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VectorStream)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScalarLoop)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
