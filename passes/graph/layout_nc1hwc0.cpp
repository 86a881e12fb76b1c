// Layout pass, step 1 of 2: puts every convolution kernel on the NC1HWC0 storage format (graph.h,
// StorageFormat) by inserting TransData conversions around it -- the textbook form of a layout
// pass (TVM's AlterOpLayout, Ascend GE's TransData insertion). In NC1HWC0 the NPU moves a feature
// map as C0 = 16-channel blocks (32 contiguous bytes per pixel in fp16: whole DRAM bursts) and
// img2col reads it in the layout the cube's fractal K wants, instead of NCHW planes whose rows are
// cut at every tile border.
//
// A convolution kernel is an unfused 2-D Conv with group = 1, or a fusion group (fuse_kernels)
// whose contraction is such a Conv. For each, with C a multiple of 16 on the tensor concerned:
//   - its input X, and every same-shape elementwise epilogue operand from outside the kernel (a
//     residual Add), is read through TransData(v) {dst_format="NC1HWC0"} (one per value v);
//   - its result R is written NC1HWC0, and its readers read TransData(R) {dst_format="NCHW"}
//     (unless R is a graph output, which stays plain).
// So conv -> conv edges become TransData(NCHW) -> TransData(NC1HWC0) pairs, which step 2
// (cancel_transdata.cpp) removes, together with the conversions that do not pay.
//
//   before: %a: f16[1,64,56,56] = Conv(%x, %w1)                 # conv_a
//           %b: f16[1,64,56,56] = Conv(%a, %w2)                 # conv_b
//   after:  %x_nc1hwc0 format NC1HWC0 = TransData(%x) {dst_format="NC1HWC0"}
//           %a format NC1HWC0 = Conv(%x_nc1hwc0, %w1)           # conv_a
//           %a_nchw = TransData(%a) {dst_format="NCHW"}
//           %a_nchw_nc1hwc0 format NC1HWC0 = TransData(%a_nchw) {dst_format="NC1HWC0"}
//           %b format NC1HWC0 = Conv(%a_nchw_nc1hwc0, %w2)      # conv_b
//           ...
//
// Runs after: fuse_kernels (it needs the kernels' boundaries; `fusion_group` attributes). The
// TransData nodes it adds are kernels of their own (no fusion_group).
// Guarantees: logical values unchanged (TransData copies); every conv kernel reads and writes
// NC1HWC0 where C allows; graph inputs, outputs and constants stay plain.
#include <map>
#include <set>

#include "passes/graph/graph_passes.h"

namespace tessel::graph_passes {

namespace {

/// A kernel as the NPU backend compiles it: a fusion group or a single node.
struct Kernel {
  Node* conv = nullptr;        // the kernel's 2-D group-1 Conv, if that is its contraction
  std::vector<Node*> members;  // node order
};

bool is_cube_conv(const Node& n) {
  if (n.op_type != "Conv") return false;
  const Value* x = n.input(0);
  if (!x || !n.input(1) || x->shape.size() != 4 || n.outputs.empty() || !n.outputs[0]) return false;
  return n.attrs.get_int_or("group", 1, n.name) == 1 && dtype_is_float(x->dtype);
}

bool blocks_of_c0(const Value* v) {
  return v && !v->constant && v->shape.size() == 4 && dtype_is_float(v->dtype) &&
         v->shape[1] % kNc1hwc0C0 == 0;
}

bool is_contraction(const Node& n) {
  return n.op_type == "Conv" || n.op_type == "ConvTranspose" || n.op_type == "MatMul" ||
         n.op_type == "Gemm";
}

/// Inserts `op(inputs) {attrs}` producing a new value named after `base` right after `after`'s
/// node (before the first node when `after` is a graph input).
Value* insert_after(Graph& g, const Value* after, const std::string& base, const Value* like,
                    StorageFormat format, const std::string& dst_format, Value* input) {
  Value* out = g.add_value(g.unique_value_name(base), like->dtype, like->shape);
  out->format = format;
  Attributes attrs;
  attrs.set("dst_format", dst_format);
  Node* before = nullptr;
  const auto& nodes = g.nodes();
  if (!after->producer) {
    before = nodes.front().get();
  } else {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].get() == after->producer) {
        before = i + 1 < nodes.size() ? nodes[i + 1].get() : nullptr;
        break;
      }
  }
  const std::string name = g.unique_node_name("transdata");
  if (before)
    g.insert_node_before(before, "TransData", name, {input}, {out}, attrs);
  else
    g.add_node("TransData", name, {input}, {out}, attrs);
  return out;
}

}  // namespace

