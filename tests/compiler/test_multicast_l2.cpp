// The compiler's use of the memory system of issue 17: with memory.multicast the conv and matmul
// tilers load the operand every core of their split reads alike with dma_mc (tile_cube.cpp,
// shared_operand_cores); the program computes the same bits as the unicast one (interpreter and
// cycle model), reads that operand from GM once per core set, and the analytical profile counts
// its bytes once. With a shared L2 (memory.l2) the same kernels run unchanged through the L2.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/compiler/npu_test_util.h"

namespace tessel::testing {
namespace {

npu::HwConfig hw_with(std::vector<npu::HwOverride> overrides) {
  return npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml",
                             overrides);
}

size_t count_op(const isa::Program& p, isa::Opcode op) {
  size_t n = 0;
  for (const auto& core : p.cores)
    n += std::count_if(core.begin(), core.end(), [&](const auto& in) { return in.op == op; });
  return n;
}

struct Compiled {
  npu_backend::NpuModule module;
  std::map<std::string, Tensor> outputs;
  sim::SimResult result;
};

Compiled compile_and_run(const Graph& g, const std::map<std::string, Tensor>& inputs,
                         const npu::HwConfig& hw, const npu_backend::NpuCompileOptions& options) {
  Compiled c;
  c.module = npu_backend::compile_npu(g, hw, options);
  c.outputs = run_interpreter(c.module, hw, inputs);
  const auto simulated = run_simulator(c.module, hw, inputs, &c.result);
  for (const auto& [name, t] : c.outputs)
    EXPECT_TRUE(bit_equal(t, simulated.at(name))) << name << ": simulator differs from interpreter";
  return c;
}

/// Compiles `g` with `knobs` on npu_4core without and with multicast (and with multicast and an
/// 8 MiB L2) and checks: same bits everywhere, `want_mc` > 0 dma_mc in the multicast program and
/// none in the other, fewer DRAM bytes read with multicast, and the L2 run's outputs too.
void check_multicast(const Graph& g, const std::map<std::string, Tensor>& inputs,
                     const std::string& op, const passes::Knobs& knobs) {
  npu_backend::NpuCompileOptions options;
  options.op_knobs[op] = knobs;
  const Compiled uc = compile_and_run(g, inputs, hw_with({}), options);
  const Compiled mc =
      compile_and_run(g, inputs, hw_with({{"memory.multicast", "dma_mc"}}), options);
  const Compiled l2 = compile_and_run(
      g, inputs, hw_with({{"memory.multicast", "dma_mc"}, {"memory.l2.capacity_bytes", "8388608"}}),
      options);
  EXPECT_EQ(count_op(uc.module.program, isa::Opcode::dma_mc), 0u);
  const size_t n_mc = count_op(mc.module.program, isa::Opcode::dma_mc);
  EXPECT_GT(n_mc, 0u);
  for (const auto& [name, t] : uc.outputs) {
    EXPECT_TRUE(bit_equal(t, mc.outputs.at(name))) << name << ": multicast changes the result";
    EXPECT_TRUE(bit_equal(t, l2.outputs.at(name))) << name << ": the L2 changes the result";
  }
  // Every core of the set issues the same dma_mc; all but the set's read receive it.
  EXPECT_EQ(mc.result.multicast.requests, n_mc);
  EXPECT_GT(mc.result.multicast.received, 0u);
  EXPECT_EQ(mc.result.dram_read_bytes + mc.result.multicast.saved_bytes, uc.result.dram_read_bytes);
  EXPECT_GT(l2.result.l2.requests, 0u);
}

TEST(MulticastCompile, ConvRowSplitMulticastsTheResidentWeights) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 32, 32, 32});
  Value* w = b.constant("w", random_tensor({64, 32, 3, 3}, 41, -0.05f, 0.05f));
  Value* y = b.node("Conv", {x, w},
                    attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"kernel_shape", std::vector<int64_t>{3, 3}}}));
  auto g = b.finish({y});
  // Every tile knob pinned: the analytical default's tiles may differ with and without multicast
  // (the shared weights are priced once per set), and another K chunk sums in another fp16 order.
  check_multicast(*g, {{"x", random_tensor({1, 32, 32, 32}, 42)}}, "Conv_0",
                  {{"cores", 4},
                   {"split", 3},
                   {"weights_resident", 1},
                   {"ht", 8},
                   {"kc", 32},
                   {"mt", 64},
                   {"wt", 32},
                   {"double_buffer", 1}});
}

TEST(MulticastCompile, ConvChannelSplitMulticastsTheInputWindows) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 32, 16, 16});
  Value* w = b.constant("w", random_tensor({128, 32, 3, 3}, 43, -0.05f, 0.05f));
  Value* y = b.node("Conv", {x, w},
                    attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"kernel_shape", std::vector<int64_t>{3, 3}}}));
  auto g = b.finish({y});
  // Every tile knob pinned (as above).
  check_multicast(*g, {{"x", random_tensor({1, 32, 16, 16}, 44)}}, "Conv_0",
                  {{"cores", 4},
                   {"split", 2},
                   {"mt", 32},
                   {"kc", 32},
                   {"ht", 16},
                   {"wt", 16},
                   {"weights_resident", 0},
                   {"double_buffer", 1}});
}

TEST(MulticastCompile, MatmulRowSplitMulticastsB) {
  GraphBuilder b;
  Value* x = b.input("x", {256, 128});
  Value* w = b.constant("w", random_tensor({128, 64}, 45, -0.1f, 0.1f));
  Value* y = b.node("MatMul", {x, w});
  auto g = b.finish({y});
  // kt pinned too: the analytical default's K chunk differs with and without multicast (the
  // shared B is priced once per set), and another K chunk sums in another fp16 order.
  check_multicast(*g, {{"x", random_tensor({256, 128}, 46)}}, "MatMul_0",
                  {{"cores", 4}, {"split", 1}, {"mt", 64}, {"kt", 128}});
}

// The tiling's analytical profile knows the shared operand: a conv split over output rows with
// resident weights loads every co tile's weights on every core (4 x 36,864 bytes of DRAM without
// multicast or L2); with an L2 or multicast the other cores get them from the first core's read,
// so the profile counts them once: 3 x 36,864 = 110,592 bytes fewer (64 x 32 x 3 x 3 fp16
// weights, whole 32-byte bursts).
TEST(MulticastCompile, ProfileCountsSharedWeightsOncePerSet) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 32, 32, 32});
  Value* w = b.constant("w", random_tensor({64, 32, 3, 3}, 41, -0.05f, 0.05f));
  Value* y = b.node("Conv", {x, w},
                    attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"kernel_shape", std::vector<int64_t>{3, 3}}}));
  auto g = b.finish({y});
  auto dram_bytes = [&](const npu::HwConfig& hw) {
    const npu_backend::LoweredGraph lowered(*g, hw, {});
    const passes::KernelSchedule& s = *lowered.kernels().at(0).schedule;
    const passes::Knobs k = passes::default_knobs(
        s, hw, {{"cores", 4}, {"split", 3}, {"weights_resident", 1}, {"ht", 8}, {"mt", 64}});
    return s.profile(k).dram_bytes;
  };
  const double plain = dram_bytes(hw_with({}));
  EXPECT_DOUBLE_EQ(plain - dram_bytes(hw_with({{"memory.l2.capacity_bytes", "4194304"}})),
                   3 * 36864.0);
  EXPECT_DOUBLE_EQ(plain - dram_bytes(hw_with({{"memory.multicast", "dma_mc"}})), 3 * 36864.0);
}

}  // namespace
}  // namespace tessel::testing
