// Loop IR -> LLVM IR (see codegen.h).
#include "compiler/backend/cpu/codegen.h"

#include <fmt/format.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Host.h>

#include <functional>
#include <map>

#include "compiler/backend/cpu/loop_codegen.h"
#include "compiler/support/error.h"
#include "passes/loop/cpu_passes.h"

namespace tessel::cpu_backend {

namespace L = tessel::loop;
using L::Expr;
using L::ExprKind;

CodegenTarget CodegenTarget::host(int vector_lanes) {
  CodegenTarget t;
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> f;
  std::string feats;
  if (llvm::sys::getHostCPUFeatures(f)) {
    for (const auto& kv : f)
      feats += (feats.empty() ? "" : ",") + std::string(kv.second ? "+" : "-") + kv.first().str();
  }
  t.features = feats;
  t.vector_bits = vector_lanes * 32;
  return t;
}

void set_function_attributes(llvm::Function& fn, const CodegenTarget& target) {
  fn.addFnAttr("target-cpu", target.cpu);
  if (!target.features.empty()) fn.addFnAttr("target-features", target.features);
  fn.addFnAttr("prefer-vector-width", std::to_string(target.vector_bits));
  fn.addFnAttr("min-legal-vector-width", std::to_string(target.vector_bits));
  fn.addFnAttr(llvm::Attribute::NoUnwind);
}

namespace {

constexpr int64_t kMaxAllocaBytes = 16 * 1024;

/// The CPU's code generator: host functions over fp32 parameter buffers, entry-block allocas or
/// runtime scratch for allocations, parallel loops outlined onto the runtime's thread pool, libm
/// for tanh and erf.
class KernelCodegen : public LoopCodegen {
 public:
  KernelCodegen(llvm::Module& m, const std::string& name, const CodegenTarget& target)
      : LoopCodegen(m, name, "cpu"), target_(target) {}

