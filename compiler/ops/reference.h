// The CPU reference interpreter: runs a Graph node by node with the reference kernels.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "compiler/ir/graph.h"

namespace tessel::ops {

/// Runs `graph` on `inputs` (by graph input name; dtypes and shapes must equal the graph inputs')
/// node by node with run_reference_node, and returns every graph output by name. Nodes whose
/// outputs are all known at compile time (Value::constant) are not run; intermediate tensors are
/// freed after their last use. Throws tessel::Error on a missing, mis-typed or unknown input name,
/// tessel::Unsupported for an op without a reference kernel (naming the node).
std::map<std::string, Tensor> run_reference(const Graph& graph,
                                            const std::map<std::string, Tensor>& inputs);

/// Runs `graph` (a subgraph, typically) with each of its inputs and captures bound to a tensor;
/// `bound[i]` is the tensor of `values[i]`, whose dtype and shape it must have. Returns the graph
/// outputs in order. Errors as for run_reference.
std::vector<Tensor> run_reference_bound(const Graph& graph, const std::vector<const Value*>& values,
                                        const std::vector<const Tensor*>& bound);

/// Called by run_reference for every graph input, every constant a node reads (once, at its first
/// use) and every node output, as each becomes available; it may change the tensor in place
/// (values and dtype unchanged in shape). `producer` is the node computing the value (null for
/// inputs and constants). compiler/driver/compare.cpp uses it to model the NPU's rounding.
using ValueHook = std::function<void(const Value& value, const Node* producer, Tensor& t)>;

/// run_reference with `hook` applied to every value (see ValueHook).
std::map<std::string, Tensor> run_reference(const Graph& graph,
                                            const std::map<std::string, Tensor>& inputs,
                                            const ValueHook& hook);

}  // namespace tessel::ops
