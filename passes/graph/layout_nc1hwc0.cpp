// Layout pass: chooses the NC1HWC0 storage format (graph.h, StorageFormat) for the feature maps
// that flow between cube convolution kernels, so the NPU moves them as C0-channel blocks (32
// contiguous bytes per pixel, whole DRAM bursts) and img2col reads them in the layout the cube's
// fractal K wants, instead of NCHW planes whose rows are cut at every tile border.
//
// The textbook form of this pass (TVM's AlterOpLayout + layout-transform elimination, Ascend GE's
// TransData insertion + "redundant TransData" removal) inserts a conversion before and after
// every convolution and then cancels the back-to-back inverse pairs. Here a convolution kernel
// reads and writes either format, so the pass picks each value's format directly such that no
// conversion is ever needed: a value is stored NC1HWC0 exactly when
//   - it is the result of a convolution kernel K (an unfused 2-D Conv with group = 1, or the last
//     value of a fusion group whose contraction is such a Conv), not a graph output, rank 4,
//     float, and C is a multiple of C0 = 16; and
//   - every node that reads it belongs to such a convolution kernel K' and reads it as the
//     convolution's input X, or as an elementwise epilogue operand of K' with the same shape as
//     K''s result (a residual Add: no broadcasting, so it tiles exactly like the output).
// A value with any other reader (a pooling, a reshape, a depthwise or grouped conv, a graph
// output) stays plain: converting it would cost a DRAM round trip of the whole tensor (a
// TransData kernel), more than the burst savings of the reads it serves. So the conversions the
// insert-then-cancel form would leave are exactly the ones this rule never creates, and every
// "redundant" pair it would cancel is a value marked here.
//
//   before: %a: f16[1,64,56,56] = Conv(%x, %w1, %b1) {...}                     # conv_a
//           %b: f16[1,64,56,56] = Conv(%a, %w2, %b2) {...}                     # conv_b
//           %p: f16[1,64,28,28] = MaxPool(%b) {...}
//   after:  %a: f16[1,64,56,56] format NC1HWC0 = Conv(%x, %w1, %b1) {...}      # conv_a
//           %b: f16[1,64,56,56] = Conv(%a, %w2, %b2) {...}   (read by MaxPool: stays plain)
//
// Runs after: fuse_kernels (it needs the kernels' boundaries; `fusion_group` attributes).
// Guarantees: only values produced and consumed by convolution kernels change format; node
// structure, shapes and logical values are unchanged (the reference interpreter and the CPU
// backend ignore formats); graph inputs, outputs and constants stay plain.
#include <map>
#include <set>

#include "passes/graph/graph_passes.h"

namespace tessel::graph_passes {

namespace {

/// A kernel as the NPU backend compiles it: a fusion group or a single node.
struct Kernel {
  const Node* conv = nullptr;  // the group's convolution, if it can use NC1HWC0
  std::set<const Node*> members;
  const Value* result = nullptr;  // the one value the kernel writes to memory
};

bool is_cube_conv(const Node& n) {
  if (n.op_type != "Conv") return false;
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  if (!x || !w || x->shape.size() != 4 || n.outputs.empty() || !n.outputs[0]) return false;
  if (n.attrs.get_int_or("group", 1, n.name) != 1) return false;
  return dtype_is_float(x->dtype);
}

}  // namespace

bool layout_nc1hwc0(Graph& graph) {
  // 1. Kernels: fusion groups (attribute set by fuse_kernels) and single nodes.
  std::map<int64_t, Kernel> groups;
  std::map<const Node*, Kernel*> kernel_of;
  std::vector<Kernel> singles;
  singles.reserve(graph.nodes().size());
  for (const auto& np : graph.nodes()) {
    const Node* n = np.get();
    if (n->attrs.has(kFusionGroupAttr)) {
      Kernel& k = groups[n->attrs.get_int(kFusionGroupAttr, n->name)];
      k.members.insert(n);
      k.result = n->outputs[0];  // members are in node order: the last one's output
      if (is_cube_conv(*n)) k.conv = n;
    } else {
      singles.push_back(Kernel{});
      Kernel& k = singles.back();
      k.members.insert(n);
      k.result = n->outputs.empty() ? nullptr : n->outputs[0];
      if (is_cube_conv(*n)) k.conv = n;
    }
  }
  for (auto& [id, k] : groups)
    for (const Node* m : k.members) kernel_of[m] = &k;
  for (auto& k : singles)
    for (const Node* m : k.members) kernel_of[m] = &k;

  // A group whose contraction is not an eligible Conv (MatMul, grouped conv) cannot use the format.
  for (auto& [id, k] : groups)
    for (const Node* m : k.members)
      if (m != k.conv && (m->op_type == "Conv" || m->op_type == "ConvTranspose" ||
                          m->op_type == "MatMul" || m->op_type == "Gemm"))
        k.conv = nullptr;

  std::set<const Value*> graph_outputs(graph.outputs.begin(), graph.outputs.end());
  // Can node `user` (in kernel `k`) read `v` stored NC1HWC0?
  auto reads_nc1hwc0 = [&](const Node* user, const Value* v) {
    const Kernel* k = kernel_of.at(user);
    if (!k->conv || !k->result) return false;
    for (size_t i = 0; i < user->inputs.size(); ++i) {
      if (user->inputs[i] != v) continue;
      if (user == k->conv) {
        if (i != 0) return false;  // weights or bias
      } else if (v->shape != k->result->shape) {
        return false;  // a broadcast epilogue operand
      }
    }
    return true;
  };

  bool changed = false;
  for (const auto& vp : graph.values()) {
    Value* v = vp.get();
    const StorageFormat before = v->format;
    v->format = StorageFormat::plain;
    bool ok = v->producer && !v->constant && !graph_outputs.count(v) && v->shape.size() == 4 &&
              dtype_is_float(v->dtype) && v->shape[1] % kNc1hwc0C0 == 0;
    if (ok) {
      const Kernel* k = kernel_of.at(v->producer);
      ok = k->conv && k->result == v;
    }
    if (ok) {
      const std::vector<Node*> users = graph.users(v);
      ok = !users.empty();
      for (const Node* u : users) ok = ok && reads_nc1hwc0(u, v);
    }
    if (ok) v->format = StorageFormat::nc1hwc0;
    changed = changed || v->format != before;
  }
  return changed;
}

}  // namespace tessel::graph_passes
