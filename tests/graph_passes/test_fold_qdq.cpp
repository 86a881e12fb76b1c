// fold_qdq (passes/graph/fold_qdq.cpp): which QDQ patterns fold into QLinearConv / QLinearMatMul
// and which stay (with the reason the pass gives), the folded node list, and the integers the
// folded graph computes, derived by hand below and equal to the unfolded (float-path) graph's on
// these values, which lie away from rounding boundaries.
#include <gtest/gtest.h>

#include <string>

#include "compiler/ops/reference.h"
#include "passes/graph/graph_passes.h"
#include "tests/graph_passes/gp_util.h"

namespace tessel::testing {
namespace {

using namespace tessel::graph_passes;
using Nodes = std::vector<std::string>;

// A 1x1 Conv, 2 -> 2 channels on a 2x2 image, int8 in and out, per-channel weight scales and an
// int32 bias at scale sx * sw[m]:
//   xq = [[10, -20, 7, 0], [3, 5, -8, 127]]   (channel, pixel)
//   wq = [[1, 2], [-3, 4]]                    (output channel, input channel)
//   bq = [3, -5], sx = 0.5, sw = [0.25, 0.5], sb = [0.125, 0.25], sy = 0.375, zy = -3
// Integer accumulators acc[m][p] = sum_c xq[c][p] * wq[m][c] + bq[m]:
//   m0: 10+6+3 = 19, -20+10+3 = -7, 7-16+3 = -6, 0+254+3 = 257
//   m1: -30+12-5 = -23, 60+20-5 = 75, -21-32-5 = -58, 0+508-5 = 503
// Requantised with sx*sw[m]/sy = 1/3 (m0) and 2/3 (m1), rounded half to even, + zy:
//   m0: 6.33 -> 6 -> 3, -2.33 -> -2 -> -5, -2 -> -5, 85.67 -> 86 -> 83
//   m1: -15.33 -> -15 -> -18, 50 -> 47, -38.67 -> -39 -> -42, 335.3 -> saturates at 127
const std::vector<int64_t> kConvWant = {3, -5, -5, 83, -18, 47, -42, 127};

const char* kConv = R"(graph t opset 13 (%xq: i8[1,2,2,2]) -> (%y) {
    %sx: f32[] = const [0.5]
    %zx: i8[] = const [0]
    %xf: f32[1,2,2,2] = DequantizeLinear(%xq, %sx, %zx)
    %wq: i8[2,2,1,1] = const [1, 2, -3, 4]
    %sw: f32[2] = const [0.25, 0.5]
    %zw: i8[2] = const [0, 0]
    %wf: f32[2,2,1,1] = DequantizeLinear(%wq, %sw, %zw) {axis=0}
    %bq: i32[2] = const [3, -5]
    %sb: f32[2] = const [SB]
    %zb: i32[2] = const [0, 0]
    %bf: f32[2] = DequantizeLinear(%bq, %sb, %zb) {axis=0}
    %c: f32[1,2,2,2] = Conv(%xf, %wf, %bf) {kernel_shape=[1, 1]}  # conv
    EXTRA
    %sy: f32[] = const [0.375]
    %zy: i8[] = const [-3]
    %y: i8[1,2,2,2] = QuantizeLinear(%c, %sy, %zy)  # q
  })";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

std::string conv_text(const std::string& sb = "0.125, 0.25", const std::string& extra = "") {
  return replace(replace(kConv, "SB", sb), "EXTRA", extra);
}

Tensor conv_input() {
  Tensor x(DType::i8, {1, 2, 2, 2});
  const int8_t v[] = {10, -20, 7, 0, 3, 5, -8, 127};
  for (int i = 0; i < 8; ++i) x.data<int8_t>()[i] = v[i];
  return x;
}

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(static_cast<int64_t>(t.get_as_double(i)));
  return out;
}

std::string reason_for(Graph& g, const std::string& node) {
  for (const auto& d : explain_fold_qdq(g))
    if (d.node == node) return d.folded.empty() ? d.reason : "folds into " + d.folded;
  return "no decision for " + node;
}

