// The int8 matrix product kernels (see qgemm.h): LLVM IR built with IRBuilder, one function per
// path, JIT-compiled for the host once per process.
#include "compiler/backend/cpu/qgemm.h"

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <map>

#include "compiler/backend/cpu/codegen.h"
#include "compiler/backend/cpu/jit.h"
#include "compiler/support/error.h"

namespace tessel::cpu_backend {

const char* qgemm_path_name(QGemmPath p) { return p == QGemmPath::vnni ? "vnni" : "plain"; }

QGemmPath qgemm_host_path() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw")
             ? QGemmPath::vnni
             : QGemmPath::plain;
}

namespace {

constexpr int64_t kLanes = 16;  // vpdpbusd.512: 16 int32 lanes

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/// Builds one kernel function (see QGemmKernels::Fn) for `path`.
class QGemmBuilder {
 public:
  QGemmBuilder(llvm::Module& m, llvm::LLVMContext& ctx) : m_(m), ctx_(ctx), b_(ctx) {
    i8_ = b_.getInt8Ty();
    i32_ = b_.getInt32Ty();
    i64_ = b_.getInt64Ty();
    f32_ = b_.getFloatTy();
  }

  void build(const std::string& name, QGemmPath path, const CodegenTarget& target, bool int32_out) {
    auto* i8p = llvm::PointerType::getUnqual(i8_);
    auto* i32p = llvm::PointerType::getUnqual(i32_);
    auto* f32p = llvm::PointerType::getUnqual(f32_);
    auto* fty = llvm::FunctionType::get(
        b_.getVoidTy(),
        {i8p, i8p, i32p, i32p, i32p, f32p, i8p, i64_, i64_, i64_, i64_, i32_, i32_, i32_, i32_},
        false);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
    set_function_attributes(*fn_, target);
    auto arg = [&](int i) { return fn_->getArg(static_cast<unsigned>(i)); };
    llvm::Value *A = arg(0), *Bp = arg(1), *colsum = arg(2), *bzp = arg(3), *bias = arg(4),
                *scale = arg(5), *Y = arg(6), *M = arg(7), *Npad = arg(8), *Kpad = arg(9),
                *K = arg(10), *azp = arg(11), *yzp = arg(12), *qmin = arg(13), *qmax = arg(14);
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry_);
    const bool vec = path == QGemmPath::vnni;
    llvm::Type* acc_ty =
        vec ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(i32_, kLanes)) : i32_;
    llvm::Type* fv_ty =
        vec ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(f32_, kLanes)) : f32_;
    llvm::Value* rowsum_slot = b_.CreateAlloca(i32_, nullptr, "rowsum");
    llvm::Value* acc_slot = b_.CreateAlloca(acc_ty, nullptr, "acc");
    // Loop-invariant scalars.
    llvm::Value* lo = b_.CreateSIToFP(b_.CreateSub(qmin, yzp), f32_);
    llvm::Value* hi = b_.CreateSIToFP(b_.CreateSub(qmax, yzp), f32_);
    llvm::Value* k32 = b_.CreateTrunc(K, i32_);
    llvm::Value* groups = b_.CreateUDiv(Kpad, b_.getInt64(4));

    counted_loop("m", b_.getInt64(0), M, 1, [&](llvm::Value* m) {
      llvm::Value* arow = b_.CreateGEP(i8_, A, b_.CreateMul(m, Kpad));
      b_.CreateStore(b_.getInt32(0), rowsum_slot);
      counted_loop("k", b_.getInt64(0), Kpad, 1, [&](llvm::Value* k) {
        llvm::Value* a = b_.CreateZExt(b_.CreateLoad(i8_, b_.CreateGEP(i8_, arow, k)), i32_);
        b_.CreateStore(b_.CreateAdd(b_.CreateLoad(i32_, rowsum_slot), a), rowsum_slot);
      });
      counted_loop("n", b_.getInt64(0), Npad, vec ? kLanes : 1, [&](llvm::Value* n) {
        b_.CreateStore(llvm::Constant::getNullValue(acc_ty), acc_slot);
        counted_loop("g", b_.getInt64(0), groups, 1, [&](llvm::Value* g) {
          llvm::Value* boff = b_.CreateMul(b_.CreateAdd(b_.CreateMul(g, Npad), n), b_.getInt64(4));
          llvm::Value* acc = b_.CreateLoad(acc_ty, acc_slot);
          llvm::Value* a4p = b_.CreateGEP(i8_, arow, b_.CreateMul(g, b_.getInt64(4)));
          if (vec) {
            // Four A bytes broadcast to every lane; 16 columns x 4 B bytes.
            llvm::Value* a4 = b_.CreateAlignedLoad(
                i32_, b_.CreateBitCast(a4p, llvm::PointerType::getUnqual(i32_)), llvm::Align(1));
            llvm::Value* av = b_.CreateVectorSplat(kLanes, a4);
            llvm::Value* bv = b_.CreateAlignedLoad(
                acc_ty,
                b_.CreateBitCast(b_.CreateGEP(i8_, Bp, boff), llvm::PointerType::getUnqual(acc_ty)),
                llvm::Align(1));
            llvm::Function* dp =
                llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_avx512_vpdpbusd_512);
            acc = b_.CreateCall(dp, {acc, av, bv});
          } else {
            for (int j = 0; j < 4; ++j) {
              llvm::Value* a =
                  b_.CreateZExt(b_.CreateLoad(i8_, b_.CreateGEP(i8_, a4p, b_.getInt64(j))), i32_);
              llvm::Value* w = b_.CreateSExt(
                  b_.CreateLoad(i8_, b_.CreateGEP(i8_, Bp, b_.CreateAdd(boff, b_.getInt64(j)))),
                  i32_);
              acc = b_.CreateAdd(acc, b_.CreateMul(a, w));
            }
          }
          b_.CreateStore(acc, acc_slot);
        });
        // Zero-point corrections and bias (exact int32), then the requantisation.
        auto load_cols = [&](llvm::Type* elem, llvm::Value* base) -> llvm::Value* {
          llvm::Value* p = b_.CreateGEP(elem, base, n);
          if (!vec) return b_.CreateLoad(elem, p);
          llvm::Type* vt = llvm::FixedVectorType::get(elem, kLanes);
          return b_.CreateAlignedLoad(vt, b_.CreateBitCast(p, llvm::PointerType::getUnqual(vt)),
                                      llvm::Align(4));
        };
        auto splat = [&](llvm::Value* s) { return vec ? b_.CreateVectorSplat(kLanes, s) : s; };
        llvm::Value* acc = b_.CreateLoad(acc_ty, acc_slot);
        llvm::Value* cs = load_cols(i32_, colsum);
        llvm::Value* zb = load_cols(i32_, bzp);
        llvm::Value* rs = splat(b_.CreateLoad(i32_, rowsum_slot));
        llvm::Value* za = splat(azp);
        acc = b_.CreateSub(acc, b_.CreateMul(za, cs));
        acc = b_.CreateSub(acc, b_.CreateMul(zb, rs));
        acc = b_.CreateAdd(acc, b_.CreateMul(b_.CreateMul(splat(k32), za), zb));
        acc = b_.CreateAdd(acc, load_cols(i32_, bias));
        if (int32_out) {  // ConvInteger / MatMulInteger: the accumulator itself
          llvm::Value* yp =
              b_.CreateGEP(i32_, b_.CreateBitCast(Y, llvm::PointerType::getUnqual(i32_)),
                           b_.CreateAdd(b_.CreateMul(m, Npad), n));
          b_.CreateAlignedStore(acc, b_.CreateBitCast(yp, llvm::PointerType::getUnqual(acc_ty)),
                                llvm::Align(4));
          return;
        }
        llvm::Value* v = b_.CreateFMul(b_.CreateSIToFP(acc, fv_ty), load_cols(f32_, scale));
        llvm::Value* vlo = splat(lo);
        llvm::Value* vhi = splat(hi);
        v = b_.CreateSelect(b_.CreateFCmpOLT(v, vlo), vlo, v);
        v = b_.CreateSelect(b_.CreateFCmpOGT(v, vhi), vhi, v);
        llvm::Function* nb =
            llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nearbyint, {fv_ty});
        llvm::Value* q = b_.CreateAdd(b_.CreateFPToSI(b_.CreateCall(nb, {v}), acc_ty), splat(yzp));
        llvm::Type* out_ty =
            vec ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(i8_, kLanes)) : i8_;
        llvm::Value* yp = b_.CreateGEP(i8_, Y, b_.CreateAdd(b_.CreateMul(m, Npad), n));
        b_.CreateAlignedStore(b_.CreateTrunc(q, out_ty),
                              b_.CreateBitCast(yp, llvm::PointerType::getUnqual(out_ty)),
                              llvm::Align(1));
      });
    });
    b_.CreateRetVoid();
  }

  /// tessel_quantize_{u8,s8}(x f32*, scale f32*, zp i32*, y i8*, outer, dim, inner):
  /// y[(o, c, i)] = saturate(nearbyint(x / scale[c]) + zp[c]) (NaN -> zp), as QuantizeLinear.
  /// tessel_dequantize_{u8,s8,i32}(x, scale, zp, y f32*, outer, dim, inner):
  /// y = (fp32(x) - fp32(zp[c])) * scale[c], as DequantizeLinear.
  void build_linear(const std::string& name, bool quantize, DType qtype,
                    const CodegenTarget& target) {
    auto* i8p = llvm::PointerType::getUnqual(i8_);
    auto* f32p = llvm::PointerType::getUnqual(f32_);
    auto* i32p = llvm::PointerType::getUnqual(i32_);
    llvm::Type* q_elem = qtype == DType::i32 ? i32_ : i8_;
    auto* qp = llvm::PointerType::getUnqual(q_elem);
    auto* fty =
        llvm::FunctionType::get(b_.getVoidTy(),
                                {quantize ? static_cast<llvm::Type*>(f32p) : qp, f32p, i32p,
                                 quantize ? static_cast<llvm::Type*>(i8p) : f32p, i64_, i64_, i64_},
                                false);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
    set_function_attributes(*fn_, target);
    auto arg = [&](int i) { return fn_->getArg(static_cast<unsigned>(i)); };
    llvm::Value *X = arg(0), *scale = arg(1), *zp = arg(2), *Y = arg(3), *outer = arg(4),
                *dim = arg(5), *inner = arg(6);
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry_);
    const bool u8 = qtype == DType::u8;
    counted_loop("o", b_.getInt64(0), outer, 1, [&](llvm::Value* o) {
      counted_loop("c", b_.getInt64(0), dim, 1, [&](llvm::Value* c) {
        llvm::Value* s = b_.CreateLoad(f32_, b_.CreateGEP(f32_, scale, c));
        llvm::Value* z = b_.CreateLoad(i32_, b_.CreateGEP(i32_, zp, c));
        llvm::Value* base = b_.CreateMul(b_.CreateAdd(b_.CreateMul(o, dim), c), inner);
        counted_loop("i", b_.getInt64(0), inner, 1, [&](llvm::Value* i) {
          llvm::Value* idx = b_.CreateAdd(base, i);
          if (quantize) {
            llvm::Value* v = b_.CreateFDiv(b_.CreateLoad(f32_, b_.CreateGEP(f32_, X, idx)), s);
            v = b_.CreateSelect(b_.CreateFCmpORD(v, v), v, llvm::ConstantFP::get(f32_, 0.0));
            llvm::Value* lo = b_.CreateSIToFP(b_.CreateSub(b_.getInt32(u8 ? 0 : -128), z), f32_);
            llvm::Value* hi = b_.CreateSIToFP(b_.CreateSub(b_.getInt32(u8 ? 255 : 127), z), f32_);
            v = b_.CreateSelect(b_.CreateFCmpOLT(v, lo), lo, v);
            v = b_.CreateSelect(b_.CreateFCmpOGT(v, hi), hi, v);
            llvm::Function* nb =
                llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nearbyint, {f32_});
            llvm::Value* q = b_.CreateAdd(b_.CreateFPToSI(b_.CreateCall(nb, {v}), i32_), z);
            b_.CreateStore(b_.CreateTrunc(q, i8_), b_.CreateGEP(i8_, Y, idx));
          } else {
            llvm::Value* x = b_.CreateLoad(q_elem, b_.CreateGEP(q_elem, X, idx));
            llvm::Value* xf = u8 ? b_.CreateUIToFP(x, f32_) : b_.CreateSIToFP(x, f32_);
            llvm::Value* v = b_.CreateFMul(b_.CreateFSub(xf, b_.CreateSIToFP(z, f32_)), s);
            b_.CreateStore(v, b_.CreateGEP(f32_, Y, idx));
          }
        });
      });
    });
    b_.CreateRetVoid();
  }

 private:
  /// for (iv = start; iv < end; iv += step) body(iv), the induction variable in an entry-block
  /// alloca (promoted to a register by LLVM's pipeline).
  void counted_loop(const std::string& name, llvm::Value* start, llvm::Value* end, int64_t step,
                    const std::function<void(llvm::Value*)>& body) {
    llvm::IRBuilder<> eb(entry_, entry_->begin());
    llvm::Value* slot = eb.CreateAlloca(i64_, nullptr, name);
    b_.CreateStore(start, slot);
    auto* cond = llvm::BasicBlock::Create(ctx_, name + ".cond", fn_);
    auto* loop = llvm::BasicBlock::Create(ctx_, name + ".body", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, name + ".done", fn_);
    b_.CreateBr(cond);
    b_.SetInsertPoint(cond);
    llvm::Value* iv = b_.CreateLoad(i64_, slot);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, end), loop, done);
    b_.SetInsertPoint(loop);
    body(iv);
    b_.CreateStore(b_.CreateAdd(b_.CreateLoad(i64_, slot), b_.getInt64(step)), slot);
    b_.CreateBr(cond);
    b_.SetInsertPoint(done);
  }

  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::Type *i8_, *i32_, *i64_, *f32_;
};

