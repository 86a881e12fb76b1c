// ORC LLJIT for CPU programs (see jit.h).
#include "compiler/backend/cpu/jit.h"

#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "compiler/backend/cpu/codegen.h"
#include "compiler/backend/cpu/objects.h"
#include "compiler/backend/cpu/runtime/cpu_runtime.h"
#include "compiler/support/error.h"

namespace tessel::cpu_backend {

namespace {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::string host_features() {
  llvm::StringMap<bool> f;
  std::vector<std::string> v;
  if (llvm::sys::getHostCPUFeatures(f))
    for (const auto& kv : f) v.push_back((kv.second ? "+" : "-") + kv.first().str());
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

llvm::CodeGenOpt::Level codegen_level(int opt_level) {
  switch (opt_level) {
    case 0:
      return llvm::CodeGenOpt::None;
    case 1:
      return llvm::CodeGenOpt::Less;
    case 2:
      return llvm::CodeGenOpt::Default;
    default:
      return llvm::CodeGenOpt::Aggressive;
  }
}

llvm::orc::JITTargetMachineBuilder host_builder(bool pic, int opt_level) {
  init_llvm();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) fail("cpu backend: cannot target the host: {}", llvm::toString(jtmb.takeError()));
  jtmb->setCPU(llvm::sys::getHostCPUName().str());
  jtmb->getFeatures() = llvm::SubtargetFeatures(host_features());
  jtmb->setCodeGenOptLevel(codegen_level(opt_level));
  if (pic) jtmb->setRelocationModel(llvm::Reloc::PIC_);
  return std::move(*jtmb);
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> host_target_machine(bool pic, int opt_level) {
  auto tm = host_builder(pic, opt_level).createTargetMachine();
  if (!tm) fail("cpu backend: cannot create a target machine: {}", llvm::toString(tm.takeError()));
  return std::move(*tm);
}

void optimize_module(llvm::Module& module, llvm::TargetMachine& tm, int opt_level) {
  module.setDataLayout(tm.createDataLayout());
  module.setTargetTriple(tm.getTargetTriple().str());
  std::string diag;
  llvm::raw_string_ostream os(diag);
  if (llvm::verifyModule(module, &os)) {
    os.flush();
    fail("cpu backend: LLVM rejected module {}: {}", module.getName().str(), diag);
  }
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  pto.LoopUnrolling = true;
  llvm::PassBuilder pb(&tm, pto);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  static const llvm::OptimizationLevel levels[] = {
      llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1, llvm::OptimizationLevel::O2,
      llvm::OptimizationLevel::O3};
  const auto level = levels[std::clamp(opt_level, 0, 3)];
  llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0
                                    ? pb.buildO0DefaultPipeline(level)
                                    : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(module, mam);
}

namespace {
/// roundevenf / roundeven for JIT-compiled code (see host_jit_with_symbols).
extern "C" float roundevenf_nearest(float x) { return std::nearbyintf(x); }
extern "C" double roundeven_nearest(double x) { return std::nearbyint(x); }
}  // namespace

std::unique_ptr<llvm::orc::LLJIT> host_jit_with_symbols(
    const std::map<std::string, const void*>& symbols, int opt_level) {
  auto jit =
      llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(host_builder(false, opt_level)).create();
  if (!jit) fail("cpu backend: cannot create the JIT: {}", llvm::toString(jit.takeError()));
  auto& jd = (*jit)->getMainJITDylib();
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!gen) fail("cpu backend: {}", llvm::toString(gen.takeError()));
  jd.addGenerator(std::move(*gen));
  llvm::orc::SymbolMap syms;
  auto& es = (*jit)->getExecutionSession();
  // llvm.roundeven lowers to a libm call on x86 without SSE4.1 rounding in the selected code
  // (and always for scalars at -O0); glibc exports roundevenf/roundeven only to C2X callers, so
  // the process search may not find them: defined here as nearbyint, which rounds to nearest
  // even in the default rounding mode (the only one tessel runs in).
  syms[es.intern("roundevenf")] = llvm::JITEvaluatedSymbol(
      llvm::pointerToJITTargetAddress(&roundevenf_nearest), llvm::JITSymbolFlags::Exported);
  syms[es.intern("roundeven")] = llvm::JITEvaluatedSymbol(
      llvm::pointerToJITTargetAddress(&roundeven_nearest), llvm::JITSymbolFlags::Exported);
  for (const auto& [name, addr] : symbols)
    syms[es.intern(name)] = llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(addr),
                                                     llvm::JITSymbolFlags::Exported);
  if (auto err = jd.define(llvm::orc::absoluteSymbols(std::move(syms))))
    fail("cpu backend: {}", llvm::toString(std::move(err)));
  return std::move(*jit);
}

std::unique_ptr<llvm::orc::LLJIT> host_jit(std::unique_ptr<llvm::Module> module,
                                           std::unique_ptr<llvm::LLVMContext> context,
                                           const std::map<std::string, const void*>& symbols,
                                           int opt_level) {
  auto tm = host_target_machine(false, opt_level);
  optimize_module(*module, *tm, opt_level);
  if (std::getenv("TESSEL_CPU_DEBUG_SIZES"))
    for (auto& f : *module)
      fmt::print(stderr, "opt {} {}\n", f.getInstructionCount(), f.getName().str());
  auto jit = host_jit_with_symbols(symbols, opt_level);
  if (auto err =
          jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(context))))
    fail("cpu backend: JIT rejected the module: {}", llvm::toString(std::move(err)));
  return jit;
}

