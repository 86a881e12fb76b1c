// The NPU's quantised contractions: QLinearMatMul, MatMulInteger, QLinearConv and ConvInteger
// (ONNX operator format) as cube kernels in the int8 mode (docs/isa.md, "mmad", "fix"). The compute
// is the "matmul" tensor expression of the raw integer product, marked int8 for
// passes/loop/tile_cube.cpp, whose fix applies the zero-point correction, the scale and the output
// zero point from a table:
//
//   y[.., m, n] = fix(sum_k A[.., m, k] * B'[k, n])      B' = B - b_zero_point (compile time)
//   fix: v = acc + bias_n, bias_n = -a_zero_point * sum_k B'[k, n]   (int32; the exact identity
//        sum_k (A - a_zp) B' = sum_k A B' - a_zp sum_k B')
//   QLinearMatMul: y = saturate(nearbyint(float(v) * scale_n) + y_zero_point), scale_n =
//        fp32(fp32(a_scale * b_scale_n) / y_scale) -- ONNX Runtime's QLinearMatMul arithmetic;
//   MatMulInteger: y = v (int32).
//
// The table is a constant placeholder (extra_inputs[2]) of i32 pairs (scale bits, bias) per
// output column (one pair when every column shares them); attrs: int8, per_channel, zero_point.
//
// QLinearConv / ConvInteger: the "conv2d" expression (2-D, NCHW; groups and depthwise as groups,
// all on the cube) of the raw product of x and W' = W - w_zero_point[m] (compile time, i8 or u8),
// reading x_zero_point outside x (the padded border), marked int8 (and pad_value = x_zp) for the
// conv schedule of passes/loop/tile_cube.cpp, whose fix (per_row: the conv tile's rows are its
// output channels) applies per output channel m:
//   v = acc + bias_m, bias_m = B[m] - x_zp * sum_{c,r,s} W'[m, c, r, s]   (int32; exact because the
//       border reads x_zp: sum (x_pad - x_zp) W' = sum x_pad W' - x_zp sum W' at every pixel)
//   QLinearConv: y = saturate(nearbyint(float(v) * scale_m) + y_zp), scale_m = fp32(fp32(x_scale *
//       w_scale_m) / y_scale), ONNX Runtime's arithmetic; ConvInteger: y = v (int32).
// A depthwise conv (one input channel per group) is blocked: `depthwise_block` channels (the int8
// fractal's m, so that one group fills the cube's rows) form one group of a grouped conv whose
// weights are block-diagonal (W'' [M, block, KH, KW], each output channel's own taps at its own
// channel, zeros elsewhere): the same int32 sums (the zeros add nothing), block times fewer
// groups, each a full fractal of output channels (block = the largest divisor of the group count
// not above depthwise_block).
//
// QuantizeLinear / DequantizeLinear (constant scale and zero point, per tensor or per axis) as
// vector kernels: Q y = convert(min(max(round_half_even(x / scale) + zp, lo), hi)) (exact but for
// x / scale, one rounding to the activation dtype); DQ y = (float(x) - zp) * scale.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/lower/op_compute.h"
#include "compiler/te/te.h"

namespace tessel::npu_backend {

/// The op types npu_int8_compute lowers (for the graph passes' target op list: fold_qdq folds
/// into them only where the target has them).
std::vector<std::string> npu_int8_ops();

/// True for the ops npu_int8_compute lowers (QLinearMatMul, MatMulInteger, QLinearConv,
/// ConvInteger).
bool is_npu_int8_op(const Node& node);

/// The int8 cube compute of `node` (see above). B (the weights), the scales and the zero points
/// must be constants; B - b_zero_point must fit i8 or u8 (true of i8 weights with zero point 0
/// and of u8 weights with zero point 128, ONNX Runtime's two weight forms); B is 2-D (A may carry
/// batch dims). For the convolutions: w, the scales, the zero points and B constant, x 4-D (NCHW),
/// w - w_zero_point in i8 or u8, x_zero_point a scalar, w's zero point and scale a scalar or one
/// per output channel, bias plus correction within int32. Throws tessel::Unsupported naming the
/// node and the input otherwise.
/// `act_dtype`: the target's float activation dtype (QuantizeLinear divides by an f32 vector
/// scalar's reciprocal on fp16 activations, where a stored scale would round to fp16, and by
/// the stored f32 scale with vdiv on fp32 activations, exactly as ORT's division).
/// `depthwise_block`: output channels per cube group of a depthwise QLinearConv / ConvInteger
/// (see above; <= 1 leaves one channel per group).
te::Tensor npu_int8_compute(const Node& node, lower::ComputeContext& ctx,
                            DType act_dtype = DType::f32, int64_t depthwise_block = 1);

}  // namespace tessel::npu_backend
