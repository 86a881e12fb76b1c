// Speed of the ISA tools on compiled models: disassembling, assembling, encoding, decoding,
// verifying and interpreting (the functional interpreter, isa/interpreter.h) a whole program.
//
// The programs are compiled once per process, outside the timed loops
// (benchmarks/compiled_models.h: zoo:resnet50 at 1x3x224x224 and the PP-OCR classifier at
// 1x3x48x192 on npu_4core.yaml). Each iteration processes the whole program:
//  BM_Disassemble: isa::disassemble(program) -> text;      BM_Assemble: isa::assemble(text);
//  BM_Encode: isa::encode(program) -> bytes;                BM_Decode: isa::decode(bytes);
//  BM_Verify: isa::verify_program + isa::verify_sync;      BM_Interpret: isa::interpret
//  (ppocr_cls).
// Counters: instr_per_s (static instructions processed per host second; BM_Interpret: dynamic
// instructions), static_instructions, text_bytes / image_bytes.
// Run: build/bin/bench_bench_isa (about 30 s, most of it compiling ResNet-50 once).
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "benchmarks/compiled_models.h"
#include "isa/asm.h"
#include "isa/encoding.h"
#include "isa/interpreter.h"
#include "isa/verifier.h"

namespace {

using namespace tessel;

struct Compiled {
  const npu::HwConfig& hw;
  const isa::Program& program;
  std::string text;
  std::vector<uint8_t> image;
  uint64_t static_instructions = 0;
};

/// The model's program (benchmarks/compiled_models.h) with its text and binary forms.
const Compiled& compiled(const std::string& which) {
  static std::map<std::string, std::unique_ptr<Compiled>> cache;
  auto& c = cache[which];
  if (c) return *c;
  const bench::CompiledModel& m = bench::compiled_model(which);
  c.reset(new Compiled{m.hw, m.module.program, isa::disassemble(m.module.program),
                       isa::encode(m.module.program)});
  for (const auto& core : c->program.cores) c->static_instructions += core.size();
  return *c;
}

void counters(benchmark::State& state, const Compiled& c) {
  state.counters["instr_per_s"] = benchmark::Counter(
      static_cast<double>(c.static_instructions * state.iterations()), benchmark::Counter::kIsRate);
  state.counters["static_instructions"] = static_cast<double>(c.static_instructions);
}

void BM_Disassemble(benchmark::State& state, const std::string& which) {
  const Compiled& c = compiled(which);
  for (auto _ : state) benchmark::DoNotOptimize(isa::disassemble(c.program));
  counters(state, c);
  state.counters["text_bytes"] = static_cast<double>(c.text.size());
}

void BM_Assemble(benchmark::State& state, const std::string& which) {
  const Compiled& c = compiled(which);
  for (auto _ : state) benchmark::DoNotOptimize(isa::assemble(c.text, which + ".s"));
  counters(state, c);
  state.counters["text_bytes"] = static_cast<double>(c.text.size());
}

void BM_Encode(benchmark::State& state, const std::string& which) {
  const Compiled& c = compiled(which);
  for (auto _ : state) benchmark::DoNotOptimize(isa::encode(c.program));
  counters(state, c);
  state.counters["image_bytes"] = static_cast<double>(c.image.size());
}

void BM_Decode(benchmark::State& state, const std::string& which) {
  const Compiled& c = compiled(which);
  for (auto _ : state) benchmark::DoNotOptimize(isa::decode(c.image, which + ".bin"));
  counters(state, c);
  state.counters["image_bytes"] = static_cast<double>(c.image.size());
}

void BM_Verify(benchmark::State& state, const std::string& which) {
  const Compiled& c = compiled(which);
  for (auto _ : state) {
    benchmark::DoNotOptimize(isa::verify_program(c.program, c.hw));
    benchmark::DoNotOptimize(isa::verify_sync(c.program, c.hw));
  }
  counters(state, c);
}

void BM_Interpret(benchmark::State& state, const std::string& which) {
  const Compiled& c = compiled(which);
  std::vector<uint8_t> gm(c.program.gm_bytes, 0);
  for (const isa::GmBuffer& b : c.program.buffers)
    std::copy(b.init.begin(), b.init.end(), gm.begin() + static_cast<std::ptrdiff_t>(b.address));
  uint64_t dynamic = 0;
  for (auto _ : state) dynamic += isa::interpret(c.program, c.hw, gm).instructions;
  state.counters["instr_per_s"] =
      benchmark::Counter(static_cast<double>(dynamic), benchmark::Counter::kIsRate);
  state.counters["static_instructions"] = static_cast<double>(c.static_instructions);
}

const std::string kResnet = "resnet50", kCls = "ppocr_cls";
BENCHMARK_CAPTURE(BM_Disassemble, resnet50, kResnet)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Assemble, resnet50, kResnet)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, resnet50, kResnet)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, resnet50, kResnet)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Verify, resnet50, kResnet)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Disassemble, ppocr_cls, kCls)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Assemble, ppocr_cls, kCls)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, ppocr_cls, kCls)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, ppocr_cls, kCls)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Verify, ppocr_cls, kCls)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Interpret, ppocr_cls, kCls)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
