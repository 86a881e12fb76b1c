// Fuzz target `onnx`: an ONNX model (serialized ModelProto) through import (opset
// canonicalisation, shape inference with data propagation, verify_graph), fold_control and the
// default graph pass pipeline (verify_graph after every pass), as the driver's load_model runs
// them, and the Graph IR text round trip.
//
// Dynamic input dims (dim_param or no dim_value) are bound the way a user binds them with
// --input-shape: axis 0 to 1, every other axis to 32. The pattern fusions get the NPU's op set
// (lower::compute_ops(), what `--target npu` passes) for inputs of even length and every op (what
// `--target ref` passes) for odd lengths, so both pipelines are explored.
// Properties checked on an accepted model: print(parse(print(g))) == print(g)
// (compiler/ir/graph.h).
#include <onnx/onnx_pb.h>

#include <memory>
#include <set>

#include "compiler/frontend/onnx_import.h"
#include "compiler/lower/op_compute.h"
#include "passes/graph/graph_passes.h"
#include "passes/graph/pass_manager.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

using namespace tessel;

/// The input shapes a user would bind for the dynamic dims of `bytes`'s graph inputs.
std::map<std::string, Shape> bind_dynamic_dims(const std::string& bytes) {
  std::map<std::string, Shape> shapes;
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes) || !model.has_graph()) return shapes;
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  for (const auto& in : model.graph().input()) {
    if (initializers.count(in.name()) || !in.type().has_tensor_type() ||
        !in.type().tensor_type().has_shape())
      continue;
    const auto& dims = in.type().tensor_type().shape().dim();
    Shape shape;
    bool dynamic = false;
    for (int i = 0; i < dims.size(); ++i) {
      const bool known = dims[i].has_dim_value() && dims[i].dim_value() > 0;
      dynamic |= !known;
      shape.push_back(known ? dims[i].dim_value() : (i == 0 ? 1 : 32));
    }
    if (dynamic) shapes[in.name()] = shape;
  }
  return shapes;
}

}  // namespace

TESSEL_FUZZ_TARGET(onnx) {
  const std::string bytes(data);
  frontend::ImportOptions options;
  options.input_shapes = bind_dynamic_dims(bytes);
  std::unique_ptr<Graph> graph = frontend::import_onnx_bytes(bytes, "fuzz.onnx", options);

  graph_passes::PipelineOptions passes;
  if (data.size() % 2 == 0) {
    static const std::set<std::string> npu_ops = [] {
      const auto ops = lower::compute_ops();
      return std::set<std::string>(ops.begin(), ops.end());
    }();
    passes.available = [](const std::string& op) { return npu_ops.count(op) != 0; };
  }
  graph_passes::fold_control(*graph);  // as the driver does (load_model) before the pipeline
  graph_passes::run_pipeline(*graph, passes);

  const std::string text = graph_to_string(*graph);
  const std::unique_ptr<Graph> reparsed = tessel::fuzz::must_succeed(
      "parse_graph of the printed graph", [&] { return parse_graph(text, "printed graph"); });
  tessel::fuzz::fuzz_check(graph_to_string(*reparsed) == text,
                           "print(parse(print(g))) differs from print(g)");
  return true;
}
