// Before/after tests of every graph pass on small graphs written in the Graph IR text form: the
// exact node list after the pass, the values of the constants it creates, and (for the rewrites
// that change arithmetic) the reference interpreter's outputs before vs after.
//
// Numeric tolerance for rewrites: max |after - before| / (|before| + max|before|) <= 1e-6 unless
// stated; the rewrites change fp32 rounding only (a reciprocal instead of a division, folded BN
// weights, a fused kernel's own evaluation order).
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "passes/graph/graph_passes.h"
#include "tests/graph_passes/gp_util.h"
#include "tests/test_graph_builder.h"

namespace tessel::testing {
namespace {

using namespace tessel::graph_passes;
using Nodes = std::vector<std::string>;

/// Runs `pass` on a copy of the graph in `text` and checks the reference outputs agree with the
/// unchanged graph within `tol` (scaled error, see gp_util.h). Returns the rewritten graph.
template <class Pass>
std::unique_ptr<Graph> run_and_compare(const std::string& text, Pass pass, double tol = 1e-6,
                                       bool expect_change = true) {
  auto before = parse_ok(text);
  auto after = parse_ok(text);
  EXPECT_EQ(pass(*after), expect_change);
  verify_graph(*after);
  const auto inputs = random_inputs(*before);
  const auto want = ops::run_reference(*before, inputs);
  const auto got = ops::run_reference(*after, inputs);
  EXPECT_LE(max_scaled_error(got, want), tol);
  return after;
}

std::vector<float> floats(const Graph& g, const std::string& name) {
  const Value* v = g.find_value(name);
  EXPECT_NE(v, nullptr) << name;
  if (!v || !v->constant) return {};
  return v->constant->to_float_vector();
}

// ---------------------------------------------------------------------------------------------
// shape_folding

TEST(ShapeFolding, ShapeCastGatherConcatChainBecomesAConstantReshapeTarget) {
  auto g = parse_graph(R"(graph t opset 17 (%x: f32[2,3,4]) -> (%y) {
    %idx: i64[1] = const [0]
    %tail: i64[1] = const [12]
    %s: i64[3] = Shape(%x)
    %si: i32[3] = Cast(%s) {to=6}
    %n: i32[1] = Gather(%si, %idx) {axis=0}
    %nl: i64[1] = Cast(%n) {to=7}
    %k: i64[2] = Concat(%nl, %tail) {axis=0}
    %y: f32[2,12] = Reshape(%x, %k)
  })");
  ops::infer_graph(*g);  // data propagation: the chain's values become known
  verify_graph(*g);
  EXPECT_TRUE(shape_folding(*g));
  verify_graph(*g);
  EXPECT_EQ(node_list(*g), (Nodes{"y = Reshape(x, k)"}));
  const Value* k = g->find_value("k");
  ASSERT_TRUE(k->constant);
  EXPECT_EQ(k->producer, nullptr);
  EXPECT_EQ(k->constant->to_int64_vector(), (std::vector<int64_t>{2, 12}));
  EXPECT_FALSE(shape_folding(*g));  // nothing left to fold
}

TEST(ShapeFolding, KnownGraphOutputsStayComputed) {
  auto g = parse_graph(R"(graph t opset 17 (%x: f32[2,3]) -> (%s) {
    %s: i64[2] = Shape(%x)
  })");
  ops::infer_graph(*g);
  EXPECT_FALSE(shape_folding(*g));
  EXPECT_EQ(node_list(*g), (Nodes{"s = Shape(x)"}));
}

// ---------------------------------------------------------------------------------------------
// constant_folding

TEST(ConstantFolding, TransposedWeightIsEvaluated) {
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[1,3]) -> (%y) {
    %w: f32[2,3] = const [1, 2, 3, 4, 5, 6]
    %wt: f32[3,2] = Transpose(%w) {perm=[1, 0]}
    %y: f32[1,2] = MatMul(%x, %wt)
  })",
                           constant_folding, 0.0);
  EXPECT_EQ(node_list(*g), (Nodes{"y = MatMul(x, wt)"}));
  EXPECT_EQ(floats(*g, "wt"), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(ConstantFolding, ChainsFoldInOneSweepAndTheSizeLimitHolds) {
  // c = (a + b) * 2 folds in one sweep (nodes are in topological order). The Expand to
  // kMaxFoldedElements elements folds; one element more stays computed at run time.
  const std::string text =
      fmt::format(R"(graph t opset 17 (%x: f32[{0}], %x2: f32[{1}]) -> (%y, %y2) {{
    %a: f32[2] = const [1, 2]
    %b: f32[2] = const [10, 20]
    %two: f32[] = const [2]
    %one: f32[1] = const [1.5]
    %n: i64[1] = const [{0}]
    %n2: i64[1] = const [{1}]
    %s: f32[2] = Add(%a, %b)
    %c: f32[2] = Mul(%s, %two)
    %big: f32[{0}] = Expand(%one, %n)
    %big2: f32[{1}] = Expand(%one, %n2)
    %y: f32[{0}] = Add(%x, %big)
    %y2: f32[{1}] = Add(%x2, %big2)
    %z: f32[2] = Add(%c, %c)
  }})",
                  kMaxFoldedElements, kMaxFoldedElements + 1);
  auto g = parse_ok(text);
  EXPECT_TRUE(constant_folding(*g));
  verify_graph(*g);
  EXPECT_EQ(node_list(*g),
            (Nodes{"big2 = Expand(one, n2)", "y = Add(x, big)", "y2 = Add(x2, big2)"}));
  EXPECT_EQ(floats(*g, "c"), (std::vector<float>{22, 44}));
  EXPECT_EQ(floats(*g, "z"), (std::vector<float>{44, 88}));
  const Value* big = g->find_value("big");
  ASSERT_TRUE(big->constant);
  EXPECT_EQ(big->constant->numel(), kMaxFoldedElements);
  EXPECT_EQ(big->constant->get_as_double(kMaxFoldedElements - 1), 1.5);
}