TEST(FoldQdq, ConvWithBiasFoldsIntoQLinearConvAndComputesTheDerivedIntegers) {
  auto before = parse_ok(conv_text());
  auto g = parse_ok(conv_text());
  EXPECT_EQ(reason_for(*g, "conv"), "folds into QLinearConv");
  EXPECT_TRUE(fold_qdq(*g));
  verify_graph(*g);
  EXPECT_EQ(node_list(*g), (Nodes{"y = QLinearConv(xq, sx, zx, wq, sw, zw, sy, zy, bq)"}));
  const Node& n = producer(*g, "y");
  EXPECT_EQ(n.attrs.get_ints_or("kernel_shape", {}, n.name), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(n.name, "q") << "the new node takes the Q's name";
  const std::map<std::string, Tensor> in = {{"xq", conv_input()}};
  EXPECT_EQ(ints(ops::run_reference(*g, in).at("y")), kConvWant);
  EXPECT_EQ(ints(ops::run_reference(*before, in).at("y")), kConvWant);  // the float path agrees
  EXPECT_FALSE(fold_qdq(*g));                                           // nothing left
}

TEST(FoldQdq, DoesNotFoldWhenTheBiasScaleIsNotXScaleTimesWScale) {
  // 0.126 != 0.5 * 0.25: adding the int32 bias to the accumulator would change the result.
  auto g = parse_ok(conv_text("0.126, 0.25"));
  EXPECT_EQ(reason_for(*g, "conv"),
            "the bias's scale 0.126 differs from x scale * w scale = 0.125 (channel 0)");
  EXPECT_FALSE(fold_qdq(*g));
  EXPECT_EQ(count_op(*g, "QLinearConv"), 0u);
  EXPECT_EQ(count_op(*g, "DequantizeLinear"), 3u);
}

TEST(FoldQdq, ConvOutputReadByAnotherNodeIsNotFolded) {
  // %c read by the Q and by a Relu that needs its float value: no fold.
  auto g = parse_ok(
      replace(conv_text("0.125, 0.25", "%r: f32[1,2,2,2] = Relu(%c)"), "-> (%y)", "-> (%y, %r)"));
  EXPECT_EQ(reason_for(*g, "conv"),
            "its output has 2 readers (a QuantizeLinear must be the only one)");
  EXPECT_FALSE(fold_qdq(*g));
}

TEST(FoldQdq, ASharedActivationDequantizeStaysForItsOtherReader) {
  // %xf is also read by a float Relu: the fold reads %xq directly and the DQ stays for the Relu
  // (ONNX Runtime duplicates such a DQ first: the same result).
  auto g = parse_ok(
      replace(conv_text("0.125, 0.25", "%r: f32[1,2,2,2] = Relu(%xf)"), "-> (%y)", "-> (%y, %r)"));
  EXPECT_TRUE(fold_qdq(*g));
  verify_graph(*g);
  EXPECT_EQ(node_list(*g), (Nodes{"xf = DequantizeLinear(xq, sx, zx)", "r = Relu(xf)",
                                  "y = QLinearConv(xq, sx, zx, wq, sw, zw, sy, zy, bq)"}));
  const auto out = ops::run_reference(*g, {{"xq", conv_input()}});
  EXPECT_EQ(ints(out.at("y")), kConvWant);
  EXPECT_EQ(out.at("r").to_float_vector(),
            (std::vector<float>{5, 0, 3.5f, 0, 1.5f, 2.5f, 0, 63.5f}));  // max(xq * 0.5, 0)
}

TEST(FoldQdq, AReluBeforeTheQuantizeFoldsOnlyWhenTheQClipsAtZero) {
  // Conv -> Relu -> Q: with zy = -128 (int8's minimum) Q maps every negative value to -128, as
  // Relu's 0 does, so the Relu is redundant (ORT's IsClipMadeRedundantByQ); with zy = -3 it is not.
  const std::string relu = replace(conv_text("0.125, 0.25", "%cr: f32[1,2,2,2] = Relu(%c)"),
                                   "QuantizeLinear(%c,", "QuantizeLinear(%cr,");
  auto kept = parse_ok(relu);
  EXPECT_EQ(reason_for(*kept, "conv"),
            "the Relu is not redundant: the QuantizeLinear's zero point is -3, not -128");
  EXPECT_FALSE(fold_qdq(*kept));
  auto folded = parse_ok(replace(relu, "%zy: i8[] = const [-3]", "%zy: i8[] = const [-128]"));
  auto before = parse_ok(replace(relu, "%zy: i8[] = const [-3]", "%zy: i8[] = const [-128]"));
  EXPECT_TRUE(fold_qdq(*folded));
  EXPECT_EQ(count_op(*folded, "Relu"), 0u);
  // acc * scale - 128, negatives clamped at -128: m0: 6-128, -128, -128, 86-128;
  // m1: -128, 50-128, -128, 127 (335 - 128 = 207 saturates).
  const std::map<std::string, Tensor> in = {{"xq", conv_input()}};
  const std::vector<int64_t> want = {-122, -128, -128, -42, -128, -78, -128, 127};
  EXPECT_EQ(ints(ops::run_reference(*folded, in).at("y")), want);
  EXPECT_EQ(ints(ops::run_reference(*before, in).at("y")), want);
}

TEST(FoldQdq, TypeRulesOfOnnxRuntime) {
  // The output dtype must be the activation's.
  auto u8_out =
      parse_ok(replace(replace(conv_text(), "%zy: i8[] = const [-3]", "%zy: u8[] = const [3]"),
                       "%y: i8[1,2,2,2]", "%y: u8[1,2,2,2]"));
  EXPECT_EQ(reason_for(*u8_out, "conv"), "the activation is i8 but the QuantizeLinear writes u8");
  EXPECT_FALSE(fold_qdq(*u8_out));
  // An int8 activation needs an int8 weight.
  auto u8_w = parse_ok(replace(replace(conv_text(), "%wq: i8[2,2,1,1] = const [1, 2, -3, 4]",
                                       "%wq: u8[2,2,1,1] = const [1, 2, 3, 4]"),
                               "%zw: i8[2] = const [0, 0]", "%zw: u8[2] = const [0, 0]"));
  EXPECT_EQ(reason_for(*u8_w, "conv"), "an int8 activation with a uint8 weight");
  // A per-channel weight scale along another axis than the output channels.
  auto axis1 = parse_ok(replace(conv_text(), "DequantizeLinear(%wq, %sw, %zw) {axis=0}",
                                "DequantizeLinear(%wq, %sw, %zw) {axis=1}"));
  EXPECT_EQ(reason_for(*axis1, "conv"),
            "the weight's scale is neither per tensor nor per output channel (axis 0)");
  EXPECT_FALSE(fold_qdq(*axis1));
}

TEST(FoldQdq, OnlyWhenTheTargetHasTheOp) {
  auto g = parse_ok(conv_text());
  const OpAvailable none = [](const std::string& op) { return op != "QLinearConv"; };
  EXPECT_EQ(explain_fold_qdq(*g, none)[0].reason, "QLinearConv unavailable");
  EXPECT_FALSE(fold_qdq(*g, none));
}

TEST(FoldQdq, FloatModelsAreLeftAlone) {
  auto g = parse_ok(R"(graph t opset 13 (%x: f32[1,2,2,2]) -> (%y) {
    %w: f32[2,2,1,1] = const dense
    %y: f32[1,2,2,2] = Conv(%x, %w) {kernel_shape=[1, 1]}  # fconv
  })");
  EXPECT_EQ(reason_for(*g, "fconv"), "input 0 (x) is not a DequantizeLinear output");
  EXPECT_FALSE(fold_qdq(*g));
  EXPECT_EQ(node_list(*g), (Nodes{"y = Conv(x, w)"}));
}

