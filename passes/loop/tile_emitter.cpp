// Region inference and per-tile emission shared by tile_vector and tile_cube (see tile_emitter.h).
#include "passes/loop/tile_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "compiler/support/error.h"

namespace tessel::passes {

using loop::Affine;
using loop::Expr;
using loop::ExprKind;
namespace L = tessel::loop;

namespace {

/// a + k * b for affine forms.
Affine affine_axpy(const Affine& a, int64_t k, const Affine& b) {
  Affine r = a;
  r.constant += k * b.constant;
  for (auto [v, c] : b.coeffs) {
    int64_t& dst = r.coeffs[v];
    dst += k * c;
    if (dst == 0) r.coeffs.erase(v);
  }
  return r;
}

bool same_vars(const Affine& a, const Affine& b) { return a.coeffs == b.coeffs; }

/// The reduce axes of a stage body (empty for elementwise stages).
const std::vector<L::IterVar>& reduce_axes_of(const te::TensorNode& t) {
  static const std::vector<L::IterVar> none;
  return t.is_reduce() ? t.body->reduce_axes : none;
}

}  // namespace

isa::DType isa_dtype(DType t) {
  switch (t) {
    case DType::f16:
      return isa::DType::f16;
    case DType::f32:
      return isa::DType::f32;
    case DType::i8:
      return isa::DType::i8;
    case DType::u8:
      return isa::DType::u8;
    case DType::i16:
      return isa::DType::i16;
    case DType::u16:
      return isa::DType::u16;
    case DType::i32:
      return isa::DType::i32;
    case DType::u32:
      return isa::DType::u32;
    case DType::i64:
      return isa::DType::i64;
    case DType::u64:
      return isa::DType::u64;
    case DType::boolean:
      return isa::DType::boolean;
    default:
      break;
  }
  internal_fail("NPU buffers hold f16, f32, integers or bool, not {}", dtype_to_string(t));
}

TileEmitter::TileEmitter(const KernelSpec& spec, const NpuTarget& target,
                         std::set<const te::TensorNode*> precomputed)
    : spec_(spec), target_(target), precomputed_(std::move(precomputed)) {
  std::set<const te::TensorNode*> seen;
  std::function<void(const te::Tensor&)> dfs = [&](const te::Tensor& t) {
    if (!seen.insert(t.get()).second) return;
    if (t->is_placeholder()) {
      inputs_.push_back(t);
      return;
    }
    if (precomputed_.count(t.get())) return;
    for (const auto& in : te::direct_inputs(t)) dfs(in);
    stages_.push_back(t);
  };
  dfs(spec_.out);
  // Inputs in first-read order of the stages.
  std::vector<te::Tensor> ordered;
  std::set<const te::TensorNode*> placed;
  for (const auto& s : stages_) {
    L::visit_expr(s->body, [&](const L::ExprNode& n) {
      if (n.kind == ExprKind::TensorRead && n.tensor->is_placeholder()) {
        if (placed.insert(n.tensor.get()).second) ordered.push_back(n.tensor);
        if (n.padded) pad_value_[n.tensor.get()] = n.pad_value;
      }
    });
  }
  inputs_ = ordered;
  for (const auto& t : inputs_)
    if (!spec_.gm.count(t.get()))
      internal_fail("kernel {}: input {} has no GM buffer", spec_.name, t->name);
  if (!spec_.gm.count(spec_.out.get()))
    internal_fail("kernel {}: output has no GM buffer", spec_.name);
}

std::map<const te::TensorNode*, TileBox> TileEmitter::infer(const TileBox& out_box) const {
  std::map<const te::TensorNode*, TileBox> boxes;
  boxes[spec_.out.get()] = out_box;
  for (auto it = stages_.rbegin(); it != stages_.rend(); ++it) {
    const te::TensorNode& s = **it;
    auto bit = boxes.find(&s);
    if (bit == boxes.end()) continue;  // not needed by this tile
    const TileBox box = bit->second;
    std::map<const L::VarNode*, int> axis_of;
    for (size_t d = 0; d < s.axes.size(); ++d) axis_of[s.axes[d].get()] = static_cast<int>(d);
    std::map<const L::VarNode*, int64_t> reduce_extent;
    for (const auto& r : reduce_axes_of(s)) reduce_extent[r.var.get()] = r.extent;
    L::visit_expr(s.body, [&](const L::ExprNode& n) {
      if (n.kind != ExprKind::TensorRead) return;
      const te::TensorNode* t = n.tensor.get();
      TileBox tb;
      for (const auto& idx : n.args) {
        auto a = L::to_affine(idx);
        if (!a)
          throw Unsupported(fmt::format("kernel {}: stage {} reads {} at a non-affine index {}",
                                        spec_.name, s.name, t->name, L::to_string(idx)));
        Affine start;
        start.constant = a->constant;
        int64_t extent = 1;
        for (auto [v, c] : a->coeffs) {
          int64_t ext;
          if (auto ai = axis_of.find(v); ai != axis_of.end()) {
            start = affine_axpy(start, c, box.start[ai->second]);
            ext = box.extent[ai->second];
          } else if (auto ri = reduce_extent.find(v); ri != reduce_extent.end()) {
            ext = ri->second;
          } else {
            internal_fail("kernel {}: read of {} uses an unknown variable {}", spec_.name, t->name,
                          v->name);
          }
          if (c < 0) start.constant += c * (ext - 1);
          extent += std::abs(c) * (ext - 1);
        }
        tb.start.push_back(start);
        tb.extent.push_back(extent);
      }
      auto [pos, inserted] = boxes.emplace(t, tb);
      if (inserted) return;
      TileBox& cur = pos->second;
      for (size_t d = 0; d < tb.start.size(); ++d) {
        if (!same_vars(cur.start[d], tb.start[d]))
          throw Unsupported(fmt::format(
              "kernel {}: reads of {} move differently with the tile (dim {}); cannot infer one "
              "region",
              spec_.name, t->name, d));
        const int64_t lo = std::min(cur.start[d].constant, tb.start[d].constant);
        const int64_t hi =
            std::max(cur.start[d].constant + cur.extent[d], tb.start[d].constant + tb.extent[d]);
        cur.start[d].constant = lo;
        cur.extent[d] = hi - lo;
      }
    });
  }
  return boxes;
}

DType TileEmitter::ub_dtype(const te::TensorNode* t) const {
  // A GM tensor's tile is copied as it is stored (a conversion kernel reads fp32 into an fp16
  // kernel, or fp16 into an fp32 one: compile.cpp); computed stages in the kernel's dtype.
  if (t->is_placeholder())
    if (auto it = spec_.gm.find(t); it != spec_.gm.end()) return it->second->dtype;
  return target_.storage(t->dtype);
}

int64_t TileEmitter::footprint_bytes(const std::vector<int64_t>& extents) const {
  TileBox box;
  box.start.assign(extents.size(), Affine{});
  box.extent = extents;
  const auto boxes = infer(box);
  // Temporaries hold the widest element type of the kernel (the activation dtype for float
  // kernels; integer kernels may hold i64).
  int64_t temp_esize = target_.act_bytes();
  for (const auto& [t, b] : boxes)
    temp_esize = std::max<int64_t>(temp_esize, dtype_size(ub_dtype(t)));
  int64_t total = 0;
  int64_t max_stage = 0;
  int max_temps = 0;
  for (const auto& [t, b] : boxes) {
    const int64_t n = shape_numel(b.extent);
    total += align32(n * dtype_size(ub_dtype(t)));
    const te::TensorNode* tn = t;
    if (tn->is_placeholder() || precomputed_.count(tn)) continue;
    int temps = 0;
    int64_t elems = n;
    if (tn->is_reduce()) {
      const Expr& src = tn->body->args[0];
      if (src->kind != ExprKind::TensorRead) {
        // The source is materialised over (stage box x reduce extents), then reduced.
        int64_t r = 1;
        for (const auto& ax : tn->body->reduce_axes) r *= ax.extent;
        elems = n * r;
        temps = 1 + vector_temp_count(src);
      }
    } else {
      temps = vector_temp_count(tn->body);
    }
    max_stage = std::max(max_stage, elems);
    max_temps = std::max(max_temps, temps);
  }
  return total + max_temps * align32(max_stage * temp_esize);
}

bool TileEmitter::can_tile_axis(size_t axis, const std::vector<int64_t>& extents) const {
  const L::Var probe = L::make_var("probe");
  TileBox box;
  box.start.assign(extents.size(), Affine{});
  box.start[axis].coeffs[probe.get()] = extents[axis];
  box.extent = extents;
  try {
    infer(box);
  } catch (const Unsupported&) {
    return false;
  }
  return true;
}

void TileEmitter::allocate(const std::vector<int64_t>& extents) {
  TileBox box;
  box.start.assign(extents.size(), Affine{});
  box.extent = extents;
  for (const auto& [t, b] : infer(box)) {
    ub_[t] = L::make_buffer(fmt::format("ub_{}", t->name), L::MemScope::ub, ub_dtype(t), b.extent);
  }
}

L::Buffer TileEmitter::ub_view(const te::TensorNode* t, const std::vector<int64_t>& extents) const {
  auto it = ub_.find(t);
  TESSEL_CHECK(it != ub_.end(), "no UB allocation for {}", t->name);
  if (it->second->shape == extents) return it->second;
  return L::make_view(it->second, it->second->name, extents, L::dense_strides(extents), 0);
}

Expr TileEmitter::start_expr(const Affine& a) const { return L::from_affine(a, vars_); }

L::Stmt TileEmitter::emit_tile(
    const TileBox& out_box,
    const std::map<const te::TensorNode*, L::Buffer>& precomputed_views) const {
  const auto boxes = infer(out_box);
  std::vector<L::Stmt> body;
  std::map<const te::TensorNode*, L::Buffer> views;

  // 1. Inputs: GM -> UB.
  for (const auto& t : inputs_) {
    auto bit = boxes.find(t.get());
    if (bit == boxes.end()) continue;
    const TileBox& b = bit->second;
    L::Buffer view = ub_view(t.get(), b.extent);
    views[t.get()] = view;
    auto pit = pad_value_.find(t.get());
    body.push_back(copy_gm_box(*this, view, spec_.gm.at(t.get()), b, /*to_gm=*/false,
                               pit == pad_value_.end() ? 0.0 : pit->second, spec_.name));
  }
  for (const auto& [t, v] : precomputed_views) views[t] = v;

  // 2. Stages, each over its box, as scalar Store nests on UB.
  for (const auto& sp : stages_) {
    const te::TensorNode& s = *sp;
    auto bit = boxes.find(&s);
    if (bit == boxes.end()) continue;
    const TileBox& b = bit->second;
    L::Buffer out = ub_view(&s, b.extent);
    views[&s] = out;
    // Local loop variables and the substitution axis -> start + local.
    std::vector<L::Var> local;
    std::map<const L::VarNode*, Expr> subst;
    std::map<const L::VarNode*, L::Var> local_vars = vars_;
    for (size_t d = 0; d < s.axes.size(); ++d) {
      local.push_back(L::make_var(fmt::format("{}{}", s.axes[d]->name, d)));
      local_vars[local.back().get()] = local.back();
      subst[s.axes[d].get()] = L::add(start_expr(b.start[d]), L::var_ref(local.back()));
    }
    for (const auto& r : reduce_axes_of(s)) local_vars[r.var.get()] = r.var;
    // Rewrites reads of tensors into loads of their UB views at local coordinates.
    std::function<Expr(const Expr&)> localize = [&](const Expr& e) -> Expr {
      if (e->kind == ExprKind::TensorRead) {
        const te::TensorNode* t = e->tensor.get();
        const TileBox& tb = boxes.at(t);
        std::vector<Expr> idx;
        for (size_t d = 0; d < e->args.size(); ++d) {
          auto a = L::to_affine(L::substitute(e->args[d], subst));
          TESSEL_CHECK(a.has_value(), "non-affine read survived inference");
          Affine local_idx = affine_axpy(*a, -1, tb.start[d]);
          for (auto [v, c] : local_idx.coeffs)
            if (vars_.count(v))
              internal_fail("kernel {}: read of {} in {} does not move with the tile", spec_.name,
                            t->name, s.name);
          idx.push_back(L::from_affine(local_idx, local_vars));
        }
        auto vit = views.find(t);
        TESSEL_CHECK(vit != views.end(), "no UB view for {}", t->name);
        return L::load(vit->second, idx);
      }
      if (e->args.empty()) return e;
      auto n = std::make_shared<L::ExprNode>(*e);
      for (auto& a : n->args) a = localize(a);
      return n;
    };
    std::vector<Expr> store_idx;
    for (const auto& v : local) store_idx.push_back(L::var_ref(v));
    auto nest = [&](L::Stmt inner, const std::vector<L::IterVar>& extra) {
      for (int k = static_cast<int>(extra.size()) - 1; k >= 0; --k)
        inner = L::for_loop(extra[k].var, extra[k].extent, inner);
      for (int d = static_cast<int>(local.size()) - 1; d >= 0; --d)
        inner = L::for_loop(local[d], b.extent[d], inner);
      return inner;
    };
    std::vector<L::Stmt> stage_body;
    if (s.is_reduce()) {
      const L::ReduceOp op = s.body->reduce_op;
      Expr src = localize(s.body->args[0]);
      Expr acc = L::load(out, store_idx);
      Expr combined = op == L::ReduceOp::sum   ? L::add(acc, src)
                      : op == L::ReduceOp::max ? L::max(acc, src)
                                               : L::min(acc, src);
      stage_body.push_back(
          nest(L::store(out, store_idx, L::float_imm(L::reduce_identity(op))), {}));
      stage_body.push_back(nest(L::store(out, store_idx, combined), s.body->reduce_axes));
    } else {
      stage_body.push_back(nest(L::store(out, store_idx, localize(s.body)), {}));
    }
    auto st = L::seq(stage_body);
    st->comment = "stage " + s.name;
    body.push_back(st);
  }

  // 3. Output: UB -> GM.
  const TileBox& ob = boxes.at(spec_.out.get());
  auto oit = views.find(spec_.out.get());
  TESSEL_CHECK(oit != views.end(), "kernel {}: output not computed", spec_.name);
  body.push_back(copy_gm_box(*this, oit->second, spec_.gm.at(spec_.out.get()), ob, /*to_gm=*/true,
                             0.0, spec_.name));
  return L::seq(body);
}

int arithmetic_nodes(const Expr& e) {
  if (!e) return 0;
  if (e->kind == ExprKind::TensorRead || e->kind == ExprKind::Load || e->kind == ExprKind::Float ||
      e->kind == ExprKind::Int || e->kind == ExprKind::VarRef)
    return 0;
  int n = 1;
  for (const auto& a : e->args) n += arithmetic_nodes(a);
  return n;
}

bool is_nc1hwc0(const L::Buffer& gm, size_t logical_rank) {
  return gm->scope == L::MemScope::gm && logical_rank == 4 && gm->shape.size() == 5;
}

std::optional<Affine> affine_div_exact(const Affine& a, int64_t d) {
  if (a.constant % d != 0) return std::nullopt;
  Affine q;
  q.constant = a.constant / d;
  for (auto [v, c] : a.coeffs) {
    if (c % d != 0) return std::nullopt;
    q.coeffs[v] = c / d;
  }
  return q;
}

L::Stmt copy_gm_box(const TileEmitter& em, const L::Buffer& local, const L::Buffer& gm,
                    const TileBox& box, bool to_gm, double pad_value, const std::string& kernel) {
  const size_t rank = box.extent.size();
  std::vector<Expr> zeros(rank, L::int_imm(0)), starts;
  for (const auto& a : box.start) starts.push_back(em.start_expr(a));
  if (!is_nc1hwc0(gm, rank)) {
    L::Region l{local, zeros, box.extent}, g{gm, starts, box.extent};
    return to_gm ? L::copy(g, l) : L::copy(l, g, pad_value);
  }
  // [n][c][h][w] = [n][c1 * C0 + c0][h][w]: local strides (sn, sc, sh, sw) become
  // (sn, C0 * sc, sh, sw, sc) over [n][c1][h][w][c0]; GM is indexed (n, c / C0, h, w, 0).
  const int64_t c0 = gm->shape[4];
  const std::optional<Affine> c1 = affine_div_exact(box.start[1], c0);
  if (!c1 || box.extent[1] % c0 != 0)
    internal_fail("kernel {}: the tile of {} covers channels not aligned to C0 = {} (NC1HWC0)",
                  kernel, gm->name, c0);
  const std::vector<int64_t>& st = local->strides;
  const Shape ext{box.extent[0], box.extent[1] / c0, box.extent[2], box.extent[3], c0};
  L::Buffer local5 = L::make_view(local, local->name + "_c1hwc0", ext,
                                  {st[0], c0 * st[1], st[2], st[3], st[1]}, local->elem_offset);
  std::vector<Expr> zeros5(5, L::int_imm(0));
  std::vector<Expr> starts5{starts[0], em.start_expr(*c1), starts[2], starts[3], L::int_imm(0)};
  L::Region l{local5, zeros5, ext}, g{gm, starts5, ext};
  return to_gm ? L::copy(g, l) : L::copy(l, g, pad_value);
}

}  // namespace tessel::passes