int64_t load_int(const Tensor& t, int64_t i) { return static_cast<int64_t>(t.get_as_double(i)); }

bool is_8bit(DType d) { return d == DType::u8 || d == DType::i8; }

/// The module with the plain kernel and, on a VNNI host, the vnni one.
std::unique_ptr<llvm::Module> qgemm_module(llvm::LLVMContext& ctx) {
  auto mod = std::make_unique<llvm::Module>("tessel_qgemm", ctx);
  QGemmBuilder qb(*mod, ctx);
  CodegenTarget target = CodegenTarget::host(16);
  CodegenTarget plain = target;
  // The plain path is what a host without VNNI runs: the host's features minus AVX-VNNI.
  plain.features += (plain.features.empty() ? "" : ",") + std::string("-avx512vnni,-avxvnni");
  qb.build_linear("tessel_quantize_u8", true, DType::u8, target);
  qb.build_linear("tessel_quantize_s8", true, DType::i8, target);
  qb.build_linear("tessel_dequantize_u8", false, DType::u8, target);
  qb.build_linear("tessel_dequantize_s8", false, DType::i8, target);
  qb.build_linear("tessel_dequantize_i32", false, DType::i32, target);
  for (bool i32 : {false, true}) {
    const std::string suffix = i32 ? "_i32" : "";
    qb.build("tessel_qgemm_plain" + suffix, QGemmPath::plain, plain, i32);
    if (qgemm_host_path() == QGemmPath::vnni)
      qb.build("tessel_qgemm_vnni" + suffix, QGemmPath::vnni, target, i32);
  }
  return mod;
}

}  // namespace

