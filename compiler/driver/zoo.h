// Standard workloads ("the zoo"): ResNet-18, ResNet-50, MobileNetV2 and one BERT-base encoder
// layer, built as ONNX models (opset 17, IR version 8) with deterministic pseudo-random weights,
// so experiments run the same architectures as the literature. `tessel zoo NAME -o FILE.onnx`
// writes them; docs/zoo.md lists sources, parameter and MAC counts.
//
// Architectures (as published, in the layout of their reference implementations):
//  - resnet18, resnet50: He, Zhang, Ren, Sun, "Deep Residual Learning for Image Recognition",
//    CVPR 2016, as torchvision.models.resnet18/50 (ResNet v1.5: the bottleneck strides on its 3x3
//    conv). Input "input" [N,3,224,224], output "logits" [N,1000].
//  - mobilenetv2: Sandler, Howard, Zhu, Zhmoginov, Chen, "MobileNetV2: Inverted Residuals and
//    Linear Bottlenecks", CVPR 2018, as torchvision.models.mobilenet_v2 (width 1.0; ReLU6 written
//    as Clip(0, 6); depthwise convolutions with group = channels). Input "input" [N,3,224,224],
//    output "logits" [N,1000].
//  - bert_layer: one BERT-base encoder layer (Devlin, Chang, Lee, Toutanova, "BERT", NAACL 2019;
//    the Transformer encoder of Vaswani et al., "Attention Is All You Need", NeurIPS 2017), as
//    HuggingFace BertLayer exports from PyTorch at opset <= 16: hidden 768, 12 heads of 64, FFN
//    3072, GELU (erf form), LayerNorm eps 1e-12 written out as ReduceMean/Sub/Pow/ReduceMean/Add/
//    Sqrt/Div/Mul/Add; no attention mask. Input "hidden_states" [N,128,768], output "output"
//    [N,128,768].
//
// Weights. Every random initializer is drawn from its own stream: std::mt19937_64 (whose output
// sequence the C++ standard specifies) seeded with tensor_seed(model seed, initializer name); each
// draw becomes a double in [0, 1) from its top 53 bits, then lo + (hi - lo) * u rounded once to
// float. Uniform rather than normal draws, because std::normal_distribution and libm are not
// bit-identical across platforms while this recipe is. Scales:
//  - conv weights (each followed by BatchNormalization): He-uniform, U(-b, b), b = sqrt(6/fan_in),
//    the variance 2/fan_in of He et al., "Delving Deep into Rectifiers", ICCV 2015 (fan_in =
//    in_channels / group * kh * kw);
//  - linear layers (FC, BERT projections): LeCun-uniform, b = sqrt(3/fan_in) (variance
//    1/fan_in), biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)) as PyTorch's nn.Linear;
//  - BatchNormalization: scale U(0.5, 1.5), except U(0.1, 0.3) for the last one of each residual
//    branch (bn2 of a basic block, bn3 of a bottleneck, the projection of a MobileNetV2 block
//    with a residual Add): residual branches are small next to the identity path, as in trained
//    ResNets and as zero_init_residual (Goyal et al., "Accurate, Large Minibatch SGD", 2017)
//    starts them. With scale ~1 on every branch these random networks are chaotic: a 1e-3
//    relative input perturbation changes ResNet-50's logits by 3% (with U(0.1, 0.3): 0.12%), and
//    fp16 rounding alone put the NPU's logits off by 4% of their range. Bias U(-0.25, 0.25).
//    Running mean and variance are measured, as a trained network's are on data: the model runs at
//    batch 1 on tessel's reference interpreter with a calibration input (U(-sqrt(3), sqrt(3)),
//    mean square 1, from the stream "calibration.input"), and each layer, in order, gets the
//    per-channel mean and variance of its input (variance floored at 1e-3 x the layer's mean).
//    So every BatchNormalization output is gamma * z + beta with z of unit variance and
//    activations stay O(1) at any depth (tests/zoo measures the RMS of every activation on
//    another input). The statistics are a function of the seed and of the reference kernels'
//    fp32 arithmetic: a change in a reference kernel's summation order can change their last
//    bits, and so the file's bytes;
//  - BERT LayerNorm: scale U(0.8, 1.2), bias U(-0.1, 0.1) (no statistics to measure).
// Inputs are meant to have unit mean square (normalised images, LayerNorm'd hidden states).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace tessel::zoo {