void* jit_lookup(llvm::orc::LLJIT& jit, const std::string& name) {
  auto sym = jit.lookup(name);
  if (!sym) fail("JIT linking failed: {}", llvm::toString(sym.takeError()));
  return reinterpret_cast<void*>(sym->getAddress());
}

namespace {

/// The first error a host kernel threw in this thread's current entry call ("" when none).
thread_local std::string extern_error;

/// The entry point's call of a host kernel (objects.h: extern_state_symbol). An exception must
/// not unwind through the generated code: it is kept and reported when the entry returns.
extern "C" void tessel_cpu_extern(const void* state, void* const* args) {
  if (!extern_error.empty()) return;  // an earlier kernel failed: its inputs are not valid
  try {
    static_cast<const ExternKernel*>(state)->run(args);
  } catch (const std::exception& e) {
    extern_error = e.what();
    if (extern_error.empty()) extern_error = "unknown error";
  }
}

/// Throws the error a host kernel kept in the call that just returned (and clears it).
void rethrow_extern_error(const std::string& program) {
  if (extern_error.empty()) return;
  std::string e;
  e.swap(extern_error);
  fail("cpu run of {}: {}", program, e);
}

}  // namespace

CpuJit::CpuJit(CpuProgram program) : program_(std::move(program)) {
  const auto t0 = std::chrono::steady_clock::now();
  CpuObjects objects = build_objects(program_);
  compiled_ = objects.compiled;
  cached_ = objects.cached;
  std::map<std::string, const void*> symbols = {
      {"tessel_cpu_parallel_for", reinterpret_cast<const void*>(&tessel_cpu_parallel_for)},
      {"tessel_cpu_scratch", reinterpret_cast<const void*>(&tessel_cpu_scratch)},
      {"tessel_cpu_now_seconds", reinterpret_cast<const void*>(&tessel_cpu_now_seconds)},
      {"tessel_cpu_extern", reinterpret_cast<const void*>(&tessel_cpu_extern)},
      {"tessel_weights", program_.weights.data.get()}};
  for (size_t k = 0; k < program_.code.size(); ++k)
    if (program_.code[k].ext) symbols[extern_state_symbol(k)] = program_.code[k].ext.get();
  jit_ = host_jit_with_symbols(symbols, 2);
  auto add_object = [&](const std::string& bytes, const std::string& name) {
    if (auto err = jit_->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(bytes, name)))
      fail("cpu backend: JIT rejected object {}: {}", name, llvm::toString(std::move(err)));
  };
  for (const auto& k : objects.kernels) add_object(k.bytes, k.symbol);
  add_object(objects.entry, "tessel_entry");
  try {
    run_ = reinterpret_cast<int (*)(const float**, float**)>(jit_lookup(*jit_, "tessel_model_run"));
    run_profiled_ = reinterpret_cast<int (*)(const float**, float**, double*)>(
        jit_lookup(*jit_, "tessel_model_run_profiled"));
  } catch (const Error& e) {
    fail("cpu backend: {}", e.what());
  }
  compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

CpuJit::~CpuJit() = default;

int CpuJit::run(const float** inputs, float** outputs) const {
  const int status = run_(inputs, outputs);
  rethrow_extern_error(program_.name);
  return status;
}

int CpuJit::run_profiled(const float** inputs, float** outputs, double* kernel_seconds) const {
  const int status = run_profiled_(inputs, outputs, kernel_seconds);
  rethrow_extern_error(program_.name);
  return status;
}

CpuJit::Result CpuJit::run(const std::map<std::string, Tensor>& inputs, bool profile) const {
  Result r;
  std::vector<Tensor> in_f32;
  std::vector<const float*> in_ptrs;
  for (const auto& b : program_.inputs) {
    auto it = inputs.find(b.value);
    if (it == inputs.end()) fail("no data for graph input '{}'", b.value);
    if (it->second.shape() != b.shape)
      fail("input '{}' has shape {}, the model was bound to {}", b.value,
           shape_to_string(it->second.shape()), shape_to_string(b.shape));
    // The binding's dtype: fp32, or the integer graph input's own (int8 kernels).
    in_f32.push_back(it->second.dtype() == b.dtype ? it->second : it->second.cast(b.dtype));
  }
  for (const auto& t : in_f32) in_ptrs.push_back(reinterpret_cast<const float*>(t.raw()));
  std::vector<Tensor> outs;
  std::vector<float*> out_ptrs;
  for (const auto& b : program_.outputs) outs.emplace_back(b.dtype, b.shape);
  for (auto& t : outs) out_ptrs.push_back(reinterpret_cast<float*>(t.raw()));
  r.kernel_seconds.assign(program_.timed_kernels().size(), 0.0);
  const auto t0 = std::chrono::steady_clock::now();
  const int status = profile
                         ? run_profiled_(in_ptrs.data(), out_ptrs.data(), r.kernel_seconds.data())
                         : run_(in_ptrs.data(), out_ptrs.data());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rethrow_extern_error(program_.name);
  if (status != 0)
    fail("cpu run of {}: out of memory for the {}-byte activation arena", program_.name,
         program_.arena_bytes);
  for (size_t i = 0; i < outs.size(); ++i)
    r.outputs[program_.outputs[i].value] = std::move(outs[i]);
  return r;
}

}  // namespace tessel::cpu_backend