TEST(ConstantFolding, DequantizeLinearOfAConstantFoldsAtAnySize) {
  // A weight DQ fold_qdq leaves (ResNet-50's fc: 1000 x 2048 int8 at one scale per row) is
  // evaluated even beyond kMaxFoldedElements: (q - zp) * scale per element.
  const int64_t rows = 8, cols = kMaxFoldedElements / 8 + 1;  // 2^20 + 8 elements
  Tensor q(DType::i8, {rows, cols});
  for (int64_t i = 0; i < q.numel(); ++i) q.data<int8_t>()[i] = static_cast<int8_t>(i % 255 - 127);
  GraphBuilder gb;
  Value* x = gb.input("x", {1, cols});
  Tensor scale = Tensor::from_floats({rows}, {0.5f, 0.25f, 1, 2, 0.125f, 4, 8, 0.0625f});
  Value* w = gb.node("DequantizeLinear", {gb.constant("wq", q), gb.constant("ws", scale)},
                     attrs({{"axis", int64_t{0}}}));
  Value* y = gb.node("Gemm", {x, w}, attrs({{"transB", int64_t{1}}}));
  auto g = gb.finish({y});
  ASSERT_GT(shape_numel(w->shape), kMaxFoldedElements);
  EXPECT_TRUE(constant_folding(*g));
  ASSERT_TRUE(w->constant);
  EXPECT_EQ(g->nodes().size(), 1u);  // the Gemm
  const int64_t last = rows * cols - 1;
  EXPECT_EQ(w->constant->get_as_double(last), static_cast<double>(last % 255 - 127) * 0.0625);
  EXPECT_EQ(w->constant->get_as_double(cols + 3),
            static_cast<double>((cols + 3) % 255 - 127) * 0.25);
}

TEST(ConstantFolding, GraphOutputsAndRandomOpsAreKept) {
  auto g = parse_ok(R"(graph t opset 17 () -> (%y, %r) {
    %a: f32[2] = const [1, 2]
    %y: f32[2] = Neg(%a)
    %r: f32[2] = RandomUniformLike(%a)
  })");
  EXPECT_FALSE(constant_folding(*g));
  EXPECT_EQ(node_list(*g), (Nodes{"y = Neg(a)", "r = RandomUniformLike(a)"}));
}

// ---------------------------------------------------------------------------------------------
// simplify

TEST(Simplify, NeutralElementsAndDivisionByAConstant) {
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[2,3]) -> (%y) {
    %one: f32[] = const [1]
    %zero: f32[3] = const [0, 0, 0]
    %six: f32[] = const [6]
    %a: f32[2,3] = Mul(%x, %one)
    %b: f32[2,3] = Add(%zero, %a)
    %c: f32[2,3] = Sub(%b, %zero)
    %d: f32[2,3] = Div(%c, %one)
    %y: f32[2,3] = Div(%d, %six)
  })",
                           simplify);
  EXPECT_EQ(node_list(*g), (Nodes{"y = Mul(x, six.reciprocal)"}));
  EXPECT_EQ(producer(*g, "y").name, "Div_1");  // the Div became a Mul in place
  // 1/6 rounded once to fp32.
  EXPECT_EQ(floats(*g, "six.reciprocal"), (std::vector<float>{static_cast<float>(1.0 / 6.0)}));
}

TEST(Simplify, KeepsBroadcastsGraphOutputsIntegerDivisionAndZeroDivisors) {
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[3], %i: i64[3]) -> (%a, %b, %c, %d) {
    %one: f32[] = const [1]
    %zero: f32[2,3] = const [0, 0, 0, 0, 0, 0]
    %two: i64[] = const [2]
    %z: f32[3] = const [1, 0, 2]
    %a: f32[2,3] = Add(%x, %zero)
    %b: f32[3] = Mul(%x, %one)
    %c: i64[3] = Div(%i, %two)
    %d: f32[3] = Div(%x, %z)
  })");
  EXPECT_FALSE(simplify(*g));
  EXPECT_EQ(node_list(*g),
            (Nodes{"a = Add(x, zero)", "b = Mul(x, one)", "c = Div(i, two)", "d = Div(x, z)"}));
}

TEST(Simplify, IdentityAndInferenceDropoutAreRemoved) {
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[4]) -> (%y, %z) {
    %no: bool[] = const [false]
    %ratio: f32[] = const [0.5]
    %a: f32[4] = Identity(%x)
    %b: f32[4] = Dropout(%a)
    %c: f32[4] = Dropout(%b, %ratio, %no)
    %y: f32[4] = Relu(%c)
    %z: f32[4] = Neg(%x)
  })",
                           simplify, 0.0);
  EXPECT_EQ(node_list(*g), (Nodes{"y = Relu(x)", "z = Neg(x)"}));

  // A training-mode Dropout stays, and so does one whose mask is used.
  auto h = parse_ok(R"(graph t opset 17 (%x: f32[4]) -> (%y, %w, %m) {
    %yes: bool[] = const [true]
    %ratio: f32[] = const [0.5]
    %y: f32[4] = Dropout(%x, %ratio, %yes)
    %w: f32[4], %m: bool[4] = Dropout(%x)
  })");
  EXPECT_FALSE(simplify(*h));
  EXPECT_EQ(h->nodes().size(), 2u);
}

TEST(Simplify, ReshapeChainsAndSqueezeUnsqueezePairs) {
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[2,3,4]) -> (%y, %z) {
    %s1: i64[2] = const [6, 4]
    %s2: i64[1] = const [24]
    %ax0: i64[1] = const [0]
    %ax1: i64[1] = const [1]
    %a: f32[6,4] = Reshape(%x, %s1)
    %b: f32[1,6,4] = Unsqueeze(%a, %ax0)
    %y: f32[24] = Reshape(%b, %s2)
    %u: f32[2,1,3,4] = Unsqueeze(%x, %ax1)
    %v: f32[2,3,4] = Squeeze(%u, %ax1)
    %z: f32[2,3,4] = Relu(%v)
  })",
                           simplify, 0.0);
  EXPECT_EQ(node_list(*g), (Nodes{"y = Reshape(x, y.shape)", "z = Relu(x)"}));
  const Value* shape = g->find_value("y.shape");
  ASSERT_TRUE(shape && shape->constant);
  EXPECT_EQ(shape->constant->to_int64_vector(), (std::vector<int64_t>{24}));
}

