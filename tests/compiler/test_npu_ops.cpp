// Op-level NPU compilation tests: each small graph is compiled for a preset, run on the functional
// interpreter and compared with the reference interpreter.
//
// Tolerance: the NPU stores activations and weights in fp16 (unit roundoff u = 2^-11 ~ 4.9e-4) and
// rounds after every vector instruction; cube products accumulate in fp32. For inputs in [-1, 1]
// an elementwise chain of d instructions is off by at most ~(d + 1) u |y|, a K-term dot product by
// ~2 u sum|x w| <= 2 u K max|x w|. Each test states the bound it uses.
#include "compiler/tuner/tuner.h"
#include "tests/compiler/npu_test_util.h"

namespace tessel::testing {
namespace {

struct Case {
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> inputs;
};

/// Compiles the case for `hw_name` and checks it (check_npu, npu_test_util.h) against the
/// reference within `atol` absolute.
void check(const Case& c, const std::string& hw_name, double atol,
           const npu_backend::NpuCompileOptions& options = {}) {
  check_npu(*c.graph, c.inputs, hw_name, {atol, 0.0}, options);
}

TEST(NpuOps, AddBroadcastPerChannel) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 16, 24, 96});
  Value* c = b.constant("bias", random_tensor({1, 16, 1, 1}, 7));
  Value* y = b.node("Add", {x, c});
  Case k{b.finish({y}), {{"x", random_tensor({1, 16, 24, 96}, 1)}}};
  // Inputs rounded to fp16 (|x|,|c| <= 1: 2 * 2^-11 * 1) plus the result rounding (2^-11 * 2).
  check(k, "npu_4core", 3e-3);
}

TEST(NpuOps, ElementwiseChainHardSwishPattern) {
  // x * clip(x + 3, 0, 6) / 6, as in the PP-OCR classifier.
  GraphBuilder b;
  Value* x = b.input("x", {2, 40, 6, 24});
  Value* three = b.constant("three", Tensor::scalar_f32(3.f));
  Value* six = b.constant("six", Tensor::scalar_f32(6.f));
  Value* lo = b.constant("lo", Tensor::scalar_f32(0.f));
  Value* a = b.node("Add", {x, three});
  Value* cl = b.node("Clip", {a, lo, six});
  Value* m = b.node("Mul", {x, cl});
  Value* y = b.node("Div", {m, six});
  Case k{b.finish({y}), {{"x", random_tensor({2, 40, 6, 24}, 2, -4.f, 4.f)}}};
  // |y| <= 4; four roundings of values <= 28 in magnitude before the division: ~5 * 2^-11 * 4.
  check(k, "npu_4core", 1.5e-2);
}

TEST(NpuOps, TailTilesWhenUbIsSmall) {
  // The edge preset's UB forces several tiles with a remainder.
  GraphBuilder b;
  Value* x = b.input("x", {3, 1000, 37});
  Value* y = b.node("Relu", {x});
  Value* z = b.node("Sigmoid", {y});
  Case k{b.finish({z}), {{"x", random_tensor({3, 1000, 37}, 3)}}};
  // sigmoid via 4 rounded vector steps: ~6 u.
  check(k, "edge_1core", 4e-3);
}

TEST(NpuOps, ReduceMeanLastAxis) {
  GraphBuilder b;
  Value* x = b.input("x", {4, 32});
  Value* y = b.node("ReduceMean", {x}, attrs({{"axes", std::vector<int64_t>{-1}}}));
  Case k{b.finish({y}), {{"x", random_tensor({4, 32}, 4)}}};
  // fp32 accumulation of fp16 inputs: 32 * u input rounding, / 32, + output rounding.
  check(k, "npu_4core", 2e-3);
}

TEST(NpuOps, GlobalAveragePool) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 24, 12, 48});
  Value* y = b.node("GlobalAveragePool", {x});
  Case k{b.finish({y}), {{"x", random_tensor({2, 24, 12, 48}, 5)}}};
  check(k, "npu_4core", 2e-3);
}

TEST(NpuOps, SoftmaxAxis1) {
  GraphBuilder b;
  Value* x = b.input("x", {4, 10});
  Value* y = b.node("Softmax", {x}, attrs({{"axis", int64_t{1}}}));
  Case k{b.finish({y}), {{"x", random_tensor({4, 10}, 6, -3.f, 3.f)}}};
  // exp of values <= 6 in magnitude, rounded: relative ~4 u on each probability.
  check(k, "npu_4core", 2e-3);
}

TEST(NpuOps, MaxPool2x2Stride2) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 8, 12, 20});
  Value* y = b.node("MaxPool", {x},
                    attrs({{"kernel_shape", std::vector<int64_t>{2, 2}},
                           {"strides", std::vector<int64_t>{2, 2}}}));
  Case k{b.finish({y}), {{"x", random_tensor({1, 8, 12, 20}, 8)}}};
  // max is exact; only the fp16 rounding of the input: u.
  check(k, "npu_4core", 6e-4);
}

