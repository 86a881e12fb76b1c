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
/// Vector loads with a constant lane stride up to this are de-interleaved from contiguous loads
/// (strided_load); larger or unknown strides are gathers.
constexpr int64_t kMaxDeinterleaveStride = 4;

/// A value in scalar or vector form.
struct V {
  llvm::Value* v = nullptr;
  bool vec = false;
};

class KernelCodegen {
 public:
  KernelCodegen(llvm::Module& m, const std::string& name, const CodegenTarget& target)
      : mod_(m), ctx_(m.getContext()), b_(ctx_), name_(name), target_(target) {
    f32_ = llvm::Type::getFloatTy(ctx_);
    i64_ = llvm::Type::getInt64Ty(ctx_);
    i1_ = llvm::Type::getInt1Ty(ctx_);
    f32p_ = llvm::PointerType::getUnqual(f32_);
    i8p_ = llvm::Type::getInt8PtrTy(ctx_);
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    fmf.setAllowReassoc(true);
    b_.setFastMathFlags(fmf);
  }

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
  llvm::Module& mod_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  std::string name_;
  CodegenTarget target_;
  llvm::Type *f32_, *i64_, *i1_;
  llvm::PointerType *f32p_, *i8p_;
  llvm::Function* fn_ = nullptr;  // the function being emitted (kernel or outlined body)
  std::map<const L::BufferNode*, llvm::Value*> base_;  // allocation -> float*
  std::map<const L::VarNode*, llvm::Value*> vars_;     // loop variables (i64)
  std::map<const L::VarNode*, L::Interval> bounds_;    // their ranges
  const L::VarNode* lane_ = nullptr;                   // vectorized loop variable
  int64_t lanes_ = 0;
  llvm::Value* mask_ = nullptr;  // <lanes x i1> inside an if whose condition varies by lane
  int depth_ = 0;                // allocation nesting (scratch slot)
  int outlined_ = 0;

  static std::string sanitize(const std::string& s) {
    std::string r;
    for (char c : s) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    return r;
  }

  [[noreturn]] void unsupported(const std::string& what) {
    fail("cpu codegen of kernel {}: {}", name_, what);
  }

  // ---------------------------------------------------------------- types and constants
  llvm::Type* vec_ty(llvm::Type* t) {
    return llvm::FixedVectorType::get(t, static_cast<unsigned>(lanes_));
  }
  llvm::Value* splat(llvm::Value* v) {
    return b_.CreateVectorSplat(static_cast<unsigned>(lanes_), v);
  }
  llvm::Value* as_vec(const V& x) { return x.vec ? x.v : splat(x.v); }
  llvm::Value* i64c(int64_t v) { return llvm::ConstantInt::get(i64_, v, true); }
  llvm::Value* f32c(double v) { return llvm::ConstantFP::get(f32_, v); }

  /// Applies a binary op, widening a scalar operand to a vector when the other is one.
  V bin(const V& a, const V& c, const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& f) {
    if (a.vec || c.vec) return {f(as_vec(a), as_vec(c)), true};
    return {f(a.v, c.v), false};
  }

  // ---------------------------------------------------------------- integer expressions
  bool nonnegative(const Expr& e) {
    std::map<const L::VarNode*, L::Interval> bounds = bounds_;
    if (lane_) bounds[lane_] = {0, lanes_ - 1};
    try {
      return L::bound_of(e, bounds).lo >= 0;
    } catch (const Error&) {
      return false;
    }
  }