TEST(Simplify, TransposePairsCancelOrCompose) {
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[2,3,4]) -> (%r, %z) {
    %t1: f32[3,2,4] = Transpose(%x) {perm=[1, 0, 2]}
    %t2: f32[2,3,4] = Transpose(%t1) {perm=[1, 0, 2]}
    %r: f32[2,3,4] = Relu(%t2)
    %u1: f32[4,2,3] = Transpose(%x) {perm=[2, 0, 1]}
    %z: f32[3,4,2] = Transpose(%u1) {perm=[2, 0, 1]}
  })",
                           simplify, 0.0);
  EXPECT_EQ(node_list(*g), (Nodes{"r = Relu(x)", "z = Transpose(x)"}));
  // q[j] = p1[p2[j]] = [p1[2], p1[0], p1[1]] = [1, 2, 0]: x [2,3,4] -> [3,4,2].
  EXPECT_EQ(producer(*g, "z").attrs.get_ints_or("perm", {}, "z"), (std::vector<int64_t>{1, 2, 0}));
}

// ---------------------------------------------------------------------------------------------
// fold_batchnorm

TEST(FoldBatchNorm, ConvWeightsAndBiasAreScaled) {
  // eps 1, var [3, 0, 3] -> sqrt(var + eps) = [2, 1, 2]; scale [2, 1, 0.5] -> a = [1, 1, 0.25].
  // W' = W * a per output channel: [1,2 | 3,4 | 5*0.25, 6*0.25];
  // b' = a (b - mean) + B = [1(1-1)+0, 1(1-2)+1, 0.25(1-3)-1] = [0, 0, -1.5].
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[1,2,3,3]) -> (%y) {
    %w: f32[3,2,1,1] = const [1, 2, 3, 4, 5, 6]
    %b: f32[3] = const [1, 1, 1]
    %scale: f32[3] = const [2, 1, 0.5]
    %B: f32[3] = const [0, 1, -1]
    %mean: f32[3] = const [1, 2, 3]
    %var: f32[3] = const [3, 0, 3]
    %c: f32[1,3,3,3] = Conv(%x, %w, %b) {kernel_shape=[1, 1]}
    %y: f32[1,3,3,3] = BatchNormalization(%c, %scale, %B, %mean, %var) {epsilon=1.0}
  })",
                           fold_batchnorm);
  EXPECT_EQ(node_list(*g), (Nodes{"y = Conv(x, w.bn, w.bn_bias)"}));
  EXPECT_EQ(producer(*g, "y").name, "Conv_0");
  EXPECT_EQ(floats(*g, "w.bn"), (std::vector<float>{1, 2, 3, 4, 1.25f, 1.5f}));
  EXPECT_EQ(floats(*g, "w.bn_bias"), (std::vector<float>{0, 0, -1.5f}));
}

TEST(FoldBatchNorm, ConvWithoutBiasThroughAPerChannelAddAndConvTranspose) {
  const std::string bn_params = R"(
    %scale: f32[4] = const [0.5, 2, 1, -1]
    %B: f32[4] = const [0.1, 0.2, 0.3, 0.4]
    %mean: f32[4] = const [0.5, -0.5, 1, 0]
    %var: f32[4] = const [1, 2, 3, 4])";
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[1,2,3,3]) -> (%y) {
    %w: f32[4,1,3,3] = const [)" +
                               [] {
                                 std::string s;
                                 for (int i = 0; i < 36; ++i)
                                   s += (i ? ", " : "") + std::to_string((i % 7) - 3);
                                 return s;
                               }() +
                               R"(]
    %bias: f32[4,1,1] = const [1, -1, 2, -2])" +
                               bn_params + R"(
    %c: f32[1,4,3,3] = Conv(%x, %w) {group=2, kernel_shape=[3, 3], pads=[1, 1, 1, 1]}
    %a: f32[1,4,3,3] = Add(%c, %bias)
    %y: f32[1,4,3,3] = BatchNormalization(%a, %scale, %B, %mean, %var)
  })",
                           fold_batchnorm);
  EXPECT_EQ(node_list(*g), (Nodes{"y = Conv(x, w.bn, w.bn_bias)"}));

  auto t = run_and_compare(R"(graph t opset 17 (%x: f32[1,2,3,3]) -> (%y) {
    %w: f32[2,2,2,2] = const [1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, -5, -6, -7, -8]
    %b: f32[4] = const [1, 2, 3, 4])" +
                               bn_params + R"(
    %c: f32[1,4,4,4] = ConvTranspose(%x, %w, %b) {group=2, kernel_shape=[2, 2]}
    %y: f32[1,4,4,4] = BatchNormalization(%c, %scale, %B, %mean, %var)
  })",
                           fold_batchnorm);
  EXPECT_EQ(node_list(*t), (Nodes{"y = ConvTranspose(x, w.bn, w.bn_bias)"}));
}

TEST(FoldBatchNorm, GemmAndMatMulWithAndWithoutAdd) {
  const std::string bn = R"(
    %scale: f32[2] = const [2, -1]
    %B: f32[2] = const [0.5, 0.25]
    %mean: f32[2] = const [1, -1]
    %var: f32[2] = const [0.5, 2])";
  auto gemm = run_and_compare(R"(graph t opset 17 (%x: f32[3,4]) -> (%y) {
    %w: f32[2,4] = const [1, 2, 3, 4, 5, 6, 7, 8]
    %c: f32[2] = const [1, 2])" + bn +
                                  R"(
    %m: f32[3,2] = Gemm(%x, %w, %c) {alpha=0.5, beta=2.0, transB=1}
    %y: f32[3,2] = BatchNormalization(%m, %scale, %B, %mean, %var)
  })",
                              fold_batchnorm);
  EXPECT_EQ(node_list(*gemm), (Nodes{"y = Gemm(x, w.bn, w.bn_bias)"}));
  EXPECT_EQ(producer(*gemm, "y").attrs.get_float_or("beta", 0, "y"), 1.0f);

  auto mm_add = run_and_compare(R"(graph t opset 17 (%x: f32[3,4]) -> (%y) {
    %w: f32[4,2] = const [1, 2, 3, 4, 5, 6, 7, 8]
    %c: f32[2] = const [1, 2])" + bn +
                                    R"(
    %m: f32[3,2] = MatMul(%x, %w)
    %a: f32[3,2] = Add(%m, %c)
    %y: f32[3,2] = BatchNormalization(%a, %scale, %B, %mean, %var)
  })",
                                fold_batchnorm);
  EXPECT_EQ(node_list(*mm_add), (Nodes{"m = MatMul(x, w.bn)", "y = Add(m, w.bn_bias)"}));

  auto mm = run_and_compare(R"(graph t opset 17 (%x: f32[3,4]) -> (%y) {
    %w: f32[4,2] = const [1, 2, 3, 4, 5, 6, 7, 8])" +
                                bn + R"(
    %m: f32[3,2] = MatMul(%x, %w)
    %y: f32[3,2] = BatchNormalization(%m, %scale, %B, %mean, %var)
  })",
                            fold_batchnorm);
  EXPECT_EQ(node_list(*mm), (Nodes{"m = MatMul(x, w.bn)", "y = Add(m, w.bn_bias)"}));
  EXPECT_EQ(producer(*mm, "y").name, "BatchNormalization_0");
}

