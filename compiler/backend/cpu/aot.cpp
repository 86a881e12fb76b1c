// Ahead-of-time output of CPU programs (see aot.h).
#include "compiler/backend/cpu/aot.h"

#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/backend/cpu/jit.h"
#include "compiler/backend/cpu/objects.h"
#include "compiler/support/error.h"

#ifndef TESSEL_CPU_RUNTIME_ARCHIVE
#define TESSEL_CPU_RUNTIME_ARCHIVE ""
#endif

namespace tessel::cpu_backend {

namespace fs = std::filesystem;

namespace {

void check_directory(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir))
    fail("cannot write '{}': directory '{}' does not exist", path, dir.string());
  if (fs::is_directory(p)) fail("cannot write '{}': it is a directory", path);
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail("cannot write '{}'", path);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) fail("cannot write '{}'", path);
}

std::string runtime_archive() {
  if (const char* env = std::getenv("TESSEL_CPU_RUNTIME")) return env;
  return TESSEL_CPU_RUNTIME_ARCHIVE;
}

/// A temporary directory, removed with its contents when it goes out of scope.
struct TempDir {
  fs::path dir;
  explicit TempDir(const std::string& purpose) {
    std::string tmpl = (fs::temp_directory_path() / "tessel_aot_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) fail("cannot create a temporary directory for {}", purpose);
    dir = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

/// Writes the program's objects into `dir` (kernels, entry, weights) and returns their paths.
std::vector<std::string> write_objects(const CpuProgram& program, const fs::path& dir) {
  const CpuObjects objects = build_objects(program);
  std::vector<std::string> paths;
  const std::string entry = (dir / "entry.o").string();
  write_bytes(entry, objects.entry);
  paths.push_back(entry);
  for (const auto& k : objects.kernels) {
    const std::string p = (dir / (k.symbol + ".o")).string();
    write_bytes(p, k.bytes);
    paths.push_back(p);
  }
  const std::string blob = (dir / "weights.bin").string();
  {
    std::ofstream f(blob, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(program.weights.data.get()),
            static_cast<std::streamsize>(program.weights.size));
    if (!f) fail("cannot write '{}'", blob);
  }
  const std::string wobj = (dir / "weights.o").string();
  write_weights_object(program, blob, wobj);
  fs::remove(blob);
  paths.push_back(wobj);
  return paths;
}

/// Runs `cmd` (its stderr to `log`); on failure removes `partial` and throws naming `what`.
void run_tool(const std::string& cmd, const fs::path& log, const std::string& partial,
              const std::string& what) {
  const int status = std::system(cmd.c_str());
  if (status != 0) {
    std::ifstream f(log);
    std::stringstream ss;
    ss << f.rdbuf();
    std::error_code ec;
    fs::remove(partial, ec);
    fail("{} failed ({}): {}", what, cmd, ss.str());
  }
}

std::string quoted_list(const std::vector<std::string>& paths) {
  std::string r;
  for (const auto& p : paths) r += " '" + p + "'";
  return r;
}

/// Refuses a program with int8 host kernels (they live in this process, not in LLVM IR).
void require_no_extern(const CpuProgram& program, const char* what) {
  if (!has_extern_kernels(program)) return;
  throw Unsupported(fmt::format(
      "{} of {}: the model has int8 kernels (QuantizeLinear, DequantizeLinear, QLinearConv, "
      "...), which the CPU backend runs only in process (tessel run/check --target cpu), not in "
      "ahead-of-time output",
      what, program.name));
}

/// The whole program as one module in `ctx` (kernels optimised as build_objects would).
std::unique_ptr<llvm::Module> whole_module(const CpuProgram& program, llvm::LLVMContext& ctx,
                                           bool optimized) {
  require_no_extern(program, "LLVM IR / assembly");
  std::vector<std::string> symbols;
  for (size_t i = 0; i < program.code.size(); ++i) symbols.push_back(fmt::format("tessel_k{}", i));
  auto whole = entry_module(program, symbols, ctx);
  auto tm = host_target_machine(true, program.build.resolved_opt_level());
  if (optimized) optimize_module(*whole, *tm, 2);
  for (size_t i = 0; i < program.code.size(); ++i) {
    auto m = kernel_module(program, i, symbols[i], ctx);
    if (optimized) optimize_module(*m, *tm, program.build.resolved_opt_level());
    m->setDataLayout(whole->getDataLayout());
    m->setTargetTriple(whole->getTargetTriple());
    if (llvm::Linker::linkModules(*whole, std::move(m)))
      fail("cpu backend: cannot link the module of kernel {}", symbols[i]);
  }
  if (!optimized) {
    whole->setDataLayout(tm->createDataLayout());
    whole->setTargetTriple(tm->getTargetTriple().str());
  }
  return whole;
}

}  // namespace

std::string llvm_ir_text(const CpuProgram& program, bool optimized) {
  llvm::LLVMContext ctx;
  auto m = whole_module(program, ctx, optimized);
  std::string s;
  llvm::raw_string_ostream os(s);
  m->print(os, nullptr);
  os.flush();
  return s;
}

std::string native_assembly(const CpuProgram& program) {
  llvm::LLVMContext ctx;
  auto m = whole_module(program, ctx, true);
  auto tm = host_target_machine(true, program.build.resolved_opt_level());
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_AssemblyFile))
    fail("cpu backend: LLVM cannot emit assembly for this target");
  pm.run(*m);
  return std::string(buf.begin(), buf.end());
}