  V eval_int(const Expr& e) {
    switch (e->kind) {
      case ExprKind::Int:
        return {i64c(e->int_value), false};
      case ExprKind::VarRef: {
        if (e->var.get() == lane_) {
          std::vector<llvm::Constant*> c;
          for (int64_t i = 0; i < lanes_; ++i) c.push_back(llvm::ConstantInt::get(i64_, i));
          return {llvm::ConstantVector::get(c), true};
        }
        auto it = vars_.find(e->var.get());
        if (it == vars_.end()) unsupported("variable " + e->var->name + " used outside its loop");
        return {it->second, false};
      }
      case ExprKind::Add:
        return bin(eval_int(e->args[0]), eval_int(e->args[1]),
                   [&](auto* x, auto* y) { return b_.CreateNSWAdd(x, y); });
      case ExprKind::Sub:
        return bin(eval_int(e->args[0]), eval_int(e->args[1]),
                   [&](auto* x, auto* y) { return b_.CreateNSWSub(x, y); });
      case ExprKind::Mul:
        return bin(eval_int(e->args[0]), eval_int(e->args[1]),
                   [&](auto* x, auto* y) { return b_.CreateNSWMul(x, y); });
      case ExprKind::Min:
        return bin(eval_int(e->args[0]), eval_int(e->args[1]),
                   [&](auto* x, auto* y) { return b_.CreateSelect(b_.CreateICmpSLT(x, y), x, y); });
      case ExprKind::Max:
        return bin(eval_int(e->args[0]), eval_int(e->args[1]),
                   [&](auto* x, auto* y) { return b_.CreateSelect(b_.CreateICmpSGT(x, y), x, y); });
      case ExprKind::FloorDiv:
      case ExprKind::FloorMod: {
        const int64_t d = e->args[1]->int_value;
        const bool div = e->kind == ExprKind::FloorDiv;
        V a = eval_int(e->args[0]);
        if (nonnegative(e->args[0])) {
          return bin(a, {i64c(d), false}, [&](auto* x, auto* y) {
            return div ? b_.CreateUDiv(x, y) : b_.CreateURem(x, y);
          });
        }
        return bin(a, {i64c(d), false}, [&](llvm::Value* x, llvm::Value* y) -> llvm::Value* {
          llvm::Value* q = b_.CreateSDiv(x, y);
          llvm::Value* r = b_.CreateSRem(x, y);
          llvm::Value* neg = b_.CreateICmpSLT(r, llvm::Constant::getNullValue(r->getType()));
          if (div) return b_.CreateSub(q, b_.CreateZExt(neg, q->getType()));
          return b_.CreateAdd(r,
                              b_.CreateSelect(neg, y, llvm::Constant::getNullValue(r->getType())));
        });
      }
      case ExprKind::Lt:
      case ExprKind::Le:
      case ExprKind::Eq:
      case ExprKind::Ne:
      case ExprKind::And:
      case ExprKind::Or: {
        V c = eval_cond(e);
        return {b_.CreateZExt(c.v, c.vec ? vec_ty(i64_) : i64_), c.vec};
      }
      case ExprKind::Select: {
        V c = eval_cond(e->args[0]);
        V x = eval_int(e->args[1]), y = eval_int(e->args[2]);
        if (c.vec || x.vec || y.vec)
          return {b_.CreateSelect(as_vec(c), as_vec(x), as_vec(y)), true};
        return {b_.CreateSelect(c.v, x.v, y.v), false};
      }
      default:
        unsupported("integer expression " + L::to_string(e));
    }
  }

  V eval_cond(const Expr& e) {
    switch (e->kind) {
      case ExprKind::Lt:
      case ExprKind::Le:
      case ExprKind::Eq:
      case ExprKind::Ne: {
        V a = eval_int(e->args[0]), c = eval_int(e->args[1]);
        return bin(a, c, [&](llvm::Value* x, llvm::Value* y) {
          switch (e->kind) {
            case ExprKind::Lt:
              return b_.CreateICmpSLT(x, y);
            case ExprKind::Le:
              return b_.CreateICmpSLE(x, y);
            case ExprKind::Eq:
              return b_.CreateICmpEQ(x, y);
            default:
              return b_.CreateICmpNE(x, y);
          }
        });
      }
      case ExprKind::And:
        return bin(eval_cond(e->args[0]), eval_cond(e->args[1]),
                   [&](auto* x, auto* y) { return b_.CreateAnd(x, y); });
      case ExprKind::Or:
        return bin(eval_cond(e->args[0]), eval_cond(e->args[1]),
                   [&](auto* x, auto* y) { return b_.CreateOr(x, y); });
      case ExprKind::Int:
        return {llvm::ConstantInt::get(i1_, e->int_value != 0), false};
      default: {
        V a = eval_int(e);
        return {b_.CreateICmpNE(a.v, llvm::Constant::getNullValue(a.v->getType())), a.vec};
      }
    }
  }

