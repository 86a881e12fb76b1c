// Running a CpuProgram in process: its objects (objects.h: kernels compiled in parallel or taken
// from the kernel cache, and the entry points) linked by ORC LLJIT in this process, with a
// symbol table that maps the runtime (cpu_runtime.h), `tessel_weights` (the program's weights
// blob, host memory) and libc / libm (aligned_alloc, free, expf, ...) of this process.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/cpu/compile.h"
#include "compiler/ir/tensor.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
namespace orc {
class LLJIT;
}
}  // namespace llvm

namespace tessel::cpu_backend {

/// A target machine for the host CPU and its features (position-independent code when `pic`),
/// code generation at `opt_level` (0..3). Throws tessel::Error with LLVM's message when the
/// host target is not available.
std::unique_ptr<llvm::TargetMachine> host_target_machine(bool pic, int opt_level = 3);

/// Runs LLVM's module pipeline at `opt_level` (buildPerModuleDefaultPipeline O1..O3 with loop +
/// SLP vectorization and unrolling; O0: buildO0DefaultPipeline) on `module` for `tm`. Throws
/// tessel::Error with LLVM's diagnostic when the module does not verify.
void optimize_module(llvm::Module& module, llvm::TargetMachine& tm, int opt_level = 3);

/// An ORC LLJIT for the host (code generation at `opt_level`) whose symbol table has `symbols`
/// (name -> address in this process) and this process's symbols (libc, libm). Throws
/// tessel::Error with LLVM's diagnostic.
std::unique_ptr<llvm::orc::LLJIT> host_jit_with_symbols(
    const std::map<std::string, const void*>& symbols, int opt_level = 3);
/// Optimises `module` (of `context`) for the host at `opt_level` and JIT-compiles it in a
/// host_jit_with_symbols(symbols). Throws tessel::Error with LLVM's diagnostic when
/// optimisation, code generation or symbol resolution fails.
std::unique_ptr<llvm::orc::LLJIT> host_jit(std::unique_ptr<llvm::Module> module,
                                           std::unique_ptr<llvm::LLVMContext> context,
                                           const std::map<std::string, const void*>& symbols,
                                           int opt_level = 3);
/// The address of `name` in `jit` (throws tessel::Error when it is missing).
void* jit_lookup(llvm::orc::LLJIT& jit, const std::string& name);

/// A CpuProgram compiled to machine code in this process.
class CpuJit {
 public:
  /// Compiles `program` (build_objects) and links it in process. Throws tessel::Error as
  /// build_objects does, or with LLVM's diagnostic when linking or symbol resolution fails.
  explicit CpuJit(CpuProgram program);
  ~CpuJit();
  CpuJit(const CpuJit&) = delete;
  CpuJit& operator=(const CpuJit&) = delete;

  const CpuProgram& program() const { return program_; }
  /// Wall time of build_objects and linking.
  double compile_seconds() const { return compile_seconds_; }
  /// Distinct kernels compiled by LLVM / loaded from the kernel cache.
  int kernels_compiled() const { return compiled_; }
  int kernels_cached() const { return cached_; }

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
  int compiled_ = 0, cached_ = 0;
};

}  // namespace tessel::cpu_backend
