// core.cube.model: rtl (docs/rtl.md): real int8 programs -- a QLinearConv (u8 x i8, per-channel,
// padded) and a MatMulInteger compiled for npu_4core -- run on the SystemC model with the cube
// pipe's int8 mmads executed by the verilated cube, every one checked in lockstep against
// isa/semantics and npu::instruction_cost; the outputs and every core's cycles must be those of
// the transaction-level run. A program with an unsynchronised write into L0A while an mmad reads
// it shows the lockstep failing the run with the instruction, the C block and the element.
#include <gtest/gtest.h>

#include "compiler/support/error.h"
#include "compiler/tuner/tuner.h"
#include "isa/asm.h"
#include "tests/compiler/npu_test_util.h"
#include "tests/simulator/sim_test_util.h"
#include "tests/test_tensors.h"

namespace tessel::testing {
namespace {

// npu_4core with `model`; `davinci`: with DaVinci's int8 fractal core.cube.int8 = 16 x 32 x 16.
npu::HwConfig hw_with(const std::string& model, int cores = 4, int64_t rtl_sample = 0,
                      bool davinci = false) {
  std::vector<npu::HwOverride> o = {{"core.cube.model", model}, {"cores", std::to_string(cores)}};
  if (rtl_sample > 0) o.push_back({"core.cube.rtl_sample", std::to_string(rtl_sample)});
  if (davinci)
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"core.cube.int8.m", "16"}, {"core.cube.int8.k", "32"}, {"core.cube.int8.n", "16"}})
      o.push_back({k, v});
  return npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml", o);
}

struct BothWays {
  sim::SimResult tlm, rtl;
};

// Compiles `g` once (the model does not change the program) and runs it both ways.
BothWays run_both(const Graph& g, const std::map<std::string, Tensor>& inputs,
                  bool davinci = false) {
  const std::string y = g.outputs.at(0)->name;
  const npu::HwConfig tlm_hw = hw_with("tlm", 4, 0, davinci),
                      rtl_hw = hw_with("rtl", 4, 0, davinci);
  const npu_backend::NpuModule mod = npu_backend::compile_npu(g, tlm_hw);
  BothWays r;
  const Tensor want = run_interpreter(mod, tlm_hw, inputs).at(y);
  const Tensor tlm = run_simulator(mod, tlm_hw, inputs, &r.tlm).at(y);
  const Tensor rtl = run_simulator(mod, rtl_hw, inputs, &r.rtl).at(y);
  EXPECT_TRUE(bit_equal(tlm, want)) << "tlm run differs from the interpreter";
  EXPECT_TRUE(bit_equal(rtl, want)) << "rtl run differs from the interpreter";
  EXPECT_EQ(r.rtl.total_cycles, r.tlm.total_cycles);
  EXPECT_EQ(r.rtl.instructions, r.tlm.instructions);
  EXPECT_EQ(r.rtl.cores.size(), r.tlm.cores.size());
  for (size_t c = 0; c < r.tlm.cores.size() && c < r.rtl.cores.size(); ++c) {
    EXPECT_EQ(r.rtl.cores[c].finish_cycle, r.tlm.cores[c].finish_cycle) << "core " << c;
    EXPECT_EQ(r.rtl.cores[c].pipes[int(isa::Pipe::cube)].busy_cycles,
              r.tlm.cores[c].pipes[int(isa::Pipe::cube)].busy_cycles);
  }
  EXPECT_EQ(r.rtl.op_cycles, r.tlm.op_cycles);
  EXPECT_FALSE(r.tlm.rtl.enabled);
  EXPECT_EQ(r.tlm.rtl.mmad_checked, 0u);
  EXPECT_TRUE(r.rtl.rtl.enabled);
  EXPECT_EQ(r.rtl.rtl.value_mismatches, 0u);
  EXPECT_EQ(r.rtl.rtl.cycle_mismatches, 0u);
  EXPECT_EQ(r.rtl.rtl.max_cycle_error, 0u);
  EXPECT_EQ(r.rtl.rtl.float_mmads, 0u);  // an int8 program: every mmad is int8
  EXPECT_EQ(r.rtl.rtl.unsampled_mmads, 0u);
  std::cout << "[rtl lockstep] " << r.rtl.rtl.mmad_checked << " int8 mmads checked, "
            << r.rtl.rtl.rtl_cycles << " RTL cycles, " << r.rtl.total_cycles << " cycles; host "
            << r.tlm.host_seconds << " s tlm, " << r.rtl.host_seconds << " s rtl\n";
  return r;
}

