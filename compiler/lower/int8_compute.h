// Generic tensor expressions of ONNX's quantised ops, for targets that compute integer tensors
// in their own dtypes in generated kernels (ComputeContext::typed_values: the GPU backend). The
// CPU runs these ops on host kernels of its own (compiler/backend/cpu/int8_kernels.h) and the
// NPU on its cube's int8 mode (compiler/backend/npu/int8_ops.h); these computes need neither:
// plain reads, integer reductions and one fp32 requantisation stage, so any loop schedule and
// code generator that honours loop::value_dtype computes them.
//
//   QuantizeLinear     y = clamp(round_half_even(x / scale) + zp, lo, hi), per tensor or per
//                      axis; x / scale in fp32 (x of another dtype converted to fp32 first);
//                      NaN -> zp. Scale and zero point may be run-time tensors.
//   DequantizeLinear   y = scale * (float(x) - float(zp)) in fp32 (the reference's
//                      (x - zp) * scale: one rounding of the product).
//   MatMulInteger      y = sum_k (A32 - a_zp[m]) (B32 - b_zp[n]) in int32 (wrapping), A32 / B32
//                      the operands converted to int32 (stages of their own: a conversion is
//                      never inlined, so the source's value type is int32 by itself, not u8 /
//                      i8 -- the TE means int32 arithmetic whatever the lowering; lower_te's
//                      accumulator, read first in the combine, is int32 too); batch dims
//                      broadcast as in MatMul (both operands of rank >= 2).
//   ConvInteger        y[n,m,oh,ow] = sum_{c,r,s} X'[n, g(m) C/G + c, oh sh - ph + r dh,
//                      ow sw - pw + s dw] (W32[m,c,r,s] - w_zp[m]), X' = X32 - x_zp with the
//                      padded border 0 (a padded tap contributes (x_zp - x_zp) w = 0); 2-D, NCHW,
//                      groups, strides, dilations, pads / auto_pad.
//   QLinearMatMul,     the int32 accumulator as above (plus the int32 bias B[m] of QLinearConv),
//   QLinearConv        converted to fp32, times scale_j = fp32(fp32(a_scale b_scale_j) / y_scale)
//                      (a constant computed at compile time in that order, ONNX Runtime's
//                      arithmetic), rounded half to even, clamped to [lo - y_zp, hi - y_zp],
//                      plus y_zp: compiler/ops/op_util.h requantize_fp32 bit for bit. Scales and
//                      y_zero_point must be constants.
//
// lo / hi: the output dtype's range (u8 0..255, i8 -128..127, ...).
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/lower/op_compute.h"
#include "compiler/te/te.h"

namespace tessel::lower {

/// The ops int8_compute lowers: QuantizeLinear, DequantizeLinear, MatMulInteger, ConvInteger,
/// QLinearMatMul, QLinearConv.
std::vector<std::string> int8_compute_ops();

/// True when `op` is one of int8_compute_ops().
bool is_int8_compute_op(const std::string& op);

/// The compute of `node`'s output (see the file comment). Throws tessel::Unsupported naming the
/// node for a form outside it (a run-time scale of a QLinear op, a blocked quantisation, a
/// convolution that is not 2-D, an operand of rank < 2).
te::Tensor int8_compute(const Node& node, ComputeContext& ctx);

}  // namespace tessel::lower
