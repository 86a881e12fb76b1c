// Unit tests of MatMul, Gemm, Einsum, the normalisations and the reductions (hand-computed).
#include <cmath>

#include "tests/ops/op_test_util.h"

namespace tessel::testing_ops {
namespace {

// A = [[1,2,3],[4,5,6]], B = [[7,8],[9,10],[11,12]]: A B = [[58,64],[139,154]]
// (58 = 7 + 18 + 33, 64 = 8 + 20 + 36, 139 = 28 + 45 + 66, 154 = 32 + 50 + 72).
const std::vector<float> kA = {1, 2, 3, 4, 5, 6};
const std::vector<float> kB = {7, 8, 9, 10, 11, 12};

TEST(MatMul, TwoDAndOneDOperands) {
  expect_tensor(run1("MatMul", {in(f32({2, 3}, kA)), in(f32({3, 2}, kB))}), DType::f32, {2, 2},
                {58, 64, 139, 154});
  // [3] @ [3] -> scalar 1*4 + 2*5 + 3*6 = 32.
  expect_tensor(run1("MatMul", {in(f32({3}, {1, 2, 3})), in(f32({3}, {4, 5, 6}))}), DType::f32, {},
                {32});
  // [3] @ [3,2] -> [2] (the first row of A B); [2,3] @ [3] -> row sums of A.
  expect_tensor(run1("MatMul", {in(f32({3}, {1, 2, 3})), in(f32({3, 2}, kB))}), DType::f32, {2},
                {58, 64});
  expect_tensor(run1("MatMul", {in(f32({2, 3}, kA)), in(f32({3}, {1, 1, 1}))}), DType::f32, {2},
                {6, 15});
  // int32: [1,2] @ [3;4] = 11.
  expect_tensor(run1("MatMul", {in(typed(DType::i32, {1, 2}, {1, 2})),
                                in(typed(DType::i32, {2, 1}, {3, 4}))}),
                DType::i32, {1, 1}, {11});
}

TEST(MatMul, BatchDimsBroadcast) {
  // A [2,1,1,2] (rows [1,2] and [3,4]) @ B [3,2,1] (columns [1,0], [0,1], [1,1]) -> [2,3,1,1]:
  // out[i,j] = a_i . b_j = [1, 2, 3] for i = 0 and [3, 4, 7] for i = 1.
  Tensor y =
      run1("MatMul", {in(f32({2, 1, 1, 2}, {1, 2, 3, 4})), in(f32({3, 2, 1}, {1, 0, 0, 1, 1, 1}))});
  expect_tensor(y, DType::f32, {2, 3, 1, 1}, {1, 2, 3, 3, 4, 7});
  OneNode bad("MatMul", {in(f32({2, 3}, kA)), in(f32({2, 3}, kA))}, {}, 1, "mm");
  const std::string msg = error_of([&] { bad.infer(); });
  EXPECT_NE(msg.find("MatMul 'mm'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inner dims"), std::string::npos) << msg;
}

TEST(Gemm, TransposesScalesAndBroadcastsC) {
  // A stored [3,2] with transA=1 and B stored [2,3] with transB=1 give op(A) = kA, op(B) = kB:
  // alpha 0.5 * [[58,64],[139,154]] + beta 2 * C[1,2] broadcast over rows = [[31,36],[71.5,81]].
  Tensor y = run1(
      "Gemm",
      {in(f32({3, 2}, {1, 4, 2, 5, 3, 6})), in(f32({2, 3}, {7, 9, 11, 8, 10, 12})),
       in(f32({2}, {1, 2}))},
      attrs({{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}));
  expect_tensor(y, DType::f32, {2, 2}, {31, 36, 71.5, 81});
  // No C.
  expect_tensor(run1("Gemm", {in(f32({2, 3}, kA)), in(f32({3, 2}, kB))}), DType::f32, {2, 2},
                {58, 64, 139, 154});
  OneNode bad("Gemm", {in(f32({2, 3}, kA)), in(f32({3, 2}, kB)), in(f32({3}, {1, 2, 3}))});
  EXPECT_NE(error_of([&] { bad.infer(); }).find("does not broadcast"), std::string::npos);
}

TEST(Einsum, ExplicitImplicitDiagonalAndEllipsis) {
  auto eq = [](const char* e) { return attrs({{"equation", std::string(e)}}); };
  expect_tensor(run1("Einsum", {in(f32({2, 3}, kA)), in(f32({3, 2}, kB))}, eq("ij,jk->ik")),
                DType::f32, {2, 2}, {58, 64, 139, 154});
  // Implicit output: the letters appearing once, alphabetically (i, k).
  expect_tensor(run1("Einsum", {in(f32({2, 3}, kA)), in(f32({3, 2}, kB))}, eq("ij,jk")), DType::f32,
                {2, 2}, {58, 64, 139, 154});
  // Diagonal of [[1,2],[3,4]] and the full sum.
  const Tensor m = f32({2, 2}, {1, 2, 3, 4});
  expect_tensor(run1("Einsum", {in(m)}, eq("ii->i")), DType::f32, {2}, {1, 4});
  expect_tensor(run1("Einsum", {in(m)}, eq("ij->")), DType::f32, {}, {10});
  // Inner product with an implicit (empty) output.
  expect_tensor(run1("Einsum", {in(f32({3}, {1, 2, 3})), in(f32({3}, {4, 5, 6}))}, eq("i,i")),
                DType::f32, {}, {32});
  // Ellipsis: batched transpose of [2,1,2].
  expect_tensor(run1("Einsum", {in(f32({2, 1, 2}, {1, 2, 3, 4}))}, eq("...ij->...ji")), DType::f32,
                {2, 2, 1}, {1, 2, 3, 4});
  OneNode bad("Einsum", {in(f32({2, 3}, kA)), in(f32({2, 2}, {1, 2, 3, 4}))}, eq("ij,jk->ik"));
  EXPECT_NE(error_of([&] { bad.infer(); }).find("sizes"), std::string::npos);
}

TEST(Norm, BatchNormalizationInference) {
  // Channel 0: (x - 1) / sqrt(4) * 1 + 0 on [1,2] = [0, 0.5];
  // channel 1: (x - 3) / sqrt(1) * 2 + 1 on [3,5] = [1, 5]. epsilon = 0.
  Tensor y = run1("BatchNormalization",
                  {in(f32({1, 2, 1, 2}, {1, 2, 3, 5})), in(f32({2}, {1, 2})), in(f32({2}, {0, 1})),
                   in(f32({2}, {1, 3})), in(f32({2}, {4, 1}))},
                  attrs({{"epsilon", 0.0f}}));
  expect_tensor(y, DType::f32, {1, 2, 1, 2}, {0, 0.5, 1, 5});
  OneNode t("BatchNormalization",
            {in(f32({1, 2}, {1, 2})), in(f32({2}, {1, 1})), in(f32({2}, {0, 0})),
             in(f32({2}, {0, 0})), in(f32({2}, {1, 1}))},
            attrs({{"training_mode", int64_t{1}}}));
  EXPECT_TRUE(throws_unsupported([&] { t.infer(); }));
  OneNode bad("BatchNormalization",
              {in(f32({1, 2}, {1, 2})), in(f32({3}, {1, 1, 1})), in(f32({2}, {0, 0})),
               in(f32({2}, {0, 0})), in(f32({2}, {1, 1}))});
  EXPECT_NE(error_of([&] { bad.infer(); }).find("scale"), std::string::npos);
}

TEST(Norm, InstanceAndLayerNormalization) {
  // Instance: x = [1,3]: mean 2, var 1 -> [-1, 1] (epsilon 1e-5 changes it by 5e-6), * 2 + 0.5.
  expect_tensor(run1("InstanceNormalization",
                     {in(f32({1, 1, 2}, {1, 3})), in(f32({1}, {2})), in(f32({1}, {0.5f}))}),
                DType::f32, {1, 1, 2}, {-1.5, 2.5}, 1e-4);
  // Layer over the last axis of [[1,3],[2,2]]: row 0 mean 2 var 1 -> [-1, 1]; row 1 mean 2 var 0
  // -> [0, 0]; then * Scale [1,1] + B [0, 10]. Mean = [2, 2]; InvStdDev = 1/sqrt(var + 1e-5).
  OneNode n("LayerNormalization",
            {in(f32({2, 2}, {1, 3, 2, 2})), in(f32({2}, {1, 1})), in(f32({2}, {0, 10}))}, {}, 3);
  auto outs = n.run();
  expect_tensor(outs[0], DType::f32, {2, 2}, {-1, 11, 0, 10}, 1e-4);
  expect_tensor(outs[1], DType::f32, {2, 1}, {2, 2});
  expect_tensor(outs[2], DType::f32, {2, 1}, {1 / std::sqrt(1 + 1e-5), 1 / std::sqrt(1e-5)}, 1e-3);
}

TEST(Reduce, AxesKeepdimsAndCompileTimeAxes) {
  const Tensor x = f32({2, 3}, kA);  // [[1,2,3],[4,5,6]]
  expect_tensor(run1("ReduceSum", {in(x), cst(i64({1}, {1}))}), DType::f32, {2, 1}, {6, 15});
  // No axes: all, keepdims -> [1,1]; with noop_with_empty_axes=1: the identity.
  expect_tensor(run1("ReduceSum", {in(x)}), DType::f32, {1, 1}, {21});
  expect_tensor(run1("ReduceSum", {in(x)}, attrs({{"noop_with_empty_axes", int64_t{1}}})),
                DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  // Axes only known at run time: the shape rule cannot tell the output rank.
  OneNode rt("ReduceSum", {in(x), in(i64({1}, {1}))}, {}, 1, "rs");
  try {
    rt.infer();
    FAIL() << "expected tessel::Unsupported";
  } catch (const Unsupported& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("ReduceSum 'rs'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'axes'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("compile time"), std::string::npos) << msg;
  }
  expect_tensor(run1("ReduceMean", {in(x)},
                     attrs({{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}})),
                DType::f32, {3}, {2.5, 3.5, 4.5});
  expect_tensor(run1("ReduceMax", {in(x)}, attrs({{"axes", std::vector<int64_t>{-1}}})), DType::f32,
                {2, 1}, {3, 6});
  expect_tensor(run1("ReduceMin", {in(x)}, attrs({{"axes", std::vector<int64_t>{0}}})), DType::f32,
                {1, 3}, {1, 2, 3});
  expect_tensor(run1("ReduceProd", {in(x)}, attrs({{"keepdims", int64_t{0}}})), DType::f32, {},
                {720});
  OneNode dup("ReduceMean", {in(x)}, attrs({{"axes", std::vector<int64_t>{1, -1}}}));
  EXPECT_NE(error_of([&] { dup.infer(); }).find("twice"), std::string::npos);
}

TEST(Reduce, NormsAndLogSums) {
  const Tensor v = f32({2}, {3, -4});
  expect_tensor(run1("ReduceL1", {in(v)}), DType::f32, {1}, {7});
  expect_tensor(run1("ReduceL2", {in(v)}), DType::f32, {1}, {5});
  expect_tensor(run1("ReduceSumSquare", {in(v)}), DType::f32, {1}, {25});
  // log(1 + (e - 1)) = 1.
  expect_tensor(run1("ReduceLogSum", {in(f32({2}, {1, static_cast<float>(M_E - 1)}))}), DType::f32,
                {1}, {1}, 1e-6);
  // log(e^1000 + e^1000) = 1000 + ln 2, without overflow.
  expect_tensor(run1("ReduceLogSumExp", {in(f32({2}, {1000, 1000}))}), DType::f32, {1},
                {1000 + M_LN2}, 1e-3);
  // Integer ReduceSum stays integer.
  expect_tensor(run1("ReduceSum", {in(i64({3}, {1, 2, 3}))}), DType::i64, {1}, {6});
}

TEST(Reduce, ArgMaxArgMin) {
  const Tensor x = f32({2, 3}, {1, 3, 3, 2, 0, 2});
  expect_tensor(run1("ArgMax", {in(x)}, attrs({{"axis", int64_t{1}}})), DType::i64, {2, 1}, {1, 0});
  expect_tensor(
      run1("ArgMax", {in(x)}, attrs({{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}})),
      DType::i64, {2, 1}, {2, 2});
  expect_tensor(run1("ArgMin", {in(x)}, attrs({{"axis", int64_t{0}}, {"keepdims", int64_t{0}}})),
                DType::i64, {3}, {0, 1, 1});
}

TEST(Reduce, SoftmaxFamily) {
  // softmax([0, ln 3]) = [1/4, 3/4].
  expect_tensor(run1("Softmax", {in(f32({2}, {0, static_cast<float>(std::log(3.0))}))}), DType::f32,
                {2}, {0.25, 0.75});
  // Along axis 0 of [[0, 1], [0, 1]]: every column is [0.5, 0.5].
  expect_tensor(run1("Softmax", {in(f32({2, 2}, {0, 1, 0, 1}))}, attrs({{"axis", int64_t{0}}})),
                DType::f32, {2, 2}, {0.5, 0.5, 0.5, 0.5});
  // Large inputs are stable: log_softmax([1000, 1000]) = [-ln 2, -ln 2].
  expect_tensor(run1("LogSoftmax", {in(f32({2}, {1000, 1000}))}), DType::f32, {2},
                {-M_LN2, -M_LN2});
  // Hardmax: one at the first maximum.
  expect_tensor(run1("Hardmax", {in(f32({3}, {1, 3, 3}))}), DType::f32, {3}, {0, 1, 0});
}

TEST(Reduce, CumSumAndTopK) {
  const Tensor x = f32({3}, {1, 2, 3});
  const Tensor axis = i64({}, {0});
  expect_tensor(run1("CumSum", {in(x), in(axis)}), DType::f32, {3}, {1, 3, 6});
  expect_tensor(run1("CumSum", {in(x), in(axis)}, attrs({{"exclusive", int64_t{1}}})), DType::f32,
                {3}, {0, 1, 3});
  expect_tensor(run1("CumSum", {in(x), in(axis)}, attrs({{"reverse", int64_t{1}}})), DType::f32,
                {3}, {6, 5, 3});
  expect_tensor(run1("CumSum", {in(x), in(axis)},
                     attrs({{"reverse", int64_t{1}}, {"exclusive", int64_t{1}}})),
                DType::f32, {3}, {5, 3, 0});
  // TopK k=3 of [3,1,4,1,5]: values [5,4,3] at [4,2,0]; smallest k=2: [1,1] at [1,3] (ties keep
  // the lower index first).
  OneNode t("TopK", {in(f32({5}, {3, 1, 4, 1, 5})), cst(i64({1}, {3}))}, {}, 2);
  auto outs = t.run();
  expect_tensor(outs[0], DType::f32, {3}, {5, 4, 3});
  expect_tensor(outs[1], DType::i64, {3}, {4, 2, 0});
  OneNode s("TopK", {in(f32({5}, {3, 1, 4, 1, 5})), cst(i64({1}, {2}))},
            attrs({{"largest", int64_t{0}}}), 2);
  auto so = s.run();
  expect_tensor(so[0], DType::f32, {2}, {1, 1});
  expect_tensor(so[1], DType::i64, {2}, {1, 3});
  OneNode big("TopK", {in(f32({2}, {1, 2})), cst(i64({1}, {3}))}, {}, 2);
  EXPECT_NE(error_of([&] { big.infer(); }).find("k=3"), std::string::npos);
}

}  // namespace
}  // namespace tessel::testing_ops
