// The operator library: for every supported ONNX op, its shape rule and its reference kernel.
//
// Shape rules follow the ONNX operator docs (https://onnx.ai/onnx/operators/) including
// multidirectional (numpy-style) broadcasting. Reference kernels are plain, obviously-correct C++:
// float tensors are computed in fp32 (f64 in f64), integer tensors in int64; they are the values
// every target is checked against, and they are themselves checked against the ONNX backend test
// data (tests/test_reference_conformance.cpp).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace tessel::ops {

/// Fills dtype and shape of `node.outputs` from its inputs (and from constant inputs where the
/// op needs their values, e.g. Reshape's shape). Throws tessel::Error naming the node on
/// inconsistent shapes, wrong types, missing inputs or attributes out of range.
using InferFn = std::function<void(Node& node)>;

/// Computes the outputs of `node` from its inputs (nullptr for omitted optional inputs).
/// Throws tessel::Error naming the node for unsupported attribute values.
using ReferenceFn =
    std::function<std::vector<Tensor>(const Node& node, const std::vector<const Tensor*>& inputs)>;

/// One operator of the library.
struct OpDef {
  std::string op_type;
  InferFn infer;
  ReferenceFn reference;
};

/// Registers every built-in op (defined in compiler/ops/builtin_ops.cpp, which calls one
/// register_*_ops() function per op family). Called once, lazily, by find_op().
void register_builtin_ops();
/// Registers an op (called from register_builtin_ops()).
void register_op(OpDef def);
/// The op definition, or nullptr when the op is unknown.
const OpDef* find_op(const std::string& op_type);
/// All registered op types, sorted.
std::vector<std::string> registered_ops();

/// Runs the shape rule of `node`; throws tessel::Unsupported "unsupported op 'X' (node 'Y')" if
/// the op is unknown.
void infer_node(Node& node);

/// Outputs with more elements than this are not computed at compile time by propagate_values.
inline constexpr int64_t kMaxPropagatedElements = 4096;

/// Data propagation for one node whose shape rule has run: clears the outputs' known values, then
/// sets Value::constant on every output when (a) the op is Shape or Size (their values depend only
/// on the static input shape), or (b) every present input has a known value, every output has at
/// most kMaxPropagatedElements elements, the op has a reference kernel and is deterministic (not
/// Random*, Multinomial, Bernoulli). The node is kept: a produced value with a known value is
/// "known at compile time" (constant folding removes such nodes later). A kernel that throws
/// tessel::Unsupported leaves the values unknown; other errors propagate.
void propagate_values(Node& node);
/// infer_node(node), then propagate_values(node).
void infer_and_propagate(Node& node);
/// Runs infer_and_propagate on every node in order, so that shape rules downstream see values
/// computed upstream (e.g. Reshape's shape computed by Shape -> Cast -> Slice -> Concat).
void infer_graph(Graph& graph);
/// Runs the reference kernel of `node`.
std::vector<Tensor> run_reference_node(const Node& node, const std::vector<const Tensor*>& inputs);

/// Multidirectional broadcast of two shapes (ONNX Broadcasting.md); throws tessel::Error naming
/// `context` if incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& context);

/// Input slots, per op type, whose values determine an output shape (Reshape's shape, Slice's
/// starts/ends/axes/steps, ...) or, for data-dependent ops (NonZero, Compress, Unique,
/// NonMaxSuppression), the output values' count. A runner that binds graph inputs (the ONNX
/// backend-test cases) must treat a graph input feeding one of these slots as a compile-time
/// constant taken from the test data.
const std::map<std::string, std::vector<int>>& shape_input_slots();

}  // namespace tessel::ops