std::string qgemm_assembly() {
  llvm::LLVMContext ctx;
  auto mod = qgemm_module(ctx);
  auto tm = host_target_machine(false, 3);
  optimize_module(*mod, *tm, 3);
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_AssemblyFile))
    fail("cpu backend: LLVM cannot emit assembly for this target");
  pm.run(*mod);
  return std::string(buf.begin(), buf.end());
}

QGemmKernels::QGemmKernels() {
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto mod = qgemm_module(*ctx);
  jit_ = host_jit(std::move(mod), std::move(ctx), {});
  for (const char* n : {"tessel_quantize_u8", "tessel_quantize_s8", "tessel_dequantize_u8",
                        "tessel_dequantize_s8", "tessel_dequantize_i32"})
    linear_[n] = jit_lookup(*jit_, n);
  for (int i32 = 0; i32 < 2; ++i32) {
    const std::string suffix = i32 ? "_i32" : "";
    plain_[i32] = reinterpret_cast<Fn>(jit_lookup(*jit_, "tessel_qgemm_plain" + suffix));
    if (qgemm_host_path() == QGemmPath::vnni)
      vnni_[i32] = reinterpret_cast<Fn>(jit_lookup(*jit_, "tessel_qgemm_vnni" + suffix));
  }
}

QGemmKernels::~QGemmKernels() = default;

