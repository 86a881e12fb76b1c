// Preparing an ONNX backend-test model for import (see backend_test_case.h).
#include "compiler/frontend/backend_test_case.h"

#include <algorithm>
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
  for (const auto& vi : model.graph().input())
    if (!initializers.count(vi.name())) r.input_names.push_back(vi.name());
  std::map<std::string, const onnx::NodeProto*> producer;
  for (const auto& n : model.graph().node())
    for (const auto& o : n.output()) producer[o] = &n;
  std::set<std::string> visited;
  std::vector<std::string> work;
  for (const auto& n : model.graph().node()) {
    auto it = ops::shape_input_slots().find(n.op_type());
    if (it == ops::shape_input_slots().end()) continue;
    for (int slot : it->second)
      if (slot < n.input_size() && !n.input(slot).empty()) work.push_back(n.input(slot));
  }
  while (!work.empty()) {
    const std::string v = work.back();
    work.pop_back();
    if (!visited.insert(v).second) continue;
    if (std::find(r.input_names.begin(), r.input_names.end(), v) != r.input_names.end())
      r.bind.insert(v);
    auto p = producer.find(v);
    if (p != producer.end())
      for (const auto& in : p->second->input())
        if (!in.empty()) work.push_back(in);
  }
  return r;
}

}  // namespace tessel::frontend
