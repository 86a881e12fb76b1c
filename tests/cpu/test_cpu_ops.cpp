// Every op the CPU backend compiles (cpu_backend::cpu_ops(): op_compute's ops, the multi-kernel
// ops Resize / ConvTranspose and the views), JIT-compiled on small shapes and compared with the
// reference interpreter. One parameterised test per op; `EveryCpuOpHasACase` fails when an op is
// added to the backend without a case here.
//
// Shapes are odd on purpose (37, 45, ... columns): vector loops get a scalar tail with both the
// AVX2 (8 lanes) and AVX-512 (16 lanes) widths, GEMM micro-tiles get partial panels.
//
// Tolerances (|cpu - ref| <= rel * max|ref| + 1e-6, cpu_test_util.h): both sides compute in fp32;
// the CPU contracts a*b+c into FMAs and reassociates reductions (codegen.h), so a K-term sum
// differs from the reference's sequential sum by at most ~K u sum|terms| (u = 2^-24 ~ 6e-8):
// for K <= 200 with terms of magnitude <= 1 that is <= 200 * 6e-8 * max ~ 1.2e-5 relative to the
// largest output, so contractions/reductions use 2e-5. Elementwise ops differ by at most a few
// ulp (FMA contraction, libm vs. vector math): 1e-6. Transcendentals evaluated through libm
// (exp, tanh, erf, log) use the same functions as the reference: 1e-6.
#include <fmt/format.h>

#include "compiler/backend/cpu/int8_kernels.h"
#include "compiler/lower/op_compute.h"
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

struct OpCase {
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> inputs;
  double rel = 1e-6;
};

using CaseFn = OpCase (*)();

/// One input x of `shape` in [lo, hi), op applied with `a`.
OpCase unary_case(const std::string& op, const Shape& shape, float lo = -2.f, float hi = 2.f,
                  Attributes a = {}) {
  CpuGraph b;
  Value* x = b.input("x", shape);
  Value* y = b.node(op, {x}, std::move(a));
  return {b.finish({y}), {{"x", cpu_random(shape, 11, lo, hi)}}};
}

/// x [2,3,5,37] op y [3,1,37] (multidirectional broadcast).
OpCase binary_case(const std::string& op, float lo = -2.f, float hi = 2.f) {
  CpuGraph b;
  Value* x = b.input("x", {2, 3, 5, 37});
  Value* y = b.input("y", {3, 1, 37});
  Value* z = b.node(op, {x, y});
  return {
      b.finish({z}),
      {{"x", cpu_random({2, 3, 5, 37}, 12, lo, hi)}, {"y", cpu_random({3, 1, 37}, 13, lo, hi)}}};
}

OpCase variadic_case(const std::string& op) {
  CpuGraph b;
  Value* x = b.input("x", {4, 45});
  Value* y = b.input("y", {45});
  Value* z = b.input("z", {4, 1});
  Value* r = b.node(op, {x, y, z});
  return {
      b.finish({r}),
      {{"x", cpu_random({4, 45}, 14)}, {"y", cpu_random({45}, 15)}, {"z", cpu_random({4, 1}, 16)}}};
}

/// Pow with each exponent op_compute specialises (2, 3, 0.5, -1, -0.5): one output each.
OpCase pow_case() {
  CpuGraph b;
  Value* x = b.input("x", {3, 5, 37});
  std::vector<Value*> outs;
  int i = 0;
  for (float e : {2.f, 3.f, 0.5f, -1.f, -0.5f})
    outs.push_back(b.node("Pow", {x, b.constant(fmt::format("e{}", i++), Tensor::scalar_f32(e))}));
  return {b.finish(outs), {{"x", cpu_random({3, 5, 37}, 45, 0.5f, 2.f)}}};
}

OpCase reduce_case(const std::string& op) {
  CpuGraph b;
  Value* x = b.input("x", {3, 7, 45});
  Attributes a;
  a.set("keepdims", int64_t{op != "ReduceMax"});
  Value* y;
  if (op == "ReduceSum") {  // opset 13: axes as an input
    Value* axes = b.constant("axes", Tensor::from_int64s({2}, {0, 2}));
    y = b.node(op, {x, axes}, a);
  } else {
    a.set("axes", op == "ReduceMean" ? std::vector<int64_t>{-1} : std::vector<int64_t>{1});
    y = b.node(op, {x}, a);
  }
  OpCase c{b.finish({y}), {{"x", cpu_random({3, 7, 45}, 17)}}};
  c.rel = 2e-5;
  return c;
}

