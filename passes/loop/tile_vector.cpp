// Pass: tile_vector -- tiling for vector-unit kernels.
//
// What it does: exposes the schedule space of a vector kernel (any TE DAG of elementwise and
// reduction stages with affine reads) and emits the point it is handed. A tile splits one output
// axis, `tile_axis`, into `tiles` tiles of ceil(extent / tiles) elements; the axes after it stay
// whole, the axes before it take one element per tile (the channel axis one C0 block when a
// tensor is stored NC1HWC0). The tile loops -- full tiles in a loop, the remainder as a static
// tail -- hold each tile's copies, stages and output copy from TileEmitter; the loop of axis
// `split` is core-bound over `cores` cores. A point is rejected when the UB footprint of a tile
// (inputs, stages, output, tensorizer temporaries; halved for double buffering) overflows, when it
// splits an axis some stage reduces over, or when the split axis has fewer tiles than cores.
// profile() tensorizes one tile to price it with the analytical model (npu_model/cost_model.h).
// Runs first (on the kernel TE). Guarantees: every scratchpad buffer has a static size that fits
// the UB budget; all loop extents and copy extents are static.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "compiler/support/error.h"
#include "passes/loop/npu_passes.h"
#include "passes/loop/schedule.h"
#include "passes/loop/schedule_util.h"
#include "passes/loop/tile_emitter.h"

namespace tessel::passes {

namespace L = tessel::loop;

namespace {

/// For error messages: why a tile may use `budget` bytes of UB, and what UB a tile of `need`
/// bytes would take ("... more than the 512 available: core.buffers_bytes.ub = 1024 halved by
/// double buffering ...; it fits with core.buffers_bytes.ub >= 9280").
struct UbBudget {
  int64_t ub = 0;
  bool double_buffer = true;
  int64_t bytes() const { return double_buffer ? ub / 2 : ub; }
  std::string over(int64_t need) const {
    return fmt::format(
        "{} bytes of UB, more than the {} available: core.buffers_bytes.ub = {}{}; it fits with "
        "core.buffers_bytes.ub >= {}",
        need, bytes(), ub,
        double_buffer ? " halved by double buffering (two copies of every tile buffer)"
                      : " (single-buffered)",
        double_buffer ? 2 * need : need);
  }
};

class VectorSchedule final : public KernelSchedule {
 public:
  VectorSchedule(const KernelSpec& spec, const NpuTarget& target);
  npu::KernelProfile profile(const Knobs& knobs) const override;
  L::Stmt emit(const Knobs& knobs) const override;
  void explain_nothing_fits() const override;

 protected:
  bool check(const Knobs& knobs, std::string* why) const override;

 private:
  /// The tile extents of (tile_axis, tiles).
  std::vector<int64_t> tile_of(int64_t axis, int64_t tiles) const;
  std::vector<int64_t> tiles_per_axis(const std::vector<int64_t>& tile) const {
    std::vector<int64_t> n;
    for (size_t d = 0; d < shape.size(); ++d) n.push_back((shape[d] + tile[d] - 1) / tile[d]);
    return n;
  }
  int64_t footprint(const std::vector<int64_t>& tile) const;
  bool can_tile(size_t d, const std::vector<int64_t>& tile) const;
  /// One tile's instructions (tensorized), priced; cached per tile.
  const npu::KernelProfile& tile_profile(const std::vector<int64_t>& tile) const;