  // ---------------------------------------------------------------- memory
  llvm::Value* base_of(const L::Buffer& buf) {
    auto it = base_.find(buf->storage());
    if (it == base_.end()) unsupported("buffer " + buf->name + " is not a parameter or allocation");
    return it->second;
  }

  /// In-bounds condition of a padded access (every index inside the buffer's shape).
  V in_bounds(const L::Buffer& buf, const std::vector<Expr>& idx) {
    V cond{llvm::ConstantInt::getTrue(ctx_), false};
    for (size_t d = 0; d < idx.size(); ++d) {
      V i = eval_int(idx[d]);
      V lo = bin(i, {i64c(0), false}, [&](auto* x, auto* y) { return b_.CreateICmpSGE(x, y); });
      V hi = bin(i, {i64c(buf->shape[d]), false},
                 [&](auto* x, auto* y) { return b_.CreateICmpSLT(x, y); });
      cond = bin(cond, lo, [&](auto* x, auto* y) { return b_.CreateAnd(x, y); });
      cond = bin(cond, hi, [&](auto* x, auto* y) { return b_.CreateAnd(x, y); });
    }
    return cond;
  }

  /// Loads buffer[idx]; where `mask` (optional) is false the result is `pad` and nothing is read.
  V load(const L::Buffer& buf, const std::vector<Expr>& idx, const V* mask, double pad) {
    Expr lin = passes::linear_index(*buf, idx);
    llvm::Value* base = base_of(buf);
    const llvm::Align al(4);
    if (!lane_) {
      llvm::Value* off = eval_int(lin).v;
      if (!mask) return {b_.CreateAlignedLoad(f32_, b_.CreateGEP(f32_, base, off), al), false};
      llvm::Value* safe = b_.CreateSelect(mask->v, off, i64c(0));
      llvm::Value* v = b_.CreateAlignedLoad(f32_, b_.CreateGEP(f32_, base, safe), al);
      return {b_.CreateSelect(mask->v, v, f32c(pad)), false};
    }
    auto coeff = passes::var_coefficient(lin, lane_);
    if (coeff && *coeff == 0 && (!mask || !mask->vec)) {
      llvm::Value* off = eval_int(lin).v;
      if (!mask) return {b_.CreateAlignedLoad(f32_, b_.CreateGEP(f32_, base, off), al), false};
      llvm::Value* safe = b_.CreateSelect(mask->v, off, i64c(0));
      llvm::Value* v = b_.CreateAlignedLoad(f32_, b_.CreateGEP(f32_, base, safe), al);
      return {b_.CreateSelect(mask->v, v, f32c(pad)), false};
    }
    llvm::Value* passthru = splat(f32c(pad));
    if (coeff && *coeff == 0) {
      // One element for every lane, some lanes masked: read it once (element 0 when no lane is
      // on, so nothing outside the buffer is read), the masked lanes get `pad`.
      llvm::Value* off = eval_int(lin).v;
      llvm::Value* any = b_.CreateOrReduce(mask->v);
      llvm::Value* safe = b_.CreateSelect(any, off, i64c(0));
      llvm::Value* v = b_.CreateAlignedLoad(f32_, b_.CreateGEP(f32_, base, safe), al);
      return {b_.CreateSelect(mask->v, splat(v), passthru), true};
    }
    if (coeff && *coeff == 1) {
      Expr first = L::substitute(lin, {{lane_, L::int_imm(0)}});
      llvm::Value* ptr = b_.CreateGEP(f32_, base, eval_int(first).v);
      llvm::Value* vptr = b_.CreateBitCast(ptr, llvm::PointerType::getUnqual(vec_ty(f32_)));
      if (!mask) return {b_.CreateAlignedLoad(vec_ty(f32_), vptr, al), true};
      return {b_.CreateMaskedLoad(vec_ty(f32_), vptr, al, as_vec(*mask), passthru), true};
    }
    if (coeff && *coeff >= 2 && *coeff <= kMaxDeinterleaveStride) {
      Expr first = L::substitute(lin, {{lane_, L::int_imm(0)}});
      return strided_load(b_.CreateGEP(f32_, base, eval_int(first).v), *coeff, mask, passthru);
    }
    // Gather.
    llvm::Value* offs = as_vec(eval_int(lin));
    llvm::Value* ptrs = b_.CreateGEP(f32_, base, offs);
    llvm::Value* m = mask ? as_vec(*mask) : splat(llvm::ConstantInt::getTrue(ctx_));
    return {b_.CreateMaskedGather(vec_ty(f32_), ptrs, al, m, passthru), true};
  }

