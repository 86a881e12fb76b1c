// ModelPlan: a graph as a sequence of loop-IR kernels over dense buffers, the planning the CPU
// backend (compile.h) and the GPU backend (compiler/backend/gpu/compile.h) share.
//
// Per node in topological order: constants and pure views (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity, Dropout, float Cast) get no kernel; zero-element outputs get none; a Conv / MatMul /
// Gemm whose only user is an elementwise op of the same shape (Relu, Clip, HardSwish, Add of a
// residual, BatchNormalization, ...) is fused with it, repeatedly, when the epilogue's other
// operands are computed before the kernel runs; every other node's op_compute (compiler/lower)
// gives its tensor expression (or the target's own, KernelScheduler::node_compute). Contractions
// (TE tag conv2d / matmul) go to the target's contraction schedule, everything else (and a
// contraction it declines) to its generic schedule; Concat is one copy per input into a strided
// view of the output; multi-part ops (lower::op_parts) one schedule per part. Graph outputs are
// computed in place in the caller's buffers where possible, else by a final copy kernel. Values
// computed by kernels and not bound to an output get offsets in one arena, planned by liveness
// (first fit, 64-byte aligned).
//
// Buffers are dense row-major in the value's ONNX shape; kernel parameters are 1-D allocations of
// `numel` elements viewed with the value's shape inside the schedule.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/backend/cpu/compile.h"
#include "compiler/ir/graph.h"
#include "compiler/lower/lower_te.h"
#include "compiler/lower/op_compute.h"
#include "passes/loop/cpu_passes.h"