const QGemmKernels& QGemmKernels::get() {
  static const QGemmKernels kernels;
  return kernels;
}

QGemmWeights pack_qgemm_weights(const Tensor& b, const Tensor& b_zp) {
  if (b.rank() != 2 || !is_8bit(b.dtype()))
    fail("qgemm: B must be a 2-D u8 or s8 tensor, got {}{}", dtype_to_string(b.dtype()),
         shape_to_string(b.shape()));
  QGemmWeights w;
  w.K = b.shape()[0];
  w.N = b.shape()[1];
  w.Kpad = round_up(std::max<int64_t>(w.K, 1), 4);
  w.Npad = round_up(std::max<int64_t>(w.N, 1), kLanes);
  if (b_zp.numel() != 1 && b_zp.numel() != w.N)
    fail("qgemm: b_zero_point has {} elements (expected 1 or {})", b_zp.numel(), w.N);
  // A u8 B is offset by -128 so that it fits vpdpbusd's signed operand.
  const int64_t shift = b.dtype() == DType::u8 ? -128 : 0;
  w.packed.assign(static_cast<size_t>(w.Kpad / 4 * w.Npad * 4), 0);
  w.col_sum.assign(static_cast<size_t>(w.Npad), 0);
  w.zero_point.assign(static_cast<size_t>(w.Npad), 0);
  for (int64_t n = 0; n < w.N; ++n)
    w.zero_point[n] = static_cast<int32_t>(load_int(b_zp, b_zp.numel() == 1 ? 0 : n) + shift);
  for (int64_t k = 0; k < w.K; ++k)
    for (int64_t n = 0; n < w.N; ++n) {
      const int64_t v = load_int(b, k * w.N + n) + shift;
      w.packed[static_cast<size_t>(((k / 4) * w.Npad + n) * 4 + k % 4)] = static_cast<int8_t>(v);
      w.col_sum[n] += static_cast<int32_t>(v);
    }
  return w;
}

