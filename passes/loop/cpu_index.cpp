// Index analysis for the CPU passes and code generator: canonical sums of atoms, the merge of
// floordiv/floormod pairs that a flattened pixel loop produces, linear buffer offsets and the
// coefficient of one variable (what the vectorizer needs to tell contiguous, broadcast and
// gathered accesses apart).
//
// Runs anywhere (pure analysis); guarantees simplify_index(e) evaluates to e for every value of
// its variables.
#include <fmt/format.h>

#include <functional>

#include "compiler/support/error.h"
#include "passes/loop/cpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;
using L::Expr;
using L::ExprKind;

namespace {

/// Structural key of an expression (variables by id). The terms of a simplified sum are ordered
/// by these keys, so a variable's key is its id zero-padded to a fixed width: the keys then sort
/// as the ids do (creation order). Unpadded, "v100003" sorted before "v99998", and a kernel whose
/// variables straddled a power of ten (ids come from one process-wide counter, so that depends
/// on what the process compiled before) got its index terms, hence its code, in another order.
std::string key_of(const Expr& e) {
  switch (e->kind) {
    case ExprKind::Int:
      return std::to_string(e->int_value);
    case ExprKind::VarRef:
      return fmt::format("v{:020}", e->var->id);
    default: {
      std::string s = fmt::format("({}", static_cast<int>(e->kind));
      for (const auto& a : e->args) s += " " + key_of(a);
      return s + ")";
    }
  }
}

struct Terms {
  int64_t constant = 0;
  std::map<std::string, std::pair<Expr, int64_t>> atoms;  // key -> (atom, coefficient)
};

void flatten(const Expr& e, int64_t coeff, Terms& t);

Expr simplify_atom(const Expr& e) {
  if (e->args.empty() || e->is_float) return e;
  std::vector<Expr> args;
  bool changed = false;
  for (const auto& a : e->args) {
    args.push_back(a->is_float ? a : simplify_index(a));
    changed |= args.back() != a;
  }
  if (!changed) return e;
  switch (e->kind) {
    case ExprKind::FloorDiv:
      return L::floordiv(args[0], args[1]->int_value);
    case ExprKind::FloorMod:
      return L::floormod(args[0], args[1]->int_value);
    case ExprKind::Min:
      return L::min(args[0], args[1]);
    case ExprKind::Max:
      return L::max(args[0], args[1]);
    default: {
      auto n = std::make_shared<L::ExprNode>(*e);
      n->args = std::move(args);
      return n;
    }
  }
}

void add_atom(const Expr& atom, int64_t coeff, Terms& t) {
  if (atom->kind == ExprKind::Int) {
    t.constant += coeff * atom->int_value;
    return;
  }
  const std::string k = key_of(atom);
  auto it = t.atoms.find(k);
  if (it == t.atoms.end()) {
    t.atoms.emplace(k, std::make_pair(atom, coeff));
  } else {
    it->second.second += coeff;
    if (it->second.second == 0) t.atoms.erase(it);
  }
}

void flatten(const Expr& e, int64_t coeff, Terms& t) {
  if (coeff == 0) return;
  switch (e->kind) {
    case ExprKind::Int:
      t.constant += coeff * e->int_value;
      return;
    case ExprKind::Add:
      flatten(e->args[0], coeff, t);
      flatten(e->args[1], coeff, t);
      return;
    case ExprKind::Sub:
      flatten(e->args[0], coeff, t);
      flatten(e->args[1], -coeff, t);
      return;
    case ExprKind::Mul:
      if (e->args[0]->kind == ExprKind::Int) {
        flatten(e->args[1], coeff * e->args[0]->int_value, t);
        return;
      }
      if (e->args[1]->kind == ExprKind::Int) {
        flatten(e->args[0], coeff * e->args[1]->int_value, t);
        return;
      }
      break;
    default:
      break;
  }
  add_atom(simplify_atom(e), coeff, t);
}

/// Merges floordiv(x, c) * (c * s) + floormod(x, c) * s into x * s until no pair is left.
void merge_divmod(Terms& t) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto it = t.atoms.begin(); it != t.atoms.end(); ++it) {
      const Expr& mod = it->second.first;
      if (mod->kind != ExprKind::FloorMod) continue;
      const int64_t s = it->second.second;
      const int64_t c = mod->args[1]->int_value;
      const Expr x = mod->args[0];
      const std::string div_key = key_of(L::floordiv(x, c));
      auto dit = t.atoms.find(div_key);
      if (dit == t.atoms.end() || dit->second.second != s * c) continue;
      t.atoms.erase(dit);
      t.atoms.erase(t.atoms.find(key_of(mod)));
      flatten(x, s, t);
      changed = true;
      break;
    }
  }
}

