// Every op the NPU backend compiles has a case here (`EveryCompiledOpHasACase` iterates the
// compute table, lower::compute_ops(), plus the ops compiled as several kernels by
// lower::op_parts), and each case checks, with check_npu (npu_test_util.h):
//   1. the SystemC cycle model computes the same bits as the in-order functional interpreter
//      (both run isa::execute, so this checks synchronisation and scheduling, not semantics);
//   2. with 4 cores, the same bits as the single-core program;
//   3. the values against the fp32 reference interpreter (compiler/ops, independent of the
//      instruction semantics) within a bound derived for that op below.
//
// Derivations. The NPU stores every value in fp16 (unit roundoff u = 2^-11 ~ 4.9e-4; subnormals
// 2^-24 ~ 6e-8 apart below 2^-14) and every vector instruction computes in fp32 and rounds its
// result to the stage's dtype, at most u relative. The input's conversion to fp16 costs u|x| (+
// half a subnormal step, q/2, for |x| < 2^-14). Products of fp16 operands are exact in fp32; the
// cube and the vrsum/vrmax instructions accumulate in fp32 (K terms: at most K 2^-24 sum|terms|,
// Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5). Each bound adds up the
// roundings on the op's instruction sequence (passes/loop/tensorize_vector.cpp) with the worst-case
// first-order propagation through the op, for the case's input range; `q` is added as a floor
// where the output can be tiny. Every bound is below 1% of the output's largest magnitude, so an
// error of 1% anywhere fails (NpuOpCoverage shows each bound relative to that magnitude).
#include <fmt/format.h>

#include <functional>

#include "compiler/lower/op_compute.h"
#include "tests/compiler/npu_test_util.h"