  /// Lanes i = 0..W-1 of ptr[stride * i] (stride 2..kMaxDeinterleaveStride) without a gather:
  /// `stride` contiguous masked vector loads cover ptr[0 .. stride * W), each enabling only the
  /// elements some lane selects (and whose lane is in `mask`, when given), so nothing outside the
  /// selected elements is read; one shufflevector then de-interleaves lanes 0, stride, 2 stride,
  /// ... of their concatenation (vpermt2ps on AVX-512). Lanes off in `mask` are `passthru`.
  V strided_load(llvm::Value* ptr, int64_t stride, const V* mask, llvm::Value* passthru) {
    const llvm::Align al(4);
    const unsigned w = static_cast<unsigned>(lanes_);
    llvm::Value* lane_mask = mask ? as_vec(*mask) : nullptr;
    llvm::Value* no_lanes = llvm::Constant::getNullValue(vec_ty(i1_));
    std::vector<llvm::Value*> parts;
    for (int64_t p = 0; p < stride; ++p) {
      std::vector<int> pick(w);
      std::vector<llvm::Constant*> bits(w);
      for (unsigned j = 0; j < w; ++j) {
        const int64_t o = p * lanes_ + j;  // element offset from lane 0's element
        const bool used = o % stride == 0;
        pick[j] = used ? static_cast<int>(o / stride) : static_cast<int>(w);  // w: a false lane
        bits[j] = llvm::ConstantInt::get(i1_, used ? 1 : 0);
      }
      llvm::Value* m = lane_mask ? b_.CreateShuffleVector(lane_mask, no_lanes, pick)
                                 : llvm::ConstantVector::get(bits);
      llvm::Value* vptr = b_.CreateBitCast(b_.CreateGEP(f32_, ptr, i64c(p * lanes_)),
                                           llvm::PointerType::getUnqual(vec_ty(f32_)));
      parts.push_back(b_.CreateMaskedLoad(vec_ty(f32_), vptr, al, m, passthru));
    }
    // Concatenate pairwise (an odd part is widened with poison lanes, never selected below).
    while (parts.size() > 1) {
      std::vector<llvm::Value*> next;
      for (size_t i = 0; i < parts.size(); i += 2) {
        llvm::Value* a = parts[i];
        const unsigned n = llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements();
        llvm::Value* c = i + 1 < parts.size() ? parts[i + 1] : llvm::PoisonValue::get(a->getType());
        std::vector<int> cat(2 * n);
        for (unsigned j = 0; j < 2 * n; ++j) cat[j] = static_cast<int>(j);
        next.push_back(b_.CreateShuffleVector(a, c, cat));
      }
      parts = std::move(next);
    }
    std::vector<int> sel(w);
    for (unsigned i = 0; i < w; ++i) sel[i] = static_cast<int>(i * stride);
    return {b_.CreateShuffleVector(parts[0], sel), true};
  }