// A [1,3] x [3,2] product, uint8 activation (zero point 128) and int8 weight:
//   aq = [130, 120, 128] -> a - 128 = [2, -8, 0]; bq = [[1, -2], [3, 4], [5, 6]]
//   acc = [2*1 - 8*3 + 0, 2*(-2) - 8*4 + 0] = [-22, -36]
// per tensor: sa = 0.5, sb = 0.25, sy = 0.125 -> scale 1: y = acc + 100 = [78, 64]
// per column: sb = [0.25, 0.0625] -> scales [1, 0.25]: [-22 + 100, -9 + 100] = [78, 91]
const char* kMatMul = R"(graph t opset 13 (%aq: u8[1,3]) -> (%y) {
    %sa: f32[] = const [0.5]
    %za: u8[] = const [128]
    %af: f32[1,3] = DequantizeLinear(%aq, %sa, %za)
    %bq: i8[3,2] = const [1, -2, 3, 4, 5, 6]
    %sb: f32[SBSHAPE] = const [SB]
    %zb: i8[SBSHAPE] = const [ZB]
    %bf: f32[3,2] = DequantizeLinear(%bq, %sb, %zb) {axis=1}
    %m: f32[1,2] = MatMul(%af, %bf)  # mm
    %sy: f32[] = const [0.125]
    %zy: u8[] = const [100]
    %y: u8[1,2] = QuantizeLinear(%m, %sy, %zy)
  })";

