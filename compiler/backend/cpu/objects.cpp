// Machine code of a CpuProgram: parallel, shared and cached kernel objects (see objects.h).
#include "compiler/backend/cpu/objects.h"

#include <fmt/format.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/ThreadPool.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>

#include "compiler/backend/cpu/codegen.h"
#include "compiler/backend/cpu/jit.h"
#include "compiler/backend/cpu/kernel_cache.h"
#include "compiler/support/error.h"

namespace tessel::cpu_backend {

namespace {

/// Bumped whenever the code generator, the runtime ABI or the object layout changes in a way
/// the IR text does not show.
constexpr const char* kCacheFormat = "tessel-cpu-kernel-1";
constexpr const char* kPlaceholder = "tessel_kernel";

/// A raw_ostream that feeds SHA-256 (the IR text is hashed without being stored).
class Sha256Stream : public llvm::raw_ostream {
 public:
  Sha256Stream() = default;
  ~Sha256Stream() override { flush(); }
  std::string hex() {
    flush();
    const llvm::StringRef raw = sha_.final();
    std::string h;
    for (unsigned char c : raw) h += fmt::format("{:02x}", c);
    return h;
  }

 private:
  llvm::SHA256 sha_;
  uint64_t pos_ = 0;
  void write_impl(const char* p, size_t n) override {
    sha_.update(llvm::StringRef(p, n));
    pos_ += n;
  }
  uint64_t current_pos() const override { return pos_; }
};

/// Runs f(i) for i in [0, n) on `threads` threads; rethrows the first exception (by index).
template <class F>
void parallel_for(size_t n, int threads, F f) {
  std::vector<std::exception_ptr> errors(n);
  auto run = [&](size_t i) {
    try {
      f(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  if (threads <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) run(i);
  } else {
    llvm::ThreadPool pool(llvm::hardware_concurrency(static_cast<unsigned>(threads)));
    for (size_t i = 0; i < n; ++i) pool.async([&, i] { run(i); });
    pool.wait();
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// What the machine code of every kernel depends on besides its IR.
std::string target_key(const llvm::TargetMachine& tm, int opt_level) {
  return fmt::format("{}\n{}\n{}\n{}\n{}\nO{}\n", kCacheFormat, LLVM_VERSION_STRING,
                     tm.getTargetTriple().str(), tm.getTargetCPU().str(),
                     tm.getTargetFeatureString().str(), opt_level);
}

/// True when `bytes` parse as an object file that defines `symbol`.
bool valid_object(const std::string& bytes, const std::string& symbol) {
  auto obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(bytes.data(), bytes.size()), symbol));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return false;
  }
  for (const auto& sym : (*obj)->symbols()) {
    auto name = sym.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    auto flags = sym.getFlags();
    if (!flags) {
      llvm::consumeError(flags.takeError());
      continue;
    }
    if (*name == symbol && !(*flags & llvm::object::SymbolRef::SF_Undefined)) return true;
  }
  return false;
}

std::string kernel_label(const CpuProgram& program, size_t index) {
  const CpuKernelInfo& info = program.kernels.at(program.code.at(index).info_index);
  return fmt::format("node '{}' ({})", info.node, info.op_type);
}

}  // namespace

std::string extern_state_symbol(size_t index) { return fmt::format("tessel_extern_{}", index); }

bool has_extern_kernels(const CpuProgram& program) {
  for (const auto& c : program.code)
    if (c.ext) return true;
  return false;
}

std::unique_ptr<llvm::Module> kernel_module(const CpuProgram& program, size_t index,
                                            const std::string& symbol, llvm::LLVMContext& context) {
  const CpuKernelCode& code = program.code.at(index);
  if (code.ext)
    throw Unsupported(fmt::format("{}: an int8 host kernel has no LLVM module (JIT only)",
                                  kernel_label(program, index)));
  const CpuKernelInfo& info = program.kernels.at(code.info_index);
  auto m = std::make_unique<llvm::Module>(symbol, context);
  const CodegenTarget target = CodegenTarget::host(program.target.vector_lanes);
  llvm::Function* f;
  try {
    f = emit_kernel(*m, symbol, code.params, code.body, target);
  } catch (const Error& e) {
    fail("{}: {}", kernel_label(program, index), e.what());
  }
  std::string diag;
  llvm::raw_string_ostream os(diag);
  if (llvm::verifyFunction(*f, &os)) {
    os.flush();
    fail("{}: LLVM rejected the generated function {}: {}", kernel_label(program, index),
         info.function, diag);
  }
  return m;
}

std::unique_ptr<llvm::Module> entry_module(const CpuProgram& program,
                                           const std::vector<std::string>& symbols,
                                           llvm::LLVMContext& ctx) {
  TESSEL_CHECK(symbols.size() == program.code.size(), "entry_module: {} symbols for {} kernels",
               symbols.size(), program.code.size());
  auto m = std::make_unique<llvm::Module>("tessel_entry", ctx);
  const CodegenTarget target = CodegenTarget::host(program.target.vector_lanes);
  auto* i8 = llvm::Type::getInt8Ty(ctx);
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  auto* f32p = llvm::PointerType::getUnqual(llvm::Type::getFloatTy(ctx));
  auto* f32pp = llvm::PointerType::getUnqual(f32p);
  auto* i8p = llvm::Type::getInt8PtrTy(ctx);
  auto* dbl = llvm::Type::getDoubleTy(ctx);
  auto* weights = new llvm::GlobalVariable(*m, i8, true, llvm::GlobalValue::ExternalLinkage,
                                           nullptr, "tessel_weights");
  weights->setAlignment(llvm::Align(64));
  for (bool profiled : {false, true}) {
    std::vector<llvm::Type*> args = {f32pp, f32pp};
    if (profiled) args.push_back(llvm::PointerType::getUnqual(dbl));
    auto* fty = llvm::FunctionType::get(i32, args, false);
    auto* f =
        llvm::Function::Create(fty, llvm::Function::ExternalLinkage,
                               profiled ? "tessel_model_run_profiled" : "tessel_model_run", *m);
    set_function_attributes(*f, target);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
    llvm::Value* inputs = f->getArg(0);
    llvm::Value* outputs = f->getArg(1);
    llvm::Value* arena = llvm::ConstantPointerNull::get(i8p);
    llvm::FunctionCallee free_fn;
    if (program.arena_bytes > 0) {
      auto alloc =
          m->getOrInsertFunction("aligned_alloc", llvm::FunctionType::get(i8p, {i64, i64}, false));
      free_fn = m->getOrInsertFunction(
          "free", llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {i8p}, false));
      arena = b.CreateCall(
          alloc, {b.getInt64(64),
                  b.getInt64(static_cast<uint64_t>((program.arena_bytes + 63) / 64 * 64))});
      auto* bad = llvm::BasicBlock::Create(ctx, "no_memory", f);
      auto* ok = llvm::BasicBlock::Create(ctx, "run", f);
      b.CreateCondBr(b.CreateIsNull(arena), bad, ok);
      b.SetInsertPoint(bad);
      b.CreateRet(b.getInt32(1));
      b.SetInsertPoint(ok);
    }
    llvm::FunctionCallee now;
    if (profiled)
      now =
          m->getOrInsertFunction("tessel_cpu_now_seconds", llvm::FunctionType::get(dbl, {}, false));
    for (size_t k = 0; k < program.code.size(); ++k) {
      const CpuKernelCode& c = program.code[k];
      std::vector<llvm::Type*> ptys(c.params.size(), f32p);
      llvm::FunctionCallee kf;
      if (!c.ext)
        kf = m->getOrInsertFunction(
            symbols[k], llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), ptys, false));
      auto pointer = [&](const CpuArg& a) -> llvm::Value* {
        switch (a.kind) {
          case CpuArg::Kind::input:
          case CpuArg::Kind::output: {
            TESSEL_CHECK(a.index >= 0, "kernel {}: argument without a graph position", k);
            llvm::Value* table = a.kind == CpuArg::Kind::input ? inputs : outputs;
            return b.CreateLoad(f32p,
                                b.CreateConstGEP1_64(f32p, table, static_cast<uint64_t>(a.index)));
          }
          case CpuArg::Kind::arena:
            return b.CreateBitCast(
                b.CreateConstGEP1_64(i8, arena, static_cast<uint64_t>(a.offset_bytes)), f32p);
          case CpuArg::Kind::weights:
            return b.CreateBitCast(
                b.CreateConstGEP1_64(i8, weights, static_cast<uint64_t>(a.offset_bytes)), f32p);
        }
        internal_fail("kernel {}: unknown argument kind", k);
      };
      // A guarded kernel (an If branch's): called only when its guard byte is nonzero.
      llvm::BasicBlock* after = nullptr;
      if (c.guard) {
        llvm::Value* byte = b.CreateLoad(i8, b.CreateBitCast(pointer(*c.guard), i8p));
        auto* run_k = llvm::BasicBlock::Create(ctx, fmt::format("k{}_taken", k), f);
        auto* skip_k = llvm::BasicBlock::Create(ctx, fmt::format("k{}_skipped", k), f);
        after = llvm::BasicBlock::Create(ctx, fmt::format("k{}_done", k), f);
        b.CreateCondBr(b.CreateICmpNE(byte, b.getInt8(0)), run_k, skip_k);
        b.SetInsertPoint(skip_k);
        if (profiled)
          b.CreateStore(llvm::ConstantFP::get(dbl, 0.0),
                        b.CreateConstGEP1_64(dbl, f->getArg(2), static_cast<uint64_t>(k)));
        b.CreateBr(after);
        b.SetInsertPoint(run_k);
      }
      std::vector<llvm::Value*> ptrs;
      for (const CpuArg& a : c.args) ptrs.push_back(pointer(a));
      llvm::Value* t0 = profiled ? b.CreateCall(now) : nullptr;
      if (c.ext) {
        // tessel_cpu_extern(state, args): the host kernel at the state symbol (the JIT maps it
        // to the ExternKernel), its arguments in an array of pointers.
        auto* state = m->getOrInsertGlobal(symbols[k], i8);
        auto* arr_ty = llvm::ArrayType::get(i8p, std::max<size_t>(1, ptrs.size()));
        llvm::Value* arr = b.CreateAlloca(arr_ty);
        for (size_t a = 0; a < ptrs.size(); ++a)
          b.CreateStore(b.CreateBitCast(ptrs[a], i8p),
                        b.CreateConstGEP2_64(arr_ty, arr, 0, static_cast<uint64_t>(a)));
        llvm::FunctionCallee ext = m->getOrInsertFunction(
            "tessel_cpu_extern",
            llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                    {i8p, llvm::PointerType::getUnqual(i8p)}, false));
        b.CreateCall(ext, {b.CreateBitCast(state, i8p),
                           b.CreateBitCast(arr, llvm::PointerType::getUnqual(i8p))});
      } else {
        b.CreateCall(kf, ptrs);
      }
      if (profiled) {
        llvm::Value* dt = b.CreateFSub(b.CreateCall(now), t0);
        b.CreateStore(dt, b.CreateConstGEP1_64(dbl, f->getArg(2), static_cast<uint64_t>(k)));
      }
      if (after) {
        b.CreateBr(after);
        b.SetInsertPoint(after);
      }
    }
    if (program.arena_bytes > 0) b.CreateCall(free_fn, {arena});
    b.CreateRet(b.getInt32(0));
  }
  std::string diag;
  llvm::raw_string_ostream os(diag);
  if (llvm::verifyModule(*m, &os)) {
    os.flush();
    fail("LLVM rejected the entry function: {}", diag);
  }
  return m;
}

