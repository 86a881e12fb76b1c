// Loop IR -> LLVM IR for NVPTX (see codegen.h).
#include "compiler/backend/gpu/codegen.h"

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include <cmath>
#include <numeric>

#include "compiler/backend/cpu/loop_codegen.h"
#include "compiler/support/error.h"
#include "passes/loop/gpu_passes.h"

namespace tessel::gpu_backend {

namespace L = tessel::loop;
using cpu_backend::LoopCodegen;
using L::Expr;

const char* const kNvptxTriple = "nvptx64-nvidia-cuda";
const char* const kNvptxDataLayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64";

KernelShape kernel_shape(const L::Stmt& body) {
  TESSEL_CHECK(body && body->kind == L::StmtKind::For && body->for_kind == L::ForKind::gpu_block,
               "a GPU kernel is one gpu_block loop");
  KernelShape k;
  k.grid = body->extent;
  k.block = passes::gpu_block_threads(body);
  k.shared_bytes = passes::gpu_shared_bytes(body);
  return k;
}

namespace {

bool contains_barrier(const L::Stmt& s) {
  bool found = false;
  L::visit_stmt(s, [&](const L::Stmt& n) {
    if (n->kind == L::StmtKind::Gpu &&
        (n->gpu_op == L::GpuOp::barrier || n->gpu_op == L::GpuOp::mma_m16n8k16))
      found = true;
  });
  return found;
}

class GpuKernelCodegen : public LoopCodegen {
 public:
  GpuKernelCodegen(llvm::Module& m, const std::string& name) : LoopCodegen(m, name, "gpu") {}

