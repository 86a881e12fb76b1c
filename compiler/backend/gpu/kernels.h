// Standalone GPU kernels outside a model, for benchmarks against vendor libraries (cuBLAS,
// cuDNN: benchmarks/bench_gpu.cpp) and for tests of what those benchmarks run: one contraction
// scheduled by gpu_gemm (passes/loop/gpu_gemm.cpp), with operands in fp16 or fp32 global memory.
#pragma once

#include <vector>

#include "compiler/backend/gpu/compile.h"

namespace tessel::gpu_backend {

/// A program of one launch and what its parameters are.
struct StandaloneKernel {
  GpuProgram program;  // one kernel: entry `entry`
  std::string entry;
  KernelShape shape;
  std::vector<loop::Buffer> params;               // in argument order
  std::vector<passes::PackedConstant> constants;  // packed constant parameters (data to upload)
  passes::GpuGemmKnobs knobs;                     // as chosen
  double flops = 0;
};

/// C[M][N] = A[M][K] B[K][N], row-major, A and B of `operands` (f16 or f32), C fp32. Parameters
/// (A, B, C).
StandaloneKernel gemm_kernel(int64_t M, int64_t N, int64_t K, DType operands,
                             passes::GpuGemmKnobs knobs = {},
                             passes::GpuTarget target = passes::GpuTarget::sm80());

/// y = conv(x, w) without bias (NCHW; x [N, C, H, W] of dtype `x_dtype`, w the constant weights
/// [Cout, C, KH, KW], square stride and padding), y fp32. Parameters (x, y, packed weights) --
/// the packed weights' data is `constants[0]`.
StandaloneKernel conv_kernel(const Shape& x, const Tensor& w, int64_t stride, int64_t pad,
                             DType x_dtype, passes::GpuGemmKnobs knobs = {},
                             passes::GpuTarget target = passes::GpuTarget::sm80());

}  // namespace tessel::gpu_backend
