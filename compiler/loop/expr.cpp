// Expression constructors, affine analysis, interval bounds and printing.
#include "compiler/loop/expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <limits>

#include "compiler/loop/loop.h"
#include "compiler/support/error.h"

namespace tessel::loop {

namespace {

std::atomic<int64_t> next_var_id{1};

Expr make(ExprKind kind, bool is_float, std::vector<Expr> args) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->is_float = is_float;
  n->args = std::move(args);
  return n;
}

bool is_int_const(const Expr& e, int64_t* v = nullptr) {
  if (e->kind != ExprKind::Int) return false;
  if (v) *v = e->int_value;
  return true;
}

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floormod_i(int64_t a, int64_t b) { return a - floordiv_i(a, b) * b; }

Expr binary(ExprKind kind, Expr a, Expr b) {
  TESSEL_CHECK(a && b, "null operand");
  const bool is_float = a->is_float || b->is_float;
  return make(kind, is_float, {std::move(a), std::move(b)});
}

}  // namespace

Var make_var(const std::string& name) {
  auto v = std::make_shared<VarNode>();
  v->name = name;
  v->id = next_var_id++;
  return v;
}

Expr int_imm(int64_t v) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Int;
  n->int_value = v;
  return n;
}

Expr float_imm(double v) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Float;
  n->is_float = true;
  n->float_value = v;
  return n;
}

Expr var_ref(const Var& v) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::VarRef;
  n->var = v;
  return n;
}

Expr add(Expr a, Expr b) {
  int64_t x, y;
  if (is_int_const(a, &x) && is_int_const(b, &y)) return int_imm(x + y);
  if (is_int_const(a, &x) && x == 0 && !b->is_float) return b;
  if (is_int_const(b, &y) && y == 0 && !a->is_float) return a;
  return binary(ExprKind::Add, std::move(a), std::move(b));
}

Expr sub(Expr a, Expr b) {
  int64_t x, y;
  if (is_int_const(a, &x) && is_int_const(b, &y)) return int_imm(x - y);
  if (is_int_const(b, &y) && y == 0 && !a->is_float) return a;
  return binary(ExprKind::Sub, std::move(a), std::move(b));
}

Expr mul(Expr a, Expr b) {
  int64_t x, y;
  if (is_int_const(a, &x) && is_int_const(b, &y)) return int_imm(x * y);
  if (!a->is_float && !b->is_float) {
    if ((is_int_const(a, &x) && x == 0) || (is_int_const(b, &y) && y == 0)) return int_imm(0);
    if (is_int_const(a, &x) && x == 1) return b;
    if (is_int_const(b, &y) && y == 1) return a;
  }
  return binary(ExprKind::Mul, std::move(a), std::move(b));
}

Expr min(Expr a, Expr b) {
  int64_t x, y;
  if (is_int_const(a, &x) && is_int_const(b, &y)) return int_imm(std::min(x, y));
  return binary(ExprKind::Min, std::move(a), std::move(b));
}

Expr max(Expr a, Expr b) {
  int64_t x, y;
  if (is_int_const(a, &x) && is_int_const(b, &y)) return int_imm(std::max(x, y));
  return binary(ExprKind::Max, std::move(a), std::move(b));
}

Expr floordiv(Expr a, int64_t divisor) {
  TESSEL_CHECK(divisor > 0, "floordiv by {}", divisor);
  int64_t x;
  if (is_int_const(a, &x)) return int_imm(floordiv_i(x, divisor));
  if (divisor == 1) return a;
  return binary(ExprKind::FloorDiv, std::move(a), int_imm(divisor));
}

Expr floormod(Expr a, int64_t divisor) {
  TESSEL_CHECK(divisor > 0, "floormod by {}", divisor);
  int64_t x;
  if (is_int_const(a, &x)) return int_imm(floormod_i(x, divisor));
  if (divisor == 1) return int_imm(0);
  return binary(ExprKind::FloorMod, std::move(a), int_imm(divisor));
}

Expr fdiv(Expr a, Expr b) { return make(ExprKind::Div, true, {std::move(a), std::move(b)}); }

