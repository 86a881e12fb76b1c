// NC1HWC0 feature maps on the NPU (graph pass layout_nc1hwc0, tile_cube's NC1HWC0 GM views and
// img2col's c0 operand): a residual conv block compiled with the default pipeline stores its
// conv -> conv values NC1HWC0, and the program computes what the reference interpreter computes,
// for the outputs and for every NC1HWC0 intermediate read back through its GM binding.
//
// Tolerance: fp16 storage (u = 2^-11) and K <= 288-term dot products of |x w| <= 0.05 * |x|: as in
// test_npu_ops.cpp, a few 1e-3 relative to max|expected| per layer; 4 layers -> 2e-2 relative.
#include "passes/graph/graph_passes.h"
#include "tests/compiler/npu_test_util.h"

namespace tessel::testing {
namespace {

struct Block {
  std::unique_ptr<Graph> graph;
  Value *a = nullptr, *b = nullptr, *y1 = nullptr, *d = nullptr;
};

// x [1,16,13,11] -> a = Relu(Conv3x3(x)) [1,32,13,11] -> b = Relu(Conv3x3(a) + bias)
// -> y1 = Relu(Conv1x1(b) + a) -> d = Conv3x3 stride 2 (y1) [1,48,7,6] (graph output).
// After fusion: a is read by conv b (X) and by y1's kernel as its residual; b by conv c (X); y1
// by conv d (X): all three NC1HWC0. x (graph input) and d (graph output) stay plain.
Block residual_block(std::vector<Value*> extra_outputs = {}) {
  GraphBuilder gb(/*unique_names=*/true);
  Block k;
  Value* x = gb.input("x", {1, 16, 13, 11});
  auto conv = [&](Value* in, Shape w, uint32_t seed, std::vector<int64_t> strides,
                  std::vector<int64_t> pads, Value* bias = nullptr) {
    Value* wv = gb.constant("w" + std::to_string(seed), random_tensor(w, seed, -0.05f, 0.05f));
    std::vector<Value*> ins{in, wv};
    if (bias) ins.push_back(bias);
    return gb.node("Conv", ins,
                   attrs({{"strides", strides},
                          {"pads", pads},
                          {"kernel_shape", std::vector<int64_t>{w[2], w[3]}}}));
  };
  k.a = gb.node("Relu", {conv(x, {32, 16, 3, 3}, 1, {1, 1}, {1, 1, 1, 1})});
  Value* bias = gb.constant("bias", random_tensor({32}, 9));
  k.b = gb.node("Relu", {conv(k.a, {32, 32, 3, 3}, 2, {1, 1}, {1, 1, 1, 1}, bias)});
  Value* c = conv(k.b, {32, 32, 1, 1}, 3, {1, 1}, {0, 0, 0, 0});
  k.y1 = gb.node("Relu", {gb.node("Add", {c, k.a})});
  k.d = conv(k.y1, {48, 32, 3, 3}, 4, {2, 2}, {1, 1, 1, 1});
  std::vector<Value*> outs{k.d};
  if (!extra_outputs.empty()) outs = {k.d, k.a, k.b, k.y1};
  k.graph = gb.finish(outs);
  return k;
}

TEST(NpuLayout, ResidualBlockStoresConvToConvValuesNc1hwc0AndMatchesTheReference) {
  Block k = residual_block();
  graph_passes::run_pipeline(*k.graph);
  EXPECT_EQ(k.a->format, StorageFormat::nc1hwc0);
  EXPECT_EQ(k.b->format, StorageFormat::nc1hwc0);
  EXPECT_EQ(k.y1->format, StorageFormat::nc1hwc0);
  EXPECT_EQ(k.d->format, StorageFormat::plain);

  const npu::HwConfig hw = preset("npu_4core");
  const auto mod = npu_backend::compile_npu(*k.graph, hw);
  // The convs reading a, b and y1 use img2col on NC1HWC0 L1 windows (c0 = 16); the first conv
  // reads the plain input x (c0 = 0).
  int nc1hwc0_img2col = 0, plain_img2col = 0;
  for (const auto& stream : mod.program.cores)
    for (const auto& in : stream)
      if (const auto* ic = std::get_if<isa::Img2colArgs>(&in.args))
        ++(ic->c0 == 16 ? nc1hwc0_img2col : plain_img2col);
  EXPECT_GT(nc1hwc0_img2col, 0);
  EXPECT_GT(plain_img2col, 0);

  const std::map<std::string, Tensor> inputs{{"x", random_tensor({1, 16, 13, 11}, 7)}};
  std::vector<uint8_t> gm = initial_gm(mod, inputs);
  isa::interpret(mod.program, hw, gm);
  const auto got = read_outputs(mod, gm);
  sim::Simulator s(hw);
  s.load(mod.program);
  std::vector<uint8_t> gm_sim = initial_gm(mod, inputs);
  s.write_gm(0, gm_sim.data(), gm_sim.size());
  s.run();
  s.read_gm(0, gm_sim.data(), gm_sim.size());
  EXPECT_EQ(gm, gm_sim) << "the cycle model's GM differs from the in-order interpreter's";

  // Reference: the same block with the intermediates as extra outputs (formats are storage only).
  Block r = residual_block({nullptr});
  const auto want = ops::run_reference(*r.graph, inputs);
  const Tensor& d_ref = want.at(r.d->name);
  EXPECT_TRUE(all_close(got.at(k.d->name), d_ref, 2e-2 * max_abs(d_ref)));
  // NC1HWC0 intermediates, unpacked through their GM bindings.
  int checked = 0;
  for (const auto& v : mod.values) {
    const Value* gv = k.graph->find_value(v.value);
    if (!gv || gv->format != StorageFormat::nc1hwc0) continue;
    EXPECT_EQ(v.c0, 16) << v.value;
    const Tensor& ref = want.at(v.value);
    Tensor t(DType::f32, v.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint16_t h;
      std::memcpy(&h, gm.data() + v.address + 2 * npu_backend::gm_element_index(v, i), 2);
      t.data<float>()[i] = f16_bits_to_f32(h);
    }
    EXPECT_TRUE(all_close(t, ref, 2e-2 * max_abs(ref))) << v.value;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

// gm_element_index: [n][c][h][w] of a logical [2, 32, 3, 5] value stored NC1HWC0 (C0 = 16) is at
// (((n * 2 + c / 16) * 3 + h) * 5 + w) * 16 + c % 16.
TEST(NpuLayout, GmElementIndexOfNc1hwc0) {
  npu_backend::GmBinding b{"v", 0, {2, 32, 3, 5}, 16};
  // Element (1, 17, 2, 4): logical index ((1 * 32 + 17) * 3 + 2) * 5 + 4 = 749; stored at
  // (((1 * 2 + 1) * 3 + 2) * 5 + 4) * 16 + 1 = 59 * 16 + 1 = 945.
  EXPECT_EQ(npu_backend::gm_element_index(b, 749), 945);
  b.c0 = 0;
  EXPECT_EQ(npu_backend::gm_element_index(b, 749), 749);
}

// Without cancel_transdata the TransData conversions layout_nc1hwc0 inserts run as NPU kernels
// (a copy between a plain and an NC1HWC0 GM tensor, in whole C0 blocks): the outputs still match
// the reference, and the program is longer than with the conversions cancelled.
TEST(NpuLayout, UncancelledConversionsRunAsKernels) {
  Block k = residual_block();
  graph_passes::PipelineOptions o;
  o.disabled = {"cancel_transdata"};
  graph_passes::run_pipeline(*k.graph, o);
  int transdata = 0;
  for (const auto& n : k.graph->nodes()) transdata += n->op_type == "TransData";
  // To NC1HWC0, one per value a conv kernel reads: x (16 channels), a_nchw (conv b's X and the
  // residual of y1's kernel), b_nchw, y1_nchw = 4. To NCHW: a, b, y1 = 3 (d is the graph output).
  EXPECT_EQ(transdata, 7);
  const npu::HwConfig hw = preset("npu_4core");
  const auto mod = npu_backend::compile_npu(*k.graph, hw);
  int transdata_kernels = 0;
  for (const auto& kernel : mod.kernels) transdata_kernels += kernel.op_type == "TransData";
  EXPECT_EQ(transdata_kernels, 7);
  const std::map<std::string, Tensor> inputs{{"x", random_tensor({1, 16, 13, 11}, 7)}};
  const auto got = run_interpreter(mod, hw, inputs);
  Block r = residual_block();
  const auto want = ops::run_reference(*r.graph, inputs);
  const Tensor& d_ref = want.at(r.d->name);
  EXPECT_TRUE(all_close(got.at(k.d->name), d_ref, 2e-2 * max_abs(d_ref)));
}

// Tile knobs of a conv whose input is NC1HWC0 must keep K chunks of whole C0 blocks.
TEST(NpuLayout, TileKnobsMustKeepC0Blocks) {
  GraphBuilder gb(/*unique_names=*/true);
  Value* x = gb.input("x", {1, 16, 8, 8});
  auto conv = [&](Value* in, Shape w, uint32_t seed) {
    return gb.node("Conv", {in, gb.constant("w" + std::to_string(seed),
                                            random_tensor(w, seed, -0.05f, 0.05f))});
  };
  Value* a = conv(x, {32, 16, 1, 1}, 1);
  Value* b = conv(a, {32, 32, 1, 1}, 2);
  auto g = gb.finish({b});
  graph_passes::run_pipeline(*g);
  ASSERT_EQ(a->format, StorageFormat::nc1hwc0);
  npu_backend::NpuCompileOptions options;
  passes::Knobs knobs = {{"mt", 32}, {"kc", 8}, {"ht", 8}, {"wt", 8}};
  options.op_knobs[b->producer->name] = knobs;
  try {
    npu_backend::compile_npu(*g, preset("npu_4core"), options);
    FAIL() << "compiled kc=8 on an NC1HWC0 input";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kc a multiple of 16"), std::string::npos) << e.what();
  }
  knobs["kc"] = 16;
  options.op_knobs[b->producer->name] = knobs;
  EXPECT_NO_THROW(npu_backend::compile_npu(*g, preset("npu_4core"), options));
}

}  // namespace
}  // namespace tessel::testing
