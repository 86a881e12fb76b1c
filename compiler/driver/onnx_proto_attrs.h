// Attribute lookups on raw ONNX NodeProtos, for the driver code that edits models before import
// (tessel quantize and its BatchNormalization fold).
#pragma once

#include <string>

#include "onnx/onnx_pb.h"

namespace tessel::driver {

/// The INT attribute `name` of node `n`, or `dflt` when the node does not carry it (ONNX: an
/// absent attribute takes the operator's default).
inline int64_t proto_attr_int(const onnx::NodeProto& n, const std::string& name, int64_t dflt) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return dflt;
}

/// The FLOAT attribute `name` of node `n`, or `dflt` when absent.
inline float proto_attr_float(const onnx::NodeProto& n, const std::string& name, float dflt) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.f();
  return dflt;
}

}  // namespace tessel::driver