namespace {

/// The kernel on A (M x K) and B (K x N): requantised to `out` (u8/s8) with per-column `scale`
/// and `y_zp`, or the int32 accumulators when `out` is i32 (scale and y_zp unused).
Tensor run_qgemm(const Tensor& a, const Tensor& a_zp, const Tensor& b, const Tensor& b_zp,
                 const std::vector<float>& scale, int64_t y_zp, DType out, const Tensor* bias,
                 QGemmPath path, double* kernel_seconds) {
  if (a.rank() != 2 || !is_8bit(a.dtype()))
    fail("qgemm: A must be a 2-D u8 or s8 tensor, got {}{}", dtype_to_string(a.dtype()),
         shape_to_string(a.shape()));
  const QGemmWeights w = pack_qgemm_weights(b, b_zp);
  const int64_t M = a.shape()[0];
  if (a.shape()[1] != w.K)
    fail("qgemm: A is {} but B is {}", shape_to_string(a.shape()), shape_to_string(b.shape()));
  if (a_zp.numel() != 1) fail("qgemm: a's zero point must be per tensor");
  if (bias && bias->numel() != w.N)
    fail("qgemm: bias has {} elements, expected {}", bias->numel(), w.N);
  // An s8 A is offset by +128 (vpdpbusd's unsigned operand), its zero point with it.
  const int64_t a_shift = a.dtype() == DType::i8 ? 128 : 0;
  std::vector<uint8_t> ap(static_cast<size_t>(M * w.Kpad), 0);
  const auto* araw = reinterpret_cast<const uint8_t*>(a.raw());
  const uint8_t flip = a_shift ? 0x80 : 0;  // s8 + 128 as u8 = the bits with the sign flipped
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < w.K; ++k)
      ap[static_cast<size_t>(m * w.Kpad + k)] = araw[m * w.K + k] ^ flip;
  std::vector<int32_t> bv(static_cast<size_t>(w.Npad), 0);
  std::vector<float> sv(static_cast<size_t>(w.Npad), 0.0f);
  for (int64_t n = 0; n < w.N; ++n) {
    if (bias) bv[n] = static_cast<int32_t>(load_int(*bias, n));
    if (!scale.empty()) sv[n] = scale[scale.size() == 1 ? 0 : n];
  }
  const bool int32_out = out == DType::i32;
  const int32_t qmin = out == DType::u8 ? 0 : -128, qmax = out == DType::u8 ? 255 : 127;
  const size_t es = int32_out ? 4 : 1;
  std::vector<uint8_t> yp(static_cast<size_t>(M * w.Npad) * es);
  const QGemmKernels::Fn fn = QGemmKernels::get().fn(path, int32_out);
  if (!fn) fail("qgemm: this host has no {} path (AVX-512 VNNI)", qgemm_path_name(path));
  const auto t0 = std::chrono::steady_clock::now();
  fn(ap.data(), w.packed.data(), w.col_sum.data(), w.zero_point.data(), bv.data(), sv.data(),
     yp.data(), M, w.Npad, w.Kpad, w.K, static_cast<int32_t>(load_int(a_zp, 0) + a_shift),
     static_cast<int32_t>(y_zp), qmin, qmax);
  if (kernel_seconds)
    *kernel_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Tensor y(out, {M, w.N});
  for (int64_t m = 0; m < M; ++m)
    std::copy_n(yp.data() + m * w.Npad * es, w.N * es,
                reinterpret_cast<uint8_t*>(y.raw()) + m * w.N * es);
  return y;
}

}  // namespace

