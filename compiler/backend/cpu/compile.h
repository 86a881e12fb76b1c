// The CPU backend: Graph IR -> one LLVM module with a function per kernel and a C entry point.
//
// Per node (topological order), like the NPU backend: constants and pure views (Reshape, ...)
// get no code; every other node's op_compute (compiler/lower) gives its tensor expression. A
// Conv / MatMul / Gemm whose only user is an elementwise op (Relu, Clip, HardSwish, Add of a
// residual, BatchNormalization, ...) of the same shape is fused into that op's kernel as its
// epilogue (repeatedly, so Conv -> Add -> Relu is one kernel). Contractions get the BLIS schedule
// (passes/loop/cpu_gemm.cpp), everything else lower_te + cpu_vectorize + cpu_unroll +
// cpu_parallel; codegen.h turns the loop IR into LLVM IR.
//
// Host buffers are fp32, dense row-major in their ONNX shape. Intermediate values live in one
// arena (offsets planned by liveness, 64-byte aligned) allocated by the entry point; graph
// outputs are computed in place in the caller's output buffers. The module defines
//
//   int tessel_model_run(const float** inputs, float** outputs);
//   int tessel_model_run_profiled(const float** inputs, float** outputs, double* kernel_seconds);
//
// inputs / outputs in graph order (CpuProgram::inputs / outputs give names and shapes);
// kernel_seconds receives the wall time of every kernel with code, in CpuProgram::kernels order.
// Both return 0, or 1 when the arena cannot be allocated.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "passes/loop/cpu_passes.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace tessel::cpu_backend {

struct CpuCompileOptions {
  passes::CpuTarget target = passes::CpuTarget::host();
  std::map<std::string, passes::CpuGemmKnobs> gemm_knobs;  // by node name (the kernel's last node)
  passes::CpuGenericKnobs generic;
  bool fuse_epilogues = true;
  /// AOT: constants become initialized globals of the module. JIT (false): they stay in host
  /// memory owned by the CpuProgram and the module refers to them as external symbols.
  bool embed_constants = false;
  bool keep_loop_ir = false;  // keep each kernel's loop IR text in CpuKernelInfo::loop_ir
};

/// One graph node as compiled.
struct CpuKernelInfo {
  std::string node;      // graph node name
  std::string op_type;   // ONNX op
  std::string kind;      // "gemm", "generic", "copy", "view" / "const" / "empty" (no code), "fused"
  std::string function;  // LLVM function ("" without code)
  std::string fused_into;          // kind "fused": the node whose kernel computes this one
  std::vector<std::string> fused;  // nodes computed inside this kernel (its epilogue producers)
  double flops = 0;                // gemm: 2 * batch * M * N * K
  passes::CpuGemmKnobs gemm;       // gemm: the knobs used
  std::string loop_ir;
};

/// A graph input or output of the entry point.
struct HostBinding {
  std::string value;
  Shape shape;
};

/// A constant the JIT maps to host memory (`symbol` is the module's external global, declared
/// 64-byte aligned, so `data` is allocated with that alignment).
struct HostConstant {
  std::string symbol;
  std::shared_ptr<float> data;  // aligned_alloc(64, ...), freed by its deleter
  int64_t count = 0;
};

/// A model lowered to LLVM IR (see the file comment).
struct CpuProgram {
  std::string name;
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  std::vector<CpuKernelInfo> kernels;
  std::vector<HostBinding> inputs, outputs;
  std::vector<HostConstant> constants;  // empty when embedded
  int64_t arena_bytes = 0;
  int64_t constant_bytes = 0;
  passes::CpuTarget target;

  CpuProgram();
  CpuProgram(CpuProgram&&) noexcept;
  CpuProgram& operator=(CpuProgram&&) noexcept;
  ~CpuProgram();
  /// Kernels with code, in the order kernel_seconds reports them.
  std::vector<const CpuKernelInfo*> timed_kernels() const;
};

/// Compiles `graph` to LLVM IR for the CPU. Throws tessel::Unsupported naming the node for an op
/// without a compute (or a used second output, a non-float graph input), tessel::Error naming
/// the node when LLVM rejects the generated function (with LLVM's diagnostic).
CpuProgram compile_cpu(const Graph& graph, const CpuCompileOptions& options = {});

/// Names of the ops the CPU backend compiles (op_compute's ops plus the views).
std::vector<std::string> cpu_ops();

}  // namespace tessel::cpu_backend
