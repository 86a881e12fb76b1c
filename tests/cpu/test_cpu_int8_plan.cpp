// The CPU plan's int8 kernels (compiler/backend/cpu/int8_kernels.h) end to end through
// compile_cpu + CpuJit: integer tensors stored in their own dtype between kernels and at the
// graph's inputs and outputs; QuantizeLinear / DequantizeLinear (per tensor and per axis, u8 and
// s8), QLinearMatMul, MatMulInteger, QLinearConv and ConvInteger on both qgemm paths (plain and,
// where the host has it, AVX-512 VNNI), each compared with the reference interpreter bit for bit
// (integer outputs and the fp32 bits of DequantizeLinear's); the int8 golden cases of
// tests/data/cases through `tessel check --target cpu`, and every integer value of the folded
// int8 classifier equal to the reference's (whose output equals ONNX Runtime's).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>

#include "compiler/backend/cpu/aot.h"
#include "compiler/backend/cpu/int8_kernels.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/runner.h"
#include "compiler/frontend/onnx_import.h"
#include "tests/cpu/cpu_test_util.h"
#include "tests/test_tensors.h"

namespace tessel::testing {
namespace {

using cpu_backend::QGemmPath;
const std::string kSrc = TESSEL_SOURCE_DIR;

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<int64_t>(t.get_as_double(i)));
  return v;
}

std::vector<QGemmPath> paths() {
  std::vector<QGemmPath> p = {QGemmPath::plain};
  if (cpu_backend::qgemm_host_path() == QGemmPath::vnni) p.push_back(QGemmPath::vnni);
  return p;
}

/// `graph` compiled for the CPU with the int8 kernels on `path`, run once.
std::map<std::string, Tensor> run_cpu(const Graph& graph, const std::map<std::string, Tensor>& in,
                                      QGemmPath path) {
  cpu_backend::CpuCompileOptions o;
  o.qgemm_path = path;
  cpu_backend::CpuJit jit(cpu_backend::compile_cpu(graph, o));
  return jit.run(in).outputs;
}

/// Every output of `graph` on the CPU (both paths) has the reference's dtype, shape and bytes.
void expect_bit_exact(const Graph& graph, const std::map<std::string, Tensor>& in) {
  const auto ref = ops::run_reference(graph, in);
  for (QGemmPath p : paths()) {
    const auto got = run_cpu(graph, in, p);
    for (const auto& [name, r] : ref) {
      ASSERT_TRUE(got.count(name)) << name;
      const Tensor& g = got.at(name);
      EXPECT_EQ(g.dtype(), r.dtype()) << name;
      EXPECT_EQ(g.shape(), r.shape()) << name;
      if (g.dtype() != r.dtype() || g.shape() != r.shape()) continue;
      const size_t bytes = static_cast<size_t>(r.numel()) * dtype_size(r.dtype());
      EXPECT_EQ(std::memcmp(g.raw(), r.raw(), bytes), 0)
          << name << " differs on the " << cpu_backend::qgemm_path_name(p) << " path";
    }
  }
}