TEST(FoldBatchNorm, PerChannelMulAddSubChainsFoldToo) {
  // Conv -> * 0.5 (scalar) -> + [1, 2] (per channel) -> - 3 (scalar): A = 0.5,
  // B = 0.5 * b + [1, 2] - 3 with b = [2, 4]: [-1, 1]; W' = 0.5 W.
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[1,2,2,2]) -> (%y) {
    %w: f32[2,2,1,1] = const [2, 4, 6, 8]
    %b: f32[2] = const [2, 4]
    %half: f32[1] = const [0.5]
    %t: f32[2,1,1] = const [1, 2]
    %three: f32[] = const [3]
    %c: f32[1,2,2,2] = Conv(%x, %w, %b)
    %m: f32[1,2,2,2] = Mul(%half, %c)
    %a: f32[1,2,2,2] = Add(%m, %t)
    %y: f32[1,2,2,2] = Sub(%a, %three)
  })",
                           fold_batchnorm);
  EXPECT_EQ(node_list(*g), (Nodes{"y = Conv(x, w.bn, w.bn_bias)"}));
  EXPECT_EQ(floats(*g, "w.bn"), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(floats(*g, "w.bn_bias"), (std::vector<float>{-1, 1}));

  // A bias Add alone folds into Conv's bias input; MatMul + Add is left as it is; c - x and a
  // constant varying along a spatial axis are not per-channel affine maps.
  auto h = run_and_compare(R"(graph t opset 17 (%x: f32[1,2,2,2], %v: f32[3,2]) -> (%y, %z, %u) {
    %w: f32[2,2,1,1] = const [2, 4, 6, 8]
    %t: f32[2,1,1] = const [1, 2]
    %wm: f32[2,2] = const [1, 2, 3, 4]
    %bm: f32[2] = const [1, 2]
    %sp: f32[2,1] = const [1, 2]
    %c: f32[1,2,2,2] = Conv(%x, %w)
    %y: f32[1,2,2,2] = Add(%t, %c)
    %m: f32[3,2] = MatMul(%v, %wm)
    %z: f32[3,2] = Add(%m, %bm)
    %c2: f32[1,2,2,2] = Conv(%x, %w)
    %s: f32[1,2,2,2] = Sub(%t, %c2)
    %u: f32[1,2,2,2] = Mul(%s, %sp)
  })",
                           fold_batchnorm);
  EXPECT_EQ(node_list(*h),
            (Nodes{"y = Conv(x, w, w.bn_bias)", "m = MatMul(v, wm)", "z = Add(m, bm)",
                   "c2 = Conv(x, w)", "s = Sub(t, c2)", "u = Mul(s, sp)"}));
  EXPECT_EQ(floats(*h, "w.bn_bias"), (std::vector<float>{1, 2}));
}

TEST(FoldBatchNorm, NotFoldedWhenTheConvOutputHasAnotherUserOrWeightsAreRuntime) {
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[1,1,2,2], %wr: f32[1,1,1,1]) -> (%y, %r, %y2) {
    %w: f32[1,1,1,1] = const [2]
    %s: f32[1] = const [1]
    %B: f32[1] = const [0]
    %m: f32[1] = const [0]
    %v: f32[1] = const [1]
    %c: f32[1,1,2,2] = Conv(%x, %w)
    %y: f32[1,1,2,2] = BatchNormalization(%c, %s, %B, %m, %v)
    %r: f32[1,1,2,2] = Relu(%c)
    %c2: f32[1,1,2,2] = Conv(%x, %wr)
    %y2: f32[1,1,2,2] = BatchNormalization(%c2, %s, %B, %m, %v)
  })");
  EXPECT_FALSE(fold_batchnorm(*g));
}

// ---------------------------------------------------------------------------------------------
// fuse_hard_swish

constexpr const char* kHardSwishExported = R"(graph t opset 17 (%x: f32[1,4,3,3]) -> (%y) {
    %three: f32[] = const [3]
    %zero: f32[] = const [0]
    %six: f32[] = const [6]
    %a: f32[1,4,3,3] = Add(%x, %three)
    %c: f32[1,4,3,3] = Clip(%a, %zero, %six)
    %m: f32[1,4,3,3] = Mul(%x, %c)
    %y: f32[1,4,3,3] = Div(%m, %six)
  })";

TEST(FuseHardSwish, ExportedChainBecomesHardSwish) {
  auto g = run_and_compare(kHardSwishExported, [](Graph& g) { return fuse_hard_swish(g); });
  EXPECT_EQ(node_list(*g), (Nodes{"y = HardSwish(x)"}));
  EXPECT_EQ(producer(*g, "y").name, "Div_0");
  // After simplify the division is a multiplication by 1/6: still matched.
  auto h = run_and_compare(kHardSwishExported, [](Graph& g) {
    simplify(g);
    return fuse_hard_swish(g);
  });
  EXPECT_EQ(node_list(*h), (Nodes{"y = HardSwish(x)"}));
}

