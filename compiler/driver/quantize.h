// Static post-training quantisation of a float ONNX model to the QDQ format: `tessel quantize`.
//
// What it writes is what ONNX Runtime's quantize_static(quant_format=QDQ, activation_type=QInt8,
// weight_type=QInt8) writes, so ONNX Runtime, tessel's reference interpreter and any QDQ-aware
// compiler run the result (onnxruntime/python/tools/quantization: qdq_quantizer.py,
// quant_utils.py):
// - every input of a quantised node (Conv, MatMul, Gemm) and its output become
//   QuantizeLinear -> DequantizeLinear pairs (int8, per tensor, asymmetric, zero point so that 0.0
//   is exact); all consumers of such a tensor read the DequantizeLinear output, graph outputs keep
//   the float tensor;
// - weights (float initializers) are stored as int8 initializers read through a DequantizeLinear
//   (symmetric, zero point 0, scale max|w| / 127; per tensor or, with per_channel, per output
//   channel: Conv's axis 0, MatMul's and Gemm's output-column axis);
// - biases of Conv and Gemm (alpha = beta = 1) are stored as int32 with scale
//   input_scale x weight_scale and zero point 0, so that an int8 x int8 -> int32 kernel adds them
//   exactly.
// Models below opset 13 are first converted to opset 13 by ONNX's own version converter
// (onnx/version_converter), since per-axis DequantizeLinear needs opset 13.
// Rounding: every quantisation rounds half to even and saturates (ONNX QuantizeLinear).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/tensor.h"

namespace tessel::driver {

/// How a tensor's range is taken from the calibration runs.
enum class CalibrationMethod {
  minmax,      // the smallest and largest value seen
  percentile,  // the (100 - p)-th and p-th percentiles of every value seen (2,048-bin histogram)
};

struct QuantizeOptions {
  CalibrationMethod method = CalibrationMethod::minmax;
  double percentile = 99.999;  // percentile method only: p in (50, 100]
  bool per_channel = false;    // weights per output channel instead of per tensor
  std::set<std::string> op_types = {"Conv", "MatMul", "Gemm"};
  // Conv -> BatchNormalization folded into one Conv before quantising (fold_conv_batchnorm), and
  // the Q/DQ of a quantised node's output placed after a Relu that alone reads it (Conv -> Relu
  // -> Q -> DQ, not Conv -> Q -> DQ -> Relu -> Q -> DQ): ONNX Runtime's quant_pre_process and its
  // QDQ quantizer's layout. false: the layout of tessel quantize before 2026-12-03 (the committed
  // golden int8 models).
  bool fuse = true;
};

/// Folds every Conv -> BatchNormalization pair of `model` whose BN parameters, weight and bias are
/// float32 initializers into one Conv with new weight and bias initializers (W' = a W, b' = a (b -
/// mean) + B per output channel, a = scale / sqrt(var + eps); ONNX BatchNormalization in
/// inference mode). The Conv then writes the BN's output tensor. Pairs that do not fit (Conv
/// output read elsewhere or a graph output, weight shared, training_mode 1, spatial 0) stay as
/// they are. Returns the number of pairs folded. `model_name` names the model in errors.
int fold_conv_batchnorm(onnx::ModelProto& model, const std::string& model_name);

/// Scale and zero point of one int8 quantisation: q = saturate(round_half_even(x / scale) + zp),
/// x = (q - zp) x scale (ONNX QuantizeLinear / DequantizeLinear).
struct QParams {
  float scale = 1.f;
  int32_t zero_point = 0;
};

/// Activation parameters for the range [rmin, rmax] widened to contain 0: int8 [-128, 127],
/// scale = (rmax - rmin) / 255, zero point = round_half_even(-128 - rmin / scale) (ONNX Runtime's
/// compute_scale_zp); scale 1 and zero point 0 for an all-zero range. Throws tessel::Error for a
/// non-finite bound or rmin > rmax.
QParams activation_qparams(double rmin, double rmax);

/// Symmetric weight parameters for the largest magnitude `absmax`: int8 [-127, 127], scale
/// absmax / 127, zero point 0 (scale 1 for absmax = 0). Throws tessel::Error for a non-finite or
/// negative absmax.
QParams weight_qparams(double absmax);

/// `x` quantised to int8 with `p`: round half to even, then saturate to [-128, 127].
int8_t quantize_int8(float x, QParams p);

/// What quantize_static did.
struct QuantizeSummary {
  int64_t opset_before = 0, opset_after = 0;
  int batchnorms_folded = 0;         // Conv -> BatchNormalization pairs folded (options.fuse)
  int relus_fused = 0;               // quantised outputs whose Q/DQ went after their Relu
  int nodes_quantized = 0;           // nodes of QuantizeOptions::op_types given Q/DQ inputs
  std::vector<std::string> skipped;  // "node NAME (OP): why" for the nodes left in float
  int activation_pairs = 0;          // QuantizeLinear -> DequantizeLinear pairs on activations
  int weights_quantized = 0, biases_quantized = 0;
  int64_t weight_bytes_float = 0, weight_bytes_quantized = 0;  // of the quantised weights/biases
};

/// Quantises `model` with ranges measured by running the tessel reference interpreter on each set
/// of `calibration` (graph inputs by name; every set with the same shapes, which bind the model's
/// dynamic dims). `model_name` names the model in errors. Returns the QDQ model, checked with
/// onnx::checker and imported back by tessel's frontend. Throws tessel::Error for an empty
/// calibration, a set missing an input or of other shapes, a model the version converter or the
/// importer rejects, or a result that fails the checks (naming the model and what failed).
onnx::ModelProto quantize_static(const onnx::ModelProto& model, const std::string& model_name,
                                 const std::vector<std::map<std::string, Tensor>>& calibration,
                                 const QuantizeOptions& options,
                                 QuantizeSummary* summary = nullptr);

/// `n` sets of random inputs for `model`'s runtime inputs, each float input uniform in [-1, 1)
/// from a SplitMix64 stream seeded with `seed` (x = 2u - 1, u = (next >> 40) / 2^24, so the
/// values are the same on every host), shapes from the model with dynamic dims bound by
/// `input_shapes`. Throws tessel::Error for a non-float input or an unbound dynamic dim.
std::vector<std::map<std::string, Tensor>> random_calibration(
    const onnx::ModelProto& model, const std::string& model_name, int n, uint64_t seed,
    const std::map<std::string, Shape>& input_shapes);

/// Calibration sets read from `dir`: each `test_data_set_N/` subdirectory (the ONNX backend-test
/// layout) or, when there is none, `dir` itself holds input_K.pb for the model's K-th runtime
/// input. Throws tessel::Error naming the directory or file when none is found, a file is missing
/// or does not parse.
std::vector<std::map<std::string, Tensor>> load_calibration_dir(const onnx::ModelProto& model,
                                                                const std::string& dir);

}  // namespace tessel::driver
