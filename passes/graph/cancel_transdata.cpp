// Layout pass, step 2 of 2: removes the redundant storage-format conversions (TransData nodes,
// inserted by layout_nc1hwc0.cpp), in two rounds.
//   1. Exact cancellation, to a fixed point:
//        TransData(TransData(u) {to G}) {to F} with u stored F   -> u   (an inverse pair)
//        TransData(v) {to F} with v already stored F             -> v   (an identity)
//      A conv -> conv edge, NC1HWC0 -> NCHW -> NC1HWC0, becomes a direct NC1HWC0 edge.
//   2. Every conversion left, by a fixed cost rule (not a cost model): a remaining TransData is a
//      DRAM round trip of the whole tensor (read it, write it re-laid out), assumed to cost more
//      than NC1HWC0 saves on the reads it serves (the burst waste of those reads; measured on the
//      real models in docs/results.md, keeping them costs 19-57% more cycles). And the kernels
//      layout_nc1hwc0 converts for -- the only readers of a to-NC1HWC0 conversion and the only
//      writers of a value converted back -- are conv kernels, which read and write either format.
//      So:
//        TransData(v) {to NC1HWC0}, v plain:   its readers read v itself (plain);
//        TransData(r) {to NCHW}, r NC1HWC0:   r's kernel writes r plain for all its readers.
//      This also covers the boundaries: a conv that reads a graph input or a pooling's result
//      reads it plain; a conv result that a pooling (or a graph output) also reads is written
//      plain, and its conv readers read it plain.
// What is left stored NC1HWC0: exactly the results of conv kernels that only conv kernels read
// (as X or as a same-shape residual operand) -- ResNet's feature maps inside its stages.
//
//   before: %a format NC1HWC0 = Conv(%x, %w1)
//           %a_nchw = TransData(%a) {dst_format="NCHW"}
//           %a_nchw_nc1hwc0 format NC1HWC0 = TransData(%a_nchw) {dst_format="NC1HWC0"}
//           %b format NC1HWC0 = Conv(%a_nchw_nc1hwc0, %w2)
//   after:  %a format NC1HWC0 = Conv(%x, %w1)
//           %b format NC1HWC0 = Conv(%a, %w2)          (round 2 makes %b plain if a Relu reads it)
//
// Runs after: layout_nc1hwc0. A TransData producing a graph output is never removed.
// Guarantees: logical values unchanged; no TransData node is left except one producing a graph
// output (which layout_nc1hwc0 never creates).
#include "passes/graph/graph_passes.h"
#include "passes/graph/rewrite_util.h"

namespace tessel::graph_passes {

namespace {

bool is_graph_output(const Graph& g, const Value* v) {
  for (const Value* o : g.outputs)
    if (o == v) return true;
  return false;
}

/// Removes TransData nodes whose output nothing reads.
void erase_dead_transdata(Graph& g) {
  std::vector<Node*> dead;
  for (const auto& n : g.nodes())
    if (n->op_type == "TransData" && !is_graph_output(g, n->outputs[0]) &&
        g.users(n->outputs[0]).empty())
      dead.push_back(n.get());
  for (Node* n : dead) g.remove_node(n);
}

}  // namespace

bool cancel_transdata(Graph& graph) {
  bool changed = false;
  // Round 1: inverse pairs and identities, to a fixed point.
  for (bool again = true; again;) {
    again = false;
    for (const auto& np : graph.nodes()) {
      Node* n = np.get();
      if (n->op_type != "TransData" || is_graph_output(graph, n->outputs[0])) continue;
      Value* out = n->outputs[0];
      Value* v = n->inputs[0];
      Value* replacement = nullptr;
      if (v->format == out->format) {
        replacement = v;
      } else if (Node* p = producer_of(v, "TransData"); p && p->inputs[0]->format == out->format) {
        replacement = p->inputs[0];
      }
      if (replacement && !graph.users(out).empty()) {
        graph.replace_all_uses(out, replacement);
        changed = again = true;
      }
    }
    erase_dead_transdata(graph);
  }
  // Round 2: the conversions left cost more than they save.
  for (const auto& np : graph.nodes()) {
    Node* n = np.get();
    if (n->op_type != "TransData" || is_graph_output(graph, n->outputs[0])) continue;
    Value* out = n->outputs[0];
    Value* v = n->inputs[0];
    if (out->format == StorageFormat::plain) v->format = StorageFormat::plain;
    graph.replace_all_uses(out, v);
    changed = true;
  }
  erase_dead_transdata(graph);
  if (changed) graph.remove_dead();  // the removed conversions' values
  return changed;
}

}  // namespace tessel::graph_passes