TEST(FuseHardSwish, OtherAssociationsAndHardSigmoid) {
  // (x / 6) * clip(x + 3, 0, 6)
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[8]) -> (%y) {
    %three: f32[] = const [3]
    %zero: f32[] = const [0]
    %six: f32[] = const [6]
    %d: f32[8] = Div(%x, %six)
    %a: f32[8] = Add(%three, %x)
    %c: f32[8] = Clip(%a, %zero, %six)
    %y: f32[8] = Mul(%c, %d)
  })",
                           [](Graph& g) { return fuse_hard_swish(g); });
  EXPECT_EQ(node_list(*g), (Nodes{"y = HardSwish(x)"}));

  // x * (clip(x + 3, 0, 6) / 6): HardSigmoid first, then x * HardSigmoid(x) -> HardSwish.
  auto h = run_and_compare(R"(graph t opset 17 (%x: f32[8]) -> (%y, %hs) {
    %three: f32[] = const [3]
    %zero: f32[] = const [0]
    %six: f32[] = const [6]
    %sixth: f32[] = const [0.16666667]
    %a: f32[8] = Add(%x, %three)
    %c: f32[8] = Clip(%a, %zero, %six)
    %q: f32[8] = Mul(%c, %sixth)
    %y: f32[8] = Mul(%x, %q)
    %a2: f32[8] = Add(%x, %three)
    %c2: f32[8] = Clip(%a2, %zero, %six)
    %hs: f32[8] = Div(%c2, %six)
  })",
                           [](Graph& g) { return fuse_hard_swish(g); });
  EXPECT_EQ(node_list(*h), (Nodes{"y = HardSwish(x)", "hs = HardSigmoid(x)"}));
  const Node& hs = producer(*h, "hs");
  EXPECT_FLOAT_EQ(hs.attrs.get_float_or("alpha", 0, "hs"), 1.0f / 6.0f);
  EXPECT_EQ(hs.attrs.get_float_or("beta", 0, "hs"), 0.5f);
}

TEST(FuseHardSwish, NotFusedWithOutsideUsersOtherSlopesOrWhenUnavailable) {
  // The Clip's output is also a graph output; a HardSigmoid with Paddle's slope 0.2 is not
  // x * relu6(x + 3) / 6.
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[8]) -> (%y, %c, %z) {
    %three: f32[] = const [3]
    %zero: f32[] = const [0]
    %six: f32[] = const [6]
    %a: f32[8] = Add(%x, %three)
    %c: f32[8] = Clip(%a, %zero, %six)
    %m: f32[8] = Mul(%x, %c)
    %y: f32[8] = Div(%m, %six)
    %h: f32[8] = HardSigmoid(%x) {alpha=0.2, beta=0.5}
    %z: f32[8] = Mul(%x, %h)
  })");
  EXPECT_FALSE(fuse_hard_swish(*g));
  auto h = parse_ok(kHardSwishExported);
  EXPECT_FALSE(fuse_hard_swish(*h, [](const std::string&) { return false; }));
  EXPECT_EQ(h->nodes().size(), 4u);
}

// ---------------------------------------------------------------------------------------------
// fuse_gelu

TEST(FuseGelu, ErfVariantsBecomeGelu) {
  // (x * (1 + erf(x / sqrt2))) * 0.5
  auto a = run_and_compare(R"(graph t opset 17 (%x: f32[2,16]) -> (%y) {
    %sqrt2: f32[] = const [1.4142135]
    %one: f32[] = const [1]
    %half: f32[] = const [0.5]
    %d: f32[2,16] = Div(%x, %sqrt2)
    %e: f32[2,16] = Erf(%d)
    %p: f32[2,16] = Add(%e, %one)
    %m: f32[2,16] = Mul(%x, %p)
    %y: f32[2,16] = Mul(%m, %half)
  })",
                           [](Graph& g) { return fuse_gelu(g); }, 1e-6);
  EXPECT_EQ(node_list(*a), (Nodes{"y = Gelu(x)"}));
  EXPECT_FALSE(producer(*a, "y").attrs.has("approximate"));
  // x * ((1 + erf(x * 1/sqrt2)) * 0.5)
  auto b = run_and_compare(R"(graph t opset 17 (%x: f32[2,16]) -> (%y) {
    %isqrt2: f32[] = const [0.70710677]
    %one: f32[] = const [1]
    %half: f32[] = const [0.5]
    %d: f32[2,16] = Mul(%x, %isqrt2)
    %e: f32[2,16] = Erf(%d)
    %p: f32[2,16] = Add(%one, %e)
    %h: f32[2,16] = Mul(%p, %half)
    %y: f32[2,16] = Mul(%x, %h)
  })",
                           [](Graph& g) { return fuse_gelu(g); }, 1e-6);
  EXPECT_EQ(node_list(*b), (Nodes{"y = Gelu(x)"}));
  // (x * 0.5) * (1 + erf(x / sqrt2)), the 0.5 as a division by 2
  auto c = run_and_compare(R"(graph t opset 17 (%x: f32[2,16]) -> (%y) {
    %sqrt2: f32[] = const [1.4142135]
    %one: f32[] = const [1]
    %two: f32[] = const [2]
    %hx: f32[2,16] = Div(%x, %two)
    %d: f32[2,16] = Div(%x, %sqrt2)
    %e: f32[2,16] = Erf(%d)
    %p: f32[2,16] = Add(%e, %one)
    %y: f32[2,16] = Mul(%hx, %p)
  })",
                           [](Graph& g) { return fuse_gelu(g); }, 1e-6);
  EXPECT_EQ(node_list(*c), (Nodes{"y = Gelu(x)"}));
}

TEST(FuseGelu, TanhApproximationBecomesGeluTanh) {
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[4,8]) -> (%y) {
    %three: f32[] = const [3]
    %k: f32[] = const [0.044715]
    %s: f32[] = const [0.7978846]
    %one: f32[] = const [1]
    %half: f32[] = const [0.5]
    %c: f32[4,8] = Pow(%x, %three)
    %kc: f32[4,8] = Mul(%c, %k)
    %u: f32[4,8] = Add(%x, %kc)
    %t: f32[4,8] = Mul(%u, %s)
    %th: f32[4,8] = Tanh(%t)
    %p: f32[4,8] = Add(%th, %one)
    %m: f32[4,8] = Mul(%x, %p)
    %y: f32[4,8] = Mul(%m, %half)
  })",
                           [](Graph& g) { return fuse_gelu(g); }, 1e-6);
  EXPECT_EQ(node_list(*g), (Nodes{"y = Gelu(x)"}));
  EXPECT_EQ(producer(*g, "y").attrs.get_string_or("approximate", "", "y"), "tanh");
}