TEST(CpuInt8Plan, QuantizeLinearTiesAndSaturationHandDerived) {
  // scale 0.5: x / scale = 2.5, -2.5, 1.5, 200, -200, NaN, 2000. Round half to even: 2, -2, 2.
  // s8, zp -3: -1, -5, -1, 197 -> 127, -203 -> -128, NaN -> zp -3, 127.
  // u8, zp 10: 12, 8, 12, 210, -190 -> 0, NaN -> 10, 2010 -> 255.
  // DequantizeLinear back (q - zp) * 0.5: s8 [1, -1, 1, 65, -62.5, 0, 65], u8 [1, -1, 1, 100, -5,
  // 0, 122.5].
  for (DType dt : {DType::i8, DType::u8}) {
    CpuGraph b;
    Value* x = b.input("x", {7});
    Value* s = b.constant("s", scalar(DType::f32, 0.5));
    Value* z = b.constant("z", scalar(dt, dt == DType::i8 ? -3 : 10));
    Value* q = b.node("QuantizeLinear", {x, s, z});
    Value* d = b.node("DequantizeLinear", {q, s, z});
    auto g = b.finish({q, d});
    const std::map<std::string, Tensor> in = {
        {"x", vec(DType::f32, {1.25, -1.25, 0.75, 100, -100, std::nan(""), 1000})}};
    for (QGemmPath p : paths()) {
      const auto out = run_cpu(*g, in, p);
      ASSERT_EQ(out.at(q->name).dtype(), dt);  // an integer graph output in its own dtype
      if (dt == DType::i8) {
        EXPECT_EQ(ints(out.at(q->name)), (std::vector<int64_t>{-1, -5, -1, 127, -128, -3, 127}));
        EXPECT_EQ(out.at(d->name).to_float_vector(),
                  (std::vector<float>{1, -1, 1, 65, -62.5, 0, 65}));
      } else {
        EXPECT_EQ(ints(out.at(q->name)), (std::vector<int64_t>{12, 8, 12, 210, 0, 10, 255}));
        EXPECT_EQ(out.at(d->name).to_float_vector(),
                  (std::vector<float>{1, -1, 1, 100, -5, 0, 122.5}));
      }
    }
    expect_bit_exact(*g, in);
  }
}

TEST(CpuInt8Plan, QuantizeDequantizePerAxisMatchTheReference) {
  // Per axis 0, 1 and 2 and per tensor, u8 and s8; a third of the elements are exact ties
  // (k + 0.5) * scale, the rest random, some saturating (|k| up to 300).
  std::mt19937 rng(11);
  auto rnd = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const Shape shape = {3, 4, 5};
  for (DType dt : {DType::u8, DType::i8})
    for (int64_t axis : {-1, 0, 1, 2}) {
      const int64_t count = axis < 0 ? 1 : shape[axis];
      std::vector<double> sc, zp;
      for (int64_t c = 0; c < count; ++c) {
        sc.push_back(0.125 * rnd(1, 8));
        zp.push_back(dt == DType::u8 ? rnd(0, 255) : rnd(-128, 127));
      }
      Tensor xs(DType::f32, shape);
      for (int64_t i = 0; i < xs.numel(); ++i) {
        const int64_t c = count == 1 ? 0 : (axis == 0 ? i / 20 : axis == 1 ? i / 5 % 4 : i % 5);
        xs.set_from_double(i, (rnd(-300, 300) + (i % 3 == 0 ? 0.5 : 0.37 * rnd(0, 2))) * sc[c]);
      }
      CpuGraph b;
      Value* x = b.input("x", shape);
      Value* s = b.constant("s", count == 1 ? scalar(DType::f32, sc[0]) : vec(DType::f32, sc));
      Value* z = b.constant("z", count == 1 ? scalar(dt, zp[0]) : vec(dt, zp));
      const Attributes at = attrs({{"axis", int64_t{axis < 0 ? 1 : axis}}});
      Value* q = b.node("QuantizeLinear", {x, s, z}, at);
      Value* d = b.node("DequantizeLinear", {q, s, z}, at);
      auto g = b.finish({q, d});
      SCOPED_TRACE(std::string(dtype_to_string(dt)) + " axis " + std::to_string(axis));
      expect_bit_exact(*g, {{"x", xs}});
    }
}

