// The NPU's quantised contractions: QLinearMatMul and MatMulInteger (ONNX operator format) as
// cube kernels in the int8 mode (docs/isa.md, "mmad", "fix"). The compute is the "matmul"
// tensor expression of the raw integer product, marked int8 for passes/loop/tile_cube.cpp, whose
// fix applies the zero-point correction, the scale and the output zero point from a table:
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
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/lower/op_compute.h"
#include "compiler/te/te.h"

namespace tessel::npu_backend {

/// True for the ops npu_int8_compute lowers (QLinearMatMul, MatMulInteger).
bool is_npu_int8_op(const Node& node);

/// The int8 cube compute of `node` (see above). B (the weights), the scales and the zero points
/// must be constants; B - b_zero_point must fit i8 or u8 (true of i8 weights with zero point 0
/// and of u8 weights with zero point 128, ONNX Runtime's two weight forms); B is 2-D (A may carry
/// batch dims). Throws tessel::Unsupported naming the node and the input otherwise.
te::Tensor npu_int8_compute(const Node& node, lower::ComputeContext& ctx);

}  // namespace tessel::npu_backend