/// One model of the zoo.
struct ZooModel {
  std::string name;           // CLI name, e.g. "resnet50"
  std::string title;          // e.g. "ResNet-50"
  std::string source;         // the paper (and reference implementation) it follows
  uint64_t default_seed = 0;  // seed used when none is given
  std::string input_name;     // the single graph input
  Shape input_shape;          // at batch 1; dim 0 is the batch
  std::string output_name;    // the single graph output
};

/// Every zoo model, in listing order.
const std::vector<ZooModel>& zoo_models();

/// The model called `name`; throws tessel::Error "unknown model 'X' (models: a, b, ...)".
const ZooModel& find_zoo_model(const std::string& name);

struct ZooOptions {
  int64_t batch = 1;             // dim 0 of the input (and of every activation); 1..4096
  std::optional<uint64_t> seed;  // weight seed; the model's default_seed when absent
  /// Measure the BatchNormalization statistics (one reference run at batch 1). false leaves them
  /// at mean 0, variance 1: the structure and the counts are the same, but activations then
  /// grow with depth; only for counting (tessel zoo --list).
  bool calibrate = true;
};

/// Builds the ONNX model (opset 17, IR version 8; producer "tessel zoo"; metadata_props record
/// name, seed and batch). The weights do not depend on the batch. Throws tessel::Error for an
/// unknown name or a batch < 1 or > 4096.
onnx::ModelProto build_zoo_model(const std::string& name, const ZooOptions& options = {});

/// Serializes `model` with protobuf's deterministic serialization: equal models give equal bytes.
/// Throws tessel::Error when protobuf fails (e.g. a model over 2 GiB).
std::string serialize_model(const onnx::ModelProto& model);

/// Seed of an initializer's stream: SplitMix64 finalizer of (model_seed XOR FNV-1a-64(name)), so
/// each tensor's values depend only on the model seed and its own name.
uint64_t tensor_seed(uint64_t model_seed, const std::string& tensor_name);

/// Trainable parameters as PyTorch counts them: elements of the floating-point constants of more
/// than one element that are graph inputs of nodes (weights, biases, norm scales and shifts),
/// except BatchNormalization's running mean and variance (inputs 3 and 4), which PyTorch keeps as
/// buffers. Scalar constants (Clip bounds, 1/sqrt(d), epsilon) and integer shape tensors are not
/// parameters.
int64_t count_parameters(const Graph& graph);

/// Multiply-accumulates of the Conv, Gemm and MatMul nodes (shapes must be inferred): per node,
/// output elements x reduction length -- Conv: N*C_out*H_out*W_out * (C_in/group)*kh*kw (from the
/// weight's shape [C_out, C_in/group, kh, kw]); Gemm: M*N*K; MatMul: batch*M*N*K. Other ops are
/// not counted (the convention of torchvision's GFLOPS column and of Table 1 of He et al.).
int64_t count_macs(const Graph& graph);

}  // namespace tessel::zoo

namespace tessel::driver {

struct ZooArgs {
  std::string name;
  std::string output;            // -o FILE.onnx
  int64_t batch = 1;             // --batch
  std::optional<uint64_t> seed;  // --seed
  bool list = false;             // --list
};

/// `tessel zoo NAME -o FILE.onnx [--batch N] [--seed S]` and `tessel zoo --list`. Writes the model
/// atomically (temporary file + rename; nothing is written on an error) and prints one line with
/// its input/output, parameter and MAC counts. --list prints a table of the models with their
/// parameter and MAC counts at batch 1. Returns 0, or 2 on an error (unknown name, listing the
/// valid ones; missing -o; a missing output directory; bad --batch).
int cmd_zoo(const ZooArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tessel::driver