bool layout_nc1hwc0(Graph& graph) {
  // 1. Kernels: fusion groups (attribute set by fuse_kernels) and single nodes.
  std::map<int64_t, Kernel> groups;
  std::vector<Kernel> kernels;
  for (const auto& np : graph.nodes()) {
    Node* n = np.get();
    if (n->attrs.has(kFusionGroupAttr)) {
      groups[n->attrs.get_int(kFusionGroupAttr, n->name)].members.push_back(n);
    } else if (is_cube_conv(*n)) {
      kernels.push_back(Kernel{n, {n}});
    }
  }
  for (auto& [id, k] : groups) {
    int contractions = 0;
    for (Node* m : k.members) {
      contractions += is_contraction(*m);
      if (is_cube_conv(*m)) k.conv = m;
    }
    if (k.conv && contractions == 1 && k.members.front() == k.conv) kernels.push_back(k);
  }

  // 2. Conversions. One TransData to NC1HWC0 per plain value, created on first use.
  std::set<const Value*> graph_outputs(graph.outputs.begin(), graph.outputs.end());
  std::map<Value*, Value*> converted;
  bool changed = false;
  auto nc1hwc0_of = [&](Value* v) -> Value* {
    if (v->format == StorageFormat::nc1hwc0) return v;
    auto it = converted.find(v);
    if (it != converted.end()) return it->second;
    changed = true;
    Value* t =
        insert_after(graph, v, v->name + "_nc1hwc0", v, StorageFormat::nc1hwc0, "NC1HWC0", v);
    converted[v] = t;
    return t;
  };
  for (Kernel& k : kernels) {
    const std::set<const Node*> members(k.members.begin(), k.members.end());
    Value* result = k.members.back()->outputs[0];
    if (blocks_of_c0(k.conv->inputs[0])) k.conv->inputs[0] = nc1hwc0_of(k.conv->inputs[0]);
    for (Node* m : k.members) {
      if (m == k.conv) continue;
      for (Value*& v : m->inputs)
        if (blocks_of_c0(v) && !members.count(v->producer) && v->shape == result->shape)
          v = nc1hwc0_of(v);
    }
    if (!blocks_of_c0(result) || graph_outputs.count(result) ||
        result->format == StorageFormat::nc1hwc0 || graph.users(result).empty())
      continue;
    // The kernel writes NC1HWC0; its readers read a plain copy.
    Value* plain = graph.add_value(graph.unique_value_name(result->name + "_nchw"), result->dtype,
                                   result->shape);
    graph.replace_all_uses(result, plain);  // also the input of a conversion made for a reader
    result->format = StorageFormat::nc1hwc0;
    Attributes attrs;
    attrs.set("dst_format", std::string("NCHW"));
    Node* last = k.members.back();
    const auto& nodes = graph.nodes();
    Node* before = nullptr;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].get() == last) before = i + 1 < nodes.size() ? nodes[i + 1].get() : nullptr;
    const std::string name = graph.unique_node_name("transdata");
    if (before)
      graph.insert_node_before(before, "TransData", name, {result}, {plain}, attrs);
    else
      graph.add_node("TransData", name, {result}, {plain}, attrs);
    changed = true;
  }
  return changed;
}

}  // namespace tessel::graph_passes