TEST(NpuOps, DepthwiseConv3x3Stride2Pad1) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 16, 14, 22});
  Value* w = b.constant("w", random_tensor({16, 1, 3, 3}, 9));
  Value* bias = b.constant("b", random_tensor({16}, 10));
  Value* y = b.node("Conv", {x, w, bias},
                    attrs({{"group", int64_t{16}},
                           {"kernel_shape", std::vector<int64_t>{3, 3}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"strides", std::vector<int64_t>{2, 2}}}));
  Case k{b.finish({y}), {{"x", random_tensor({1, 16, 14, 22}, 11)}}};
  // 9 fp16 multiply-accumulate steps with rounding, |partial| <= 10: ~10 * 10 u.
  check(k, "npu_4core", 2e-2);
}

TEST(NpuOps, Conv3x3OnCube) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 24, 20, 30});
  Value* w = b.constant("w", random_tensor({40, 24, 3, 3}, 12, -0.2f, 0.2f));
  Value* bias = b.constant("b", random_tensor({40}, 13));
  Value* y = b.node("Conv", {x, w, bias},
                    attrs({{"kernel_shape", std::vector<int64_t>{3, 3}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Case k{b.finish({y}), {{"x", random_tensor({1, 24, 20, 30}, 14)}}};
  // K = 216 products of fp16-rounded operands (|x w| <= 0.2): 2 u * 216 * 0.2 ~ 0.04 worst case,
  // ~0.003 typical; plus output rounding of |y| <= ~5.
  check(k, "npu_4core", 2e-2);
}

TEST(NpuOps, Conv3x3Stride2OnEdgeCube) {
  // edge_1core has an 8x16x16 cube and small buffers: several K chunks and pixel tiles.
  GraphBuilder b;
  Value* x = b.input("x", {1, 64, 33, 47});
  Value* w = b.constant("w", random_tensor({72, 64, 3, 3}, 15, -0.1f, 0.1f));
  Value* y = b.node("Conv", {x, w},
                    attrs({{"kernel_shape", std::vector<int64_t>{3, 3}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"strides", std::vector<int64_t>{2, 2}}}));
  Case k{b.finish({y}), {{"x", random_tensor({1, 64, 33, 47}, 16)}}};
  check(k, "edge_1core", 2e-2);
}

TEST(NpuOps, GroupedConv) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 16, 9, 9});
  Value* w = b.constant("w", random_tensor({24, 4, 3, 3}, 17, -0.3f, 0.3f));
  Value* y = b.node("Conv", {x, w},
                    attrs({{"group", int64_t{4}}, {"kernel_shape", std::vector<int64_t>{3, 3}}}));
  Case k{b.finish({y}), {{"x", random_tensor({2, 16, 9, 9}, 18)}}};
  check(k, "npu_4core", 1e-2);
}

TEST(NpuOps, GemmTransBWithBias) {
  GraphBuilder b;
  Value* x = b.input("x", {3, 2400});
  Value* w = b.constant("w", random_tensor({32, 2400}, 19, -0.05f, 0.05f));
  Value* c = b.constant("c", random_tensor({32}, 20));
  Value* y = b.node("Gemm", {x, w, c}, attrs({{"transB", int64_t{1}}}));
  Case k{b.finish({y}), {{"x", random_tensor({3, 2400}, 21)}}};
  // K = 2400, |x w| <= 0.05: typical error sqrt(K) * 2 u * 0.05 ~ 5e-3.
  check(k, "npu_4core", 3e-2);
}

TEST(NpuOps, MatMulThenAddThenSoftmax) {
  GraphBuilder b;
  Value* x = b.input("x", {4, 200});
  Value* w = b.constant("w", random_tensor({200, 2}, 22, -0.1f, 0.1f));
  Value* c = b.constant("c", random_tensor({2}, 23));
  Value* m = b.node("MatMul", {x, w});
  Value* a = b.node("Add", {m, c});
  Value* y = b.node("Softmax", {a}, attrs({{"axis", int64_t{1}}}));
  Case k{b.finish({y}), {{"x", random_tensor({4, 200}, 24)}}};
  check(k, "npu_4core", 5e-3);
}

TEST(NpuOps, ConcatAndTranspose) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 5});
  Value* z = b.input("z", {2, 4, 5});
  Value* c = b.node("Concat", {x, z}, attrs({{"axis", int64_t{1}}}));
  Value* t = b.node("Transpose", {c}, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}}));
  Case k{b.finish({t}), {{"x", random_tensor({2, 3, 5}, 25)}, {"z", random_tensor({2, 4, 5}, 26)}}};
  check(k, "npu_4core", 6e-4);
}

}  // namespace
}  // namespace tessel::testing

