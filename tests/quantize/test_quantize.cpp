// `tessel quantize` (compiler/driver/quantize.h): the quantisation parameters and rounding of
// ONNX Runtime's QDQ scheme derived by hand, the rewritten graph of a one-Conv model value by
// value, percentile calibration, the committed int8 models of tests/data/models being exactly what
// the command writes, and those models on the reference interpreter against ONNX Runtime's
// outputs (tests/data/cases/{ppocr_cls_int8_b1,hello_deepa_int8}).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/driver/commands.h"
#include "compiler/driver/quantize.h"
#include "compiler/driver/zoo.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/reference.h"
#include "tests/cli/cli_test_util.h"
#include "tests/frontend/onnx_builder.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
using driver::QParams;
const std::string kSrc = TESSEL_SOURCE_DIR;

TEST(QuantizeParams, ActivationScaleAndZeroPointAsOnnxRuntime) {
  // [-0.5, 1.5]: scale = fl(2 / 255) = 0.007843138; zp = round(-128 - (-0.5) / scale)
  // = round(-128 + 63.7499962) = round(-64.25) = -64.
  QParams p = driver::activation_qparams(-0.5, 1.5);
  EXPECT_EQ(p.scale, static_cast<float>(2.0 / 255));
  EXPECT_EQ(p.zero_point, -64);
  // [0.5, 2] is widened to [0, 2] so that 0.0 is exact: zp = round(-128 - 0) = -128.
  p = driver::activation_qparams(0.5, 2);
  EXPECT_EQ(p.scale, static_cast<float>(2.0 / 255));
  EXPECT_EQ(p.zero_point, -128);
  // [-3, -1] -> [-3, 0]: zp = round(-128 + 3 / (3 / 255)) = round(127.0000x) = 127.
  p = driver::activation_qparams(-3, -1);
  EXPECT_EQ(p.zero_point, 127);
  // An all-zero tensor: scale 1, zero point 0 (ONNX Runtime's convention).
  p = driver::activation_qparams(0, 0);
  EXPECT_EQ(p.scale, 1.f);
  EXPECT_EQ(p.zero_point, 0);
  EXPECT_THROW(driver::activation_qparams(1, -1), Error);
  EXPECT_THROW(driver::activation_qparams(0, INFINITY), Error);
}

TEST(QuantizeParams, WeightsAreSymmetricOverMinus127To127) {
  const QParams p = driver::weight_qparams(0.5);
  EXPECT_EQ(p.scale, static_cast<float>(0.5 / 127));
  EXPECT_EQ(p.zero_point, 0);
  EXPECT_EQ(driver::quantize_int8(0.5f, p), 127);
  EXPECT_EQ(driver::quantize_int8(-0.5f, p), -127);  // symmetric: -128 is never produced
  EXPECT_EQ(driver::weight_qparams(0).scale, 1.f);
  EXPECT_THROW(driver::weight_qparams(-1), Error);
}

TEST(QuantizeParams, RoundsHalfToEvenAndSaturates) {
  const QParams unit{1.f, 0};
  EXPECT_EQ(driver::quantize_int8(2.5f, unit), 2);
  EXPECT_EQ(driver::quantize_int8(3.5f, unit), 4);
  EXPECT_EQ(driver::quantize_int8(-2.5f, unit), -2);
  EXPECT_EQ(driver::quantize_int8(-3.5f, unit), -4);
  EXPECT_EQ(driver::quantize_int8(127.5f, unit), 127);    // 128 saturates
  EXPECT_EQ(driver::quantize_int8(-128.5f, unit), -128);  // -128 (even), in range
  EXPECT_EQ(driver::quantize_int8(1e6f, unit), 127);
  EXPECT_EQ(driver::quantize_int8(-1e6f, unit), -128);
  // The zero point is added after rounding: 2.5 -> 2, + 10 = 12.
  EXPECT_EQ(driver::quantize_int8(2.5f, QParams{1.f, 10}), 12);
  EXPECT_EQ(driver::quantize_int8(120.f, QParams{1.f, 10}), 127);
}

