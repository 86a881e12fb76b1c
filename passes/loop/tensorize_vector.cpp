// Pass: tensorize_vector -- scalar Store nests over UB -> vector instructions.
//
// What it does: for each perfect loop nest ending in a Store to UB it computes every operand's
// element offset as an affine function of the nest's loop variables, fuses adjacent loops whose
// strides compose for all operands, maps the innermost (fused) loop to the instruction's `count`
// and the next to its `repeat` (with per-operand element and repeat strides; stride 0 broadcasts),
// keeps outer loops, and turns the expression tree into one instruction per node (immediates use
// the vector-scalar forms; intermediate values live in UB temporaries evaluated in place).
// Integer and bool values (loop::value_dtype of the Loads) get instructions of their own type:
// wrapping arithmetic, vdiv truncating toward zero, comparisons (vcmp_*, bool results), logic
// (vand/vor/vnot), Select (vsel with a bool mask), and a vconv where the value's type differs
// from the stored one (ONNX Cast); an immediate operand of an integer instruction must be exact in
// the f32 scalar field (else tessel::Unsupported), and Sub/Div/compare/select immediates are
// broadcast into a temporary (vdup) first. A float kernel types every instruction as its store.
// Reduction updates `S = S (+|max|min) src` become vrsum/vrmax/vrmin along an innermost reduced
// axis, or per-step accumulation (vadd/vmax/vmin, vmla for sums of products).
// Runs after tile_vector / tile_cube. Guarantees: no Store on UB remains; temporaries are UB
// allocations shared by all nests of the kernel (vector pipe only).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "compiler/support/error.h"
#include "passes/loop/npu_passes.h"
#include "passes/loop/tile_emitter.h"

namespace tessel::passes {

namespace L = tessel::loop;
using isa::Opcode;
using L::Expr;
using L::ExprKind;

namespace {

/// Temporaries needed by an expression (result_is_temp says whether the value ends in a temp).
struct TempNeed {
  int max_live = 0;
  bool result_is_temp = false;
};

bool is_leaf(const Expr& e) {
  return e->kind == ExprKind::Load || e->kind == ExprKind::TensorRead || e->kind == ExprKind::Float;
}

/// True when `e` is min(max(x, lo), hi) or max(min(x, hi), lo) with float immediates
/// -limit <= lo <= hi <= limit: every value of e (NaN aside) lies in [-limit, limit].
bool clamped_within(const Expr& e, double limit) {
  if ((e->kind != ExprKind::Min && e->kind != ExprKind::Max) || e->args.size() != 2) return false;
  const Expr& inner = e->args[0];
  const Expr& outer_bound = e->args[1];
  const ExprKind other = e->kind == ExprKind::Min ? ExprKind::Max : ExprKind::Min;
  if (outer_bound->kind != ExprKind::Float || inner->kind != other || inner->args.size() != 2)
    return false;
  const Expr& inner_bound = inner->args[1];
  if (inner_bound->kind != ExprKind::Float) return false;
  const double lo = e->kind == ExprKind::Min ? inner_bound->float_value : outer_bound->float_value;
  const double hi = e->kind == ExprKind::Min ? outer_bound->float_value : inner_bound->float_value;
  return -limit <= lo && lo <= hi && hi <= limit;
}

/// Scratch temporaries of a call's instruction sequence beside its result (Tensorizer::eval).
int call_scratch_temps(L::CallOp op) {
  switch (op) {
    case L::CallOp::erf:
      return 2;
    case L::CallOp::floor:
    case L::CallOp::ceil:
    case L::CallOp::round:
      return 3;
    case L::CallOp::sin:
    case L::CallOp::cos:
    case L::CallOp::atan:
      return 4;
    default:
      return 0;
  }
}

TempNeed temp_need(const Expr& e, bool is_root) {
  if (is_leaf(e)) return {0, false};
  if (e->kind == ExprKind::Call) {
    TempNeed c = temp_need(e->args[0], false);
    // erf is a sequence of instructions with two scratch temporaries beside its result;
    // floor/ceil/round take three, sin/cos/atan four (call_scratch_temps).
    const int extra = call_scratch_temps(e->call);
    const int live_child = c.result_is_temp ? 1 : 0;
    const int during = live_child + extra + (is_root || c.result_is_temp ? 0 : 1);
    if (is_root) return {std::max(c.max_live, during), false};
    if (c.result_is_temp) return {std::max(c.max_live, during), true};
    return {std::max({c.max_live, 1, during}), true};
  }
  TempNeed a = temp_need(e->args[0], false);
  TempNeed b = temp_need(e->args[1], false);
  const int live_a = a.result_is_temp ? 1 : 0;
  int max_live = std::max(a.max_live, live_a + b.max_live);
  if (is_root) return {max_live, false};
  if (a.result_is_temp || b.result_is_temp) return {max_live, true};
  return {std::max(max_live, 1), true};
}

/// One operand of a vector instruction: a buffer view at base + r*repeat_stride + e*elem_stride.
struct Loc {
  bool is_imm = false;
  double imm = 0;
  L::Buffer buffer;
  Expr base;
  int64_t elem_stride = 0, repeat_stride = 0;
  int temp = -1;  // temp index when the location is a temporary
};

/// One dimension of a nest after fusion: an extent and each operand's stride along it.
struct Dim {
  L::Var var;
  int64_t extent = 1;
  std::vector<int64_t> coeff;  // per operand
  bool reduce = false;
};

class Tensorizer {
 public:
  explicit Tensorizer(const NpuTarget& target) : target_(target) {}

  // Tensorizes one perfect nest: loops (outer to inner) and its Store.
  L::Stmt tensorize(const std::vector<const L::StmtNode*>& loops, const L::StmtNode& st);

 private:
  const NpuTarget& target_;
  std::vector<L::Buffer> temps_;  // temporaries shared by every nest of the kernel (vector pipe)

