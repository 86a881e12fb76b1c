// Expressions shared by the tensor-expression language (compiler/te) and the loop IR
// (compiler/loop/loop.h): integer index arithmetic over loop variables and fp32 value arithmetic
// over buffer/tensor reads.
//
// Nodes are immutable and shared (Expr = shared_ptr<const ExprNode>). Integer expressions
// (is_float == false) compute indices and conditions; float expressions compute tensor values in
// fp32 (the precision of the reference semantics; targets round to their storage dtype).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/tensor.h"

namespace tessel::te {
struct TensorNode;
}

namespace tessel::loop {

struct BufferNode;
using Buffer = std::shared_ptr<BufferNode>;

/// A loop/iteration variable. Identity is the pointer; `name` is for printing.
struct VarNode {
  std::string name;
  int64_t id = 0;  // unique per process, for deterministic ordering
};
using Var = std::shared_ptr<const VarNode>;

/// Creates a fresh variable named `name`.
Var make_var(const std::string& name);

enum class ExprKind : uint8_t {
  Int,     // integer constant
  Float,   // fp32 constant
  VarRef,  // a loop variable (integer)
  Add,
  Sub,
  Mul,
  Min,
  Max,  // int or float by operands
  FloorDiv,
  FloorMod,  // integer, divisor a positive constant
  Div,       // float division
  Lt,
  Le,
  Eq,
  Ne,
  And,
  Or,          // integer 0/1 conditions
  Select,      // args: cond, then, else
  Call,        // unary math on float: args[0]
  Load,        // buffer element: buffer + args = indices
  TensorRead,  // te tensor element: tensor + args = indices
  Reduce,      // te only: combiner over reduce_axes of args[0]
};

/// Unary math functions (fp32). floor, ceil and round (to nearest, ties to even: ONNX Round)
/// give integral values; sin, cos (radians) and atan (in [-pi/2, pi/2]) as in C.
enum class CallOp : uint8_t {
  exp,
  log,
  sqrt,
  rsqrt,
  recip,
  abs,
  neg,
  relu,
  sigmoid,
  tanh,
  erf,
  floor,
  ceil,
  round,
  sin,
  cos,
  atan
};

/// Reduction combiners with their identities: sum 0, max -inf, min +inf.
enum class ReduceOp : uint8_t { sum, max, min };

/// A reduction axis of a tensor expression: variable and extent.
struct IterVar {
  Var var;
  int64_t extent = 0;
};

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind = ExprKind::Int;
  bool is_float = false;
  int64_t int_value = 0;
  double float_value = 0;
  Var var;                                       // VarRef
  CallOp call = CallOp::exp;                     // Call
  std::vector<Expr> args;                        // operands / indices
  Buffer buffer;                                 // Load
  std::shared_ptr<const te::TensorNode> tensor;  // TensorRead
  bool padded = false;  // Load/TensorRead: out-of-range reads give pad_value
  double pad_value = 0;
  ReduceOp reduce_op = ReduceOp::sum;  // Reduce
  std::vector<IterVar> reduce_axes;    // Reduce
};

// ---- constructors (with light constant folding of integer arithmetic) ----
Expr int_imm(int64_t v);
Expr float_imm(double v);
Expr var_ref(const Var& v);
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr floordiv(Expr a, int64_t divisor);
Expr floormod(Expr a, int64_t divisor);
Expr fdiv(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr le(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr logical_and(Expr a, Expr b);
Expr logical_or(Expr a, Expr b);
Expr select(Expr cond, Expr then_value, Expr else_value);
Expr call(CallOp op, Expr a);
/// A read of `buffer` at `indices`; padded: indices outside the buffer shape read `pad_value`.
Expr load(const Buffer& buffer, std::vector<Expr> indices, bool padded = false,
          double pad_value = 0);
/// A reduction of `source` over `axes`.
Expr reduce(ReduceOp op, Expr source, std::vector<IterVar> axes);

/// Identity of a reduction combiner (0, -inf, +inf).
double reduce_identity(ReduceOp op);

const char* call_name(CallOp op);
const char* reduce_name(ReduceOp op);

/// Prints an expression in the loop IR text syntax.
std::string to_string(const Expr& e);

/// An affine integer form: constant + sum(coeff[v] * v).
struct Affine {
  int64_t constant = 0;
  std::map<const VarNode*, int64_t> coeffs;  // zero coefficients are never stored
  int64_t coeff(const VarNode* v) const {
    auto it = coeffs.find(v);
    return it == coeffs.end() ? 0 : it->second;
  }
  bool is_constant() const { return coeffs.empty(); }
};

/// The affine form of an integer expression, or nullopt if it is not affine (e.g. floordiv of a
/// variable, a product of two variables, min/max).
std::optional<Affine> to_affine(const Expr& e);
/// Rebuilds an expression from an affine form (variables looked up in `vars` by node pointer).
Expr from_affine(const Affine& a, const std::map<const VarNode*, Var>& vars);

/// Substitutes variables by expressions.
Expr substitute(const Expr& e, const std::map<const VarNode*, Expr>& subst);

/// Evaluates an integer expression with the given variable values; throws InternalError on a
/// variable without value or a non-integer node.
int64_t eval_int(const Expr& e, const std::map<const VarNode*, int64_t>& values);

/// Inclusive integer interval.
struct Interval {
  int64_t lo = 0, hi = 0;
};

/// Bounds of an integer expression given inclusive bounds of its variables (interval arithmetic,
/// exact for affine expressions). Throws InternalError on an unbounded variable.
Interval bound_of(const Expr& e, const std::map<const VarNode*, Interval>& var_bounds);

/// The element type of a value expression (tensor data, as opposed to index arithmetic):
/// `leaf` gives the type of a Load/TensorRead; immediates and index expressions are untyped
/// (nullopt: they take the type of the operand they meet); arithmetic, Call, Reduce and Select
/// take their first typed value operand's type; comparisons and And/Or of typed operands are
/// bool. Used to type integer and bool kernels (compiler/te compute stages, the NPU vector
/// tensorizer); a float kernel types as float throughout.
std::optional<DType> value_dtype(const Expr& e,
                                 const std::function<std::optional<DType>(const ExprNode&)>& leaf);

/// Calls `fn` on every node of `e` (pre-order).
void visit_expr(const Expr& e, const std::function<void(const ExprNode&)>& fn);

}  // namespace tessel::loop