Expr lt(Expr a, Expr b) {
  int64_t x, y;
  if (is_int_const(a, &x) && is_int_const(b, &y)) return int_imm(x < y);
  return make(ExprKind::Lt, false, {std::move(a), std::move(b)});
}
Expr le(Expr a, Expr b) {
  int64_t x, y;
  if (is_int_const(a, &x) && is_int_const(b, &y)) return int_imm(x <= y);
  return make(ExprKind::Le, false, {std::move(a), std::move(b)});
}
Expr eq(Expr a, Expr b) { return make(ExprKind::Eq, false, {std::move(a), std::move(b)}); }
Expr ne(Expr a, Expr b) { return make(ExprKind::Ne, false, {std::move(a), std::move(b)}); }
Expr logical_and(Expr a, Expr b) {
  int64_t x;
  if (is_int_const(a, &x)) return x ? b : int_imm(0);
  if (is_int_const(b, &x)) return x ? a : int_imm(0);
  return make(ExprKind::And, false, {std::move(a), std::move(b)});
}
Expr logical_or(Expr a, Expr b) { return make(ExprKind::Or, false, {std::move(a), std::move(b)}); }

Expr select(Expr cond, Expr then_value, Expr else_value) {
  int64_t c;
  if (is_int_const(cond, &c)) return c ? then_value : else_value;
  const bool is_float = then_value->is_float || else_value->is_float;
  return make(ExprKind::Select, is_float,
              {std::move(cond), std::move(then_value), std::move(else_value)});
}

Expr call(CallOp op, Expr a) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Call;
  n->is_float = true;
  n->call = op;
  n->args = {std::move(a)};
  return n;
}

Expr load(const Buffer& buffer, std::vector<Expr> indices, bool padded, double pad_value) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Load;
  n->is_float = true;
  n->buffer = buffer;
  n->args = std::move(indices);
  n->padded = padded;
  n->pad_value = pad_value;
  return n;
}

Expr reduce(ReduceOp op, Expr source, std::vector<IterVar> axes) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Reduce;
  n->is_float = true;
  n->reduce_op = op;
  n->reduce_axes = std::move(axes);
  n->args = {std::move(source)};
  return n;
}

double reduce_identity(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return 0.0;
    case ReduceOp::max:
      return -std::numeric_limits<double>::infinity();
    case ReduceOp::min:
      return std::numeric_limits<double>::infinity();
  }
  return 0.0;
}

const char* call_name(CallOp op) {
  switch (op) {
    case CallOp::exp:
      return "exp";
    case CallOp::log:
      return "log";
    case CallOp::sqrt:
      return "sqrt";
    case CallOp::rsqrt:
      return "rsqrt";
    case CallOp::recip:
      return "recip";
    case CallOp::abs:
      return "abs";
    case CallOp::neg:
      return "neg";
    case CallOp::relu:
      return "relu";
    case CallOp::sigmoid:
      return "sigmoid";
    case CallOp::tanh:
      return "tanh";
    case CallOp::erf:
      return "erf";
    case CallOp::floor:
      return "floor";
    case CallOp::ceil:
      return "ceil";
    case CallOp::round:
      return "round";
    case CallOp::sin:
      return "sin";
    case CallOp::cos:
      return "cos";
    case CallOp::atan:
      return "atan";
  }
  return "?";
}

const char* reduce_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "?";
}

namespace {

std::string float_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

const char* binary_symbol(ExprKind k) {
  switch (k) {
    case ExprKind::Add:
      return "+";
    case ExprKind::Sub:
      return "-";
    case ExprKind::Mul:
      return "*";
    case ExprKind::FloorDiv:
      return "//";
    case ExprKind::FloorMod:
      return "%";
    case ExprKind::Div:
      return "/";
    case ExprKind::Lt:
      return "<";
    case ExprKind::Le:
      return "<=";
    case ExprKind::Eq:
      return "==";
    case ExprKind::Ne:
      return "!=";
    case ExprKind::And:
      return "&&";
    case ExprKind::Or:
      return "||";
    default:
      return nullptr;
  }
}

}  // namespace

}  // namespace tessel::loop

#include "compiler/te/te.h"

