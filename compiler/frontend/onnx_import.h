// ONNX frontend: ModelProto (via ONNX's protobuf library) -> Graph IR.
//
// Imports initializers and Constant nodes (value, value_float(s), value_int(s)) as constants,
// converts attributes of every tensor-level kind, binds dynamic input dims from
// ImportOptions::input_shapes, runs shape inference with data propagation node by node
// (ops::infer_and_propagate) and checks the result with verify_graph. Default-domain opsets 6..18
// are accepted; each op is canonicalised to its opset-17 form so the op library implements one
// semantics: opset 6's legacy broadcasting (broadcast/axis of Add/Sub/Mul/Div/Pow and the
// logical/comparison ops), Gemm's broadcast and PRelu-6's per-channel slope take their opset-7
// forms; Clip(<11) min/max, Slice(<10) starts/ends/axes, Squeeze/Unsqueeze/ReduceSum(<13)
// axes, Split(<13) split, Pad(<11) pads/value, TopK(<10) k become constant inputs;
// Softmax/LogSoftmax/Hardmax(<13) become Reshape(2-D) -> op(axis=1) -> Reshape when the axis is not
// the last; Resize-10 and Upsample become Resize(X, roi=[], scales) with asymmetric coordinates
// (nearest: floor); BatchNormalization(<9) spatial and Dropout(<12) ratio/is_test are dropped;
// ReduceX-18 axes input, Split-18 num_outputs, Pad-18 axes and Resize-18 defaults map back to
// opset 17. Errors name the file and the node, input or initializer: tessel::Unsupported for valid
// models tessel does not handle (other domains, opsets, ops, subgraphs, external data, string or
// bfloat16 tensors), tessel::Error otherwise.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "compiler/ir/graph.h"

namespace tessel::frontend {

struct ImportOptions {
  /// Static shapes for graph inputs by name; required for every input with a dynamic dim, and
  /// checked against the model's static dims where given.
  std::map<std::string, Shape> input_shapes;
  /// Graph inputs bound to a value at compile time (`--input-value sr=16000`, an experiment's
  /// `value:`): each becomes a constant holding the values in row-major order (as many as the
  /// input's elements), so shape rules, data propagation and fold_control see it, e.g. an If on
  /// the sample rate. The input is then no longer a runtime input of the graph. Errors name the
  /// input: not a runtime input, a wrong count, a value its dtype cannot hold exactly.
  std::map<std::string, std::vector<double>> input_values;
  /// How the messages for an unbound input say to bind it, given the input's name and the
  /// model's dims ("1,3,?,?", '?' where dynamic; "D0,D1,..." when the model has no shape).
  /// Empty: "--input-shape NAME=DIMS" (the CLI's flag); an experiment names its own key.
  std::function<std::string(const std::string& name, const std::string& dims)> bind_hint;
};

/// Loads an .onnx file. Throws tessel::Error on a missing/corrupt file, an unsupported opset
/// (< 7 or > 18 for the default domain), an unbound dynamic dim (naming input, axis and dim name,
/// and how to bind it: --input-shape x=1,3,?,?), a bound shape of the wrong rank or conflicting
/// with a static dim, an input_shapes name that is not a runtime input, an op without a shape rule
/// (naming op and node). Unnamed nodes are named "<op_type>_<n>".
std::unique_ptr<Graph> import_onnx(const std::string& path, const ImportOptions& options = {});

/// Same, from serialized ModelProto bytes; `source_name` is used in error messages.
std::unique_ptr<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source_name,
                                         const ImportOptions& options = {});

/// Reads a serialized TensorProto (the ONNX backend-test input_K.pb / output_K.pb files), from
/// raw_data or the typed field of its dtype. Throws tessel::Error naming the file.
Tensor load_tensor_pb(const std::string& path);

/// Same, from the serialized bytes; `source_name` is used in error messages.
Tensor parse_tensor_pb(const std::string& bytes, const std::string& source_name);

/// Parses "1,3,48,192" into a Shape; throws tessel::Error naming `context` on bad syntax or a
/// non-positive dim.
Shape parse_dims(const std::string& text, const std::string& context);

}  // namespace tessel::frontend