Tensor matmul_input() {
  Tensor a(DType::u8, {1, 3});
  a.data<uint8_t>()[0] = 130;
  a.data<uint8_t>()[1] = 120;
  a.data<uint8_t>()[2] = 128;
  return a;
}

TEST(FoldQdq, MatMulFoldsIntoQLinearMatMulPerTensorAndPerColumn) {
  struct Case {
    std::string shape, sb, zb;
    std::vector<int64_t> want;
  };
  for (const Case& c :
       {Case{"", "0.25", "0", {78, 64}}, Case{"2", "0.25, 0.0625", "0, 0", {78, 91}}}) {
    const std::string text = replace(
        replace(replace(replace(kMatMul, "SBSHAPE", c.shape), "SBSHAPE", c.shape), "SB", c.sb),
        "ZB", c.zb);
    auto before = parse_ok(text);
    auto g = parse_ok(text);
    EXPECT_TRUE(fold_qdq(*g)) << c.sb;
    verify_graph(*g);
    EXPECT_EQ(node_list(*g), (Nodes{"y = QLinearMatMul(aq, sa, za, bq, sb, zb, sy, zy)"}));
    const std::map<std::string, Tensor> in = {{"aq", matmul_input()}};
    EXPECT_EQ(ints(ops::run_reference(*g, in).at("y")), c.want) << c.sb;
    EXPECT_EQ(ints(ops::run_reference(*before, in).at("y")), c.want) << c.sb;
  }
}

TEST(FoldQdq, GemmFoldsWithoutBiasTransposingAConstantWeightAndNotWithABias) {
  // Gemm(transB=1) with bq stored [2,3] = the transpose of the MatMul case's weight.
  std::string gemm = replace(
      replace(replace(replace(kMatMul, "SBSHAPE", ""), "SBSHAPE", ""), "SB", "0.25"), "ZB", "0");
  gemm = replace(gemm, "%bq: i8[3,2] = const [1, -2, 3, 4, 5, 6]",
                 "%bq: i8[2,3] = const [1, 3, 5, -2, 4, 6]");
  gemm = replace(gemm, "%bf: f32[3,2]", "%bf: f32[2,3]");
  gemm = replace(gemm, "MatMul(%af, %bf)", "Gemm(%af, %bf) {transB=1}");
  auto g = parse_ok(gemm);
  EXPECT_TRUE(fold_qdq(*g));
  verify_graph(*g);
  EXPECT_EQ(node_list(*g), (Nodes{"y = QLinearMatMul(aq, sa, za, bq_transposed, sb, zb, sy, zy)"}));
  EXPECT_EQ(g->find_value("bq_transposed")->constant->to_int64_vector(),
            (std::vector<int64_t>{1, -2, 3, 4, 5, 6}));
  EXPECT_EQ(ints(ops::run_reference(*g, {{"aq", matmul_input()}}).at("y")),
            (std::vector<int64_t>{78, 64}));
  // With a bias C the product is not a QLinearMatMul.
  std::string with_c = replace(gemm, "Gemm(%af, %bf) {transB=1}", "Gemm(%af, %bf, %cf) {transB=1}");
  with_c = replace(with_c, "%m: f32[1,2]", "%cf: f32[2] = const [1, 2]\n    %m: f32[1,2]");
  auto gc = parse_ok(with_c);
  EXPECT_EQ(
      reason_for(*gc, "mm"),
      "a Gemm with a bias C (QLinearMatMul has none; ORT folds it into its contrib op QGemm)");
  EXPECT_FALSE(fold_qdq(*gc));
}

}  // namespace
}  // namespace tessel::testing
