// The activation list of the ONNX recurrent ops (RNN, GRU, LSTM: attributes `activations`,
// `activation_alpha`, `activation_beta`), parsed once for the reference kernels
// (compiler/ops/rnn.cpp) and the compiled targets' expansion (passes/graph/expand_recurrent.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace tessel::ops {

/// The recurrent cell of an RNN, GRU or LSTM node.
enum class RnnCell { rnn, gru, lstm };

/// Activations per direction: RNN 1 (f), GRU 2 (f, g), LSTM 3 (f, g, h).
inline int activation_count(RnnCell c) {
  return c == RnnCell::rnn ? 1 : (c == RnnCell::gru ? 2 : 3);
}

/// One activation with its alpha / beta.
struct RnnActivation {
  std::string name;
  float alpha = 0, beta = 0;
};

/// The node's activations, activation_count(cell) per direction for `dirs` directions (the
/// defaults of the ONNX operator docs when the attribute is absent); alpha / beta default to those
/// of the ops of the same name and the attribute lists are consumed in order by the activations
/// that take a value. Throws tessel::Error (naming the node) for a malformed attribute or a wrong
/// count, tessel::Unsupported for an activation outside the ops' list.
std::vector<RnnActivation> parse_rnn_activations(const Node& node, RnnCell cell, int64_t dirs);

}  // namespace tessel::ops