TEST(FuseGelu, NotFusedWhenAnIntermediateIsUsedElsewhere) {
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[4]) -> (%y, %e) {
    %sqrt2: f32[] = const [1.4142135]
    %one: f32[] = const [1]
    %half: f32[] = const [0.5]
    %d: f32[4] = Div(%x, %sqrt2)
    %e: f32[4] = Erf(%d)
    %p: f32[4] = Add(%e, %one)
    %m: f32[4] = Mul(%x, %p)
    %y: f32[4] = Mul(%m, %half)
  })");
  EXPECT_FALSE(fuse_gelu(*g));
}

// ---------------------------------------------------------------------------------------------
// fuse_layer_norm

constexpr const char* kLayerNorm = R"(graph t opset 17 (%x: f32[1,5,6]) -> (%y) {
    %two: f32[] = const [2]
    %eps: f32[] = const [1e-05]
    %gamma: f32[6] = const [1, 2, 3, 0.5, -1, 1.5]
    %beta: f32[6] = const [0, 0.1, -0.2, 0.3, 1, -1]
    %m: f32[1,5,1] = ReduceMean(%x) {axes=[-1]}
    %d: f32[1,5,6] = Sub(%x, %m)
    %p: f32[1,5,6] = Pow(%d, %two)
    %v: f32[1,5,1] = ReduceMean(%p) {axes=[-1]}
    %e: f32[1,5,1] = Add(%v, %eps)
    %s: f32[1,5,1] = Sqrt(%e)
    %n: f32[1,5,6] = Div(%d, %s)
    %g: f32[1,5,6] = Mul(%n, %gamma)
    %y: f32[1,5,6] = Add(%g, %beta)
  })";

TEST(FuseLayerNorm, DecomposedFormWithGammaAndBetaBecomesLayerNormalization) {
  auto g = run_and_compare(
      kLayerNorm, [](Graph& g) { return fuse_layer_norm(g); }, 1e-5);
  EXPECT_EQ(node_list(*g), (Nodes{"y = LayerNormalization(x, gamma, beta)"}));
  const Node& ln = producer(*g, "y");
  EXPECT_EQ(ln.attrs.get_int_or("axis", 0, "y"), 2);
  EXPECT_FLOAT_EQ(ln.attrs.get_float_or("epsilon", 0, "y"), 1e-5f);
}

TEST(FuseLayerNorm, SquareAsMulReciprocalAndNoAffineOverTwoAxes) {
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[2,3,4]) -> (%y) {
    %eps: f32[] = const [0.001]
    %m: f32[2,1,1] = ReduceMean(%x) {axes=[1, 2]}
    %d: f32[2,3,4] = Sub(%x, %m)
    %p: f32[2,3,4] = Mul(%d, %d)
    %v: f32[2,1,1] = ReduceMean(%p) {axes=[-2, -1]}
    %e: f32[2,1,1] = Add(%eps, %v)
    %s: f32[2,1,1] = Sqrt(%e)
    %r: f32[2,1,1] = Reciprocal(%s)
    %y: f32[2,3,4] = Mul(%r, %d)
  })",
                           [](Graph& g) { return fuse_layer_norm(g); }, 1e-5);
  EXPECT_EQ(node_list(*g), (Nodes{"y = LayerNormalization(x, y.ln_scale)"}));
  EXPECT_EQ(producer(*g, "y").attrs.get_int_or("axis", 0, "y"), 1);
  EXPECT_EQ(floats(*g, "y.ln_scale"), std::vector<float>(12, 1.0f));
}

TEST(FuseLayerNorm, NotFusedOverLeadingAxesOrWithOutsideUsers) {
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[2,3]) -> (%y) {
    %two: f32[] = const [2]
    %eps: f32[] = const [1e-05]
    %m: f32[1,3] = ReduceMean(%x) {axes=[0]}
    %d: f32[2,3] = Sub(%x, %m)
    %p: f32[2,3] = Pow(%d, %two)
    %v: f32[1,3] = ReduceMean(%p) {axes=[0]}
    %e: f32[1,3] = Add(%v, %eps)
    %s: f32[1,3] = Sqrt(%e)
    %y: f32[2,3] = Div(%d, %s)
  })");
  EXPECT_FALSE(fuse_layer_norm(*g));
  std::string text = kLayerNorm;
  text.replace(text.find("-> (%y)"), 7, "-> (%y, %v)");
  auto h = parse_ok(text);
  EXPECT_FALSE(fuse_layer_norm(*h));
}

// ---------------------------------------------------------------------------------------------
// fuse_silu

TEST(FuseSilu, XTimesSigmoidXBecomesSilu) {
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[3,5]) -> (%y) {
    %s: f32[3,5] = Sigmoid(%x)
    %y: f32[3,5] = Mul(%s, %x)
  })",
                           [](Graph& g) { return fuse_silu(g); }, 1e-6);
  EXPECT_EQ(node_list(*g), (Nodes{"y = Silu(x)"}));
  // Silu's reference kernel at a few points: x * sigmoid(x).
  Tensor x = Tensor::from_floats({3}, {-2.0f, 0.0f, 1.0f});
  const auto out = ops::run_reference(*parse_ok(R"(graph t opset 17 (%x: f32[3]) -> (%y) {
    %y: f32[3] = Silu(%x)
  })"),
                                      {{"x", x}});
  const float* y = out.at("y").data<float>();
  EXPECT_FLOAT_EQ(y[0], -2.0f / (1.0f + std::exp(2.0f)));
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_FLOAT_EQ(y[2], 1.0f / (1.0f + std::exp(-1.0f)));
}

TEST(FuseSilu, NotFusedWhenTheSigmoidHasAnotherUser) {
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[4]) -> (%y, %s) {
    %s: f32[4] = Sigmoid(%x)
    %y: f32[4] = Mul(%x, %s)
  })");
  EXPECT_FALSE(fuse_silu(*g));
  auto h = parse_ok(R"(graph t opset 17 (%x: f32[4], %z: f32[4]) -> (%y) {
    %s: f32[4] = Sigmoid(%z)
    %y: f32[4] = Mul(%x, %s)
  })");
  EXPECT_FALSE(fuse_silu(*h));
}

// ---------------------------------------------------------------------------------------------
// cse, dce