  /// Temporary `index`, grown to hold at least `elems` elements of `esize` bytes.
  L::Buffer temp(int index, int64_t elems, int64_t esize) {
    while (static_cast<int>(temps_.size()) <= index) {
      temps_.push_back(L::make_buffer(fmt::format("ub_tmp{}", temps_.size()), L::MemScope::ub,
                                      target_.act_dtype, {1}));
    }
    L::Buffer& t = temps_[index];
    const int64_t bytes = align32(elems * esize);
    if (t->alloc_bytes < bytes) {
      t->shape = {elems};
      t->strides = {1};
      t->alloc_bytes = bytes;
    }
    return t;
  }
};

// --- operand analysis ----------------------------------------------------------------------

/// Element offset of a load/store at `indices` in `b`, as an affine form.
L::Affine element_offset(const L::Buffer& b, const std::vector<Expr>& indices) {
  L::Affine r;
  r.constant = b->elem_offset;
  for (size_t d = 0; d < indices.size(); ++d) {
    auto a = L::to_affine(indices[d]);
    TESSEL_CHECK(a.has_value(), "non-affine UB index {}", L::to_string(indices[d]));
    r.constant += a->constant * b->strides[d];
    for (auto [v, c] : a->coeffs) {
      int64_t& dst = r.coeffs[v];
      dst += c * b->strides[d];
      if (dst == 0) r.coeffs.erase(v);
    }
  }
  return r;
}

struct Operand {
  L::Buffer buffer;
  L::Affine offset;
};

/// The vector instruction of a two-operand expression node, if it has one.
std::optional<Opcode> two_operand_opcode(ExprKind k) {
  switch (k) {
    case ExprKind::Add:
      return Opcode::vadd;
    case ExprKind::Sub:
      return Opcode::vsub;
    case ExprKind::Mul:
      return Opcode::vmul;
    case ExprKind::Div:
      return Opcode::vdiv;
    case ExprKind::Max:
      return Opcode::vmax;
    case ExprKind::Min:
      return Opcode::vmin;
    case ExprKind::Lt:
      return Opcode::vcmp_lt;
    case ExprKind::Le:
      return Opcode::vcmp_le;
    case ExprKind::Eq:
      return Opcode::vcmp_eq;
    case ExprKind::Ne:
      return Opcode::vcmp_ne;
    case ExprKind::And:
      return Opcode::vand;
    case ExprKind::Or:
      return Opcode::vor;
    default:
      return std::nullopt;
  }
}

/// Comparisons and logic: bool results (handled apart from arithmetic).
bool logic_or_compare(ExprKind k) {
  return k == ExprKind::Lt || k == ExprKind::Le || k == ExprKind::Eq || k == ExprKind::Ne ||
         k == ExprKind::And || k == ExprKind::Or;
}

L::Stmt Tensorizer::tensorize(const std::vector<const L::StmtNode*>& loops, const L::StmtNode& st) {
  // Operands: 0 = destination, then every Load leaf of the value (by node identity).
  std::vector<Operand> ops;
  std::map<const L::ExprNode*, int> leaf_index;
  ops.push_back({st.buffer, element_offset(st.buffer, st.indices)});

  // Reduction update?  S[i] = S[i] (+|max|min) src
  Expr value = st.value;
  bool update = false;
  L::ReduceOp rop = L::ReduceOp::sum;
  Expr src;
  if ((value->kind == ExprKind::Add || value->kind == ExprKind::Max ||
       value->kind == ExprKind::Min) &&
      value->args[0]->kind == ExprKind::Load &&
      value->args[0]->buffer->storage() == st.buffer->storage()) {
    L::Affine acc = element_offset(value->args[0]->buffer, value->args[0]->args);
    if (acc.constant == ops[0].offset.constant && acc.coeffs == ops[0].offset.coeffs) {
      update = true;
      rop = value->kind == ExprKind::Add   ? L::ReduceOp::sum
            : value->kind == ExprKind::Max ? L::ReduceOp::max
                                           : L::ReduceOp::min;
      src = value->args[1];
    }
  }
  const Expr tree = update ? src : value;
  L::visit_expr(tree, [&](const L::ExprNode& n) {
    if (n.kind == ExprKind::Load && !leaf_index.count(&n)) {
      leaf_index[&n] = static_cast<int>(ops.size());
      ops.push_back({n.buffer, element_offset(n.buffer, n.args)});
    }
  });

  // Dimensions (outer to inner), with each operand's stride.
  std::vector<Dim> dims;
  for (const L::StmtNode* f : loops) {
    Dim d;
    d.var = f->var;
    d.extent = f->extent;
    for (const auto& op : ops) d.coeff.push_back(op.offset.coeff(f->var.get()));
    d.reduce = update && d.coeff[0] == 0;
    dims.push_back(d);
  }
  // Remove extent-1 dims; fuse adjacent dims of the same kind whose strides compose.
  dims.erase(std::remove_if(dims.begin(), dims.end(), [](const Dim& d) { return d.extent == 1; }),
             dims.end());
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i + 1 < dims.size(); ++i) {
      Dim& o = dims[i];
      const Dim& in = dims[i + 1];
      if (o.reduce != in.reduce) continue;
      bool ok = true;
      for (size_t k = 0; k < ops.size(); ++k) ok &= o.coeff[k] == in.extent * in.coeff[k];
      if (!ok) continue;
      Dim fused;
      fused.var = L::make_var(fmt::format("{}_{}", o.var->name, in.var->name));
      fused.extent = o.extent * in.extent;
      fused.coeff = in.coeff;
      fused.reduce = o.reduce;
      dims[i] = fused;
      dims.erase(dims.begin() + i + 1);
      changed = true;
      break;
    }
  }

