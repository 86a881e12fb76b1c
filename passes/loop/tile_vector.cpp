// Pass: tile_vector -- tiling for vector-unit kernels.
//
// What it does: chooses a tile over the kernel output's axes so that every UB buffer of one tile
// fits (innermost axes whole; the first axis that does not fit is split to the largest extent that
// does; outer axes get extent 1), then emits the tile loops -- full tiles in a loop, the remainder
// as a static tail -- with each tile's copies, stages and output copy from TileEmitter.
// Runs first (on the kernel TE). Guarantees: every scratchpad buffer has a static size that fits
// the UB budget; all loop extents and copy extents are static.
#include <fmt/format.h>

#include <functional>

#include "compiler/support/error.h"
#include "passes/loop/npu_passes.h"
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

/// Analytic tile choice: see the file comment. Axis 1 takes multiples of `c_align` channels (or
/// all of them): the whole C0 blocks of NC1HWC0 tensors.
std::vector<int64_t> choose_tile(const TileEmitter& em, const Shape& shape, const UbBudget& ub,
                                 const std::string& name, int64_t c_align) {
  const int64_t budget = ub.bytes();
  const size_t rank = shape.size();
  std::vector<int64_t> tile(rank, 1);
  if (c_align > 1) tile[1] = std::min(c_align, shape[1]);
  if (em.footprint_bytes(tile) > budget)
    throw Unsupported(fmt::format(
        "kernel {}: even its smallest tile {} (one element per axis{}; the axes a stage reduces "
        "over are whole) needs {}",
        name, shape_to_string(tile), c_align > 1 ? ", whole C0 channel blocks" : "",
        ub.over(em.footprint_bytes(tile))));
  for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
    tile[d] = shape[d];
    if (em.footprint_bytes(tile) <= budget) continue;
    if (!em.can_tile_axis(d, tile))
      fail(
          "kernel {}: axis {} (extent {}) must stay whole in one tile (a stage reduces over it): "
          "the tile {} needs {}",
          name, d, shape[d], shape_to_string(tile), ub.over(em.footprint_bytes(tile)));
    // Binary search over units of g elements (g = c_align on the channel axis, else 1).
    const int64_t g = d == 1 && c_align > 1 ? c_align : 1;
    int64_t lo = 1, hi = (shape[d] + g - 1) / g;  // lo * g fits, hi * g does not
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      tile[d] = mid * g;
      (em.footprint_bytes(tile) <= budget ? lo : hi) = mid;
    }
    tile[d] = std::min(lo * g, shape[d]);
    if (em.footprint_bytes(tile) > budget)
      throw Unsupported(
          fmt::format("kernel {}: a tile of {} channels (whole NC1HWC0 blocks) needs {}", name,
                      tile[d], ub.over(em.footprint_bytes(tile))));
    break;
  }
  return tile;
}

}  // namespace

L::Stmt tile_vector(const KernelSpec& spec, const NpuTarget& target, VectorKnobs* knobs) {
  TileEmitter em(spec, target);
  const Shape& shape = spec.out->shape;
  const bool db = knobs ? knobs->double_buffer : true;
  const UbBudget ub{target.hw->core.buffers_bytes.ub, db};
  const int64_t budget = ub.bytes();
  // NC1HWC0 tensors (graph pass layout_nc1hwc0) move in C0-channel blocks: channel tiles are
  // multiples of C0 (or the whole axis). Only [N, C, H, W] kernels read or write them.
  int64_t c_align = 1;
  for (const auto& [t, b] : spec.gm)
    if (is_nc1hwc0(b, t->shape.size())) {
      if (shape.size() != 4)
        fail("kernel {}: tensor '{}' is stored NC1HWC0 but the kernel's output {} is not rank 4",
             spec.name, t->name, shape_to_string(shape));
      c_align = b->shape[4];
    }
  std::vector<int64_t> tile;
  if (knobs && !knobs->tile.empty()) {
    tile = knobs->tile;
    if (tile.size() != shape.size())
      fail("kernel {}: tile knob has {} entries, output rank is {}", spec.name, tile.size(),
           shape.size());
    for (size_t d = 0; d < tile.size(); ++d)
      if (tile[d] < 1 || tile[d] > shape[d])
        fail("kernel {}: tile[{}] = {} outside 1..{}", spec.name, d, tile[d], shape[d]);
    if (c_align > 1 && tile[1] % c_align != 0 && tile[1] != shape[1])
      fail("kernel {}: tile[1] = {} channels; its NC1HWC0 tensors need a multiple of {}", spec.name,
           tile[1], c_align);
    if (em.footprint_bytes(tile) > budget)
      fail("kernel {}: tile {} needs {}", spec.name, shape_to_string(tile),
           ub.over(em.footprint_bytes(tile)));
  } else {
    tile = choose_tile(em, shape, ub, spec.name, c_align);
  }
  // Multicore: the tiles of one axis are distributed over the cores. When the tile leaves fewer
  // tiles than cores, the outermost axis with at least as many elements as cores (else the
  // longest axis) is split finer.
  const int cores = target.hw->cores;
  auto tiles_of = [&](size_t d) { return (shape[d] + tile[d] - 1) / tile[d]; };
  int64_t total = 1;
  for (size_t d = 0; d < shape.size(); ++d) total *= tiles_of(d);
  if (cores > 1 && total < cores && !shape.empty() && !(knobs && !knobs->tile.empty())) {
    int best = -1;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] >= cores) {
        best = static_cast<int>(d);
        break;
      }
    if (best < 0)
      for (size_t d = 0; d < shape.size(); ++d)
        if (best < 0 || shape[d] > shape[best]) best = static_cast<int>(d);
    const int64_t want = std::min<int64_t>(shape[best], cores);
    std::vector<int64_t> finer = tile;
    finer[best] = std::min(tile[best], (shape[best] + want - 1) / want);
    if (best == 1 && c_align > 1)
      finer[1] = std::min(tile[1], std::max(c_align, finer[1] / c_align * c_align));
    // A finer split of an axis some stage reduces over has no common region: keep the tile.
    if (em.can_tile_axis(best, finer) && em.footprint_bytes(finer) <= budget) tile = finer;
  }
  int split_axis = -1;
  if (cores > 1) {
    int64_t best_tiles = 1;
    for (size_t d = 0; d < shape.size(); ++d)
      if (std::min<int64_t>(tiles_of(d), cores) > std::min<int64_t>(best_tiles, cores)) {
        best_tiles = tiles_of(d);
        split_axis = static_cast<int>(d);
      }
  }
  if (knobs) knobs->tile = tile;
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
  body->comment = fmt::format("kernel {} (vector, tile {})", spec.name, shape_to_string(tile));
  return body;
}

}  // namespace tessel::passes