Tensor qlinear_matmul_cpu(const Tensor& a, const Tensor& a_scale, const Tensor& a_zp,
                          const Tensor& b, const Tensor& b_scale, const Tensor& b_zp,
                          const Tensor& y_scale, const Tensor& y_zp, const Tensor* bias,
                          QGemmPath path, double* kernel_seconds) {
  if (!is_8bit(y_zp.dtype())) fail("qgemm: y_zero_point must be u8 or s8");
  if (a_scale.numel() != 1 || y_scale.numel() != 1 || y_zp.numel() != 1)
    fail("qgemm: a and y scales and y's zero point must be per tensor");
  const int64_t N = b.rank() == 2 ? b.shape()[1] : 0;
  if (b_scale.numel() != 1 && b_scale.numel() != N)
    fail("qgemm: b_scale has {} elements (expected 1 or {})", b_scale.numel(), N);
  const float as = a_scale.data<float>()[0], ys = y_scale.data<float>()[0];
  std::vector<float> scale;
  for (int64_t n = 0; n < b_scale.numel(); ++n)
    scale.push_back(as * b_scale.data<float>()[n] / ys);  // fp32, in ORT's order
  return run_qgemm(a, a_zp, b, b_zp, scale, load_int(y_zp, 0), y_zp.dtype(), bias, path,
                   kernel_seconds);
}

Tensor matmul_integer_cpu(const Tensor& a, const Tensor& a_zp, const Tensor& b, const Tensor& b_zp,
                          QGemmPath path, double* kernel_seconds) {
  return run_qgemm(a, a_zp, b, b_zp, {}, 0, DType::i32, nullptr, path, kernel_seconds);
}

namespace {
/// Elements [from, from + n) of a per-tensor (1 element) or per-channel parameter, as a tensor of
/// n elements (per tensor: the one element, n == 1 then).
Tensor param_slice(const Tensor& t, int64_t from, int64_t n) {
  if (t.numel() == 1) return t.reshaped({});
  Tensor out(t.dtype(), {n});
  const size_t es = dtype_size(t.dtype());
  std::copy_n(t.raw() + from * es, n * es, out.raw());
  return n == 1 ? out.reshaped({}) : out;
}
}  // namespace