// Every int8 mmad the program executes is one the RTL ran: the cube's MACs (npu::count_ops) are
// m1 k1 n1 x 4,096 per mmad, and the RTL clocked at least m1 k1 n1 steps per mmad (its clock
// runs while a command is pending or in flight), so rtl_cycles >= cube MACs / 4,096.
void expect_every_mmad_on_rtl(const sim::SimResult& r) {
  uint64_t cube_busy = 0;
  for (const auto& c : r.cores) cube_busy += c.pipes[int(isa::Pipe::cube)].busy_cycles;
  EXPECT_GT(r.rtl.mmad_checked, 0u);
  EXPECT_GE(r.rtl.rtl_cycles, cube_busy);
  // The clock also runs the 8-cycle drain after the last mmad of each busy stretch, at most 8
  // (LATENCY) cycles per mmad beyond the steps.
  EXPECT_LE(r.rtl.rtl_cycles, cube_busy + 8 * r.rtl.mmad_checked);
}

void qlinear_conv_both_ways(bool davinci) {
  GraphBuilder gb;
  const Shape xs{1, 8, 10, 10};
  Value* x = gb.input("x", xs, DType::u8);
  const Tensor W = random_int_tensor({24, 8, 3, 3}, DType::i8, 92, -127, 127);
  std::vector<float> ws;
  for (int m = 0; m < 24; ++m) ws.push_back(0.004f + 0.0007f * static_cast<float>(m));
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{3, 3});
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  Value* y = gb.node(
      "QLinearConv",
      {x, gb.constant("x_scale", Tensor::scalar_f32(0.02f)),
       gb.constant("x_zp", scalar(DType::u8, 113)), gb.constant("w", W),
       gb.constant("w_scale", Tensor::from_floats({24}, ws)),
       gb.constant("w_zp", scalar(DType::i8, 0)), gb.constant("y_scale", Tensor::scalar_f32(0.25f)),
       gb.constant("y_zp", scalar(DType::u8, 121)),
       gb.constant("B", random_int_tensor({24}, DType::i32, 93, -3000, 3000))},
      a);
  auto g = gb.finish({y});
  const BothWays r = run_both(*g, {{"x", random_int_tensor(xs, DType::u8, 91, 0, 255)}}, davinci);
  expect_every_mmad_on_rtl(r.rtl);
}

// A QLinearConv, u8 x i8, per-channel weight scales, padded, on the presets' int8 fractal and on
// DaVinci's 16 x 32 x 16 (the second verilated cube).
TEST(RtlLockstep, QLinearConvU8xI8PerChannelSameCyclesAndBits) { qlinear_conv_both_ways(false); }
TEST(RtlLockstep, QLinearConvOnDaVinciInt8FractalSameCyclesAndBits) {
  qlinear_conv_both_ways(true);
}

TEST(RtlLockstep, MatMulIntegerI8xI8SameCyclesAndBits) {
  GraphBuilder gb;
  const Shape as{70, 200};
  Value* a = gb.input("a", as, DType::i8);
  Value* y = gb.node(
      "MatMulInteger",
      {a, gb.constant("b", random_int_tensor({200, 90}, DType::i8, 5, -128, 127)),
       gb.constant("a_zp", scalar(DType::i8, -3)), gb.constant("b_zp", scalar(DType::i8, 0))},
      {});
  auto g = gb.finish({y});
  const BothWays r = run_both(*g, {{"a", random_int_tensor(as, DType::i8, 6, -128, 127)}});
  expect_every_mmad_on_rtl(r.rtl);
}

