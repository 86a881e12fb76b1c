// The GPU backend: Graph IR -> one NVPTX module (PTX for sm_80) with one entry per launch, and
// the plan of the launches a run makes.
//
// Planning is the CPU backend's (compiler/backend/cpu/model_plan.h: views and constants without
// code, Conv / MatMul / Gemm fused with their elementwise epilogues, Concat as copies, graph
// outputs in place, intermediate values in one arena); the schedules are the GPU loop passes
// (passes/loop/gpu_passes.h): gpu_gemm (+ gpu_double_buffer) for contractions, gpu_tile for
// windowed kernels (pooling, depthwise convolution), lower_te + gpu_bind for everything else. A
// kernel's loop IR is a sequence of launches (one per gpu_block loop: a softmax is several) with
// lower_te's temporaries in per-kernel global scratch memory; each launch is one PTX entry
// `<kernel>_l<i>` (codegen.h) over the buffers it uses.
//
// Device memory of a run: every graph input and output, the activation arena, every constant
// (uploaded once) and one scratch area (the largest kernel's temporaries), all 256-byte aligned
// allocations. Float32 / float16 values are stored as fp32 (constants packed in fp16 for the
// tensor cores); integer, bool (one byte 0 / 1) and float64 values in their own dtypes
// (PlanOptions::typed_values, as on the CPU), computed exactly by the generated kernels.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/backend/cpu/model_plan.h"
#include "compiler/backend/gpu/codegen.h"
#include "compiler/ir/graph.h"
#include "passes/loop/gpu_passes.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace tessel::gpu_backend {

struct GpuCompileOptions {
  passes::GpuTarget target = passes::GpuTarget::sm80();
  std::map<std::string, passes::GpuGemmKnobs> gemm_knobs;  // by node (the kernel's last node)
  passes::GpuGemmKnobs gemm;                               // the default for every contraction
  passes::GpuGenericKnobs generic;
  bool tile_windows = true;  // windowed kernels through gpu_tile (else gpu_bind)
  bool fuse_epilogues = true;
  bool keep_loop_ir = false;  // keep each kernel's loop IR text in CpuKernelInfo::loop_ir
  /// Prepended to every PTX entry name (entries are `<prefix>tessel_k<N>_<node>_l<i>`), so the
  /// PTX of several programs can share one module.
  std::string entry_prefix;
};

/// Where a launch argument points at run time.
struct GpuArg {
  enum class Kind { input, output, arena, constant, scratch } kind = Kind::arena;
  int index = 0;             // input / output / constant position
  int64_t offset_bytes = 0;  // arena / scratch offset
};

/// One kernel launch: a PTX entry, its grid and the buffers it takes, in order.
struct GpuLaunch {
  std::string entry;
  KernelShape shape;
  std::vector<GpuArg> args;
  std::string what;  // the loop IR's comment (e.g. "gemm conv1: M=64 N=3136 K=576 ...")
  int64_t bytes =
      0;  // compulsory global-memory traffic: every buffer it takes, read or written once
};

/// A kernel (graph node with code) as launches.
struct GpuKernel {
  size_t info_index = 0;  // into GpuProgram::plan.kernels
  std::vector<GpuLaunch> launches;
  int64_t scratch_bytes = 0;
  passes::GpuGemmKnobs gemm;  // contraction kernels: the knobs used
  bool tensor_cores = false;  // some launch computes in fp16 on the tensor cores
  /// Set: the kernel belongs to an If branch (model_plan.h KernelPlan::guard); its launches run
  /// only when this bool value (one byte in device memory) is true -- the host reads the byte
  /// back before launching them.
  std::optional<GpuArg> guard;
};

/// A model compiled for the GPU (see the file comment).
struct GpuProgram {
  std::string name;
  cpu_backend::ModelPlan plan;
  std::vector<GpuKernel> kernels;  // in execution order (plan.plans order)
  int64_t scratch_bytes = 0;       // the largest kernel's temporaries
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;  // NVPTX IR as generated (not optimised)
  passes::GpuTarget target;

  GpuProgram();
  GpuProgram(GpuProgram&&) noexcept;
  GpuProgram& operator=(GpuProgram&&) noexcept;
  ~GpuProgram();
  /// True when some kernel computes in fp16 (tensor cores): the check tolerance is fp16's.
  bool uses_fp16() const;
  /// Launches in execution order.
  size_t launch_count() const;
};

/// Compiles `graph` for the GPU. Throws tessel::Unsupported naming the node for an op without a
/// compute (or a used second output), tessel::Error naming the node
/// when LLVM rejects a generated function.
GpuProgram compile_gpu(const Graph& graph, const GpuCompileOptions& options = {});

/// The module's LLVM IR text (as generated, before optimisation).
std::string gpu_llvm_ir_text(const GpuProgram& program);

/// PTX for the program's target (sm_80, PTX ISA 7.0): a copy of the module optimised by LLVM's
/// O3 pipeline for NVPTX, then NVPTX code generation. Throws tessel::Error with LLVM's message
/// when the NVPTX target is unavailable or rejects the module.
std::string gpu_ptx(const GpuProgram& program);

}  // namespace tessel::gpu_backend
