// Loop IR -> LLVM IR, the target-independent part (see loop_codegen.h).
#include "compiler/backend/cpu/loop_codegen.h"

#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <cmath>

#include "compiler/backend/cpu/model_plan.h"
#include "compiler/support/error.h"
#include "passes/loop/cpu_passes.h"

namespace tessel::cpu_backend {

namespace L = tessel::loop;
using L::Expr;
using L::ExprKind;

namespace {
/// Vector loads with a constant lane stride up to this are de-interleaved from contiguous loads
/// (strided_load); larger or unknown strides are gathers.
constexpr int64_t kMaxDeinterleaveStride = 4;

/// Unsigned integer dtypes (and bool, 0 / 1): zero-extended, unsigned comparisons and division.
bool is_unsigned(DType t) {
  return t == DType::u8 || t == DType::u16 || t == DType::u32 || t == DType::u64 ||
         t == DType::boolean;
}
}  // namespace

LoopCodegen::LoopCodegen(llvm::Module& m, std::string name, std::string target)
    : mod_(m),
      ctx_(m.getContext()),
      b_(ctx_),
      name_(std::move(name)),
      target_name_(std::move(target)) {
  f32_ = llvm::Type::getFloatTy(ctx_);
  f16_ = llvm::Type::getHalfTy(ctx_);
  f64_ = llvm::Type::getDoubleTy(ctx_);
  i64_ = llvm::Type::getInt64Ty(ctx_);
  i32_ = llvm::Type::getInt32Ty(ctx_);
  i16_ = llvm::Type::getInt16Ty(ctx_);
  i8_ = llvm::Type::getInt8Ty(ctx_);
  i1_ = llvm::Type::getInt1Ty(ctx_);
  f32p_ = llvm::PointerType::getUnqual(f32_);
  i8p_ = llvm::Type::getInt8PtrTy(ctx_);
  llvm::FastMathFlags fmf;
  fmf.setAllowContract(true);
  fmf.setAllowReassoc(true);
  b_.setFastMathFlags(fmf);
}

std::string LoopCodegen::sanitize(const std::string& s) { return sanitize_symbol(s); }

void LoopCodegen::unsupported(const std::string& what) const {
  fail("{} codegen of kernel {}: {}", target_name_, name_, what);
}

void LoopCodegen::emit_other_stmt(const L::Stmt& s) {
  unsupported(fmt::format("statement kind {} in {} code", static_cast<int>(s->kind), target_name_));
}

void LoopCodegen::emit_other_for(const L::Stmt& s) {
  if (lane_) unsupported("a loop inside a vectorized loop");
  emit_serial(s->var.get(), i64c(0), i64c(s->extent), s->extent - 1, false, s->body);
}

llvm::Align LoopCodegen::vector_alignment(const L::BufferNode& buf, const Expr&) {
  return llvm::Align(static_cast<uint64_t>(dtype_size(buf.dtype)));
}

// ---------------------------------------------------------------- types and constants
llvm::Type* LoopCodegen::vec_ty(llvm::Type* t) const {
  return llvm::FixedVectorType::get(t, static_cast<unsigned>(lanes_));
}

llvm::Type* LoopCodegen::elem_ty(DType dt) const {
  switch (dt) {
    case DType::f32:
      return f32_;
    case DType::f16:
      return f16_;
    case DType::f64:
      return f64_;
    case DType::boolean:
    case DType::i8:
    case DType::u8:
      return i8_;
    case DType::i16:
    case DType::u16:
      return i16_;
    case DType::i32:
    case DType::u32:
      return i32_;
    case DType::i64:
    case DType::u64:
      return i64_;
    default:
      unsupported(fmt::format("buffers of dtype {}", dtype_to_string(dt)));
  }
}

DType LoopCodegen::compute_dtype(DType dt) { return dt == DType::f16 ? DType::f32 : dt; }

llvm::Type* LoopCodegen::compute_ty(DType dt) const {
  if (dt == DType::f16) return f32_;
  if (dt == DType::boolean) return i1_;
  return elem_ty(dt);
}

llvm::Value* LoopCodegen::typed_const(double v, DType dt) {
  llvm::Type* t = compute_ty(dt);
  if (dtype_is_float(dt)) return llvm::ConstantFP::get(t, v);
  if (dt == DType::boolean) return llvm::ConstantInt::get(i1_, v != 0 ? 1 : 0);  // NaN: true
  const unsigned bits = t->getIntegerBitWidth();
  if (std::isnan(v)) return llvm::ConstantInt::get(t, 0);
  if (is_unsigned(dt)) {
    const long double hi = std::ldexp(1.0L, static_cast<int>(bits)) - 1;
    if (v <= 0) return llvm::ConstantInt::get(t, 0);
    if (static_cast<long double>(v) >= hi) return llvm::ConstantInt::getAllOnesValue(t);
    return llvm::ConstantInt::get(t, static_cast<uint64_t>(v));
  }
  const long double lo = -std::ldexp(1.0L, static_cast<int>(bits) - 1);
  if (static_cast<long double>(v) <= lo)
    return llvm::ConstantInt::get(ctx_, llvm::APInt::getSignedMinValue(bits));
  if (static_cast<long double>(v) >= -lo - 1)
    return llvm::ConstantInt::get(ctx_, llvm::APInt::getSignedMaxValue(bits));
  return llvm::ConstantInt::get(t, static_cast<uint64_t>(static_cast<int64_t>(v)), true);
}

LoopCodegen::V LoopCodegen::convert(const V& x, DType from, DType to) {
  from = compute_dtype(from);
  to = compute_dtype(to);
  if (from == to) return x;
  llvm::Type* st = compute_ty(to);
  llvm::Type* tt = x.vec ? vec_ty(st) : st;
  llvm::Value* zero = llvm::Constant::getNullValue(x.v->getType());
  const bool ff = dtype_is_float(from), tf = dtype_is_float(to);
  if (to == DType::boolean)
    return {ff ? b_.CreateFCmpUNE(x.v, zero) : b_.CreateICmpNE(x.v, zero), x.vec};
  if (from == DType::boolean)
    return {tf ? b_.CreateUIToFP(x.v, tt) : b_.CreateZExt(x.v, tt), x.vec};
  if (ff && tf) {
    const bool wider = st->getPrimitiveSizeInBits() > x.v->getType()->getScalarSizeInBits();
    return {wider ? b_.CreateFPExt(x.v, tt) : b_.CreateFPTrunc(x.v, tt), x.vec};
  }
  if (tf) return {is_unsigned(from) ? b_.CreateUIToFP(x.v, tt) : b_.CreateSIToFP(x.v, tt), x.vec};
  if (ff) {
    // Truncation toward zero, saturated at the type's range, NaN -> 0 (the reference's Cast).
    const auto id = is_unsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&mod_, id, {tt, x.v->getType()});
    return {b_.CreateCall(f, {x.v}), x.vec};
  }
  const unsigned fb = x.v->getType()->getScalarSizeInBits(), tb = st->getIntegerBitWidth();
  if (tb == fb) return {x.v, x.vec};
  if (tb < fb) return {b_.CreateTrunc(x.v, tt), x.vec};
  return {is_unsigned(from) ? b_.CreateZExt(x.v, tt) : b_.CreateSExt(x.v, tt), x.vec};
}