Expr rebuild(const Terms& t) {
  Expr r;
  for (const auto& [k, ac] : t.atoms) {
    Expr term = ac.second == 1 ? ac.first : L::mul(ac.first, L::int_imm(ac.second));
    r = r ? L::add(r, term) : term;
  }
  if (!r) return L::int_imm(t.constant);
  return t.constant ? L::add(r, L::int_imm(t.constant)) : r;
}

}  // namespace

bool uses_var(const Expr& e, const L::VarNode* v) {
  bool found = false;
  L::visit_expr(e, [&](const L::ExprNode& n) {
    if (n.kind == ExprKind::VarRef && n.var.get() == v) found = true;
  });
  return found;
}

Expr simplify_index(const Expr& e) {
  if (!e || e->is_float) return e;
  Terms t;
  flatten(e, 1, t);
  merge_divmod(t);
  return rebuild(t);
}

Expr linear_index(const L::BufferNode& buffer, const std::vector<Expr>& indices) {
  TESSEL_CHECK(indices.size() == buffer.shape.size(), "buffer {}: {} indices for rank {}",
               buffer.name, indices.size(), buffer.shape.size());
  Expr off = L::int_imm(buffer.elem_offset);
  for (size_t d = 0; d < indices.size(); ++d)
    off = L::add(off, L::mul(indices[d], L::int_imm(buffer.strides[d])));
  return simplify_index(off);
}

std::optional<int64_t> var_coefficient(const Expr& e0, const L::VarNode* v) {
  std::function<std::optional<int64_t>(const Expr&)> co =
      [&](const Expr& e) -> std::optional<int64_t> {
    if (!uses_var(e, v)) return 0;
    switch (e->kind) {
      case ExprKind::VarRef:
        return 1;
      case ExprKind::Add:
      case ExprKind::Sub: {
        auto a = co(e->args[0]), b = co(e->args[1]);
        if (!a || !b) return std::nullopt;
        return e->kind == ExprKind::Add ? *a + *b : *a - *b;
      }
      case ExprKind::Mul: {
        if (e->args[0]->kind == ExprKind::Int) {
          auto b = co(e->args[1]);
          return b ? std::optional<int64_t>(*b * e->args[0]->int_value) : std::nullopt;
        }
        if (e->args[1]->kind == ExprKind::Int) {
          auto a = co(e->args[0]);
          return a ? std::optional<int64_t>(*a * e->args[1]->int_value) : std::nullopt;
        }
        return std::nullopt;
      }
      default:
        return std::nullopt;
    }
  };
  return co(simplify_index(e0));
}

int64_t nest_work(const L::Stmt& s) {
  if (!s) return 0;
  switch (s->kind) {
    case L::StmtKind::For:
      return s->extent * std::max<int64_t>(1, nest_work(s->body));
    case L::StmtKind::Seq: {
      int64_t w = 0;
      for (const auto& x : s->seq) w += nest_work(x);
      return w;
    }
    case L::StmtKind::Allocate:
      return nest_work(s->body);
    case L::StmtKind::If:
      return std::max(nest_work(s->body), nest_work(s->else_body));
    default:
      return 1;
  }
}

}  // namespace tessel::passes
