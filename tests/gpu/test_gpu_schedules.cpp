// The GPU schedules on the host emulator against the reference interpreter: contractions
// (gpu_gemm, tensor cores and fp32), their tiles, borders, operand paths (packed constants,
// rectangular copies, the implicit im2col gather), double buffering and fused epilogues, and the
// generic kernels (gpu_bind). Every program's PTX is also assembled by ptxas for sm_80 and sm_90
// when the CUDA toolkit is installed (check_gpu, gpu_test_util.h).
//
// Tolerances (|gpu - ref| <= rel * max|ref| + 1e-6):
//  * contractions on tensor cores over fp16-exact inputs (multiples of 1/64, gpu_test_util.h):
//    products are exact in fp32, so only the order of the fp32 additions differs from the
//    reference: a K-term sum is off by at most K u sum|terms| (u = 2^-24); with K <= 600 terms of
//    magnitude <= 1 and outputs of magnitude ~ sqrt(K) / 3 that is below 600 * 6e-8 * 600 / 8 ~
//    3e-3 of max|ref| in the worst case and ~ 1e-6 in practice: 1e-5;
//  * the same on general fp32 inputs: each operand is rounded to fp16 (relative error
//    u16 = 2^-11), a product by at most 2 u16, so |error| <= 2 u16 sum|a_k b_k| ~ 1e-3 K / 4 over
//    outputs of ~ sqrt(K) / 3: at most 0.75e-3 sqrt(K) of max|ref|, 0.02 for K = 600; 2e-2;
//  * fp32 contractions (tensor cores off) and generic kernels: fp32 like the reference, FMA
//    contraction and summation order only: 2e-5 (contractions), 1e-5 (elementwise, the
//    ex2/lg2-based exp and log: relative 2^-22 plus the rounding of x log2(e)).
#include <fmt/format.h>

#include "compiler/backend/gpu/emulator.h"
#include "compiler/backend/gpu/kernels.h"
#include "compiler/support/fp16.h"
#include "passes/loop/gpu_passes.h"
#include "tests/gpu/gpu_test_util.h"

namespace tessel::testing {
namespace {

gpu_backend::GpuCompileOptions fp32_options() {
  gpu_backend::GpuCompileOptions o;
  o.gemm.tensor_cores = false;
  return o;
}

struct MatmulShape {
  int64_t m, k, n;
};

class GpuMatmul : public ::testing::TestWithParam<MatmulShape> {};

/// [M, K] x [K, N], both run-time operands (rectangular tile copies), on the tensor cores with
/// fp16-exact inputs and in fp32.
TEST_P(GpuMatmul, TensorCoresAndFp32MatchReference) {
  const auto s = GetParam();
  GpuGraph b;
  Value* x = b.input("x", {s.m, s.k});
  Value* w = b.input("w", {s.k, s.n});
  Value* y = b.node("MatMul", {x, w});
  auto g = b.finish({y});
  const std::map<std::string, Tensor> in = {{"x", fp16_exact_random({s.m, s.k}, 1)},
                                            {"w", fp16_exact_random({s.k, s.n}, 2)}};
  std::vector<std::string> kinds;
  std::string ptx;
  check_gpu(*g, in, 1e-5, {}, &ptx, &kinds);
  ASSERT_EQ(kinds.size(), 1u);
  EXPECT_EQ(kinds[0], "gemm-mma");
  EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), std::string::npos);
  if (s.k > 32) {  // several K chunks: double buffered with cp.async
    EXPECT_NE(ptx.find("cp.async"), std::string::npos);
    EXPECT_NE(ptx.find("cp.async.wait_group 1"), std::string::npos);
  }
  kinds.clear();
  check_gpu(*g, in, 2e-5, fp32_options(), nullptr, &kinds);
  EXPECT_EQ(kinds[0], "gemm-fp32");
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuMatmul,
                         ::testing::Values(MatmulShape{64, 64, 64},  // whole tiles
                                           MatmulShape{37, 45, 29},  // partial tiles in M, N and K
                                           MatmulShape{130, 200,
                                                       90},  // several K chunks, 128-row tiles
                                           MatmulShape{16, 600, 8}),  // a thin, deep product
                         [](const ::testing::TestParamInfo<MatmulShape>& i) {
                           return fmt::format("m{}_k{}_n{}", i.param.m, i.param.k, i.param.n);
                         });