std::optional<DType> LoopCodegen::vtype(const Expr& e) {
  auto it = vtype_.find(e.get());
  if (it != vtype_.end()) return it->second;
  std::optional<DType> t = L::value_dtype(e, [](const L::ExprNode& leaf) -> std::optional<DType> {
    if (leaf.kind == ExprKind::Load && leaf.buffer) return compute_dtype(leaf.buffer->dtype);
    return std::nullopt;
  });
  vtype_[e.get()] = t;
  return t;
}

llvm::Value* LoopCodegen::splat(llvm::Value* v) {
  return b_.CreateVectorSplat(static_cast<unsigned>(lanes_), v);
}
llvm::Value* LoopCodegen::as_vec(const V& x) { return x.vec ? x.v : splat(x.v); }
llvm::Value* LoopCodegen::i64c(int64_t v) { return llvm::ConstantInt::get(i64_, v, true); }
llvm::Value* LoopCodegen::f32c(double v) { return llvm::ConstantFP::get(f32_, v); }

LoopCodegen::V LoopCodegen::bin(const V& a, const V& c,
                                const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& f) {
  if (a.vec || c.vec) return {f(as_vec(a), as_vec(c)), true};
  return {f(a.v, c.v), false};
}

// ---------------------------------------------------------------- integer expressions
bool LoopCodegen::nonnegative(const Expr& e) {
  std::map<const L::VarNode*, L::Interval> bounds = bounds_;
  if (lane_) bounds[lane_] = {0, lanes_ - 1};
  try {
    return L::bound_of(e, bounds).lo >= 0;
  } catch (const Error&) {
    return false;
  }
}

