// The CPU backend: Graph IR -> kernels in loop IR, their arguments and one weights blob; the
// kernels are then compiled to machine code (objects.h: one LLVM module per kernel, in parallel,
// cached by content hash) and linked with a C entry point (jit.h in process, aot.h to a file).
//
// The model is planned as kernels by plan_model (model_plan.h, shared with the GPU backend):
// constants and pure views get no code, a Conv / MatMul / Gemm is fused with its elementwise
// epilogue (Relu, Clip, HardSwish, Add of a residual, BatchNormalization, ...), every other node
// is one kernel of its op_compute (compiler/lower). The CPU's schedules: contractions get the
// BLIS schedule (passes/loop/cpu_gemm.cpp), everything else lower_te + cpu_vectorize + cpu_unroll
// + cpu_parallel; codegen.h turns the loop IR into LLVM IR.
//
// Host buffers are dense row-major in their ONNX shape, fp32 for float32 / float16 values and
// the value's own dtype otherwise (HostBinding::dtype). Intermediate values live in one
// arena (offsets planned by liveness, 64-byte aligned) allocated by the entry point; graph
// outputs are computed in place in the caller's output buffers. Constants (graph constants and
// the panels schedules pack from them) are not part of any kernel's code: they are laid out in
// one blob (CpuProgram::weights, each at a 64-byte aligned offset) and the entry point passes a
// kernel pointers into it, so the code of two kernels that differ only in their weights is the
// same (and compiled once). The entry points are
//
//   int tessel_model_run(const float** inputs, float** outputs);
//   int tessel_model_run_profiled(const float** inputs, float** outputs, double* kernel_seconds);
//
// inputs / outputs in graph order (CpuProgram::inputs / outputs give names and shapes);
// kernel_seconds receives the wall time of every kernel with code, in CpuProgram::kernels order.
// Both return 0, or 1 when the arena cannot be allocated. They find the blob at the symbol
// `tessel_weights` (the JIT maps it to CpuProgram::weights, an AOT library holds it in .rodata).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/backend/cpu/build_options.h"
#include "compiler/backend/cpu/qgemm.h"
#include "compiler/ir/graph.h"
#include "compiler/loop/loop.h"
#include "passes/loop/cpu_passes.h"

namespace tessel::cpu_backend {

struct CpuCompileOptions {
  passes::CpuTarget target = passes::CpuTarget::host();
  std::map<std::string, passes::CpuGemmKnobs> gemm_knobs;  // by node name (the kernel's last node)
  std::map<std::string, passes::CpuDepthwiseKnobs> depthwise_knobs;  // by node name, as gemm_knobs
  passes::CpuGenericKnobs generic;
  bool fuse_epilogues = true;
  bool keep_loop_ir = false;  // keep each kernel's loop IR text in CpuKernelInfo::loop_ir
  /// How the kernels become machine code (objects.h): threads, cache, optimisation level.
  CpuBuildOptions build;
  /// The int8 kernels' path (qgemm.h): unset = the host's (vnni where it has AVX-512 VNNI,
  /// else plain; the environment variable TESSEL_CPU_QGEMM=plain|vnni overrides it).
  std::optional<QGemmPath> qgemm_path;
};

/// One graph node as compiled.
struct CpuKernelInfo {
  std::string node;     // graph node name
  std::string op_type;  // ONNX op
  std::string kind;  // "gemm", "depthwise", "generic", "int8" (a host int8 kernel), "copy", "view"
                     // / "const" / "empty" (no code), "fused"
  std::string function;            // LLVM function ("" without code)
  std::string fused_into;          // kind "fused": the node whose kernel computes this one
  std::vector<std::string> fused;  // nodes computed inside this kernel (its epilogue producers)
  double flops = 0;                // gemm: 2 * batch * M * N * K
  passes::CpuGemmKnobs gemm;       // gemm: the knobs used
  passes::CpuDepthwiseKnobs depthwise;  // depthwise: the knobs used
  std::string loop_ir;
};

/// A kernel the backend runs as a host function instead of generated loop IR (the CPU's int8
/// kernels, compiler/backend/cpu/int8_kernels.h). Its parameters (KernelPlan::params) are the
/// node's non-constant inputs in input order, then its output; it holds its constant inputs.
class ExternKernel {
 public:
  virtual ~ExternKernel() = default;
  /// Computes the output from `args` (one pointer per parameter, to dense row-major bytes of the
  /// value's own dtype). Throws tessel::Error (the entry point's trampoline reports it).
  virtual void run(void* const* args) const = 0;
};

/// A graph input or output of the entry point.
struct HostBinding {
  std::string value;
  Shape shape;
  /// The caller's buffer: fp32 for float32 / float16 values, else the value's own dtype (float64,
  /// the integers, bool as one byte 0 / 1; model_plan.h PlanOptions::typed_values).
  DType dtype = DType::f32;
};

/// What a kernel parameter points at when the entry point calls the kernel.
struct CpuArg {
  enum class Kind { input, output, arena, weights };
  Kind kind = Kind::arena;
  int index = 0;             // input / output: position in graph order
  int64_t offset_bytes = 0;  // arena / weights: byte offset from the start
};

/// One kernel call of the entry point: a function over `params` (1-D fp32 host allocations, in
/// argument order) that runs `body`, called with `args`.
struct CpuKernelCode {
  size_t info_index = 0;  // the CpuProgram::kernels entry it computes
  std::vector<loop::Buffer> params;
  loop::Stmt body;
  std::vector<CpuArg> args;  // one per parameter
  /// Set: a host function (no body; the JIT's entry point calls it through tessel_cpu_extern).
  std::shared_ptr<const ExternKernel> ext;
  /// Set: the entry point calls the kernel only when the byte this points at is nonzero (the
  /// guard of an If branch's kernel, KernelPlan::guard); a skipped kernel's time is 0.
  std::optional<CpuArg> guard;
};

/// A 64-byte aligned byte buffer (the weights blob), shared by a program and its JIT.
struct AlignedBytes {
  std::shared_ptr<uint8_t> data;  // aligned_alloc(64, ...), freed by its deleter
  int64_t size = 0;
  /// `size` zero bytes; throws std::bad_alloc.
  static AlignedBytes zeros(int64_t size);
};

/// A model lowered to kernels (see the file comment).
struct CpuProgram {
  std::string name;
  std::vector<CpuKernelInfo> kernels;  // every node, in graph order (with the kinds without code)
  std::vector<CpuKernelCode> code;     // kernels with code, in execution order
  std::vector<HostBinding> inputs, outputs;
  AlignedBytes weights;  // every constant a kernel reads, fp32, 64-byte aligned offsets
  int64_t arena_bytes = 0;
  int64_t constant_bytes = 0;  // bytes of the constants in `weights` (without alignment padding)
  passes::CpuTarget target;
  CpuBuildOptions build;

  /// Kernels with code, in the order kernel_seconds reports them.
  std::vector<const CpuKernelInfo*> timed_kernels() const;
};

/// Lowers `graph` to kernels for the CPU (no LLVM yet: objects.h compiles them). Throws
/// tessel::Unsupported naming the node for an op without a compute (or a used second output, a
/// non-float graph input), tessel::Error naming the node when a schedule fails.
CpuProgram compile_cpu(const Graph& graph, const CpuCompileOptions& options = {});

/// Names of the ops the CPU backend compiles (op_compute's ops, the op_parts-only ops and the
/// views).
std::vector<std::string> cpu_ops();

}  // namespace tessel::cpu_backend
