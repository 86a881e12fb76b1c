// Running a CpuProgram in process: LLVM's O3 pipeline for the host, then ORC LLJIT.
//
// The program's module is optimised (new pass manager, buildPerModuleDefaultPipeline(O3) with
// loop and SLP vectorization, tuned for the host CPU) and added to an LLJIT instance whose
// symbol table maps the runtime (cpu_runtime.h), the program's constants (host memory) and libc /
// libm (aligned_alloc, free, expf, ...) of this process.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/cpu/compile.h"
#include "compiler/ir/tensor.h"

namespace llvm {
class TargetMachine;
namespace orc {
class LLJIT;
}
}  // namespace llvm

namespace tessel::cpu_backend {

/// A target machine for the host CPU and its features (position-independent code when `pic`).
/// Throws tessel::Error with LLVM's message when the host target is not available.
std::unique_ptr<llvm::TargetMachine> host_target_machine(bool pic);

/// Runs LLVM's O3 module pipeline (loop + SLP vectorization, unrolling) on `module` for `tm`.
void optimize_module(llvm::Module& module, llvm::TargetMachine& tm);

/// A CpuProgram compiled to machine code in this process.
class CpuJit {
 public:
  /// Optimises and JIT-compiles `program` (its module is consumed). Throws tessel::Error with
  /// LLVM's diagnostic when optimisation, code generation or symbol resolution fails.
  explicit CpuJit(CpuProgram program);
  ~CpuJit();
  CpuJit(const CpuJit&) = delete;
  CpuJit& operator=(const CpuJit&) = delete;

  const CpuProgram& program() const { return program_; }
  double compile_seconds() const { return compile_seconds_; }

  /// The entry points (see compile.h): inputs/outputs in graph order, fp32 dense buffers.
  int run(const float** inputs, float** outputs) const;
  int run_profiled(const float** inputs, float** outputs, double* kernel_seconds) const;

  struct Result {
    std::map<std::string, Tensor> outputs;  // fp32, by graph output name
    std::vector<double> kernel_seconds;     // per timed kernel (CpuProgram::timed_kernels)
    double seconds = 0;                     // wall time of the entry call
  };
  /// Runs on named tensors (converted to fp32; shapes checked against the bound graph). Throws
  /// tessel::Error naming a missing input or a shape mismatch.
  Result run(const std::map<std::string, Tensor>& inputs, bool profile = false) const;

 private:
  CpuProgram program_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  int (*run_)(const float**, float**) = nullptr;
  int (*run_profiled_)(const float**, float**, double*) = nullptr;
  double compile_seconds_ = 0;
};

}  // namespace tessel::cpu_backend
