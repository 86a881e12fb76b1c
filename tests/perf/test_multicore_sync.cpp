// Issue #4 correctness: (a) the multicore schedule computes exactly the single-core result, on a
// real model and on a small ResNet-style conv net; (b) missing synchronisation is caught: a
// deleted set_flag deadlocks the simulator with a report naming the pipe and flag, a deleted
// wait_flag (which cannot deadlock: flags are counters, docs/isa.md) and a redundant set/wait pair
// are found statically by isa::verify_sync; every compiled program passes verify_sync.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "compiler/backend/npu/compile.h"
#include "compiler/driver/runner.h"
#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"
#include "isa/verifier.h"
#include "npu_model/hw_config.h"
#include "simulator/simulator.h"

namespace tessel::testing {
namespace {

const std::string kSrc = TESSEL_SOURCE_DIR;
const std::string kModels = TESSEL_MODELS_DIR;

npu::HwConfig hw4(std::vector<npu::HwOverride> ov = {}) {
  return npu::load_hw_config(kSrc + "/hw_configs/npu_4core.yaml", ov);
}

Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_floats(shape, v);
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

/// A graph under construction with unique value and node names.
struct Builder {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();
  int n = 0;
  Builder() {
    g->name = "mini_resnet";
    g->opset = 17;
  }
  Value* input(const std::string& name, const Shape& shape) {
    Value* v = g->add_value(name, DType::f32, shape);
    g->inputs.push_back(v);
    return v;
  }
  Value* constant(Tensor t) { return g->add_constant("c" + std::to_string(n++), std::move(t)); }
  Value* node(const std::string& op, std::vector<Value*> ins, Attributes attrs = {}) {
    const std::string id = op + std::to_string(n++);
    Value* out = g->add_value(id + "_out", DType::undefined, {});
    Node* node = g->add_node(op, id, std::move(ins), {out}, std::move(attrs));
    ops::infer_node(*node);
    return out;
  }
  Value* conv(Value* x, int64_t cin, int64_t cout, int64_t k, int64_t stride, uint32_t seed) {
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    a.set("pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
    a.set("strides", std::vector<int64_t>{stride, stride});
    const float b = std::sqrt(3.0f / static_cast<float>(cin * k * k));
    return node("Conv",
                {x, constant(random_tensor({cout, cin, k, k}, seed, -b, b)),
                 constant(random_tensor({cout}, seed + 1, -0.1f, 0.1f))},
                std::move(a));
  }
};

/// A ResNet-style network in miniature (the zoo's resnet18 layer pattern at 32x32): stem conv 3x3/2
/// + ReLU, max pool 2x2, one basic block with a strided 3x3 conv and a 1x1/2 projection shortcut,
/// residual Add + ReLU, global average pool, flatten, FC 10.
std::unique_ptr<Graph> mini_resnet() {
  Builder b;
  Value* x = b.input("x", {1, 8, 32, 32});
  Value* s = b.node("Relu", {b.conv(x, 8, 32, 3, 2, 1)});
  Attributes mp;
  mp.set("kernel_shape", std::vector<int64_t>{2, 2});
  mp.set("strides", std::vector<int64_t>{2, 2});
  Value* p = b.node("MaxPool", {s}, mp);
  Value* c1 = b.node("Relu", {b.conv(p, 32, 64, 3, 2, 3)});
  Value* c2 = b.conv(c1, 64, 64, 3, 1, 5);
  Value* sc = b.conv(p, 32, 64, 1, 2, 7);
  Value* r = b.node("Relu", {b.node("Add", {c2, sc})});
  Value* gap = b.node("GlobalAveragePool", {r});
  Value* f = b.node("Flatten", {gap});
  Attributes gm;
  gm.set("transB", int64_t{1});
  Value* y = b.node(
      "Gemm",
      {f, b.constant(random_tensor({10, 64}, 9, -0.2f, 0.2f)), b.constant(random_tensor({10}, 10))},
      gm);
  b.g->outputs = {y};
  return std::move(b.g);
}

/// Runs `graph` functionally on the SystemC model of npu_4core with the multicore schedule on and
/// off, the single-core compile pinned to the multicore compile's tiles (its knobs), so the two
/// programs compute the same tiles and differ only in which core runs them; checks the outputs are
/// bit-identical, that single-core leaves cores 1..3 without pipe work, and that the multicore
/// schedule is faster.
void expect_multicore_equals_single_core(const Graph& graph,
                                         const std::map<std::string, Tensor>& inputs) {
  const npu::HwConfig hw = hw4();
  driver::RunOptions multi, single;
  const auto m = driver::run_model(graph, driver::Target::npu, &hw, inputs, multi);
  single.compile.multicore = false;
  single.compile.task_knobs = npu_backend::same_tiles_on_one_core(m.npu->module).task_knobs;
  single.schedule.measure_default = false;
  const auto s = driver::run_model(graph, driver::Target::npu, &hw, inputs, single);
  ASSERT_FALSE(m.outputs.empty());
  for (const auto& [name, t] : m.outputs)
    EXPECT_TRUE(bit_equal(t, s.outputs.at(name))) << name << ": multicore differs from one core";
  const auto& sc = s.npu->sim.cores;
  ASSERT_EQ(sc.size(), 4u);
  for (size_t c = 1; c < sc.size(); ++c)
    for (int p = 1; p < isa::kNumPipes; ++p)
      EXPECT_EQ(sc[c].pipes[p].busy_cycles, 0u) << "core " << c << " pipe " << p;
  uint64_t busy_other = 0;
  for (size_t c = 1; c < m.npu->sim.cores.size(); ++c)
    busy_other += m.npu->sim.cores[c].pipes[int(isa::Pipe::mte2)].busy_cycles;
  EXPECT_GT(busy_other, 0u) << "the multicore schedule gave the other cores no work";
  EXPECT_LT(m.npu->sim.total_cycles, s.npu->sim.total_cycles);
  // Both schedules' programs pair every set_flag with a wait_flag.
  EXPECT_EQ(isa::verify_sync(m.npu->module.program, hw), std::vector<std::string>{});
  EXPECT_EQ(isa::verify_sync(s.npu->module.program, hw), std::vector<std::string>{});
}

TEST(Multicore, RealModelBitIdenticalToSingleCore) {
  // The PP-OCR direction classifier (MobileNetV3: depthwise/grouped convs, SE blocks, hard-swish).
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::npu);
  auto graph = driver::load_model(kModels + "/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                                  {{"x", {1, 3, 48, 192}}}, passes);
  expect_multicore_equals_single_core(*graph, {{"x", random_tensor({1, 3, 48, 192}, 1)}});
}

TEST(Multicore, ResNetStyleConvNetBitIdenticalToSingleCore) {
  auto graph = mini_resnet();
  expect_multicore_equals_single_core(*graph, {{"x", random_tensor({1, 8, 32, 32}, 2)}});
}

TEST(Sync, EveryCompiledModelPairsItsFlags) {
  // insert_sync's output on the real models and two zoo models, with each schedule: no missing,
  // unbalanced or redundant set/wait pair (isa::verify_sync), and a valid program.
  struct M {
    std::string model;
    std::map<std::string, Shape> shapes;
  };
  const std::vector<M> models = {
      {kModels + "/ch_ppocr_mobile_v2.0_cls_infer.onnx", {{"x", {1, 3, 48, 192}}}},
      {kModels + "/hello_deepa.onnx", {}},
      {kModels + "/ch_PP-OCRv4_det_infer.onnx", {{"x", {1, 3, 64, 96}}}},
      {kModels + "/ch_PP-OCRv4_rec_infer.onnx", {{"x", {1, 3, 48, 320}}}},
      {"zoo:bert_layer", {}},
      {"zoo:resnet18", {}},
  };
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::npu);
  const npu::HwConfig hw = hw4();
  for (const auto& m : models) {
    auto graph = driver::load_model(m.model, m.shapes, passes);
    for (int schedule = 0; schedule < 4; ++schedule) {
      npu_backend::NpuCompileOptions o;
      o.double_buffer = schedule & 1;
      o.multicore = schedule & 2;
      const auto mod = npu_backend::compile_npu(*graph, hw, o);
      EXPECT_EQ(isa::verify_sync(mod.program, hw), std::vector<std::string>{})
          << m.model << " double_buffer " << o.double_buffer << " multicore " << o.multicore;
      EXPECT_EQ(isa::verify_program(mod.program, hw), std::vector<std::string>{}) << m.model;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Deleted and redundant synchronisation

/// Removes instruction `pc` from `code`, relocating branch targets behind it.
void erase_instruction(std::vector<isa::Instruction>& code, size_t pc) {
  code.erase(code.begin() + static_cast<std::ptrdiff_t>(pc));
  for (auto& in : code)
    if (in.op == isa::Opcode::blt || in.op == isa::Opcode::blti || in.op == isa::Opcode::jmp) {
      auto& t = std::get<isa::ScalarArgs>(in.args).target;
      if (t > static_cast<int32_t>(pc)) --t;
    }
}

/// A real kernel: the element-wise Add of two [1, 64, 56, 56] tensors (tiled over UB: GM->UB
/// loads on MTE2, vadd on VECTOR, the UB->GM store on MTE3, flags between them), one core.
npu_backend::NpuModule add_kernel(const npu::HwConfig& hw) {
  Builder b;
  Value* x = b.input("x", {1, 64, 56, 56});
  Value* y = b.input("y", {1, 64, 56, 56});
  b.g->outputs = {b.node("Add", {x, y})};
  return npu_backend::compile_npu(*b.g, hw);
}

size_t find_op(const std::vector<isa::Instruction>& code, isa::Opcode op, isa::Pipe src,
               isa::Pipe dst) {
  for (size_t i = 0; i < code.size(); ++i)
    if (code[i].op == op) {
      const auto& s = std::get<isa::SyncArgs>(code[i].args);
      if (s.src == src && s.dst == dst) return i;
    }
  return code.size();
}

sim::SimResult simulate(const npu::HwConfig& hw, const isa::Program& p) {
  sim::Simulator s(hw, sim::SimOptions{false, "", 0});
  s.load(p);
  return s.run();
}

TEST(Sync, CompiledKernelIsSoundAndSimulates) {
  const npu::HwConfig hw = hw4({{"cores", "1"}});
  const auto mod = add_kernel(hw);
  EXPECT_EQ(isa::verify_program(mod.program, hw), std::vector<std::string>{});
  EXPECT_EQ(isa::verify_sync(mod.program, hw), std::vector<std::string>{});
  EXPECT_GT(simulate(hw, mod.program).total_cycles, 0u);
}

TEST(Sync, DeletedSetFlagDeadlocksNamingThePipeAndFlag) {
  const npu::HwConfig hw = hw4({{"cores", "1"}});
  auto mod = add_kernel(hw);
  auto& code = mod.program.cores[0];
  // The "tile loaded" flag: MTE2 sets it after the loads, VECTOR waits for it before the vadd.
  const size_t pc = find_op(code, isa::Opcode::set_flag, isa::Pipe::mte2, isa::Pipe::vector);
  ASSERT_LT(pc, code.size()) << "no set_flag mte2 -> vector in the Add kernel";
  const auto ev = std::get<isa::SyncArgs>(code[pc].args).event;
  erase_instruction(code, pc);
  try {
    simulate(hw, mod.program);
    FAIL() << "deleting set_flag mte2 -> vector did not deadlock";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("deadlock"), std::string::npos) << msg;
    EXPECT_NE(msg.find("core 0 pipe vector"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("waiting for flag (src mte2, dst vector, event {})", ev)),
              std::string::npos)
        << msg;
  }
  // The verifier finds it without running: the first wait_flag mte2 -> vector has nothing to
  // consume.
  const auto problems = isa::verify_sync(mod.program, hw);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("wait_flag mte2, vector"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("missing set_flag"), std::string::npos) << problems[0];
}

TEST(Sync, DeletedWaitFlagIsFoundByTheVerifier) {
  // Flags are counters (docs/isa.md, Synchronisation): a deleted wait_flag leaves a token behind
  // and never blocks anything, so the simulator cannot report it as a deadlock -- the pipes just
  // run unordered. verify_sync finds it statically: the count no longer returns to 0.
  const npu::HwConfig hw = hw4({{"cores", "1"}});
  auto mod = add_kernel(hw);
  auto& code = mod.program.cores[0];
  const size_t pc = find_op(code, isa::Opcode::wait_flag, isa::Pipe::mte2, isa::Pipe::vector);
  ASSERT_LT(pc, code.size());
  const auto ev = std::get<isa::SyncArgs>(code[pc].args).event;
  erase_instruction(code, pc);
  EXPECT_NO_THROW(simulate(hw, mod.program));
  const auto problems = isa::verify_sync(mod.program, hw);
  ASSERT_FALSE(problems.empty());
  const std::string flag = fmt::format("flag (src mte2, dst vector, event {})", ev);
  bool named = false;
  for (const auto& p : problems) named |= p.find(flag) != std::string::npos;
  EXPECT_TRUE(named) << "no message names " << flag << ": " << problems[0];
}

TEST(Sync, RedundantPairAcrossABarrierIsReported) {
  const npu::HwConfig hw = hw4({{"cores", "1"}});
  auto mod = add_kernel(hw);
  auto& code = mod.program.cores[0];
  ASSERT_EQ(code.back().op, isa::Opcode::barrier);
  // set_flag mte3 -> mte2 before the kernel's final barrier, its wait_flag after it: the barrier
  // already drains MTE3 before anything after it is dispatched.
  isa::Instruction set, wait;
  set.op = isa::Opcode::set_flag;
  set.args = isa::SyncArgs{isa::Pipe::mte3, isa::Pipe::mte2, 5};
  wait.op = isa::Opcode::wait_flag;
  wait.args = set.args;
  code.insert(code.end() - 1, set);
  code.push_back(wait);
  const auto problems = isa::verify_sync(mod.program, hw);
  ASSERT_EQ(problems.size(), 1u) << (problems.empty() ? "" : problems[0]);
  EXPECT_NE(
      problems[0].find(fmt::format("instruction {} (wait_flag mte3, mte2, 5)", code.size() - 1)),
      std::string::npos)
      << problems[0];
  EXPECT_NE(problems[0].find("redundant set/wait pair"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find(fmt::format("barrier at instruction {}", code.size() - 2)),
            std::string::npos)
      << problems[0];
}

TEST(Sync, UnbalancedLoopIsReportedAtTheJoin) {
  // li x1, 0; L: set_flag mte2, vector, 0; addi x1, x1, 1; blti x1, 4, L; wait_flag ... once:
  // the loop sets the flag once per iteration but nothing waits inside it.
  const npu::HwConfig hw = hw4({{"cores", "1"}});
  isa::Program p;
  p.cores.resize(1);
  auto scalar = [](isa::Opcode op, uint8_t rd, uint8_t rs, int64_t imm, int32_t target = -1) {
    isa::Instruction in;
    in.op = op;
    in.args = isa::ScalarArgs{rd, rs, 0, imm, target};
    return in;
  };
  isa::Instruction set, wait;
  set.op = isa::Opcode::set_flag;
  set.args = isa::SyncArgs{isa::Pipe::mte2, isa::Pipe::vector, 0};
  wait.op = isa::Opcode::wait_flag;
  wait.args = set.args;
  p.cores[0] = {scalar(isa::Opcode::li, 1, 0, 0), set, scalar(isa::Opcode::addi, 1, 1, 1),
                scalar(isa::Opcode::blti, 1, 0, 4, 1), wait};
  const auto problems = isa::verify_sync(p, hw);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("core 0, instruction 1 (set_flag mte2, vector, 0)"), std::string::npos)
      << problems[0];
  EXPECT_NE(problems[0].find("count 0 on one path into this instruction and 1 on another"),
            std::string::npos)
      << problems[0];
  // Balanced: a wait in the loop body too.
  p.cores[0] = {scalar(isa::Opcode::li, 1, 0, 0), set, wait, scalar(isa::Opcode::addi, 1, 1, 1),
                scalar(isa::Opcode::blti, 1, 0, 4, 1)};
  EXPECT_EQ(isa::verify_sync(p, hw), std::vector<std::string>{});
}

}  // namespace
}  // namespace tessel::testing