namespace tessel::cpu_backend {

/// Where a value's bytes live at run time.
struct ValueStorage {
  enum class Kind { none, input, output, arena } kind = Kind::none;
  int index = 0;             // input / output position
  int64_t offset_bytes = 0;  // arena offset
};

/// A kernel parameter: the graph value (a view resolves to its root, ModelPlan::root) or the
/// constant it reads or writes, and the kernel's buffer for it. An output-copy kernel's
/// destination has neither (KernelPlan::output_copy says which graph output it writes).
struct PlanParam {
  const Value* value = nullptr;
  int constant = -1;  // index into ModelPlan::constants
  loop::Buffer buffer;
};

/// One kernel: its loop IR over `params` and what it reads and writes (for liveness).
struct KernelPlan {
  size_t info_index = 0;  // into ModelPlan::kernels
  const Node* node = nullptr;
  std::vector<const Node*> fused;  // producers computed inside, in order
  std::vector<PlanParam> params;
  loop::Stmt body;
  std::vector<const Value*> reads;
  const Value* writes = nullptr;
  int output_copy = -1;  // >= 0: copies into graph output `output_copy` (its null-value param)
  std::shared_ptr<const ExternKernel> ext;  // set: a host function, `body` is null
  /// Set: the kernel runs only when this bool value (one element, stored as one byte) is true
  /// (graph_passes::branch_guard of `node`: a node of an If branch); it is among `reads`.
  const Value* guard = nullptr;
};

/// A constant a kernel reads: a graph constant (fp32) or one a schedule derived (packed
/// weights, any dtype the schedule's buffer has).
struct PlanConstant {
  std::string symbol;
  Tensor owned;                 // a converted or schedule-derived constant
  const Tensor* ref = nullptr;  // else: an fp32 graph constant (not copied; outlives the plan)
  const Tensor& data() const { return ref ? *ref : owned; }
};

/// The target's schedules, called by plan_model for every kernel it plans.
class KernelScheduler {
 public:
  virtual ~KernelScheduler() = default;
  /// The schedule of a kernel whose output `spec.out` contains `contraction` (tag conv2d or
  /// matmul), or nullopt to schedule it generically. May set `info` (kind, flops, knobs).
  virtual std::optional<passes::CpuGemmResult> contraction(const passes::CpuKernelSpec& spec,
                                                           const te::Tensor& contraction,
                                                           CpuKernelInfo& info) = 0;
  /// The schedule of a kernel whose output `spec.out` contains `dw` (tag depthwise_conv2d), or
  /// nullopt to schedule it generically. May set `info` (kind, flops, knobs).
  virtual std::optional<passes::CpuDepthwiseResult> depthwise(const passes::CpuKernelSpec& spec,
                                                              const te::Tensor& dw,
                                                              CpuKernelInfo& info) {
    (void)spec;
    (void)dw;
    (void)info;
    return std::nullopt;
  }
  /// The loop nest computing `out` into `buffers` (elementwise, reductions, copies).
  virtual loop::Stmt generic(const te::Tensor& out, const lower::TensorBuffers& buffers) = 0;
  /// The compute of `node` when the target lowers it by a compute of its own (the GPU's int8
  /// ops: lower::int8_compute), or null for lower::op_compute's.
  virtual te::Tensor node_compute(const Node& node, lower::ComputeContext& ctx) {
    (void)node;
    (void)ctx;
    return nullptr;
  }
  /// A host kernel for `node` (the CPU's int8 ops), or null to plan it from its compute. Its
  /// integer outputs are then stored in their own dtype ("native" values).
  virtual std::shared_ptr<const ExternKernel> extern_kernel(const Node& node) {
    (void)node;
    return nullptr;
  }
  /// A host kernel copying `bytes` bytes from its first argument to its second (a graph output
  /// that is an integer input or another output's integer value), or null when unsupported.
  virtual std::shared_ptr<const ExternKernel> extern_copy(int64_t bytes) {
    (void)bytes;
    return nullptr;
  }
};

struct PlanOptions {
  std::string target = "CPU";  // names the backend in error messages ("CPU", "GPU")
  bool fuse_epilogues = true;
  bool keep_loop_ir = false;  // keep each kernel's loop IR text in CpuKernelInfo::loop_ir
  /// Integer graph inputs (u8, i8, i32) are taken in their own dtype (the CPU with its int8
  /// kernels); otherwise only float inputs.
  bool integer_inputs = false;
  /// Integer and bool values (graph inputs, outputs, intermediates, constants) are stored and
  /// computed in their own dtypes by the generated kernels (the CPU; lower::ComputeContext::
  /// typed_values: the comparisons, logic, Where, Cast, Gather, ArgMax, ... computes): one byte
  /// per bool, the integer's width otherwise. Float values stay fp32.
  bool typed_values = false;
  /// The target branches around guarded kernels (KernelPlan::guard: the CPU's entry point);
  /// otherwise a node with a branch guard is refused (tessel::Unsupported).
  bool branches = false;
};

/// The planned model (see the file comment).
struct ModelPlan {
  std::vector<CpuKernelInfo> kernels;  // every node, in graph order (kinds view/const/... too)
  std::vector<KernelPlan> plans;       // kernels with code, in execution order
  std::vector<HostBinding> inputs, outputs;
  std::map<const Value*, const Value*> alias;         // view -> viewed value
  std::map<const Value*, ValueStorage> storage;       // root values
  std::map<const Value*, int> value_constant;         // constant graph value -> constant index
  std::map<const Value*, int> value_native_constant;  // ... in its own (integer / bool) dtype
  std::set<const Value*> native;                      // roots stored in their own integer dtype
  std::deque<PlanConstant> constants;                 // stable addresses
  int64_t arena_bytes = 0;
  int64_t constant_bytes = 0;

  /// The value a view (chain) resolves to.
  const Value* root(const Value* v) const;
  /// The constant index of constant value `v` (added, fp32, on first use).
  int constant_of(const Value* v);
  /// The constant index of constant value `v` in its own dtype (not copied; added on first use).
  int native_constant_of(const Value* v);
  /// Adds a constant: `data`, or `*ref` when given (not copied: it must outlive the plan's
  /// use); its symbol is "tessel_const_<index>_<name>".
  int add_constant(const std::string& name, Tensor data, const Tensor* ref = nullptr);
};

/// `s` with every character other than [A-Za-z0-9_] replaced by '_' (an LLVM symbol name).
std::string sanitize_symbol(const std::string& s);

/// Plans `graph` (see the file comment). Throws tessel::Unsupported naming the node for an op
/// without a compute (or a used second output, a non-float graph input without typed_values, a
/// training-mode Dropout).
ModelPlan plan_model(const Graph& graph, KernelScheduler& scheduler, const PlanOptions& options);

}  // namespace tessel::cpu_backend