  KernelSpec spec;
  NpuTarget target;
  Shape shape;
  int64_t c_align = 1;
  TileEmitter em;
  mutable std::map<std::vector<int64_t>, int64_t> footprints_;
  mutable std::map<std::pair<size_t, std::vector<int64_t>>, bool> tileable_;
  mutable std::map<std::vector<int64_t>, npu::KernelProfile> tile_profiles_;
  mutable std::map<std::vector<int64_t>, double> tile_gm_bytes_;
};

VectorSchedule::VectorSchedule(const KernelSpec& spec_in, const NpuTarget& target_in)
    : spec(spec_in), target(target_in), shape(spec_in.out->shape), em(spec_in, target_in) {
  name_ = spec.name;
  // NC1HWC0 tensors (graph pass layout_nc1hwc0) move in C0-channel blocks: channel tiles are
  // multiples of C0 (or the whole axis). Only [N, C, H, W] kernels read or write them.
  for (const auto& [t, b] : spec.gm)
    if (is_nc1hwc0(b, t->shape.size())) {
      if (shape.size() != 4)
        fail("kernel {}: tensor '{}' is stored NC1HWC0 but the kernel's output {} is not rank 4",
             spec.name, t->name, shape_to_string(shape));
      c_align = b->shape[4];
    }
  space_.kind = "vector";
  const int64_t rank = static_cast<int64_t>(shape.size());
  Knob axis{
      "tile_axis",
      {},
      "the output axis split into tiles (later axes whole, earlier ones one element per tile)",
      {},
      false};
  std::vector<std::string> axis_names;
  for (int64_t d = 0; d < std::max<int64_t>(rank, 1); ++d) {
    axis.values.push_back(d);
    axis_names.push_back(fmt::format("axis{}", d));
  }
  axis.labels = axis_names;
  // Tile counts that some axis can take exactly: ceil(extent / t) for every tile extent t (a
  // multiple of C0 on an NC1HWC0 channel axis) giving at most kMaxDenseTiles tiles, and beyond
  // that the counts of power-of-two extents.
  constexpr int64_t kMaxDenseTiles = 256;
  Knob tiles{"tiles", {}, "tiles along tile_axis (each ceil(extent / tiles) elements)", {}, false};
  std::set<int64_t> counts{1};
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t e = shape[d], step = d == 1 && c_align > 1 ? c_align : 1;
    const int64_t dense_from = ((e + kMaxDenseTiles - 1) / kMaxDenseTiles + step - 1) / step * step;
    for (int64_t t = step; t < dense_from; t *= 2) counts.insert((e + t - 1) / t);
    for (int64_t t = dense_from; t < e; t += step) counts.insert((e + t - 1) / t);
  }
  tiles.values.assign(counts.begin(), counts.end());
  space_.knobs = {axis, tiles, double_buffer_knob(), split_knob(axis_names),
                  cores_knob(*target.hw)};
}

void VectorSchedule::explain_nothing_fits() const {
  // The smallest tile: one element per axis (a whole C0 block of channels for NC1HWC0 tensors);
  // the emitter keeps the axes a stage reduces over whole.
  std::vector<int64_t> one(shape.size(), 1);
  if (c_align > 1) one[1] = std::min(c_align, shape[1]);
  const UbBudget ub{target.hw->core.buffers_bytes.ub, double_buffered_only()};
  if (!shape.empty() && footprint(one) > ub.bytes())
    throw Unsupported(fmt::format(
        "kernel {}: even its smallest tile {} (one element per axis{}; the axes a stage reduces "
        "over are whole) needs {}",
        spec.name, shape_to_string(one), c_align > 1 ? ", whole C0 channel blocks" : "",
        ub.over(footprint(one))));
}

std::vector<int64_t> VectorSchedule::tile_of(int64_t axis, int64_t tiles) const {
  std::vector<int64_t> tile(shape.size(), 1);
  if (c_align > 1) tile[1] = std::min(c_align, shape[1]);
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) tile[d] = shape[d];
  if (shape.empty()) return tile;
  const int64_t step = axis == 1 && c_align > 1 ? c_align : 1;
  int64_t t = (shape[axis] + tiles - 1) / tiles;
  t = std::min(shape[axis], (t + step - 1) / step * step);
  tile[axis] = t;
  return tile;
}

int64_t VectorSchedule::footprint(const std::vector<int64_t>& tile) const {
  auto it = footprints_.find(tile);
  if (it != footprints_.end()) return it->second;
  return footprints_[tile] = em.footprint_bytes(tile);
}

bool VectorSchedule::check(const Knobs& k, std::string* why) const {
  if (shape.empty()) {
    if (k.at("tiles") != 1)
      return no(why, [] { return std::string("a scalar output has one tile (tiles = 1)"); });
    return check_split(k, *space_.find("split"), {1}, why);
  }
  const int64_t axis = k.at("tile_axis"), tiles = k.at("tiles");
  if (tiles > shape[axis])
    return no(why, [&] {
      return fmt::format("tiles = {} along axis {} of extent {}", tiles, axis, shape[axis]);
    });
  const std::vector<int64_t> tile = tile_of(axis, tiles);
  const std::vector<int64_t> n = tiles_per_axis(tile);
  if (n[axis] != tiles)
    return no(why, [&] {
      return fmt::format("tiles = {} along axis {}: tiles of {} elements make {} tiles", tiles,
                         axis, tile[axis], n[axis]);
    });
  if (!check_split(k, *space_.find("split"), n, why)) return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (tile[d] < shape[d] && !can_tile(d, tile))
      return no(why, [&] {
        return fmt::format(
            "axis {} (extent {}) must stay whole in one tile (a stage reduces over it), but the "
            "tile takes {}",
            d, shape[d], tile[d]);
      });
  const UbBudget ub{target.hw->core.buffers_bytes.ub, k.at("double_buffer") != 0};
  const int64_t need = footprint(tile);
  if (need > ub.bytes())
    return no(
        why, [&] { return fmt::format("tile {} needs {}", shape_to_string(tile), ub.over(need)); });
  return true;
}

