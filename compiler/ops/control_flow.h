// Helpers of the control-flow ops (If, Loop, Scan; compiler/ops/control_flow.cpp) shared with the
// graph pass that folds and unrolls them for the compiled targets (passes/graph/fold_control).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "compiler/ir/graph.h"

namespace tessel::ops {

/// The type (and, when `known` is set, the compile-time value) a subgraph's formal input is bound
/// to.
struct BoundInput {
  DType dtype = DType::undefined;
  Shape shape;
  std::shared_ptr<const Tensor> known;
};

/// A subgraph typed for given inputs: the subgraph itself when its types already match, else a
/// copy (`owned`) whose inputs and captures carry the given types and known values and whose shape
/// rules were re-run (so values that depend on the iteration number get their types).
struct SubgraphInstance {
  const Graph* graph = nullptr;
  std::unique_ptr<Graph> owned;
};

/// Types `sub` (a subgraph of `node`) for `formal` inputs and the enclosing `captures` values (the
/// node's captured inputs). Throws tessel::Error naming the node when a shape rule of the subgraph
/// fails for these types.
SubgraphInstance instantiate_subgraph(const Node& node, const Graph& sub,
                                      const std::vector<BoundInput>& formal,
                                      const std::vector<const Value*>& captures);

/// The enclosing values a control-flow node captures (its inputs after the formal ones).
std::vector<const Value*> node_captures(const Node& node);

/// The number of iterations of a Loop known at compile time: M known and either cond known false
/// (0), or cond absent or known true and the body passing its condition through unchanged (or
/// giving the constant true). nullopt otherwise.
std::optional<int64_t> loop_trip_count(const Node& node);

}  // namespace tessel::ops
