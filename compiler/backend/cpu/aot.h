// Ahead-of-time output of CPU programs: LLVM IR text, native assembly, object files and shared
// libraries with a plain C entry point.
//
// A shared library (`tessel compile MODEL --target cpu -o model.so`) contains the optimised
// kernels, the constants (weights) as read-only data, the entry points of compile.h and the CPU
// runtime (thread pool; linked statically from libtessel_cpu_runtime.a, found at the path the
// build recorded or at $TESSEL_CPU_RUNTIME). It is linked by the system C++ driver ($CXX or c++)
// with -z defs, so it has no undefined symbols beyond libc, libm, libpthread and libstdc++. A C
// header next to it (model.so -> model.h) declares the entry points and the names and shapes of
// the inputs and outputs; docs/cpu_backend.md shows a caller.
#pragma once

#include <string>

#include "compiler/backend/cpu/compile.h"

namespace tessel::cpu_backend {

/// The module as LLVM IR text, after the O3 pipeline when `optimized`.
std::string llvm_ir_text(CpuProgram& program, bool optimized);

/// The optimised module as native assembly (AT&T syntax) for the host.
std::string native_assembly(CpuProgram& program);

/// Writes the optimised module as an ELF object file (position-independent) to `path`.
/// Compile with embed_constants = true. Throws tessel::Error naming the path (a missing
/// directory, a write error) or LLVM's message.
void write_object(CpuProgram& program, const std::string& path);

/// Writes a shared library to `path` and its C header to `path` with the extension replaced by
/// ".h" (see the file comment). Compile with embed_constants = true. Nothing is left behind on
/// failure. Throws tessel::Error naming the path, the missing runtime archive or the linker's
/// output.
void write_shared_library(CpuProgram& program, const std::string& path,
                          const std::string& source_model = "");

/// The C header text for `program` (entry points, input/output names and shapes).
std::string c_header(const CpuProgram& program, const std::string& source_model);

}  // namespace tessel::cpu_backend
