// Integer, bool and float64 tensors in the GPU backend (compile.cpp: model_plan.h
// PlanOptions::typed_values, the CPU's mechanism; codegen through LoopCodegen's typed
// expressions to NVPTX), and the kernels of an If's branches run on their guard read back.
//
// Every case compiles the graph for the GPU, assembles its PTX with ptxas for sm_80 and sm_90
// (when the CUDA toolkit is installed), runs the same kernels on the host emulator and compares
// every output with the reference interpreter element for element (dtype, shape and values
// equal; NaN positions equal) and with hand-derived values. Float64 exp / log (no fp64 ex2 /
// lg2 in PTX: codegen.cpp's own) are compared with the host libm within a few ulps.
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/driver/runner.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/test_tensors.h"

namespace tessel::testing {
namespace {

/// Compiles `graph` for the GPU, checks its PTX with ptxas, runs it on the emulator; every output
/// has the reference's dtype, shape and values. Returns the GPU's outputs; `ptx_out` gets the PTX.
std::map<std::string, Tensor> run_exact(const Graph& graph, const std::map<std::string, Tensor>& in,
                                        std::string* ptx_out = nullptr) {
  gpu_backend::GpuProgram prog = gpu_backend::compile_gpu(graph);
  const std::string ptx = gpu_backend::gpu_ptx(prog);
  ptxas_accepts(ptx);
  if (ptx_out) *ptx_out = ptx;
  gpu_backend::GpuExecutable exe(std::move(prog), gpu_backend::GpuDevice::emulator);
  auto got = exe.run(in, true);
  EXPECT_FALSE(got.launch_seconds.empty());
  expect_outputs_exact(got.outputs, ops::run_reference(graph, in));
  return got.outputs;
}

TEST(GpuTyped, Int64GatherAndAddAreExact) {
  // Gather axis 0 of an i64 [5, 3] table with i64 indices [[4, -1], [0, -5]] (-1 -> 4, -5 -> 0),
  // axis 1 with i32 indices [2, -3]; an i64 Add of values beyond 2^32 that wraps at 2^63.
  GpuGraph b;
  Value* data = b.input("data", {5, 3}, DType::i64);
  Value* idx = b.input("idx", {2, 2}, DType::i64);
  Value* idx1 = b.input("idx1", {2}, DType::i32);
  Value* p = b.input("p", {4}, DType::i64);
  Value* q = b.input("q", {4}, DType::i64);
  Value* g0 = b.node("Gather", {data, idx}, attrs({{"axis", int64_t{0}}}));
  Value* g1 = b.node("Gather", {data, idx1}, attrs({{"axis", int64_t{1}}}));
  Value* add = b.node("Add", {p, q});
  auto g = b.finish({g0, g1, add});
  std::vector<double> d;
  for (int i = 0; i < 15; ++i) d.push_back(i == 7 ? 5000000000.0 : 10 * i - 30);  // > 2^32
  Tensor pt(DType::i64, {4}), qt(DType::i64, {4});
  const int64_t pv[4] = {5000000000LL, -7, std::numeric_limits<int64_t>::max(), 1LL << 40};
  const int64_t qv[4] = {4000000001LL, 3, 1, -(1LL << 41)};
  std::memcpy(pt.raw(), pv, sizeof pv);
  std::memcpy(qt.raw(), qv, sizeof qv);
  std::string ptx;
  auto out = run_exact(*g,
                       {{"data", vec(DType::i64, d, {5, 3})},
                        {"idx", vec(DType::i64, {4, -1, 0, -5}, {2, 2})},
                        {"idx1", vec(DType::i32, {2, -3})},
                        {"p", pt},
                        {"q", qt}},
                       &ptx);
  EXPECT_EQ(values(out.at(g0->name)),
            (std::vector<double>{90, 100, 110, 90, 100, 110, -30, -20, -10, -30, -20, -10}));
  EXPECT_EQ(values(out.at(g1->name)),
            (std::vector<double>{-10, -30, 20, 0, 50, 30, 80, 60, 110, 90}));
  EXPECT_EQ(out.at(g0->name).dtype(), DType::i64);
  const auto* s = reinterpret_cast<const int64_t*>(out.at(add->name).raw());
  EXPECT_EQ(s[0], 9000000001LL);
  EXPECT_EQ(s[1], -4);
  EXPECT_EQ(s[2], std::numeric_limits<int64_t>::min());  // wraps
  EXPECT_EQ(s[3], -(1LL << 40));
  // The i64 data moves as 64-bit global accesses in the PTX (not through fp32).
  EXPECT_NE(ptx.find(".u64"), std::string::npos);
  EXPECT_NE(ptx.find("add.s64"), std::string::npos);
}

TEST(GpuTyped, BoolLogicComparisonsAndWhere) {
  // Less / Greater / LessOrEqual of i32 (broadcast), comparisons of floats with NaN (ordered:
  // false, Not(Equal) true), And / Or / Xor / Not of bools, Where selecting i64.
  GpuGraph b;
  Value* a = b.input("a", {2, 4}, DType::i32);
  Value* c = b.input("c", {4}, DType::i32);
  Value* x = b.input("x", {4});
  Value* y = b.input("y", {4});
  Value* p = b.input("p", {4}, DType::i64);
  Value* q = b.input("q", {4}, DType::i64);
  Value* m = b.input("m", {4}, DType::boolean);
  Value* lt = b.node("Less", {a, c});
  Value* gt = b.node("Greater", {a, c});
  Value* le = b.node("LessOrEqual", {a, c});
  Value* ge = b.node("GreaterOrEqual", {x, y});
  Value* eq = b.node("Equal", {x, y});
  Value* ne = b.node("Not", {eq});
  Value* both = b.node("And", {ge, m});
  Value* either = b.node("Or", {ge, eq});
  Value* xo = b.node("Xor", {ge, ne});
  Value* w = b.node("Where", {m, p, q});
  auto g = b.finish({lt, gt, le, eq, ne, both, either, xo, w});
  const double nan = std::nan("");
  auto out =
      run_exact(*g, {{"a", vec(DType::i32, {-5, 0, 7, 2147483647, 3, 3, 3, -2147483648.0}, {2, 4})},
                     {"c", vec(DType::i32, {-6, 0, 8, -1})},
                     {"x", vec(DType::f32, {1.5, nan, -0.0, 2})},
                     {"y", vec(DType::f32, {1.5, nan, 0.0, 3})},
                     {"p", vec(DType::i64, {1, 2, 3, 4})},
                     {"q", vec(DType::i64, {-1, -2, -3, -9000000000.0})},
                     {"m", vec(DType::boolean, {1, 0, 1, 0})}});
  EXPECT_EQ(out.at(lt->name).dtype(), DType::boolean);
  EXPECT_EQ(values(out.at(lt->name)), (std::vector<double>{0, 0, 1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(values(out.at(gt->name)), (std::vector<double>{1, 0, 0, 1, 1, 1, 0, 0}));
  EXPECT_EQ(values(out.at(le->name)), (std::vector<double>{0, 1, 1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(values(out.at(eq->name)), (std::vector<double>{1, 0, 1, 0}));  // -0 == 0
  EXPECT_EQ(values(out.at(ne->name)), (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(values(out.at(both->name)), (std::vector<double>{1, 0, 1, 0}));
  EXPECT_EQ(values(out.at(either->name)), (std::vector<double>{1, 0, 1, 0}));
  EXPECT_EQ(values(out.at(xo->name)), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(values(out.at(w->name)), (std::vector<double>{1, -2, 3, -9000000000.0}));
  // Bools are bytes 0 / 1 in the output buffer.
  const auto* bytes = reinterpret_cast<const uint8_t*>(out.at(lt->name).raw());
  for (int i = 0; i < 8; ++i) EXPECT_LE(bytes[i], 1) << i;
}

TEST(GpuTyped, CastRulesAndIntegerArithmetic) {
  // float -> integer truncates toward zero and saturates (NaN -> 0); float -> bool is x != 0;
  // integer -> integer wraps; i32 Div truncates, Mod takes the divisor's sign (fmod=1: the
  // dividend's); u8 Sub / Mul wrap; i32 Add wraps at 2^31.
  GpuGraph b;
  Value* f = b.input("f", {8});
  Value* i = b.input("i", {6}, DType::i64);
  Value* a = b.input("a", {6}, DType::i32);
  Value* d = b.input("d", {6}, DType::i32);
  Value* ua = b.input("ua", {4}, DType::u8);
  Value* ud = b.input("ud", {4}, DType::u8);
  auto cast = [&](Value* v, DType to) {
    return b.node("Cast", {v}, attrs({{"to", static_cast<int64_t>(to)}}));
  };
  Value* f_i32 = cast(f, DType::i32);
  Value* f_u8 = cast(f, DType::u8);
  Value* f_b = cast(f, DType::boolean);
  Value* i_i8 = cast(i, DType::i8);
  Value* i_f = cast(i, DType::f32);
  Value* div = b.node("Div", {a, d});
  Value* mod = b.node("Mod", {a, d});
  Value* fmod = b.node("Mod", {a, d}, attrs({{"fmod", int64_t{1}}}));
  Value* add = b.node("Add", {a, d});
  Value* usub = b.node("Sub", {ua, ud});
  Value* umul = b.node("Mul", {ua, ud});
  auto g = b.finish({f_i32, f_u8, f_b, i_i8, i_f, div, mod, fmod, add, usub, umul});
  const double nan = std::nan("");
  auto out = run_exact(*g, {{"f", vec(DType::f32, {2.7, -2.7, nan, 1e10, -1e10, -0.0, 300.5, 0.4})},
                            {"i", vec(DType::i64, {300, -129, 127, -1, 16777217, -9000000000.0})},
                            {"a", vec(DType::i32, {7, -7, 7, -7, 2147483647, -2147483647})},
                            {"d", vec(DType::i32, {2, 2, -2, -2, 1, 3})},
                            {"ua", vec(DType::u8, {200, 3, 255, 16})},
                            {"ud", vec(DType::u8, {3, 5, 2, 16})}});
  EXPECT_EQ(values(out.at(f_i32->name)),
            (std::vector<double>{2, -2, 0, 2147483647, -2147483648.0, 0, 300, 0}));
  EXPECT_EQ(values(out.at(f_u8->name)), (std::vector<double>{2, 0, 0, 255, 0, 0, 255, 0}));
  EXPECT_EQ(values(out.at(f_b->name)), (std::vector<double>{1, 1, 1, 1, 1, 0, 1, 1}));
  EXPECT_EQ(values(out.at(i_i8->name)), (std::vector<double>{44, 127, 127, -1, 1, 0}));
  EXPECT_EQ(values(out.at(i_f->name)),
            (std::vector<double>{300, -129, 127, -1, 16777216, -8999999488.0}));  // ties to even
  EXPECT_EQ(values(out.at(div->name)), (std::vector<double>{3, -3, -3, 3, 2147483647, -715827882}));
  EXPECT_EQ(values(out.at(mod->name)), (std::vector<double>{1, 1, -1, -1, 0, 2}));
  EXPECT_EQ(values(out.at(fmod->name)), (std::vector<double>{1, -1, 1, -1, 0, -1}));
  EXPECT_EQ(values(out.at(add->name)),
            (std::vector<double>{9, -5, 5, -9, -2147483648.0, -2147483644}));
  EXPECT_EQ(values(out.at(usub->name)), (std::vector<double>{197, 254, 253, 0}));
  EXPECT_EQ(values(out.at(umul->name)), (std::vector<double>{88, 15, 254, 0}));
}

TEST(GpuTyped, ArgMaxArgMinAndIntegerMaxPool) {
  // ArgMax / ArgMin ties (first index, or the last with select_last_index=1) over rows of 37,
  // an i32 ArgMin with keepdims=0, and a u8 MaxPool with padding (the pad is the type's minimum;
  // scheduled by gpu_bind in u8, not through gpu_tile's fp32 tiles).
  GpuGraph b;
  Value* x = b.input("x", {3, 37});
  Value* xi = b.input("xi", {3, 37}, DType::i32);
  Value* img = b.input("img", {1, 1, 3, 3}, DType::u8);
  Value* first = b.node("ArgMax", {x}, attrs({{"axis", int64_t{1}}}));
  Value* last =
      b.node("ArgMax", {x}, attrs({{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}}));
  Value* amin = b.node("ArgMin", {xi}, attrs({{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}}));
  Value* mp = b.node("MaxPool", {img},
                     attrs({{"kernel_shape", std::vector<int64_t>{2, 2}},
                            {"pads", std::vector<int64_t>{1, 1, 0, 0}}}));
  auto g = b.finish({first, last, amin, mp});
  std::vector<double> xv(3 * 37), iv(3 * 37);
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 37; ++k) {
      xv[r * 37 + k] = (k * 7 + r) % 11 * 0.25;  // max 2.5 at several k
      iv[r * 37 + k] = (k * 5 + r) % 13 - 6;     // min -6 at several k
    }
  for (int k = 0; k < 37; ++k) xv[2 * 37 + k] = -1.5;  // row 2 all equal: first 0, last 36
  auto out = run_exact(*g, {{"x", vec(DType::f32, xv, {3, 37})},
                            {"xi", vec(DType::i32, iv, {3, 37})},
                            {"img", vec(DType::u8, {0, 1, 2, 3, 4, 255, 6, 7, 8}, {1, 1, 3, 3})}});
  // Row 0: (7k) % 11 == 10 at k = 3, 14, 25, 36; row 1: (7k + 1) % 11 == 10 at k = 6, 17, 28.
  EXPECT_EQ(values(out.at(first->name)), (std::vector<double>{3, 6, 0}));
  EXPECT_EQ(values(out.at(last->name)), (std::vector<double>{36, 28, 36}));
  EXPECT_EQ(out.at(first->name).dtype(), DType::i64);
  // (5k + r) % 13 == 0: row 0 k = 0, 13, 26; row 1 k = 5, 18, 31; row 2 k = 10, 23, 36.
  EXPECT_EQ(values(out.at(amin->name)), (std::vector<double>{0, 5, 10}));
  EXPECT_EQ(values(out.at(mp->name)), (std::vector<double>{0, 1, 2, 3, 4, 255, 6, 7, 255}));
  EXPECT_EQ(out.at(mp->name).dtype(), DType::u8);
}

TEST(GpuTyped, Float64ComputesInDoubleWithItsOwnExpAndLog) {
  // Values beyond fp32's range and digits beyond its precision survive Add / Mul / MatMul (the
  // generic schedule: gpu_gemm takes fp32 only); Exp and Log of float64 are codegen.cpp's fp64
  // routines (PTX has no fp64 ex2 / lg2), within 4 ulps of the host libm over normal,
  // subnormal and special arguments; Tanh / Erf / Sin / Cos / Atan within 2e-7.
  GpuGraph b;
  Value* x = b.input("x", {2, 3}, DType::f64);
  Value* y = b.input("y", {3, 2}, DType::f64);
  Value* e = b.input("e", {12}, DType::f64);
  Value* l = b.input("l", {12}, DType::f64);
  Value* add = b.node("Add", {x, x});
  Value* mm = b.node("MatMul", {x, y});
  Value* ex = b.node("Exp", {e});
  Value* lg = b.node("Log", {l});
  Value* t = b.input("t", {6}, DType::f64);
  const std::vector<std::string> fns = {"Tanh", "Erf", "Sin", "Cos", "Atan"};
  std::vector<Value*> outs = {add, mm, ex, lg};
  for (const auto& f : fns) outs.push_back(b.node(f, {t}));
  auto g = b.finish(outs);
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> ev = {0, 1, -1, 1e-10, 700, -700, -740, 709.7, 710, -800, -inf, 3.25};
  const std::vector<double> tv = {-3, -0.3, 0, 0.2, 1.5, 4};
  const std::vector<double> lv = {1, 2,  0.5, 1e-300,    4.9e-324, 1e300,
                                  0, -1, inf, 1 + 1e-12, 7,        0.999};
  gpu_backend::GpuProgram prog = gpu_backend::compile_gpu(*g);
  ptxas_accepts(gpu_backend::gpu_ptx(prog));
  gpu_backend::GpuExecutable exe(std::move(prog), gpu_backend::GpuDevice::emulator);
  auto got = exe.run({{"x", vec(DType::f64, {1e200, -3e250, 1.0, 2.0, 0.5, 1 + 1e-12}, {2, 3})},
                      {"y", vec(DType::f64, {1, 2, 3, 4, 5, 6}, {3, 2})},
                      {"e", vec(DType::f64, ev)},
                      {"l", vec(DType::f64, lv)},
                      {"t", vec(DType::f64, tv)}});
  const Tensor& s = got.outputs.at(add->name);
  EXPECT_EQ(s.dtype(), DType::f64);
  EXPECT_EQ(s.get_as_double(0), 2e200);
  EXPECT_EQ(s.get_as_double(5), 2 + 2e-12);
  // Row 1 of x times y: 2 * 1 + 0.5 * 3 + (1 + 1e-12) * 5.
  EXPECT_NEAR(got.outputs.at(mm->name).get_as_double(2), 3.5 + 5 + 5e-12, 1e-14);
  auto close = [inf](double got_v, double want, const std::string& what) {
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got_v)) << what;
    } else if (std::isinf(want) || want == 0) {
      EXPECT_EQ(got_v, want) << what;
    } else {
      const double ulp = std::nextafter(std::fabs(want), inf) - std::fabs(want);
      EXPECT_LE(std::fabs(got_v - want), 4 * ulp) << what << " got " << got_v << " want " << want;
    }
  };
  for (size_t i = 0; i < ev.size(); ++i)
    close(got.outputs.at(ex->name).get_as_double(static_cast<int64_t>(i)), std::exp(ev[i]),
          "exp(" + std::to_string(ev[i]) + ")");
  for (size_t i = 0; i < lv.size(); ++i)
    close(got.outputs.at(lg->name).get_as_double(static_cast<int64_t>(i)), std::log(lv[i]),
          "log(" + std::to_string(lv[i]) + ")");
  // tanh / erf / sin / cos / atan of float64: the fp32 routines' polynomials in double,
  // absolute error below 2e-7.
  double (*ref_fns[])(double) = {std::tanh, std::erf, std::sin, std::cos, std::atan};
  for (size_t f = 0; f < fns.size(); ++f) {
    const Tensor& r = got.outputs.at(outs[4 + f]->name);
    EXPECT_EQ(r.dtype(), DType::f64) << fns[f];
    for (size_t i = 0; i < tv.size(); ++i)
      EXPECT_NEAR(r.get_as_double(static_cast<int64_t>(i)), ref_fns[f](tv[i]), 2e-7)
          << fns[f] << "(" << tv[i] << ")";
  }
}

/// Deterministic integer data in [lo, hi] (a linear congruential sequence).
Tensor ints(DType dt, const Shape& shape, int lo, int hi, uint32_t seed) {
  Tensor t(dt, shape);
  uint32_t v = seed;
  for (int64_t i = 0; i < t.numel(); ++i) {
    v = v * 1664525u + 1013904223u;
    t.set_from_double(i, lo + static_cast<int>((v >> 8) % static_cast<uint32_t>(hi - lo + 1)));
  }
  return t;
}

TEST(GpuTyped, Int8OpsAreGeneratedKernelsBitExactWithTheReference) {
  // The int8 ops as generated kernels (lower::int8_compute; the CPU runs them on host kernels):
  // QuantizeLinear per tensor to i8 (ties to even: 2.5 -> 2, 3.5 -> 4, -2.5 -> -2; saturation;
  // NaN -> zero point) and per axis to u8; DequantizeLinear of i32 per axis; MatMulInteger u8 x
  // i8 with zero points; ConvInteger with padding and x_zero_point (a padded tap contributes 0);
  // QLinearMatMul with a per-column b_scale and b_zero_point; QLinearConv with a per-channel
  // w_scale and an int32 bias over 32 x 3 x 3 taps, whose accumulators (up to 255 * 127 * 288
  // ~ 9.3e6, plus the bias 2e7 on channel 0) pass 2^24: the sum is exact in int32 and rounds to
  // fp32 once, as ONNX Runtime's (op_util.h requantize_fp32); the scales (4e-6 and 8e-6) keep
  // the results inside i8's range, so they are not all saturated.
  GpuGraph b;
  Value* xf = b.input("xf", {8});
  Value* xq = b.input("xq", {2, 3, 2});
  Value* xi = b.input("xi", {2, 3}, DType::i32);
  Value* a = b.input("a", {3, 5}, DType::u8);
  Value* bm = b.input("bm", {5, 4}, DType::i8);
  Value* img = b.input("img", {1, 2, 4, 4}, DType::u8);
  Value* big = b.input("big", {1, 32, 5, 5}, DType::u8);
  auto scalar_t = [](DType dt, double v) {
    Tensor t(dt, {});
    t.set_from_double(0, v);
    return t;
  };
  Value* q0 = b.node("QuantizeLinear", {xf, b.constant("s0", scalar_t(DType::f32, 0.5)),
                                        b.constant("z0", scalar_t(DType::i8, 1))});
  Value* q1 = b.node("QuantizeLinear",
                     {xq, b.constant("s1", vec(DType::f32, {0.25, 1.0, 4.0})),
                      b.constant("z1", vec(DType::u8, {0, 128, 255}))},
                     attrs({{"axis", int64_t{1}}}));
  // An i32 x: converted to fp32 before the division (x / scale is fp32 arithmetic).
  Value* qi = b.node("QuantizeLinear", {xi, b.constant("s3", scalar_t(DType::f32, 2.0)),
                                        b.constant("z3", scalar_t(DType::u8, 10))});
  Value* dq = b.node("DequantizeLinear",
                     {xi, b.constant("s2", vec(DType::f32, {0.5, 0.1, 3.0})),
                      b.constant("z2", vec(DType::i32, {0, -7, 100000}))},
                     attrs({{"axis", int64_t{1}}}));
  Value* mmi = b.node("MatMulInteger", {a, bm, b.constant("az", scalar_t(DType::u8, 250)),
                                        b.constant("bz", scalar_t(DType::i8, -2))});
  Value* ci = b.node(
      "ConvInteger",
      {img, b.constant("w", ints(DType::u8, {3, 2, 3, 3}, 0, 255, 7)),
       b.constant("xz", scalar_t(DType::u8, 100)), b.constant("wz", scalar_t(DType::u8, 128))},
      attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* qmm = b.node(
      "QLinearMatMul",
      {a, b.constant("as", scalar_t(DType::f32, 0.02)), b.constant("azs", scalar_t(DType::u8, 128)),
       bm, b.constant("bs", vec(DType::f32, {0.5, 0.25, 0.125, 0.0625})),
       b.constant("bzs", vec(DType::i8, {0, 1, -1, 2})),
       b.constant("ys", scalar_t(DType::f32, 0.3)), b.constant("yz", scalar_t(DType::u8, 120))});
  Value* qc = b.node(
      "QLinearConv",
      {big, b.constant("cs", scalar_t(DType::f32, 0.003)), b.constant("cz", scalar_t(DType::u8, 0)),
       b.constant("cw", ints(DType::i8, {2, 32, 3, 3}, 100, 127, 11)),
       b.constant("cws", vec(DType::f32, {0.01, 0.02})), b.constant("cwz", vec(DType::i8, {0, 0})),
       b.constant("cys", scalar_t(DType::f32, 7.5)), b.constant("cyz", scalar_t(DType::i8, -3)),
       b.constant("cb", vec(DType::i32, {20000001, -5}))});
  auto g = b.finish({q0, q1, qi, dq, mmi, ci, qmm, qc});
  const double nan = std::nan("");
  std::vector<double> xqv;
  for (int i = 0; i < 12; ++i) xqv.push_back(i * 17.3 - 90);
  std::string ptx;
  auto out = run_exact(*g,
                       {{"xf", vec(DType::f32, {1.25, 1.75, -1.25, 100, -100, nan, 0, 0.74})},
                        {"xq", vec(DType::f32, xqv, {2, 3, 2})},
                        {"xi", vec(DType::i32, {3, 5, 100001, -4, 0, 2000000000}, {2, 3})},
                        {"a", ints(DType::u8, {3, 5}, 0, 255, 1)},
                        {"bm", ints(DType::i8, {5, 4}, -128, 127, 2)},
                        {"img", ints(DType::u8, {1, 2, 4, 4}, 0, 255, 3)},
                        {"big", ints(DType::u8, {1, 32, 5, 5}, 200, 255, 4)}},
                       &ptx);
  // x / 0.5 = 2.5, 3.5, -2.5, 200, -200, NaN, 0, 1.48 -> 2, 4, -2, sat, sat, 0, 0, 1; + 1.
  EXPECT_EQ(values(out.at(q0->name)), (std::vector<double>{3, 5, -1, 127, -128, 1, 1, 2}));
  EXPECT_EQ(out.at(q0->name).dtype(), DType::i8);
  EXPECT_EQ(out.at(q1->name).dtype(), DType::u8);
  // xi / 2 = 1.5, 2.5, 50000.5, -2, 0, 1e9 -> 2, 2, sat, -2, 0, sat; + 10, saturated to u8.
  EXPECT_EQ(values(out.at(qi->name)), (std::vector<double>{12, 12, 255, 8, 10, 255}));
  // (x - zp) * scale per column, in fp32: 3 * 0.5, 12 * 0.1f, 1 * 3, -4 * 0.5, 7 * 0.1f,
  // (fp32(2e9 - 1e5) = 1999900032) * 3.
  const std::vector<float> want_dq = {1.5f,  12.0f * 0.1f, 3.0f,
                                      -2.0f, 7.0f * 0.1f,  1999900032.0f * 3.0f};
  EXPECT_EQ(values(out.at(dq->name)), std::vector<double>(want_dq.begin(), want_dq.end()));
  EXPECT_EQ(out.at(mmi->name).dtype(), DType::i32);
  EXPECT_EQ(out.at(ci->name).shape(), (Shape{1, 3, 4, 4}));
  EXPECT_EQ(out.at(qc->name).dtype(), DType::i8);
  EXPECT_EQ(out.at(qc->name).shape(), (Shape{1, 2, 3, 3}));
  for (double v : values(out.at(qc->name))) {
    EXPECT_GT(v, -128);
    EXPECT_LT(v, 127);
  }
  // Integer arithmetic in the PTX: 32-bit multiply-adds of the accumulators.
  EXPECT_NE(ptx.find("mad.lo.s32"), std::string::npos);
}

// y = c ? (d ? 2x + 10 : 2x - 10) : tanh(tanh(x + 10)), z = c ? -x : x (as in
// tests/graph_passes/test_guard_branches.cpp).
const char* kIfGraph = R"(graph g opset 17 (%x: f32[4,64], %c: bool[], %d: bool[1]) -> (%y, %z) {
  %two: f32[] = const [2]
  %ten: f32[] = const [10]
  %y: f32[4,64], %z: f32[4,64] = If(%c, %x, %two, %ten, %d) {else_branch=graph e () captures (%x: f32[4,64], %two: f32[] known [2], %ten: f32[] known [10], %d: bool[1]) -> (%b, %x) {
      %b0: f32[4,64] = Add(%x, %ten)  # plus
      %b1: f32[4,64] = Tanh(%b0)  # tanh
      %b: f32[4,64] = Tanh(%b1)  # tanh2
    }, then_branch=graph t () captures (%x: f32[4,64], %two: f32[] known [2], %ten: f32[] known [10], %d: bool[1]) -> (%a, %n) {
      %a0: f32[4,64] = Mul(%x, %two)  # times
      %a: f32[4,64] = If(%d, %a0, %ten) {else_branch=graph e2 () captures (%a0: f32[4,64], %ten: f32[] known [10]) -> (%q) {
          %q: f32[4,64] = Sub(%a0, %ten)  # minus
        }, then_branch=graph t2 () captures (%a0: f32[4,64], %ten: f32[] known [10]) -> (%p) {
          %p: f32[4,64] = Add(%a0, %ten)  # plus2
        }}  # inner
      %n: f32[4,64] = Neg(%x)  # neg
    }}  # outer
}
)";

TEST(GpuTyped, IfBranchKernelsRunOnlyWhenTheirGuardIsTrue) {
  // The compiled form guards both branches' kernels by the (nested) conditions; the executable
  // reads each guard byte back from device memory and skips the launches of an untaken branch
  // (their time is 0), so every outcome of c and d gives the reference's values.
  auto g = parse_graph(kIfGraph, "g");
  ops::infer_graph(*g);
  for (bool c : {false, true})
    for (bool d : {false, true}) {
      std::vector<float> xv(4 * 64);
      for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i % 13) / 4.0f - 1.5f;
      Tensor ct(DType::boolean, {}), dt(DType::boolean, {1});
      ct.set_from_double(0, c);
      dt.set_from_double(0, d);
      const std::map<std::string, Tensor> in = {
          {"x", Tensor::from_floats({4, 64}, xv)}, {"c", ct}, {"d", dt}};
      const driver::RunOutput out = driver::run_model(*g, driver::Target::gpu_emu, nullptr, in);
      ASSERT_TRUE(out.gpu);
      const auto y = out.outputs.at("y").to_float_vector();
      const auto z = out.outputs.at("z").to_float_vector();
      for (size_t i = 0; i < xv.size(); ++i) {
        const float want_y =
            c ? (d ? 2 * xv[i] + 10 : 2 * xv[i] - 10) : std::tanh(std::tanh(xv[i] + 10));
        ASSERT_NEAR(y[i], want_y, 1e-5f) << "c=" << c << " d=" << d << " i=" << i;
        ASSERT_EQ(z[i], c ? -xv[i] : xv[i]) << "c=" << c << " d=" << d << " i=" << i;
      }
      int then_run = 0, else_run = 0, inner_then = 0, inner_else = 0;
      for (const auto& l : out.gpu->launches) {
        const bool ran = l.seconds > 0;
        if (l.node.rfind("outer/then/inner/then/", 0) == 0)
          inner_then += ran;
        else if (l.node.rfind("outer/then/inner/else/", 0) == 0)
          inner_else += ran;
        else if (l.node.rfind("outer/then/", 0) == 0)
          then_run += ran;
        else if (l.node.rfind("outer/else/", 0) == 0)
          else_run += ran;
      }
      EXPECT_EQ(then_run > 0, c) << "c=" << c;
      EXPECT_EQ(else_run > 0, !c) << "c=" << c;
      EXPECT_EQ(inner_then > 0, c && d) << "c=" << c << " d=" << d;
      EXPECT_EQ(inner_else > 0, c && !d) << "c=" << c << " d=" << d;
    }
}

}  // namespace
}  // namespace tessel::testing
