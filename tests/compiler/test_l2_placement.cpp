// The L2 placement passes (memory.l2.placement; passes/loop/l2_prefetch.cpp, l2_discard.cpp):
// their plans on hand-made kernel lists, and a small conv chain compiled with prefetch_discard on
// npu_4core with an 8 MiB L2: the hints are there (core 0 only), the interpreter and the cycle
// model compute the same bits as without hints, within fp16 bounds of the fp32 reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "isa/verifier.h"
#include "passes/loop/npu_passes.h"
#include "tests/compiler/npu_test_util.h"
#include "tests/test_compare.h"

namespace tessel::testing {
namespace {

using passes::GmRange;
using passes::KernelGmUse;

TEST(L2Placement, PrefetchPlanTakesTheNextKernelsWeightsThatFitHalfTheL2) {
  // L2 of 1000 bytes: budget 500. Kernel 0 reads constant A (100 B at 0); kernel 1 reads B
  // (300 B at 1000); kernel 2 reads C (150 B at 2000) and A again; kernel 3 reads D (400 B at
  // 3000).
  //  - at kernel 0: ahead = B (300), then C (450 <= 500); A is seen (read by kernel 0); D would
  //    make 850 > 500: cut to the 50 bytes that fit, and the walk stops -> {B, C, D[0, 50)}.
  //  - at kernel 1: B is seen; C (150, requested whole) and D (550 > 500): D may now have
  //    500 - 150 = 350 bytes ahead, 50 were requested -> D[50, 350) = {3050, 300}.
  //  - at kernel 2: C and A are seen; D (400 <= 500) whole, 350 requested -> {3350, 50}.
  //  - at kernel 3: nothing left ahead to request.
  const GmRange A{0, 100}, B{1000, 300}, C{2000, 150}, D{3000, 400};
  std::vector<KernelGmUse> k(4);
  k[0].constants = {A};
  k[1].constants = {B};
  k[2].constants = {C, A};
  k[3].constants = {D};
  const auto plan = passes::plan_l2_prefetch(k, 1000);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0], (std::vector<GmRange>{B, C, GmRange{3000, 50}}));
  EXPECT_EQ(plan[1], (std::vector<GmRange>{GmRange{3050, 300}}));
  EXPECT_EQ(plan[2], (std::vector<GmRange>{GmRange{3350, 50}}));
  EXPECT_TRUE(plan[3].empty());
  // Without an L2 there is no plan; with a big one every later constant at kernel 0.
  for (const auto& p : passes::plan_l2_prefetch(k, 0)) EXPECT_TRUE(p.empty());
  EXPECT_EQ(passes::plan_l2_prefetch(k, 1 << 20)[0], (std::vector<GmRange>{B, C, D}));
}

TEST(L2Placement, DiscardPlanDropsATensorAfterItsLastUse) {
  // X (written by 0, read by 1 and 3), Y (written by 1, read by 2), Z (written by 2, never read):
  // X after kernel 3, Y after kernel 2, Z after kernel 2 (its writer); sorted by address.
  const GmRange X{0, 64}, Y{64, 128}, Z{192, 64};
  std::vector<KernelGmUse> k(4);
  k[0].intermediates = {X};
  k[1].intermediates = {X, Y};
  k[2].intermediates = {Y, Z};
  k[3].intermediates = {X};
  const auto plan = passes::plan_l2_discard(k);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_TRUE(plan[0].empty());
  EXPECT_TRUE(plan[1].empty());
  EXPECT_EQ(plan[2], (std::vector<GmRange>{Y, Z}));
  EXPECT_EQ(plan[3], (std::vector<GmRange>{X}));
}

npu::HwConfig hw_with(std::vector<npu::HwOverride> overrides) {
  return npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml",
                             overrides);
}

size_t count_op(const isa::Program& p, isa::Opcode op, size_t core) {
  return static_cast<size_t>(std::count_if(p.cores[core].begin(), p.cores[core].end(),
                                           [&](const auto& in) { return in.op == op; }));
}

