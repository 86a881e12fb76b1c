// The CPU reference interpreter: runs a Graph node by node with the reference kernels.
#pragma once

#include <map>
#include <string>

#include "compiler/ir/graph.h"

namespace tessel::ops {

/// Runs `graph` on `inputs` (by graph input name; shapes must equal the bound input shapes) and
/// returns every graph output by name. Throws tessel::Error on a missing/mis-shaped input or an
/// op without a reference kernel (naming the node).
std::map<std::string, Tensor> run_reference(const Graph& graph,
                                            const std::map<std::string, Tensor>& inputs);

}  // namespace tessel::ops