LoopCodegen::V LoopCodegen::eval_int(const Expr& e) {
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
        return b_.CreateAdd(r, b_.CreateSelect(neg, y, llvm::Constant::getNullValue(r->getType())));
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
      if (c.vec || x.vec || y.vec) return {b_.CreateSelect(as_vec(c), as_vec(x), as_vec(y)), true};
      return {b_.CreateSelect(c.v, x.v, y.v), false};
    }
    default:
      unsupported("integer expression " + L::to_string(e));
  }
}

LoopCodegen::V LoopCodegen::eval_cond(const Expr& e, const V* guard) {
  switch (e->kind) {
    case ExprKind::Lt:
    case ExprKind::Le:
    case ExprKind::Eq:
    case ExprKind::Ne: {
      const auto ta = vtype(e->args[0]), tb = vtype(e->args[1]);
      if (ta || tb || e->args[0]->is_float || e->args[1]->is_float) {
        // A comparison of values, in the type of its typed operand.
        const DType ct = ta ? *ta : tb ? *tb : DType::f32;
        V a = eval_value(e->args[0], ct, guard), c = eval_value(e->args[1], ct, guard);
        const bool fl = dtype_is_float(ct), un = is_unsigned(ct);
        return bin(a, c, [&](llvm::Value* x, llvm::Value* y) {
          switch (e->kind) {
            case ExprKind::Lt:
              return fl   ? b_.CreateFCmpOLT(x, y)
                     : un ? b_.CreateICmpULT(x, y)
                          : b_.CreateICmpSLT(x, y);
            case ExprKind::Le:
              return fl   ? b_.CreateFCmpOLE(x, y)
                     : un ? b_.CreateICmpULE(x, y)
                          : b_.CreateICmpSLE(x, y);
            case ExprKind::Eq:
              return fl ? b_.CreateFCmpOEQ(x, y) : b_.CreateICmpEQ(x, y);
            default:
              return fl ? b_.CreateFCmpUNE(x, y) : b_.CreateICmpNE(x, y);
          }
        });
      }
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
      return bin(eval_cond(e->args[0], guard), eval_cond(e->args[1], guard),
                 [&](auto* x, auto* y) { return b_.CreateAnd(x, y); });
    case ExprKind::Or:
      return bin(eval_cond(e->args[0], guard), eval_cond(e->args[1], guard),
                 [&](auto* x, auto* y) { return b_.CreateOr(x, y); });
    case ExprKind::Int:
      return {llvm::ConstantInt::get(i1_, e->int_value != 0), false};
    default: {
      if (auto t = vtype(e)) return convert(eval_value(e, *t, guard), *t, DType::boolean);
      if (e->is_float) return convert(eval_value(e, DType::f32, guard), DType::f32, DType::boolean);
      V a = eval_int(e);
      return {b_.CreateICmpNE(a.v, llvm::Constant::getNullValue(a.v->getType())), a.vec};
    }
  }
}

// ---------------------------------------------------------------- memory
llvm::Value* LoopCodegen::base_of(const L::Buffer& buf) {
  auto it = base_.find(buf->storage());
  if (it == base_.end()) unsupported("buffer " + buf->name + " is not a parameter or allocation");
  llvm::Type* want =
      llvm::PointerType::get(elem_ty(buf->dtype), it->second->getType()->getPointerAddressSpace());
  if (it->second->getType() == want) return it->second;
  return b_.CreateBitCast(it->second, want);
}

LoopCodegen::V LoopCodegen::in_bounds(const L::Buffer& buf, const std::vector<Expr>& idx) {
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

LoopCodegen::V LoopCodegen::load(const L::Buffer& buf, const std::vector<Expr>& idx, const V* mask,
                                 double pad) {
  Expr lin = passes::linear_index(*buf, idx);
  llvm::Value* base = base_of(buf);
  llvm::Type* et = elem_ty(buf->dtype);
  const llvm::Align al(static_cast<uint64_t>(dtype_size(buf->dtype)));
  const DType ct = compute_dtype(buf->dtype);
  // Widens an fp16 value (scalar or vector) to fp32; a bool byte becomes i1.
  auto widen = [&](llvm::Value* v, bool vec) -> V {
    if (buf->dtype == DType::f16) return {b_.CreateFPExt(v, vec ? vec_ty(f32_) : f32_), vec};
    if (buf->dtype == DType::boolean)
      return {b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType())), vec};
    return {v, vec};
  };
  // The padding value in the element's storage type.
  llvm::Value* pad_e = buf->dtype == DType::f16       ? llvm::ConstantFP::get(et, pad)
                       : buf->dtype == DType::boolean ? llvm::ConstantInt::get(i8_, pad != 0)
                                                      : typed_const(pad, ct);
  auto scalar = [&]() -> V {
    llvm::Value* off = eval_int(lin).v;
    if (!mask) return widen(b_.CreateAlignedLoad(et, b_.CreateGEP(et, base, off), al), false);
    llvm::Value* safe = b_.CreateSelect(mask->v, off, i64c(0));
    llvm::Value* v = b_.CreateAlignedLoad(et, b_.CreateGEP(et, base, safe), al);
    return widen(b_.CreateSelect(mask->v, v, pad_e), false);
  };
  if (!lane_) return scalar();
  auto coeff = passes::var_coefficient(lin, lane_);
  if (coeff && *coeff == 0 && (!mask || !mask->vec)) return scalar();
  if (coeff && *coeff == 0) {
    // One element for every lane, some lanes masked: read it once (element 0 when no lane is
    // on, so nothing outside the buffer is read), the masked lanes get `pad`.
    llvm::Value* off = eval_int(lin).v;
    llvm::Value* any = b_.CreateOrReduce(mask->v);
    llvm::Value* safe = b_.CreateSelect(any, off, i64c(0));
    V v = widen(b_.CreateAlignedLoad(et, b_.CreateGEP(et, base, safe), al), false);
    return {b_.CreateSelect(mask->v, splat(v.v), splat(typed_const(pad, ct))), true};
  }
  llvm::Value* passthru = splat(pad_e);
  if (coeff && *coeff == 1) {
    Expr first = L::substitute(lin, {{lane_, L::int_imm(0)}});
    llvm::Value* ptr = b_.CreateGEP(et, base, eval_int(first).v);
    llvm::Value* vptr = b_.CreateBitCast(
        ptr, llvm::PointerType::get(vec_ty(et), ptr->getType()->getPointerAddressSpace()));
    const llvm::Align val = vector_alignment(*buf, first);
    if (!mask) return widen(b_.CreateAlignedLoad(vec_ty(et), vptr, val), true);
    return widen(b_.CreateMaskedLoad(vec_ty(et), vptr, val, as_vec(*mask), passthru), true);
  }
  if (coeff && *coeff >= 2 && *coeff <= kMaxDeinterleaveStride) {
    Expr first = L::substitute(lin, {{lane_, L::int_imm(0)}});
    V r = strided_load(b_.CreateGEP(et, base, eval_int(first).v), et, *coeff, mask, passthru);
    return widen(r.v, true);
  }
  // Gather.
  llvm::Value* offs = as_vec(eval_int(lin));
  llvm::Value* ptrs = b_.CreateGEP(et, base, offs);
  llvm::Value* m = mask ? as_vec(*mask) : splat(llvm::ConstantInt::getTrue(ctx_));
  return widen(b_.CreateMaskedGather(vec_ty(et), ptrs, al, m, passthru), true);
}