std::string compile_module(llvm::Module& module, int opt_level) {
  auto tm = host_target_machine(true, opt_level);
  optimize_module(module, *tm, opt_level);
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile))
    fail("cpu backend: LLVM cannot emit an object file for this target");
  pm.run(module);
  return std::string(buf.begin(), buf.end());
}

CpuObjects build_objects(const CpuProgram& program) {
  const auto t0 = std::chrono::steady_clock::now();
  const CpuBuildOptions& opts = program.build;
  const int opt_level = opts.resolved_opt_level();
  const int threads = opts.resolved_threads();
  const KernelCache cache(opts.resolved_cache_dir());
  const std::string tkey = target_key(*host_target_machine(true, opt_level), opt_level);

  // 1. IR and key per kernel.
  struct Work {
    std::unique_ptr<llvm::LLVMContext> ctx;
    std::unique_ptr<llvm::Module> module;
    std::string key;
  };
  const size_t n = program.code.size();
  std::vector<Work> work(n);
  parallel_for(n, threads, [&](size_t i) {
    if (program.code[i].ext) return;  // a host function: no code to generate
    Work& w = work[i];
    w.ctx = std::make_unique<llvm::LLVMContext>();
    w.ctx->setDiscardValueNames(true);
    w.module = kernel_module(program, i, kPlaceholder, *w.ctx);
    Sha256Stream h;
    h << tkey;
    w.module->print(h, nullptr);
    w.key = h.hex();
  });

  // 2. Distinct kernels.
  CpuObjects out;
  std::map<std::string, size_t> distinct;  // key -> index into out.kernels
  std::vector<size_t> first_use;           // out.kernels index -> work index
  for (size_t i = 0; i < n; ++i) {
    if (program.code[i].ext) {  // called through tessel_cpu_extern with its state symbol
      out.symbols.push_back(extern_state_symbol(i));
      continue;
    }
    const std::string symbol = "tessel_k_" + work[i].key.substr(0, 32);
    auto [it, added] = distinct.emplace(work[i].key, out.kernels.size());
    if (added) {
      out.kernels.push_back({symbol, ""});
      first_use.push_back(i);
    } else {
      work[i].module.reset();
      work[i].ctx.reset();
    }
    out.symbols.push_back(symbol);
  }

  // 3. Objects: cached or compiled.
  std::vector<char> hit(out.kernels.size(), 0);
  parallel_for(out.kernels.size(), threads, [&](size_t d) {
    Work& w = work[first_use[d]];
    CpuObjects::Object& obj = out.kernels[d];
    if (auto bytes = cache.load(w.key); bytes && valid_object(*bytes, obj.symbol)) {
      obj.bytes = std::move(*bytes);
      hit[d] = 1;
    } else {
      for (llvm::Function& f : *w.module) {
        const std::string name = f.getName().str();
        if (name.rfind(kPlaceholder, 0) == 0)
          f.setName(obj.symbol + name.substr(std::string(kPlaceholder).size()));
      }
      const auto tc = std::chrono::steady_clock::now();
      size_t before = 0;
      for (const llvm::Function& f : *w.module) before += f.getInstructionCount();
      obj.bytes = compile_module(*w.module, opt_level);
      cache.store(w.key, obj.bytes);
      if (std::getenv("TESSEL_CPU_DEBUG_SIZES")) {  // kernel compile cost, for tuning
        size_t after = 0;
        for (const llvm::Function& f : *w.module) after += f.getInstructionCount();
        const double sec =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - tc).count();
        fmt::print(stderr, "{:8.3f} s {:7} -> {:7} instructions {:8} bytes  {}\n", sec, before,
                   after, obj.bytes.size(), kernel_label(program, first_use[d]));
      }
    }
    w.module.reset();
    w.ctx.reset();
  });
  for (char h : hit) (h ? out.cached : out.compiled) += 1;

  // 4. The entry points.
  llvm::LLVMContext ctx;
  auto entry = entry_module(program, out.symbols, ctx);
  out.entry = compile_module(*entry, 2);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

