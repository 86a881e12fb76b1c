// LoopCodegen: the loop IR -> LLVM IR machinery shared by the CPU backend (codegen.h) and the GPU
// backend (compiler/backend/gpu/codegen.h).
//
// One object emits the body of one LLVM function. It evaluates integer index expressions (i64),
// conditions (i1) and fp32 value expressions, loads and stores buffer elements, and emits the
// target-independent statements and loop kinds:
//   seq / store / if            the obvious code; a + b * c becomes llvm.fmuladd
//   for (serial)                a counted loop (i64 induction variable)
//   for (unrolled)              the body once per iteration with the variable a constant
//   for (vectorized)            the body once with the variable the lane index 0..W-1: accesses
//                               with unit stride in it become vector loads/stores, stride 0 scalar
//                               loads, loads of stride 2..4 contiguous masked loads + a
//                               de-interleaving shuffle, other strides gathers/scatters; padded
//                               and select-guarded loads become masked loads; an if whose
//                               condition differs between lanes masks the stores (and their
//                               loads) inside it (llvm.masked.store / masked scatter)
// Buffers hold fp32 or fp16 elements (fp16 is widened to fp32 on load and rounded to nearest
// even on store). A target derives from it and supplies what differs: the function and its
// parameters, allocations, the other loop kinds and statements, math functions it cannot take
// from LLVM intrinsics, and the alignment it can prove for vector accesses.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/loop/loop.h"

namespace tessel::cpu_backend {

class LoopCodegen {
 public:
  /// `target` names the backend in error messages ("cpu", "gpu").
  LoopCodegen(llvm::Module& m, std::string name, std::string target);
  virtual ~LoopCodegen() = default;

 protected:
  /// A value in scalar or vector form.
  struct V {
    llvm::Value* v = nullptr;
    bool vec = false;
  };

  llvm::Module& mod_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  std::string name_;
  std::string target_name_;
  llvm::Type *f32_, *f16_, *i64_, *i32_, *i1_;
  llvm::PointerType *f32p_, *i8p_;
  llvm::Function* fn_ = nullptr;  // the function being emitted
  /// allocation -> pointer to its first element (any element type: base_of casts)
  std::map<const loop::BufferNode*, llvm::Value*> base_;
  std::map<const loop::VarNode*, llvm::Value*> vars_;      // loop variables (i64)
  std::map<const loop::VarNode*, loop::Interval> bounds_;  // their ranges
  const loop::VarNode* lane_ = nullptr;                    // vectorized loop variable
  int64_t lanes_ = 0;
  llvm::Value* mask_ = nullptr;  // <lanes x i1> inside an if whose condition varies by lane

  static std::string sanitize(const std::string& s);
  [[noreturn]] void unsupported(const std::string& what) const;

  // ---- hooks ----
  /// Statements other than seq / store / allocate / if / for.
  virtual void emit_other_stmt(const loop::Stmt& s);
  /// Loops other than serial / unrolled / vectorized (default: serial).
  virtual void emit_other_for(const loop::Stmt& s);
  /// An allocation and the statements inside it: binds base_ for s->buffer, emits s->body.
  virtual void emit_allocate(const loop::Stmt& s) = 0;
  /// fp32 math (default: LLVM intrinsics; tanh and erf have none, a target must supply them).
  virtual V call(loop::CallOp op, const V& x);
  /// Whether the code may store into a buffer of `scope`.
  virtual bool storable(loop::MemScope scope) const { return scope == loop::MemScope::host; }
  /// Alignment of a vector access of lanes_ elements of `buf` starting at element offset
  /// `first` from its allocation (default: one element).
  virtual llvm::Align vector_alignment(const loop::BufferNode& buf, const loop::Expr& first);

  // ---- types and constants ----
  llvm::Type* vec_ty(llvm::Type* t) const;
  llvm::Type* elem_ty(DType dt) const;
  llvm::Value* splat(llvm::Value* v);
  llvm::Value* as_vec(const V& x);
  llvm::Value* i64c(int64_t v);
  llvm::Value* f32c(double v);
  V bin(const V& a, const V& c, const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& f);
  llvm::Value* unary_intrinsic(llvm::Intrinsic::ID id, llvm::Value* x);
  llvm::Value* fmax(llvm::Value* x, llvm::Value* y);
  llvm::Value* fmin(llvm::Value* x, llvm::Value* y);

  // ---- expressions ----
  bool nonnegative(const loop::Expr& e);
  V eval_int(const loop::Expr& e);
  V eval_cond(const loop::Expr& e, const V* guard = nullptr);
  /// Float value of `e`; loads under `guard` (a select condition) read nothing where it is false.
  V eval_float(const loop::Expr& e, const V* guard = nullptr);

  // ---- memory ----
  /// Pointer to element 0 of `buf`'s allocation, typed by its dtype.
  llvm::Value* base_of(const loop::Buffer& buf);
  V in_bounds(const loop::Buffer& buf, const std::vector<loop::Expr>& idx);
  /// Loads buf[idx] as fp32; where `mask` (optional) is false the result is `pad` and nothing is
  /// read.
  V load(const loop::Buffer& buf, const std::vector<loop::Expr>& idx, const V* mask, double pad);
  V strided_load(llvm::Value* ptr, llvm::Type* et, int64_t stride, const V* mask,
                 llvm::Value* passthru);
  void store(const loop::Buffer& buf, const std::vector<loop::Expr>& idx, const V& value);

  // ---- statements ----
  llvm::AllocaInst* entry_alloca(llvm::Type* ty, const std::string& name);
  void emit_stmt(const loop::Stmt& s);
  void emit_for(const loop::Stmt& s);
  /// for v in [begin, end): body, v known to lie in [0, max_value]. `may_be_empty`: begin < end
  /// is checked before the first iteration (else at least one iteration is known).
  void emit_serial(const loop::VarNode* var, llvm::Value* begin, llvm::Value* end,
                   int64_t max_value, bool may_be_empty, const loop::Stmt& body);
};

}  // namespace tessel::cpu_backend