namespace tessel::testing {
namespace {

constexpr double u = 1.0 / 2048;        // fp16 unit roundoff, 2^-11
constexpr double q = 1.0 / 16777216.0;  // fp16 subnormal spacing, 2^-24
constexpr double u32 = q;               // fp32 unit roundoff, 2^-24

struct OpCase {
  OpCase(std::unique_ptr<Graph> g, std::map<std::string, Tensor> in, Bound b)
      : graph(std::move(g)), inputs(std::move(in)), bound(b) {}
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> inputs;
  Bound bound;
  std::string hw = "npu_4core";
  npu_backend::NpuCompileOptions options;
  /// The bound at max|y| may be at most this fraction of max|y| (the test that the bound says
  /// something): 1%, except where the derived worst case is wider, stated at the case.
  double loose_fraction = 0.01;
};
using CaseFn = std::function<OpCase()>;

/// Shape of the elementwise cases: 3 x 40 x 37 (the last axis is not a multiple of the 16-lane
/// fractal or of the tile width, so tails are exercised).
const Shape kShape = {3, 40, 37};

OpCase unary(const std::string& op, float lo, float hi, Bound bound, Attributes a = {}) {
  GraphBuilder b;
  Value* x = b.input("x", kShape);
  Value* y = b.node(op, {x}, std::move(a));
  return {b.finish({y}), {{"x", random_tensor(kShape, 101, lo, hi)}}, bound};
}

/// x [3,40,37] op y [40,1] (broadcast along the last axis), both in [lo, hi).
OpCase binary(const std::string& op, float lo, float hi, Bound bound, float ylo = 0,
              float yhi = 0) {
  if (ylo == yhi) ylo = lo, yhi = hi;
  GraphBuilder b;
  Value* x = b.input("x", kShape);
  Value* y = b.input("y", {40, 1});
  Value* z = b.node(op, {x, y});
  return {b.finish({z}),
          {{"x", random_tensor(kShape, 102, lo, hi)}, {"y", random_tensor({40, 1}, 103, ylo, yhi)}},
          bound};
}

/// A graph y = op(x) over kShape.
std::unique_ptr<Graph> unary_graph(const std::string& op, Attributes a = {}) {
  GraphBuilder b;
  Value* x = b.input("x", kShape);
  Value* y = b.node(op, {x}, std::move(a));
  return b.finish({y});
}

/// Floats on the grid of sixteenths in [lo, hi] (exact in fp16: their rounding cannot move a
/// value across an integer or a tie).
Tensor sixteenth_grid(const Shape& shape, uint32_t seed, int64_t lo, int64_t hi) {
  const Tensor k = random_int_tensor(shape, DType::i64, seed, 16 * lo, 16 * hi);
  Tensor t(DType::f32, shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = static_cast<float>(k.data<int64_t>()[i]) / 16.0f;
  return t;
}

/// Three inputs x [3,40,37], y [37], z [40,1] in [-1, 1).
OpCase variadic(const std::string& op, Bound bound) {
  GraphBuilder b;
  Value* x = b.input("x", kShape);
  Value* y = b.input("y", {37});
  Value* z = b.input("z", {40, 1});
  Value* r = b.node(op, {x, y, z});
  return {b.finish({r}),
          {{"x", random_tensor(kShape, 104)},
           {"y", random_tensor({37}, 105)},
           {"z", random_tensor({40, 1}, 106)}},
          bound};
}

/// Largest |output| of `graph` on `inputs` with every input and constant replaced by its
/// absolute value: for a contraction y = sum x w (+ bias) that is max over outputs of
/// sum |x| |w| (+ |bias|), the quantity the rounding of the operands scales with.
double max_abs_terms(const std::function<std::unique_ptr<Graph>(bool)>& build,
                     const std::map<std::string, Tensor>& inputs) {
  auto g = build(true);
  std::map<std::string, Tensor> abs_in;
  for (const auto& [name, t] : inputs) {
    Tensor a = t;
    for (int64_t i = 0; i < a.numel(); ++i) a.set_from_double(i, std::abs(t.get_as_double(i)));
    abs_in[name] = std::move(a);
  }
  double m = 0;
  for (const auto& [name, t] : ops::run_reference(*g, abs_in)) m = std::max(m, max_abs(t));
  return m;
}

Tensor abs_of(const Tensor& t, bool abs) {
  if (!abs) return t;
  Tensor a = t;
  for (int64_t i = 0; i < a.numel(); ++i) a.set_from_double(i, std::abs(t.get_as_double(i)));
  return a;
}

/// A contraction case: `build(abs)` makes the graph (with |constants| when abs); the bound is
/// (2u + K 2^-24) max sum|x||w| for the operands' fp16 rounding and the fp32 accumulation, plus
/// u max|y| for the fix to fp16 and, with a bias added on the vector unit, u (max|y| + max|b|).
OpCase contraction(const std::function<std::unique_ptr<Graph>(bool)>& build,
                   std::map<std::string, Tensor> inputs, int64_t k, double max_bias) {
  const double terms = max_abs_terms(build, inputs);
  OpCase c(build(false), std::move(inputs), {});
  const double y_max = terms;  // |y| <= sum |x||w| + |b|
  c.bound = {(2 * u + k * u32) * terms + u * (y_max + 2 * max_bias), u};
  return c;
}

OpCase conv_case() {
  // 3x3, stride 2, pad 1, 2 groups, with bias: K = 12 / 2 * 9 = 54.
  const Tensor w = random_tensor({16, 6, 3, 3}, 111, -0.3f, 0.3f);
  const Tensor bias = random_tensor({16}, 112);
  auto build = [=](bool abs) {
    GraphBuilder b;
    Value* x = b.input("x", {1, 12, 15, 21});
    Value* y =
        b.node("Conv", {x, b.constant("w", abs_of(w, abs)), b.constant("b", abs_of(bias, abs))},
               attrs({{"group", int64_t{2}},
                      {"kernel_shape", std::vector<int64_t>{3, 3}},
                      {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                      {"strides", std::vector<int64_t>{2, 2}}}));
    return b.finish({y});
  };
  return contraction(build, {{"x", random_tensor({1, 12, 15, 21}, 113)}}, 54, 1.0);
}

OpCase conv_transpose_case() {
  // kernel == stride (2x2): every output pixel is one 24-term dot product.
  const Tensor w = random_tensor({24, 16, 2, 2}, 114, -0.3f, 0.3f);
  const Tensor bias = random_tensor({16}, 115);
  auto build = [=](bool abs) {
    GraphBuilder b;
    Value* x = b.input("x", {1, 24, 5, 7});
    Value* y = b.node("ConvTranspose",
                      {x, b.constant("w", abs_of(w, abs)), b.constant("b", abs_of(bias, abs))},
                      attrs({{"kernel_shape", std::vector<int64_t>{2, 2}},
                             {"strides", std::vector<int64_t>{2, 2}}}));
    return b.finish({y});
  };
  return contraction(build, {{"x", random_tensor({1, 24, 5, 7}, 116)}}, 24, 1.0);
}

OpCase matmul_case() {
  // [2, 19, 70] x [70, 37]: K = 70 in one chunk with a partial fractal.
  const Tensor w = random_tensor({70, 37}, 117, -0.2f, 0.2f);
  auto build = [=](bool abs) {
    GraphBuilder b;
    Value* x = b.input("x", {2, 19, 70});
    Value* y = b.node("MatMul", {x, b.constant("w", abs_of(w, abs))});
    return b.finish({y});
  };
  return contraction(build, {{"x", random_tensor({2, 19, 70}, 118)}}, 70, 0.0);
}

OpCase gemm_case() {
  // transB, alpha 0.5, beta 2 with a bias row: y = 0.5 x w^T + 2 c.
  const Tensor w = random_tensor({33, 90}, 119, -0.2f, 0.2f);
  const Tensor c = random_tensor({33}, 120);
  auto build = [=](bool abs) {
    GraphBuilder b;
    Value* x = b.input("x", {9, 90});
    Value* y = b.node("Gemm", {x, b.constant("w", abs_of(w, abs)), b.constant("c", abs_of(c, abs))},
                      attrs({{"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}));
    return b.finish({y});
  };
  return contraction(build, {{"x", random_tensor({9, 90}, 121)}}, 90, 2.0);
}

OpCase batchnorm_case() {
  // y = x a[c] + b[c] with a = scale / sqrt(var + eps), b = bias - mean a folded at compile time
  // and stored in fp16 (u each). x (u), x a rounded (u), + b rounded (u): |dy| <= 3u |x a| + u |b|
  // + u |y|, with |x| <= 1: atol 3u max|a| + u max|b|, rtol u.
  const Tensor scale = random_tensor({40}, 122, 0.5f, 1.5f), bias = random_tensor({40}, 123);
  const Tensor mean = random_tensor({40}, 124), var = random_tensor({40}, 125, 0.5f, 2.f);
  double amax = 0, bmax = 0;
  for (int64_t c = 0; c < 40; ++c) {
    const double a = scale.get_as_double(c) / std::sqrt(var.get_as_double(c) + 1e-5);
    amax = std::max(amax, std::abs(a));
    bmax = std::max(bmax, std::abs(bias.get_as_double(c) - mean.get_as_double(c) * a));
  }
  GraphBuilder b;
  Value* x = b.input("x", {2, 40, 5, 9});
  Value* y = b.node("BatchNormalization", {x, b.constant("s", scale), b.constant("b", bias),
                                           b.constant("m", mean), b.constant("v", var)});
  return {b.finish({y}), {{"x", random_tensor({2, 40, 5, 9}, 126)}}, {3 * u * amax + u * bmax, u}};
}

OpCase pool_case(const std::string& op, Bound bound) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 8, 13, 17});
  Value* y = b.node(op, {x},
                    attrs({{"kernel_shape", std::vector<int64_t>{3, 3}},
                           {"strides", std::vector<int64_t>{2, 2}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  return {b.finish({y}), {{"x", random_tensor({2, 8, 13, 17}, 127)}}, bound};
}

OpCase global_pool_case(const std::string& op, Bound bound) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 24, 7, 11});
  Value* y = b.node(op, {x});
  return {b.finish({y}), {{"x", random_tensor({2, 24, 7, 11}, 128)}}, bound};
}

/// Reduction over axes {axis} of [3, 40, 37] (keepdims 1), or for ReduceSum over axes {0, 2} (an
/// input, opset 13). Over the innermost axis (2, K = 37) the sum is one vrsum per row, which
/// accumulates in fp32 (a computed term, e.g. |x| or x^2, is first written to an fp16 temporary);
/// over axis 1 each step is a vadd into the fp16 result.
OpCase reduce_case(const std::string& op, Bound bound, float lo = -1, float hi = 1,
                   int64_t axis = 1) {
  GraphBuilder b;
  Value* x = b.input("x", kShape);
  Value* y;
  if (op == "ReduceSum") {
    y = b.node(op, {x, b.constant("axes", Tensor::from_int64s({2}, {0, 2}))});
  } else {
    y = b.node(op, {x}, attrs({{"axes", std::vector<int64_t>{axis}}}));
  }
  return {b.finish({y}), {{"x", random_tensor(kShape, 129, lo, hi)}}, bound};
}

/// InstanceNormalization of x [2, 6, 5, 9] in [-1, 1) (K = 45 pixels per instance) with scale
/// and bias [6] in [-1, 1). The first-order bound of the instruction sequence (each instruction
/// rounds u |result|, the fp32 sums add K 2^-24 relative), per instance with A = max|x|, mean m,
/// c = x - m (C = max|c|, mean|c| = c1, var = mean c^2), r = 1 / sqrt(var + eps):
///   m = sum fl(x/K):            E_m = (2u + K 2^-24) A + u |m|      (input, vmuls, stage)
///   c = x - m (vsub):           E_c = u A + E_m + u C
///   var = sum fl(fl(c^2)/K):    rel_v = 2 E_c c1 / var + 3u + K 2^-24
///   r (vadds eps, vsqrt, vrec): rel_r = rel_v / 2 + u / 2 + 2u
///   y = fl(fl(c r) s) + b:      |s| (E_c r + C r (rel_r + u)) + 2u C r |s| + u |b|, + u |y|,
/// with s and b stored in fp16 (the 2u C r |s| and u |b| terms). The case's atol is the maximum
/// over the instances; rtol u.
OpCase instance_norm_case() {
  const Shape shape = {2, 6, 5, 9};
  const Tensor x = random_tensor(shape, 140), s = random_tensor({6}, 141),
               bias = random_tensor({6}, 142);
  const int64_t K = 45;
  double atol = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 6; ++c) {
      std::vector<double> v;
      for (int64_t k = 0; k < K; ++k) v.push_back(x.get_as_double((n * 6 + c) * K + k));
      double a = 0, m = 0, cmax = 0, c1 = 0, var = 0;
      for (double e : v) a = std::max(a, std::abs(e)), m += e / K;
      for (double e : v) {
        cmax = std::max(cmax, std::abs(e - m));
        c1 += std::abs(e - m) / K;
        var += (e - m) * (e - m) / K;
      }
      const double r = 1 / std::sqrt(var + 1e-5);
      const double e_m = (2 * u + K * u32) * a + u * std::abs(m);
      const double e_c = u * a + e_m + u * cmax;
      const double rel_v = 2 * e_c * c1 / var + 3 * u + K * u32;
      const double rel_r = rel_v / 2 + u / 2 + 2 * u;
      const double sc = std::abs(s.get_as_double(c)), bc = std::abs(bias.get_as_double(c));
      atol =
          std::max(atol, sc * (e_c * r + cmax * r * (rel_r + u)) + 2 * u * cmax * r * sc + u * bc);
    }
  GraphBuilder b;
  Value* xv = b.input("x", shape);
  Value* y = b.node("InstanceNormalization", {xv, b.constant("s", s), b.constant("b", bias)});
  return {b.finish({y}), {{"x", x}}, {atol, u}};
}

/// A rearrangement of x [2, 8, 6, 4] (a copy: only the input's rounding, u |y| + q/2).
OpCase rearrange_case(const std::string& op, const Shape& shape, Attributes a,
                      const std::vector<int64_t>& repeats = {}) {
  GraphBuilder b;
  Value* x = b.input("x", shape);
  std::vector<Value*> ins = {x};
  if (!repeats.empty())
    ins.push_back(b.constant("repeats",
                             Tensor::from_int64s({static_cast<int64_t>(repeats.size())}, repeats)));
  Value* y = b.node(op, ins, std::move(a));
  return {b.finish({y}), {{"x", random_tensor(shape, 143)}}, {q, u}};
}

OpCase softmax_case(const std::string& op, Bound bound) {
  GraphBuilder b;
  Value* x = b.input("x", {6, 45});
  Value* y = b.node(op, {x}, attrs({{"axis", int64_t{1}}}));
  return {b.finish({y}), {{"x", random_tensor({6, 45}, 130)}}, bound};
}

const std::map<std::string, CaseFn>& cases() {
  static const std::map<std::string, CaseFn> m = {
      // Exact on the rounded input (max, min, sign and copies produce an fp16 value):
      // |dy| <= u |x| + q/2 = u |y| + q/2.
      {"Relu",
       [] {
         return unary("Relu", -1, 1, {q, u});
       }},
      {"Abs",
       [] {
         return unary("Abs", -1, 1, {q, u});
       }},
      {"Neg",
       [] {
         return unary("Neg", -1, 1, {q, u});
       }},
      {"Identity",
       [] {
         return unary("Identity", -1, 1, {q, u});
       }},
      {"Clip",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape);
         Value* y = b.node("Clip", {x, b.constant("lo", Tensor::scalar_f32(-0.5f)),
                                    b.constant("hi", Tensor::scalar_f32(0.25f))});
         return OpCase{b.finish({y}), {{"x", random_tensor(kShape, 107)}}, {q, u}};
       }},
      {"Max",
       [] {
         return variadic("Max", {q, u});
       }},
      {"Min",
       [] {
         return variadic("Min", {q, u});
       }},
      // x in [-2, 2): exp(x (1 + d)) = exp(x) (1 + |x| u) for the input, u for vexp: 3u.
      {"Exp",
       [] {
         return unary("Exp", -2, 2, {q, 3 * u});
       }},
      // x in [0.25, 4): log(x (1 + d)) = log x + d: u absolute, + u |y| for vln.
      {"Log",
       [] {
         return unary("Log", 0.25f, 4, {u + q, u});
       }},
      // sqrt(x (1 + d)) = sqrt(x) (1 + d/2), + u for vsqrt: 1.5u.
      {"Sqrt",
       [] {
         return unary("Sqrt", 0.25f, 4, {q, 1.5 * u});
       }},
      // 1 / (x (1 + d)) = (1 - d) / x, + u for vrec: 2u (x in [0.5, 2)).
      {"Reciprocal",
       [] {
         return unary("Reciprocal", 0.5f, 2, {q, 2 * u});
       }},
      // vmuls -1 (exact), vexp: |x| u + u <= 5u for |x| <= 4; vadds 1: the error of e shrinks
      // by e / (1 + e) < 1, + u: 6u; vrec: 7u relative.
      {"Sigmoid",
       [] {
         return unary("Sigmoid", -4, 4, {q, 7 * u});
       }},
      // 2 / (1 + exp(-2x)) - 1 in six instructions, |x| <= 2: the first-order running bound
      // (each instruction's rounding u |result|, propagated through the rest with the actual
      // derivatives) maximised over the range is 5.1u absolute.
      {"Tanh",
       [] {
         return unary("Tanh", -2, 2, {5.5 * u, 0});
       }},
      // x min(max(x / 6 + 0.5, 0), 1), |x| <= 4: x/6 (input u, vmuls u) + 0.5 (u of <= 1.17):
      // h is off by 2u |x| / 6 + 1.17u <= 2.5u; y = x h (vmul u): |x| 2.5u + |h| u |x| + u |y|
      // <= 10u + 4u + u |y|.
      {"HardSwish",
       [] {
         return unary("HardSwish", -4, 4, {14 * u, u});
       }},
      // alpha 0.1: max(x, 0) exact, min(x, 0) x alpha (vmuls u; input u), + (exact with a zero
      // operand): 2u relative.
      {"LeakyRelu",
       [] {
         return unary("LeakyRelu", -1, 1, {q, 2 * u}, attrs({{"alpha", 0.1f}}));
       }},
      // clamp(0.2 x + 0.5, 0, 1), |x| <= 4: 0.2 x (input u, vmuls u) 2u 0.8 + vadds u of <= 1.3:
      // 2.9u absolute.
      {"HardSigmoid",
       [] {
         return unary("HardSigmoid", -4, 4, {3 * u, 0});
       }},
      // Both operands rounded (u each, |a|, |b| <= 1) and the result: 2u + u |y|.
      {"Add",
       [] {
         return binary("Add", -1, 1, {2 * u, u});
       }},
      {"Sub",
       [] {
         return binary("Sub", -1, 1, {2 * u, u});
       }},
      // Relative errors add: 2u for the operands, u for vmul.
      {"Mul",
       [] {
         return binary("Mul", -1, 1, {q, 3 * u});
       }},
      // vdiv: 2u for the operands, u for the result (divisor in [0.5, 2)).
      {"Div",
       [] {
         return binary("Div", -1, 1, {q, 3 * u}, 0.5f, 2);
       }},
      // Two vadd: operands 3u (|x|, |y|, |z| <= 1), the partial sum (|.| <= 2) 2u, the result
      // u |y|.
      {"Sum",
       [] {
         return variadic("Sum", {5 * u, u});
       }},
      // Each exponent op_compute specialises, x in [0.5, 2): x^2 3u, x^3 5u, sqrt 1.5u, 1/x 2u,
      // 1/sqrt(x) (vsqrt, vrec) 2.5u: 5u relative covers all five outputs.
      {"Pow",
       [] {
         GraphBuilder b(/*unique_names=*/true);
         Value* x = b.input("x", kShape);
         std::vector<Value*> outs;
         int i = 0;
         for (float e : {2.f, 3.f, 0.5f, -1.f, -0.5f})
           outs.push_back(
               b.node("Pow", {x, b.constant(fmt::format("e{}", i++), Tensor::scalar_f32(e))}));
         return OpCase{b.finish(outs), {{"x", random_tensor(kShape, 108, 0.5f, 2)}}, {q, 5 * u}};
       }},
      {"BatchNormalization", batchnorm_case},
      {"Conv", conv_case},
      {"ConvTranspose", conv_transpose_case},
      {"MatMul", matmul_case},
      {"Gemm", gemm_case},
      // Sum of K = 40 inputs in fp32 after their rounding (u sum|x| <= 40u), times 1/40 (vmuls,
      // u), result rounded (u): u + 40 2^-24 absolute (|x| <= 1), 2u |y|.
      {"ReduceMean",
       [] {
         return reduce_case("ReduceMean", {u + 40 * u32, 2 * u});
       }},
      // Over axes {0, 2}: K = 3 x 37 = 111 terms, |x| <= 1: (u + 111 2^-24) 111 + u |y|.
      {"ReduceSum",
       [] {
         return reduce_case("ReduceSum", {(u + 111 * u32) * 111, u});
       }},
      {"ReduceMax",
       [] {
         return reduce_case("ReduceMax", {q, u});
       }},
      {"ReduceMin",
       [] {
         return reduce_case("ReduceMin", {q, u});
       }},
      // Mean over 7 x 11 = 77 pixels: as ReduceMean.
      {"GlobalAveragePool",
       [] {
         return global_pool_case("GlobalAveragePool", {u + 77 * u32, 2 * u});
       }},
      {"GlobalMaxPool",
       [] {
         return global_pool_case("GlobalMaxPool", {q, u});
       }},
      {"MaxPool",
       [] {
         return pool_case("MaxPool", {q, u});
       }},
      // 3x3 windows (count_include_pad 0: 4 to 9 terms) summed step by step in fp16 (each partial
      // sum, |.| <= 9, rounded: at most 8 roundings of values <= 9, / the count >= 4... the worst
      // window is a full one: (2 + 3 + ... + 9) u / 9 = 4.9u), the inputs u, the division u |y|.
      {"AveragePool",
       [] {
         return pool_case("AveragePool", {6 * u, 2 * u});
       }},
      // x in [-1, 1): x_i - max: operands u each, vsub u of <= 2: 4u absolute; vexp 5u relative;
      // the fp32 sum of 45 such terms, rounded: 6u; vdiv: 12u relative.
      {"Softmax",
       [] {
         return softmax_case("Softmax", {q, 12 * u});
       }},
      // d = x - max: 4u absolute; log(sum exp d): the sum 6u relative, so its log 6u absolute,
      // + u |log| (log 45 = 3.8): 9.8u; the two vsub round u |d| and u |y|: 4u + 9.8u + 2u + u|y|.
      {"LogSoftmax",
       [] {
         return softmax_case("LogSoftmax", {16 * u, u});
       }},
      // Copies: only the input's rounding.
      {"Transpose",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape);
         Value* y = b.node("Transpose", {x}, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}}));
         return OpCase{b.finish({y}), {{"x", random_tensor(kShape, 109)}}, {q, u}};
       }},
      {"Slice",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape);
         Value* y = b.node("Slice", {x, b.constant("st", Tensor::from_int64s({2}, {3, 1})),
                                     b.constant("en", Tensor::from_int64s({2}, {37, 40})),
                                     b.constant("ax", Tensor::from_int64s({2}, {1, 2})),
                                     b.constant("sp", Tensor::from_int64s({2}, {2, 3}))});
         return OpCase{b.finish({y}), {{"x", random_tensor(kShape, 110)}}, {q, u}};
       }},
      {"Concat",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {3, 5, 37});
         Value* z = b.input("z", {3, 11, 37});
         Value* y = b.node("Concat", {x, z}, attrs({{"axis", int64_t{1}}}));
         return OpCase{
             b.finish({y}),
             {{"x", random_tensor({3, 5, 37}, 131)}, {"z", random_tensor({3, 11, 37}, 132)}},
             {q, u}};
       }},
      {"Resize",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {1, 8, 6, 10});
         Value* y = b.node("Resize",
                           {x, b.constant("roi", Tensor(DType::f32, {0})),
                            b.constant("scales", Tensor::from_floats({4}, {1, 1, 2, 3}))},
                           attrs({{"mode", std::string("nearest")},
                                  {"coordinate_transformation_mode", std::string("asymmetric")},
                                  {"nearest_mode", std::string("floor")}}));
         return OpCase{b.finish({y}), {{"x", random_tensor({1, 8, 6, 10}, 133)}}, {q, u}};
       }},
      {"TransData",
       [] {
         // NCHW -> NC1HWC0 -> NCHW: two copy kernels between formats.
         GraphBuilder b(/*unique_names=*/true);
         Value* x = b.input("x", {2, 32, 5, 7});
         Value* c = b.node("TransData", {x}, attrs({{"dst_format", std::string("NC1HWC0")}}));
         c->format = StorageFormat::nc1hwc0;
         Value* y = b.node("TransData", {c}, attrs({{"dst_format", std::string("NCHW")}}));
         return OpCase{b.finish({y}), {{"x", random_tensor({2, 32, 5, 7}, 134)}}, {q, u}};
       }},
      // Over the last axis (120): mean of x/120 terms in fp32 (x in [-3, 3): |x| u each, so the
      // mean is off by <= 3u + u); c = x - mean: <= 3u + 4u + u |c| <= 10u absolute (|c| <= 6);
      // var = mean(c^2): relative 2 (10u / |c|) per term is unbounded near c = 0, but in sum it is
      // <= 2 sum|c| 10u / sum c^2 + 3u ~ 2 x 10u / 1.7 + 3u = 15u (rms(c) ~ 1.7 for uniform x);
      // rstd (vsqrt, vrec): 15u / 2 + 2u = 9.5u; y = c rstd s (+ b): |c rstd| <= 3.5, |s| <= 1:
      // 10u x rstd (0.6) + 3.5 (9.5u + 2u) + 1u (+ b: u) ~ 48u absolute.
      {"LayerNormalization",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {3, 7, 120});
         Value* y = b.node("LayerNormalization",
                           {x, b.constant("s", random_tensor({120}, 135)),
                            b.constant("b", random_tensor({120}, 136))},
                           attrs({{"axis", int64_t{-1}}}));
         return OpCase{b.finish({y}), {{"x", random_tensor({3, 7, 120}, 137, -3, 3)}}, {48 * u, u}};
       }},
      // erf by Abramowitz-Stegun 7.1.26 (|error| <= 1.5e-7) in 21 vector instructions
      // (tensorize_vector.cpp): the first-order running bound of that sequence (the input's
      // rounding, then every instruction's rounding u |result| propagated through the rest with
      // the actual partial derivatives), maximised over x in [-2, 2), is 17.9u, at x = 0 where
      // t = 1 and the Horner partial sums are largest (|.| <= 1.06); + 1.5e-7.
      {"Erf",
       [] {
         return unary("Erf", -2, 2, {18 * u + 1.5e-7, 0});
       }},
      // 0.5 x (1 + erf(x / sqrt 2)), |x| <= 4: the same running bound through vmuls 1/sqrt 2, the
      // erf sequence, 0.5 x (exact), + 1 and the product is 14.0u, + 2 x 1.5e-7 for A&S.
      {"Gelu",
       [] {
         return unary("Gelu", -4, 4, {14.5 * u, 0});
       }},
      // x sigmoid(x) (|x| <= 4): sigmoid 7u relative, x's rounding u, vmul u: 9u.
      {"Silu",
       [] {
         return unary("Silu", -4, 4, {q, 9 * u});
       }},
      // max(x, 0) + alpha (exp(min(x, 0)) - 1), alpha 0.5, x in [-2, 2). x > 0: the input's u
      // and the final vadd (the exp term is exactly 0): 2u |y|. x <= 0, n = min(x, 0): exp(n)
      // off by e^n (|n| u + u) <= u; vadds -1: + u |e^n - 1| (<= 0.87): 1.87u; vmuls alpha:
      // alpha 1.87u + u alpha 0.87 = 2.74u alpha; vadd: + u |y|.
      {"Elu",
       [] {
         return unary("Elu", -2, 2, {2.74 * u * 0.5, 2 * u}, attrs({{"alpha", 0.5f}}));
       }},
      // As Elu with n / alpha (alpha 2, vmuls 0.5: |n/2| u more, |n/2| <= 1): exp off by
      // e^t (2 |t| u + u) <= 1.22u (t = n/2, max at t = -1/2); vadds -1: + 0.64u; vmuls 2:
      // 2 (1.86u) + 2 (0.64) u = 4.99u; vadd: + u |y|; x > 0: 2u |y|.
      {"Celu",
       [] {
         return unary("Celu", -2, 2, {5 * u, 2 * u}, attrs({{"alpha", 2.0f}}));
       }},
      // gamma (max(x, 0) + alpha (exp(min(x, 0)) - 1)), the default alpha 1.673, gamma 1.051,
      // x in [-2, 2): the Elu sequence gives 2.74u alpha = 4.58u + u |sum| (<= 1.45) before
      // vmuls gamma: 1.051 (4.58u + 1.45u) = 6.34u, + u |y|; x > 0: gamma 2u |x| + u |y| = 3u |y|.
      {"Selu",
       [] {
         return unary("Selu", -2, 2, {6.34 * u, 3 * u});
       }},
      // max(x, 0) + min(x, 0) slope, slope [40, 1] in [0, 0.5): x < 0: both operands' rounding
      // and vmul 3u |y|, vadd with an exact 0: + u |y|; x > 0: 2u |y|.
      {"PRelu",
       [] {
         return binary("PRelu", -1, 1, {q, 4 * u}, 0, 0.5f);
       }},
      // x / (|x| + 1), x in [-4, 4): numerator u (input), denominator (u |x| + u (|x| + 1)) /
      // (|x| + 1) < 2u, vdiv u: 4u relative.
      {"Softsign",
       [] {
         return unary("Softsign", -4, 4, {q, 4 * u});
       }},
      // max(x, 0) + log(1 + exp(-|x|)), x in [-4, 4): e = exp(-|x|) off by e (|x| u + u);
      // vadds 1: + u (1 + e); vln: (e (|x| + 1) u + u (1 + e)) / (1 + e) <= u/2 + u, + u log 2:
      // 2.2u absolute; max(x, 0): u |x| <= u |y|; vadd: u |y|.
      {"Softplus",
       [] {
         return unary("Softplus", -4, 4, {2.2 * u, 2 * u});
       }},
      // (exp(x) - exp(-x)) / 2, x in [-2, 2): each exp off by e^(+-x) (|x| u + u), vsub + u |2y|,
      // vmuls 0.5 (+ u |y|): cosh(x) (|x| + 1) u + 2u |y|, and cosh(x) (|x| + 1) <= 1 + 2.84
      // |sinh x| on [-2, 2] (the ratio (cosh(x) (|x| + 1) - 1) / |sinh x| grows with |x|; 2.84 at
      // 2): u + 4.84u |y|.
      {"Sinh",
       [] {
         return unary("Sinh", -2, 2, {u, 4.84 * u});
       }},
      // (exp(x) + exp(-x)) / 2, x in [-2, 2): cosh(x) (|x| + 1) u + u (2 cosh) / 2 + u |y| =
      // (|x| + 3) u |y| <= 5u |y|.
      {"Cosh",
       [] {
         return unary("Cosh", -2, 2, {q, 5 * u});
       }},
      // log(x + sqrt(x^2 + 1)), x in [-0.5, 3): x^2 3u x^2 (input, vmul), vadds 1: + u (x^2 + 1);
      // vsqrt: r = sqrt(x^2 + 1) off by (4 x^2 + 1) / (2 (x^2 + 1)) u + u < 3u relative; vadd
      // z = x + r: u |x| + 3u r + u z; vln: that / z + u |y|. x >= 0: 5u; x < 0 (z = 1 / (r +
      // |x|)):
      // (u |x| + 3u r) (r + |x|) + u, growing with |x|: 7.2u at x = -0.5.
      {"Asinh",
       [] {
         return unary("Asinh", -0.5f, 3, {7.25 * u, u});
       }},
      // log(x + sqrt(x^2 - 1)), x in [1.25, 4): s = x^2 - 1 off by 3u x^2 + u s; vsqrt: r off by
      // (3u x^2 + u s) / (2 s) + u relative; z = x + r off by u x + that r + u z; vln: / z,
      // decreasing in x from 3.75u at 1.25 (3.16u at 2, 3.04u at 4), + u |y|.
      {"Acosh",
       [] {
         return unary("Acosh", 1.25f, 4, {3.75 * u, u});
       }},
      // log((1 + x) / (1 - x)) / 2, x in [-0.75, 0.75): 1 + x off by u |x| + u (1 + x), 1 - x
      // (vmuls -1, vadds 1) by u |x| + u (1 - x); vdiv: the two relative errors + u, largest at
      // |x| = 0.75: 1.43u + 4u + u = 6.43u; vln: absolute, + u |log|; vmuls 0.5: 3.22u +
      // 0.5u |log| + u |y| = 3.22u + 2u |y|.
      {"Atanh",
       [] {
         return unary("Atanh", -0.75f, 0.75f, {3.22 * u, 2 * u});
       }},
      // (x + y + z) / 3 as x/3 + y/3 + z/3 (vmuls 1/3, an fp32 scalar): each term off by 2u/3
      // (input, vmuls; |.| <= 1), the partial sum (|.| <= 2/3) by u 2/3, the result u |y|.
      {"Mean",
       [] {
         return variadic("Mean", {(2 + 2.0 / 3) * u, u});
       }},
      // Sum of |x| over the innermost axis (K = 37; vabs exact, into an fp16 temporary; one
      // vrsum per row in fp32): every term's rounding u |x|, the fp32 sum K 2^-24 sum |x|, the
      // result u |y|, with sum |x| = y: (2u + 37 2^-24) |y|.
      {"ReduceL1",
       [] {
         return reduce_case("ReduceL1", {q, 2 * u + 37 * u32}, -1, 1, 2);
       }},
      // Sum of x^2 (K = 37): each term 3u x^2 (input, vmul into the fp16 temporary), the fp32 sum
      // K 2^-24, the result u: (4u + 37 2^-24) |y| (every term is positive).
      {"ReduceSumSquare",
       [] {
         return reduce_case("ReduceSumSquare", {q, 4 * u + 37 * u32}, -1, 1, 2);
       }},
      // sqrt of the sum of squares, which is rounded to fp16 before vsqrt: (4u + 37 2^-24) / 2 +
      // u (vsqrt).
      {"ReduceL2",
       [] {
         return reduce_case("ReduceL2", {q, 3 * u + 19 * u32}, -1, 1, 2);
       }},
      // log of a sum of K = 37 positive terms (x in [0.25, 1)): the sum (2u + 37 2^-24) relative
      // (the inputs' u, vrsum's fp32 sum, the fp16 result), so its log that absolute, + u |y| for
      // vln.
      {"ReduceLogSum",
       [] {
         return reduce_case("ReduceLogSum", {2 * u + 37 * u32, u}, 0.25f, 1, 2);
       }},
      // m + log sum exp(x - m), m = max (K = 37, x in [-1, 1)): the inputs' rounding moves y by
      // at most u max|x| = u (dy/dx are softmax weights, summing to 1); d = x - m (vsub) off by
      // u |d| <= 2u, so exp(d) by 3u relative (+ vexp); the fp32 sum 37 2^-24, rounded: u; vln:
      // 4u + 37 2^-24 absolute + u |log S| (S <= 37: 3.7u); vadd m: u |y|.
      {"ReduceLogSumExp",
       [] {
         return reduce_case("ReduceLogSumExp", {8.7 * u + 37 * u32, u}, -1, 1, 2);
       }},
      // x (1 + alpha / size s)^-beta, s = sum of x^2 over 3 channels (alpha 0.5, beta 0.75,
      // x in [-1, 1) so s <= 3): the squares 3u x^2 each, two partial sums and the stage's
      // rounding 3u s: 6u s, vmuls alpha/3: + u: 7u (alpha/3) s; vadds 1: + u base; relative
      // to the base (1 <= base <= 1.5) at most (3.5u + 1.5u) / 1.5 = 3.33u; vln: absolute, + u
      // |log| (0.41): 3.74u; vmuls -beta: 0.75 3.74u + 0.3u = 3.1u; vexp: 4.1u relative; vmul x
      // (x's u): 6.1u relative.
      {"LRN",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {2, 8, 5, 9});
         Value* y = b.node(
             "LRN", {x},
             attrs({{"size", int64_t{3}}, {"alpha", 0.5f}, {"beta", 0.75f}, {"bias", 1.0f}}));
         return OpCase{b.finish({y}), {{"x", random_tensor({2, 8, 5, 9}, 144)}}, {q, 6.1 * u}};
       }},
      {"InstanceNormalization", instance_norm_case},
      // Copies: only the input's rounding.
      {"Expand",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {40, 1});
         Value* y =
             b.node("Expand", {x, b.constant("shape", Tensor::from_int64s({3}, {3, 1, 37}))});
         return OpCase{b.finish({y}), {{"x", random_tensor({40, 1}, 145)}}, {q, u}};
       }},
      {"DepthToSpace",
       [] {
         return rearrange_case("DepthToSpace", {2, 8, 6, 4},
                               attrs({{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}));
       }},
      {"SpaceToDepth",
       [] {
         return rearrange_case("SpaceToDepth", {2, 8, 6, 4}, attrs({{"blocksize", int64_t{2}}}));
       }},
      {"Tile",
       [] {
         return rearrange_case("Tile", {2, 8, 6, 4}, {}, {1, 3, 1, 2});
       }},
      // ---- more ops (issue #15). Inputs on the fp16 grid where an op is exact (its only
      // error would be the input's rounding, which can move a value across an integer).
      // Selects of the input (exact): Shrink adds/subtracts the bias (vadds, u |y|).
      {"Shrink",
       [] {
         return OpCase{unary_graph("Shrink", attrs({{"lambd", 0.5f}, {"bias", 0.25f}})),
                       {{"x", random_tensor(kShape, 160, -2, 2)}},
                       {q, 2 * u}};
       }},
      {"ThresholdedRelu",
       [] {
         // Inputs on the fp16 grid: a rounded input never crosses the threshold.
         return OpCase{unary_graph("ThresholdedRelu", attrs({{"alpha", 0.5f}})),
                       {{"x", sixteenth_grid(kShape, 161, -2, 2)}},
                       {q, u}};
       }},
      {"Sign",
       [] {
         return OpCase{unary_graph("Sign"), {{"x", sixteenth_grid(kShape, 162, -8, 8)}}, {q, 0}};
       }},
      // floor, ceil, round (ties to even: the grid holds every k/2) are exact on grid inputs.
      {"Floor",
       [] {
         return OpCase{unary_graph("Floor"), {{"x", sixteenth_grid(kShape, 163, -8, 8)}}, {q, 0}};
       }},
      {"Ceil",
       [] {
         return OpCase{unary_graph("Ceil"), {{"x", sixteenth_grid(kShape, 164, -8, 8)}}, {q, 0}};
       }},
      {"Round",
       [] {
         return OpCase{unary_graph("Round"), {{"x", sixteenth_grid(kShape, 165, -8, 8)}}, {q, 0}};
       }},
      // sin/cos, x in [-4, 4) (tensorize_vector.cpp emit_sin): the input's u |x| (<= 4u moved
      // through a derivative <= 1); r = x - (k - phase) pi: four roundings of values <= pi/2
      // (6.3u); the polynomial: r^2 and seven Horner steps on g <= r^2 / 6 <= 0.41 and g r^3
      // (3u), the last vadd (u): 14.3u absolute; the sign multiply is exact.
      {"Sin",
       [] {
         return OpCase{
             unary_graph("Sin"), {{"x", random_tensor(kShape, 166, -4, 4)}}, {14.3 * u, u}};
       }},
      {"Cos",
       [] {
         return OpCase{
             unary_graph("Cos"), {{"x", random_tensor(kShape, 167, -4, 4)}}, {14.3 * u, u}};
       }},
      // sin / cos, x in [-0.7, 0.7): sin off by 5u (k = 0: r = x exactly; input, polynomial,
      // result), cos by 14.3u; |tan'| terms: 5u / cos + |sin| 14.3u / cos^2 (cos >= 0.76,
      // |sin| <= 0.65) = 6.6u + 16.1u, vdiv u |y| (|y| <= 0.85): 23.5u.
      {"Tan",
       [] {
         // The derived worst case is 24.3u at max|y| = tan 0.7 = 0.842: 1.41% of it (measured
         // errors are about a tenth of the bound).
         OpCase c{
             unary_graph("Tan"), {{"x", random_tensor(kShape, 168, -0.7f, 0.7f)}}, {23.5 * u, u}};
         c.loose_fraction = 0.015;
         return c;
       }},
      // atan, x in [-4, 4): the input's u |x| / (1 + x^2) <= u / 2; z = min(|x|, 1 / |x|) (vrec:
      // u z, atan' <= 1), z^2 (2u), the Horner chain on values <= 1 whose errors reach p times
      // z^2 <= 1 damped (8u), z P (u), pi/2 - 2p and the sum (3u): 15.5u absolute.
      {"Atan",
       [] {
         return OpCase{
             unary_graph("Atan"), {{"x", random_tensor(kShape, 169, -4, 4)}}, {15.5 * u, u}};
       }},
      // asin x = atan(x rsqrt((1 - x)(1 + x))), x in [-0.8, 0.8): the argument w (|w| <= 1.34)
      // off by (input + 1 - x, 1 + x, product, vsqrt, vrec, vmul: 6u) relative, moved through
      // atan' = 1 / (1 + w^2) <= 1 times |w|: 8u; atan itself 15.5u: 23.5u.
      {"Asin",
       [] {
         // The derived worst case is 24.4u at max|y| = asin 0.8 = 0.927: 1.29% of it.
         OpCase c{
             unary_graph("Asin"), {{"x", random_tensor(kShape, 170, -0.8f, 0.8f)}}, {23.5 * u, u}};
         c.loose_fraction = 0.015;
         return c;
       }},
      // acos x = 2 atan(sqrt((1 - x) / (1 + x))), x in [-0.8, 0.8): w (<= 3) off by 3.5u relative
      // (input moved through 1 - x and 1 + x, vdiv, vsqrt), atan' w <= 1/2: 1.75u; atan 15.5u;
      // times 2 (exact): 34.5u, + u |y|.
      {"Acos",
       [] {
         return OpCase{
             unary_graph("Acos"), {{"x", random_tensor(kShape, 171, -0.8f, 0.8f)}}, {34.5 * u, u}};
       }},
      // Product of the 3 elements along axis 0 of x in [0.5, 2): 3 inputs' u and 2 vmul: 5u.
      {"ReduceProd",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape);
         Value* y = b.node("ReduceProd", {x}, attrs({{"axes", std::vector<int64_t>{0}}}));
         return OpCase{b.finish({y}), {{"x", random_tensor(kShape, 172, 0.5f, 2)}}, {q, 5 * u}};
       }},
      // Running sum over axis 2 (K = 37 terms, reverse, exclusive), x in [-1, 1): each term's
      // input rounding u |x| (the mask products are exact), the fp32 sum K 2^-24, the result u:
      // (u + 37 2^-24) 37 + u |y|.
      {"CumSum",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape);
         Value* y = b.node("CumSum", {x, b.constant("axis", Tensor::from_int64s({}, {2}))},
                           attrs({{"exclusive", int64_t{1}}, {"reverse", int64_t{1}}}));
         return OpCase{
             b.finish({y}), {{"x", random_tensor(kShape, 173)}}, {(u + 37 * u32) * 37, u}};
       }},
      // One-hot of the first maximum along axis 1: exact (grid values, ties included).
      {"Hardmax",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape);
         Value* y = b.node("Hardmax", {x}, attrs({{"axis", int64_t{1}}}));
         return OpCase{b.finish({y}), {{"x", sixteenth_grid(kShape, 174, -2, 2)}}, {q, 0}};
       }},
      // Batched product with a transposed operand: "bij,bkj->bik", K = 37.
      {"Einsum",
       [] {
         const Tensor w = random_tensor({3, 11, 37}, 175, -0.5f, 0.5f);
         auto build = [=](bool abs) {
           GraphBuilder b;
           Value* x = b.input("x", kShape);
           Value* y = b.node("Einsum", {x, b.constant("w", abs_of(w, abs))},
                             attrs({{"equation", std::string("bij,bkj->bik")}}));
           return b.finish({y});
         };
         return contraction(build, {{"x", random_tensor(kShape, 176)}}, 37, 0.0);
       }},
      {"EyeLike",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {7, 9});
         Value* y = b.node("EyeLike", {x}, attrs({{"k", int64_t{2}}}));
         return OpCase{b.finish({y}), {{"x", random_tensor({7, 9}, 177)}}, {q, 0}};
       }},
      // Float indices (truncated toward zero, negative ones counted from the end), depth 10
      // on axis 1, values [-2, 3]: exact.
      {"OneHot",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {4, 23});
         Value* y = b.node("OneHot",
                           {x, b.constant("depth", Tensor::scalar_f32(10.f)),
                            b.constant("values", Tensor::from_floats({2}, {-2.f, 3.f}))},
                           attrs({{"axis", int64_t{1}}}));
         return OpCase{b.finish({y}), {{"x", sixteenth_grid({4, 23}, 178, -12, 12)}}, {q, 0}};
       }},
      // Mod of floats (fmod=1, C fmod: the dividend's sign), x on the grid of 1/32 + k/16 (never
      // a multiple of the divisor), y = +-2^j: x / y, its truncation, the product and the
      // difference are exact.
      {"Mod",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape);
         Value* y = b.input("y", {40, 1});
         Value* z = b.node("Mod", {x, y}, attrs({{"fmod", int64_t{1}}}));
         Tensor xs = sixteenth_grid(kShape, 179, -8, 8);
         for (int64_t i = 0; i < xs.numel(); ++i) xs.data<float>()[i] += 1.f / 32;
         std::vector<float> ys(40);
         for (int i = 0; i < 40; ++i) ys[i] = (i % 2 ? -1.f : 1.f) * std::ldexp(1.f, i % 4 - 1);
         return OpCase{b.finish({z}), {{"x", xs}, {"y", Tensor::from_floats({40, 1}, ys)}}, {q, 0}};
       }},
      // Pad, reflect mode (op_parts: one kernel per box of the output), pads 2 and 1 on H, 3 and
      // a crop of 1 on W: copies, only the input's rounding.
      {"Pad",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {2, 5, 6, 9});
         Value* y = b.node(
             "Pad", {x, b.constant("pads", Tensor::from_int64s({8}, {0, 0, 2, 3, 0, 0, 1, -1}))},
             attrs({{"mode", std::string("reflect")}}));
         return OpCase{b.finish({y}), {{"x", random_tensor({2, 5, 6, 9}, 146)}}, {q, u}};
       }},
  };
  return m;
}

