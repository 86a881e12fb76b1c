// The activation list of the ONNX recurrent ops (see rnn_activations.h).
#include "compiler/ops/rnn_activations.h"

#include <variant>

#include "compiler/ops/op_util.h"

namespace tessel::ops {

std::vector<RnnActivation> parse_rnn_activations(const Node& node, RnnCell cell, int64_t dirs) {
  static const char* defaults[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  const int per = activation_count(cell);
  std::vector<std::string> names;
  auto it = node.attrs.all().find("activations");
  if (it != node.attrs.all().end()) {
    const auto* v = std::get_if<std::vector<std::string>>(&it->second);
    if (!v) node_fail(node, "attribute activations must be a list of strings");
    names = *v;
  }
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d)
      for (int k = 0; k < per; ++k) names.push_back(defaults[static_cast<int>(cell)][k]);
  if (static_cast<int64_t>(names.size()) != per * dirs)
    node_fail(node, "activations has {} entries, expected {} ({} per direction)", names.size(),
              per * dirs, per);
  const auto alphas = node.attrs.get_floats_or("activation_alpha", {}, node.name);
  const auto betas = node.attrs.get_floats_or("activation_beta", {}, node.name);
  size_t ai = 0, bi = 0;
  std::vector<RnnActivation> acts;
  for (const std::string& n : names) {
    float da = 0, db = 0;  // the ONNX defaults of the ops of the same name
    bool uses_a = true, uses_b = false;
    if (n == "Affine") {
      da = 1, db = 0, uses_b = true;
    } else if (n == "LeakyRelu") {
      da = 0.01f;
    } else if (n == "ThresholdedRelu" || n == "Elu") {
      da = 1;
    } else if (n == "ScaledTanh") {
      da = 1, db = 1, uses_b = true;
    } else if (n == "HardSigmoid") {
      da = 0.2f, db = 0.5f, uses_b = true;
    } else if (n == "Sigmoid" || n == "Tanh" || n == "Relu" || n == "Softsign" || n == "Softplus") {
      uses_a = false;
    } else {
      node_unsupported(node,
                       "activation '{}' is not one of the recurrent ops' list (Relu, Tanh, "
                       "Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, "
                       "Elu, Softsign, Softplus)",
                       n);
    }
    RnnActivation a{n};
    a.alpha = uses_a && ai < alphas.size() ? alphas[ai++] : da;
    a.beta = uses_b && bi < betas.size() ? betas[bi++] : db;
    acts.push_back(a);
  }
  return acts;
}

}  // namespace tessel::ops