  llvm::Function* emit(const std::vector<L::Buffer>& params, const L::Stmt& body) {
    shape_ = kernel_shape(body);
    std::vector<llvm::Type*> tys;
    for (const auto& p : params) {
      TESSEL_CHECK(!p->base, "kernel {}: parameter {} is a view", name_, p->name);
      tys.push_back(llvm::PointerType::getUnqual(elem_ty(p->dtype)));
    }
    auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), tys, false);
    if (mod_.getFunction(name_)) fail("gpu codegen: function {} defined twice", name_);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name_, mod_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    for (size_t i = 0; i < params.size(); ++i) {
      fn_->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
      fn_->getArg(static_cast<unsigned>(i))->setName(sanitize(params[i]->name));
      base_[params[i].get()] = fn_->getArg(static_cast<unsigned>(i));
    }
    // nvvm.annotations: a kernel entry, and its block size (lets ptxas budget registers).
    llvm::NamedMDNode* ann = mod_.getOrInsertNamedMetadata("nvvm.annotations");
    auto md = [&](const char* key, int64_t v) {
      ann->addOperand(llvm::MDNode::get(
          ctx_, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, key),
                 llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<uint32_t>(v)))}));
    };
    md("kernel", 1);
    md("maxntidx", shape_.block);
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    if (shape_.shared_bytes > 0) {
      auto* arr = llvm::ArrayType::get(b_.getInt8Ty(), 0);
      auto* g =
          new llvm::GlobalVariable(mod_, arr, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                   name_ + "_smem", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
      g->setAlignment(llvm::Align(16));
      // An instruction (not a constant expression), so the host emulator can replace it.
      auto* first = llvm::ConstantExpr::getBitCast(g, llvm::PointerType::get(b_.getInt8Ty(), 3));
      smem_ = new llvm::AddrSpaceCastInst(first, i8p_, "smem", entry);
    }
    emit_stmt(body);
    b_.CreateRetVoid();
    return fn_;
  }

 private:
  KernelShape shape_;
  llvm::Value* smem_ = nullptr;
  int64_t smem_offset_ = 0;
  bool in_block_ = false;

  // ---------------------------------------------------------------- loops
  llvm::Value* sreg(llvm::Intrinsic::ID id) {
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&mod_, id);
    return b_.CreateZExt(b_.CreateCall(f, {}), i64_);
  }

  void emit_other_for(const L::Stmt& s) override {
    if (lane_ && (s->for_kind == L::ForKind::gpu_block || s->for_kind == L::ForKind::gpu_thread))
      unsupported("a gpu loop inside a vectorized loop");
    if (s->for_kind == L::ForKind::gpu_block) {
      if (in_block_) unsupported("nested gpu_block loops");
      in_block_ = true;
      vars_[s->var.get()] = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
      bounds_[s->var.get()] = {0, s->extent - 1};
      emit_stmt(s->body);
      vars_.erase(s->var.get());
      bounds_.erase(s->var.get());
      in_block_ = false;
      return;
    }
    if (s->for_kind == L::ForKind::gpu_thread) {
      if (!in_block_) unsupported("a gpu_thread loop outside the gpu_block loop");
      llvm::Value* tid = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
      vars_[s->var.get()] = tid;
      bounds_[s->var.get()] = {0, s->extent - 1};
      if (s->extent < shape_.block) {
        if (contains_barrier(s->body))
          unsupported(fmt::format("gpu_thread loop {} of {} threads (block {}) contains a barrier",
                                  s->var->name, s->extent, shape_.block));
        auto* run = llvm::BasicBlock::Create(ctx_, "threads." + s->var->name, fn_);
        auto* done = llvm::BasicBlock::Create(ctx_, "endthreads." + s->var->name, fn_);
        b_.CreateCondBr(b_.CreateICmpULT(tid, i64c(s->extent)), run, done);
        b_.SetInsertPoint(run);
        emit_stmt(s->body);
        b_.CreateBr(done);
        b_.SetInsertPoint(done);
      } else {
        emit_stmt(s->body);
      }
      vars_.erase(s->var.get());
      bounds_.erase(s->var.get());
      return;
    }
    LoopCodegen::emit_other_for(s);  // parallel / pipelined / ...: serial
  }

  // ---------------------------------------------------------------- memory
  bool storable(L::MemScope scope) const override {
    return scope == L::MemScope::host || scope == L::MemScope::shared ||
           scope == L::MemScope::local;
  }

  void emit_allocate(const L::Stmt& s) override {
    const L::Buffer& buf = s->buffer;
    if (buf->base) unsupported("allocate of a view " + buf->name);
    const int64_t bytes = std::max<int64_t>(buf->alloc_bytes, 1);
    llvm::Type* et = elem_ty(buf->dtype);
    llvm::Value* ptr;
    if (buf->scope == L::MemScope::shared) {
      TESSEL_CHECK(smem_ != nullptr, "kernel {}: shared allocation {} outside the kernel's count",
                   name_, buf->name);
      ptr = b_.CreateBitCast(
          b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), smem_, static_cast<uint64_t>(smem_offset_)),
          llvm::PointerType::getUnqual(et));
      smem_offset_ += (bytes + 15) / 16 * 16;
    } else if (buf->scope == L::MemScope::local) {
      const uint64_t n =
          static_cast<uint64_t>((bytes + dtype_size(buf->dtype) - 1) / dtype_size(buf->dtype));
      ptr = b_.CreateBitCast(entry_alloca(llvm::ArrayType::get(et, n), sanitize(buf->name)),
                             llvm::PointerType::getUnqual(et));
    } else {
      unsupported(
          fmt::format("allocation {} in scope {} inside a GPU kernel (global memory is "
                      "allocated by the host)",
                      buf->name, L::scope_name(buf->scope)));
    }
    base_[buf.get()] = ptr;
    emit_stmt(s->body);
    base_.erase(buf.get());
  }

  llvm::Align vector_alignment(const L::BufferNode& buf, const Expr& first) override {
    const int64_t esize = dtype_size(buf.dtype);
    const int64_t d = passes::index_divisor(passes::simplify_index(first));
    int64_t al = std::min<int64_t>(16, lanes_ * esize);
    // Largest power of two <= al dividing d * esize (every buffer starts 16-byte aligned).
    while (al > esize && d != 0 && (d * esize) % al != 0) al /= 2;
    return llvm::Align(static_cast<uint64_t>(al));
  }

  // ---------------------------------------------------------------- intrinsics
  llvm::Value* element_ptr(const L::IntrinOperand& o, int64_t extra = 0) {
    llvm::Value* base = base_of(o.buffer);
    llvm::Value* off = eval_int(o.elem_offset).v;
    if (extra) off = b_.CreateAdd(off, i64c(extra));
    return b_.CreateGEP(elem_ty(o.buffer->dtype), base, off);
  }

  llvm::Value* as_space(llvm::Value* generic, unsigned space) {
    return b_.CreateAddrSpaceCast(b_.CreateBitCast(generic, i8p_),
                                  llvm::PointerType::get(b_.getInt8Ty(), space));
  }

  void emit_other_stmt(const L::Stmt& s) override {
    if (s->kind != L::StmtKind::Gpu) unsupported("NPU statement (copy/intrin/sync) in GPU code");
    if (lane_) unsupported(fmt::format("{} inside a vectorized loop", L::gpu_op_name(s->gpu_op)));
    auto intr = [&](llvm::Intrinsic::ID id) { return llvm::Intrinsic::getDeclaration(&mod_, id); };
    switch (s->gpu_op) {
      case L::GpuOp::barrier:
        b_.CreateCall(intr(llvm::Intrinsic::nvvm_barrier0), {});
        return;
      case L::GpuOp::cp_async_commit:
        b_.CreateCall(intr(llvm::Intrinsic::nvvm_cp_async_commit_group), {});
        return;
      case L::GpuOp::cp_async_wait:
        b_.CreateCall(intr(llvm::Intrinsic::nvvm_cp_async_wait_group),
                      {b_.getInt32(static_cast<uint32_t>(s->gpu_imm))});
        return;
      case L::GpuOp::cp_async: {
        llvm::Intrinsic::ID id;
        switch (s->gpu_imm) {
          case 4:
            id = llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4;
            break;
          case 8:
            id = llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8;
            break;
          case 16:
            id = llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16;
            break;
          default:
            unsupported(fmt::format("cp.async of {} bytes", s->gpu_imm));
        }
        if (s->operands.size() != 2 || s->operands[0].buffer->scope != L::MemScope::shared ||
            s->operands[1].buffer->scope != L::MemScope::host)
          unsupported("cp.async operands other than {shared, global}");
        llvm::Value* dst = as_space(element_ptr(s->operands[0]), 3);
        llvm::Value* src = as_space(element_ptr(s->operands[1]), 1);
        b_.CreateCall(intr(id), {dst, src});
        return;
      }
      case L::GpuOp::mma_m16n8k16: {
        if (s->operands.size() != 3 || s->operands[0].buffer->dtype != DType::f32 ||
            s->operands[1].buffer->dtype != DType::f16 ||
            s->operands[2].buffer->dtype != DType::f16)
          unsupported("mma.sync operands other than {f32 acc, f16 A, f16 B}");
        auto* h2 = llvm::FixedVectorType::get(f16_, 2);
        auto pairs = [&](const L::IntrinOperand& o, int n) {
          std::vector<llvm::Value*> regs;
          for (int r = 0; r < n; ++r) {
            llvm::Value* v = llvm::UndefValue::get(h2);
            for (int h = 0; h < 2; ++h) {
              llvm::Value* e = b_.CreateLoad(f16_, element_ptr(o, 2 * r + h));
              v = b_.CreateInsertElement(v, e, static_cast<uint64_t>(h));
            }
            regs.push_back(v);
          }
          return regs;
        };
        std::vector<llvm::Value*> args = pairs(s->operands[1], 4);
        for (llvm::Value* v : pairs(s->operands[2], 2)) args.push_back(v);
        std::vector<llvm::Value*> cptr;
        for (int i = 0; i < 4; ++i) {
          cptr.push_back(element_ptr(s->operands[0], i));
          args.push_back(b_.CreateLoad(f32_, cptr.back()));
        }
        llvm::Value* d =
            b_.CreateCall(intr(llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32), args);
        for (unsigned i = 0; i < 4; ++i) b_.CreateStore(b_.CreateExtractValue(d, {i}), cptr[i]);
        return;
      }
    }
  }

  // ---------------------------------------------------------------- math
  /// Applies a scalar float intrinsic to every lane.
  V lanewise(llvm::Intrinsic::ID id, const V& x) {
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&mod_, id);
    if (!x.vec) return {b_.CreateCall(f, {x.v}), false};
    llvm::Value* r = llvm::UndefValue::get(vec_ty(f32_));
    for (int64_t i = 0; i < lanes_; ++i) {
      llvm::Value* e = b_.CreateExtractElement(x.v, static_cast<uint64_t>(i));
      r = b_.CreateInsertElement(r, b_.CreateCall(f, {e}), static_cast<uint64_t>(i));
    }
    return {r, true};
  }
  /// Constant `c` in the (scalar or vector) float type of `like` (fp32, or fp64 for float64).
  llvm::Value* k(const V& like, double c) { return llvm::ConstantFP::get(like.v->getType(), c); }
  /// Integer constant `c` in the i64 (scalar or vector) type matching fp64 value `like`.
  llvm::Value* ki(const V& like, int64_t c) {
    return llvm::ConstantInt::get(like.vec ? vec_ty(i64_) : i64_, static_cast<uint64_t>(c), true);
  }
  static bool is_f64(const V& x) { return x.v->getType()->getScalarType()->isDoubleTy(); }
  /// 2^n for integers n in [-1022, 1023] as fp64 (the exponent field built directly).
  llvm::Value* pow2_f64(const V& like, llvm::Value* n) {
    llvm::Type* ft = like.v->getType();
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(n, ki(like, 1023)), ki(like, 52)), ft);
  }
  /// exp x in fp64 (no fp64 ex2 in PTX): n = round(x log2 e), r = x - n ln 2 in two Cody-Waite
  /// parts (|r| <= 0.35), e^r by its Taylor series to r^13 (truncation below 5e-18 relative),
  /// times 2^n as two exact powers of two (so subnormal results keep their bits); x above
  /// 709.79 gives inf, below -745.2 zero, NaN itself.
  V exp_f64(const V& x) {
    llvm::IRBuilder<>::FastMathFlagGuard exact(b_);  // no reassociation of the reduction
    b_.clearFastMathFlags();
    llvm::Value* xc = fmin(fmax(x.v, k(x, -746.0)), k(x, 710.0));
    llvm::Value* nf =
        unary_intrinsic(llvm::Intrinsic::floor,
                        b_.CreateFAdd(b_.CreateFMul(xc, k(x, 1.4426950408889634)), k(x, 0.5)));
    llvm::Value* r = b_.CreateFSub(xc, b_.CreateFMul(nf, k(x, 6.93147180369123816490e-01)));
    r = b_.CreateFSub(r, b_.CreateFMul(nf, k(x, 1.90821492927058770002e-10)));
    std::vector<double> c;
    double f = 1;
    for (int i = 0; i <= 13; ++i) {
      if (i > 0) f *= i;
      c.push_back(1.0 / f);
    }
    llvm::Value* p = poly({r, x.vec}, c);
    llvm::Value* n = b_.CreateFPToSI(nf, x.vec ? vec_ty(i64_) : i64_);
    llvm::Value* n1 = b_.CreateAShr(n, ki(x, 1));
    llvm::Value* n2 = b_.CreateSub(n, n1);
    llvm::Value* e = b_.CreateFMul(b_.CreateFMul(p, pow2_f64(x, n1)), pow2_f64(x, n2));
    e = b_.CreateSelect(b_.CreateFCmpOGT(x.v, k(x, 709.782712893384)), k(x, INFINITY), e);
    e = b_.CreateSelect(b_.CreateFCmpOLT(x.v, k(x, -745.2)), k(x, 0.0), e);
    return {b_.CreateSelect(b_.CreateFCmpUNO(x.v, x.v), x.v, e), x.vec};
  }
  /// log x in fp64: x = 2^e m with m in [sqrt(1/2), sqrt 2) from the bits (subnormals scaled by
  /// 2^54 first), log m = 2 atanh s, s = (m - 1) / (m + 1), |s| <= 0.1716, by its series to
  /// s^21 (truncation below 2e-17), plus e ln 2 in two parts; 0 gives -inf, x < 0 NaN, inf inf.
  V log_f64(const V& x) {
    llvm::IRBuilder<>::FastMathFlagGuard exact(b_);
    b_.clearFastMathFlags();
    llvm::Type* it = x.vec ? vec_ty(i64_) : i64_;
    llvm::Value* tiny = b_.CreateFCmpOLT(x.v, k(x, 2.2250738585072014e-308));
    llvm::Value* xs = b_.CreateSelect(tiny, b_.CreateFMul(x.v, k(x, 18014398509481984.0)), x.v);
    llvm::Value* bits = b_.CreateBitCast(xs, it);
    llvm::Value* e =
        b_.CreateSub(b_.CreateAnd(b_.CreateLShr(bits, ki(x, 52)), ki(x, 0x7ff)), ki(x, 1023));
    e = b_.CreateSub(e, b_.CreateSelect(tiny, ki(x, 54), ki(x, 0)));
    llvm::Value* m = b_.CreateBitCast(
        b_.CreateOr(b_.CreateAnd(bits, ki(x, 0x000FFFFFFFFFFFFFLL)), ki(x, 0x3FF0000000000000LL)),
        x.v->getType());
    llvm::Value* big = b_.CreateFCmpOGT(m, k(x, 1.4142135623730951));
    m = b_.CreateSelect(big, b_.CreateFMul(m, k(x, 0.5)), m);
    e = b_.CreateAdd(e, b_.CreateZExt(big, it));
    llvm::Value* sv = b_.CreateFDiv(b_.CreateFSub(m, k(x, 1.0)), b_.CreateFAdd(m, k(x, 1.0)));
    V s2{b_.CreateFMul(sv, sv), x.vec};
    std::vector<double> c;
    for (int i = 0; i <= 10; ++i) c.push_back(2.0 / (2 * i + 1));
    llvm::Value* lm = b_.CreateFMul(poly(s2, c), sv);
    llvm::Value* ef = b_.CreateSIToFP(e, x.v->getType());
    llvm::Value* r =
        b_.CreateFAdd(b_.CreateFMul(ef, k(x, 6.93147180369123816490e-01)),
                      b_.CreateFAdd(b_.CreateFMul(ef, k(x, 1.90821492927058770002e-10)), lm));
    r = b_.CreateSelect(b_.CreateFCmpOEQ(x.v, k(x, INFINITY)), x.v, r);
    r = b_.CreateSelect(b_.CreateFCmpOEQ(x.v, k(x, 0.0)), k(x, -INFINITY), r);
    r = b_.CreateSelect(b_.CreateFCmpOLT(x.v, k(x, 0.0)), k(x, NAN), r);
    return {b_.CreateSelect(b_.CreateFCmpUNO(x.v, x.v), x.v, r), x.vec};
  }
  /// Horner evaluation of sum coeffs[i] z^i.
  llvm::Value* poly(const V& z, const std::vector<double>& coeffs) {
    llvm::Value* r = k(z, coeffs.back());
    for (int i = static_cast<int>(coeffs.size()) - 2; i >= 0; --i)
      r = b_.CreateFAdd(b_.CreateFMul(r, z.v), k(z, coeffs[i]));
    return r;
  }
  V gpu_exp(const V& x) {
    if (is_f64(x)) return exp_f64(x);
    return lanewise(llvm::Intrinsic::nvvm_ex2_approx_f,
                    {b_.CreateFMul(x.v, k(x, 1.4426950408889634)), x.vec});
  }

  V call(L::CallOp op, const V& x) override {
    switch (op) {
      case L::CallOp::exp:
        return gpu_exp(x);
      case L::CallOp::log: {
        if (is_f64(x)) return log_f64(x);
        V l = lanewise(llvm::Intrinsic::nvvm_lg2_approx_f, x);
        return {b_.CreateFMul(l.v, k(x, 0.6931471805599453)), x.vec};
      }
      case L::CallOp::tanh: {
        // tanh x = e / (e + 2) with e = expm1(2x): a series for |2x| < 0.5 (terms to y^8 / 8!:
        // error below 1e-8 relative), exp(2x) - 1 above; |x| clamped to 9 (tanh = 1 in fp32).
        llvm::Value* xc = fmin(fmax(x.v, k(x, -9.0)), k(x, 9.0));
        V y{b_.CreateFMul(xc, k(x, 2.0)), x.vec};
        std::vector<double> c;
        double f = 1;
        for (int i = 1; i <= 8; ++i) {
          f *= i;
          c.push_back(1.0 / f);  // y^i / i!, divided by y below
        }
        llvm::Value* series = b_.CreateFMul(poly(y, c), y.v);
        llvm::Value* big = b_.CreateFSub(gpu_exp(y).v, k(x, 1.0));
        llvm::Value* small =
            b_.CreateFCmpOLT(unary_intrinsic(llvm::Intrinsic::fabs, y.v), k(x, 0.5));
        llvm::Value* e = b_.CreateSelect(small, series, big);
        return {b_.CreateFDiv(e, b_.CreateFAdd(e, k(x, 2.0))), x.vec};
      }
      case L::CallOp::erf: {
        // |x| < 1: the Taylor series 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1)), n <= 10
        // (truncation below 1.3e-8); |x| >= 1: Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7).
        llvm::Value* ax = unary_intrinsic(llvm::Intrinsic::fabs, x.v);
        V z{b_.CreateFMul(x.v, x.v), x.vec};
        std::vector<double> c;
        double fact = 1;
        for (int n = 0; n <= 10; ++n) {
          if (n > 0) fact *= n;
          c.push_back((n % 2 ? -1.0 : 1.0) * 2.0 / std::sqrt(M_PI) / (fact * (2 * n + 1)));
        }
        llvm::Value* series = b_.CreateFMul(poly(z, c), x.v);
        llvm::Value* tt =
            b_.CreateFDiv(k(x, 1.0), b_.CreateFAdd(k(x, 1.0), b_.CreateFMul(ax, k(x, 0.3275911))));
        V tv{tt, x.vec};
        llvm::Value* p =
            poly(tv, {0.0, 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429});
        llvm::Value* e = gpu_exp({b_.CreateFNeg(z.v), x.vec}).v;
        llvm::Value* tail = b_.CreateFSub(k(x, 1.0), b_.CreateFMul(p, e));
        llvm::Value* neg = b_.CreateFCmpOLT(x.v, k(x, 0.0));
        tail = b_.CreateSelect(neg, b_.CreateFNeg(tail), tail);
        llvm::Value* small = b_.CreateFCmpOLT(ax, k(x, 1.0));
        return {b_.CreateSelect(small, series, tail), x.vec};
      }
      case L::CallOp::round: {
        // Ties to even (ONNX Round) from floor: f = floor x, d = x - f (exact); d > 1/2 rounds
        // up, d < 1/2 down, d = 1/2 to the even one of f and f + 1 (llvm.roundeven would be a
        // libm call on the host emulator).
        llvm::Value* f = unary_intrinsic(llvm::Intrinsic::floor, x.v);
        llvm::Value* d = b_.CreateFSub(x.v, f);
        llvm::Value* up = b_.CreateFAdd(f, k(x, 1.0));
        llvm::Value* half_f = unary_intrinsic(llvm::Intrinsic::floor, b_.CreateFMul(f, k(x, 0.5)));
        llvm::Value* even = b_.CreateFCmpOEQ(b_.CreateFMul(half_f, k(x, 2.0)), f);
        llvm::Value* tie = b_.CreateSelect(even, f, up);
        llvm::Value* r = b_.CreateSelect(b_.CreateFCmpOGT(d, k(x, 0.5)), up, f);
        return {b_.CreateSelect(b_.CreateFCmpOEQ(d, k(x, 0.5)), tie, r), x.vec};
      }
      case L::CallOp::sin:
        return sin_quadrant(x, 0.0);
      case L::CallOp::cos:
        return sin_quadrant(x, 1.0);
      case L::CallOp::atan: {
        // atan |x| on z = min(|x|, 1/|x|) <= 1; z > tan(pi/12) is moved below it with
        // atan z = pi/6 + atan((sqrt3 z - 1) / (z + sqrt3)) (Cody & Waite, "Software Manual for
        // the Elementary Functions", ch. 11); the Taylor series to w^15 on |w| <= 0.268 (truncation
        // below 1e-10); atan |x| = pi/2 - atan(1/|x|) for |x| > 1; the sign of x restored.
        llvm::Value* ax = unary_intrinsic(llvm::Intrinsic::fabs, x.v);
        llvm::Value* inv = b_.CreateFCmpOGT(ax, k(x, 1.0));
        llvm::Value* z = b_.CreateSelect(inv, b_.CreateFDiv(k(x, 1.0), ax), ax);
        llvm::Value* far = b_.CreateFCmpOGT(z, k(x, 0.2679491924311227));
        const double r3 = 1.7320508075688772;
        llvm::Value* moved = b_.CreateFDiv(b_.CreateFSub(b_.CreateFMul(z, k(x, r3)), k(x, 1.0)),
                                           b_.CreateFAdd(z, k(x, r3)));
        llvm::Value* w = b_.CreateSelect(far, moved, z);
        V w2{b_.CreateFMul(w, w), x.vec};
        std::vector<double> c;
        for (int n = 0; n <= 7; ++n) c.push_back((n % 2 ? -1.0 : 1.0) / (2 * n + 1));
        llvm::Value* a = b_.CreateFMul(poly(w2, c), w);
        a = b_.CreateSelect(far, b_.CreateFAdd(a, k(x, M_PI / 6)), a);
        a = b_.CreateSelect(inv, b_.CreateFSub(k(x, M_PI / 2), a), a);
        llvm::Value* neg = b_.CreateFCmpOLT(x.v, k(x, 0.0));
        return {b_.CreateSelect(neg, b_.CreateFNeg(a), a), x.vec};
      }
      default:
        return LoopCodegen::call(op, x);
    }
  }

  /// sin(x + shift pi/2) (shift 0: sin, 1: cos): k = floor(x 2/pi + 1/2), r = x - k pi/2 in three
  /// Cody-Waite parts (exact products for |k| < 2^11), then sin r or cos r on |r| <= pi/4 by
  /// the Taylor series to r^13 / r^12 (truncation below 1e-11), chosen and signed by the
  /// quadrant q = (k + shift) mod 4.
  V sin_quadrant(const V& x, double shift) {
    llvm::Value* kk = unary_intrinsic(
        llvm::Intrinsic::floor, b_.CreateFAdd(b_.CreateFMul(x.v, k(x, 2.0 / M_PI)), k(x, 0.5)));
    llvm::Value* r = b_.CreateFSub(x.v, b_.CreateFMul(kk, k(x, 1.5703125)));
    r = b_.CreateFSub(r, b_.CreateFMul(kk, k(x, 4.837512969970703125e-4)));
    r = b_.CreateFSub(r, b_.CreateFMul(kk, k(x, 7.54978995489188216e-8)));
    V r2{b_.CreateFMul(r, r), x.vec};
    std::vector<double> cs, cc;  // sin r / r and cos r as series in r^2
    double f = 1;
    for (int i = 1; i <= 13; ++i) {
      f *= i;
      const double t = ((i / 2) % 2 ? -1.0 : 1.0) / f;
      if (i % 2) cs.push_back(t);
      if (i % 2 == 0) cc.push_back(t);
    }
    cc.insert(cc.begin(), 1.0);
    llvm::Value* sr = b_.CreateFMul(poly(r2, cs), r);
    llvm::Value* cr = poly(r2, cc);
    llvm::Value* q = b_.CreateFAdd(kk, k(x, shift));
    q = b_.CreateFSub(q, b_.CreateFMul(k(x, 4.0), unary_intrinsic(llvm::Intrinsic::floor,
                                                                  b_.CreateFMul(q, k(x, 0.25)))));
    llvm::Value* odd = b_.CreateOr(b_.CreateFCmpOEQ(q, k(x, 1.0)), b_.CreateFCmpOEQ(q, k(x, 3.0)));
    llvm::Value* v = b_.CreateSelect(odd, cr, sr);
    llvm::Value* negq = b_.CreateFCmpOGE(q, k(x, 2.0));
    return {b_.CreateSelect(negq, b_.CreateFNeg(v), v), x.vec};
  }
};

}  // namespace

llvm::Function* emit_gpu_kernel(llvm::Module& module, const std::string& name,
                                const std::vector<L::Buffer>& params, const L::Stmt& body) {
  GpuKernelCodegen cg(module, name);
  return cg.emit(params, body);
}

}  // namespace tessel::gpu_backend