/// The ops the NPU backend compiles: the compute table, plus the ops compiled only as kernels
/// writing views of the output (lower::parts_ops(): Resize, ConvTranspose, DepthToSpace,
/// SpaceToDepth, Tile; Concat is in the table). The alias ops (Reshape, Flatten, ...
/// lower::is_alias_op) emit no code.
std::vector<std::string> npu_compiled_ops() {
  std::vector<std::string> ops = lower::compute_ops();
  for (const auto& op : lower::parts_ops()) ops.push_back(op);
  return ops;
}

TEST(NpuOpCoverage, EveryCompiledOpHasACase) {
  for (const auto& op : npu_compiled_ops())
    EXPECT_TRUE(cases().count(op)) << op << " is compiled for the NPU but has no case here";
  std::set<std::string> compiled;
  for (const auto& op : npu_compiled_ops()) compiled.insert(op);
  for (const auto& [op, fn] : cases())
    EXPECT_TRUE(compiled.count(op)) << op << " has a case but is not an NPU op (renamed?)";
}

class NpuOp : public ::testing::TestWithParam<std::string> {};

TEST_P(NpuOp, BitIdenticalOnBothModelsAndWithinItsDerivedBound) {
  const std::string& op = GetParam();
  OpCase c = cases().at(op)();
  const NpuCheck r = check_npu(*c.graph, c.inputs, c.hw, c.bound, c.options);
  for (const auto& [name, ref] : r.reference) {
    // The bound says something: an error of 1% (loose_fraction) of the largest output fails it.
    const double m = max_abs(ref), at_max = c.bound.atol + c.bound.rtol * m;
    EXPECT_LT(at_max, c.loose_fraction * m) << name << ": the bound is loose";
    const TensorDiff d = diff_tensors(r.outputs.at(name), ref, c.bound.atol, c.bound.rtol);
    std::cout << "  " << op << " " << name << ": max|y| " << m << ", bound at max|y| " << at_max / m
              << " of it; max error " << d.max_abs_error << ", worst error / bound "
              << d.worst_ratio << "\n";
  }
  // The op ran as compiled code (or, for Identity, as a view), not folded away.
  bool ran = false;
  for (const auto& k : r.module.kernels)
    ran |= k.op_type.find(op) != std::string::npos && (k.kind != "const");
  EXPECT_TRUE(ran) << op << " did not become a kernel";
}