/// Lanes i = 0..W-1 of ptr[stride * i] (stride 2..kMaxDeinterleaveStride) without a gather:
/// `stride` contiguous masked vector loads cover ptr[0 .. stride * W), each enabling only the
/// elements some lane selects (and whose lane is in `mask`, when given), so nothing outside the
/// selected elements is read; one shufflevector then de-interleaves lanes 0, stride, 2 stride,
/// ... of their concatenation (vpermt2ps on AVX-512). Lanes off in `mask` are `passthru`.
LoopCodegen::V LoopCodegen::strided_load(llvm::Value* ptr, llvm::Type* et, int64_t stride,
                                         const V* mask, llvm::Value* passthru) {
  const llvm::Align al(et->getPrimitiveSizeInBits() / 8);
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
    llvm::Value* vptr = b_.CreateBitCast(
        b_.CreateGEP(et, ptr, i64c(p * lanes_)),
        llvm::PointerType::get(vec_ty(et), ptr->getType()->getPointerAddressSpace()));
    parts.push_back(b_.CreateMaskedLoad(vec_ty(et), vptr, al, m, passthru));
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

void LoopCodegen::store(const L::Buffer& buf, const std::vector<Expr>& idx, const V& value) {
  Expr lin = passes::linear_index(*buf, idx);
  llvm::Value* base = base_of(buf);
  llvm::Type* et = elem_ty(buf->dtype);
  const llvm::Align al(static_cast<uint64_t>(dtype_size(buf->dtype)));
  // Rounds an fp32 value to fp16; a bool (i1) becomes a byte 0 / 1.
  auto narrow = [&](llvm::Value* v) {
    if (buf->dtype == DType::f16)
      return b_.CreateFPTrunc(v, v->getType()->isVectorTy() ? vec_ty(et) : et);
    if (buf->dtype == DType::boolean)
      return b_.CreateZExt(v, v->getType()->isVectorTy() ? vec_ty(et) : et);
    return v;
  };
  if (!lane_) {
    b_.CreateAlignedStore(narrow(value.v), b_.CreateGEP(et, base, eval_int(lin).v), al);
    return;
  }
  auto coeff = passes::var_coefficient(lin, lane_);
  if (coeff && *coeff == 1) {
    Expr first = L::substitute(lin, {{lane_, L::int_imm(0)}});
    llvm::Value* ptr = b_.CreateGEP(et, base, eval_int(first).v);
    llvm::Value* vptr = b_.CreateBitCast(
        ptr, llvm::PointerType::get(vec_ty(et), ptr->getType()->getPointerAddressSpace()));
    if (mask_) {
      b_.CreateMaskedStore(narrow(as_vec(value)), vptr, vector_alignment(*buf, first), mask_);
    } else {
      b_.CreateAlignedStore(narrow(as_vec(value)), vptr, vector_alignment(*buf, first));
    }
    return;
  }
  if (coeff && *coeff == 0)
    unsupported("store to " + buf->name + " writes the same element from every vector lane");
  llvm::Value* ptrs = b_.CreateGEP(et, base, as_vec(eval_int(lin)));
  b_.CreateMaskedScatter(narrow(as_vec(value)), ptrs, al,
                         mask_ ? mask_ : splat(llvm::ConstantInt::getTrue(ctx_)));
}

// ---------------------------------------------------------------- float expressions
llvm::Value* LoopCodegen::unary_intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) {
  llvm::Function* f = llvm::Intrinsic::getDeclaration(&mod_, id, {x->getType()});
  return b_.CreateCall(f, {x});
}

