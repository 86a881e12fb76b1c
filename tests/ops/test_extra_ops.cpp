// Unit tests of the extra op families: losses, quantization, recurrent cells, sampling, signal,
// misc (windows, Det, ReverseSequence, MaxUnpool, TfIdfVectorizer) and the data-dependent ops.
// Expected values are derived by hand in the comments.
#include <cmath>

#include "tests/ops/op_test_util.h"

namespace tessel::testing_ops {
namespace {

TEST(Loss, NegativeLogLikelihoodReductions) {
  // logp [[-1,-2,-3],[-4,-5,-6]], target [2, 0], weight [1, 1, 2]:
  // loss0 = 3 * 2 = 6, loss1 = 4 * 1 = 4; sum 10; mean 10 / (2 + 1).
  const Tensor logp = f32({2, 3}, {-1, -2, -3, -4, -5, -6});
  const Tensor target = i64({2}, {2, 0});
  const Tensor weight = f32({3}, {1, 1, 2});
  auto red = [](const char* r) { return attrs({{"reduction", std::string(r)}}); };
  expect_tensor(run1("NegativeLogLikelihoodLoss", {in(logp), in(target), in(weight)}, red("none")),
                DType::f32, {2}, {6, 4});
  expect_tensor(run1("NegativeLogLikelihoodLoss", {in(logp), in(target), in(weight)}, red("sum")),
                DType::f32, {}, {10});
  expect_tensor(run1("NegativeLogLikelihoodLoss", {in(logp), in(target), in(weight)}), DType::f32,
                {}, {10.0 / 3});
  // ignore_index 2 drops sample 0 from the loss and from the weight sum: 4 / 1.
  expect_tensor(run1("NegativeLogLikelihoodLoss", {in(logp), in(target), in(weight)},
                     attrs({{"ignore_index", int64_t{2}}})),
                DType::f32, {}, {4});
  OneNode bad("NegativeLogLikelihoodLoss", {in(logp), in(i64({2}, {3, 0}))}, {}, 1, "nll");
  EXPECT_NE(error_of([&] { bad.run(); }).find("out of range"), std::string::npos);
}

TEST(Loss, SoftmaxCrossEntropy) {
  // scores [0, ln 3]: log_softmax = [ln 1/4, ln 3/4]; label 1 -> loss -ln(3/4) = 0.2876821.
  OneNode n("SoftmaxCrossEntropyLoss",
            {in(f32({1, 2}, {0, static_cast<float>(std::log(3.0))})), in(i64({1}, {1}))}, {}, 2);
  auto outs = n.run();
  expect_tensor(outs[0], DType::f32, {}, {-std::log(0.75)});
  expect_tensor(outs[1], DType::f32, {1, 2}, {std::log(0.25), std::log(0.75)});
}

TEST(Quant, QuantizeDequantize) {
  // round half to even then saturate: 1.5 -> 2, 2.5 -> 2, -1 -> 0 (u8), 300 -> 255.
  const Tensor x = f32({5}, {0, 1.5f, 2.5f, -1, 300});
  expect_tensor(run1("QuantizeLinear", {in(x), in(f32({}, {1}))}), DType::u8, {5},
                {0, 2, 2, 0, 255});
  // int8 zero point 1: round(x) + 1 saturated to [-128, 127]: 1, 3, 3, 0, 127.
  expect_tensor(run1("QuantizeLinear", {in(x), in(f32({}, {1})), in(typed(DType::i8, {}, {1}))}),
                DType::i8, {5}, {1, 3, 3, 0, 127});
  // Per-axis (axis 1): channel 0 scale 1, channel 1 scale 2.
  expect_tensor(run1("QuantizeLinear", {in(f32({1, 2, 2}, {4, 6, 4, 6})), in(f32({2}, {1, 2}))}),
                DType::u8, {1, 2, 2}, {4, 6, 2, 3});
  // (x - 10) * 0.5.
  expect_tensor(run1("DequantizeLinear", {in(typed(DType::u8, {3}, {0, 10, 255})),
                                          in(f32({}, {0.5f})), in(typed(DType::u8, {}, {10}))}),
                DType::f32, {3}, {-5, 0, 122.5});
  // Dynamic: range [-1, 2] -> scale 3/255, zero point round(1 / scale) = 85; y = round(x/scale)+85.
  OneNode d("DynamicQuantizeLinear", {in(f32({4}, {0, 2, -1, 1}))}, {}, 3);
  auto outs = d.run();
  expect_tensor(outs[0], DType::u8, {4}, {85, 255, 0, 170});
  expect_tensor(outs[1], DType::f32, {}, {3.0 / 255});
  expect_tensor(outs[2], DType::u8, {}, {85});
}

TEST(Quant, IntegerMatMulAndConv) {
  // (A - 1) @ B = [0, 1] @ [3; 4] = 4.
  expect_tensor(
      run1("MatMulInteger", {in(typed(DType::u8, {1, 2}, {1, 2})),
                             in(typed(DType::u8, {2, 1}, {3, 4})), in(typed(DType::u8, {}, {1}))}),
      DType::i32, {1, 1}, {4});
  // 1x1 conv of (x - 1) with weight 2: [0, 2, 4, 6].
  expect_tensor(
      run1("ConvInteger", {in(typed(DType::u8, {1, 1, 2, 2}, {1, 2, 3, 4})),
                           in(typed(DType::u8, {1, 1, 1, 1}, {2})), in(typed(DType::u8, {}, {1}))}),
      DType::i32, {1, 1, 2, 2}, {0, 2, 4, 6});
}

TEST(Recurrent, RnnForwardReverseAndSequenceLens) {
  // hidden 1, input 1, W 1, R 0.5, tanh: h1 = tanh(1), h2 = tanh(2 + 0.5 h1).
  const Tensor x = f32({2, 1, 1}, {1, 2});
  const Tensor w = f32({1, 1, 1}, {1}), r = f32({1, 1, 1}, {0.5f});
  const double h1 = std::tanh(1.0), h2 = std::tanh(2 + 0.5 * h1);
  OneNode f("RNN", {in(x), in(w), in(r)}, attrs({{"hidden_size", int64_t{1}}}), 2);
  auto fo = f.run();
  expect_tensor(fo[0], DType::f32, {2, 1, 1, 1}, {h1, h2});
  expect_tensor(fo[1], DType::f32, {1, 1, 1}, {h2});
  // Reverse: step t=1 first: y[1] = tanh(2), y[0] = tanh(1 + 0.5 tanh(2)).
  const double r1 = std::tanh(2.0), r0 = std::tanh(1 + 0.5 * r1);
  OneNode rv("RNN", {in(x), in(w), in(r)},
             attrs({{"hidden_size", int64_t{1}}, {"direction", std::string("reverse")}}), 2);
  expect_tensor(rv.run()[0], DType::f32, {2, 1, 1, 1}, {r0, r1});
  // Two batch rows with sequence_lens [2, 1]: row 1 stops after one step (y zero at step 2).
  OneNode sl(
      "RNN",
      {in(f32({2, 2, 1}, {1, 1, 2, 2})), in(w), in(r), none(), in(typed(DType::i32, {2}, {2, 1}))},
      attrs({{"hidden_size", int64_t{1}}}), 2);
  auto so = sl.run();
  expect_tensor(so[0], DType::f32, {2, 1, 2, 1}, {h1, h1, h2, 0});
  expect_tensor(so[1], DType::f32, {1, 2, 1}, {h2, h1});
}

TEST(Recurrent, LstmAndGruSingleStep) {
  // LSTM gates (i, o, f, c) weights [0, 0, 0, 1], x = 1, zero state: i = o = f = 1/2,
  // c~ = tanh(1), C = c~ / 2, H = tanh(C) / 2.
  const double C = std::tanh(1.0) / 2, H = std::tanh(C) / 2;
  OneNode l(
      "LSTM",
      {in(f32({1, 1, 1}, {1})), in(f32({1, 4, 1}, {0, 0, 0, 1})), in(f32({1, 4, 1}, {0, 0, 0, 0}))},
      attrs({{"hidden_size", int64_t{1}}}), 3);
  auto lo = l.run();
  expect_tensor(lo[0], DType::f32, {1, 1, 1, 1}, {H});
  expect_tensor(lo[2], DType::f32, {1, 1, 1}, {C});
  // GRU gates (z, r, h) weights [0, 0, 1]: z = 1/2, h~ = tanh(1), H = (1 - z) h~ + z * 0.
  OneNode g("GRU",
            {in(f32({1, 1, 1}, {1})), in(f32({1, 3, 1}, {0, 0, 1})), in(f32({1, 3, 1}, {0, 0, 0}))},
            attrs({{"hidden_size", int64_t{1}}}), 2);
  expect_tensor(g.run()[1], DType::f32, {1, 1, 1}, {std::tanh(1.0) / 2});
  OneNode bad(
      "LSTM",
      {in(f32({1, 1, 1}, {1})), in(f32({1, 3, 1}, {0, 0, 1})), in(f32({1, 3, 1}, {0, 0, 0}))},
      attrs({{"hidden_size", int64_t{1}}}));
  EXPECT_NE(error_of([&] { bad.infer(); }).find("W has shape"), std::string::npos);
}

TEST(Sampling, GridSampleModesAndPadding) {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  // align_corners=1: (-1,-1) -> pixel (0,0) = 1, (1,1) -> 4, (0,0) -> centre, bilinear 2.5.
  expect_tensor(run1("GridSample", {in(x), in(f32({1, 1, 3, 2}, {-1, -1, 1, 1, 0, 0}))},
                     attrs({{"align_corners", int64_t{1}}})),
                DType::f32, {1, 1, 1, 3}, {1, 4, 2.5});
  // Far outside: zeros padding reads 0, border clamps to the corner pixel 1.
  const Tensor far = f32({1, 1, 1, 2}, {-3, -3});
  expect_tensor(run1("GridSample", {in(x), in(far)}), DType::f32, {1, 1, 1, 1}, {0});
  expect_tensor(
      run1("GridSample", {in(x), in(far)}, attrs({{"padding_mode", std::string("border")}})),
      DType::f32, {1, 1, 1, 1}, {1});
  // Nearest, align_corners=0: (0,0) -> pixel (0.5, 0.5), rounded half to even -> (0,0) = 1.
  expect_tensor(run1("GridSample", {in(x), in(f32({1, 1, 1, 2}, {0, 0}))},
                     attrs({{"mode", std::string("nearest")}})),
                DType::f32, {1, 1, 1, 1}, {1});
  // RoiAlign of roi [0,0,1,1], one bin, one sample at (0.5, 0.5): bilinear 2.5.
  expect_tensor(run1("RoiAlign", {in(x), in(f32({1, 4}, {0, 0, 1, 1})), in(i64({1}, {0}))},
                     attrs({{"sampling_ratio", int64_t{1}},
                            {"coordinate_transformation_mode", std::string("output_half_pixel")}})),
                DType::f32, {1, 1, 1, 1}, {2.5});
}

TEST(Signal, DftStftAndWindows) {
  // DFT of the unit impulse at m = 1 over 4 points: X[k] = exp(-2 pi i k / 4) = 1, -i, -1, i.
  Tensor d = run1("DFT", {in(f32({1, 4, 1}, {0, 1, 0, 0}))});
  expect_tensor(d, DType::f32, {1, 4, 2}, {1, 0, 0, -1, -1, 0, 0, 1});
  // The inverse brings it back.
  expect_tensor(run1("DFT", {in(d)}, attrs({{"inverse", int64_t{1}}})), DType::f32, {1, 4, 2},
                {0, 0, 1, 0, 0, 0, 0, 0});
  // STFT, frame length 2, step 2, onesided: frames [1,2], [3,5] -> bins (a + b, a - b).
  expect_tensor(run1("STFT", {in(f32({1, 4, 1}, {1, 2, 3, 5})), cst(i64({}, {2})), none(),
                              cst(i64({}, {2}))}),
                DType::f32, {1, 2, 2, 2}, {3, 0, -1, 0, 8, 0, -2, 0});
  // Hann, N = 4: periodic 0.5 - 0.5 cos(2 pi n / 4) = [0, .5, 1, .5]; symmetric (N' = 3):
  // [0, .75, .75, 0].
  expect_tensor(run1("HannWindow", {cst(i64({}, {4}))}), DType::f32, {4}, {0, 0.5, 1, 0.5});
  expect_tensor(run1("HannWindow", {cst(i64({}, {4}))}, attrs({{"periodic", int64_t{0}}})),
                DType::f32, {4}, {0, 0.75, 0.75, 0});
  // MelWeightMatrix, the ONNX doc example (8 bins, dft 16, 8192 Hz, 0..4096 Hz): row 0 is
  // [1, 1, 0, ...], row 1 [0, 0, 1, 1, 0, ...], row 5 ends with 1, rows 6..8 are zero.
  Tensor m = run1("MelWeightMatrix",
                  {cst(typed(DType::i32, {}, {8})), cst(typed(DType::i32, {}, {16})),
                   cst(typed(DType::i32, {}, {8192})), cst(f32({}, {0})), cst(f32({}, {4096}))});
  ASSERT_EQ(m.shape(), (Shape{9, 8}));
  const auto v = values(m);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 1);
  EXPECT_EQ(v[2], 0);
  EXPECT_EQ(v[8 + 2], 1);
  EXPECT_EQ(v[8 + 3], 1);
  EXPECT_EQ(v[5 * 8 + 7], 1);
  double tail = 0;
  for (int i = 6 * 8; i < 9 * 8; ++i) tail += v[i];
  EXPECT_EQ(tail, 0);
}

TEST(Misc, DetReverseSequenceMaxUnpoolTfIdf) {
  // det [[1,2],[3,4]] = -2; a row swap of the identity has det -1 (needs pivoting).
  expect_tensor(run1("Det", {in(f32({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0}))}), DType::f32, {2},
                {-2, -1});
  // batch_axis 0, time_axis 1, lens [2, 3]: [1,2,3] -> [2,1,3]; [4,5,6] -> [6,5,4].
  expect_tensor(run1("ReverseSequence", {in(f32({2, 3}, {1, 2, 3, 4, 5, 6})), in(i64({2}, {2, 3}))},
                     attrs({{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}})),
                DType::f32, {2, 3}, {2, 1, 3, 6, 5, 4});
  // MaxUnpool of [7, 9] at flat indices [1, 2] into [1,1,1,4] (kernel [1,2], strides [1,2]).
  expect_tensor(run1("MaxUnpool", {in(f32({1, 1, 1, 2}, {7, 9})), in(i64({1, 1, 1, 2}, {1, 2}))},
                     attrs({{"kernel_shape", std::vector<int64_t>{1, 2}},
                            {"strides", std::vector<int64_t>{1, 2}}})),
                DType::f32, {1, 1, 1, 4}, {0, 7, 9, 0});
  // TF counts of the unigrams [1, 2] in [1, 2, 1, 2].
  expect_tensor(run1("TfIdfVectorizer", {in(i64({4}, {1, 2, 1, 2}))},
                     attrs({{"mode", std::string("TF")},
                            {"min_gram_length", int64_t{1}},
                            {"max_gram_length", int64_t{1}},
                            {"max_skip_count", int64_t{0}},
                            {"ngram_counts", std::vector<int64_t>{0}},
                            {"ngram_indexes", std::vector<int64_t>{0, 1}},
                            {"pool_int64s", std::vector<int64_t>{1, 2}}})),
                DType::f32, {2}, {2, 2});
}

TEST(DataDependent, NeedCompileTimeValues) {
  const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  expect_tensor(
      run1("Compress", {in(x), cst(boolean({3}, {0, 1, 1}))}, attrs({{"axis", int64_t{0}}})),
      DType::f32, {2, 2}, {3, 4, 5, 6});
  expect_tensor(run1("Compress", {in(x), cst(boolean({4}, {0, 1, 0, 1}))}), DType::f32, {2},
                {2, 4});
  OneNode rt("Compress", {in(x), in(boolean({3}, {0, 1, 1}))}, {}, 1, "cp");
  EXPECT_TRUE(throws_unsupported([&] { rt.infer(); }));
  // Unique of [2, 1, 1, 3], sorted: Y [1,2,3], first indices [1,0,3], inverse [1,0,0,2],
  // counts [2,1,1]. Unsorted keeps first-occurrence order: [2,1,3].
  OneNode u("Unique", {cst(f32({4}, {2, 1, 1, 3}))}, {}, 4);
  auto uo = u.run();
  expect_tensor(uo[0], DType::f32, {3}, {1, 2, 3});
  expect_tensor(uo[1], DType::i64, {3}, {1, 0, 3});
  expect_tensor(uo[2], DType::i64, {4}, {1, 0, 0, 2});
  expect_tensor(uo[3], DType::i64, {3}, {2, 1, 1});
  OneNode un("Unique", {cst(f32({4}, {2, 1, 1, 3}))}, attrs({{"sorted", int64_t{0}}}), 1);
  expect_tensor(un.run()[0], DType::f32, {3}, {2, 1, 3});
  // NMS: box 1 overlaps box 0 with IoU 0.9 / 1.1 > 0.5 and is suppressed; boxes 0 and 2 remain.
  Tensor sel =
      run1("NonMaxSuppression",
           {cst(f32({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 10, 1, 11})),
            cst(f32({1, 1, 3}, {0.9f, 0.8f, 0.7f})), cst(i64({1}, {3})), cst(f32({1}, {0.5f}))});
  expect_tensor(sel, DType::i64, {2, 3}, {0, 0, 0, 0, 0, 2});
}

}  // namespace
}  // namespace tessel::testing_ops