// Pow with a run-time exponent tensor: exp(y log|x|) with the sign of an integral exponent for
// x < 0 and 1 for y = 0. x in +-[0.5, 2) (the sign from the index), y integral in [-3, 3] on
// x < 0 and any in [-3, 3) on x > 0: |y log|x|| <= 2.08; the input's u |x| times |y| <= 3u,
// log |x| (u |log|), the product (u |z|) and vexp (u): (3u + 2.08 (2u) + u) relative = 8.2u.
TEST(NpuMoreOps, PowWithARuntimeExponent) {
  GraphBuilder b;
  Value* x = b.input("x", kShape);
  Value* y = b.input("y", kShape);
  Value* z = b.node("Pow", {x, y});
  Tensor xs = random_tensor(kShape, 180, 0.5f, 2), ys = random_tensor(kShape, 181, -3, 3);
  for (int64_t i = 0; i < xs.numel(); ++i)
    if (i % 3 == 0) {
      xs.data<float>()[i] = -xs.data<float>()[i];
      ys.data<float>()[i] = std::round(ys.data<float>()[i]);
    }
  ys.data<float>()[1] = 0.f;
  const std::string name = z->name;
  auto g = b.finish({z});
  const NpuCheck r = check_npu(*g, {{"x", xs}, {"y", ys}}, "npu_4core", {q, 8.2 * u});
  const Tensor& got = r.outputs.at(name);
  EXPECT_EQ(got.get_as_double(1), 1.0);  // x^0
  // Negative bases: the sign of (-1)^y (odd exponents give negative results).
  const Tensor& want = r.reference.at(name);
  int negative = 0;
  for (int64_t i = 0; i < got.numel(); i += 3) {
    EXPECT_EQ(std::signbit(got.get_as_double(i)), std::signbit(want.get_as_double(i))) << i;
    negative += std::signbit(want.get_as_double(i));
  }
  EXPECT_GT(negative, 100);
}

std::vector<std::string> case_names() {
  std::vector<std::string> v;
  for (const auto& [k, f] : cases()) v.push_back(k);
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllOps, NpuOp, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace tessel::testing
