// tessel extension ops: fused single ops that the graph passes form and ONNX lacks, registered
// with a shape rule and a reference kernel like the ONNX ops (compiler/ops/tessel_ext.cpp).
//
//   Silu(X) -> Y: y = x * sigmoid(x) (the SiLU / swish-1 activation, Elfwing et al. 2018;
//   Ramachandran et al. 2017), float X, Y the shape and dtype of X. Formed by
//   passes/graph/fuse_silu.cpp from Mul(x, Sigmoid(x)).
//   TransData(X) {dst_format = "NC1HWC0" | "NCHW"} -> Y: a storage-format conversion (Ascend GE's
//   TransData): Y holds the same logical values as X (same dtype and [N, C, H, W] shape, C a
//   multiple of 16), stored in dst_format (graph.h StorageFormat; the verifier checks that Y's
//   format is dst_format). The reference copies; the NPU runs a copy kernel (DMA in, vector copy,
//   DMA out, in whole C0 blocks) that re-lays the data out. Inserted by
//   passes/graph/layout_nc1hwc0.cpp, removed again by passes/graph/cancel_transdata.cpp where
//   redundant.
#pragma once

namespace tessel::ops {

/// Registers the tessel extension ops (called from register_builtin_ops()).
void register_tessel_ext_ops();

}  // namespace tessel::ops
