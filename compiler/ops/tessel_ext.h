// tessel extension ops: fused single ops that the graph passes form and ONNX lacks, registered
// with a shape rule and a reference kernel like the ONNX ops (compiler/ops/tessel_ext.cpp).
//
//   Silu(X) -> Y: y = x * sigmoid(x) (the SiLU / swish-1 activation, Elfwing et al. 2018;
//   Ramachandran et al. 2017), float X, Y the shape and dtype of X. Formed by
//   passes/graph/fuse_silu.cpp from Mul(x, Sigmoid(x)).
#pragma once

namespace tessel::ops {

/// Registers the tessel extension ops (called from register_builtin_ops()).
void register_tessel_ext_ops();

}  // namespace tessel::ops
