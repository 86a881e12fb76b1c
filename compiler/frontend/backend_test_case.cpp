// Preparing an ONNX backend-test model for import (see backend_test_case.h).
#include "compiler/frontend/backend_test_case.h"

#include <algorithm>
#include <functional>
#include <map>

#include "compiler/ops/op_registry.h"

namespace tessel::frontend {

bool rewritten_by_frontend(const std::string& op) { return op == "Upsample"; }

bool raise_opset_to_7_when_unchanged(onnx::ModelProto& model, const std::set<std::string>& ops) {
  static const std::set<std::string> same_since_opset1 = {
      "Elu",      "Selu",     "HardSigmoid",       "InstanceNormalization", "Not",
      "Softplus", "Softsign", "GlobalAveragePool", "GlobalMaxPool",         "ReduceLogSum",
  };
  const bool same = std::all_of(ops.begin(), ops.end(), [](const std::string& op) {
    return same_since_opset1.count(op) > 0;
  });
  bool raised = false;
  for (auto& os : *model.mutable_opset_import())
    if ((os.domain().empty() || os.domain() == "ai.onnx") && os.version() < 7 && same) {
      os.set_version(7);
      raised = true;
    }
  return raised;
}

BackendTestInputs backend_test_inputs(const onnx::ModelProto& model) {
  BackendTestInputs r;
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  std::set<std::string> tensor_inputs;
  for (const auto& vi : model.graph().input()) {
    if (!initializers.count(vi.name())) r.input_names.push_back(vi.name());
    if (vi.type().has_tensor_type()) tensor_inputs.insert(vi.name());
  }
  // Every node, also those of subgraphs (ONNX names are unique across scopes); a node with
  // subgraphs also depends on what its subgraphs read (their nodes' inputs).
  std::vector<const onnx::NodeProto*> nodes;
  std::map<const onnx::NodeProto*, std::vector<std::string>> reads;
  std::function<void(const onnx::GraphProto&, std::vector<std::string>*)> collect =
      [&](const onnx::GraphProto& g, std::vector<std::string>* enclosing_reads) {
        for (const auto& n : g.node()) {
          nodes.push_back(&n);
          auto& rd = reads[&n];
          rd.assign(n.input().begin(), n.input().end());
          for (const auto& a : n.attribute())
            if (a.has_g()) collect(a.g(), &rd);
          if (enclosing_reads)
            enclosing_reads->insert(enclosing_reads->end(), rd.begin(), rd.end());
        }
        if (enclosing_reads)
          for (const auto& vi : g.output()) enclosing_reads->push_back(vi.name());
      };
  collect(model.graph(), nullptr);
  std::map<std::string, const onnx::NodeProto*> producer;
  for (const onnx::NodeProto* n : nodes)
    for (const auto& o : n->output()) producer[o] = n;
  std::set<std::string> visited;
  std::vector<std::string> work;
  // The weight slots of the contractions and BatchNormalization's parameters: a deployed model
  // holds them as initializers (the backend tests feed them as inputs); the compiled targets lay
  // them out at compile time (the NPU's fractal weight format, the folded BN scale and shift).
  // The quantised contractions' weights, scales, zero points and bias likewise (the NPU folds
  // w - w_zero_point, the zero-point correction and the requantisation scale into its int8
  // weights and fix table: compiler/backend/npu/int8_ops.h), and the scales and zero points of
  // QuantizeLinear / DequantizeLinear (a quantised model's are initializers).
  static const std::map<std::string, std::vector<int>> weight_slots = {
      {"Conv", {1, 2}},
      {"ConvTranspose", {1, 2}},
      {"BatchNormalization", {1, 2, 3, 4}},
      {"QLinearConv", {1, 2, 3, 4, 5, 6, 7, 8}},
      {"ConvInteger", {1, 2, 3}},
      {"QLinearMatMul", {1, 2, 3, 4, 5, 6, 7}},
      {"MatMulInteger", {1, 2, 3}},
      {"QuantizeLinear", {1, 2}},
      {"DequantizeLinear", {1, 2}}};
  for (const onnx::NodeProto* n : nodes) {
    std::vector<int> slots;
    auto it = ops::shape_input_slots().find(n->op_type());
    if (it != ops::shape_input_slots().end()) slots = it->second;
    auto wt = weight_slots.find(n->op_type());
    if (wt != weight_slots.end()) slots.insert(slots.end(), wt->second.begin(), wt->second.end());
    for (int slot : slots)
      if (slot < n->input_size() && !n->input(slot).empty()) work.push_back(n->input(slot));
  }
  while (!work.empty()) {
    const std::string v = work.back();
    work.pop_back();
    if (!visited.insert(v).second) continue;
    if (std::find(r.input_names.begin(), r.input_names.end(), v) != r.input_names.end() &&
        tensor_inputs.count(v))  // a sequence input stays an input (the import refuses it)
      r.bind.insert(v);
    auto p = producer.find(v);
    if (p != producer.end())
      for (const auto& in : reads[p->second])
        if (!in.empty()) work.push_back(in);
  }
  return r;
}

}  // namespace tessel::frontend