bool VectorSchedule::can_tile(size_t d, const std::vector<int64_t>& tile) const {
  auto key = std::make_pair(d, tile);
  auto it = tileable_.find(key);
  if (it != tileable_.end()) return it->second;
  return tileable_[key] = em.can_tile_axis(d, tile);
}

const npu::KernelProfile& VectorSchedule::tile_profile(const std::vector<int64_t>& tile) const {
  auto it = tile_profiles_.find(tile);
  if (it != tile_profiles_.end()) return it->second;
  TileEmitter tem(spec, target);
  tem.allocate(tile);
  TileBox box;
  box.start.assign(shape.size(), L::Affine{});
  box.extent = tile;
  const L::Stmt one = tensorize_vector(tem.emit_tile(box, {}), target);
  npu::KernelProfile p;
  double gm = 0;
  // The scalar unit's own work besides issuing the pipe instructions, as codegen emits it
  // (compiler/backend/npu/codegen.cpp): a loop of extent n > 1 costs li once and addi + blti per
  // iteration; an address over k such loop variables costs muli for the first and muli + add
  // for each other (extent-1 loops are bound to 0 and cost nothing).
  double scalar = 0;
  std::set<const L::VarNode*> live;  // variables of the enclosing loops with extent > 1
  auto address_instrs = [&](const L::Expr& offset) {
    const auto a = L::to_affine(offset);
    int terms = 0;
    if (a)
      for (const auto& [v, c] : a->coeffs) terms += c != 0 && live.count(v) ? 1 : 0;
    return terms > 0 ? 2.0 * terms - 1 : 0.0;
  };
  auto region_offset = [](const L::Region& r) {
    L::Expr e = L::int_imm(r.buffer->elem_offset);
    for (size_t d = 0; d < r.starts.size(); ++d)
      e = L::add(e, L::mul(r.starts[d], L::int_imm(r.buffer->strides[d])));
    return e;
  };
  // The leaves in program order with the allocations they touch, and the GM loads among them
  // (their use index and destination) to find the set_flag each waits behind.
  std::vector<std::set<const L::BufferNode*>> leaf_buffers;
  struct Load {
    size_t use, leaf;
    const L::BufferNode* dst;
  };
  std::vector<Load> loads;
  std::function<void(const L::Stmt&, double)> walk = [&](const L::Stmt& s, double times) {
    if (!s) return;
    switch (s->kind) {
      case L::StmtKind::Seq:
        for (const auto& x : s->seq) walk(x, times);
        break;
      case L::StmtKind::For:
        if (s->extent > 1) {
          scalar += times * (1 + 2 * static_cast<double>(s->extent));
          live.insert(s->var.get());
        }
        walk(s->body, times * static_cast<double>(s->extent));
        live.erase(s->var.get());
        break;
      case L::StmtKind::Allocate:
        walk(s->body, times);
        break;
      case L::StmtKind::Copy: {
        const bool load = s->src.buffer->scope == L::MemScope::gm;
        const L::Region& g = load ? s->src : s->dst;
        p.add(*target.hw,
              make_instr(isa::Opcode::dma, region_dma(g.extents, g.buffer->strides,
                                                      (load ? s->dst : s->src).buffer->strides,
                                                      load, g.buffer->dtype)),
              times, 0, true);
        gm += times * p.uses.back().dram_bytes;
        scalar +=
            times * (address_instrs(region_offset(s->dst)) + address_instrs(region_offset(s->src)));
        if (load)
          loads.push_back({p.uses.size() - 1, leaf_buffers.size(), s->dst.buffer->storage()});
        leaf_buffers.push_back({s->src.buffer->storage(), s->dst.buffer->storage()});
        break;
      }
      case L::StmtKind::Intrin: {
        p.add(*target.hw, s->instr, times);
        std::set<const L::BufferNode*> touched;
        for (const auto& o : s->operands)
          if (o.buffer) {
            scalar += times * address_instrs(o.elem_offset);
            touched.insert(o.buffer->storage());
          }
        leaf_buffers.push_back(std::move(touched));
        break;
      }
      default:
        break;
    }
  };
  walk(one, 1.0);
  // Each load's flag: insert_sync orders it before the first later leaf that touches its
  // destination; one set_flag covers the loads whose consumers come no earlier (flag_groups).
  std::vector<int> consumers;
  for (const Load& l : loads) {
    size_t c = l.leaf + 1;
    while (c < leaf_buffers.size() && !leaf_buffers[c].count(l.dst)) ++c;
    consumers.push_back(static_cast<int>(c));
  }
  const std::vector<int> groups = flag_groups(consumers);
  for (size_t i = 0; i < loads.size(); ++i) p.uses[loads[i].use].flag_group = groups[i];
  p.scalar_per_tile = scalar;
  tile_gm_bytes_[tile] = gm;
  return tile_profiles_[tile] = p;
}