  void store(const L::Buffer& buf, const std::vector<Expr>& idx, const V& value) {
    Expr lin = passes::linear_index(*buf, idx);
    llvm::Value* base = base_of(buf);
    const llvm::Align al(4);
    if (!lane_) {
      b_.CreateAlignedStore(value.v, b_.CreateGEP(f32_, base, eval_int(lin).v), al);
      return;
    }
    auto coeff = passes::var_coefficient(lin, lane_);
    if (coeff && *coeff == 1) {
      Expr first = L::substitute(lin, {{lane_, L::int_imm(0)}});
      llvm::Value* ptr = b_.CreateGEP(f32_, base, eval_int(first).v);
      llvm::Value* vptr = b_.CreateBitCast(ptr, llvm::PointerType::getUnqual(vec_ty(f32_)));
      if (mask_) {
        b_.CreateMaskedStore(as_vec(value), vptr, al, mask_);
      } else {
        b_.CreateAlignedStore(as_vec(value), vptr, al);
      }
      return;
    }
    if (coeff && *coeff == 0)
      unsupported("store to " + buf->name + " writes the same element from every vector lane");
    llvm::Value* ptrs = b_.CreateGEP(f32_, base, as_vec(eval_int(lin)));
    b_.CreateMaskedScatter(as_vec(value), ptrs, al,
                           mask_ ? mask_ : splat(llvm::ConstantInt::getTrue(ctx_)));
  }