OpCase conv_case() {
  // Grouped 3x3 stride 2 pad 1 conv (2 groups) with bias, then a residual-free ReLU epilogue.
  CpuGraph b;
  Value* x = b.input("x", {2, 6, 11, 13});
  Value* w = b.constant("w", cpu_random({10, 3, 3, 3}, 18));
  Value* bias = b.constant("b", cpu_random({10}, 19));
  Value* y = b.node("Conv", {x, w, bias},
                    attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"strides", std::vector<int64_t>{2, 2}},
                           {"group", int64_t{2}}}));
  OpCase c{b.finish({y}), {{"x", cpu_random({2, 6, 11, 13}, 20)}}};
  c.rel = 2e-5;
  return c;
}

OpCase matmul_case() {
  // Batched [2,3,19,33] x [2,1,33,37]: B broadcast over dim 1, run-time operands.
  CpuGraph b;
  Value* x = b.input("x", {2, 3, 19, 33});
  Value* w = b.input("w", {2, 1, 33, 37});
  Value* y = b.node("MatMul", {x, w});
  OpCase c{b.finish({y}),
           {{"x", cpu_random({2, 3, 19, 33}, 21)}, {"w", cpu_random({2, 1, 33, 37}, 22)}}};
  c.rel = 2e-5;
  return c;
}

OpCase gemm_case() {
  // alpha/beta, transA and transB, bias broadcast along rows.
  CpuGraph b;
  Value* a = b.input("a", {29, 7});
  Value* w = b.constant("w", cpu_random({37, 29}, 23));
  Value* bias = b.constant("c", cpu_random({37}, 24));
  Value* y = b.node(
      "Gemm", {a, w, bias},
      attrs({{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}));
  OpCase c{b.finish({y}), {{"a", cpu_random({29, 7}, 25)}}};
  c.rel = 2e-5;
  return c;
}

OpCase batchnorm_case() {
  CpuGraph b;
  Value* x = b.input("x", {2, 5, 3, 37});
  Value* s = b.constant("s", cpu_random({5}, 26));
  Value* bb = b.constant("bb", cpu_random({5}, 27));
  Value* m = b.constant("m", cpu_random({5}, 28));
  Value* v = b.constant("v", cpu_random({5}, 29, 0.5f, 2.f));
  Value* y = b.node("BatchNormalization", {x, s, bb, m, v}, attrs({{"epsilon", 1e-3f}}));
  return {b.finish({y}), {{"x", cpu_random({2, 5, 3, 37}, 30)}}};
}

OpCase pool_case(const std::string& op) {
  CpuGraph b;
  Value* x = b.input("x", {2, 3, 13, 19});
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{3, 3});
  a.set("strides", std::vector<int64_t>{2, 2});
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  if (op == "AveragePool") a.set("count_include_pad", int64_t{0});
  Value* y = b.node(op, {x}, a);
  return {b.finish({y}), {{"x", cpu_random({2, 3, 13, 19}, 31)}}};
}

OpCase softmax_case(const std::string& op) {
  OpCase c = unary_case(op, {3, 5, 37}, -4.f, 4.f, attrs({{"axis", int64_t{-1}}}));
  c.rel = 2e-6;
  return c;
}

OpCase clip_case() {
  CpuGraph b;
  Value* x = b.input("x", {5, 37});
  Value* lo = b.constant("lo", Tensor::scalar_f32(-0.5f));
  Value* hi = b.constant("hi", Tensor::scalar_f32(0.75f));
  Value* y = b.node("Clip", {x, lo, hi});
  return {b.finish({y}), {{"x", cpu_random({5, 37}, 32)}}};
}

OpCase transpose_case() {
  return unary_case("Transpose", {2, 3, 5, 7}, -1.f, 1.f,
                    attrs({{"perm", std::vector<int64_t>{3, 1, 0, 2}}}));
}

OpCase slice_case() {
  CpuGraph b;
  Value* x = b.input("x", {4, 10, 37});
  Value* st = b.constant("starts", Tensor::from_int64s({2}, {1, 35}));
  Value* en = b.constant("ends", Tensor::from_int64s({2}, {9, 2}));
  Value* ax = b.constant("axes", Tensor::from_int64s({2}, {1, 2}));
  Value* sp = b.constant("steps", Tensor::from_int64s({2}, {3, -4}));
  Value* y = b.node("Slice", {x, st, en, ax, sp});
  return {b.finish({y}), {{"x", cpu_random({4, 10, 37}, 33)}}};
}