// core.cube.rtl_sample: 1 puts the first int8 mmad of each kernel on each core on the RTL and
// runs the rest transaction-level: the same cycles and bits, and the checked plus the unsampled
// mmads are the full run's.
TEST(RtlLockstep, SampledRunKeepsCyclesAndBits) {
  GraphBuilder gb;
  const Shape as{256, 1024};
  Value* a = gb.input("a", as, DType::i8);
  Value* y = gb.node(
      "MatMulInteger",
      {a, gb.constant("b", random_int_tensor({1024, 256}, DType::i8, 5, -128, 127)),
       gb.constant("a_zp", scalar(DType::i8, -3)), gb.constant("b_zp", scalar(DType::i8, 0))},
      {});
  auto g = gb.finish({y});
  const std::map<std::string, Tensor> inputs{{"a", random_int_tensor(as, DType::i8, 6, -128, 127)}};
  const npu::HwConfig full_hw = hw_with("rtl"), sampled_hw = hw_with("rtl", 4, 1);
  const npu_backend::NpuModule mod = npu_backend::compile_npu(*g, full_hw);
  sim::SimResult full, sampled;
  const Tensor f = run_simulator(mod, full_hw, inputs, &full).at(y->name);
  const Tensor s = run_simulator(mod, sampled_hw, inputs, &sampled).at(y->name);
  EXPECT_TRUE(bit_equal(f, s));
  EXPECT_EQ(sampled.total_cycles, full.total_cycles);
  EXPECT_GT(sampled.rtl.unsampled_mmads, 0u);
  EXPECT_LT(sampled.rtl.mmad_checked, full.rtl.mmad_checked);
  EXPECT_EQ(sampled.rtl.mmad_checked + sampled.rtl.unsampled_mmads, full.rtl.mmad_checked);
  // At most 1 per kernel (op_index) per core.
  EXPECT_LE(sampled.rtl.mmad_checked, uint64_t{4} * mod.program.op_names.size());
  std::cout << "[rtl sample] full: " << full.rtl.mmad_checked << " mmads, " << full.rtl.rtl_cycles
            << " RTL cycles, " << full.host_seconds
            << " s; rtl_sample 1: " << sampled.rtl.mmad_checked << " on the RTL + "
            << sampled.rtl.unsampled_mmads << " transaction-level, " << sampled.rtl.rtl_cycles
            << " RTL cycles, " << sampled.host_seconds << " s; " << full.total_cycles
            << " cycles\n";
  EXPECT_LT(sampled.rtl.rtl_cycles, full.rtl.rtl_cycles);
}

// The measured default schedule (tuner::compile_scheduled, as `tessel run` compiles) simulates
// candidates timing-only; with core.cube.model: rtl those simulations run the cube
// transaction-level, so the program is the one the tlm config gets (they failed before -- the RTL
// needs values -- and the analytical picks were kept: the int8 classifier got 24,987 instructions
// and 405,816 cycles instead of 23,635 and 401,812).
TEST(RtlLockstep, CompilingForRtlGivesTheTlmProgram) {
  // The classifier's first convolution: 3 -> 8 channels, 3 x 3, stride 2, on 48 x 192.
  GraphBuilder gb;
  const Shape xs{1, 3, 48, 192};
  Value* x = gb.input("x", xs, DType::i8);
  Value* y = gb.node(
      "ConvInteger",
      {x, gb.constant("w", random_int_tensor({8, 3, 3, 3}, DType::i8, 3, -127, 127)),
       gb.constant("x_zp", scalar(DType::i8, 0)), gb.constant("w_zp", scalar(DType::i8, 0))},
      [] {
        Attributes a;
        a.set("kernel_shape", std::vector<int64_t>{3, 3});
        a.set("strides", std::vector<int64_t>{2, 2});
        a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
        return a;
      }());
  auto g = gb.finish({y});
  const auto tlm = tuner::compile_scheduled(*g, hw_with("tlm"), {}, {});
  const auto rtl = tuner::compile_scheduled(*g, hw_with("rtl"), {}, {});
  EXPECT_EQ(isa::disassemble(rtl.module.program), isa::disassemble(tlm.module.program));
}