void write_object(const CpuProgram& program, const std::string& path) {
  require_no_extern(program, "an object file");
  check_directory(path);
  TempDir tmp("writing '" + path + "'");
  const auto objects = write_objects(program, tmp.dir);
  const std::string out_tmp = path + ".tmp";
  const char* cxx = std::getenv("CXX");
  const fs::path log = tmp.dir / "link.log";
  // A relocatable link (ld -r) of the kernels, the entry points and the weights into one object.
  const std::string cmd = fmt::format("'{}' -r -nostdlib -o '{}'{} 2> '{}'", cxx ? cxx : "c++",
                                      out_tmp, quoted_list(objects), log.string());
  run_tool(cmd, log, out_tmp, fmt::format("writing '{}'", path));
  std::error_code ec;
  fs::rename(out_tmp, path, ec);
  if (ec) {
    fs::remove(out_tmp, ec);
    fail("cannot write '{}': {}", path, ec.message());
  }
}

/// The C element type of a binding's buffer (bool: one byte 0 / 1).
static const char* c_type(DType t) {
  switch (t) {
    case DType::f32:
      return "float";
    case DType::i8:
      return "int8_t";
    case DType::u8:
    case DType::boolean:
      return "uint8_t";
    case DType::i16:
      return "int16_t";
    case DType::u16:
      return "uint16_t";
    case DType::i32:
      return "int32_t";
    case DType::u32:
      return "uint32_t";
    case DType::i64:
      return "int64_t";
    case DType::u64:
      return "uint64_t";
    default:
      internal_fail("no C type for a {} binding", dtype_to_string(t));
  }
}