namespace tessel::loop {

std::string to_string(const Expr& e) {
  if (!e) return "<null>";
  switch (e->kind) {
    case ExprKind::Int:
      return std::to_string(e->int_value);
    case ExprKind::Float:
      return float_text(e->float_value);
    case ExprKind::VarRef:
      return e->var->name;
    case ExprKind::Min:
      return fmt::format("min({}, {})", to_string(e->args[0]), to_string(e->args[1]));
    case ExprKind::Max:
      return fmt::format("max({}, {})", to_string(e->args[0]), to_string(e->args[1]));
    case ExprKind::Select:
      return fmt::format("select({}, {}, {})", to_string(e->args[0]), to_string(e->args[1]),
                         to_string(e->args[2]));
    case ExprKind::Call:
      return fmt::format("{}({})", call_name(e->call), to_string(e->args[0]));
    case ExprKind::Load:
    case ExprKind::TensorRead: {
      std::string s = e->kind == ExprKind::Load ? e->buffer->name : e->tensor->name;
      s += "[";
      for (size_t i = 0; i < e->args.size(); ++i) s += (i ? ", " : "") + to_string(e->args[i]);
      s += "]";
      if (e->padded) s += "|pad=" + float_text(e->pad_value);
      return s;
    }
    case ExprKind::Reduce: {
      std::string axes;
      for (const auto& a : e->reduce_axes)
        axes += fmt::format("{}{}:{}", axes.empty() ? "" : ", ", a.var->name, a.extent);
      return fmt::format("{}({}; {})", reduce_name(e->reduce_op), to_string(e->args[0]), axes);
    }
    default: {
      const char* sym = binary_symbol(e->kind);
      TESSEL_CHECK(sym != nullptr, "unprintable expr kind {}", static_cast<int>(e->kind));
      return fmt::format("({} {} {})", to_string(e->args[0]), sym, to_string(e->args[1]));
    }
  }
}

std::optional<Affine> to_affine(const Expr& e) {
  if (e->is_float) return std::nullopt;
  switch (e->kind) {
    case ExprKind::Int: {
      Affine a;
      a.constant = e->int_value;
      return a;
    }
    case ExprKind::VarRef: {
      Affine a;
      a.coeffs[e->var.get()] = 1;
      return a;
    }
    case ExprKind::Add:
    case ExprKind::Sub: {
      auto x = to_affine(e->args[0]);
      auto y = to_affine(e->args[1]);
      if (!x || !y) return std::nullopt;
      const int64_t sign = e->kind == ExprKind::Add ? 1 : -1;
      x->constant += sign * y->constant;
      for (auto [v, c] : y->coeffs) {
        int64_t& dst = x->coeffs[v];
        dst += sign * c;
        if (dst == 0) x->coeffs.erase(v);
      }
      return x;
    }
    case ExprKind::Mul: {
      auto x = to_affine(e->args[0]);
      auto y = to_affine(e->args[1]);
      if (!x || !y) return std::nullopt;
      if (!x->is_constant() && !y->is_constant()) return std::nullopt;
      if (!x->is_constant()) std::swap(x, y);
      const int64_t k = x->constant;
      Affine r;
      r.constant = y->constant * k;
      if (k != 0)
        for (auto [v, c] : y->coeffs) r.coeffs[v] = c * k;
      return r;
    }
    default:
      return std::nullopt;
  }
}

Expr from_affine(const Affine& a, const std::map<const VarNode*, Var>& vars) {
  std::vector<std::pair<const VarNode*, int64_t>> terms(a.coeffs.begin(), a.coeffs.end());
  std::sort(terms.begin(), terms.end(),
            [](const auto& x, const auto& y) { return x.first->id < y.first->id; });
  Expr r;
  for (auto [v, c] : terms) {
    auto it = vars.find(v);
    TESSEL_CHECK(it != vars.end(), "from_affine: unknown variable {}", v->name);
    Expr term = mul(var_ref(it->second), int_imm(c));
    r = r ? add(r, term) : term;
  }
  if (!r) return int_imm(a.constant);
  return a.constant ? add(r, int_imm(a.constant)) : r;
}

Expr substitute(const Expr& e, const std::map<const VarNode*, Expr>& subst) {
  if (!e) return e;
  if (e->kind == ExprKind::VarRef) {
    auto it = subst.find(e->var.get());
    return it == subst.end() ? e : it->second;
  }
  if (e->args.empty()) return e;
  bool changed = false;
  std::vector<Expr> args;
  args.reserve(e->args.size());
  for (const auto& a : e->args) {
    args.push_back(substitute(a, subst));
    changed |= args.back() != a;
  }
  if (!changed) return e;
  // Rebuild through the folding constructors where possible.
  switch (e->kind) {
    case ExprKind::Add:
      return add(args[0], args[1]);
    case ExprKind::Sub:
      return sub(args[0], args[1]);
    case ExprKind::Mul:
      return mul(args[0], args[1]);
    case ExprKind::Min:
      return min(args[0], args[1]);
    case ExprKind::Max:
      return max(args[0], args[1]);
    case ExprKind::FloorDiv:
      return floordiv(args[0], args[1]->int_value);
    case ExprKind::FloorMod:
      return floormod(args[0], args[1]->int_value);
    case ExprKind::Lt:
      return lt(args[0], args[1]);
    case ExprKind::Le:
      return le(args[0], args[1]);
    case ExprKind::And:
      return logical_and(args[0], args[1]);
    case ExprKind::Select:
      return select(args[0], args[1], args[2]);
    default: {
      auto n = std::make_shared<ExprNode>(*e);
      n->args = std::move(args);
      return n;
    }
  }
}

int64_t eval_int(const Expr& e, const std::map<const VarNode*, int64_t>& values) {
  auto a = [&](int i) { return eval_int(e->args[i], values); };
  switch (e->kind) {
    case ExprKind::Int:
      return e->int_value;
    case ExprKind::VarRef: {
      auto it = values.find(e->var.get());
      TESSEL_CHECK(it != values.end(), "eval_int: variable {} has no value", e->var->name);
      return it->second;
    }
    case ExprKind::Add:
      return a(0) + a(1);
    case ExprKind::Sub:
      return a(0) - a(1);
    case ExprKind::Mul:
      return a(0) * a(1);
    case ExprKind::Min:
      return std::min(a(0), a(1));
    case ExprKind::Max:
      return std::max(a(0), a(1));
    case ExprKind::FloorDiv:
      return floordiv_i(a(0), a(1));
    case ExprKind::FloorMod:
      return floormod_i(a(0), a(1));
    case ExprKind::Lt:
      return a(0) < a(1);
    case ExprKind::Le:
      return a(0) <= a(1);
    case ExprKind::Eq:
      return a(0) == a(1);
    case ExprKind::Ne:
      return a(0) != a(1);
    case ExprKind::And:
      return a(0) && a(1);
    case ExprKind::Or:
      return a(0) || a(1);
    case ExprKind::Select:
      return a(0) ? a(1) : a(2);
    default:
      internal_fail("eval_int: not an integer expression: {}", to_string(e));
  }
}

Interval bound_of(const Expr& e, const std::map<const VarNode*, Interval>& var_bounds) {
  auto b = [&](int i) { return bound_of(e->args[i], var_bounds); };
  switch (e->kind) {
    case ExprKind::Int:
      return {e->int_value, e->int_value};
    case ExprKind::VarRef: {
      auto it = var_bounds.find(e->var.get());
      TESSEL_CHECK(it != var_bounds.end(), "bound_of: variable {} is unbounded", e->var->name);
      return it->second;
    }
    case ExprKind::Add: {
      auto x = b(0), y = b(1);
      return {x.lo + y.lo, x.hi + y.hi};
    }
    case ExprKind::Sub: {
      auto x = b(0), y = b(1);
      return {x.lo - y.hi, x.hi - y.lo};
    }
    case ExprKind::Mul: {
      auto x = b(0), y = b(1);
      int64_t c[4] = {x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi};
      return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
    }
    case ExprKind::Min: {
      auto x = b(0), y = b(1);
      return {std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
    }
    case ExprKind::Max: {
      auto x = b(0), y = b(1);
      return {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
    }
    case ExprKind::FloorDiv: {
      auto x = b(0);
      const int64_t d = e->args[1]->int_value;
      return {floordiv_i(x.lo, d), floordiv_i(x.hi, d)};
    }
    case ExprKind::FloorMod: {
      auto x = b(0);
      const int64_t d = e->args[1]->int_value;
      if (floordiv_i(x.lo, d) == floordiv_i(x.hi, d))
        return {floormod_i(x.lo, d), floormod_i(x.hi, d)};
      return {0, d - 1};
    }
    case ExprKind::Select: {
      auto x = b(1), y = b(2);
      return {std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
    }
    case ExprKind::Lt:
    case ExprKind::Le:
    case ExprKind::Eq:
    case ExprKind::Ne:
    case ExprKind::And:
    case ExprKind::Or:
      return {0, 1};
    default:
      internal_fail("bound_of: not an integer expression: {}", to_string(e));
  }
}

void visit_expr(const Expr& e, const std::function<void(const ExprNode&)>& fn) {
  if (!e) return;
  fn(*e);
  for (const auto& a : e->args) visit_expr(a, fn);
}

std::optional<DType> value_dtype(const Expr& e,
                                 const std::function<std::optional<DType>(const ExprNode&)>& leaf) {
  if (!e) return std::nullopt;
  switch (e->kind) {
    case ExprKind::Int:
    case ExprKind::Float:
    case ExprKind::VarRef:
      return std::nullopt;
    case ExprKind::Load:
    case ExprKind::TensorRead:
      return leaf(*e);
    case ExprKind::Lt:
    case ExprKind::Le:
    case ExprKind::Eq:
    case ExprKind::Ne:
    case ExprKind::And:
    case ExprKind::Or:
      for (const auto& a : e->args)
        if (value_dtype(a, leaf)) return DType::boolean;
      return std::nullopt;
    case ExprKind::Select:
      if (auto t = value_dtype(e->args[1], leaf)) return t;
      return value_dtype(e->args[2], leaf);
    default:
      for (const auto& a : e->args)
        if (auto t = value_dtype(a, leaf)) return t;
      return std::nullopt;
  }
}

}  // namespace tessel::loop