/// A graph output `name`: float32 of shape `dims` (onnx::checker requires type and shape).
void add_float_output(onnx::ModelProto& m, const std::string& name, const Shape& dims) {
  auto* o = m.mutable_graph()->add_output();
  o->set_name(name);
  auto* tt = o->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

/// x [1,1,2,2] -> Conv(W [2,1,1,1] = {0.5, -0.3}, B = {0.125, -0.2}) -> y -> Relu -> z.
onnx::ModelProto conv_model() {
  auto m = make_model(13);
  add_input(m, "x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{2}});
  add_initializer(m, float_tensor("W", {2, 1, 1, 1}, {0.5f, -0.3f}));
  add_initializer(m, float_tensor("B", {2}, {0.125f, -0.2f}));
  add_node(m, "Conv", {"x", "W", "B"}, {"y"}, "conv");
  add_node(m, "Relu", {"y"}, {"z"}, "relu");
  add_float_output(m, "z", {1, 2, 2, 2});
  return m;
}

std::map<std::string, Tensor> conv_input() {
  return {{"x", Tensor::from_floats({1, 1, 2, 2}, {-0.5f, 0.f, 0.25f, 1.5f})}};
}

const onnx::TensorProto& initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return t;
  ADD_FAILURE() << "no initializer " << name;
  static onnx::TensorProto none;
  return none;
}

Tensor tensor_of(const onnx::ModelProto& m, const std::string& name) {
  return frontend::parse_tensor_pb(initializer(m, name).SerializeAsString(), name);
}

const onnx::NodeProto& node(const onnx::ModelProto& m, const std::string& op, int which = 0) {
  for (const auto& n : m.graph().node())
    if (n.op_type() == op && which-- == 0) return n;
  ADD_FAILURE() << "no " << op;
  static onnx::NodeProto none;
  return none;
}

TEST(QuantizeStatic, FusedLayoutPutsTheConvOutputsQdqAfterItsRelu) {
  // With fuse (the default) y is read only by the Relu, so its Q/DQ would go after the Relu; z is
  // a graph output and stays float, so only x is quantised and the Relu reads the Conv directly.
  driver::QuantizeOptions o;
  o.per_channel = true;
  driver::QuantizeSummary s;
  const auto q = driver::quantize_static(conv_model(), "conv_model", {conv_input()}, o, &s);
  EXPECT_EQ(s.nodes_quantized, 1);
  EXPECT_EQ(s.activation_pairs, 1);
  EXPECT_EQ(node(q, "Relu").input(0), "y");
  EXPECT_EQ(node(q, "Conv").input(0), "x_DequantizeLinear_Output");
}

TEST(QuantizeStatic, ConvModelPerChannelValueByValue) {
  driver::QuantizeOptions o;
  o.per_channel = true;
  o.fuse = false;  // the unfused layout: y quantised before the Relu (as the committed models)
  driver::QuantizeSummary s;
  const auto q = driver::quantize_static(conv_model(), "conv_model", {conv_input()}, o, &s);
  EXPECT_EQ(s.nodes_quantized, 1);
  EXPECT_EQ(s.weights_quantized, 1);
  EXPECT_EQ(s.biases_quantized, 1);
  EXPECT_EQ(s.activation_pairs, 2);  // x and y (z is a graph output: it stays float)
  EXPECT_TRUE(s.skipped.empty());

  // x in [-0.5, 1.5]: scale fl(2/255), zero point -64 (QuantizeParams above).
  EXPECT_EQ(tensor_of(q, "x_scale").data<float>()[0], static_cast<float>(2.0 / 255));
  EXPECT_EQ(tensor_of(q, "x_zero_point").data<int8_t>()[0], -64);
  // Weights per output channel: channel 0 scale 0.5/127 -> 127; channel 1 scale 0.3/127 -> -127.
  const Tensor wq = tensor_of(q, "W_quantized");
  ASSERT_EQ(wq.dtype(), DType::i8);
  EXPECT_EQ(wq.data<int8_t>()[0], 127);
  EXPECT_EQ(wq.data<int8_t>()[1], -127);
  const Tensor ws = tensor_of(q, "W_scale");
  ASSERT_EQ(ws.shape(), Shape{2});
  EXPECT_EQ(ws.data<float>()[0], static_cast<float>(0.5 / 127));
  EXPECT_EQ(ws.data<float>()[1], static_cast<float>(0.3f / 127.0));
  // Bias as int32 at x_scale * W_scale[c]: 0.125 / (fl(2/255) * fl(0.5/127)) = 4048.12 -> 4048;
  // -0.2 / (fl(2/255) * fl(0.3/127)) = -10795.0 -> -10795.
  const Tensor bq = tensor_of(q, "B_quantized");
  ASSERT_EQ(bq.dtype(), DType::i32);
  EXPECT_EQ(bq.data<int32_t>()[0], 4048);
  EXPECT_EQ(bq.data<int32_t>()[1], -10795);
  // y = Conv(x) over the calibration input: channel 0 = 0.5x + 0.125 in [-0.125, 0.875],
  // channel 1 = -0.3x - 0.2 in [-0.65, -0.05]: range [-0.65, 0.875], scale fl(1.525/255) =
  // 0.0059804, zero point round(-128 + 0.65 / 0.0059804) = round(-19.31) = -19. (The bounds are
  // float32 results of the reference's Conv, so the scale is within an ulp or two of that.)
  EXPECT_FLOAT_EQ(tensor_of(q, "y_scale").data<float>()[0], static_cast<float>(1.525 / 255));
  EXPECT_EQ(tensor_of(q, "y_zero_point").data<int8_t>()[0], -19);

  // The graph: Conv reads the three DequantizeLinear outputs, the weight's and bias' per axis 0;
  // Relu reads y's DequantizeLinear; the float W and B are gone; opset stays 13.
  const auto& conv = node(q, "Conv");
  EXPECT_EQ(conv.input(0), "x_DequantizeLinear_Output");
  EXPECT_EQ(conv.input(1), "W_DequantizeLinear_Output");
  EXPECT_EQ(conv.input(2), "B_DequantizeLinear_Output");
  EXPECT_EQ(node(q, "Relu").input(0), "y_DequantizeLinear_Output");
  int with_axis = 0;
  for (const auto& n : q.graph().node())
    for (const auto& a : n.attribute())
      with_axis += n.op_type() == "DequantizeLinear" && a.name() == "axis" && a.i() == 0;
  EXPECT_EQ(with_axis, 2);
  for (const auto& t : q.graph().initializer()) EXPECT_NE(t.name(), "W");
  EXPECT_EQ(q.opset_import(0).version(), 13);

  // On the reference interpreter: z = relu(dq(q(y))) with y = dq(W) * dq(x) + dq(B). Element 3
  // (x = 1.5): q(x) = round(191.25) - 64 = 127 -> dq 191 * s_x = 1.4980392; channel 0:
  // y = (127 * 0.5/127) * 1.4980392 + 4048 * s_x * 0.5/127 = 0.7490196 + 0.1250031 = 0.8740227;
  // q(y) = round(0.8740227 / 0.0059804) - 19 = round(146.147) - 19 = 127 -> dq (127 + 19) * s_y
  // = 0.8731373. Channel 1, element 0 (x = -0.5): q(x) = round(-63.75) - 64 = -128 -> dq
  // -0.5019608; y = (-127 * 0.3/127) * -0.5019608 + (-10795 * s_x * 0.3/127) = 0.1505882 - 0.2 =
  // -0.0494118; relu of its dequantised value (negative) is 0.
  std::string bytes;
  q.SerializeToString(&bytes);
  const auto g = frontend::import_onnx_bytes(bytes, "quantized conv");
  const auto z = ops::run_reference(*g, conv_input()).at("z");
  const float s_y = tensor_of(q, "y_scale").data<float>()[0];
  EXPECT_FLOAT_EQ(z.data<float>()[3], 146 * s_y);
  EXPECT_EQ(z.data<float>()[4], 0.f);
}

/// x [1,1,2,2] -> Conv(W [2,1,1,1] = {0.5, -0.3}, B = {0.125, -0.2}) -> c ->
/// BatchNormalization(scale {2, 0.5}, bias {0.1, -1}, mean {0.25, 0.5}, var {3, 0.25}, epsilon 1)
/// -> y -> Relu -> z. With `conv_output_too`, c is also a graph output (then it cannot fold).
onnx::ModelProto conv_bn_model(bool conv_output_too = false) {
  auto m = make_model(13);
  add_input(m, "x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{2}});
  add_initializer(m, float_tensor("W", {2, 1, 1, 1}, {0.5f, -0.3f}));
  add_initializer(m, float_tensor("B", {2}, {0.125f, -0.2f}));
  add_initializer(m, float_tensor("scale", {2}, {2.f, 0.5f}));
  add_initializer(m, float_tensor("bias", {2}, {0.1f, -1.f}));
  add_initializer(m, float_tensor("mean", {2}, {0.25f, 0.5f}));
  add_initializer(m, float_tensor("var", {2}, {3.f, 0.25f}));
  add_node(m, "Conv", {"x", "W", "B"}, {"c"}, "conv");
  attr_float(add_node(m, "BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"y"}, "bn"),
             "epsilon", 1.f);
  add_node(m, "Relu", {"y"}, {"z"}, "relu");
  add_float_output(m, "z", {1, 2, 2, 2});
  if (conv_output_too) add_float_output(m, "c", {1, 2, 2, 2});
  return m;
}

TEST(QuantizeFoldBn, ConvBatchNormFoldsIntoTheConvValueByValue) {
  auto m = conv_bn_model();
  EXPECT_EQ(driver::fold_conv_batchnorm(m, "conv_bn"), 1);
  int bns = 0;
  for (const auto& n : m.graph().node()) bns += n.op_type() == "BatchNormalization";
  EXPECT_EQ(bns, 0);
  const auto& conv = node(m, "Conv");
  ASSERT_EQ(conv.input_size(), 3);
  EXPECT_EQ(conv.output(0), "y");  // the Conv now writes the BN's output
  // a = scale / sqrt(var + eps): channel 0: 2 / sqrt(4) = 1; channel 1: 0.5 / sqrt(1.25) =
  // 0.4472136. W' = a W = {0.5, -0.1341641}; b' = a (B - mean) + bias = {0.125 - 0.25 + 0.1,
  // 0.4472136 (-0.2 - 0.5) - 1} = {-0.025, -1.3130495}.
  const Tensor w = tensor_of(m, conv.input(1)), b = tensor_of(m, conv.input(2));
  EXPECT_FLOAT_EQ(w.data<float>()[0], 0.5f);
  EXPECT_FLOAT_EQ(w.data<float>()[1], -0.3f * 0.5f / std::sqrt(1.25f));
  EXPECT_FLOAT_EQ(b.data<float>()[0], -0.025f);
  EXPECT_FLOAT_EQ(b.data<float>()[1], 0.5f / std::sqrt(1.25f) * -0.7f - 1.f);
  // The folded model computes what Conv + BN did, on the reference interpreter.
  auto run = [](const onnx::ModelProto& model) {
    std::string bytes;
    model.SerializeToString(&bytes);
    const auto g = frontend::import_onnx_bytes(bytes, "conv_bn");
    return ops::run_reference(*g,
                              {{"x", Tensor::from_floats({1, 1, 2, 2}, {-0.5f, 0.f, 0.25f, 1.5f})}})
        .at("z");
  };
  const Tensor before = run(conv_bn_model()), after = run(m);
  ASSERT_EQ(after.numel(), 8);
  int positive = 0;
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_NEAR(after.data<float>()[i], before.data<float>()[i], 1e-6) << i;
    positive += before.data<float>()[i] > 0;
  }
  EXPECT_EQ(positive, 2);  // channel 0 at x = 0.25, 1.5 (0.5x - 0.025 > 0); channel 1 all < 0
}

TEST(QuantizeFoldBn, ConvOutputReadElsewhereStaysUnfolded) {
  auto m = conv_bn_model(/*conv_output_too=*/true);
  EXPECT_EQ(driver::fold_conv_batchnorm(m, "conv_bn"), 0);
  EXPECT_EQ(node(m, "BatchNormalization").input(0), "c");
  EXPECT_FLOAT_EQ(tensor_of(m, "W").data<float>()[1], -0.3f);
}

TEST(QuantizeStatic, PerTensorWeightsShareOneScale) {
  driver::QuantizeSummary s;
  const auto q = driver::quantize_static(conv_model(), "conv_model", {conv_input()}, {}, &s);
  // max |W| = 0.5: scale 0.5/127; -0.3 / scale = -76.2 -> -76. No axis: scalar scales.
  const Tensor wq = tensor_of(q, "W_quantized");
  EXPECT_EQ(wq.data<int8_t>()[0], 127);
  EXPECT_EQ(wq.data<int8_t>()[1], -76);
  EXPECT_EQ(tensor_of(q, "W_scale").shape(), Shape{});
  EXPECT_EQ(tensor_of(q, "B_scale").shape(), Shape{});
}

TEST(QuantizeStatic, PercentileCalibrationDropsAnOutlier) {
  // x [1,1000] = {0, 0.001, ..., 0.998, 1000} -> MatMul(W [1000,1] = 0.001). minmax: [0, 1000];
  // percentile 99.9 over a 2,048-bin histogram of [0, 1000] (bin width 1000/2048 = 0.48828125):
  // the 999th of 1000 values (0.998) lies in bin 2, whose upper edge is 3 x 0.48828125 =
  // 1.46484375; the 0.1th percentile is bin 0's lower edge, 0. Scale = 1.46484375 / 255.
  auto m = make_model(13);
  add_input(m, "x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1000}});
  add_initializer(m, float_tensor("W", {1000, 1}, std::vector<float>(1000, 0.001f)));
  add_node(m, "MatMul", {"x", "W"}, {"y"}, "mm");
  add_float_output(m, "y", {1, 1});
  std::vector<float> xs(1000);
  for (int i = 0; i < 999; ++i) xs[i] = i / 1000.f;
  xs[999] = 1000.f;
  const std::map<std::string, Tensor> in = {{"x", Tensor::from_floats({1, 1000}, xs)}};
  driver::QuantizeOptions o;
  auto q = driver::quantize_static(m, "mm", {in}, o);
  EXPECT_EQ(tensor_of(q, "x_scale").data<float>()[0], static_cast<float>(1000.0 / 255));
  o.method = driver::CalibrationMethod::percentile;
  o.percentile = 99.9;
  q = driver::quantize_static(m, "mm", {in}, o);
  EXPECT_EQ(tensor_of(q, "x_scale").data<float>()[0], static_cast<float>(1.46484375 / 255));
  EXPECT_EQ(tensor_of(q, "x_zero_point").data<int8_t>()[0], -128);
}

TEST(QuantizeStatic, CalibrationSetsMustMatchTheModel) {
  EXPECT_THROW(driver::quantize_static(conv_model(), "m", {}, {}), Error);
  try {
    driver::quantize_static(conv_model(), "m", {{{"y", conv_input().at("x")}}}, {});
    FAIL() << "no error for a set without input x";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tensor for input 'x'"), std::string::npos) << e.what();
  }
  auto other = conv_input();
  other["x"] = Tensor::from_floats({1, 1, 1, 4}, {0, 0, 0, 0});
  try {
    driver::quantize_static(conv_model(), "m", {conv_input(), other}, {});
    FAIL() << "no error for sets of different shapes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("calibration set 1 gives input 'x' shape [1,1,1,4]"),
              std::string::npos)
        << e.what();
  }
}

bool have_models() { return fs::exists(kSrc + "/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"); }

/// The command of the golden case's README, run again into a temporary file.
std::string requantize(const std::string& args, const std::string& name) {
  const fs::path out = temp_dir("tessel_quantize") / name;
  const CliResult r = run_tessel("quantize " + args + " -o " + out.string(), "tessel_quantize");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  return slurp_file(out);
}

TEST(QuantizeModels, CommittedInt8ModelsAreWhatTheCommandWrites) {
  if (!have_models()) GTEST_SKIP() << "models/ missing (scripts/fetch_models.sh)";
  // --no-fuse: the committed models (and their ORT goldens) predate the BN fold / Relu layout.
  EXPECT_EQ(
      requantize("models/ch_ppocr_mobile_v2.0_cls_infer.onnx --random 2 --per-channel --no-fuse "
                 "--input-shape x=1,3,48,192",
                 "cls_int8.onnx"),
      slurp_file(kSrc + "/tests/data/models/ch_ppocr_mobile_v2.0_cls_infer_int8.onnx"));
  EXPECT_EQ(
      requantize("models/hello_deepa.onnx --random 2 --per-channel --no-fuse", "hello_int8.onnx"),
      slurp_file(kSrc + "/tests/data/models/hello_deepa_int8.onnx"));
}

TEST(QuantizeModels, ReferenceMatchesOnnxRuntimeOnTheInt8Models) {
  // ONNX Runtime 1.20.1 (CPU provider, graph optimisations off) ran these QDQ models: its
  // DequantizeLinear -> float op -> QuantizeLinear chain is the reference's with fold_qdq
  // disabled, so the only differences are summation order inside a Conv/MatMul/Gemm (an
  // intermediate can then round to a neighbouring int8 step). check's default tolerance for the
  // reference (rtol 1e-3, atol 1e-5 of the float outputs) holds; at generation the largest error
  // was 6e-8.
  driver::CheckArgs args;
  args.case_dirs = {kSrc + "/tests/data/cases/ppocr_cls_int8_b1",
                    kSrc + "/tests/data/cases/hello_deepa_int8"};
  args.target = "ref";
  args.passes.disable = {"fold_qdq"};
  std::ostringstream out, err;
  EXPECT_EQ(driver::cmd_check(args, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("all outputs within tolerance"), std::string::npos) << out.str();
}

TEST(QuantizeModels, FoldedReferenceMatchesOnnxRuntimeWithItsQdqTransformer) {
  // The same models and inputs, ONNX Runtime at graph optimisation level 'all' (its default: the
  // QDQ transformer folds the QDQ groups into QLinearConv / QLinearMatMul / QGemm) against the
  // reference with every pass, fold_qdq included (53 QLinearConv + 1 QLinearMatMul in the
  // classifier; hello_deepa's Gemms have a bias and stay in QDQ form). The float outputs follow a
  // DequantizeLinear of int8 logits, so they are equal exactly when those integers are: the
  // largest error is the softmax's / sigmoid's fp32 rounding, 3e-8 and 6e-8.
  driver::CheckArgs args;
  args.case_dirs = {kSrc + "/tests/data/cases/ppocr_cls_int8_b1_ort_all",
                    kSrc + "/tests/data/cases/hello_deepa_int8_ort_all"};
  args.target = "ref";
  std::ostringstream out, err;
  EXPECT_EQ(driver::cmd_check(args, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("all outputs within tolerance"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("softmax_0.tmp_0      2.980e-08"), std::string::npos) << out.str();
}

TEST(QuantizeModels, ClassifierQuantizesEveryConvAndMatMulAndStaysClose) {
  if (!have_models()) GTEST_SKIP() << "models/ missing (scripts/fetch_models.sh)";
  const fs::path out = temp_dir("tessel_quantize") / "cls_pc.onnx";
  const CliResult r = run_tessel(
      "quantize models/ch_ppocr_mobile_v2.0_cls_infer.onnx --random 2 --per-channel "
      "--input-shape x=1,3,48,192 -o " +
          out.string(),
      "tessel_quantize");
  ASSERT_EQ(r.code, 0) << r.err;
  // 53 Conv + 1 MatMul, every weight int8, every Conv with a bias after the BN fold; opset 9 -> 13.
  EXPECT_NE(r.out.find("quantized 54 of 54 Conv/MatMul/Gemm nodes (54 weights, per channel)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("90 activation Q/DQ pairs, 53 int32 biases"), std::string::npos) << r.out;
  // Its 35 BatchNormalization fold into their Convs first (each Conv then has a bias), and 15
  // Conv -> Relu outputs take their Q/DQ after the Relu.
  EXPECT_NE(r.out.find("folded 35 BatchNormalization into their Conv; 15 quantized outputs"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("opset 9 -> 13"), std::string::npos) << r.out;
  // The weights take about a quarter of their float bytes (int8 for fp32; int32 biases stay 4
  // bytes; the float count includes the BN parameters, which were Constant nodes).
  EXPECT_NE(r.out.find("508,872 bytes as float -> 136,656 bytes quantized"), std::string::npos)
      << r.out;
}

TEST(QuantizeCli, BadInputIsAnErrorNamingTheFlag) {
  struct Bad {
    std::string args, message;
  };
  const std::string cls = "models/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  const std::vector<Bad> bad = {
      {"tests/data/models/hello_deepa_int8.onnx -o /tmp/x.onnx",
       "give the calibration data: --calibration DIR or --random N"},
      {"models/hello_deepa.onnx --random 1 --calibration tests -o /tmp/x.onnx",
       "--calibration DIR or --random N (one of them)"},
      {"models/hello_deepa.onnx --random 1 --percentile 99 -o /tmp/x.onnx",
       "--percentile applies to --method percentile only"},
      {"models/hello_deepa.onnx --random 1 --method kl -o /tmp/x.onnx",
       "--method kl: expected minmax or percentile"},
      {"models/hello_deepa.onnx --random 1", "give the output file"},
      {"models/hello_deepa.onnx --random 1 --method percentile --percentile 20 -o /tmp/x.onnx",
       "percentile 20 is outside (50, 100]"},
      {"models/hello_deepa.onnx --calibration tests/data/cases/hello_deepa --seed 3 -o /tmp/x.onnx",
       "--seed applies to --random only"},
      {"models/hello_deepa.onnx --calibration tests/data/models -o /tmp/x.onnx",
       "input_0.pb is missing"},
      {"models/nope.onnx --random 1 -o /tmp/x.onnx", "models/nope.onnx: cannot open the model"},
      {"README.md --random 1 -o /tmp/x.onnx", "README.md: not an ONNX model"},
      {cls + " --random 1 -o /tmp/x.onnx", "input 'x' has a dynamic dim"},
      {cls + " --random 1 --input-shape y=1 -o /tmp/x.onnx", "--input-shape y: the model has no"},
      {"models/hello_deepa.onnx --random 1 -o /nonexistent/dir/x.onnx", "/nonexistent/dir"},
  };
  for (const auto& b : bad) {
    if (!have_models() && b.args.rfind("models/", 0) == 0) continue;
    const CliResult r = run_tessel("quantize " + b.args, "tessel_quantize");
    EXPECT_EQ(r.code, 2) << b.args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(b.message), std::string::npos) << b.args << "\n" << r.err;
  }
}

TEST(QuantizeCli, CalibrationDirectoryOfBackendTestSets) {
  if (!have_models()) GTEST_SKIP() << "models/ missing (scripts/fetch_models.sh)";
  // tests/data/cases/hello_deepa has test_data_set_0/input_0.pb: one calibration set.
  const fs::path out = temp_dir("tessel_quantize") / "hello_cal.onnx";
  const CliResult r = run_tessel(
      "quantize models/hello_deepa.onnx --calibration "
      "tests/data/cases/hello_deepa -o " +
          out.string(),
      "tessel_quantize");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("calibration: 1 set (minmax)"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out));
}

}  // namespace
}  // namespace tessel::testing