npu::KernelProfile VectorSchedule::profile(const Knobs& k) const {
  const std::vector<int64_t> tile =
      shape.empty() ? std::vector<int64_t>{} : tile_of(k.at("tile_axis"), k.at("tiles"));
  npu::KernelProfile p = tile_profile(tile);
  const std::vector<int64_t> n = tiles_per_axis(tile);
  double tiles = 1;
  for (int64_t t : n) tiles *= static_cast<double>(t);
  const int64_t cores = k.at("cores");
  double core_tiles = tiles;
  if (cores > 1) {
    const double s = static_cast<double>(n[k.at("split")]);
    core_tiles = tiles / s * std::ceil(s / static_cast<double>(cores));
  }
  p.double_buffer = k.at("double_buffer") != 0;
  p.tiles = core_tiles;
  p.dram_bytes = tiles * tile_gm_bytes_.at(tile);
  p.scalar_per_tile += 4;  // the tile loop's addi / blti and its GM address terms
  p.cores_used = static_cast<int>(cores);
  return p;
}

L::Stmt VectorSchedule::emit(const Knobs& k) const {
  require_valid(k);
  const std::vector<int64_t> tile =
      shape.empty() ? std::vector<int64_t>{} : tile_of(k.at("tile_axis"), k.at("tiles"));
  const int split_axis = k.at("cores") > 1 ? static_cast<int>(k.at("split")) : -1;
  TileEmitter em(spec, target);
  em.allocate(tile);

  // Emit the tile loops axis by axis: full tiles in a loop, the remainder as a tail.
  const size_t rank = shape.size();
  TileBox box;
  box.start.assign(rank, L::Affine{});
  box.extent.assign(rank, 0);
  std::function<L::Stmt(size_t)> emit = [&](size_t d) -> L::Stmt {
    if (d == rank) return em.emit_tile(box, {});
    const int64_t t = tile[d], n_full = shape[d] / t, rem = shape[d] % t;
    std::vector<L::Stmt> parts;
    if (static_cast<int>(d) == split_axis) {
      // Core-bound loop over the full tiles, the tail as its extra iteration (split_cores).
      L::Var v = L::make_var(fmt::format("c{}", d));
      em.register_var(v);
      L::Affine a;
      a.coeffs[v.get()] = t;
      box.start[d] = a;
      box.extent[d] = t;
      L::Stmt loop = L::for_loop(v, n_full, emit(d + 1), L::ForKind::core_bound);
      if (rem > 0) {
        L::Affine b;
        b.constant = n_full * t;
        box.start[d] = b;
        box.extent[d] = rem;
        loop->else_body = emit(d + 1);
      }
      return loop;
    }
    if (n_full == 1) {
      box.start[d] = L::Affine{};
      box.extent[d] = t;
      parts.push_back(emit(d + 1));
    } else if (n_full > 1) {
      L::Var v = L::make_var(fmt::format("t{}", d));
      em.register_var(v);
      L::Affine a;
      a.coeffs[v.get()] = t;
      box.start[d] = a;
      box.extent[d] = t;
      parts.push_back(L::for_loop(v, n_full, emit(d + 1)));
    }
    if (rem > 0) {
      L::Affine a;
      a.constant = n_full * t;
      box.start[d] = a;
      box.extent[d] = rem;
      parts.push_back(emit(d + 1));
    }
    return L::seq(parts);
  };
  L::Stmt body = emit(0);
  body->comment = fmt::format(
      "kernel {} (vector, tile {}{}{})", spec.name, shape_to_string(tile),
      k.at("double_buffer") ? "" : ", single-buffered",
      split_axis >= 0 ? fmt::format(", split axis{} over {} cores", split_axis, k.at("cores"))
                      : std::string());
  return body;
}

}  // namespace

std::unique_ptr<KernelSchedule> vector_schedule(const KernelSpec& spec, const NpuTarget& target) {
  return std::make_unique<VectorSchedule>(spec, target);
}

L::Stmt tile_vector(const KernelSpec& spec, const NpuTarget& target, const Knobs& knobs) {
  return vector_schedule(spec, target)->emit(knobs);
}

}  // namespace tessel::passes
