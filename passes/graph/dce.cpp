// Dead-code elimination: nodes no graph output depends on, and values nothing references (unused
// constants such as folded BatchNormalization parameters, values replaced by other passes).
//
//   before: %a: f32[4] = Relu(%x)
//           %b: f32[4] = Sigmoid(%x)      (nothing reads %b)
//           -> (%a)
//   after:  %a: f32[4] = Relu(%x)
//
// Runs after: any pass (last clean-up before fuse_kernels).
// Guarantees: every remaining node has a graph output depending on it, every remaining value is
// referenced (graph inputs and outputs always stay).
#include "passes/graph/graph_passes.h"

namespace tessel::graph_passes {

namespace {
size_t constants(const Graph& graph) {
  size_t n = 0;
  for (const auto& v : graph.values()) n += !v->producer && v->constant;
  return n;
}
}  // namespace

bool dce(Graph& graph) {
  // "Changed" counts what the IR shows (nodes, constants); placeholder values other passes left
  // behind are dropped too but do not print.
  const size_t nodes = graph.nodes().size(), consts = constants(graph);
  graph.remove_dead();
  return graph.nodes().size() != nodes || constants(graph) != consts;
}

}  // namespace tessel::graph_passes