TEST(L2Placement, HintsChangeNoValue) {
  // x [1, 32, 16, 16] -> Conv 3x3 (w1 64x32) -> Relu -> Conv 1x1 (w2 64x64) -> Relu -> Conv 3x3
  // (w3 32x64) -> Relu: six kernels (Conv_0, Relu_1, Conv_2, Relu_3, Conv_4, Relu_5), five
  // intermediates (the outputs of the first five), three weight tensors.
  GraphBuilder b;
  Value* x = b.input("x", {1, 32, 16, 16});
  auto conv = [&](Value* in, const char* w, Shape shape, uint32_t seed, int k) {
    Value* wv = b.constant(w, random_tensor(shape, seed, -0.1f, 0.1f));
    const int64_t p = k / 2;
    return b.node("Relu", {b.node("Conv", {in, wv},
                                  attrs({{"pads", std::vector<int64_t>{p, p, p, p}},
                                         {"kernel_shape", std::vector<int64_t>{k, k}}}))});
  };
  Value* y = conv(conv(conv(x, "w1", {64, 32, 3, 3}, 3, 3), "w2", {64, 64, 1, 1}, 5, 1), "w3",
                  {32, 64, 3, 3}, 7, 3);
  auto g = b.finish({y});
  const std::map<std::string, Tensor> inputs = {{"x", random_tensor({1, 32, 16, 16}, 11)}};

  const npu::HwConfig plain = hw_with({{"memory.l2.capacity_bytes", "8388608"}});
  const npu::HwConfig hinted = hw_with(
      {{"memory.l2.capacity_bytes", "8388608"}, {"memory.l2.placement", "prefetch_discard"}});
  const auto m0 = npu_backend::compile_npu(*g, plain, {});
  const auto m1 = npu_backend::compile_npu(*g, hinted, {});
  // Prefetch: at Conv_0, w2 (8192 B) and w3 (36864 B), well inside 4 MiB (Conv_0's own w1 is read
  // on demand). Discard: each intermediate after the core barrier of its last reader -- Conv_0's
  // output at Conv_2's start, Relu_1's at Relu_3's, Conv_2's at Conv_4's, Relu_3's at Relu_5's;
  // Conv_4's output is last read by the last kernel, so nothing follows to discard it: 4. All on
  // core 0.
  EXPECT_EQ(count_op(m1.program, isa::Opcode::l2_prefetch, 0), 2u);
  EXPECT_EQ(count_op(m1.program, isa::Opcode::l2_discard, 0), 4u);
  for (size_t c = 1; c < m1.program.cores.size(); ++c) {
    EXPECT_EQ(count_op(m1.program, isa::Opcode::l2_prefetch, c), 0u);
    EXPECT_EQ(count_op(m1.program, isa::Opcode::l2_discard, c), 0u);
  }
  EXPECT_EQ(count_op(m0.program, isa::Opcode::l2_prefetch, 0), 0u);
  EXPECT_EQ(count_op(m0.program, isa::Opcode::l2_discard, 0), 0u);
  EXPECT_TRUE(isa::verify_program(m1.program, hinted).empty());

  sim::SimResult r0, r1;
  const auto i0 = run_interpreter(m0, plain, inputs);
  const auto i1 = run_interpreter(m1, hinted, inputs);
  const auto s0 = run_simulator(m0, plain, inputs, &r0);
  const auto s1 = run_simulator(m1, hinted, inputs, &r1);
  const auto want = ops::run_reference(*g, inputs);
  ASSERT_EQ(i1.size(), 1u);
  for (const auto& [name, t] : i1) {
    EXPECT_TRUE(bit_equal(t, s1.at(name))) << name << ": simulator differs from interpreter";
    EXPECT_TRUE(bit_equal(t, i0.at(name))) << name << ": the hints change the result";
    EXPECT_TRUE(bit_equal(t, s0.at(name))) << name;
    // fp16 storage between three convs of K <= 576 with fp32 accumulation.
    EXPECT_TRUE(all_close(t, want.at(name), 2e-2, 2e-2)) << name << " vs the reference";
  }
  EXPECT_EQ(r1.l2.prefetch_requests, 2u);
  EXPECT_EQ(r1.l2.discard_requests, 4u);
  EXPECT_GT(r1.l2.prefetch_fill_bytes, 0u);
  EXPECT_EQ(r0.l2.prefetch_requests, 0u);

  // Without an L2 the placement asks for nothing: no hints are emitted. (The loader requires
  // memory.l2.capacity_bytes when the section is given; the struct can say it.)
  npu::HwConfig no_l2 = hw_with({});
  no_l2.l2.placement = npu::L2Placement::prefetch_discard;
  const auto m2 = npu_backend::compile_npu(*g, no_l2, {});
  EXPECT_EQ(count_op(m2.program, isa::Opcode::l2_prefetch, 0), 0u);
  EXPECT_EQ(count_op(m2.program, isa::Opcode::l2_discard, 0), 0u);
}

}  // namespace
}  // namespace tessel::testing