namespace {

/// The im2col driver of both convolutions: per image and group, the windows of x as rows (padded
/// with x's zero point) times the group's weights as K x Mg columns through `product(a, b, gi)`
/// (which returns P x Mg elements of `out`), written back NCHW.
Tensor conv_via_qgemm(const Tensor& x, const Tensor& x_zp, const Tensor& w, const Tensor& w_zp,
                      const QConvGeometry& g, DType out,
                      const std::function<Tensor(const Tensor&, const Tensor&, int64_t)>& product) {
  if (x.rank() != 4 || w.rank() != 4)
    fail("qconv: x and w must be 4-D (NCHW, MCkk), got {} and {}", shape_to_string(x.shape()),
         shape_to_string(w.shape()));
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t M = w.shape()[0], Cg = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  if (g.group < 1 || C != Cg * g.group || M % g.group != 0)
    fail("qconv: {} input channels, weight {} and group {} do not agree", C,
         shape_to_string(w.shape()), g.group);
  if (w_zp.numel() != 1 && w_zp.numel() != M)
    fail("qconv: w_zero_point has {} elements (expected 1 or {})", w_zp.numel(), M);
  const int64_t sh = g.strides[0], sw = g.strides[1], dh = g.dilations[0], dw = g.dilations[1];
  const int64_t pt = g.pads[0], pl = g.pads[1], pb = g.pads[2], pr = g.pads[3];
  const int64_t OH = (H + pt + pb - ((KH - 1) * dh + 1)) / sh + 1;
  const int64_t OW = (W + pl + pr - ((KW - 1) * dw + 1)) / sw + 1;
  if (OH < 1 || OW < 1) fail("qconv: empty output");
  const int64_t Mg = M / g.group, K = Cg * KH * KW, P = OH * OW;
  const size_t es = 1;  // 8-bit elements
  const int64_t pad_value = load_int(x_zp, 0);
  Tensor y(out, {N, M, OH, OW});
  const size_t oes = dtype_size(out);
  for (int64_t gi = 0; gi < g.group; ++gi) {
    // B = the group's weights as K x Mg (column j = output channel gi*Mg + j).
    Tensor b(w.dtype(), {K, Mg});
    for (int64_t j = 0; j < Mg; ++j)
      for (int64_t k = 0; k < K; ++k) b.raw()[k * Mg + j] = w.raw()[(gi * Mg + j) * K + k];
    for (int64_t n = 0; n < N; ++n) {
      Tensor a(x.dtype(), {P, K});
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow)
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j) {
                const int64_t ih = oh * sh - pt + i * dh, iw = ow * sw - pl + j * dw;
                const int64_t k = (c * KH + i) * KW + j, row = oh * OW + ow;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                  a.raw()[(row * K + k) * es] = static_cast<std::byte>(pad_value & 0xff);
                else
                  a.raw()[(row * K + k) * es] =
                      x.raw()[(((n * C) + gi * Cg + c) * H + ih) * W + iw];
              }
      const Tensor r = product(a, b, gi);
      for (int64_t p = 0; p < P; ++p)
        for (int64_t j = 0; j < Mg; ++j)
          std::copy_n(r.raw() + (p * Mg + j) * oes, oes,
                      y.raw() + (((n * M) + gi * Mg + j) * P + p) * oes);
    }
  }
  return y;
}

}  // namespace

Tensor qlinear_conv_cpu(const Tensor& x, const Tensor& x_scale, const Tensor& x_zp, const Tensor& w,
                        const Tensor& w_scale, const Tensor& w_zp, const Tensor& y_scale,
                        const Tensor& y_zp, const Tensor* bias, const QConvGeometry& g,
                        QGemmPath path, double* kernel_seconds) {
  if (w.rank() != 4) fail("qconv: w must be 4-D, got {}", shape_to_string(w.shape()));
  const int64_t M = w.shape()[0], Mg = M / std::max<int64_t>(g.group, 1);
  if (w_scale.numel() != 1 && w_scale.numel() != M)
    fail("qconv: w_scale has {} elements (expected 1 or {})", w_scale.numel(), M);
  if (bias && bias->numel() != M) fail("qconv: B has {} elements, expected {}", bias->numel(), M);
  return conv_via_qgemm(
      x, x_zp, w, w_zp, g, y_zp.dtype(), [&](const Tensor& a, const Tensor& b, int64_t gi) {
        Tensor bias_g;
        if (bias) bias_g = param_slice(*bias, gi * Mg, Mg).reshaped({Mg});
        return qlinear_matmul_cpu(a, x_scale, x_zp, b, param_slice(w_scale, gi * Mg, Mg),
                                  param_slice(w_zp, gi * Mg, Mg), y_scale, y_zp,
                                  bias ? &bias_g : nullptr, path, kernel_seconds);
      });
}