TEST(CpuInt8Plan, QLinearMatMulAndMatMulIntegerMatchTheReference) {
  // A of rank 3 (2 x 5 rows of K = 37), B 37 x 19 (K, N not multiples of the packing's 4 and
  // 16), per-column b scales and zero points, every dtype combination; MatMulInteger with its a
  // zero point as a graph input (a u8 / s8 scalar passed at run time).
  std::mt19937 rng(3);
  auto rnd = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (DType adt : {DType::u8, DType::i8})
    for (DType bdt : {DType::u8, DType::i8}) {
      const int alo = adt == DType::u8 ? 0 : -128, blo = bdt == DType::u8 ? 0 : -128;
      const int64_t K = 37, N = 19;
      Tensor bw(bdt, {K, N});
      for (int64_t i = 0; i < bw.numel(); ++i) bw.set_from_double(i, rnd(blo, blo + 255));
      std::vector<double> bs, bz;
      for (int64_t n = 0; n < N; ++n) {
        bs.push_back(0.001 * rnd(1, 40));
        bz.push_back(rnd(blo, blo + 255));
      }
      CpuGraph b;
      Value* a = b.input("a", {2, 5, K}, adt);
      Value* azp = b.input("a_zp", {}, adt);
      Value* q = b.node(
          "QLinearMatMul",
          {a, b.constant("as", scalar(DType::f32, 0.02)), b.constant("az", scalar(adt, alo + 100)),
           b.constant("b", bw), b.constant("bs", vec(DType::f32, bs)),
           b.constant("bz", vec(bdt, bz)), b.constant("ys", scalar(DType::f32, 0.05)),
           b.constant("yz", scalar(DType::u8, 120))});
      // MatMulInteger's b zero point per tensor (the reference's form).
      Value* mi = b.node("MatMulInteger",
                         {a, b.constant("b2", bw), azp, b.constant("bz2", scalar(bdt, bz[0]))});
      auto g = b.finish({q, mi});
      const std::map<std::string, Tensor> in = {
          {"a", random_int_tensor({2, 5, K}, adt, 7, alo, alo + 255)},
          {"a_zp", scalar(adt, alo + 77)}};
      SCOPED_TRACE(std::string(dtype_to_string(adt)) + " x " + dtype_to_string(bdt));
      expect_bit_exact(*g, in);
    }
}