namespace tessel::testing {
namespace {

TEST(NpuOps, GeluThroughVectorErf) {
  // Gelu = 0.5 x (1 + erf(x / sqrt 2)); erf by Abramowitz-Stegun 7.1.26 (1.5e-7) in ~20 fp16
  // vector steps: each step rounds (u = 2^-11) values of magnitude <= 4: ~20 u * 4 = 0.04 worst
  // case.
  GraphBuilder b;
  Value* x = b.input("x", {2, 64, 33});
  Value* y = b.node("Gelu", {x});
  Case k{b.finish({y}), {{"x", random_tensor({2, 64, 33}, 31, -4.f, 4.f)}}};
  check(k, "npu_4core", 2e-2);
}

TEST(NpuOps, LayerNormalizationLastAxis) {
  GraphBuilder b;
  Value* x = b.input("x", {3, 40, 120});
  Value* s = b.constant("s", random_tensor({120}, 32));
  Value* bb = b.constant("b", random_tensor({120}, 33));
  Attributes a;
  a.set("axis", int64_t{-1});
  Value* y = b.node("LayerNormalization", {x, s, bb}, a);
  Case k{b.finish({y}), {{"x", random_tensor({3, 40, 120}, 34, -3.f, 3.f)}}};
  // Normalised values are O(1) (up to ~3.5), times |s| <= 1, plus b: ~8 fp16 steps of ~4: 8 u * 4.
  check(k, "npu_4core", 2e-2);
}

// One kernel per row phase writes whole output rows (the source pixel repeated sw times); scales
// (2, 2) and (3, 2) / (2, 3) cover both phase counts.
TEST(NpuOps, ResizeNearestTimesTwo) {
  for (auto [sh, sw] : {std::pair<float, float>{2, 2}, {3, 2}, {2, 3}}) {
    GraphBuilder b;
    Value* x = b.input("x", {1, 8, 6, 10});
    Value* roi = b.constant("roi", Tensor(DType::f32, {0}));
    Value* scales = b.constant("scales", Tensor::from_floats({4}, {1, 1, sh, sw}));
    Attributes a;
    a.set("mode", std::string("nearest"));
    a.set("coordinate_transformation_mode", std::string("asymmetric"));
    a.set("nearest_mode", std::string("floor"));
    Value* y = b.node("Resize", {x, roi, scales}, a);
    Case k{b.finish({y}), {{"x", random_tensor({1, 8, 6, 10}, 35)}}};
    SCOPED_TRACE(fmt::format("scales {}x{}", sh, sw));
    check(k, "npu_4core", 6e-4);  // a copy: only the fp16 rounding of the input
  }
}

TEST(NpuOps, ConvTransposeKernelEqualsStride) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 24, 5, 7});
  Value* w = b.constant("w", random_tensor({24, 16, 2, 2}, 36, -0.3f, 0.3f));
  Value* bias = b.constant("b", random_tensor({16}, 37));
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  a.set("strides", std::vector<int64_t>{2, 2});
  Value* y = b.node("ConvTranspose", {x, w, bias}, a);
  Case k{b.finish({y}), {{"x", random_tensor({1, 24, 5, 7}, 38)}}};
  check(k, "npu_4core", 1e-2);  // 24-term dot products of fp16 operands, fp32 accumulation
}

// The matmul loop orders: A resident (m outer, A's m tile for all of K in L1, n inner) and A
// streamed, with A stored plain and transposed (Gemm transA). K = 1000 in 128-wide chunks, so A's
// resident tile is read at 8 column (or, transposed, row) offsets. K-term dot products of
// |x w| <= 0.1: typical error sqrt(K) * 2 u * 0.1 ~ 3e-3.
TEST(NpuOps, MatMulLoopOrdersAResidentAndStreamed) {
  for (bool trans_a : {false, true})
    for (bool a_resident : {true, false}) {
      GraphBuilder b;
      Value* x = b.input("x", trans_a ? Shape{1000, 64} : Shape{64, 1000});
      Value* w = b.constant("w", random_tensor({1000, 96}, 31, -0.1f, 0.1f));
      Value* y = b.node("Gemm", {x, w}, attrs({{"transA", int64_t{trans_a ? 1 : 0}}}));
      Case k{b.finish({y}),
             {{"x", random_tensor(trans_a ? Shape{1000, 64} : Shape{64, 1000}, 32)}}};
      npu_backend::NpuCompileOptions options;
      options.op_knobs["Gemm_0"] = {
          {"mt", 32}, {"nt", 32}, {"kt", 128}, {"a_resident", a_resident ? 1 : 0}};
      SCOPED_TRACE(fmt::format("transA={} a_resident={}", trans_a, a_resident));
      check(k, "npu_4core", 3e-2, options);
    }
}