  llvm::Function* emit(const std::vector<L::Buffer>& params, const L::Stmt& body) {
    std::vector<llvm::Type*> tys(params.size(), f32p_);
    auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), tys, false);
    if (mod_.getFunction(name_)) fail("cpu codegen: function {} defined twice", name_);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name_, mod_);
    set_function_attributes(*fn_, target_);
    // Called once from the entry points: inlining would only duplicate code (and compile time).
    fn_->addFnAttr(llvm::Attribute::NoInline);
    for (size_t i = 0; i < params.size(); ++i) {
      TESSEL_CHECK(!params[i]->base, "kernel {}: parameter {} is a view", name_, params[i]->name);
      fn_->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
      fn_->getArg(static_cast<unsigned>(i))->setName(sanitize(params[i]->name));
      base_[params[i].get()] = fn_->getArg(static_cast<unsigned>(i));
    }
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    emit_stmt(body);
    b_.CreateRetVoid();
    return fn_;
  }

 private:
  CodegenTarget target_;
  int depth_ = 0;  // allocation nesting (scratch slot)
  int outlined_ = 0;

  void emit_other_stmt(const L::Stmt&) override {
    unsupported("NPU statement (copy/intrin/sync) in CPU code");
  }

  /// Calls the scalar libm function `name` (fp32; `name` without its final 'f' for fp64) on
  /// every lane of `x`.
  llvm::Value* libm_call(std::string name, const V& x) {
    llvm::Type* t = x.v->getType()->getScalarType();
    if (t == f64_) name.pop_back();
    llvm::FunctionCallee f = mod_.getOrInsertFunction(name, llvm::FunctionType::get(t, {t}, false));
    if (!x.vec) return b_.CreateCall(f, {x.v});
    llvm::Value* r = llvm::UndefValue::get(vec_ty(t));
    for (int64_t i = 0; i < lanes_; ++i) {
      llvm::Value* e = b_.CreateExtractElement(x.v, static_cast<uint64_t>(i));
      r = b_.CreateInsertElement(r, b_.CreateCall(f, {e}), static_cast<uint64_t>(i));
    }
    return r;
  }

  V call(L::CallOp op, const V& x) override {
    if (op == L::CallOp::tanh) return {libm_call("tanhf", x), x.vec};
    if (op == L::CallOp::erf) return {libm_call("erff", x), x.vec};
    if (op == L::CallOp::sin) return {libm_call("sinf", x), x.vec};
    if (op == L::CallOp::cos) return {libm_call("cosf", x), x.vec};
    if (op == L::CallOp::atan) return {libm_call("atanf", x), x.vec};
    return LoopCodegen::call(op, x);
  }

  void emit_allocate(const L::Stmt& s) override {
    const L::Buffer& buf = s->buffer;
    if (buf->base) unsupported("allocate of a view " + buf->name);
    // Any element dtype (integer and bool temporaries of typed kernels too): the bytes, rounded
    // up to whole fp32 words; base_ holds every pointer as float* (base_of casts).
    elem_ty(buf->dtype);  // refuses a dtype the code generator cannot load or store
    const int64_t n = std::max<int64_t>(1, (buf->span_bytes() + 3) / 4);
    const int64_t bytes = n * 4;
    llvm::Value* ptr;
    if (bytes <= kMaxAllocaBytes) {
      ptr = b_.CreateBitCast(
          entry_alloca(llvm::ArrayType::get(f32_, static_cast<uint64_t>(n)), sanitize(buf->name)),
          f32p_);
    } else {
      llvm::FunctionCallee f = mod_.getOrInsertFunction(
          "tessel_cpu_scratch", llvm::FunctionType::get(i8p_, {i64_, i64_}, false));
      llvm::Value* raw = b_.CreateCall(f, {i64c(depth_), i64c(bytes)});
      // Out of memory: trap (the runtime returns null only when malloc fails).
      auto* bad = llvm::BasicBlock::Create(ctx_, "oom", fn_);
      auto* ok = llvm::BasicBlock::Create(ctx_, "scratch", fn_);
      b_.CreateCondBr(b_.CreateIsNull(raw), bad, ok);
      b_.SetInsertPoint(bad);
      b_.CreateCall(llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::trap));
      b_.CreateUnreachable();
      b_.SetInsertPoint(ok);
      ptr = b_.CreateBitCast(raw, f32p_);
    }
    base_[buf.get()] = ptr;
    ++depth_;
    emit_stmt(s->body);
    --depth_;
    base_.erase(buf.get());
  }

  void emit_other_for(const L::Stmt& s) override {
    if (s->for_kind == L::ForKind::parallel && !lane_) {
      emit_parallel(s);
      return;
    }
    LoopCodegen::emit_other_for(s);
  }

  /// Outlines the body of a parallel loop: NAME.parK(i8* closure, i64 begin, i64 end) runs
  /// iterations [begin, end) with the buffer pointers and loop variables in scope captured in a
  /// closure struct; the kernel calls tessel_cpu_parallel_for(extent, NAME.parK, &closure).
  void emit_parallel(const L::Stmt& s) {
    // Closure fields in a deterministic order (buffer parameters, then allocations in scope, by
    // name; loop variables by creation), not pointer order: the kernel's IR, and so its cache
    // key (objects.h), must not depend on where the loop IR happens to live in memory.
    std::vector<std::pair<const L::BufferNode*, llvm::Value*>> bufs(base_.begin(), base_.end());
    std::vector<std::pair<const L::VarNode*, llvm::Value*>> vars(vars_.begin(), vars_.end());
    auto arg_no = [&](llvm::Value* v) -> int64_t {
      auto* a = llvm::dyn_cast<llvm::Argument>(v);
      return a ? a->getArgNo() : 1 << 30;
    };
    std::stable_sort(bufs.begin(), bufs.end(), [&](const auto& x, const auto& y) {
      const int64_t ax = arg_no(x.second), ay = arg_no(y.second);
      if (ax != ay) return ax < ay;
      return x.first->name < y.first->name;
    });
    std::stable_sort(vars.begin(), vars.end(),
                     [](const auto& x, const auto& y) { return x.first->id < y.first->id; });
    std::vector<llvm::Type*> fields;
    for (size_t i = 0; i < bufs.size(); ++i) fields.push_back(f32p_);
    for (size_t i = 0; i < vars.size(); ++i) fields.push_back(i64_);
    auto* st = llvm::StructType::get(ctx_, fields);
    llvm::Value* closure = entry_alloca(st, "closure");
    for (size_t i = 0; i < fields.size(); ++i) {
      llvm::Value* v = i < bufs.size() ? bufs[i].second : vars[i - bufs.size()].second;
      b_.CreateStore(v, b_.CreateStructGEP(st, closure, static_cast<unsigned>(i)));
    }
    auto* task_ty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {i8p_, i64_, i64_}, false);
    auto* task = llvm::Function::Create(task_ty, llvm::Function::InternalLinkage,
                                        fmt::format("{}.par{}", name_, outlined_++), mod_);
    set_function_attributes(*task, target_);
    // The caller.
    llvm::FunctionCallee pf = mod_.getOrInsertFunction(
        "tessel_cpu_parallel_for",
        llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_),
                                {i64_, llvm::PointerType::getUnqual(task_ty), i8p_}, false));
    b_.CreateCall(pf, {i64c(s->extent), task, b_.CreateBitCast(closure, i8p_)});
    // The outlined body, with its own environment.
    auto saved_fn = fn_;
    auto saved_ip = b_.saveIP();
    auto saved_base = base_;
    auto saved_vars = vars_;
    fn_ = task;
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", task);
    b_.SetInsertPoint(entry);
    llvm::Value* cl = b_.CreateBitCast(task->getArg(0), llvm::PointerType::getUnqual(st));
    base_.clear();
    vars_.clear();
    for (size_t i = 0; i < fields.size(); ++i) {
      llvm::Value* v =
          b_.CreateLoad(fields[i], b_.CreateStructGEP(st, cl, static_cast<unsigned>(i)));
      if (i < bufs.size()) {
        base_[bufs[i].first] = v;
      } else {
        vars_[vars[i - bufs.size()].first] = v;
      }
    }
    emit_serial(s->var.get(), task->getArg(1), task->getArg(2), s->extent - 1, true, s->body);
    b_.CreateRetVoid();
    fn_ = saved_fn;
    b_.restoreIP(saved_ip);
    base_ = saved_base;
    vars_ = saved_vars;
  }
};

}  // namespace

llvm::Function* emit_kernel(llvm::Module& module, const std::string& name,
                            const std::vector<L::Buffer>& params, const L::Stmt& body,
                            const CodegenTarget& target) {
  KernelCodegen cg(module, name, target);
  return cg.emit(params, body);
}

}  // namespace tessel::cpu_backend