TEST(Cse, DuplicateConstantsAndNodesAreMerged) {
  auto g = run_and_compare(R"(graph t opset 17 (%x: f32[4]) -> (%y, %z) {
    %c3a: f32[] = const [3]
    %c3b: f32[] = const [3]
    %a: f32[4] = Add(%x, %c3a)
    %b: f32[4] = Add(%x, %c3b)
    %sa: f32[4] = Sigmoid(%a)
    %sb: f32[4] = Sigmoid(%b)
    %y: f32[4] = Mul(%sa, %sb)
    %la: f32[4] = LeakyRelu(%x) {alpha=0.1}
    %lb: f32[4] = LeakyRelu(%x) {alpha=0.2}
    %z: f32[4] = Add(%la, %lb)
  })",
                           cse, 0.0);
  EXPECT_EQ(node_list(*g), (Nodes{"a = Add(x, c3a)", "sa = Sigmoid(a)", "y = Mul(sa, sa)",
                                  "la = LeakyRelu(x)", "lb = LeakyRelu(x)", "z = Add(la, lb)"}));
}

TEST(Cse, ADuplicateThatIsAGraphOutputIsKept) {
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[4]) -> (%a, %b) {
    %a: f32[4] = Relu(%x)
    %b: f32[4] = Relu(%x)
  })");
  EXPECT_FALSE(cse(*g));
  EXPECT_EQ(g->nodes().size(), 2u);
}

TEST(Dce, DeadNodesAndUnusedConstantsAreRemoved) {
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[4], %unused_in: f32[2]) -> (%y) {
    %c: f32[] = const [2]
    %unused: f32[] = const [5]
    %y: f32[4] = Mul(%x, %c)
    %dead: f32[4] = Sigmoid(%x)
    %dead2: f32[4] = Add(%dead, %unused)
  })");
  EXPECT_TRUE(dce(*g));
  verify_graph(*g);
  EXPECT_EQ(node_list(*g), (Nodes{"y = Mul(x, c)"}));
  EXPECT_EQ(g->find_value("unused"), nullptr);
  EXPECT_NE(g->find_value("unused_in"), nullptr);  // graph inputs stay
  EXPECT_FALSE(dce(*g));
}

// ---------------------------------------------------------------------------------------------
// fuse_kernels

/// "node name: group" for every node with a fusion_group, in node order.
std::vector<std::string> groups(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes())
    if (n->attrs.has(kFusionGroupAttr))
      out.push_back(n->outputs[0]->name + ":" +
                    std::to_string(n->attrs.get_int(kFusionGroupAttr, n->name)));
  return out;
}

TEST(FuseKernels, ConvBiasReluIsOneGroup) {
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[1,2,4,4]) -> (%y) {
    %w: f32[3,2,3,3] = const dense
    %b: f32[3,1,1] = const [1, 2, 3]
    %c: f32[1,3,4,4] = Conv(%x, %w) {pads=[1, 1, 1, 1]}
    %a: f32[1,3,4,4] = Add(%c, %b)
    %y: f32[1,3,4,4] = Relu(%a)
  })");
  EXPECT_TRUE(fuse_kernels(*g));
  EXPECT_EQ(groups(*g), (std::vector<std::string>{"c:0", "a:0", "y:0"}));
  // Running again changes nothing (stale attributes are recomputed, not accumulated).
  EXPECT_FALSE(fuse_kernels(*g));
  EXPECT_EQ(groups(*g), (std::vector<std::string>{"c:0", "a:0", "y:0"}));
}

TEST(FuseKernels, SqueezeExcitationBlock) {
  // The block's input r feeds both the pooling branch and the gating Mul, so {c, r} closes at r;
  // GlobalAveragePool is a reduction followed by a contraction (alone); the gate's Mul has the
  // block's full shape, not the 1x1 conv's, so it starts its own group with the Relu after it,
  // reading r and the broadcast gate h from outside.
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[1,4,6,6]) -> (%y) {
    %w0: f32[4,4,1,1] = const dense
    %w1: f32[2,4,1,1] = const dense
    %b1: f32[2] = const [0.1, -0.1]
    %w2: f32[4,2,1,1] = const dense
    %b2: f32[4] = const [0, 1, 2, 3]
    %c: f32[1,4,6,6] = Conv(%x, %w0)
    %r: f32[1,4,6,6] = Relu(%c)
    %g: f32[1,4,1,1] = GlobalAveragePool(%r)
    %c1: f32[1,2,1,1] = Conv(%g, %w1, %b1)
    %r1: f32[1,2,1,1] = Relu(%c1)
    %c2: f32[1,4,1,1] = Conv(%r1, %w2, %b2)
    %h: f32[1,4,1,1] = HardSigmoid(%c2) {alpha=0.2, beta=0.5}
    %m: f32[1,4,6,6] = Mul(%r, %h)
    %y: f32[1,4,6,6] = Relu(%m)
  })");
  EXPECT_TRUE(fuse_kernels(*g));
  EXPECT_EQ(groups(*g),
            (std::vector<std::string>{"c:0", "r:0", "c1:1", "r1:1", "c2:2", "h:2", "m:3", "y:3"}));
}

TEST(FuseKernels, UnfusedHardSwishChainJoinsTheConv) {
  // The conv output feeds both the Add and the Mul inside the group: all its users are members.
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[1,2,4,4]) -> (%y) {
    %w: f32[2,2,1,1] = const [1, 2, 3, 4]
    %three: f32[] = const [3]
    %zero: f32[] = const [0]
    %six: f32[] = const [6]
    %c: f32[1,2,4,4] = Conv(%x, %w)
    %a: f32[1,2,4,4] = Add(%c, %three)
    %k: f32[1,2,4,4] = Clip(%a, %zero, %six)
    %m: f32[1,2,4,4] = Mul(%c, %k)
    %y: f32[1,2,4,4] = Div(%m, %six)
  })");
  EXPECT_TRUE(fuse_kernels(*g));
  EXPECT_EQ(groups(*g), (std::vector<std::string>{"c:0", "a:0", "k:0", "m:0", "y:0"}));
}