TEST(GpuMatmul, GeneralFp32InputsRoundToFp16WithinTheirBound) {
  GpuGraph b;
  Value* x = b.input("x", {70, 300});
  Value* w = b.input("w", {300, 50});
  auto g = b.finish({b.node("MatMul", {x, w})});
  check_gpu(*g, {{"x", random_tensor({70, 300}, 3)}, {"w", random_tensor({300, 50}, 4)}}, 2e-2);
}

TEST(GpuMatmul, BatchedBroadcastGemmAndTransposedConstants) {
  // Batched [2,3,19,33] x [2,1,33,37]: B broadcast over dim 1 (gathered operand paths).
  {
    GpuGraph b;
    Value* x = b.input("x", {2, 3, 19, 33});
    Value* w = b.input("w", {2, 1, 33, 37});
    auto g = b.finish({b.node("MatMul", {x, w})});
    check_gpu(
        *g,
        {{"x", fp16_exact_random({2, 3, 19, 33}, 5)}, {"w", fp16_exact_random({2, 1, 33, 37}, 6)}},
        1e-5);
  }
  // Gemm with transA, transB, alpha/beta and a constant B (packed to fp16 at compile time).
  {
    GpuGraph b;
    Value* a = b.input("a", {29, 17});
    Value* w = b.constant("w", fp16_exact_random({37, 29}, 7));
    Value* bias = b.constant("c", fp16_exact_random({37}, 8));
    Value* y = b.node(
        "Gemm", {a, w, bias},
        attrs({{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}));
    auto g = b.finish({y});
    std::vector<std::string> kinds;
    check_gpu(*g, {{"a", fp16_exact_random({29, 17}, 9)}}, 1e-5, {}, nullptr, &kinds);
    EXPECT_EQ(kinds[0], "gemm-mma");
  }
}

struct ConvShape {
  const char* name;
  Shape x;  // N, C, H, W
  int64_t cout, kh, kw, stride, pad, dilation, groups;
};

class GpuConv : public ::testing::TestWithParam<ConvShape> {};

/// Convolution as implicit GEMM with a fused bias + residual Add + ReLU epilogue.
TEST_P(GpuConv, ImplicitGemmWithEpilogueMatchesReference) {
  const ConvShape s = GetParam();
  GpuGraph b;
  Value* x = b.input("x", s.x);
  Value* w = b.constant("w", fp16_exact_random({s.cout, s.x[1] / s.groups, s.kh, s.kw}, 10));
  Value* bias = b.constant("b", fp16_exact_random({s.cout}, 11));
  Value* y = b.node("Conv", {x, w, bias},
                    attrs({{"pads", std::vector<int64_t>{s.pad, s.pad, s.pad, s.pad}},
                           {"strides", std::vector<int64_t>{s.stride, s.stride}},
                           {"dilations", std::vector<int64_t>{s.dilation, s.dilation}},
                           {"group", s.groups}}));
  const Shape ys = y->shape;
  Value* r = b.input("r", ys);
  Value* z = b.node("Relu", {b.node("Add", {y, r})});
  auto g = b.finish({z});
  const std::map<std::string, Tensor> in = {{"x", fp16_exact_random(s.x, 12)},
                                            {"r", random_tensor(ys, 13)}};
  std::vector<std::string> kinds;
  check_gpu(*g, in, 1e-5, {}, nullptr, &kinds);
  // One kernel: the convolution with its epilogue (the Add and the Relu fused into it).
  ASSERT_EQ(kinds.size(), 1u);
  EXPECT_EQ(kinds[0], s.cout / s.groups >= 8 ? "gemm-mma" : "generic");
  check_gpu(*g, in, 2e-5, fp32_options());
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, GpuConv,
    ::testing::Values(ConvShape{"k3s1p1", {1, 16, 12, 20}, 24, 3, 3, 1, 1, 1, 1},
                      ConvShape{"k3s2p1_groups2_batch2", {2, 6, 11, 13}, 18, 3, 3, 2, 1, 1, 2},
                      ConvShape{"k1_contiguous", {1, 40, 8, 16}, 72, 1, 1, 1, 0, 1, 1},
                      ConvShape{"k7s2p3_rgb", {1, 3, 23, 29}, 16, 7, 7, 2, 3, 1, 1},
                      ConvShape{"k3_dilation2", {1, 8, 15, 15}, 16, 3, 3, 1, 2, 2, 1},
                      ConvShape{"depthwise", {1, 12, 9, 14}, 12, 3, 3, 1, 1, 1, 12}),
    [](const ::testing::TestParamInfo<ConvShape>& i) { return std::string(i.param.name); });

TEST(GpuGemm, KnobsAreUsedAndReported) {
  GpuGraph b;
  Value* x = b.input("x", {96, 64});
  Value* w = b.input("w", {64, 80});
  auto g = b.finish({b.node("MatMul", {x, w})});
  gpu_backend::GpuCompileOptions o;
  o.gemm.bm = 32;
  o.gemm.bn = 16;
  o.gemm.bk = 16;
  o.gemm.warps_m = 2;
  o.gemm.warps_n = 1;
  auto prog = gpu_backend::compile_gpu(*g, o);
  ASSERT_EQ(prog.kernels.size(), 1u);
  const auto& k = prog.kernels[0];
  EXPECT_EQ(k.gemm.bm, 32);
  EXPECT_EQ(k.gemm.bn, 16);
  EXPECT_EQ(k.gemm.bk, 16);
  // 96/32 x 80/16 blocks of 2 warps; the tiles of bm x bk + bk x bn in two stages (fp32:
  // rows padded by 4 elements): 2 * (32 * 20 + 16 * 20) * 4 bytes.
  ASSERT_EQ(k.launches.size(), 1u);
  EXPECT_EQ(k.launches[0].shape.grid, 3 * 5);
  EXPECT_EQ(k.launches[0].shape.block, 64);
  EXPECT_EQ(k.launches[0].shape.shared_bytes, 2 * (32 * 20 + 16 * 20) * 4);
  check_gpu(*g, {{"x", fp16_exact_random({96, 64}, 14)}, {"w", fp16_exact_random({64, 80}, 15)}},
            1e-5, o);
  // A tile the warps cannot cover is an error naming the kernel.
  o.gemm.bn = 12;
  EXPECT_THROW(gpu_backend::compile_gpu(*g, o), Error);
}

TEST(GpuGeneric, VectorisedElementwiseLoadsAndStores16Bytes) {
  GpuGraph b;
  Value* x = b.input("x", {3, 5, 64});
  Value* y = b.input("y", {5, 64});
  auto g = b.finish({b.node("Mul", {b.node("Sigmoid", {x}), y})});
  std::string ptx;
  check_gpu(*g, {{"x", random_tensor({3, 5, 64}, 16, -4, 4)}, {"y", random_tensor({5, 64}, 17)}},
            1e-5, {}, &ptx);
  EXPECT_NE(ptx.find("ld.global.nc.v4.f32"), std::string::npos);  // read-only: the noalias input
  EXPECT_NE(ptx.find("st.global.v4.f32"), std::string::npos);
}

TEST(GpuGeneric, WindowedKernelsTileTheirWindowsIntoSharedMemory) {
  // Pooling (padded, strided, count_include_pad 0) and a depthwise convolution: gpu_tile, one
  // block per output tile with the input window in shared memory; the same values as gpu_bind.
  GpuGraph b;
  Value* x = b.input("x", {2, 5, 13, 19});
  Value* mp = b.node("MaxPool", {x},
                     attrs({{"kernel_shape", std::vector<int64_t>{3, 3}},
                            {"strides", std::vector<int64_t>{2, 2}},
                            {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* ap = b.node("AveragePool", {x},
                     attrs({{"kernel_shape", std::vector<int64_t>{3, 2}},
                            {"pads", std::vector<int64_t>{1, 0, 1, 1}},
                            {"count_include_pad", int64_t{0}}}));
  Value* dw = b.node("Conv", {x, b.constant("w", random_tensor({5, 1, 3, 3}, 20))},
                     attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{5}}}));
  auto g = b.finish({mp, ap, dw});
  const std::map<std::string, Tensor> in = {{"x", random_tensor({2, 5, 13, 19}, 21)}};
  auto prog = gpu_backend::compile_gpu(*g);
  int tiled = 0;
  for (const auto& k : prog.kernels)
    for (const auto& l : k.launches) tiled += l.what.find("in shared memory") != std::string::npos;
  EXPECT_EQ(tiled, 3);
  check_gpu(*g, in, 1e-5);
  gpu_backend::GpuCompileOptions o;
  o.tile_windows = false;
  check_gpu(*g, in, 1e-5, o);
}

TEST(GpuGeneric, OddShapesReductionsAndMultiLaunchKernels) {
  // Softmax (max, exp, sum, divide: one launch per stage, temporaries in global scratch), a
  // reduction over two axes, a strided pooling window, a transpose and a concat.
  GpuGraph b;
  Value* x = b.input("x", {3, 5, 37});
  Value* sm = b.node("Softmax", {x}, attrs({{"axis", int64_t{-1}}}));
  Value* rs = b.node("ReduceSum", {x, b.constant("axes", Tensor::from_int64s({2}, {0, 2}))},
                     attrs({{"keepdims", int64_t{0}}}));
  Value* p = b.input("p", {2, 3, 13, 19});
  Value* mp = b.node("MaxPool", {p},
                     attrs({{"kernel_shape", std::vector<int64_t>{3, 3}},
                            {"strides", std::vector<int64_t>{2, 2}},
                            {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* tr = b.node("Transpose", {x}, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}}));
  Value* cc = b.node("Concat", {x, x}, attrs({{"axis", int64_t{1}}}));
  Value* lg = b.node("Log", {b.node("Exp", {x})});
  Value* th = b.node("Tanh", {x});
  Value* ef = b.node("Erf", {x});
  auto g = b.finish({sm, rs, mp, tr, cc, lg, th, ef});
  auto prog = gpu_backend::compile_gpu(*g);
  size_t softmax_launches = 0;
  for (const auto& k : prog.kernels)
    if (prog.plan.kernels[k.info_index].op_type == "Softmax") softmax_launches = k.launches.size();
  EXPECT_GE(softmax_launches, 3u);
  check_gpu(*g,
            {{"x", random_tensor({3, 5, 37}, 18, -3, 3)}, {"p", random_tensor({2, 3, 13, 19}, 19)}},
            1e-5);
}

/// fp16 bits of fp16-exact values.
std::vector<uint16_t> to_f16(const Tensor& t) {
  std::vector<uint16_t> h(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) h[i] = f32_to_f16_bits(t.data<float>()[i]);
  return h;
}

TEST(GpuStandalone, Fp16GemmKernelOfTheBenchmarkMatchesReference) {
  // The kernel bench_gpu runs against cuBLAS (fp16 A and B in global memory, fp32 C): 16-byte
  // cp.async rows of 8 halves, here on a size with partial tiles and several K chunks.
  const int64_t M = 80, N = 72, K = 96;
  auto k = gpu_backend::gemm_kernel(M, N, K, DType::f16);
  const std::string ptx = gpu_backend::gpu_ptx(k.program);
  EXPECT_NE(ptx.find("cp.async.cg.shared.global [%rd"), std::string::npos);
  ptxas_accepts(ptx);
  Tensor a = fp16_exact_random({M, K}, 30), b = fp16_exact_random({K, N}, 31);
  auto ah = to_f16(a), bh = to_f16(b);
  std::vector<float> c(static_cast<size_t>(M * N), 0.f);
  gpu_backend::GpuEmulator emu(k.program);
  emu.launch(k.entry, k.shape, {ah.data(), bh.data(), c.data()});
  double worst = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = 0;
      for (int64_t q = 0; q < K; ++q)
        want += a.data<float>()[i * K + q] * b.data<float>()[q * N + j];
      worst = std::max(worst, std::abs(want - c[static_cast<size_t>(i * N + j)]));
    }
  EXPECT_LE(worst, 1e-5);
}

TEST(GpuStandalone, ConvKernelOfTheBenchmarkMatchesReference) {
  const Shape xs = {2, 16, 10, 12};
  Tensor w = fp16_exact_random({24, 16, 3, 3}, 32);
  auto k = gpu_backend::conv_kernel(xs, w, 1, 1, DType::f16);
  ptxas_accepts(gpu_backend::gpu_ptx(k.program));
  ASSERT_EQ(k.constants.size(), 1u);
  Tensor x = fp16_exact_random(xs, 33);
  auto xh = to_f16(x);
  std::vector<float> y(2 * 24 * 10 * 12, 0.f);
  gpu_backend::GpuEmulator emu(k.program);
  emu.launch(k.entry, k.shape, {xh.data(), y.data(), k.constants[0].data.raw()});
  GpuGraph b;
  Value* xv = b.input("x", xs);
  Value* yv =
      b.node("Conv", {xv, b.constant("w", w)}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  auto g = b.finish({yv});
  const Tensor ref = ops::run_reference(*g, {{"x", x}}).at(yv->name);
  Tensor got = Tensor::from_floats(ref.shape(), y);
  EXPECT_TRUE(all_close(got, ref, 1e-5 * max_abs(ref) + 1e-6));
}

// The roofline of a device from its reported properties, against the whitepapers' peaks:
// A100 SXM4 40 GB (sm_80, 108 SMs, 1410 MHz boost, HBM2 1215 MHz x 5120 bits): 2 x 1024 x 108 x
// 1.41e9 = 311.9 TFLOP/s fp16 tensor (whitepaper: 312), 2 x 64 x 108 x 1.41e9 = 19.49 TFLOP/s
// fp32 (19.5), 2 x 1.215e9 x 640 bytes = 1.555 TB/s (1555 GB/s). H100 SXM5 (sm_90, 132 SMs,
// 1980 MHz, HBM3 2619 MHz x 5120 bits): 2 x 2048 x 132 x 1.98e9 = 1070 TFLOP/s, 2 x 128 x 132 x
// 1.98e9 = 66.9 TFLOP/s (67), 3.352 TB/s (3.35).
TEST(GpuRoofline, PeaksFromDevicePropertiesMatchTheWhitepapers) {
  const auto a100 = passes::gpu_roofline(80, 108, 1410000, 1215000, 5120);
  EXPECT_NEAR(a100.fp16_tensor_flops, 311.87e12, 0.01e12);
  EXPECT_NEAR(a100.fp32_flops, 19.49e12, 0.01e12);
  EXPECT_NEAR(a100.dram_bytes_per_second, 1.5552e12, 0.0001e12);
  const auto h100 = passes::gpu_roofline(90, 132, 1980000, 2619000, 5120);
  EXPECT_NEAR(h100.fp16_tensor_flops, 1070.6e12, 0.1e12);
  EXPECT_NEAR(h100.fp32_flops, 66.91e12, 0.01e12);
  EXPECT_NEAR(h100.dram_bytes_per_second, 3.352e12, 0.001e12);
  // sm_86 (GA102): 256 tensor FMA / clock / SM with fp32 accumulation, 128 fp32 FMA.
  const auto a6000 = passes::gpu_roofline(86, 84, 1800000, 8000000, 384);
  EXPECT_NEAR(a6000.fp16_tensor_flops, 2 * 256 * 84 * 1.8e9, 1e9);
  EXPECT_NEAR(a6000.fp32_flops, 2 * 128 * 84 * 1.8e9, 1e9);
  // A launch: the larger of compute and memory time; the tensor-core peak only on the cores.
  // 1 GFLOP at 311.87 TFLOP/s = 3.206 us; 16 MB at 1.5552 TB/s = 10.29 us: memory bound.
  EXPECT_NEAR(a100.launch_seconds(1e9, 16e6, true), 16e6 / 1.5552e12, 1e-12);
  // The same in fp32: 1e9 / 19.49e12 = 51.3 us, compute bound.
  EXPECT_NEAR(a100.launch_seconds(1e9, 16e6, false), 1e9 / a100.fp32_flops, 1e-12);
  EXPECT_EQ(passes::GpuRoofline{}.launch_seconds(1e9, 16e6, true), 0);  // the emulator: no peaks
}

}  // namespace
}  // namespace tessel::testing