TEST(CpuInt8Plan, PaddingUsesTheInputZeroPoint) {
  // ConvInteger of x = 7 everywhere (x_zero_point 7, so x - zp = 0) with a 3x3 kernel of ones,
  // pads 1: every output is exactly 0, the border ones included, because the im2col pads with
  // the zero point 7 (a zero pad would give -7 per padded tap: -35 at the corners). Then
  // QLinearConv with the same padding and an int32 bias 40 on x = zp: y = requant(40 * 0.5 * 1 /
  // 4) = nearbyint(5) + 3 = 8 everywhere.
  CpuGraph b;
  Value* x = b.input("x", {1, 2, 4, 5}, DType::u8);
  Tensor w(DType::i8, {3, 2, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.set_from_double(i, 1);
  const Attributes pads = attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Value* ci = b.node("ConvInteger",
                     {x, b.constant("w", w), b.constant("xz", scalar(DType::u8, 7)),
                      b.constant("wz", scalar(DType::i8, 0))},
                     pads);
  Value* ql = b.node(
      "QLinearConv",
      {x, b.constant("xs", scalar(DType::f32, 0.5)), b.constant("xz2", scalar(DType::u8, 7)),
       b.constant("w2", w), b.constant("ws", scalar(DType::f32, 1)),
       b.constant("wz2", scalar(DType::i8, 0)), b.constant("ys", scalar(DType::f32, 4)),
       b.constant("yz", scalar(DType::u8, 3)), b.constant("bias", vec(DType::i32, {40, 40, 40}))},
      pads);
  auto g = b.finish({ci, ql});
  Tensor xin(DType::u8, {1, 2, 4, 5});
  for (int64_t i = 0; i < xin.numel(); ++i) xin.set_from_double(i, 7);
  for (QGemmPath p : paths()) {
    const auto out = run_cpu(*g, {{"x", xin}}, p);
    EXPECT_EQ(ints(out.at(ci->name)), std::vector<int64_t>(3 * 4 * 5, 0));
    EXPECT_EQ(ints(out.at(ql->name)), std::vector<int64_t>(3 * 4 * 5, 8));
  }
  expect_bit_exact(*g, {{"x", xin}});
}

TEST(CpuInt8Plan, QLinearConvAndConvIntegerMatchTheReference) {
  // Grouped (2 groups), strided, asymmetrically padded 3x3 with per-channel s8 weights and a
  // bias; depthwise 5x5 with a u8 weight and s8 activations; dilated; a 1-D conv with auto_pad
  // SAME_UPPER; ConvInteger with padding and per-channel weight zero points. x's zero points are
  // far from 0 so that a wrong pad value shows.
  std::mt19937 rng(9);
  auto rnd = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto rand_t = [&](DType dt, const Shape& s) {
    const int lo = dt == DType::u8 ? 0 : -128;
    Tensor t(dt, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, rnd(lo, lo + 255));
    return t;
  };
  auto rand_v = [&](DType dt, int64_t n, int lo, int hi) {
    std::vector<double> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(rnd(lo, hi));
    return vec(dt, v);
  };
  auto rand_scales = [&](int64_t n) {
    std::vector<double> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(0.0005 * rnd(1, 40));
    return vec(DType::f32, v);
  };
  struct Case {
    std::string what;
    DType xdt, wdt;
    Shape x, w;
    Attributes at;
    bool per_channel, bias;
  };
  const std::vector<Case> cases = {
      {"grouped strided padded",
       DType::u8,
       DType::i8,
       {2, 6, 9, 11},
       {8, 3, 3, 3},
       attrs({{"group", int64_t{2}},
              {"strides", std::vector<int64_t>{2, 2}},
              {"pads", std::vector<int64_t>{1, 2, 1, 0}}}),
       true,
       true},
      {"depthwise 5x5",
       DType::i8,
       DType::u8,
       {1, 4, 7, 7},
       {4, 1, 5, 5},
       attrs({{"group", int64_t{4}}, {"pads", std::vector<int64_t>{2, 2, 2, 2}}}),
       false,
       true},
      {"dilated",
       DType::u8,
       DType::u8,
       {1, 3, 10, 10},
       {5, 3, 3, 3},
       attrs(
           {{"dilations", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{2, 2, 2, 2}}}),
       true,
       false},
      {"1-D same_upper",
       DType::u8,
       DType::i8,
       {1, 3, 13},
       {4, 3, 4},
       attrs({{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2}}}),
       true,
       true},
  };
  for (const Case& c : cases) {
    const int64_t M = c.w[0];
    const int xlo = c.xdt == DType::u8 ? 0 : -128, wlo = c.wdt == DType::u8 ? 0 : -128;
    CpuGraph b;
    Value* x = b.input("x", c.x, c.xdt);
    const Tensor w = rand_t(c.wdt, c.w);
    std::vector<Value*> ins = {
        x,
        b.constant("xs", scalar(DType::f32, 0.03)),
        b.constant("xz", scalar(c.xdt, xlo + 200)),
        b.constant("w", w),
        b.constant("ws", c.per_channel ? rand_scales(M) : scalar(DType::f32, 0.004)),
        b.constant("wz", c.per_channel ? rand_v(c.wdt, M, wlo + 100, wlo + 150)
                                       : scalar(c.wdt, wlo + 130)),
        b.constant("ys", scalar(DType::f32, 0.02)),
        b.constant("yz", scalar(DType::i8, -5))};
    if (c.bias) ins.push_back(b.constant("bias", rand_v(DType::i32, M, -3000, 3000)));
    Value* q = b.node("QLinearConv", ins, c.at);
    Value* ci = b.node("ConvInteger",
                       {x, b.constant("w2", w), b.constant("xz2", scalar(c.xdt, xlo + 200)),
                        b.constant("wz2", c.per_channel ? rand_v(c.wdt, M, wlo, wlo + 255)
                                                        : scalar(c.wdt, wlo + 3))},
                       c.at);
    auto g = b.finish({q, ci});
    SCOPED_TRACE(c.what);
    expect_bit_exact(*g, {{"x", rand_t(c.xdt, c.x)}});
  }
}

TEST(CpuInt8Plan, IntegerGraphInputsAndOutputs) {
  // A u8 graph input passed through a view to an output (a host byte copy), a QuantizeLinear
  // output that is also read by DequantizeLinear (an output computed in place), and i32 in
  // and out (DequantizeLinear of an int32 input).
  CpuGraph b;
  Value* x = b.input("x", {2, 3}, DType::u8);
  Value* i32 = b.input("acc", {4}, DType::i32);
  Value* r = b.node("Reshape", {x, b.constant("shape", vec(DType::i64, {3, 2}))});
  Value* d = b.node("DequantizeLinear", {i32, b.constant("s", scalar(DType::f32, 0.25))});
  auto g = b.finish({r, d});
  const Tensor xin = random_int_tensor({2, 3}, DType::u8, 1, 0, 255);
  const Tensor acc = vec(DType::i32, {1, -3, 1 << 24, -(1 << 30)});
  for (QGemmPath p : paths()) {
    const auto out = run_cpu(*g, {{"x", xin}, {"acc", acc}}, p);
    EXPECT_EQ(out.at(r->name).dtype(), DType::u8);
    EXPECT_EQ(ints(out.at(r->name)), ints(xin));
    EXPECT_EQ(out.at(d->name).to_float_vector(),
              (std::vector<float>{0.25f, -0.75f, 4194304.0f, -268435456.0f}));
  }
  expect_bit_exact(*g, {{"x", xin}, {"acc", acc}});
}

TEST(CpuInt8Plan, GeneratedKernelsReadIntegerTensorsAndAotRefusesInt8Kernels) {
  {
    // A u8 Add is a generated kernel in u8 (typed values, tests/cpu/test_cpu_typed.cpp): it
    // wraps, 200 + 200 = 144; float-only ops on integers are refused there by name.
    CpuGraph b;
    Value* x = b.input("x", {4}, DType::u8);
    Value* y = b.node("Add", {x, x});
    auto g = b.finish({y});
    cpu_backend::CpuJit jit(cpu_backend::compile_cpu(*g));
    const auto out = jit.run({{"x", vec(DType::u8, {0, 1, 100, 200})}}).outputs.at(y->name);
    EXPECT_EQ(out.dtype(), DType::u8);
    EXPECT_EQ(ints(out), (std::vector<int64_t>{0, 2, 200, 144}));
  }
  CpuGraph b;
  Value* x = b.input("x", {4});
  auto g = b.finish({b.node("QuantizeLinear", {x, b.constant("s", scalar(DType::f32, 0.1))})});
  const auto prog = cpu_backend::compile_cpu(*g);
  EXPECT_THROW(cpu_backend::llvm_ir_text(prog, false), Unsupported);
}

TEST(CpuInt8Plan, Int8GoldenCasesPassTesselCheckOnCpu) {
  // `tessel check --target cpu` (its tolerance: atol 1e-5, rtol 1e-3 of the float outputs) on
  // the int8 golden cases. The *_ort_all cases hold ONNX Runtime's outputs with its QDQ
  // transformer (optimisation level all): tessel folds the same groups (fold_qdq, which fires on
  // the cpu target since it has QLinearConv / QLinearMatMul), so the integers are ORT's and the
  // float outputs follow a DequantizeLinear of equal integers: they differ only by the fp32
  // rounding of the float tail (softmax / sigmoid: ORT's and tessel's expf), far below 1e-5.
  // The other two cases hold ORT with optimisations off (DequantizeLinear -> float op ->
  // QuantizeLinear): run with fold_qdq disabled, the float Conv/Gemm sums in another order, so an
  // intermediate can round to the neighbouring int8 step; the check tolerance is the one the
  // reference meets on these cases too (tests/quantize).
  CpuTempDir tmp;
  ScopedEnv cache("TESSEL_CACHE_DIR", (tmp.path / "cache").c_str());
  for (bool folded : {true, false}) {
    driver::CheckArgs args;
    const std::string suffix = folded ? "_ort_all" : "";
    args.case_dirs = {kSrc + "/tests/data/cases/ppocr_cls_int8_b1" + suffix,
                      kSrc + "/tests/data/cases/hello_deepa_int8" + suffix};
    args.target = "cpu";
    if (!folded) args.passes.disable = {"fold_qdq"};
    std::ostringstream out, err;
    EXPECT_EQ(driver::cmd_check(args, out, err), 0) << out.str() << err.str();
    EXPECT_NE(out.str().find("all outputs within tolerance"), std::string::npos) << out.str();
    std::cout << out.str();
  }
}

TEST(CpuInt8Plan, FoldedClassifierIntegersEqualTheReferenceOnBothPaths) {
  // The int8 PP-OCR classifier as the cpu target compiles it (every pass, fold_qdq with the cpu's
  // ops: 53 QLinearConv + 1 QLinearMatMul, the Q/DQ left around the float ops) with every integer
  // value an int8 kernel computes made a graph output: on the golden input, each of them equals
  // the reference interpreter's on 100% of its elements (the reference's output equals ONNX
  // Runtime's: tests/quantize), on both qgemm paths; the softmax output is within 1e-6 of ORT's
  // (fp32 exp and sum of equal integers' dequantised logits).
  graph_passes::PipelineOptions po;
  po.available = driver::target_ops(driver::Target::cpu);
  auto g = driver::load_model(kSrc + "/tests/data/models/ch_ppocr_mobile_v2.0_cls_infer_int8.onnx",
                              {{"x", {1, 3, 48, 192}}}, po);
  int qconv = 0, qmm = 0;
  std::vector<Value*> outs = g->outputs;
  for (const auto& n : g->nodes()) {
    qconv += n->op_type == "QLinearConv";
    qmm += n->op_type == "QLinearMatMul";
    const Value* o = n->outputs.at(0);
    if (o && !o->constant && (o->dtype == DType::u8 || o->dtype == DType::i8))
      outs.push_back(const_cast<Value*>(o));
  }
  EXPECT_EQ(qconv, 53);
  EXPECT_EQ(qmm, 1);
  const std::string final_name = g->outputs.at(0)->name;
  g->outputs = outs;
  const std::string dir = kSrc + "/tests/data/cases/ppocr_cls_int8_b1_ort_all/test_data_set_0";
  const std::map<std::string, Tensor> in = {{"x", frontend::load_tensor_pb(dir + "/input_0.pb")}};
  const Tensor ort = frontend::load_tensor_pb(dir + "/output_0.pb");
  const auto ref = ops::run_reference(*g, in);
  for (QGemmPath p : paths()) {
    const auto got = run_cpu(*g, in, p);
    int64_t elements = 0, equal = 0, values = 0;
    for (const auto& [name, r] : ref) {
      if (name == final_name) continue;
      const Tensor& t = got.at(name);
      ASSERT_EQ(t.dtype(), r.dtype()) << name;
      ++values;
      for (int64_t i = 0; i < r.numel(); ++i) {
        ++elements;
        equal += t.get_as_double(i) == r.get_as_double(i);
      }
    }
    EXPECT_EQ(equal, elements) << cpu_backend::qgemm_path_name(p);
    const auto y = got.at(final_name).to_float_vector(), want = ort.to_float_vector();
    ASSERT_EQ(y.size(), want.size());
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6);
    std::cout << "  " << cpu_backend::qgemm_path_name(p) << ": " << equal << " of " << elements
              << " integer elements of " << values << " int8 values equal the reference's; output "
              << y[0] << ", " << y[1] << " (ORT " << want[0] << ", " << want[1] << ")\n";
  }
}

}  // namespace
}  // namespace tessel::testing