OpCase concat_case() {
  CpuGraph b;
  Value* x = b.input("x", {2, 3, 37});
  Value* y = b.input("y", {2, 5, 37});
  Value* k = b.constant("k", cpu_random({2, 1, 37}, 34));
  Value* z = b.node("Concat", {x, k, y}, attrs({{"axis", int64_t{1}}}));
  return {b.finish({z}), {{"x", cpu_random({2, 3, 37}, 35)}, {"y", cpu_random({2, 5, 37}, 36)}}};
}

OpCase layernorm_case() {
  CpuGraph b;
  Value* x = b.input("x", {3, 7, 45});
  Value* s = b.constant("s", cpu_random({45}, 37));
  Value* bb = b.constant("bb", cpu_random({45}, 38));
  Value* y = b.node("LayerNormalization", {x, s, bb}, attrs({{"axis", int64_t{-1}}}));
  OpCase c{b.finish({y}), {{"x", cpu_random({3, 7, 45}, 39, -3.f, 3.f)}}};
  c.rel = 2e-5;
  return c;
}

OpCase resize_case() {
  CpuGraph b;
  Value* x = b.input("x", {1, 3, 5, 7});
  Value* roi = b.constant("roi", Tensor(DType::f32, {0}));
  Value* scales = b.constant("scales", Tensor::from_floats({4}, {1, 1, 2, 3}));
  Attributes a;
  a.set("mode", std::string("nearest"));
  a.set("coordinate_transformation_mode", std::string("asymmetric"));
  a.set("nearest_mode", std::string("floor"));
  Value* y = b.node("Resize", {x, roi, scales}, a);
  return {b.finish({y}), {{"x", cpu_random({1, 3, 5, 7}, 40)}}};
}

OpCase conv_transpose_case() {
  CpuGraph b;
  Value* x = b.input("x", {1, 12, 5, 7});
  Value* w = b.constant("w", cpu_random({12, 9, 2, 2}, 41));
  Value* bias = b.constant("b", cpu_random({9}, 42));
  Value* y = b.node("ConvTranspose", {x, w, bias},
                    attrs({{"kernel_shape", std::vector<int64_t>{2, 2}},
                           {"strides", std::vector<int64_t>{2, 2}}}));
  OpCase c{b.finish({y}), {{"x", cpu_random({1, 12, 5, 7}, 43)}}};
  c.rel = 2e-5;
  return c;
}

/// A view op between two computing ops (so the view is not a graph input or output).
OpCase view_case(const std::string& op) {
  CpuGraph b;
  Value* x = b.input("x", {2, 1, 3, 37});
  Value* r = b.node("Relu", {x});
  Value* v;
  if (op == "Reshape") {
    v = b.node(op, {r, b.constant("shape", Tensor::from_int64s({2}, {6, -1}))});
  } else if (op == "Squeeze" || op == "Unsqueeze") {
    v = b.node(op, {r, b.constant("axes", Tensor::from_int64s({1}, {1}))});
  } else if (op == "Flatten") {
    v = b.node(op, {r}, attrs({{"axis", int64_t{2}}}));
  } else if (op == "Cast") {
    v = b.node(op, {r}, attrs({{"to", int64_t{1}}}));  // FLOAT
  } else {
    v = b.node(op, {r});
  }
  Value* y = b.node("Neg", {v});
  return {b.finish({y}), {{"x", cpu_random({2, 1, 3, 37}, 44)}}};
}

/// A reduction over axis 1 of x [3, 7, 45] in [lo, hi) (keepdims 1): 7 terms.
OpCase reduce_axis1_case(const std::string& op, float lo = -2.f, float hi = 2.f) {
  CpuGraph b;
  Value* x = b.input("x", {3, 7, 45});
  Value* y = b.node(op, {x}, attrs({{"axes", std::vector<int64_t>{1}}}));
  OpCase c{b.finish({y}), {{"x", cpu_random({3, 7, 45}, 46, lo, hi)}}};
  c.rel = 2e-5;
  return c;
}

/// A rearrangement of x [2, 8, 6, 4] (copies: exact).
OpCase rearrange_case(const std::string& op, Attributes a,
                      const std::vector<int64_t>& repeats = {}) {
  CpuGraph b;
  Value* x = b.input("x", {2, 8, 6, 4});
  std::vector<Value*> ins = {x};
  if (!repeats.empty())
    ins.push_back(b.constant("repeats",
                             Tensor::from_int64s({static_cast<int64_t>(repeats.size())}, repeats)));
  Value* y = b.node(op, ins, std::move(a));
  OpCase c{b.finish({y}), {{"x", cpu_random({2, 8, 6, 4}, 47)}}};
  c.rel = 0;
  return c;
}

