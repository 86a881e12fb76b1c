// Golden files of emitted NPU assembly for a small convolution, a small matmul, an integer
// compare/select/convert chain, a Gather with runtime (negative) indices, a ScatterElements with
// duplicate indices (the last update wins), a reflect Pad, a
// linear half_pixel Resize (as resize_as_matmul's MatMuls) and a
// ConvTranspose (stride 2, pads 1, output_padding 1) through graph pass convt_as_conv, and an If
// on a run-time condition (guard_branches: lbu + blti around each branch on every core).
//
// The compiler is deterministic: the same graph and config give the same program. A change to
// tiling, tensorization, sync insertion or code generation shows up here as a diff of readable
// assembly. To accept an intended change, rerun with TESSEL_UPDATE_GOLDEN=1 and review the diff
// of tests/compiler/golden/*.s in git.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "isa/asm.h"
#include "isa/verifier.h"
#include "passes/graph/graph_passes.h"
#include "tests/compiler/npu_test_util.h"

namespace tessel::testing {
namespace {

void expect_golden(const npu_backend::NpuModule& mod, const std::string& name) {
  const std::string text = isa::disassemble(mod.program);
  const std::string path = std::string(TESSEL_SOURCE_DIR) + "/tests/compiler/golden/" + name;
  if (std::getenv("TESSEL_UPDATE_GOLDEN")) {
    std::ofstream(path) << text;
    // Never a pass: a run with the variable set writes the files and says so.
    FAIL() << "updated " << path
           << " (TESSEL_UPDATE_GOLDEN is set: review the diff, rerun without it)";
  }
  std::ifstream f(path);
  ASSERT_TRUE(f) << "missing golden file " << path << " (run with TESSEL_UPDATE_GOLDEN=1)";
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(text, ss.str()) << "emitted assembly differs from " << path;
  // The golden text is also a valid program: it assembles back to the same instructions.
  isa::Program back = isa::assemble(ss.str(), path);
  ASSERT_EQ(back.cores.size(), mod.program.cores.size());
  for (size_t c = 0; c < back.cores.size(); ++c) EXPECT_EQ(back.cores[c], mod.program.cores[c]);
}

Attributes conv_attrs() {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{3, 3});
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  return a;
}

TEST(GoldenAsm, Conv3x3WithBias) {
  // 1x8x10x12 input, 16 filters 3x3, pad 1, + bias, on one npu_4core core.
  GraphBuilder b;
  Value* x = b.input("x", {1, 8, 10, 12});
  Value* w = b.constant("w", random_tensor({16, 8, 3, 3}, 1));
  Value* bias = b.constant("b", random_tensor({16}, 2));
  Value* y = b.node("Conv", {x, w, bias}, conv_attrs());
  auto g = b.finish({y});
  npu::HwConfig hw = npu::load_hw_config(
      std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml", {{"cores", "1"}});
  auto mod = npu_backend::compile_npu(*g, hw);
  expect_golden(mod, "conv3x3_bias.s");
  // And it computes the right values (the golden file is not just frozen output).
  std::map<std::string, Tensor> in{{"x", random_tensor({1, 8, 10, 12}, 3)}};
  auto got = run_simulator(mod, hw, in);
  EXPECT_TRUE(all_close(got.begin()->second, ops::run_reference(*g, in).begin()->second, 1e-2));
}

TEST(GoldenAsm, GemmWithBias) {
  // y = x * W^T + c with x 4x40, W 24x40.
  GraphBuilder b;
  Value* x = b.input("x", {4, 40});
  Value* w = b.constant("w", random_tensor({24, 40}, 4));
  Value* c = b.constant("c", random_tensor({24}, 5));
  Attributes a;
  a.set("transB", int64_t{1});
  Value* y = b.node("Gemm", {x, w, c}, a);
  auto g = b.finish({y});
  npu::HwConfig hw = npu::load_hw_config(
      std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml", {{"cores", "1"}});
  auto mod = npu_backend::compile_npu(*g, hw);
  expect_golden(mod, "gemm_bias.s");
  std::map<std::string, Tensor> in{{"x", random_tensor({4, 40}, 6)}};
  auto got = run_simulator(mod, hw, in);
  EXPECT_TRUE(all_close(got.begin()->second, ops::run_reference(*g, in).begin()->second, 1e-2));
}

TEST(GoldenAsm, IntegerLessWhereCast) {
  // z = Cast<float>(Where(x < y, x, y)) on i32 [2, 20]: vcmp_lt.i32 (bool mask), vsel.i32,
  // vconv.f16 from i32.
  GraphBuilder b(true);
  Value* x = b.input("x", {2, 20}, DType::i32);
  Value* y = b.input("y", {2, 20}, DType::i32);
  Value* lt = b.node("Less", {x, y});
  Value* w = b.node("Where", {lt, x, y});
  Value* z = b.node("Cast", {w}, attrs({{"to", int64_t{1}}}));
  auto g = b.finish({z});
  npu::HwConfig hw = npu::load_hw_config(
      std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml", {{"cores", "1"}});
  auto mod = npu_backend::compile_npu(*g, hw);
  expect_golden(mod, "int_less_where_cast.s");
  std::map<std::string, Tensor> in{{"x", random_int_tensor({2, 20}, DType::i32, 7, -1000, 1000)},
                                   {"y", random_int_tensor({2, 20}, DType::i32, 8, -1000, 1000)}};
  auto got = run_simulator(mod, hw, in);
  EXPECT_TRUE(all_close(got.begin()->second, ops::run_reference(*g, in).begin()->second, 0, 0));
}

TEST(GoldenAsm, GatherNegativeIndices) {
  // Gather(data i32 [5, 6], indices i64 [3], axis 0): the indices normalised (idx < 0 ? idx + 5),
  // then a one-hot reduction over the 5 rows (vcmp_eq.i64 with the iota, vsel.i32, vadd.i32).
  GraphBuilder b;
  Value* d = b.input("data", {5, 6}, DType::i32);
  Value* i = b.input("indices", {3}, DType::i64);
  Value* y = b.node("Gather", {d, i}, attrs({{"axis", int64_t{0}}}));
  auto g = b.finish({y});
  npu::HwConfig hw = npu::load_hw_config(
      std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml", {{"cores", "1"}});
  auto mod = npu_backend::compile_npu(*g, hw);
  expect_golden(mod, "gather_negative_indices.s");
  std::map<std::string, Tensor> in{{"data", random_int_tensor({5, 6}, DType::i32, 9, -99, 99)},
                                   {"indices", Tensor::from_int64s({3}, {-1, 0, -5})}};
  auto got = run_simulator(mod, hw, in);
  EXPECT_TRUE(bit_equal(got.begin()->second, ops::run_reference(*g, in).begin()->second));
}

TEST(GoldenAsm, ScatterElementsDuplicateIndices) {
  // ScatterElements(data i32 [3, 4], indices i64 [2, 4] with a duplicate and a negative index,
  // updates i32 [2, 4], axis 0, reduction none): the last update in index order per element, as
  // two one-hot reductions over the 2 index rows (vcmp_eq.i64 with the iota; vrmax of the
  // hitting positions, then the sum of the update at that position) and a vsel against data.
  GraphBuilder b;
  Value* d = b.input("data", {3, 4}, DType::i32);
  Value* i = b.input("indices", {2, 4}, DType::i64);
  Value* u = b.input("updates", {2, 4}, DType::i32);
  Value* y = b.node("ScatterElements", {d, i, u}, attrs({{"axis", int64_t{0}}}));
  auto g = b.finish({y});
  npu::HwConfig hw = npu::load_hw_config(
      std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml", {{"cores", "1"}});
  auto mod = npu_backend::compile_npu(*g, hw);
  expect_golden(mod, "scatter_elements_duplicates.s");
  std::map<std::string, Tensor> in{
      {"data", random_int_tensor({3, 4}, DType::i32, 10, -99, 99)},
      {"indices", Tensor::from_int64s({2, 4}, {1, -1, 0, 2, 1, 2, -3, 0})},
      {"updates", random_int_tensor({2, 4}, DType::i32, 11, 100, 999)}};
  auto got = run_simulator(mod, hw, in);
  const Tensor want = ops::run_reference(*g, in).begin()->second;
  EXPECT_TRUE(bit_equal(got.begin()->second, want));
  // Column 0: both updates land on row 1, the second wins; column 1: rows 2 (-1) and 2.
  EXPECT_EQ(want.get_as_double(4), in.at("updates").get_as_double(4));
  EXPECT_EQ(want.get_as_double(9), in.at("updates").get_as_double(5));
}

TEST(GoldenAsm, PadReflect) {
  // Pad reflect of x [1, 2, 3, 4] by 1 on H and 2 / -1 (a crop) on W: one copy kernel per box of
  // the output (lower::op_parts): 3 H segments x 3 W segments (two reflected columns, the middle).
  GraphBuilder b;
  Value* x = b.input("x", {1, 2, 3, 4});
  Value* y =
      b.node("Pad", {x, b.constant("pads", Tensor::from_int64s({8}, {0, 0, 1, 2, 0, 0, 1, -1}))},
             attrs({{"mode", std::string("reflect")}}));
  auto g = b.finish({y});
  npu::HwConfig hw = npu::load_hw_config(
      std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml", {{"cores", "1"}});
  auto mod = npu_backend::compile_npu(*g, hw);
  expect_golden(mod, "pad_reflect.s");
  std::map<std::string, Tensor> in{{"x", random_tensor({1, 2, 3, 4}, 9)}};
  auto got = run_simulator(mod, hw, in);
  // A copy: only the input's rounding to fp16 (u relative).
  EXPECT_TRUE(
      all_close(got.begin()->second, ops::run_reference(*g, in).begin()->second, 1e-7, 1.0 / 2048));
}

TEST(GoldenAsm, ResizeLinearHalfPixel) {
  // Resize linear half_pixel of x [1, 2, 3, 4] to [1, 2, 6, 8] (the form of issue 15's M-LSD
  // decoder) as driver::compiled_form gives it: resize_as_matmul's MatMul by the constant W
  // matrix M_3^T [4, 8] over the view [6, 4], then M_2 [6, 3] times the view [2, 3, 8], on the
  // cube.
  GraphBuilder b;
  Value* x = b.input("x", {1, 2, 3, 4});
  Value* y = b.node("Resize",
                    {x, b.constant("roi", Tensor::from_floats({0}, {})),
                     b.constant("scales", Tensor::from_floats({4}, {1, 1, 2, 2}))},
                    attrs({{"mode", std::string("linear")},
                           {"coordinate_transformation_mode", std::string("half_pixel")}}));
  auto g = b.finish({y});
  ASSERT_TRUE(graph_passes::resize_as_matmul(*g));
  npu::HwConfig hw = npu::load_hw_config(
      std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml", {{"cores", "1"}});
  auto mod = npu_backend::compile_npu(*g, hw);
  expect_golden(mod, "resize_linear_half_pixel.s");
  std::map<std::string, Tensor> in{{"x", random_tensor({1, 2, 3, 4}, 10)}};
  auto got = run_simulator(mod, hw, in);
  // Weights 1/4 and 3/4 are exact in fp16: the input, the stored intermediate and the output
  // round (3 u relative of values <= 1).
  EXPECT_TRUE(all_close(got.begin()->second, ops::run_reference(*g, in).begin()->second, 3.0 / 2048,
                        3.0 / 2048));
}

TEST(GoldenAsm, ConvTransposeStride2Pads1OutputPadding1) {
  // ConvTranspose x [1, 4, 3, 3] -> [1, 4, 6, 6] (kernel 3, stride 2, pads 1, output_padding 1,
  // + bias) as 4 phase Convs (kernels 1x1, 1x2, 2x1, 2x2, convt_as_conv), interleaved by two
  // Concats (one copy kernel per input, lower::op_parts).
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 3, 3});
  Value* y = b.node("ConvTranspose",
                    {x, b.constant("w", random_tensor({4, 4, 3, 3}, 10)),
                     b.constant("b", random_tensor({4}, 11))},
                    attrs({{"strides", std::vector<int64_t>{2, 2}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"output_padding", std::vector<int64_t>{1, 1}}}));
  auto g = b.finish({y});
  const std::map<std::string, Tensor> in{{"x", random_tensor({1, 4, 3, 3}, 12)}};
  const Tensor want = ops::run_reference(*g, in).begin()->second;
  ASSERT_TRUE(graph_passes::convt_as_conv(*g));
  npu::HwConfig hw = npu::load_hw_config(
      std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml", {{"cores", "1"}});
  auto mod = npu_backend::compile_npu(*g, hw);
  expect_golden(mod, "convtranspose_s2_p1_op1.s");
  auto got = run_simulator(mod, hw, in);
  // At most 4 * 4 products of |x|, |w| <= 1 (+ bias): fp16 inputs and output, fp32 sums.
  EXPECT_TRUE(all_close(got.begin()->second, want, 2e-2, 1.0 / 1024));
}

TEST(GoldenAsm, IfOnRuntimeConditionBranchesOnTheScalarUnit) {
  // y = c ? tanh(x + 1) : x - 1 with c a bool input, after guard_branches (both branches
  // guarded), on 2 npu_4core cores: Not(c), then [lbu x1, x0, <c>; blti x1, 1, end] around the
  // then-branch's fused Add+Tanh kernel, [lbu <not c>; blti] around the else-branch's Sub, and
  // the Where, each kernel closed by a core_barrier. Every core takes the same branch.
  const char* text = R"(graph g opset 17 (%x: f32[2,64], %c: bool[]) -> (%y) {
  %one: f32[] = const [1]
  %y: f32[2,64] = If(%c, %x, %one) {else_branch=graph e () captures (%x: f32[2,64], %one: f32[] known [1]) -> (%b) {
      %b: f32[2,64] = Sub(%x, %one)  # minus
    }, then_branch=graph t () captures (%x: f32[2,64], %one: f32[] known [1]) -> (%a) {
      %a0: f32[2,64] = Add(%x, %one)  # plus
      %a: f32[2,64] = Tanh(%a0)  # tanh
    }}  # if
}
)";
  auto g = parse_graph(text, "if.graph");
  ops::infer_graph(*g);
  ASSERT_TRUE(graph_passes::guard_branches(*g, [](Graph&) {}));
  graph_passes::fuse_kernels(*g);
  npu::HwConfig hw = npu::load_hw_config(
      std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml", {{"cores", "2"}});
  auto mod = npu_backend::compile_npu(*g, hw);
  expect_golden(mod, "if_runtime_condition.s");
  size_t loads = 0;
  for (const auto& core : mod.program.cores)
    for (const isa::Instruction& in : core) loads += in.op == isa::Opcode::lbu;
  EXPECT_EQ(loads, 4u);  // two guarded blocks on each of the 2 cores
  // The blocks keep the program valid and its flags paired on both paths of every blti.
  EXPECT_EQ(isa::verify_program(mod.program, hw), std::vector<std::string>{});
  EXPECT_EQ(isa::verify_sync(mod.program, hw), std::vector<std::string>{});
  // The same graph with the guards dropped computes both branches every time (what the NPU did
  // before guarded blocks): the reference for the cycles below.
  auto both_g = clone_graph(*g);
  for (const auto& n : both_g->nodes()) n->attrs.erase(graph_passes::kBranchGuardAttr);
  const auto both = npu_backend::compile_npu(*both_g, hw);
  std::vector<float> xs(128);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 17) / 8.0f - 1.0f;
  uint64_t cycles[2] = {0, 0}, both_cycles[2] = {0, 0};
  for (bool c : {false, true}) {
    Tensor ct(DType::boolean, {});
    ct.set_from_double(0, c ? 1.0 : 0.0);
    const std::map<std::string, Tensor> in{{"x", Tensor::from_floats({2, 64}, xs)}, {"c", ct}};
    sim::SimResult r;
    const auto got = run_simulator(mod, hw, in, &r);
    const auto want = ops::run_reference(*g, in).begin()->second;
    EXPECT_TRUE(all_close(got.at("y"), want, 2e-3, 2e-3)) << "c=" << c;
    // The functional interpreter takes the same branch: the same bits.
    EXPECT_TRUE(bit_equal(run_interpreter(mod, hw, in).at("y"), got.at("y"))) << "c=" << c;
    cycles[c] = r.total_cycles;
    sim::SimResult rb;
    EXPECT_TRUE(bit_equal(run_simulator(both, hw, in, &rb).at("y"), got.at("y"))) << "c=" << c;
    EXPECT_LT(r.total_cycles, rb.total_cycles) << "c=" << c;
    both_cycles[c] = rb.total_cycles;
    // Only the taken branch's kernel started pipe instructions.
    for (const auto& k : mod.kernels) {
      if (k.op_index < 0) continue;
      uint64_t busy = 0;
      for (uint64_t b : r.op_busy_cycles.at(static_cast<size_t>(k.op_index))) busy += b;
      const bool then_k = k.node.rfind("if/then/", 0) == 0,
                 else_k = k.node.rfind("if/else/", 0) == 0;
      if (then_k || else_k) EXPECT_EQ(busy > 0, then_k == c) << k.node << " c=" << c;
    }
  }
  std::cout << "  if golden: c=false " << cycles[0] << " cycles (both branches " << both_cycles[0]
            << "), c=true " << cycles[1] << " cycles (both branches " << both_cycles[1] << ")\n";
}

}  // namespace
}  // namespace tessel::testing