// Configs the RTL cannot run: a cube shape that is not the verilated one, a timing-only run.
TEST(RtlLockstep, ConfigErrorsNameTheCause) {
  using namespace testutil;
  const isa::Program p = program({mmad(l0c(0), l0a(0), l0b(0), 1, 1, 1)});
  auto error_of = [&](const npu::HwConfig& hw, bool functional) -> std::string {
    sim::SimOptions o;
    o.functional = functional;
    sim::Simulator s(hw, o);
    s.load(p);
    try {
      s.run();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const npu::HwConfig edge = npu::load_hw_config(
      std::string(TESSEL_SOURCE_DIR) + "/hw_configs/edge_1core.yaml", {{"core.cube.model", "rtl"}});
  const std::string e1 = error_of(edge, true);
  EXPECT_NE(e1.find("edge_1core.yaml: core.cube.model: rtl needs a cube the RTL was verilated "
                    "for, int8 fractal 16 x 16 x 16 or 16 x 32 x 16 with pipeline_latency_cycles "
                    "8; this config has 8 x 16 x 16"),
            std::string::npos)
      << e1;
  const std::string e2 = error_of(hw_with("rtl", 1), false);
  EXPECT_NE(e2.find("core.cube.model: rtl needs a functional run"), std::string::npos) << e2;
  EXPECT_EQ(error_of(hw_with("rtl", 1), true), "");  // the same program runs when it can
}

// An unsynchronised write: MTE1 overwrites A's last fractal (k1 = 128: read by the RTL 127 cycles
// after the mmad starts) some 20 cycles after the mmad started. The transaction-level model
// executes the mmad at its start cycle and never sees it; the RTL reads the new bytes, the
// lockstep check (isa/semantics at the start cycle) differs, and the run fails naming the
// instruction, the C block and the first differing element.
TEST(RtlLockstep, ValueMismatchFailsTheRunNamingTheElement) {
  using namespace testutil;
  const uint32_t k1 = 128, K = 16 * k1;
  std::vector<Instruction> code = {
      dma(isa::DType::u8, l1(0), gm(0), {16 * K}),              // A: 16 x 2048 u8
      dma(isa::DType::u8, l1(32768), gm(32768), {K * 16}),      // B: 2048 x 16 i8
      dma(isa::DType::u8, l1(65536), gm(65536), {256 + 5120}),  // A's new last fractal + filler
      set_flag(Pipe::mte2, Pipe::mte1, 0),
      wait_flag(Pipe::mte2, Pipe::mte1, 0),
      load2d(isa::DType::u8, l0a(0), l1(0), 16, K, K),
      load2d(isa::DType::i8, l0b(0), l1(32768), K, 16, 16),
      set_flag(Pipe::mte1, Pipe::cube, 0),
      wait_flag(Pipe::mte1, Pipe::cube, 0),
      mmad(l0c(0), l0a(0), l0b(0), 1, k1, 1),
      load2d(isa::DType::u8, l0b(32768), l1(65536 + 256), 16, 320, 320),   // 20 cycles on MTE1
      load2d(isa::DType::u8, l0a((k1 - 1) * 256), l1(65536), 16, 16, 16),  // A's last fractal
  };
  auto& mm = std::get<isa::MmadArgs>(code[9].args);
  mm.a_dtype = isa::DType::u8;
  mm.b_dtype = isa::DType::i8;
  std::vector<uint8_t> gmv(1 << 17);
  for (size_t i = 0; i < gmv.size(); ++i) gmv[i] = static_cast<uint8_t>(i * 7 + 3);
  for (size_t i = 65536; i < 65536 + 256; ++i) gmv[i] = static_cast<uint8_t>(255 - gmv[i]);
  auto run = [&](const std::string& model) {
    sim::Simulator s(hw_with(model, 1));
    s.load(program(code, gmv.size()));
    s.write_gm(0, gmv.data(), gmv.size());
    return s.run();
  };
  EXPECT_NO_THROW(run("tlm"));
  try {
    run("rtl");
    FAIL() << "the lockstep check did not fail the run";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("core 0 instruction 9 (mmad"), std::string::npos) << m;
    EXPECT_NE(m.find("RTL cube result differs from isa/semantics: C block (mb 0, nb 0) of 1 x 1 "
                     "blocks, element (row 0, col 0) at l0c byte 0"),
              std::string::npos)
        << m;
  }
}

}  // namespace
}  // namespace tessel::testing