llvm::Value* LoopCodegen::fmax(llvm::Value* x, llvm::Value* y) {
  return b_.CreateSelect(b_.CreateFCmpOGT(x, y), x, y);
}
llvm::Value* LoopCodegen::fmin(llvm::Value* x, llvm::Value* y) {
  return b_.CreateSelect(b_.CreateFCmpOLT(x, y), x, y);
}

LoopCodegen::V LoopCodegen::call(L::CallOp op, const V& x) {
  llvm::Value* one = llvm::ConstantFP::get(x.v->getType(), 1.0);
  llvm::Value* zero = llvm::ConstantFP::get(x.v->getType(), 0.0);
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
      V e = call(L::CallOp::exp, {b_.CreateFNeg(x.v), x.vec});
      return {b_.CreateFDiv(one, b_.CreateFAdd(one, e.v)), x.vec};
    }
    case L::CallOp::floor:
      return {unary_intrinsic(llvm::Intrinsic::floor, x.v), x.vec};
    case L::CallOp::ceil:
      return {unary_intrinsic(llvm::Intrinsic::ceil, x.v), x.vec};
    case L::CallOp::round:  // ties to even (ONNX Round)
      return {unary_intrinsic(llvm::Intrinsic::roundeven, x.v), x.vec};
    case L::CallOp::tanh:
    case L::CallOp::erf:
    case L::CallOp::sin:
    case L::CallOp::cos:
    case L::CallOp::atan:
      break;
  }
  unsupported(fmt::format("math function {}", L::call_name(op)));
}

