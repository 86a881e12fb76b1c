// The graph passes, one transform per file under passes/graph/. Each takes the graph, rewrites it
// in place and returns true when it changed something; none changes a graph output's name, shape
// or values beyond fp32 rounding. pass_manager.h runs them as a pipeline with the verifier between
// passes; docs/graph_passes.md shows each one's before/after on a small graph.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "passes/graph/pass_manager.h"

namespace tessel::graph_passes {

/// Loops and Scans with more iterations than this are not unrolled by fold_control.
inline constexpr int64_t kMaxUnrolledIterations = 4096;

/// fold_control.cpp: an If whose condition is known at compile time becomes the nodes of
/// the branch taken; a Loop whose trip count is known (ops::loop_trip_count) and a Scan (at most
/// kMaxUnrolledIterations iterations) are unrolled, the body copied once per iteration with the
/// iteration number a constant, scan inputs sliced (Slice + Squeeze) and scan outputs stacked
/// (Unsqueeze + Concat). Replaced outputs keep their names (as Identity nodes). Nested control
/// flow is inlined too when its path becomes known. Not a pipeline pass: the driver runs it on
/// every loaded model before the pipeline (driver::load_model) and before compiling for npu/cpu.
bool fold_control(Graph& graph);

/// The attribute guard_branches sets on the nodes of a branch: the name of a bool scalar value of
/// the same graph; the node runs only when it is true (the compiled backends branch around the
/// node's kernels; every other consumer of the graph may ignore it, Where picks the taken result).
inline constexpr const char* kBranchGuardAttr = "branch_guard";

/// guard_branches.cpp: every If whose condition is not known at compile time becomes both branches'
/// nodes in the enclosing graph, guarded (kBranchGuardAttr) by the condition and its Not, and a
/// Where per output. Each branch is first made a graph of its own and given to `prepare` (the
/// driver puts it in the compiled form, nested Ifs included: their guards become And of both).
/// Throws tessel::Unsupported naming the If when the branches' outputs differ in shape or dtype
/// or the condition has more than one element. Not a pipeline pass: driver::compiled_form runs
/// it after fold_control.
bool guard_branches(Graph& graph, const std::function<void(Graph&)>& prepare);
/// The value guarding `node` (its kBranchGuardAttr), or null when it runs unconditionally.
/// Throws tessel::Error naming the node when the attribute names no value of `graph`.
const Value* branch_guard(const Graph& graph, const Node& node);

/// split_outputs.cpp: a Split with several outputs becomes one Slice per output, and a
/// LayerNormalization whose Mean or InvStdDev output is used becomes ReduceMean, Sub, Mul,
/// ReduceMean, Add, Sqrt, Reciprocal, Mul, Mul (, Add) producing all three, a deterministic
/// Dropout whose mask is used becomes Identity + Expand(true), and a TopK (constant k <= 64,
/// float input) becomes k ReduceMax/ArgMax steps masking the taken positions with Where (ReduceMin/
/// ArgMin for largest=0) and a Concat of each: the compiled backends compute one output per node.
/// Throws tessel::Unsupported for a TopK with k > 64. Outputs keep their values. Not a pipeline
/// pass: the driver runs it before compiling for npu/cpu (driver::run_model).
bool split_outputs(Graph& graph);
/// True when split_outputs would change `graph`.
bool needs_split_outputs(const Graph& graph);

/// conv_as_2d.cpp: Conv, ConvTranspose, MaxPool and AveragePool of a rank-3 input [N, C, L]
/// become the 2-D op over [N, C, 1, L] between Reshapes (views), the attributes given a leading
/// spatial axis of extent 1 (kernel 1, stride 1, dilation 1, pads 0): the compiled backends
/// compute 2-D windows. A MaxPool whose Indices output is used is left alone. Not a pipeline
/// pass: the driver runs it before compiling for npu/cpu (driver::load_model, driver::run_model).
bool conv_as_2d(Graph& graph);
/// True when conv_as_2d would change `graph`.
bool needs_conv_as_2d(const Graph& graph);

/// pool_3d_as_2d.cpp: MaxPool and AveragePool of a rank-5 input [N, C, D, H, W] become a 2-D
/// pool over H, W of the view [N, C*D, H, W] and a 2-D pool over D (kernel [kd, 1]) of the view
/// [N, C, D, Ho*Wo] (max and the per-axis averages are separable over a box window). A MaxPool
/// whose Indices output is used is left alone. Not a pipeline pass: the driver runs it for the
/// compiled targets (driver::compiled_form).
bool pool_3d_as_2d(Graph& graph);
/// True when pool_3d_as_2d would change `graph`.
bool needs_pool_3d_as_2d(const Graph& graph);

/// conv_3d_as_2d.cpp: a Conv of a rank-5 input [N, C, D, H, W] becomes one 2-D Conv over
/// [N*Do, C*KD, H, W], the KD depth taps of every output depth stacked into the channels
/// (Pad along D, one Slice + Transpose per depth tap, Concat) and the weight seen as
/// [M, C/g*KD, KH, KW], then a Transpose back to [N, M, Do, Ho, Wo]. Not a pipeline pass: the
/// driver runs it for the compiled targets (driver::compiled_form).
bool conv_3d_as_2d(Graph& graph);
/// True when conv_3d_as_2d would change `graph`.
bool needs_conv_3d_as_2d(const Graph& graph);

/// resize_as_matmul.cpp: every float Resize that the compiled backends do not compile as pixel
/// repetition (lower::resize_repeats_pixels) becomes one MatMul by a constant interpolation
/// matrix per resized axis (ops::resize_axis_matrices: the reference's taps and weights) between
/// Reshapes (views), plus an Add of extrapolation_value where tf_crop_and_resize leaves the roi.
/// Every mode, nearest_mode and coordinate_transformation_mode of ONNX Resize (opset 11-17).
/// Not a pipeline pass: the driver runs it for the compiled targets (driver::compiled_form).
bool resize_as_matmul(Graph& graph);
/// True when resize_as_matmul would change `graph`.
bool needs_resize_as_matmul(const Graph& graph);

/// convt_as_conv.cpp: a ConvTranspose over a 4-D input [N, C, H, W] with a constant weight
/// ([C, M/group, KH, KW]) becomes s_h * s_w stride-1 Convs, one per output phase (sub-pixel
/// decomposition: the taps k with (r + pad_begin - k*d) mod s == 0, flipped, as a Conv of
/// dilation d / gcd(s, d), padded or sliced), interleaved by Unsqueeze + Concat + Reshape and
/// sliced to the output extent; any kernel, stride, pads, output_padding, output_shape, auto_pad,
/// group and dilation (ONNX ConvTranspose, opset 11+). The form the backends compile directly
/// (kernel == stride, nothing else) is left alone. Output names, shapes and values are kept. Not a
/// pipeline pass: the driver runs it after conv_as_2d for the compiled targets
/// (driver::load_model, driver::compiled_form).
bool convt_as_conv(Graph& graph);
/// True when convt_as_conv would change `graph`.
bool needs_convt_as_conv(const Graph& graph);

/// expand_recurrent.cpp: every LSTM, GRU and RNN node becomes its computation unrolled over the
/// (static) sequence length, in ops the compiled targets have: one MatMul of all steps' inputs by
/// W^T, per step a MatMul by R^T, Add, Slice into gates, the gate activations (with alpha/beta),
/// Mul/Sub for the state update, Clip for `clip`, 0/1 masks for a shorter sequence_lens, and
/// Unsqueeze + Concat for Y, Y_h, Y_c (both layouts, every direction, the optional inputs B,
/// sequence_lens, initial_h, initial_c, P; GRU linear_before_reset; LSTM input_forget), after the
/// ONNX operator docs (opset 14). Outputs keep their names and values. Throws tessel::Unsupported
/// for an activation outside the ops' list and for more than kMaxUnrolledIterations steps. Not a
/// pipeline pass: the driver runs it for the compiled targets (driver::compiled_form).
bool expand_recurrent(Graph& graph);
/// True when `graph` has an LSTM, GRU or RNN node.
bool needs_expand_recurrent(const Graph& graph);

/// expand_losses.cpp: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss become the ops of
/// their ONNX function bodies (opset 13): Unsqueeze, Equal/Where for ignore_index, GatherElements,
/// Gather of the weights, Neg, Mul, and ReduceSum/ReduceMean/Div for reduction sum/mean (N-d
/// inputs [N, C, d1, ...]); SoftmaxCrossEntropyLoss's log_prob is LogSoftmax(scores, axis=1).
/// Outputs keep their names and values. Not a pipeline pass: the driver runs it for the compiled
/// targets (driver::compiled_form).
bool expand_losses(Graph& graph);
/// True when `graph` has a NegativeLogLikelihoodLoss or SoftmaxCrossEntropyLoss node.
bool needs_expand_losses(const Graph& graph);

/// expand_mvn.cpp: MeanVarianceNormalization becomes its ONNX function body (opset 13) in the
/// reference kernel's form: m = ReduceMean(X, axes), d = X - m, Y = d / (Sqrt(ReduceMean(d d,
/// axes)) + 1e-9), axes the attribute's (default [0, 2, 3]; tessel::Error naming the node for an
/// entry out of range). Y keeps its name and values. Not a pipeline pass: the driver runs it for
/// the compiled targets (driver::compiled_form).
bool expand_mvn(Graph& graph);
/// True when `graph` has a MeanVarianceNormalization node.
bool needs_expand_mvn(const Graph& graph);

/// shape_folding.cpp: every node whose outputs are all known at compile time (Value::constant set
/// on a produced value by ops::infer_graph's data propagation: Shape/Size of static shapes and the
/// small integer chains on them, e.g. Shape -> Cast -> Slice -> Concat feeding a Reshape) is
/// removed and its outputs become constants. Nodes producing a graph output are kept.
bool shape_folding(Graph& graph);

/// Largest result constant_folding materialises, in elements: bigger results (e.g. an Expand or
/// Tile of a small constant) stay computed at run time so folding never bloats the model.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;

/// constant_folding.cpp: every node whose present inputs are all constants, whose op has a
/// deterministic reference kernel and whose outputs have at most kMaxFoldedElements elements each
/// (any number for a DequantizeLinear, whose output has its constant input's element count) is
/// evaluated with the reference kernel (ops::run_reference_node) and replaced by constants.
/// Kernels that throw tessel::Unsupported are left alone; nodes producing a graph output are kept.
bool constant_folding(Graph& graph);

/// simplify.cpp, algebraic simplification to a fixed point:
///   x*1, 1*x, x+0, 0+x, x-0, x/1 -> x      (constant all ones/zeros, output shape == x's shape)
///   Div(x, c), c a float constant without zeros -> Mul(x, 1/c)   (reciprocal rounded to fp32)
///   Identity(x), Dropout(x) in inference (mask unused, training_mode absent or false) -> x
///   reshape chains: Reshape/Flatten/Squeeze/Unsqueeze of Reshape/Flatten/Squeeze/Unsqueeze ->
///     one Reshape (static target shape), or x when the shape comes back to x's (this covers
///     Squeeze/Unsqueeze pairs); a Reshape to x's own shape -> x
///   Transpose(Transpose(x, p1), p2) -> Transpose(x, q) with q[j] = p1[p2[j]], or x when q is the
///     identity; a Transpose with the identity permutation -> x
/// A value that is a graph output is never replaced by another value.
bool simplify(Graph& graph);

/// fold_batchnorm.cpp: a chain of per-channel affine maps after a Conv, ConvTranspose, Gemm or
/// MatMul with constant weights (BatchNormalization in inference with constant parameters, and
/// Mul/Add by constants, and Sub of a constant, that vary only along the channel axis; every
/// intermediate value used by the next link only) is folded into the contraction: the chain is
/// y = A*z + B per channel (for BN a = scale / sqrt(var + eps), y = a*(x - mean) + bias), so
/// W' = A * W along the weight's output-channel axis and b' = B (the contraction's own bias
/// included). Gemm/MatMul only when the output has rank 2 (channel = column) and the weight is
/// 2-D; MatMul's bias stays an Add after it (a MatMul + Add alone is left as it is). Computed in
/// double, stored in the weight's dtype.
bool fold_batchnorm(Graph& graph);

/// fuse_hard_swish.cpp (values used only inside the pattern; constants compared to 1e-6 relative):
///   Clip(x + 3, 0, 6) / 6  (or * 1/6)              -> HardSigmoid(x) {alpha=1/6, beta=0.5}
///   x * Clip(x + 3, 0, 6) / 6  (any association)   -> HardSwish(x)
///   x * HardSigmoid(x) {alpha=1/6, beta=0.5}       -> HardSwish(x)
bool fuse_hard_swish(Graph& graph, const OpAvailable& available = {});

/// fuse_gelu.cpp: x * 0.5 * (1 + erf(x / sqrt 2)) in its exported variants (x/sqrt2 or
/// x*(1/sqrt2); the 0.5 applied to x, to (1 + erf) or to the product, as Mul 0.5 or Div 2)
/// -> Gelu(x); the tanh approximation x*0.5*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))) (x^3 as Pow 3 or
/// x*x*x) -> Gelu(x) {approximate="tanh"}. Gelu is ONNX opset 20.
bool fuse_gelu(Graph& graph, const OpAvailable& available = {});

/// fuse_layer_norm.cpp: m = ReduceMean(x, trailing axes); d = x - m; v = ReduceMean(d^2 or d*d,
/// same axes); y = d / Sqrt(v + eps) (or d * Reciprocal(Sqrt(v + eps))), optionally y * gamma and
/// then + beta -> LayerNormalization(x, gamma or ones, beta) {axis = first reduced axis, epsilon}.
bool fuse_layer_norm(Graph& graph, const OpAvailable& available = {});

/// fuse_silu.cpp: x * Sigmoid(x) -> Silu(x) (registered by compiler/ops/tessel_ext.cpp).
bool fuse_silu(Graph& graph, const OpAvailable& available = {});

/// fold_qdq.cpp: DequantizeLinear(x), DequantizeLinear(w)[, DequantizeLinear(int32 bias)] -> Conv
/// [-> Relu] -> QuantizeLinear becomes QLinearConv, and the same around a MatMul (or a Gemm without
/// C, alpha 1, transA 0) QLinearMatMul, by ONNX Runtime's QDQ selector rules (the file comment
/// lists them). Only when `available` has the op; unmatched Q/DQ nodes stay.
bool fold_qdq(Graph& graph, const OpAvailable& available = {});

/// qdq_maxpool.cpp: a DequantizeLinear (int8/uint8 x, float32 scales > 0 per tensor or per
/// channel, constant zero point) read only by a MaxPool moves below it: MaxPool(DQ(x)) becomes
/// DQ(MaxPool(x)), the same numbers (DQ is non-decreasing), the MaxPool on int8 values. Only when
/// `available` has QLinearConv (a target with int8 kernels).
bool qdq_maxpool(Graph& graph, const OpAvailable& available = {});

/// What fold_qdq decides for one Conv, MatMul or Gemm.
struct QdqFoldDecision {
  std::string node;    // the contraction's name
  std::string folded;  // "QLinearConv" or "QLinearMatMul" when it folds, else empty
  std::string reason;  // why it does not fold (empty when it does)
};
/// fold_qdq's decision for every Conv, MatMul and Gemm of `graph`, in node order (the graph is
/// not changed).
std::vector<QdqFoldDecision> explain_fold_qdq(Graph& graph, const OpAvailable& available = {});

/// cse.cpp: equal constants (dtype, shape, bytes) are merged, then nodes with the same op type,
/// the same inputs and equal attributes (bitwise for floats and tensors) are merged, to a fixed
/// point. A node producing a graph output is never the one removed.
bool cse(Graph& graph);

/// dce.cpp: removes nodes no graph output depends on, then values nothing references (unused
/// constants, values left behind by other passes). Graph inputs are kept.
bool dce(Graph& graph);

/// fuse_kernels.cpp: operator fusion (grouping) for the NPU. Sets the int attribute
/// `fusion_group` (same id = one kernel) on the members of every group of two or more nodes and
/// removes stale ones. The contract with the NPU backend (docs/graph_passes.md):
///   - a group is a connected set of nodes; at most one member is a contraction (Conv,
///     ConvTranspose, MatMul, Gemm); if present it is the group's first node in topological order
///     and every other member depends on it;
///   - every other member is an elementwise op (unary, binary with ONNX broadcasting, Clip,
///     HardSigmoid, HardSwish, Sigmoid, Relu, LeakyRelu, Silu, Tanh, Gelu, BatchNormalization in
///     inference, ...); in groups WITHOUT a contraction also reductions over the last axes
///     (ReduceMean/Sum/Max/Min, GlobalAveragePool, GlobalMaxPool), Softmax/LogSoftmax over the
///     last axis and LayerNormalization; QuantizeLinear / DequantizeLinear with constant scale
///     and zero point count as elementwise;
///   - every value produced inside the group and consumed inside it has ALL its consumers inside
///     the group and is not a graph output; the group has exactly one value used outside it (or a
///     graph output): its last node's first output;
///   - inputs from outside the group are arbitrary values (broadcast allowed).
/// This pass also guarantees (a backend may rely on it): in a group with a contraction every
/// member's output has the contraction's output shape; every input a member takes from outside
/// the group is a graph input, a constant or produced before the group's seed in node order (a
/// DequantizeLinear pulled in with its only consumer reads a value produced before that
/// consumer), so the kernel can be emitted at the position of its last member, and of its first
/// when no DQ was pulled (the NPU backend emits it at the first member whose outside inputs are
/// all computed).
/// Groups of one node get no attribute; nodes whose outputs are known at compile time and view ops
/// (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) are never grouped. Groups are formed
/// greedily in node order: a seed takes consumers of its values while the result can still be
/// closed, and keeps the largest valid group found; without a contraction a consumer also pulls
/// in a DequantizeLinear producing another of its inputs that only it reads.
bool fuse_kernels(Graph& graph);

/// layout_nc1hwc0.cpp (layout pass, step 1): every convolution kernel (a 2-D Conv with group = 1,
/// unfused or the contraction of its fusion group) reads its input X and its same-shape epilogue
/// operands through TransData(v) {dst_format="NC1HWC0"} and writes its result NC1HWC0, read back
/// through TransData(r) {dst_format="NCHW"} (graph outputs stay plain); only tensors with C a
/// multiple of 16. Runs after fuse_kernels; the TransData nodes are kernels of their own.
bool layout_nc1hwc0(Graph& graph);

/// cancel_transdata.cpp (layout pass, step 2): removes inverse TransData pairs and identity
/// conversions (to a fixed point), then every conversion left, since a conversion kernel's DRAM
/// round trip costs more than the format saves and the conv kernels it converts for read and
/// write either format (a conversion of a plain value: its readers read it plain; of an NC1HWC0
/// result: the result is written plain). Leaves NC1HWC0 exactly the results of conv kernels read
/// only by conv kernels. Never removes a TransData producing a graph output.
bool cancel_transdata(Graph& graph);

/// The attribute fuse_kernels sets.
inline constexpr const char* kFusionGroupAttr = "fusion_group";

/// fp16_range.cpp: keeps the values an fp16 NPU computes within fp16's range, from `max_abs`, the
/// largest finite |v| each float value (by name) reaches on calibration inputs
/// (calibrated_max_abs). A Conv / MatMul / Gemm whose output or activation operand reaches 2^15
/// computes on that operand times 2^-k (a constant bias or C too) and its result is multiplied by
/// 2^k after it, k = ceil(log2(max / 2^14)) (exact: a power of two); every other non-view node
/// whose output reaches 2^15 (the scale-back Mul among them) gets kNpuFp32Attr, so the NPU
/// computes and stores it in fp32 (npu_backend::float_storage_plan). Returns one line per change
/// (node, the magnitudes, what was done). Not a pipeline pass: `tessel check --target npu` runs
/// it on the compiled form (driver::compiled_form) for an fp16 NPU, calibrated on the data set's
/// inputs. The graph's values are unchanged (to fp32's rounding of subnormals).
std::vector<std::string> fp16_range(Graph& graph, const std::map<std::string, double>& max_abs);

/// The largest finite |v| of every float value of `graph` (graph inputs, constants read, node
/// results) on one reference run with `inputs`, by value name. Throws what run_reference throws.
std::map<std::string, double> calibrated_max_abs(const Graph& graph,
                                                 const std::map<std::string, Tensor>& inputs);

/// The attribute fp16_range sets on a node the NPU computes and stores in fp32 (its output
/// reaches 2^15 on the calibration inputs).
inline constexpr const char* kNpuFp32Attr = "npu_fp32";

}  // namespace tessel::graph_passes
