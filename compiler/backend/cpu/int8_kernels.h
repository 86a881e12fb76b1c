// The CPU plan's int8 kernels: the quantised ONNX ops run as host functions (ExternKernel,
// compile.h) on the generated int8 kernels of qgemm.h, inside the same entry point as the
// loop-IR kernels, on integer tensors stored in their own dtype (u8, i8, i32):
//
//   QuantizeLinear, DequantizeLinear   per tensor or per axis (u8, s8; DequantizeLinear also i32)
//   QLinearMatMul, MatMulInteger       A of rank >= 2 (leading dims flattened into rows), B 2-D
//   QLinearConv, ConvInteger           1-D or 2-D (a 1-D conv is a 2-D one of height 1), groups,
//                                      strides, dilations, explicit or SAME/VALID auto_pad; im2col
//                                      pads with x's zero point (so padded taps contribute 0)
//
// Constant inputs (weights, scales, zero points, bias) are captured when the kernel is made;
// the others arrive as arguments. The arithmetic is qgemm.h's (bit-exact against ONNX Runtime:
// int32 accumulation, fp32 requantisation as MlasRequantizeOutput, round half to even,
// saturation), on the path the plan was compiled for (plain or AVX-512 VNNI).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/cpu/compile.h"
#include "compiler/backend/cpu/qgemm.h"
#include "compiler/ir/graph.h"

namespace tessel::cpu_backend {

/// The ops make_int8_kernel takes.
std::vector<std::string> int8_ops();

/// The path the CPU plan's int8 kernels use by default: TESSEL_CPU_QGEMM=plain|vnni when set,
/// else the host's (qgemm_host_path). Throws tessel::Error for another value or for vnni on a
/// host without AVX-512 VNNI.
QGemmPath default_qgemm_path();

/// The host kernel of `node` on `path`, or null when its op is not one of int8_ops(). Throws
/// tessel::Unsupported naming the node for a form outside the file comment's (a non-constant
/// weight of a convolution, a batched B, a blocked quantisation, another rank).
std::shared_ptr<const ExternKernel> make_int8_kernel(const Node& node, QGemmPath path);

/// A host kernel copying `bytes` bytes from its first argument to its second.
std::shared_ptr<const ExternKernel> make_copy_kernel(int64_t bytes);

}  // namespace tessel::cpu_backend
