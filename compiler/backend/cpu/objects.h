// Machine code of a CpuProgram (compile.h): every kernel in its own LLVM module (and context),
// compiled on a thread pool, shared between kernels with the same code, and cached on disk by
// content hash (kernel_cache.h); then the entry points' module and, for an AOT library, the
// weights object.
//
//   1. per kernel, in parallel: loop IR -> LLVM IR (codegen.h) in a fresh context with value
//      names discarded, verified, and hashed (SHA-256 of the IR text with a placeholder function
//      name, the target triple, CPU, features, optimisation level and LLVM version: the key)
//   2. kernels with the same key are one function, `tessel_k_<first 32 hex digits of the key>`:
//      their code differs in nothing (weights are arguments, compile.h)
//   3. per distinct kernel, in parallel: the cached object when the cache has a valid one, else
//      LLVM's pipeline at CpuBuildOptions::opt_level and code generation to a position-independent
//      ELF object for the host, stored in the cache
//   4. the entry module (tessel_model_run / _profiled: arena, kernel calls with their arguments,
//      timers) at O2
// The objects are the same for the JIT (jit.h links them in process) and an AOT library (aot.h
// links them with the system linker), so one cache serves both.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/cpu/compile.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
}  // namespace llvm

namespace tessel::cpu_backend {

/// The objects of a program (see the file comment).
struct CpuObjects {
  struct Object {
    std::string symbol;  // the kernel function it defines
    std::string bytes;   // ELF relocatable object
  };
  std::vector<std::string> symbols;  // per CpuProgram::code entry: the function it calls
  std::vector<Object> kernels;       // distinct kernels, in order of first use
  std::string entry;                 // object of tessel_model_run and tessel_model_run_profiled
  int compiled = 0;                  // distinct kernels compiled by LLVM in this call
  int cached = 0;                    // distinct kernels loaded from the cache
  double seconds = 0;                // wall time of build_objects
};

/// Compiles `program`'s kernels and entry points (see the file comment) with program.build's
/// threads, cache directory and optimisation level. Throws tessel::Error naming the node and
/// the kernel when LLVM rejects a generated function (with LLVM's diagnostic) or the code
/// generator cannot express its loop IR, and naming the path when the cache cannot be written.
CpuObjects build_objects(const CpuProgram& program);

/// The symbol of kernel `index`'s state when it is a host kernel (CpuKernelCode::ext): the entry
/// point calls `tessel_cpu_extern(&symbol, args)`; the JIT maps the symbol to the ExternKernel.
std::string extern_state_symbol(size_t index);

/// Whether `program` has host kernels (then it runs only in the JIT: an AOT object or library
/// cannot carry them).
bool has_extern_kernels(const CpuProgram& program);

/// Kernel `index` of `program` as an unoptimised module in `context`, its function named
/// `symbol`. Throws as build_objects.
std::unique_ptr<llvm::Module> kernel_module(const CpuProgram& program, size_t index,
                                            const std::string& symbol, llvm::LLVMContext& context);

/// The entry module of `program` (tessel_model_run and tessel_model_run_profiled, compile.h),
/// calling kernel `i` of program.code as external function `symbols[i]` and reading constants
/// at offsets from the external symbol `tessel_weights`.
std::unique_ptr<llvm::Module> entry_module(const CpuProgram& program,
                                           const std::vector<std::string>& symbols,
                                           llvm::LLVMContext& context);

/// Optimises `module` at `opt_level` (0..3) and generates a position-independent object for the
/// host. Throws tessel::Error with LLVM's message.
std::string compile_module(llvm::Module& module, int opt_level);

/// Writes an object defining `tessel_weights` (program.weights, 64-byte aligned, read-only
/// .rodata) to `path`, assembling it from `blob_path` (a file holding the blob's bytes) with
/// `.incbin`, so the bytes pass through LLVM as data, never as IR constants. Throws tessel::Error
/// naming the path.
void write_weights_object(const CpuProgram& program, const std::string& blob_path,
                          const std::string& path);

}  // namespace tessel::cpu_backend
