// The tensor-expression definition of every op a compiled target supports: one compute per op,
// written once in index notation (compiler/te), from which the NPU, CPU and naive loop nests are
// generated. Semantics follow the ONNX operator docs (opset 17 forms, as canonicalised by the
// frontend); the reference kernels (compiler/ops) are the independent check.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/te/te.h"

namespace tessel::lower {

/// Supplies tensor-expression placeholders for graph values and registers constants derived at
/// compile time (e.g. BatchNormalization's per-channel scale and shift).
class ComputeContext {
 public:
  virtual ~ComputeContext() = default;
  /// The placeholder standing for graph value `v` (a runtime tensor or a constant in memory).
  virtual te::Tensor input(const Value* v) = 0;
  /// True when the target computes integer and bool tensors in their own types (the NPU): the
  /// comparisons, logic, Where and Cast computes are available and integer inputs are accepted
  /// for the ops whose computes are exact in integers. False (default): float tensors only.
  virtual bool typed_values() const { return false; }
  /// A new constant tensor computed at compile time, available to the kernel as a placeholder.
  virtual te::Tensor derived_constant(const std::string& name, const Tensor& data) = 0;
};

/// The explicit pads [top, left, bottom, right] of a 2-D conv/pool window over input shape `in`
/// (NCHW) from the node's pads or auto_pad (ONNX Conv doc: SAME_UPPER puts the odd pad at the
/// end, SAME_LOWER at the start, VALID none).
std::vector<int64_t> conv_window_pads(const Node& node, const Shape& in,
                                      const std::vector<int64_t>& kernel,
                                      const std::vector<int64_t>& strides,
                                      const std::vector<int64_t>& dilations);

/// True for ops whose output is the input's bytes under another shape (Reshape, Flatten, Squeeze,
/// Unsqueeze, Identity, Dropout in inference, Cast between equal float storage): no kernel.
bool is_alias_op(const Node& node);

/// The compute of `node`'s first output. Throws tessel::Unsupported naming the op and node when the
/// op (or an attribute value) has no compute definition.
te::Tensor op_compute(const Node& node, ComputeContext& ctx);

/// One kernel of an op computed as several kernels, each writing a strided view of the output
/// (element strides and offset relative to the output's dense row-major layout).
struct OpPart {
  te::Tensor out;
  Shape view_shape;
  std::vector<int64_t> view_strides;
  int64_t view_offset = 0;
};

/// The parts of an op computed as several kernels: Concat (one copy per input), Resize in nearest
/// mode with integer scales (one kernel per row phase, writing whole output rows: a
/// [N, C, H, W, sw] view whose last axis repeats the source pixel), ConvTranspose with kernel ==
/// stride and no padding (one 1x1 convolution per kernel tap, writing every stride-th output
/// pixel), and the rearrangements DepthToSpace, SpaceToDepth and Tile (one kernel over the dense
/// output seen as a higher-rank tensor -- [N, C', H, b, W, b], [N, b, b, C, H', W'],
/// [r0, d0, r1, d1, ...] -- in which every read is affine). Empty when the node is a single
/// kernel. Throws tessel::Unsupported naming the node for attribute values outside these forms.
std::vector<OpPart> op_parts(const Node& node, ComputeContext& ctx);

/// True when op_parts compiles the Resize `node` as pixel repetition: nearest mode, a 4-D float
/// input, integer factors on H and W, none on N and C, and a coordinate transformation /
/// nearest_mode pair that picks source pixel floor(x / s) (asymmetric + floor, half_pixel or
/// pytorch_half_pixel + round_prefer_floor/ceil, tf_half_pixel_for_nn + floor). Every other
/// Resize is rewritten into MatMuls before compiling (passes/graph/resize_as_matmul.cpp).
/// When false and `why` is given, *why says what does not match.
bool resize_repeats_pixels(const Node& node, std::string* why = nullptr);

/// Names of the ops compiled only through op_parts (not in compute_ops(); Concat is in both).
std::vector<std::string> parts_ops();

/// Names of the ops op_compute supports (for documentation and error messages).
std::vector<std::string> compute_ops();

/// Names of the ops op_compute supports only for a context with typed values
/// (ComputeContext::typed_values: the NPU): Equal, Less, LessOrEqual, Greater, GreaterOrEqual,
/// And, Or, Xor, Not, Where, Cast between integer, float and bool dtypes, Gather, GatherElements,
/// ArgMax, ArgMin, Trilu, Mod of integers.
std::vector<std::string> typed_compute_ops();

/// True for the ops whose computes are exact on integer tensors (wrapping Add/Sub/Mul, truncating
/// Div, Min/Max/Abs/Neg/Clip/MaxPool, comparisons, logic, Where, Cast, Gather, ArgMax, Trilu,
/// Mod, data movement): a typed target (ComputeContext::typed_values) takes integer and bool
/// inputs for these and reads their integer operands in their own dtypes.
bool exact_on_integers(const std::string& op);

}  // namespace tessel::lower