std::string c_header(const CpuProgram& program, const std::string& source_model) {
  std::string h = fmt::format(
      "/* Generated by `tessel compile --target cpu`{}. Do not edit.\n"
      " *\n"
      " * Buffers are dense row-major in the shapes below, in graph order:\n"
      " *   const float* inputs[TESSEL_MODEL_NUM_INPUTS];  float* "
      "outputs[TESSEL_MODEL_NUM_OUTPUTS];\n"
      " * each of the element type its _DTYPE names (fp32 for float values; an integer or bool\n"
      " * tensor in its own type, bool one byte 0 / 1, its pointer cast to float*).\n"
      " * tessel_model_run returns 0, or 1 when its activation arena ({} bytes) cannot be\n"
      " * allocated. It is reentrant; parallel loops run on the library's own thread pool\n"
      " * (TESSEL_CPU_THREADS or the online cores; tessel_cpu_set_threads changes it).\n"
      " */\n#pragma once\n\n#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n",
      source_model.empty() ? "" : " from " + source_model, program.arena_bytes);
  auto list = [&](const char* kind, const std::vector<HostBinding>& b) {
    h += fmt::format("#define TESSEL_MODEL_NUM_{}S {}\n", kind, b.size());
    for (size_t i = 0; i < b.size(); ++i) {
      std::string dims;
      for (size_t d = 0; d < b[i].shape.size(); ++d)
        dims += (d ? ", " : "") + std::to_string(b[i].shape[d]);
      h += fmt::format("/* {} {}: \"{}\" {}[{}] */\n", kind, i, b[i].value, c_type(b[i].dtype),
                       dims);
      h += fmt::format("#define TESSEL_MODEL_{}_{}_NAME \"{}\"\n", kind, i, b[i].value);
      h += fmt::format("#define TESSEL_MODEL_{}_{}_NUMEL {}\n", kind, i, shape_numel(b[i].shape));
      h += fmt::format("#define TESSEL_MODEL_{}_{}_RANK {}\n", kind, i, b[i].shape.size());
      h += fmt::format("#define TESSEL_MODEL_{}_{}_DTYPE \"{}\"\n", kind, i,
                       dtype_to_string(b[i].dtype));
      h += fmt::format("#define TESSEL_MODEL_{}_{}_SHAPE {{{}}}\n", kind, i, dims);
    }
    h += "\n";
  };
  list("INPUT", program.inputs);
  list("OUTPUT", program.outputs);
  h += fmt::format(
      "/* Kernels with code, in the order tessel_model_run_profiled times them. */\n"
      "#define TESSEL_MODEL_NUM_KERNELS {}\n",
      program.timed_kernels().size());
  for (size_t i = 0; i < program.timed_kernels().size(); ++i)
    h += fmt::format("/*   {:3} {} ({}) */\n", i, program.timed_kernels()[i]->node,
                     program.timed_kernels()[i]->op_type);
  h += "\nint tessel_model_run(const float** inputs, float** outputs);\n"
       "int tessel_model_run_profiled(const float** inputs, float** outputs,\n"
       "                              double* kernel_seconds /* [TESSEL_MODEL_NUM_KERNELS] */);\n"
       "int tessel_cpu_set_threads(int threads); /* returns the previous count */\n"
       "int tessel_cpu_get_threads(void);\n\n#ifdef __cplusplus\n}\n#endif\n";
  return h;
}

void write_shared_library(const CpuProgram& program, const std::string& path,
                          const std::string& source_model) {
  require_no_extern(program, "a shared library");
  check_directory(path);
  const fs::path out(path);
  const fs::path header = fs::path(path).replace_extension(".h");
  const std::string archive = runtime_archive();
  if (archive.empty() || !fs::exists(archive))
    fail(
        "cannot link '{}': the CPU runtime archive '{}' does not exist (build the "
        "tessel_cpu_runtime target or set TESSEL_CPU_RUNTIME to libtessel_cpu_runtime.a)",
        path, archive);
  TempDir tmp("linking '" + path + "'");
  const auto objects = write_objects(program, tmp.dir);
  // Only the API is exported: kernels, weights and the runtime's internals stay local (so calls
  // between them bind inside the library, and two models in one process cannot clash).
  const fs::path exports = tmp.dir / "exports.map";
  write_bytes(exports.string(),
              "{ global: tessel_model_run; tessel_model_run_profiled; tessel_cpu_set_threads; "
              "tessel_cpu_get_threads; local: *; };\n");
  const std::string lib_tmp = path + ".tmp";
  const char* cxx = std::getenv("CXX");
  const fs::path log = tmp.dir / "link.log";
  const std::string cmd = fmt::format(
      "'{}' -shared -Wl,-z,defs -Wl,--version-script='{}' -o '{}'{} '{}' -lpthread -lm 2> '{}'",
      cxx ? cxx : "c++", exports.string(), lib_tmp, quoted_list(objects), archive, log.string());
  run_tool(cmd, log, lib_tmp, fmt::format("linking '{}'", path));
  const std::string header_tmp = header.string() + ".tmp";
  try {
    write_bytes(header_tmp, c_header(program, source_model));
  } catch (...) {
    std::error_code ec;
    fs::remove(lib_tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::rename(lib_tmp, out, ec);
  if (!ec) fs::rename(header_tmp, header, ec);
  if (ec) {
    fs::remove(lib_tmp, ec);
    fs::remove(header_tmp, ec);
    fail("cannot write '{}': {}", path, ec.message());
  }
}

}  // namespace tessel::cpu_backend