// The convolution's two weight loop orders (resident in L1 across pixel tiles, or streamed with
// each K chunk) over 2 K chunks of 32 channels and 4 pixel tiles of 5 rows. With mt = 16 and 32
// channels per chunk, a K sub-chunk is 288 im2col rows, so L0B (32 KiB per ping-pong buffer) takes
// 32768 / (288 * 2) = 56 pixels = 2 rows of 20: each tile runs 3 row groups (2, 2, 1 rows) into
// separate L0C regions. K = 576 terms of |x w| <= 0.05: typical error ~ 2 u sqrt(K) 0.05 ~ 1e-3.
TEST(NpuOps, ConvWeightsResidentAndStreamedWithRowGroups) {
  for (bool resident : {true, false}) {
    GraphBuilder b;
    Value* x = b.input("x", {1, 64, 20, 20});
    Value* w = b.constant("w", random_tensor({48, 64, 3, 3}, 33, -0.05f, 0.05f));
    Value* y = b.node("Conv", {x, w},
                      attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                             {"kernel_shape", std::vector<int64_t>{3, 3}}}));
    Case k{b.finish({y}), {{"x", random_tensor({1, 64, 20, 20}, 34)}}};
    npu_backend::NpuCompileOptions options;
    options.op_knobs["Conv_0"] = {
        {"mt", 16}, {"kc", 32}, {"ht", 5}, {"wt", 20}, {"weights_resident", resident ? 1 : 0}};
    options.keep_loop_ir = true;
    SCOPED_TRACE(fmt::format("weights_resident={}", resident));
    check(k, "npu_4core", 2e-2, options);
    const auto mod = npu_backend::compile_npu(*k.graph, preset("npu_4core"), options);
    ASSERT_EQ(mod.kernels.size(), 1u);
    EXPECT_NE(mod.kernels[0].loop_ir.find(resident ? "weights resident, L0 kc0=32 hr=2"
                                                   : "weights streamed, L0 kc0=32 hr=2"),
              std::string::npos)
        << mod.kernels[0].loop_ir.substr(0, 400);
  }
}

// A loop-carried dependence whose two statements sit in a plain sequence inside the loop body
// (here: the double-buffered column loop, fully unrolled into the row loop's body as one
// sequence) is carried by that loop. A 3x3 conv over 3 channels, 64x64 pixels, tiles of 4 rows x
// 16 columns: 4 column tiles per row tile alternate the ping/pong input windows; the last tile of
// row tile r reads the pong window while the second tile of row tile r+1 overwrites it. Without
// the carried MTE1 -> MTE2 flag the SystemC model (pipes overlap) computed different bits from
// the in-order interpreter (found on ResNet-18's first conv).
TEST(NpuOps, ConvDoubleBufferedWindowsAcrossRowTilesAreOrdered) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 64, 64});
  Value* w = b.constant("w", random_tensor({64, 3, 3, 3}, 33, -0.05f, 0.05f));
  Value* y = b.node("Conv", {x, w},
                    attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"kernel_shape", std::vector<int64_t>{3, 3}}}));
  Case k{b.finish({y}), {{"x", random_tensor({1, 3, 64, 64}, 34)}}};
  npu_backend::NpuCompileOptions options;
  options.op_knobs["Conv_0"] = {
      {"cores", 1}, {"double_buffer", 1}, {"ht", 4},  {"kc", 3},
      {"mt", 64},   {"split", 0},         {"wt", 16}, {"weights_resident", 1}};
  // K = 27 terms of |x w| <= 0.05: error well below 1e-2.
  check(k, "npu_4core", 1e-2, options);
}

// Measured tile selection keeps a tiling no slower than the analytical choice: compile the same
// conv with the analytical default and with the measured default (compiler/tuner) and simulate
// both (timing only).
TEST(NpuOps, MeasuredTileSelectionIsNoSlowerThanTheEstimate) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 64, 28, 28});
  Value* w = b.constant("w", random_tensor({64, 64, 3, 3}, 35, -0.05f, 0.05f));
  Value* y = b.node("Conv", {x, w},
                    attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"kernel_shape", std::vector<int64_t>{3, 3}}}));
  auto g = b.finish({y});
  const npu::HwConfig hw = preset("npu_4core");
  auto cycles = [&](bool measure) {
    tuner::ScheduleRequest request;
    request.measure_default = measure;
    const auto mod = tuner::compile_scheduled(*g, hw, {}, request).module;
    sim::SimOptions so;
    so.functional = false;
    sim::Simulator s(hw, so);
    s.load(mod.program);
    return s.run().total_cycles;
  };
  const uint64_t estimate_only = cycles(false), measured = cycles(true);
  EXPECT_LE(measured, estimate_only);
  EXPECT_GT(measured, 0u);
}
}  // namespace
}  // namespace tessel::testing
