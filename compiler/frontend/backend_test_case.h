// Preparing a model of the ONNX backend-test layout (model.onnx + test_data_set_N/input_K.pb)
// for import: shared by `tessel conform` (compiler/driver/conform.cpp) and the node-conformance
// test (tests/ops/test_onnx_node_conformance.cpp), so both judge a case the same way.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>
#include <vector>

namespace tessel::frontend {

/// Ops the frontend rewrites into registered ones (Upsample-7/9 -> Resize): a case using them is
/// not "unsupported" just because the op itself has no reference kernel.
bool rewritten_by_frontend(const std::string& op);

/// Raises the default-domain opset of `model` from 1..6 to 7 when every op in `ops` has the same
/// semantics in opset 1..6 as in 7..17 (only type constraints changed: Elu, Selu, HardSigmoid,
/// InstanceNormalization, Not, Softplus, Softsign, GlobalAveragePool, GlobalMaxPool,
/// ReduceLogSum), so it imports as opset 7. Returns whether it raised it.
bool raise_opset_to_7_when_unchanged(onnx::ModelProto& model, const std::set<std::string>& ops);

/// The graph inputs of a backend-test model and which of them to bind as initializers.
struct BackendTestInputs {
  /// Graph inputs that are not initializers, in order: input_K.pb holds the K-th.
  std::vector<std::string> input_names;
  /// Those a shape-determining input slot (ops::shape_input_slots: Reshape's shape, Expand's
  /// shape, ...) depends on, directly or through other nodes: they must be known at compile time;
  /// and those the weight slots depend on (Conv/ConvTranspose W and B, BatchNormalization's
  /// scale, B, mean and var), which a deployed model holds as initializers.
  std::set<std::string> bind;
};
BackendTestInputs backend_test_inputs(const onnx::ModelProto& model);

}  // namespace tessel::frontend
