// Ahead-of-time output of CPU programs: LLVM IR text, native assembly, object files and shared
// libraries with a plain C entry point.
//
// A shared library (`tessel compile MODEL --target cpu -o model.so`) contains the kernel and
// entry objects (objects.h: compiled in parallel, or taken from the kernel cache), the weights
// blob as one read-only section (`tessel_weights` in .rodata, mapped by the loader: the bytes
// never pass through LLVM IR) and the CPU runtime (thread pool; linked statically from
// libtessel_cpu_runtime.a, found at the path the build recorded or at $TESSEL_CPU_RUNTIME). It is
// linked by the system C++ driver ($CXX or c++) with -z defs, so it has no undefined symbols
// beyond libc, libm, libpthread and libstdc++, and exports only the four functions of the header.
// A C header next to it (model.so -> model.h) declares the entry points and the names and shapes
// of the inputs and outputs; docs/cpu_backend.md shows a caller. An object file (`--emit obj`)
// is the relocatable link (ld -r) of the same objects, without the runtime.
#pragma once

#include <string>

#include "compiler/backend/cpu/compile.h"

namespace tessel::cpu_backend {

/// The program as one LLVM module's text (kernels named tessel_k<i>, the entry points; the
/// weights are the external `tessel_weights`), each kernel after its optimisation pipeline
/// (program.build.opt_level) when `optimized`.
std::string llvm_ir_text(const CpuProgram& program, bool optimized);

/// The optimised program as native assembly (AT&T syntax) for the host.
std::string native_assembly(const CpuProgram& program);

/// Writes the program as one position-independent ELF object file to `path` (see the file
/// comment). Throws tessel::Error naming the path (a missing directory, a write error), the
/// linker's output or LLVM's message.
void write_object(const CpuProgram& program, const std::string& path);

/// Writes a shared library to `path` and its C header to `path` with the extension replaced by
/// ".h" (see the file comment). Nothing is left behind on failure. Throws tessel::Error naming
/// the path, the missing runtime archive or the linker's output.
void write_shared_library(const CpuProgram& program, const std::string& path,
                          const std::string& source_model = "");

/// The C header text for `program` (entry points, input/output names and shapes).
std::string c_header(const CpuProgram& program, const std::string& source_model);

}  // namespace tessel::cpu_backend