Tensor conv_integer_cpu(const Tensor& x, const Tensor& x_zp, const Tensor& w, const Tensor& w_zp,
                        const QConvGeometry& g, QGemmPath path, double* kernel_seconds) {
  if (w.rank() != 4) fail("qconv: w must be 4-D, got {}", shape_to_string(w.shape()));
  const int64_t Mg = w.shape()[0] / std::max<int64_t>(g.group, 1);
  return conv_via_qgemm(
      x, x_zp, w, w_zp, g, DType::i32, [&](const Tensor& a, const Tensor& b, int64_t gi) {
        return matmul_integer_cpu(a, x_zp, b, param_slice(w_zp, gi * Mg, Mg), path, kernel_seconds);
      });
}

namespace {

/// outer x dim x inner of `x` for per-axis parameters of `count` entries along `axis` (1 entry:
/// dim 1, every element inner).
std::array<int64_t, 3> axis_split(const Tensor& x, int64_t count, int64_t axis) {
  if (count == 1) return {1, 1, x.numel()};
  const int64_t rank = x.rank();
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || x.shape()[axis] != count)
    fail("quantize: a parameter of {} entries does not match axis {} of {}", count, axis,
         shape_to_string(x.shape()));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape()[d];
  return {outer, count, inner};
}

std::vector<int32_t> zero_points(const Tensor* zp, int64_t count) {
  std::vector<int32_t> z(static_cast<size_t>(count), 0);
  if (zp)
    for (int64_t c = 0; c < count; ++c)
      z[c] = static_cast<int32_t>(load_int(*zp, zp->numel() == 1 ? 0 : c));
  return z;
}

}  // namespace

Tensor quantize_linear_cpu(const Tensor& x, const Tensor& scale, const Tensor* zp, int64_t axis) {
  if (x.dtype() != DType::f32 || scale.dtype() != DType::f32)
    fail("quantize: x and scale must be f32");
  const DType out = zp ? zp->dtype() : DType::u8;
  if (!is_8bit(out)) fail("quantize: the zero point must be u8 or s8");
  const auto [outer, dim, inner] = axis_split(x, scale.numel(), axis);
  const auto z = zero_points(zp, dim);
  Tensor y(out, x.shape());
  using Fn =
      void (*)(const float*, const float*, const int32_t*, uint8_t*, int64_t, int64_t, int64_t);
  reinterpret_cast<Fn>(
      QGemmKernels::get().linear(out == DType::u8 ? "tessel_quantize_u8" : "tessel_quantize_s8"))(
      x.data<float>(), scale.data<float>(), z.data(), reinterpret_cast<uint8_t*>(y.raw()), outer,
      dim, inner);
  return y;
}

Tensor dequantize_linear_cpu(const Tensor& x, const Tensor& scale, const Tensor* zp, int64_t axis) {
  if (!is_8bit(x.dtype()) && x.dtype() != DType::i32) fail("dequantize: x must be u8, s8 or i32");
  if (scale.dtype() != DType::f32) fail("dequantize: scale must be f32");
  const auto [outer, dim, inner] = axis_split(x, scale.numel(), axis);
  const auto z = zero_points(zp, dim);
  Tensor y(DType::f32, x.shape());
  using Fn = void (*)(const void*, const float*, const int32_t*, float*, int64_t, int64_t, int64_t);
  const char* name = x.dtype() == DType::u8   ? "tessel_dequantize_u8"
                     : x.dtype() == DType::i8 ? "tessel_dequantize_s8"
                                              : "tessel_dequantize_i32";
  reinterpret_cast<Fn>(QGemmKernels::get().linear(name))(x.raw(), scale.data<float>(), z.data(),
                                                         y.data<float>(), outer, dim, inner);
  return y;
}

}  // namespace tessel::cpu_backend