  std::vector<Dim> par, red;
  for (const auto& d : dims) (d.reduce ? red : par).push_back(d);
  // A reduction along the innermost (fused) reduced axis uses vrsum/vrmax/vrmin when every operand
  // of the source is contiguous or broadcast along it (a computed source is then materialised
  // row by row); otherwise each reduction step is an elementwise accumulation.
  bool row_reduce = update && red.size() == 1 && !dims.empty() && dims.back().reduce;
  if (row_reduce)
    for (size_t k = 1; k < ops.size(); ++k)
      if (dims.back().coeff[k] != 0 && dims.back().coeff[k] != 1) row_reduce = false;

  // Instruction dims: count (innermost) and repeat; the rest become loops around.
  std::optional<Dim> count_dim, repeat_dim;
  std::vector<Dim> outer, inner;  // loops outside the instruction: outer (par) then inner (red)
  if (row_reduce) {
    count_dim = red[0];
    if (!par.empty()) {
      repeat_dim = par.back();
      par.pop_back();
    }
    outer = par;
  } else {
    if (!par.empty()) {
      count_dim = par.back();
      par.pop_back();
    }
    if (!par.empty()) {
      // The repeat dim: the parallel dim with the most iterations (the innermost on ties), so the
      // fewest instructions remain -- e.g. a depthwise convolution repeats over its channels
      // (per-channel weight: repeat stride kh*kw, element stride 0) rather than over 2 rows.
      // Any parallel dim may repeat: every operand's offset is affine in it. Each output element
      // still sees its reduction steps in the same order, so results do not change.
      size_t pick = par.size() - 1;
      for (size_t i = par.size(); i-- > 0;)
        if (par[i].extent > par[pick].extent) pick = i;
      repeat_dim = par[pick];
      par.erase(par.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    outer = par;
    inner = red;
  }
  const int64_t count = count_dim ? count_dim->extent : 1;
  const int64_t repeat = repeat_dim ? repeat_dim->extent : 1;

  // Map removed loop vars (extent 1) to 0 and fused vars: bases are built from the kept dims.
  std::vector<Dim> loop_dims = outer;
  loop_dims.insert(loop_dims.end(), inner.begin(), inner.end());
  // Variables of this nest; any other variable in an offset belongs to an enclosing loop.
  std::set<const L::VarNode*> nest_vars;
  for (const L::StmtNode* f : loops) nest_vars.insert(f->var.get());
  auto base_of = [&](int k) {
    const L::Affine& off = ops[k].offset;
    Expr e = L::int_imm(off.constant);
    for (const auto& coeff : off.coeffs) {
      const auto* v = coeff.first;  // not a structured binding: clang 14 cannot capture one
      const auto c = coeff.second;
      if (nest_vars.count(v)) continue;
      // An enclosing loop's variable: find its Var through a load's index expression.
      L::Var var;
      std::function<void(const Expr&)> find = [&](const Expr& x) {
        if (!x || var) return;
        if (x->kind == ExprKind::VarRef && x->var.get() == v) var = x->var;
        for (const auto& a : x->args) find(a);
      };
      for (const auto& i : st.indices) find(i);
      find(st.value);
      TESSEL_CHECK(var != nullptr, "unknown variable in an operand offset");
      e = L::add(e, L::mul(L::var_ref(var), L::int_imm(c)));
    }
    for (const auto& d : loop_dims)
      if (d.coeff[k] != 0) e = L::add(e, L::mul(L::var_ref(d.var), L::int_imm(d.coeff[k])));
    return e;
  };
  auto loc_of = [&](int k) {
    Loc l;
    l.buffer = ops[k].buffer->base ? ops[k].buffer->base : ops[k].buffer;
    l.base = base_of(k);
    l.elem_stride = count_dim ? count_dim->coeff[k] : 1;
    l.repeat_stride = repeat_dim ? repeat_dim->coeff[k] : 0;
    return l;
  };

  // Instruction builder. Element types: a float value is computed in the store's dtype when the
  // store is float (the activation dtype, as every float kernel), else in its own; integer and
  // bool values in their own type.
  const DType store_t = st.buffer->dtype;
  const isa::DType dt = isa_dtype(store_t);
  auto leaf_type = [](const L::ExprNode& n) -> std::optional<DType> {
    if (n.kind == ExprKind::Load) return n.buffer->dtype;
    return std::nullopt;
  };
  auto type_of = [&](const Expr& e) { return L::value_dtype(e, leaf_type); };
  auto idt = [&](std::optional<DType> t) -> isa::DType {
    if (!t) return dtype_is_float(store_t) ? dt : isa_dtype(target_.act_dtype);
    if (dtype_is_float(*t) && dtype_is_float(store_t)) return dt;
    return isa_dtype(*t);
  };
  int64_t temp_esize = target_.act_bytes();
  for (const auto& o : ops) temp_esize = std::max<int64_t>(temp_esize, dtype_size(o.buffer->dtype));
  std::vector<L::Stmt> code;
  isa::DType cur = dt;        // the dtype of the next emitted instruction
  isa::DType conv_from = dt;  // vconv's src_dtype
  auto vec_operand = [](const Loc& l) {
    isa::VecOperand o;
    o.elem_stride = static_cast<int32_t>(l.elem_stride);
    o.repeat_stride = static_cast<int32_t>(l.repeat_stride);
    return o;
  };
  auto emit3 = [&](Opcode op, const Loc& dst, const Loc* a, const Loc* b, const Loc* c,
                   double scalar, int64_t cnt, int64_t rep) {
    isa::VectorArgs v;
    v.dtype = cur;
    v.count = static_cast<uint32_t>(cnt);
    v.repeat = static_cast<uint32_t>(rep);
    v.scalar = static_cast<float>(scalar);
    if (op == Opcode::vconv) v.src_dtype = conv_from;
    v.dst = vec_operand(dst);
    std::vector<L::IntrinOperand> operands = {{dst.buffer, dst.base}};
    if (a) {
      v.src0 = vec_operand(*a);
      operands.push_back({a->buffer, a->base});
    }
    if (b) {
      v.src1 = vec_operand(*b);
      operands.push_back({b->buffer, b->base});
    }
    if (c) {
      v.src2 = vec_operand(*c);
      operands.push_back({c->buffer, c->base});
    }
    isa::Instruction in;
    in.op = op;
    in.args = v;
    code.push_back(L::intrin(in, operands));
  };
  auto emit = [&](Opcode op, const Loc& dst, const Loc* a, const Loc* b, double scalar, int64_t cnt,
                  int64_t rep) { emit3(op, dst, a, b, nullptr, scalar, cnt, rep); };

  std::vector<bool> temp_busy;
  auto new_temp = [&]() {
    int idx = 0;
    while (idx < static_cast<int>(temp_busy.size()) && temp_busy[idx]) ++idx;
    if (idx == static_cast<int>(temp_busy.size())) temp_busy.push_back(false);
    temp_busy[idx] = true;
    Loc l;
    l.buffer = temp(idx, count * repeat, temp_esize);
    l.base = L::int_imm(0);
    l.elem_stride = 1;
    l.repeat_stride = count;
    l.temp = idx;
    return l;
  };
  auto release = [&](const Loc& l) {
    if (l.temp >= 0) temp_busy[l.temp] = false;
  };
  auto is_int = [](isa::DType t) { return isa::dtype_class(t) != isa::DTypeClass::float_; };
  // An immediate of an integer instruction: exact in the f32 scalar field and in range.
  auto check_imm = [&](double c, isa::DType t, const Expr& e) {
    if (!is_int(t)) return;
    const bool exact = std::nearbyint(c) == c && static_cast<double>(static_cast<float>(c)) == c;
    if (!exact)
      throw Unsupported(fmt::format(
          "vector tensorizer: the integer immediate {} in '{}' is not exact in the f32 scalar "
          "field",
          c, L::to_string(e)));
  };
  // An immediate broadcast into a fresh temporary of type `t` (vdup).
  auto materialize = [&](double c, isa::DType t, const Expr& e) {
    check_imm(c, t, e);
    Loc l = new_temp();
    const isa::DType saved = cur;
    cur = t;
    emit(Opcode::vdup, l, nullptr, nullptr, c, count, repeat);
    cur = saved;
    return l;
  };

  // Rounding to an integral value (floor, ceil, round half to even) of float `a` into `d`, with
  // scratch c, t, g, exactly (no rounding error): with M = 2^(p-1) for the dtype's p-bit
  // significand (1024 for f16, 2^23 for f32), c = clamp(a, -M, M); |c| + M rounds (to nearest
  // even, as every instruction rounds its result to the dtype) to an integer, so
  // (|c| + M) - M = round(|c|), given c's sign by sign(c) = clamp(c 1e30, -1, 1) (exact for
  // |c| >= 0.5, and round(|c|) = 0 below); floor subtracts step(round(c) - c), ceil adds
  // step(c - round(c)), step(v) = clamp(v 1e30 [1e30], 0, 1) (1 for any v > 0, the differences
  // being multiples of c's spacing); a - c (0 for |a| <= M, else a - (+-M), exact) adds back the
  // part beyond M, where every value is an integer. NaN propagates through the clamp (a NaN in
  // src0 of max/min is kept), +-inf gives +-M + +-inf = +-inf.
  auto emit_rounding = [&](L::CallOp op, const Loc& d, const Loc& a, const Loc& c, const Loc& t,
                           const Loc& g) {
    const bool f16 = cur == isa::DType::f16;
    const double M = f16 ? 1024.0 : 8388608.0, big = 1e30;
    emit(Opcode::vmaxs, c, &a, nullptr, -M, count, repeat);
    emit(Opcode::vmins, c, &c, nullptr, M, count, repeat);
    emit(Opcode::vabs, t, &c, nullptr, 0, count, repeat);
    emit(Opcode::vadds, t, &t, nullptr, M, count, repeat);
    emit(Opcode::vadds, t, &t, nullptr, -M, count, repeat);
    emit(Opcode::vmuls, g, &c, nullptr, big, count, repeat);
    emit(Opcode::vmaxs, g, &g, nullptr, -1.0, count, repeat);
    emit(Opcode::vmins, g, &g, nullptr, 1.0, count, repeat);
    emit(Opcode::vmul, t, &t, &g, 0, count, repeat);
    if (op != L::CallOp::round) {
      const bool fl = op == L::CallOp::floor;
      emit(Opcode::vsub, g, fl ? &t : &c, fl ? &c : &t, 0, count, repeat);
      emit(Opcode::vmuls, g, &g, nullptr, big, count, repeat);
      if (!f16) emit(Opcode::vmuls, g, &g, nullptr, big, count, repeat);
      emit(Opcode::vmaxs, g, &g, nullptr, 0.0, count, repeat);
      emit(Opcode::vmins, g, &g, nullptr, 1.0, count, repeat);
      emit(fl ? Opcode::vsub : Opcode::vadd, t, &t, &g, 0, count, repeat);
    }
    emit(Opcode::vsub, g, &a, &c, 0, count, repeat);
    emit(Opcode::vadd, d, &t, &g, 0, count, repeat);
  };
  // sin(a) (phase 0) or cos(a) = sin(a + pi/2) (phase 0.5) into `d`, scratch k, c, t, g:
  // k = round(a / pi + phase); r = a - (k - phase) pi in [-pi/2, pi/2] (Cody-Waite: pi =
  // 3.140625 + 9.676535897932e-4, the first part 8 significant bits, so k 3.140625 is exact for
  // |k| < 8 in f16, |a| < 25); sin(r) by its Taylor polynomial to r^9 (truncation below
  // (pi/2)^11 / 11! = 3.6e-6); the result times (-1)^k = 1 - 4 |round(|k| / 2) - |k| / 2|
  // (|k| / 2 + M rounds to even). Accurate for |a| < 8 pi (then the roundings of r, the
  // polynomial's and the result's: compiler/driver/compare.cpp counts 14), degrading beyond as
  // u |a| absolute, and wrong for |k| >= 2M.
  auto emit_sin = [&](double phase, const Loc& d, const Loc& a, const Loc& k, const Loc& c,
                      const Loc& t, const Loc& g) {
    const bool f16 = cur == isa::DType::f16;
    const double M = f16 ? 1024.0 : 8388608.0;
    const double pi1 = 3.140625, pi2 = M_PI - 3.140625;
    emit(Opcode::vmuls, k, &a, nullptr, 1.0 / M_PI, count, repeat);
    if (phase != 0) emit(Opcode::vadds, k, &k, nullptr, phase, count, repeat);
    emit_rounding(L::CallOp::round, k, k, c, t, g);
    emit(Opcode::vmuls, t, &k, nullptr, -pi1, count, repeat);
    emit(Opcode::vadd, c, &a, &t, 0, count, repeat);
    if (phase != 0) emit(Opcode::vadds, c, &c, nullptr, phase * pi1, count, repeat);
    emit(Opcode::vmuls, t, &k, nullptr, -pi2, count, repeat);
    emit(Opcode::vadd, c, &c, &t, 0, count, repeat);
    if (phase != 0) emit(Opcode::vadds, c, &c, nullptr, phase * pi2, count, repeat);
    emit(Opcode::vmul, t, &c, &c, 0, count, repeat);  // r^2
    emit(Opcode::vmuls, g, &t, nullptr, 1.0 / 362880, count, repeat);
    emit(Opcode::vadds, g, &g, nullptr, -1.0 / 5040, count, repeat);
    emit(Opcode::vmul, g, &g, &t, 0, count, repeat);
    emit(Opcode::vadds, g, &g, nullptr, 1.0 / 120, count, repeat);
    emit(Opcode::vmul, g, &g, &t, 0, count, repeat);
    emit(Opcode::vadds, g, &g, nullptr, -1.0 / 6, count, repeat);
    emit(Opcode::vmul, g, &g, &t, 0, count, repeat);
    emit(Opcode::vmul, g, &g, &c, 0, count, repeat);
    emit(Opcode::vadd, c, &c, &g, 0, count, repeat);  // sin(r)
    emit(Opcode::vabs, t, &k, nullptr, 0, count, repeat);
    emit(Opcode::vmuls, t, &t, nullptr, 0.5, count, repeat);
    emit(Opcode::vadds, g, &t, nullptr, M, count, repeat);
    emit(Opcode::vadds, g, &g, nullptr, -M, count, repeat);
    emit(Opcode::vsub, g, &g, &t, 0, count, repeat);
    emit(Opcode::vabs, g, &g, nullptr, 0, count, repeat);
    emit(Opcode::vmuls, g, &g, nullptr, -4.0, count, repeat);
    emit(Opcode::vadds, g, &g, nullptr, 1.0, count, repeat);
    emit(Opcode::vmul, d, &c, &g, 0, count, repeat);
  };
  // atan(a) into `d`, scratch t, g, c, x: z = min(|a|, 1 / |a|) in [0, 1]; atan(z) = z P(z^2),
  // Abramowitz & Stegun 4.4.49 (|error| <= 2e-8 on [0, 1]); for |a| > 1, atan|a| = pi/2 -
  // atan(z), selected by b = step(|a| - 1) as p + b (pi/2 - 2p); times sign(a) = clamp(a 1e30,
  // -1, 1). |a| = inf gives z = 0 and pi/2; NaN propagates.
  auto emit_atan = [&](const Loc& d, const Loc& a, const Loc& t, const Loc& g, const Loc& c,
                       const Loc& x) {
    const bool f16 = cur == isa::DType::f16;
    const double big = 1e30;
    static const double coef[] = {0.0028662257, -0.0161657367, 0.0429096138, -0.0752896400,
                                  0.1065626393, -0.1420889944, 0.1999355085, -0.3333314528};
    emit(Opcode::vabs, t, &a, nullptr, 0, count, repeat);
    emit(Opcode::vrec, g, &t, nullptr, 0, count, repeat);
    emit(Opcode::vmin, c, &t, &g, 0, count, repeat);  // z
    emit(Opcode::vadds, t, &t, nullptr, -1.0, count, repeat);
    emit(Opcode::vmuls, t, &t, nullptr, big, count, repeat);
    if (!f16) emit(Opcode::vmuls, t, &t, nullptr, big, count, repeat);
    emit(Opcode::vmaxs, t, &t, nullptr, 0.0, count, repeat);
    emit(Opcode::vmins, t, &t, nullptr, 1.0, count, repeat);  // b
    emit(Opcode::vmul, x, &c, &c, 0, count, repeat);          // z^2
    emit(Opcode::vmuls, g, &x, nullptr, coef[0], count, repeat);
    for (int i = 1; i < 8; ++i) {
      emit(Opcode::vadds, g, &g, nullptr, coef[i], count, repeat);
      emit(Opcode::vmul, g, &g, &x, 0, count, repeat);
    }
    emit(Opcode::vadds, g, &g, nullptr, 1.0, count, repeat);
    emit(Opcode::vmul, g, &g, &c, 0, count, repeat);  // p = atan(z)
    emit(Opcode::vmuls, x, &g, nullptr, -2.0, count, repeat);
    emit(Opcode::vadds, x, &x, nullptr, M_PI / 2, count, repeat);
    emit(Opcode::vmul, x, &x, &t, 0, count, repeat);
    emit(Opcode::vadd, g, &g, &x, 0, count, repeat);
    emit(Opcode::vmuls, x, &a, nullptr, big, count, repeat);
    emit(Opcode::vmaxs, x, &x, nullptr, -1.0, count, repeat);
    emit(Opcode::vmins, x, &x, nullptr, 1.0, count, repeat);
    emit(Opcode::vmul, d, &g, &x, 0, count, repeat);
  };

  // Evaluates `e` over (count, repeat); writes into `dst` when given (the root).
  std::function<Loc(const Expr&, const Loc*)> eval = [&](const Expr& e, const Loc* dst) -> Loc {
    if (e->kind == ExprKind::Float) {
      Loc l;
      l.is_imm = true;
      l.imm = e->float_value;
      if (!dst) return l;
      cur = dt;
      check_imm(l.imm, cur, e);
      emit(Opcode::vdup, *dst, nullptr, nullptr, l.imm, count, repeat);
      return *dst;
    }
    if (e->kind == ExprKind::Load) {
      Loc l = loc_of(leaf_index.at(e.get()));
      if (!dst) return l;
      cur = idt(type_of(e));
      emit(Opcode::vcopy, *dst, &l, nullptr, 0, count, repeat);
      return *dst;
    }
    auto pick_dst = [&](const Loc& a, const Loc* b) -> Loc {
      if (dst) return *dst;
      if (a.temp >= 0) {
        if (b) release(*b);
        return a;
      }
      if (b && b->temp >= 0) return *b;
      return new_temp();
    };
    const isa::DType et = idt(type_of(e));
    if (e->kind == ExprKind::Select) {
      const std::optional<DType> ct = type_of(e->args[0]);
      if (!ct || *ct != DType::boolean)
        throw Unsupported(fmt::format("vector tensorizer: select on a non-bool condition in '{}'",
                                      L::to_string(e)));
      Loc c = eval(e->args[0], nullptr);
      Loc x = eval(e->args[1], nullptr);
      if (x.is_imm) x = materialize(x.imm, et, e);
      Loc y = eval(e->args[2], nullptr);
      if (y.is_imm) y = materialize(y.imm, et, e);
      Loc d = dst ? *dst : new_temp();
      cur = et;
      emit3(Opcode::vsel, d, &c, &x, &y, 0, count, repeat);
      release(c);
      release(x);
      release(y);
      return d;
    }
    if (logic_or_compare(e->kind)) {
      const bool logic = e->kind == ExprKind::And || e->kind == ExprKind::Or;
      // Operand type: the first typed operand's (bool for logic).
      std::optional<DType> ot = type_of(e->args[0]);
      if (!ot) ot = type_of(e->args[1]);
      if (!ot)
        throw Unsupported(
            fmt::format("vector tensorizer: comparison of index values '{}'", L::to_string(e)));
      const isa::DType t = idt(ot);
      Loc a = eval(e->args[0], nullptr);
      Loc b = eval(e->args[1], nullptr);
      // x == 0 / x != 0 of a bool: vnot / a normalising copy.
      if (t == isa::DType::boolean && (e->kind == ExprKind::Eq || e->kind == ExprKind::Ne) &&
          (a.is_imm || b.is_imm) && (a.is_imm ? a.imm : b.imm) == 0.0) {
        const Loc& v = a.is_imm ? b : a;
        Loc d = pick_dst(v, nullptr);
        cur = isa::DType::boolean;
        emit(e->kind == ExprKind::Eq ? Opcode::vnot : Opcode::vcopy, d, &v, nullptr, 0, count,
             repeat);
        if (dst) release(v);
        return d;
      }
      if (a.is_imm) a = materialize(a.imm, t, e);
      if (b.is_imm) b = materialize(b.imm, t, e);
      Loc d = pick_dst(a, &b);
      const Opcode op = *two_operand_opcode(e->kind);
      if (logic && t != isa::DType::boolean)
        throw Unsupported(
            fmt::format("vector tensorizer: logic on non-bool values in '{}'", L::to_string(e)));
      cur = t;
      emit(op, d, &a, &b, 0, count, repeat);
      if (!dst && d.temp != a.temp) release(a);
      if (!dst && d.temp != b.temp) release(b);
      if (dst) {
        release(a);
        release(b);
      }
      return d;
    }
    if (e->kind == ExprKind::Call) {
      Loc a = eval(e->args[0], nullptr);
      TESSEL_CHECK(!a.is_imm, "call on an immediate should have been folded");
      Loc d = pick_dst(a, nullptr);
      cur = et;
      if (is_int(et) && e->call != L::CallOp::abs && e->call != L::CallOp::neg &&
          e->call != L::CallOp::relu)
        throw Unsupported(fmt::format("vector tensorizer: {} of an integer value in '{}'",
                                      L::call_name(e->call), L::to_string(e)));
      switch (e->call) {
        case L::CallOp::exp:
          emit(Opcode::vexp, d, &a, nullptr, 0, count, repeat);
          break;
        case L::CallOp::log:
          emit(Opcode::vln, d, &a, nullptr, 0, count, repeat);
          break;
        case L::CallOp::sqrt:
          emit(Opcode::vsqrt, d, &a, nullptr, 0, count, repeat);
          break;
        case L::CallOp::recip:
          emit(Opcode::vrec, d, &a, nullptr, 0, count, repeat);
          break;
        case L::CallOp::abs:
          emit(Opcode::vabs, d, &a, nullptr, 0, count, repeat);
          break;
        case L::CallOp::neg:
          emit(Opcode::vneg, d, &a, nullptr, 0, count, repeat);
          break;
        case L::CallOp::relu:
          emit(Opcode::vrelu, d, &a, nullptr, 0, count, repeat);
          break;
        case L::CallOp::rsqrt:
          emit(Opcode::vsqrt, d, &a, nullptr, 0, count, repeat);
          emit(Opcode::vrec, d, &d, nullptr, 0, count, repeat);
          break;
        case L::CallOp::sigmoid:  // 1 / (1 + exp(-x))
          emit(Opcode::vmuls, d, &a, nullptr, -1.0, count, repeat);
          emit(Opcode::vexp, d, &d, nullptr, 0, count, repeat);
          emit(Opcode::vadds, d, &d, nullptr, 1.0, count, repeat);
          emit(Opcode::vrec, d, &d, nullptr, 0, count, repeat);
          break;
        case L::CallOp::tanh:  // 2 / (1 + exp(-2x)) - 1
          emit(Opcode::vmuls, d, &a, nullptr, -2.0, count, repeat);
          emit(Opcode::vexp, d, &d, nullptr, 0, count, repeat);
          emit(Opcode::vadds, d, &d, nullptr, 1.0, count, repeat);
          emit(Opcode::vrec, d, &d, nullptr, 0, count, repeat);
          emit(Opcode::vmuls, d, &d, nullptr, 2.0, count, repeat);
          emit(Opcode::vadds, d, &d, nullptr, -1.0, count, repeat);
          break;
        case L::CallOp::erf: {
          // Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): for y = |x|, t = 1 / (1 + p y),
          // erf(y) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-y^2); erf(x) = sign(x)
          // erf(|x|), with sign(x) = clamp(x * 1e30, -1, 1) (0 for x = 0).
          const double p = 0.3275911, a1 = 0.254829592, a2 = -0.284496736, a3 = 1.421413741,
                       a4 = -1.453152027, a5 = 1.061405429;
          Loc t = new_temp(), q = new_temp();
          emit(Opcode::vabs, t, &a, nullptr, 0, count, repeat);
          emit(Opcode::vmuls, t, &t, nullptr, p, count, repeat);
          emit(Opcode::vadds, t, &t, nullptr, 1.0, count, repeat);
          emit(Opcode::vrec, t, &t, nullptr, 0, count, repeat);
          emit(Opcode::vmuls, q, &t, nullptr, a5, count, repeat);
          for (double c : {a4, a3, a2, a1}) {
            emit(Opcode::vadds, q, &q, nullptr, c, count, repeat);
            emit(Opcode::vmul, q, &q, &t, 0, count, repeat);
          }
          emit(Opcode::vmul, t, &a, &a, 0, count, repeat);
          emit(Opcode::vmuls, t, &t, nullptr, -1.0, count, repeat);
          emit(Opcode::vexp, t, &t, nullptr, 0, count, repeat);
          emit(Opcode::vmul, q, &q, &t, 0, count, repeat);
          emit(Opcode::vmuls, q, &q, nullptr, -1.0, count, repeat);
          emit(Opcode::vadds, q, &q, nullptr, 1.0, count, repeat);
          emit(Opcode::vmuls, t, &a, nullptr, 1e30, count, repeat);
          emit(Opcode::vmaxs, t, &t, nullptr, -1.0, count, repeat);
          emit(Opcode::vmins, t, &t, nullptr, 1.0, count, repeat);
          emit(Opcode::vmul, d, &q, &t, 0, count, repeat);
          release(t);
          release(q);
          break;
        }
        case L::CallOp::floor:
        case L::CallOp::ceil:
        case L::CallOp::round: {
          // round(clamp(x, lo, hi)) with immediate bounds inside [-M/2, M/2] (M = 1024 for f16,
          // 2^23 for f32; QuantizeLinear's form, int8_ops.h): (c + 1.5 M) - 1.5 M. c + 1.5 M
          // lies in [M, 2M], where the spacing is 1, so the add rounds it to an integer, half to
          // even (1.5 M is even), and the subtraction is exact: the same value as the general
          // sequence below in 2 instructions instead of 11.
          if (e->call == L::CallOp::round &&
              clamped_within(e->args[0], cur == isa::DType::f16 ? 512.0 : 4194304.0)) {
            const double bias = cur == isa::DType::f16 ? 1536.0 : 12582912.0;
            emit(Opcode::vadds, d, &a, nullptr, bias, count, repeat);
            emit(Opcode::vadds, d, &d, nullptr, -bias, count, repeat);
            break;
          }
          Loc c = new_temp(), t = new_temp(), g = new_temp();
          emit_rounding(e->call, d, a, c, t, g);
          release(c);
          release(t);
          release(g);
          break;
        }
        case L::CallOp::sin:
        case L::CallOp::cos: {
          Loc k = new_temp(), c = new_temp(), t = new_temp(), g = new_temp();
          emit_sin(e->call == L::CallOp::cos ? 0.5 : 0.0, d, a, k, c, t, g);
          release(k);
          release(c);
          release(t);
          release(g);
          break;
        }
        case L::CallOp::atan: {
          Loc t = new_temp(), g = new_temp(), c = new_temp(), x = new_temp();
          emit_atan(d, a, t, g, c, x);
          release(t);
          release(g);
          release(c);
          release(x);
          break;
        }
      }
      if (dst) release(a);
      return d;
    }
    // Binary.
    Loc a = eval(e->args[0], nullptr);
    Loc b = eval(e->args[1], nullptr);
    if (a.is_imm && b.is_imm) internal_fail("binary op on two immediates should be folded");
    const ExprKind k = e->kind;
    cur = et;
    if (is_int(et) && (a.is_imm || b.is_imm) && (k == ExprKind::Sub || k == ExprKind::Div)) {
      // Integer c - v, v - c, c / v, v / c: the scalar forms would negate or invert the
      // immediate (not exact in integers); broadcast it instead.
      if (a.is_imm) a = materialize(a.imm, et, e);
      if (b.is_imm) b = materialize(b.imm, et, e);
    }
    if (b.is_imm || a.is_imm) {
      check_imm(a.is_imm ? a.imm : b.imm, et, e);
      const bool imm_first = a.is_imm;
      const Loc& v = imm_first ? b : a;
      const double c = imm_first ? a.imm : b.imm;
      Loc d = pick_dst(v, nullptr);
      switch (k) {
        case ExprKind::Add:
          emit(Opcode::vadds, d, &v, nullptr, c, count, repeat);
          break;
        case ExprKind::Mul:
          emit(Opcode::vmuls, d, &v, nullptr, c, count, repeat);
          break;
        case ExprKind::Max:
          emit(Opcode::vmaxs, d, &v, nullptr, c, count, repeat);
          break;
        case ExprKind::Min:
          emit(Opcode::vmins, d, &v, nullptr, c, count, repeat);
          break;
        case ExprKind::Sub:
          if (imm_first) {  // c - v
            emit(Opcode::vmuls, d, &v, nullptr, -1.0, count, repeat);
            emit(Opcode::vadds, d, &d, nullptr, c, count, repeat);
          } else {
            emit(Opcode::vadds, d, &v, nullptr, -c, count, repeat);
          }
          break;
        case ExprKind::Div:
          if (imm_first) {  // c / v
            emit(Opcode::vrec, d, &v, nullptr, 0, count, repeat);
            emit(Opcode::vmuls, d, &d, nullptr, c, count, repeat);
          } else {
            emit(Opcode::vmuls, d, &v, nullptr, 1.0 / c, count, repeat);
          }
          break;
        default:
          throw Unsupported(
              fmt::format("vector tensorizer: no instruction for '{}'", L::to_string(e)));
      }
      if (dst) release(v);
      return d;
    }
    Loc d = pick_dst(a, &b);
    const std::optional<Opcode> op = two_operand_opcode(k);
    if (!op || logic_or_compare(k))
      throw Unsupported(fmt::format("vector tensorizer: no instruction for '{}'", L::to_string(e)));
    emit(*op, d, &a, &b, 0, count, repeat);
    if (!dst && d.temp != a.temp) release(a);
    if (!dst && d.temp != b.temp) release(b);
    if (dst) {
      release(a);
      release(b);
    }
    return d;
  };

  Loc dst = loc_of(0);
  const std::optional<DType> root_t = type_of(tree);
  // A float load stored in the other float dtype (a conversion kernel between fp16 and fp32
  // storage, compile.cpp) converts too; float arithmetic is typed as its store.
  const bool float_conversion = tree->kind == ExprKind::Load && root_t && dtype_is_float(*root_t) &&
                                dtype_is_float(store_t) && *root_t != store_t;
  if (!update && root_t && *root_t != store_t &&
      (float_conversion || !(dtype_is_float(*root_t) && dtype_is_float(store_t)))) {
    // A conversion (ONNX Cast): the value in its own type, then vconv into the store's.
    Loc v = tree->kind == ExprKind::Load ? loc_of(leaf_index.at(tree.get())) : eval(tree, nullptr);
    conv_from = isa_dtype(*root_t);
    cur = dt;
    emit(Opcode::vconv, dst, &v, nullptr, 0, count, repeat);
    release(v);
  } else if (!update) {
    eval(tree, &dst);
  } else if (row_reduce) {
    cur = dt;
    Loc s;
    if (tree->kind == ExprKind::Load) {
      s = loc_of(leaf_index.at(tree.get()));
    } else {
      s = new_temp();
      eval(tree, &s);
    }
    const Opcode op = rop == L::ReduceOp::sum   ? Opcode::vrsum
                      : rop == L::ReduceOp::max ? Opcode::vrmax
                                                : Opcode::vrmin;
    Loc d = dst;
    d.elem_stride = 0;
    emit(op, d, &s, nullptr, 0, count, repeat);
  } else {
    // Accumulation per reduction step (the reduce dims are loops inside the parallel ones).
    cur = dt;
    if (rop == L::ReduceOp::sum && tree->kind == ExprKind::Mul && !is_leaf(tree) &&
        tree->args[0]->kind == ExprKind::Load && tree->args[1]->kind == ExprKind::Load) {
      Loc a = loc_of(leaf_index.at(tree->args[0].get()));
      Loc b = loc_of(leaf_index.at(tree->args[1].get()));
      emit(Opcode::vmla, dst, &a, &b, 0, count, repeat);
    } else {
      Loc s = eval(tree, nullptr);
      const Opcode op = rop == L::ReduceOp::sum   ? (s.is_imm ? Opcode::vadds : Opcode::vadd)
                        : rop == L::ReduceOp::max ? (s.is_imm ? Opcode::vmaxs : Opcode::vmax)
                                                  : (s.is_imm ? Opcode::vmins : Opcode::vmin);
      emit(op, dst, &dst, s.is_imm ? nullptr : &s, s.imm, count, repeat);
    }
  }

  // Wrap in the remaining loops: reduce loops inside, parallel loops outside.
  L::Stmt out = L::seq(code);
  for (int k = static_cast<int>(inner.size()) - 1; k >= 0; --k)
    out = L::for_loop(inner[k].var, inner[k].extent, out);
  for (int k = static_cast<int>(outer.size()) - 1; k >= 0; --k)
    out = L::for_loop(outer[k].var, outer[k].extent, out);
  return out;
}

}  // namespace

int vector_temp_count(const loop::Expr& e) { return temp_need(e, true).max_live; }

L::Stmt tensorize_vector(const L::Stmt& body, const NpuTarget& target) {
  Tensorizer tz(target);
  // Find perfect nests top-down: a For chain (or a bare Store) ending in a Store on UB.
  std::function<L::Stmt(const L::Stmt&)> walk = [&](const L::Stmt& s) -> L::Stmt {
    if (!s) return s;
    std::vector<const L::StmtNode*> loops;
    const L::StmtNode* n = s.get();
    while (n->kind == L::StmtKind::For) {
      loops.push_back(n);
      n = n->body.get();
    }
    if (n->kind == L::StmtKind::Store) {
      if (n->buffer->scope != L::MemScope::ub)
        internal_fail("tensorize_vector: store to {} buffer {}", L::scope_name(n->buffer->scope),
                      n->buffer->name);
      L::Stmt r = tz.tensorize(loops, *n);
      r->comment = s->comment;
      return r;
    }
    auto c = std::make_shared<L::StmtNode>(*s);
    for (auto& x : c->seq) x = walk(x);
    c->body = walk(c->body);
    c->else_body = walk(c->else_body);
    return c;
  };
  return walk(body);
}

}  // namespace tessel::passes
