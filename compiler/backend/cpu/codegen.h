// Loop IR -> LLVM IR for the CPU backend.
//
// A kernel becomes `void NAME(float* noalias p0, ..., float* noalias pN)` over its parameter
// buffers (host allocations, fp32, in the order given). Statements map as follows:
//   for (serial)      a counted loop (i64 induction variable)
//   for (unrolled)    the body once per iteration with the variable a constant
//   for (vectorized)  the body once with the variable the lane index 0..W-1: accesses with unit
//                     stride in it become vector loads/stores, stride 0 scalar loads, loads
//                     of stride 2..4 contiguous masked loads + a de-interleaving shuffle, other
//                     strides gathers/scatters; padded and select-guarded loads become masked;
//                     an if whose condition differs between lanes masks the stores (and their
//                     loads) inside it (llvm.masked.store / masked scatter)
//   for (parallel)    the body outlined into `NAME.parK(closure, begin, end)` (captured buffer
//                     pointers and loop variables in a closure struct) and run by
//                     tessel_cpu_parallel_for (compiler/backend/cpu/runtime/cpu_runtime.h)
//   allocate          an entry-block alloca up to 16 KiB (so register tiles are promoted to
//                     registers), else a per-thread runtime scratch buffer
//   store / if / seq  the obvious code; a + b * c becomes llvm.fmuladd
// Float arithmetic carries the `contract` and `reassoc` fast-math flags (FMA contraction and
// reassociation of reductions, as -ffp-contract=fast -fassociative-math: results differ from
// the reference by rounding only). Copy, intrin and sync statements (NPU only) are rejected.
// The target-independent part (expressions, loads/stores, serial/unrolled/vectorized loops) is
// LoopCodegen (loop_codegen.h), shared with the GPU backend.
#pragma once

#include <string>
#include <vector>

#include "compiler/loop/loop.h"

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace tessel::cpu_backend {

/// Function attributes of the generated code: the host CPU and its features, and the vector
/// width the passes used (so 512-bit vectors are not split when AVX-512 is used).
struct CodegenTarget {
  std::string cpu;       // e.g. "znver3" (llvm::sys::getHostCPUName)
  std::string features;  // "+avx2,+fma,..." (llvm::sys::getHostCPUFeatures)
  int vector_bits = 256;
  /// The host as LLVM sees it.
  static CodegenTarget host(int vector_lanes);
};

/// Emits kernel `name` into `module` (see the file comment). Throws tessel::Error naming the
/// kernel and the statement for loop IR the CPU cannot run (NPU statements, a vectorized loop
/// storing the same element from every lane).
llvm::Function* emit_kernel(llvm::Module& module, const std::string& name,
                            const std::vector<loop::Buffer>& params, const loop::Stmt& body,
                            const CodegenTarget& target);

/// Sets the target attributes (cpu, features, vector width, nounwind) on `fn`.
void set_function_attributes(llvm::Function& fn, const CodegenTarget& target);

}  // namespace tessel::cpu_backend