TEST(FuseKernels, AValueWithAnOutsideUserIsNotFused) {
  // c is read by the MaxPool (not fusable), so no group may contain c together with a consumer of
  // c: the conv stays alone. The Relu and the Add form a group (mp comes from before the Relu).
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[1,1,4,4]) -> (%y) {
    %w: f32[1,1,1,1] = const [2]
    %c: f32[1,1,4,4] = Conv(%x, %w)
    %mp: f32[1,1,4,4] = MaxPool(%c) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}
    %r: f32[1,1,4,4] = Relu(%c)
    %y: f32[1,1,4,4] = Add(%r, %mp)
  })");
  EXPECT_TRUE(fuse_kernels(*g));
  EXPECT_EQ(groups(*g), (std::vector<std::string>{"r:0", "y:0"}));

  // A graph output cannot be an intermediate: c stays alone, the Relu+Tanh group is separate.
  auto h = parse_ok(R"(graph t opset 17 (%x: f32[1,1,4,4]) -> (%t, %c) {
    %w: f32[1,1,1,1] = const [2]
    %c: f32[1,1,4,4] = Conv(%x, %w)
    %r: f32[1,1,4,4] = Relu(%c)
    %t: f32[1,1,4,4] = Tanh(%r)
  })");
  EXPECT_TRUE(fuse_kernels(*h));
  EXPECT_EQ(groups(*h), (std::vector<std::string>{"r:0", "t:0"}));
}

TEST(FuseKernels, ContractionOnlyFirstReductionsOnlyWithoutContraction) {
  auto g = parse_ok(R"(graph t opset 17 (%x: f32[4,8], %z: f32[4,8]) -> (%y, %s2) {
    %w: f32[8,8] = const dense
    %r: f32[4,8] = Relu(%x)
    %m: f32[4,8] = MatMul(%r, %w)
    %s: f32[4,8] = Softmax(%m) {axis=-1}
    %y: f32[4,8] = Sigmoid(%s)
    %a: f32[4,8] = Add(%z, %z)
    %s1: f32[4,8] = Softmax(%a) {axis=1}
    %e: f32[4,1] = ReduceMean(%s1) {axes=[1]}
    %s2: f32[4,8] = Mul(%s1, %e)
  })");
  EXPECT_TRUE(fuse_kernels(*g));
  // Relu -> MatMul: a contraction joins no group it does not start; MatMul -> Softmax: no
  // reductions after a contraction; Softmax -> Sigmoid and Add -> Softmax -> ReduceMean -> Mul
  // are groups without a contraction.
  EXPECT_EQ(groups(*g), (std::vector<std::string>{"s:0", "y:0", "a:1", "s1:1", "e:1", "s2:1"}));
}

TEST(FuseKernels, QuantizeAndDequantizeJoinVectorGroups) {
  // A residual block after fold_qdq: the Add reads the DQ of the skip branch (xq, first in node
  // order) and of the conv branch (per channel, reading mp: the MaxPool stands for the branch's
  // last QLinearConv, computed after the skip DQ). Both DQs, read only by the Add, join it: the
  // group seeded at the skip DQ pulls the branch's DQ in with the Add; Relu and the requantising
  // Q follow. y is a graph output, so the group closes there.
  auto g = parse_ok(R"(graph t opset 13 (%xq: i8[1,4,3,5], %bq: i8[1,4,3,5]) -> (%y) {
    %sa: f32[] = const [0.25]
    %za: i8[] = const [3]
    %sb: f32[4] = const [0.5, 0.25, 0.125, 1]
    %zb: i8[4] = const [0, -2, 5, 1]
    %sy: f32[] = const [0.5]
    %zy: i8[] = const [-128]
    %skip: f32[1,4,3,5] = DequantizeLinear(%xq, %sa, %za)
    %mp: i8[1,4,3,5] = MaxPool(%bq) {kernel_shape=[1, 1]}
    %br: f32[1,4,3,5] = DequantizeLinear(%mp, %sb, %zb) {axis=1}
    %s: f32[1,4,3,5] = Add(%br, %skip)
    %r: f32[1,4,3,5] = Relu(%s)
    %y: i8[1,4,3,5] = QuantizeLinear(%r, %sy, %zy)
  })");
  EXPECT_TRUE(fuse_kernels(*g));
  EXPECT_EQ(groups(*g), (std::vector<std::string>{"skip:0", "br:0", "s:0", "r:0", "y:0"}));

  // When the skip DQ's output has another reader it stays outside: the group starts at the
  // branch's DQ and reads the skip value from GM.
  auto h = parse_ok(R"(graph t opset 13 (%xq: i8[1,4,3,5], %bq: i8[1,4,3,5]) -> (%y, %skip) {
    %sa: f32[] = const [0.25]
    %za: i8[] = const [3]
    %sy: f32[] = const [0.5]
    %zy: i8[] = const [-128]
    %skip: f32[1,4,3,5] = DequantizeLinear(%xq, %sa, %za)
    %br: f32[1,4,3,5] = DequantizeLinear(%bq, %sa, %za)
    %s: f32[1,4,3,5] = Add(%br, %skip)
    %y: i8[1,4,3,5] = QuantizeLinear(%s, %sy, %zy)
  })");
  EXPECT_TRUE(fuse_kernels(*h));
  EXPECT_EQ(groups(*h), (std::vector<std::string>{"br:0", "s:0", "y:0"}));

  // Q -> DQ inside a group (the int8 value stays on chip) when only the DQ reads it; a Q whose
  // output is also read outside closes its group; a Q with a runtime scale is no elementwise op
  // of the NPU (it stays a kernel of its own, and the Relu before it alone).
  auto k = parse_ok(R"(graph t opset 13 (%f: f32[2,8], %rs: f32[]) -> (%t, %q2, %u, %qn) {
    %s1: f32[] = const [0.125]
    %z1: u8[] = const [128]
    %h: f32[2,8] = Sigmoid(%f)
    %q: u8[2,8] = QuantizeLinear(%h, %s1, %z1)
    %d: f32[2,8] = DequantizeLinear(%q, %s1, %z1)
    %t: f32[2,8] = Tanh(%d)
    %h2: f32[2,8] = Exp(%f)
    %q2: u8[2,8] = QuantizeLinear(%h2, %s1, %z1)
    %d2: f32[2,8] = DequantizeLinear(%q2, %s1, %z1)
    %u: f32[2,8] = Neg(%d2)
    %n: f32[2,8] = Relu(%f)
    %qn: u8[2,8] = QuantizeLinear(%n, %rs, %z1)
  })");
  EXPECT_TRUE(fuse_kernels(*k));
  EXPECT_EQ(groups(*k),
            (std::vector<std::string>{"h:0", "q:0", "d:0", "t:0", "h2:1", "q2:1", "d2:2", "u:2"}));
}

}  // namespace
}  // namespace tessel::testing