LoopCodegen::V LoopCodegen::eval_value(const Expr& e, DType t, const V* guard) {
  t = compute_dtype(t);
  switch (e->kind) {
    case ExprKind::Lt:
    case ExprKind::Le:
    case ExprKind::Eq:
    case ExprKind::Ne:
    case ExprKind::And:
    case ExprKind::Or:
      return convert(eval_cond(e, guard), DType::boolean, t);
    default:
      break;
  }
  if (!e->is_float) return convert(eval_int(e), DType::i64, t);  // index arithmetic
  const bool fl = dtype_is_float(t);
  const bool boolean = t == DType::boolean;
  const bool un = is_unsigned(t);
  auto operands = [&](const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& f) {
    return bin(eval_value(e->args[0], t, guard), eval_value(e->args[1], t, guard), f);
  };
  switch (e->kind) {
    case ExprKind::Float:
      return {typed_const(e->float_value, t), false};
    case ExprKind::Load: {
      V mask;
      const V* m = guard;
      if (e->padded) {
        mask = in_bounds(e->buffer, e->args);
        if (guard) mask = bin(mask, *guard, [&](auto* x, auto* y) { return b_.CreateAnd(x, y); });
        m = &mask;
      }
      V v = load(e->buffer, e->args, m, e->padded ? e->pad_value : 0.0);
      return convert(v, e->buffer->dtype, t);
    }
    case ExprKind::Add: {
      // a + b * c -> fmuladd(b, c, a)
      for (int s = 0; fl && s < 2; ++s) {
        const Expr& p = e->args[1 - s];
        if (p->kind == ExprKind::Mul && p->is_float && p->args[0]->is_float &&
            p->args[1]->is_float) {
          V acc = eval_value(e->args[s], t, guard);
          V x = eval_value(p->args[0], t, guard), y = eval_value(p->args[1], t, guard);
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
      return operands([&](auto* x, auto* y) -> llvm::Value* {
        if (fl) return b_.CreateFAdd(x, y);
        if (boolean) return b_.CreateOr(x, y);
        return b_.CreateAdd(x, y);  // wraps
      });
    }
    case ExprKind::Sub:
      return operands([&](auto* x, auto* y) -> llvm::Value* {
        if (fl) return b_.CreateFSub(x, y);
        if (boolean) return b_.CreateXor(x, y);
        return b_.CreateSub(x, y);
      });
    case ExprKind::Mul:
      return operands([&](auto* x, auto* y) -> llvm::Value* {
        if (fl) return b_.CreateFMul(x, y);
        if (boolean) return b_.CreateAnd(x, y);
        return b_.CreateMul(x, y);
      });
    case ExprKind::Div:
      return operands([&](llvm::Value* x, llvm::Value* y) -> llvm::Value* {
        if (fl) return b_.CreateFDiv(x, y);
        if (boolean) return x;  // x / true (x / false has no value; the reference refuses it)
        // Truncating division that never traps: a zero divisor gives 0, x / -1 is -x (wrapping;
        // sdiv of the minimum by -1 is undefined in LLVM).
        llvm::Value* zero = llvm::Constant::getNullValue(y->getType());
        llvm::Value* one = llvm::ConstantInt::get(y->getType(), 1);
        llvm::Value* y0 = b_.CreateICmpEQ(y, zero);
        if (un) return b_.CreateSelect(y0, zero, b_.CreateUDiv(x, b_.CreateSelect(y0, one, y)));
        llvm::Value* ym1 = b_.CreateICmpEQ(y, llvm::Constant::getAllOnesValue(y->getType()));
        llvm::Value* q = b_.CreateSDiv(x, b_.CreateSelect(b_.CreateOr(y0, ym1), one, y));
        return b_.CreateSelect(y0, zero, b_.CreateSelect(ym1, b_.CreateSub(zero, x), q));
      });
    case ExprKind::Min:
      return operands([&](auto* x, auto* y) -> llvm::Value* {
        if (fl) return fmin(x, y);
        if (boolean) return b_.CreateAnd(x, y);
        return b_.CreateSelect(un ? b_.CreateICmpULT(x, y) : b_.CreateICmpSLT(x, y), x, y);
      });
    case ExprKind::Max:
      return operands([&](auto* x, auto* y) -> llvm::Value* {
        if (fl) return fmax(x, y);
        if (boolean) return b_.CreateOr(x, y);
        return b_.CreateSelect(un ? b_.CreateICmpUGT(x, y) : b_.CreateICmpSGT(x, y), x, y);
      });
    case ExprKind::Select: {
      V c = eval_cond(e->args[0], guard);
      V nc{b_.CreateNot(c.v), c.vec};
      V gt = c, ge = nc;
      if (guard) {
        gt = bin(c, *guard, [&](auto* x, auto* y) { return b_.CreateAnd(x, y); });
        ge = bin(nc, *guard, [&](auto* x, auto* y) { return b_.CreateAnd(x, y); });
      }
      V x = eval_value(e->args[1], t, &gt), y = eval_value(e->args[2], t, &ge);
      if (c.vec || x.vec || y.vec) return {b_.CreateSelect(as_vec(c), as_vec(x), as_vec(y)), true};
      return {b_.CreateSelect(c.v, x.v, y.v), false};
    }
    case ExprKind::Call: {
      V x = eval_value(e->args[0], t, guard);
      if (fl) return call(e->call, x);
      llvm::Value* zero = llvm::Constant::getNullValue(x.v->getType());
      switch (e->call) {
        case L::CallOp::neg:
          return {b_.CreateSub(zero, x.v), x.vec};
        case L::CallOp::abs:
          if (un) return x;
          return {b_.CreateSelect(b_.CreateICmpSLT(x.v, zero), b_.CreateSub(zero, x.v), x.v),
                  x.vec};
        case L::CallOp::relu:
          if (un) return x;
          return {b_.CreateSelect(b_.CreateICmpSLT(x.v, zero), zero, x.v), x.vec};
        default:
          unsupported(fmt::format("math function {} on {} values", L::call_name(e->call),
                                  dtype_to_string(t)));
      }
    }
    default:
      unsupported("value expression " + L::to_string(e));
  }
}

// ---------------------------------------------------------------- statements
llvm::AllocaInst* LoopCodegen::entry_alloca(llvm::Type* ty, const std::string& name) {
  llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  auto* a = eb.CreateAlloca(ty, nullptr, name);
  a->setAlignment(llvm::Align(64));
  return a;
}

void LoopCodegen::emit_stmt(const L::Stmt& s) {
  if (!s) return;
  switch (s->kind) {
    case L::StmtKind::Seq:
      for (const auto& x : s->seq) emit_stmt(x);
      return;
    case L::StmtKind::Store: {
      if (!storable(s->buffer->scope))
        unsupported(fmt::format("store to a buffer in scope {}", L::scope_name(s->buffer->scope)));
      // Under a lane mask the loads of the value read only the enabled lanes too.
      const V guard{mask_, true};
      // The value in its own type (an untyped one, e.g. a reduction's identity, in the
      // buffer's), then converted to the buffer's dtype (ONNX Cast rules).
      const DType bt = compute_dtype(s->buffer->dtype);
      const DType vt = vtype(s->value).value_or(bt);
      V v = eval_value(s->value, vt, mask_ ? &guard : nullptr);
      store(s->buffer, s->indices, convert(v, vt, bt));
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
    case L::StmtKind::Prefetch: {
      // llvm.prefetch(ptr, rw = 0 (read), locality, cache = 1 (data)): prefetcht0..nta on x86.
      // The GEP is not inbounds: the address may lie past the buffer (the hint never faults).
      Expr lin = passes::linear_index(*s->buffer, s->indices);
      if (lane_ && passes::var_coefficient(lin, lane_).value_or(1) != 0)
        unsupported("prefetch of " + s->buffer->name + " at an address that differs by lane");
      llvm::Type* et = elem_ty(s->buffer->dtype);
      llvm::Value* ptr = b_.CreateGEP(et, base_of(s->buffer), eval_int(lin).v);
      llvm::Type* i8p = llvm::PointerType::get(i8_, ptr->getType()->getPointerAddressSpace());
      llvm::Function* f = llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::prefetch, {i8p});
      b_.CreateCall(f, {b_.CreateBitCast(ptr, i8p), b_.getInt32(0),
                        b_.getInt32(static_cast<uint32_t>(s->prefetch_locality)), b_.getInt32(1)});
      return;
    }
    default:
      emit_other_stmt(s);
  }
}

void LoopCodegen::emit_for(const L::Stmt& s) {
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
    case L::ForKind::serial:
      if (lane_) unsupported("a loop inside a vectorized loop");
      emit_serial(s->var.get(), i64c(0), i64c(s->extent), s->extent - 1, false, s->body);
      return;
    default:
      emit_other_for(s);
      return;
  }
}

void LoopCodegen::emit_serial(const L::VarNode* var, llvm::Value* begin, llvm::Value* end,
                              int64_t max_value, bool may_be_empty, const L::Stmt& body) {
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

}  // namespace tessel::cpu_backend