void write_weights_object(const CpuProgram& program, const std::string& blob_path,
                          const std::string& path) {
  TESSEL_CHECK(
      blob_path.find('"') == std::string::npos && blob_path.find('\\') == std::string::npos,
      "weights blob path {} needs quoting", blob_path);
  llvm::LLVMContext ctx;
  llvm::Module m("tessel_weights", ctx);
  m.setModuleInlineAsm(fmt::format(
      ".section .rodata.tessel_weights,\"a\",@progbits\n"
      ".balign 64\n"
      ".globl tessel_weights\n"
      ".type tessel_weights,@object\n"
      "tessel_weights:\n"
      "{}"
      ".size tessel_weights, {}\n",
      program.weights.size > 0 ? fmt::format(".incbin \"{}\"\n", blob_path) : ".zero 64\n",
      std::max<int64_t>(program.weights.size, 64)));
  auto tm = host_target_machine(true, 0);
  m.setDataLayout(tm->createDataLayout());
  m.setTargetTriple(tm->getTargetTriple().str());
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) fail("cannot write '{}': {}", path, ec.message());
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile))
    fail("cpu backend: LLVM cannot emit an object file for this target");
  pm.run(m);
  os.close();
  if (os.has_error()) fail("cannot write '{}': {}", path, os.error().message());
}

}  // namespace tessel::cpu_backend