const std::map<std::string, std::function<OpCase()>>& cases() {
  static const std::map<std::string, std::function<OpCase()>> m = [] {
    std::map<std::string, std::function<OpCase()>> c;
    for (const char* op : {"Relu", "Sigmoid", "Exp", "Abs", "Neg", "Tanh", "HardSwish", "Erf",
                           "Silu", "Gelu", "HardSigmoid"})
      c[op] = [op] { return unary_case(op, {3, 5, 37}); };
    for (const char* op : {"Log", "Sqrt", "Reciprocal"})
      c[op] = [op] { return unary_case(op, {3, 5, 37}, 0.25f, 4.f); };
    // Elementwise, computed through exp/log/sqrt as the reference's std:: functions differ
    // from them by a few ulp: 1e-6 (Asinh/Acosh/Atanh/Sinh/Cosh/Softplus by their log/exp forms:
    // 4e-6, a few ulp of the intermediate terms relative to the largest output).
    for (const char* op : {"Elu", "Selu", "Softsign"})
      c[op] = [op] { return unary_case(op, {3, 5, 37}); };
    c["Celu"] = [] { return unary_case("Celu", {3, 5, 37}, -2.f, 2.f, attrs({{"alpha", 2.0f}})); };
    for (const char* op : {"Softplus", "Sinh", "Cosh", "Asinh"})
      c[op] = [op] {
        OpCase k = unary_case(op, {3, 5, 37});
        k.rel = 4e-6;
        return k;
      };
    c["Acosh"] = [] {
      OpCase k = unary_case("Acosh", {3, 5, 37}, 1.25f, 4.f);
      k.rel = 4e-6;
      return k;
    };
    c["Atanh"] = [] {
      OpCase k = unary_case("Atanh", {3, 5, 37}, -0.75f, 0.75f);
      k.rel = 4e-6;
      return k;
    };
    c["PRelu"] = [] { return binary_case("PRelu"); };
    c["Mean"] = [] { return variadic_case("Mean"); };
    for (const char* op : {"ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"})
      c[op] = [op] { return reduce_axis1_case(op); };
    c["ReduceLogSum"] = [] { return reduce_axis1_case("ReduceLogSum", 0.25f, 2.f); };
    c["LRN"] = [] {
      OpCase k = unary_case("LRN", {2, 8, 5, 9}, -2.f, 2.f,
                            attrs({{"size", int64_t{3}}, {"alpha", 0.5f}, {"beta", 0.75f}}));
      k.rel = 4e-6;
      return k;
    };
    c["InstanceNormalization"] = [] {
      CpuGraph b;
      Value* x = b.input("x", {2, 6, 5, 9});
      Value* y = b.node("InstanceNormalization", {x, b.constant("s", cpu_random({6}, 48)),
                                                  b.constant("b", cpu_random({6}, 49))});
      OpCase k{b.finish({y}), {{"x", cpu_random({2, 6, 5, 9}, 50)}}};
      k.rel = 2e-5;
      return k;
    };
    c["Expand"] = [] {
      CpuGraph b;
      Value* x = b.input("x", {5, 1});
      Value* y = b.node("Expand", {x, b.constant("shape", Tensor::from_int64s({3}, {3, 1, 37}))});
      OpCase k{b.finish({y}), {{"x", cpu_random({5, 1}, 51)}}};
      k.rel = 0;
      return k;
    };
    c["DepthToSpace"] = [] {
      return rearrange_case("DepthToSpace",
                            attrs({{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}));
    };
    c["SpaceToDepth"] = [] {
      return rearrange_case("SpaceToDepth", attrs({{"blocksize", int64_t{2}}}));
    };
    c["Tile"] = [] { return rearrange_case("Tile", {}, {1, 3, 1, 2}); };
    // Pad in edge mode with a crop (op_parts), exact.
    c["Pad"] = [] {
      CpuGraph b;
      Value* x = b.input("x", {2, 8, 6, 4});
      Value* y = b.node(
          "Pad", {x, b.constant("pads", Tensor::from_int64s({8}, {0, 1, 2, -1, 0, 0, 3, 2}))},
          attrs({{"mode", std::string("edge")}}));
      OpCase k{b.finish({y}), {{"x", cpu_random({2, 8, 6, 4}, 52)}}};
      k.rel = 0;
      return k;
    };
    c["LeakyRelu"] = [] {
      return unary_case("LeakyRelu", {3, 5, 37}, -2.f, 2.f, attrs({{"alpha", 0.2f}}));
    };
    for (const char* op : {"Add", "Sub", "Mul"}) c[op] = [op] { return binary_case(op); };
    c["Div"] = [] { return binary_case("Div", 0.5f, 2.f); };
    c["Pow"] = pow_case;
    for (const char* op : {"Max", "Min", "Sum"}) c[op] = [op] { return variadic_case(op); };
    for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"})
      c[op] = [op] { return reduce_case(op); };
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"})
      c[op] = [op] { return unary_case(op, {2, 5, 7, 13}); };
    for (const char* op : {"MaxPool", "AveragePool"}) c[op] = [op] { return pool_case(op); };
    for (const char* op : {"Softmax", "LogSoftmax"}) c[op] = [op] { return softmax_case(op); };
    for (const char* op :
         {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Cast"})
      c[op] = [op] { return view_case(op); };
    c["Clip"] = clip_case;
    c["BatchNormalization"] = batchnorm_case;
    c["Conv"] = conv_case;
    c["MatMul"] = matmul_case;
    c["Gemm"] = gemm_case;
    c["Transpose"] = transpose_case;
    c["Slice"] = slice_case;
    c["Concat"] = concat_case;
    c["LayerNormalization"] = layernorm_case;
    c["Resize"] = resize_case;
    c["ConvTranspose"] = conv_transpose_case;
    // ---- more ops (issue #15): selects and exact roundings (0 error: rel 0 plus the 1e-6
    // floor), libm trig as the reference's std:: functions (1e-6), Tan/Asin/Acos through their
    // sin/cos/atan forms (a few ulp of the intermediates: 4e-6), sums 2e-5.
    c["Shrink"] = [] {
      return unary_case("Shrink", {3, 5, 37}, -2.f, 2.f, attrs({{"lambd", 0.5f}, {"bias", 0.25f}}));
    };
    c["ThresholdedRelu"] = [] {
      return unary_case("ThresholdedRelu", {3, 5, 37}, -2.f, 2.f, attrs({{"alpha", 0.5f}}));
    };
    for (const char* op : {"Sign", "Floor", "Ceil", "Round", "Sin", "Cos", "Atan"})
      c[op] = [op] {
        OpCase k = unary_case(op, {3, 5, 37}, -4.f, 4.f);
        // Exact ties for Round (ties to even) and integers for Floor/Ceil/Sign.
        Tensor& x = k.inputs.at("x");
        for (int64_t i = 0; i < x.numel(); i += 4) x.data<float>()[i] = 0.5f * (i % 17 - 8);
        return k;
      };
    for (const char* op : {"Tan", "Asin", "Acos"})
      c[op] = [op] {
        OpCase k = unary_case(op, {3, 5, 37}, -0.8f, 0.8f);
        k.rel = 4e-6;
        return k;
      };
    c["ReduceProd"] = [] {
      CpuGraph b;
      Value* x = b.input("x", {3, 7, 45});
      Value* y = b.node("ReduceProd", {x}, attrs({{"axes", std::vector<int64_t>{0, 1}}}));
      OpCase k{b.finish({y}), {{"x", cpu_random({3, 7, 45}, 52, 0.5f, 1.5f)}}};
      k.rel = 4e-6;
      return k;
    };
    c["CumSum"] = [] {
      CpuGraph b;
      Value* x = b.input("x", {3, 7, 45});
      Value* y = b.node("CumSum", {x, b.constant("axis", Tensor::from_int64s({}, {-1}))},
                        attrs({{"exclusive", int64_t{1}}}));
      OpCase k{b.finish({y}), {{"x", cpu_random({3, 7, 45}, 53)}}};
      k.rel = 2e-5;
      return k;
    };
    c["Hardmax"] = [] {
      OpCase k = unary_case("Hardmax", {3, 7, 45}, -2.f, 2.f, attrs({{"axis", int64_t{1}}}));
      k.rel = 0;
      return k;
    };
    c["Einsum"] = [] {
      CpuGraph b;
      Value* x = b.input("x", {3, 5, 37});
      Value* w = b.input("w", {3, 37, 9});
      Value* y = b.node("Einsum", {x, w}, attrs({{"equation", std::string("bij,bjk->bik")}}));
      OpCase k{b.finish({y}),
               {{"x", cpu_random({3, 5, 37}, 54)}, {"w", cpu_random({3, 37, 9}, 55)}}};
      k.rel = 2e-5;
      return k;
    };
    c["EyeLike"] = [] {
      OpCase k = unary_case("EyeLike", {7, 9}, -1.f, 1.f, attrs({{"k", int64_t{-2}}}));
      k.rel = 0;
      return k;
    };
    c["OneHot"] = [] {
      CpuGraph b;
      Value* x = b.input("x", {4, 23});
      Value* v = b.input("values", {2});
      Value* y = b.node("OneHot", {x, b.constant("depth", Tensor::scalar_f32(10.f)), v},
                        attrs({{"axis", int64_t{0}}}));
      Tensor idx = cpu_random({4, 23}, 56, -12.f, 12.f);
      OpCase k{b.finish({y}), {{"x", idx}, {"values", Tensor::from_floats({2}, {-2.f, 3.f})}}};
      k.rel = 0;
      return k;
    };
    c["Mod"] = [] {
      // fmod=1 (ONNX defines float Mod only so), mixed signs.
      CpuGraph b;
      Value* x = b.input("x", {2, 3, 5, 37});
      Value* y = b.input("y", {3, 1, 37});
      Value* z = b.node("Mod", {x, y}, attrs({{"fmod", int64_t{1}}}));
      Tensor ys = cpu_random({3, 1, 37}, 13, 0.5f, 2.f);
      for (int64_t i = 0; i < ys.numel(); i += 2) ys.data<float>()[i] = -ys.data<float>()[i];
      OpCase k{b.finish({z}), {{"x", cpu_random({2, 3, 5, 37}, 12, -4.f, 4.f)}, {"y", ys}}};
      k.rel = 1e-5;
      return k;
    };
    // A storage-format conversion: the CPU ignores formats, so it is a copy of the values (to
    // NCHW here: the builder's output value is plain, which the verifier checks against it).
    c["TransData"] = [] {
      return unary_case("TransData", {2, 32, 3, 37}, -2.f, 2.f,
                        attrs({{"dst_format", std::string("NCHW")}}));
    };
    return c;
  }();
  return m;
}

TEST(CpuOps, EveryCpuOpHasACase) {
  // The int8 ops (integer inputs and outputs, compared bit for bit rather than within a float
  // tolerance) have their cases in tests/cpu/test_cpu_int8_plan.cpp.
  // The typed computes (integer and bool tensors, compared exactly) have theirs in
  // tests/cpu/test_cpu_typed.cpp (CpuTyped.EveryTypedOpHasACase).
  const auto int8 = cpu_backend::int8_ops();
  const auto typed = lower::typed_compute_ops();
  for (const auto& op : cpu_backend::cpu_ops()) {
    if (std::find(int8.begin(), int8.end(), op) != int8.end()) continue;
    if (std::find(typed.begin(), typed.end(), op) != typed.end()) continue;
    EXPECT_TRUE(cases().count(op)) << op << " is compiled by the CPU backend but has no case here";
  }
}

// Pow with a run-time exponent tensor: exp(y log|x|), (-1)^y for x < 0 and an integral y, 1 for
// y = 0; the reference's std::pow differs by a few ulp of exp's argument (|y log x| <= 4.2).
TEST(CpuMoreOps, PowWithARuntimeExponent) {
  CpuGraph b;
  Value* x = b.input("x", {3, 5, 37});
  Value* y = b.input("y", {3, 5, 37});
  Value* z = b.node("Pow", {x, y});
  Tensor xs = cpu_random({3, 5, 37}, 57, 0.5f, 2.f), ys = cpu_random({3, 5, 37}, 58, -3.f, 3.f);
  for (int64_t i = 0; i < xs.numel(); i += 3) {
    xs.data<float>()[i] = -xs.data<float>()[i];
    ys.data<float>()[i] = std::round(ys.data<float>()[i]);
  }
  ys.data<float>()[1] = 0.f;
  check_cpu(*b.finish({z}), {{"x", xs}, {"y", ys}}, 1e-5);
}

class CpuOp : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuOp, MatchesReference) {
  OpCase c = cases().at(GetParam())();
  auto r = check_cpu(*c.graph, c.inputs, c.rel);
  // The op really ran as compiled code (not, e.g., folded away): at least one kernel was timed.
  EXPECT_FALSE(r.kernel_seconds.empty());
}

std::vector<std::string> case_names() {
  std::vector<std::string> v;
  for (const auto& [k, f] : cases()) v.push_back(k);
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllOps, CpuOp, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace tessel::testing
