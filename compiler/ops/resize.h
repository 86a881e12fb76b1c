// Resize's interpolation as per-axis matrices, for the compiled targets' lowering
// (passes/graph/resize_as_matmul.cpp). The weights are the reference kernel's own (resize.cpp),
// so a lowering built from them computes what the reference computes.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"

namespace tessel::ops {

/// One axis of a Resize: output coordinate o reads sum_i weights[o * in + i] * x[.., i, ..].
struct ResizeAxisMatrix {
  int64_t in = 0, out = 0;
  std::vector<double> weights;  // [out, in] row-major; taps clamped to the edge are summed
  std::vector<bool> outside;    // [out]: tf_crop_and_resize extrapolates there (row all zero)
  /// True when the axis maps x to itself (in == out, weights the identity, nothing outside).
  bool identity() const;
};

/// The interpolation of a shape-inferred Resize `node` (ONNX Resize, opset 11-17: every mode,
/// nearest_mode, coordinate_transformation_mode, cubic_coeff_a, exclude_outside), one matrix per
/// axis of X, from the constant inputs roi / scales / sizes. An output element is the tensor
/// product of the axes' rows applied to X, or extrapolation_value where any axis is outside.
/// Throws tessel::Error (naming the node) when scales / sizes / roi are not constants or are
/// malformed, as the reference does.
std::vector<ResizeAxisMatrix> resize_axis_matrices(const Node& node);

/// The node's extrapolation_value attribute (default 0).
double resize_extrapolation_value(const Node& node);

}  // namespace tessel::ops