  // ---------------------------------------------------------------- float expressions
  llvm::Value* unary_intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) {
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&mod_, id, {x->getType()});
    return b_.CreateCall(f, {x});
  }

  /// Calls the scalar libm function `name` on every lane of `x`.
  llvm::Value* libm_call(const char* name, const V& x) {
    llvm::FunctionCallee f =
        mod_.getOrInsertFunction(name, llvm::FunctionType::get(f32_, {f32_}, false));
    if (!x.vec) return b_.CreateCall(f, {x.v});
    llvm::Value* r = llvm::UndefValue::get(vec_ty(f32_));
    for (int64_t i = 0; i < lanes_; ++i) {
      llvm::Value* e = b_.CreateExtractElement(x.v, static_cast<uint64_t>(i));
      r = b_.CreateInsertElement(r, b_.CreateCall(f, {e}), static_cast<uint64_t>(i));
    }
    return r;
  }

  llvm::Value* fmax(llvm::Value* x, llvm::Value* y) {
    return b_.CreateSelect(b_.CreateFCmpOGT(x, y), x, y);
  }
  llvm::Value* fmin(llvm::Value* x, llvm::Value* y) {
    return b_.CreateSelect(b_.CreateFCmpOLT(x, y), x, y);
  }

  V call(L::CallOp op, const V& x) {
    llvm::Value* one = x.vec ? splat(f32c(1.0)) : f32c(1.0);
    llvm::Value* zero = x.vec ? splat(f32c(0.0)) : f32c(0.0);
    switch (op) {
      case L::CallOp::exp:
        return {unary_intrinsic(llvm::Intrinsic::exp, x.v), x.vec};
      case L::CallOp::log:
        return {unary_intrinsic(llvm::Intrinsic::log, x.v), x.vec};
      case L::CallOp::sqrt:
        return {unary_intrinsic(llvm::Intrinsic::sqrt, x.v), x.vec};
      case L::CallOp::rsqrt:
        return {b_.CreateFDiv(one, unary_intrinsic(llvm::Intrinsic::sqrt, x.v)), x.vec};
      case L::CallOp::recip:
        return {b_.CreateFDiv(one, x.v), x.vec};
      case L::CallOp::abs:
        return {unary_intrinsic(llvm::Intrinsic::fabs, x.v), x.vec};
      case L::CallOp::neg:
        return {b_.CreateFNeg(x.v), x.vec};
      case L::CallOp::relu:
        return {fmax(x.v, zero), x.vec};
      case L::CallOp::sigmoid: {
        llvm::Value* e = unary_intrinsic(llvm::Intrinsic::exp, b_.CreateFNeg(x.v));
        return {b_.CreateFDiv(one, b_.CreateFAdd(one, e)), x.vec};
      }
      case L::CallOp::tanh:
        return {libm_call("tanhf", x), x.vec};
      case L::CallOp::erf:
        return {libm_call("erff", x), x.vec};
    }
    unsupported("call");
  }

  /// Float value of `e`; loads under `guard` (a select condition) read nothing where it is false.
  V eval_float(const Expr& e, const V* guard = nullptr) {
    if (!e->is_float) {
      V i = eval_int(e);
      return {b_.CreateSIToFP(i.v, i.vec ? vec_ty(f32_) : f32_), i.vec};
    }
    switch (e->kind) {
      case ExprKind::Float:
        return {f32c(e->float_value), false};
      case ExprKind::Load: {
        V mask;
        const V* m = guard;
        if (e->padded) {
          mask = in_bounds(e->buffer, e->args);
          if (guard) mask = bin(mask, *guard, [&](auto* x, auto* y) { return b_.CreateAnd(x, y); });
          m = &mask;
        }
        return load(e->buffer, e->args, m, e->padded ? e->pad_value : 0.0);
      }
      case ExprKind::Add: {
        // a + b * c -> fmuladd(b, c, a)
        for (int s = 0; s < 2; ++s) {
          const Expr& p = e->args[1 - s];
          if (p->kind == ExprKind::Mul && p->is_float && p->args[0]->is_float &&
              p->args[1]->is_float) {
            V acc = eval_float(e->args[s], guard);
            V x = eval_float(p->args[0], guard), y = eval_float(p->args[1], guard);
            const bool vec = acc.vec || x.vec || y.vec;
            llvm::Value* xs = vec ? as_vec(x) : x.v;
            llvm::Value* ys = vec ? as_vec(y) : y.v;
            llvm::Value* as = vec ? as_vec(acc) : acc.v;
            return {b_.CreateCall(llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::fmuladd,
                                                                  {xs->getType()}),
                                  {xs, ys, as}),
                    vec};
          }
        }
        return bin(eval_float(e->args[0], guard), eval_float(e->args[1], guard),
                   [&](auto* x, auto* y) { return b_.CreateFAdd(x, y); });
      }
      case ExprKind::Sub:
        return bin(eval_float(e->args[0], guard), eval_float(e->args[1], guard),
                   [&](auto* x, auto* y) { return b_.CreateFSub(x, y); });
      case ExprKind::Mul:
        return bin(eval_float(e->args[0], guard), eval_float(e->args[1], guard),
                   [&](auto* x, auto* y) { return b_.CreateFMul(x, y); });
      case ExprKind::Div:
        return bin(eval_float(e->args[0], guard), eval_float(e->args[1], guard),
                   [&](auto* x, auto* y) { return b_.CreateFDiv(x, y); });
      case ExprKind::Min:
        return bin(eval_float(e->args[0], guard), eval_float(e->args[1], guard),
                   [&](auto* x, auto* y) { return fmin(x, y); });
      case ExprKind::Max:
        return bin(eval_float(e->args[0], guard), eval_float(e->args[1], guard),
                   [&](auto* x, auto* y) { return fmax(x, y); });
      case ExprKind::Select: {
        V c = eval_cond(e->args[0]);
        V nc{b_.CreateNot(c.v), c.vec};
        V gt = c, ge = nc;
        if (guard) {
          gt = bin(c, *guard, [&](auto* x, auto* y) { return b_.CreateAnd(x, y); });
          ge = bin(nc, *guard, [&](auto* x, auto* y) { return b_.CreateAnd(x, y); });
        }
        V x = eval_float(e->args[1], &gt), y = eval_float(e->args[2], &ge);
        if (c.vec || x.vec || y.vec)
          return {b_.CreateSelect(as_vec(c), as_vec(x), as_vec(y)), true};
        return {b_.CreateSelect(c.v, x.v, y.v), false};
      }
      case ExprKind::Call:
        return call(e->call, eval_float(e->args[0], guard));
      default:
        unsupported("float expression " + L::to_string(e));
    }
  }

  // ---------------------------------------------------------------- statements
  llvm::AllocaInst* entry_alloca(llvm::Type* ty, const std::string& name) {
    llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    auto* a = eb.CreateAlloca(ty, nullptr, name);
    a->setAlignment(llvm::Align(64));
    return a;
  }

  void emit_stmt(const L::Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case L::StmtKind::Seq:
        for (const auto& x : s->seq) emit_stmt(x);
        return;
      case L::StmtKind::Store: {
        if (s->buffer->scope != L::MemScope::host) unsupported("store to a non-host buffer");
        // Under a lane mask the loads of the value read only the enabled lanes too.
        const V guard{mask_, true};
        V v = eval_float(s->value, mask_ ? &guard : nullptr);
        store(s->buffer, s->indices, v);
        return;
      }
      case L::StmtKind::Allocate:
        emit_allocate(s);
        return;
      case L::StmtKind::If: {
        V c = eval_cond(s->cond);
        if (c.vec) {
          // A condition that differs between lanes predicates the statements inside: their
          // stores (and the loads they make) become masked (llvm.masked.store / scatter).
          llvm::Value* saved = mask_;
          mask_ = saved ? b_.CreateAnd(saved, c.v) : c.v;
          emit_stmt(s->body);
          if (s->else_body) {
            llvm::Value* inv = b_.CreateNot(c.v);
            mask_ = saved ? b_.CreateAnd(saved, inv) : inv;
            emit_stmt(s->else_body);
          }
          mask_ = saved;
          return;
        }
        auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
        auto* else_bb = s->else_body ? llvm::BasicBlock::Create(ctx_, "else", fn_) : nullptr;
        auto* join = llvm::BasicBlock::Create(ctx_, "endif", fn_);
        b_.CreateCondBr(c.v, then_bb, else_bb ? else_bb : join);
        b_.SetInsertPoint(then_bb);
        emit_stmt(s->body);
        b_.CreateBr(join);
        if (else_bb) {
          b_.SetInsertPoint(else_bb);
          emit_stmt(s->else_body);
          b_.CreateBr(join);
        }
        b_.SetInsertPoint(join);
        return;
      }
      case L::StmtKind::For:
        emit_for(s);
        return;
      default:
        unsupported("NPU statement (copy/intrin/sync) in CPU code");
    }
  }

  void emit_allocate(const L::Stmt& s) {
    const L::Buffer& buf = s->buffer;
    if (buf->base) unsupported("allocate of a view " + buf->name);
    const int64_t n = std::max<int64_t>(1, buf->span_bytes() / 4);
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

  void emit_for(const L::Stmt& s) {
    if (s->extent <= 0) return;
    switch (s->for_kind) {
      case L::ForKind::unrolled:
        bounds_[s->var.get()] = {0, s->extent - 1};
        for (int64_t i = 0; i < s->extent; ++i) {
          vars_[s->var.get()] = i64c(i);
          emit_stmt(s->body);
        }
        vars_.erase(s->var.get());
        bounds_.erase(s->var.get());
        return;
      case L::ForKind::vectorized:
        if (lane_) unsupported("nested vectorized loops");
        lane_ = s->var.get();
        lanes_ = s->extent;
        emit_stmt(s->body);
        lane_ = nullptr;
        lanes_ = 0;
        return;
      case L::ForKind::parallel:
        if (!lane_) {
          emit_parallel(s);
          return;
        }
        [[fallthrough]];
      default:
        if (lane_) unsupported("a loop inside a vectorized loop");
        emit_serial(s->var.get(), i64c(0), i64c(s->extent), s->extent - 1, false, s->body);
        return;
    }
  }

  /// for v in [begin, end): body, v known to lie in [0, max_value]. `may_be_empty`: begin < end
  /// is checked before the first iteration (else at least one iteration is known).
  void emit_serial(const L::VarNode* var, llvm::Value* begin, llvm::Value* end, int64_t max_value,
                   bool may_be_empty, const L::Stmt& body) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, "loop." + var->name, fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "endloop." + var->name, fn_);
    if (may_be_empty) {
      b_.CreateCondBr(b_.CreateICmpSLT(begin, end), header, exit);
    } else {
      b_.CreateBr(header);
    }
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(i64_, 2, var->name);
    iv->addIncoming(begin, pre);
    vars_[var] = iv;
    bounds_[var] = {0, max_value};
    emit_stmt(body);
    llvm::Value* next = b_.CreateNSWAdd(iv, i64c(1));
    iv->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpSLT(next, end), header, exit);
    b_.SetInsertPoint(exit);
    vars_.erase(var);
    bounds_.erase(var);
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
