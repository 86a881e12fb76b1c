// ONNX frontend: ModelProto (via ONNX's protobuf library) -> Graph IR.
//
// Imports initializers and Constant nodes as constants, converts attributes, binds dynamic input
// dims from ImportOptions::input_shapes, normalises opset 9-17 differences (e.g. Clip min/max and
// Slice starts/ends attributes of older opsets become constant inputs; ReduceX axes as an input),
// and runs shape inference. Errors (tessel::Error) name the file and the node or input.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "compiler/ir/graph.h"

namespace tessel::frontend {

struct ImportOptions {
  /// Static shapes for graph inputs by name; required for every input with a dynamic dim, and
  /// checked against the model's static dims where given.
  std::map<std::string, Shape> input_shapes;
};

/// Loads an .onnx file. Throws tessel::Error on a missing/corrupt file, an unsupported opset
/// (< 7 or > 18 for the default domain), an unbound dynamic dim (naming input, axis and dim name,
/// and how to bind it), an op without a shape rule (naming op and node).
std::unique_ptr<Graph> import_onnx(const std::string& path, const ImportOptions& options = {});

/// Same, from serialized ModelProto bytes; `source_name` is used in error messages.
std::unique_ptr<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source_name,
                                         const ImportOptions& options = {});

/// Reads a serialized TensorProto (the ONNX backend-test input_K.pb / output_K.pb files).
Tensor load_tensor_pb(const std::string& path);

/// Parses "1,3,48,192" into a Shape; throws tessel::Error naming `context` on bad syntax.
Shape parse_dims(const std::string& text, const std::string& context);

}  // namespace tessel::frontend
