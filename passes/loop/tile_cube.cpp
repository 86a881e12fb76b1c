// Pass: tile_cube -- tiling for cube (matrix unit) kernels: convolution and matmul.
//
// What it does: lowers a "conv2d" or "matmul" contraction (plus elementwise epilogue stages) to
// tiles that fit the scratchpads:
//   conv  -- output tile = mt output channels x (ht x wt) pixels of one image and group; the input
//            window (kc channels x ih x iw, padded at borders) is copied GM->L1, turned into the
//            im2col matrix in L0B by img2col, the weights [mt x kc*kh*kw] go GM->L1->L0A by load2d,
//            mmad accumulates over the kc chunks into L0C, fix converts into UB.
//   matmul -- output tile mt x nt; A and B tiles GM->L1->L0A/L0B by load2d (transposing when the
//            operand is transposed), mmad over kt chunks, fix into UB.
// The epilogue stages (bias, activations) run on the UB tile via TileEmitter, then UB->GM.
// Tile sizes: the candidate that fits L1/L0A/L0B/L0C/UB with the lowest analytical cycle estimate
// (DMA, MTE1, cube, fix and vector work of all tiles, each with its start-up latency), unless
// given by knobs. Weights stay in L0A across pixel tiles when one K chunk holds them.
// Runs first (on the kernel TE). Guarantees as tile_vector, for every scratchpad.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <tuple>

#include "compiler/support/error.h"
#include "passes/loop/npu_passes.h"
#include "passes/loop/tile_emitter.h"

namespace tessel::passes {

namespace L = tessel::loop;
using isa::Opcode;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

isa::DType isa_dtype(DType t) { return t == DType::f16 ? isa::DType::f16 : isa::DType::f32; }
DType acc_dtype(const NpuTarget& t) {
  return t.hw->core.cube.acc_dtype == isa::DType::f16 ? DType::f16 : DType::f32;
}

L::Affine aff_const(int64_t c) {
  L::Affine a;
  a.constant = c;
  return a;
}
L::Affine aff_var(const L::Var& v, int64_t k, int64_t c = 0) {
  L::Affine a;
  a.coeffs[v.get()] = k;
  a.constant = c;
  return a;
}
L::Affine aff_add(L::Affine a, const L::Affine& b) {
  a.constant += b.constant;
  for (auto [v, c] : b.coeffs) {
    a.coeffs[v] += c;
    if (a.coeffs[v] == 0) a.coeffs.erase(v);
  }
  return a;
}
L::Affine aff_scale(L::Affine a, int64_t k) {
  a.constant *= k;
  for (auto& [v, c] : a.coeffs) c *= k;
  return a;
}

/// Emits `fn(start, extent)` for tiles of `t` over [0, extent): a loop over the full tiles and a
/// static tail. `fn` receives the affine start of the tile.
L::Stmt for_tiles(TileEmitter& em, const std::string& name, int64_t extent, int64_t t,
                  const std::function<L::Stmt(const L::Affine&, int64_t)>& fn,
                  bool core_bound = false) {
  const int64_t n_full = extent / t, rem = extent % t;
  if (core_bound) {  // full tiles in a core-bound loop, the tail as its extra iteration
    L::Var v = L::make_var(name);
    em.register_var(v);
    L::Stmt loop = L::for_loop(v, n_full, fn(aff_var(v, t), t), L::ForKind::core_bound);
    if (rem > 0) loop->else_body = fn(aff_const(n_full * t), rem);
    return loop;
  }
  std::vector<L::Stmt> parts;
  if (n_full == 1) {
    parts.push_back(fn(aff_const(0), t));
  } else if (n_full > 1) {
    L::Var v = L::make_var(name);
    em.register_var(v);
    parts.push_back(L::for_loop(v, n_full, fn(aff_var(v, t), t)));
  }
  if (rem > 0) parts.push_back(fn(aff_const(n_full * t), rem));
  return L::seq(parts);
}

/// Index of the loop to distribute over `cores` (the one with the most iterations, outermost on
/// ties), or -1 when no loop has two iterations.
int pick_split(const std::vector<int64_t>& counts, int cores) {
  int best = -1;
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] >= 2 &&
        (best < 0 || std::min<int64_t>(counts[i], cores) > std::min<int64_t>(counts[best], cores)))
      best = static_cast<int>(i);
  return cores > 1 ? best : -1;
}

/// Like for_tiles but the first tile is emitted separately (first = true) -- for the K loop,
/// whose first chunk initialises the accumulators.
L::Stmt for_tiles_first(TileEmitter& em, const std::string& name, int64_t extent, int64_t t,
                        const std::function<L::Stmt(const L::Affine&, int64_t, bool)>& fn) {
  std::vector<L::Stmt> parts;
  parts.push_back(fn(aff_const(0), std::min(t, extent), true));
  if (extent > t) {
    const int64_t rest = extent - t;
    const int64_t n_full = rest / t, rem = rest % t;
    if (n_full == 1) {
      parts.push_back(fn(aff_const(t), t, false));
    } else if (n_full > 1) {
      L::Var v = L::make_var(name);
      em.register_var(v);
      parts.push_back(L::for_loop(v, n_full, fn(aff_var(v, t, t), t, false)));
    }
    if (rem > 0) parts.push_back(fn(aff_const(t + n_full * t), rem, false));
  }
  return L::seq(parts);
}

template <class Args>
L::Stmt mk(Opcode op, Args args, std::vector<L::IntrinOperand> operands) {
  isa::Instruction in;
  in.op = op;
  in.args = std::move(args);
  return L::intrin(in, std::move(operands));
}

L::IntrinOperand at0(const L::Buffer& b) {
  return {b->base ? b->base : b, L::int_imm(b->elem_offset)};
}

/// Analytical cycle estimate of one transfer or instruction (occupancy + latency).
struct CostModel {
  const npu::HwConfig& hw;
  double dma(double bytes) const {
    const double bw = std::min(hw.core.mte2.bytes_per_cycle, hw.dram.bytes_per_cycle);
    return hw.core.mte2.latency_cycles + hw.dram.latency_cycles + bytes / bw;
  }
  double mte1(double bytes) const {
    return hw.core.mte1.latency_cycles + bytes / hw.core.mte1.bytes_per_cycle;
  }
  double cube(double fractals) const { return hw.core.cube.pipeline_latency_cycles + fractals; }
  double fix(double bytes) const {
    return hw.core.fix.latency_cycles + bytes / hw.core.fix.bytes_per_cycle;
  }
  double vec(double bytes) const {
    return hw.core.vector.pipeline_latency_cycles + bytes / hw.core.vector.width_bytes;
  }
};

/// For the "no tile fits" errors: one scratchpad, the bytes a tile needs there at least (all its
/// copies) and the bytes the config gives.
struct BufferNeed {
  const char* buffer;  // key under core.buffers_bytes
  int64_t need, have;
  bool halved;  // double buffering keeps two copies here
};

/// "needs 2048 bytes of L0A (2 copies of 1024: double buffering), more than
/// core.buffers_bytes.l0a = 1024" for each buffer of `needs` that is too small, joined by "; ".
std::string shortfall_text(const std::vector<BufferNeed>& needs) {
  std::string out;
  for (const BufferNeed& b : needs) {
    if (b.need <= b.have) continue;
    std::string upper = b.buffer;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    out += fmt::format(
        "{}needs {} bytes of {}{}, more than core.buffers_bytes.{} = {}", out.empty() ? "" : "; ",
        b.need, upper,
        b.halved ? fmt::format(" (2 copies of {}: double buffering)", b.need / 2) : std::string(),
        b.buffer, b.have);
  }
  if (out.empty())
    out = "fits every buffer by itself, yet no tiling was found (please report this)";
  return out;
}

struct ConvGeom {
  int64_t n, cin, h, w, cout, cg, cout_g, groups, kh, kw, oh, ow;
  int64_t sh, sw, dh, dw, pt, pl;
  int64_t in_h(int64_t ht) const { return (ht - 1) * sh + (kh - 1) * dh + 1; }
  int64_t in_w(int64_t wt) const { return (wt - 1) * sw + (kw - 1) * dw + 1; }
};

// ---------------------------------------------------------------------------------------------
// Convolution
// ---------------------------------------------------------------------------------------------
//
// Two tiling levels. L1 tile: mt output channels x (ht x wt) output pixels, the input channels in
// chunks of kc (the padded input window of a chunk, kc x in_h(ht) x in_w(wt), is one GM->L1 copy).
// The co tile's weights, mt x (cg*kh*kw), are copied to L1 once per co tile and stay there across
// the pixel tiles when they fit ("weights resident"); otherwise each K chunk's weights are copied
// with its window. L0 sub-tiles: kc0 channels x hr output rows; for each kc0 sub-chunk the weights
// go L1->L0A once (load2d of a column block), then for each row group img2col builds the im2col
// block in L0B (reading the window rows of that group via a negative pad_top) and mmad accumulates
// into that group's region of L0C. L0A and L0B alternate between two buffers (ping-pong, when
// double buffering) so MTE1 fills one while the cube reads the other.
//
// Cost: the candidates that fit are ranked by an estimate of the busiest resource -- DRAM (shared
// by the cores), MTE2, MTE1, cube, fix, vector, MTE3 of one core, each total over the core's share
// of the tiles -- plus the pipeline fill (one tile's steps in sequence); without double buffering
// the pipes serialise and the estimate is their sum.

struct ConvChoice {
  int64_t mt = 0, kc = 0, ht = 0, wt = 0;  // L1 tile
  bool w_resident = false;
  int64_t kc0 = 0, hr = 0;  // L0 sub-tile
};

L::Stmt conv_kernel(const KernelSpec& spec, const te::Tensor& conv, const NpuTarget& target,
                    CubeKnobs* knobs, std::vector<CubeKnobs>* candidates, int n_candidates) {
  const auto& hw = *target.hw;
  const int64_t m0 = hw.core.cube.m, k0 = hw.core.cube.k, n0 = hw.core.cube.n;
  const int64_t es = target.act_bytes();
  const int64_t acc_bytes = dtype_size(acc_dtype(target));
  const te::Tensor& x = conv->extra_inputs.at(0);
  const te::Tensor& w = conv->extra_inputs.at(1);
  ConvGeom g{};
  g.n = x->shape[0];
  g.cin = x->shape[1];
  g.h = x->shape[2];
  g.w = x->shape[3];
  g.cout = w->shape[0];
  g.cg = w->shape[1];
  g.kh = w->shape[2];
  g.kw = w->shape[3];
  g.groups = conv->attr("groups");
  g.cout_g = g.cout / g.groups;
  g.oh = conv->shape[2];
  g.ow = conv->shape[3];
  g.sh = conv->attr("strides", 0);
  g.sw = conv->attr("strides", 1);
  g.dh = conv->attr("dilations", 0);
  g.dw = conv->attr("dilations", 1);
  g.pt = conv->attr("pads", 0);
  g.pl = conv->attr("pads", 1);
  const int64_t khw = g.kh * g.kw;

  TileEmitter em(spec, target, {conv.get()});
  for (const auto& s : em.stages())
    if (s->is_reduce())
      throw Unsupported(
          fmt::format("kernel {}: epilogue stage {} is a reduction", spec.name, s->name));
  // NC1HWC0 tensors (graph pass layout_nc1hwc0): an NC1HWC0 input X is read into L1 as
  // [kc/C0][ih][iw][C0] blocks for img2col (c0 operand), so K chunks are whole C0 blocks; an
  // NC1HWC0 output or epilogue operand is moved in C0 blocks of output channels, so mt is too.
  const L::Buffer gx = spec.gm.at(x.get());
  const bool x_nc1hwc0 = is_nc1hwc0(gx, 4);
  const int64_t c_step = x_nc1hwc0 ? gx->shape[4] : 1;  // K chunk granularity (channels)
  int64_t mt_step = 1;                                  // co tile granularity
  if (is_nc1hwc0(spec.gm.at(spec.out.get()), 4)) mt_step = spec.gm.at(spec.out.get())->shape[4];
  for (const auto& t : em.inputs())
    if (is_nc1hwc0(spec.gm.at(t.get()), t->shape.size())) mt_step = spec.gm.at(t.get())->shape[4];
  if (x_nc1hwc0 && (g.groups != 1 || g.cg % c_step != 0))
    fail(
        "kernel {}: its input '{}' is stored NC1HWC0, which only a group-1 conv with a multiple "
        "of {} input channels reads (this conv: group {}, {} channels per group)",
        spec.name, x->name, c_step, g.groups, g.cg);
  if (g.cout_g % mt_step != 0)
    fail(
        "kernel {}: an NC1HWC0 output or epilogue operand needs a multiple of {} output channels "
        "per group (this conv: {})",
        spec.name, mt_step, g.cout_g);

  const bool db = knobs ? knobs->double_buffer : true;
  const int64_t copies = db ? 2 : 1;  // ping-pong copies of a streamed buffer
  // The knobs that reproduce a tiling (what measured selection and the caller get back).
  auto knobs_of = [db](const ConvChoice& c) {
    CubeKnobs k;
    k.mt = c.mt;
    k.kc = c.kc;
    k.ht = c.ht;
    k.wt = c.wt;
    k.weights_resident = c.w_resident;
    k.double_buffer = db;
    return k;
  };
  const int64_t l0a_cap = hw.core.buffers_bytes.l0a / copies;
  const int64_t l0b_cap = hw.core.buffers_bytes.l0b / copies;
  // The L0 sub-tile for an L1 tile: the most channels whose weights fit an L0A buffer (whole
  // fractals of K when more than one fractal), then the most rows whose im2col block fits L0B.
  auto derive_l0 = [&](ConvChoice& c) {
    const int64_t kk_cap = l0a_cap / (round_up(c.mt, m0) * es);
    int64_t kc0 = std::min(c.kc, kk_cap / khw) / c_step * c_step;
    if (kc0 < 1) return false;
    if (kc0 < c.kc && kc0 * khw > k0) {  // prefer K sub-chunks of whole fractals
      int64_t whole = kc0;
      while (whole > c_step && (whole * khw) % k0 != 0) whole -= c_step;
      if (whole * 2 >= kc0) kc0 = whole;
    }
    // The L0A buffer holds whole fractals of K: rounding up must still fit.
    while (kc0 > c_step && round_up(kc0 * khw, k0) > kk_cap) kc0 -= c_step;
    if (round_up(kc0 * khw, k0) > kk_cap) return false;
    c.kc0 = kc0;
    const int64_t kk0 = round_up(kc0 * khw, k0);
    int64_t hr = std::min(c.ht, l0b_cap / (kk0 * es) / c.wt);
    while (hr > 0 && kk0 * round_up(hr * c.wt, n0) * es > l0b_cap) --hr;
    if (hr < 1) return false;
    c.hr = hr;
    return true;
  };
  auto fits = [&](ConvChoice& c) {
    if (!derive_l0(c)) return false;
    const int64_t window = align32(c.kc * g.in_h(c.ht) * g.in_w(c.wt) * es);
    int64_t l1 = copies * window;
    if (c.w_resident) {
      l1 += align32(c.mt * g.cg * khw * es);  // one copy (no_double_buffer)
    } else {
      l1 += copies * align32(c.mt * c.kc * khw * es);
    }
    if (l1 > hw.core.buffers_bytes.l1) return false;
    const int64_t groups_per_tile = ceil_div(c.ht, c.hr);
    if (round_up(c.mt, m0) * groups_per_tile * round_up(c.hr * c.wt, n0) * acc_bytes * copies >
        hw.core.buffers_bytes.l0c)
      return false;
    return em.footprint_bytes({1, c.mt, c.ht, c.wt}) * copies <= hw.core.buffers_bytes.ub;
  };
  const int cores = hw.cores;
  // Which loop the cores split: 0 batch, 1 group, 2 co tiles, 3 output-row tiles (-1: none).
  auto split_of = [&](const ConvChoice& c) {
    return pick_split({g.n, g.groups, ceil_div(g.cout_g, c.mt), ceil_div(g.oh, c.ht)}, cores);
  };
  auto cost = [&](const ConvChoice& c) {
    const double n_co = static_cast<double>(ceil_div(g.cout_g, c.mt));
    const double n_oh = static_cast<double>(ceil_div(g.oh, c.ht));
    const double n_pix = n_oh * static_cast<double>(ceil_div(g.ow, c.wt));
    const double n_kc = static_cast<double>(ceil_div(g.cg, c.kc));
    const double ng = static_cast<double>(g.n * g.groups);
    const double tiles = ng * n_co * n_pix;
    const int split = split_of(c);
    const std::vector<double> counts{static_cast<double>(g.n), static_cast<double>(g.groups), n_co,
                                     n_oh};
    const double used = split < 0 ? 1.0 : std::min<double>(cores, counts[split]);
    const double tiles_per_core = std::ceil(tiles / used);
    // One pixel tile's work per pipe (cycles).
    const double window_bytes = static_cast<double>(g.cg * g.in_h(c.ht) * g.in_w(c.wt) * es);
    const double wtile = static_cast<double>(c.mt * g.cg * khw * es);
    const double in_bytes = window_bytes + (c.w_resident ? 0.0 : wtile);
    const double out_bytes = static_cast<double>(c.mt * c.ht * c.wt * es);
    const double n_sub = static_cast<double>(ceil_div(g.cg, c.kc0));
    const double kk0r = static_cast<double>(round_up(c.kc0 * khw, k0));
    const double n_grp = static_cast<double>(ceil_div(c.ht, c.hr));
    const double pr = n_grp * static_cast<double>(round_up(c.hr * c.wt, n0));
    const double mr = static_cast<double>(round_up(c.mt, m0));
    const double lat2 = hw.core.mte2.latency_cycles + hw.dram.latency_cycles;
    const double lat3 = hw.core.mte3.latency_cycles + hw.dram.latency_cycles;
    const double mte2 = in_bytes / hw.core.mte2.bytes_per_cycle;
    const double mte3 = out_bytes / hw.core.mte3.bytes_per_cycle;
    const double mte1 = n_sub * (mr * kk0r + kk0r * pr) * es / hw.core.mte1.bytes_per_cycle;
    const double cube = n_sub * (mr / m0) * (kk0r / k0) * (pr / n0);
    const double fix = mr * pr * acc_bytes / hw.core.fix.bytes_per_cycle;
    const double vec = static_cast<double>(1 + em.stages().size()) * c.mt * c.ht * c.wt * es /
                       hw.core.vector.width_bytes;
    const double issue = n_sub * (1 + 2 * n_grp) + n_grp + 10;  // scalar unit, 1 cycle each
    // One tile's dependence chain: window in, L0 loads, mmads, fix, epilogue (its own GM inputs
    // each wait a DMA latency), output out. Tile i+2 reuses tile i's buffers, so with double
    // buffering a tile takes at least half the chain.
    const double chain = lat2 + mte2 + mte1 + cube + fix + vec + mte3 + lat3 +
                         static_cast<double>(em.inputs().size()) * lat2;
    const double sum = chain;
    double per_tile;
    if (db) {
      per_tile = std::max(
          {mte2, mte3, mte1, cube, fix, vec, issue, chain / 2, n_kc * (lat2 + mte2 / n_kc) / 2});
    } else {
      per_tile = chain + (n_kc - 1) * lat2;
    }
    double core = tiles_per_core * per_tile + sum;
    // Resident weights: one exposed load per co tile.
    if (c.w_resident)
      core += std::ceil(ng * n_co / (split == 3 ? 1.0 : used)) *
              (lat2 + wtile / hw.core.mte2.bytes_per_cycle);
    // Shared DRAM: every byte once through the controller.
    const double dram_bytes = tiles * in_bytes + tiles * out_bytes +
                              (c.w_resident ? ng * n_co * wtile * (split == 3 ? used : 1.0) : 0.0);
    return std::max(core, dram_bytes / hw.dram.bytes_per_cycle + sum);
  };

  ConvChoice best;
  if (knobs && knobs->mt > 0) {
    best.mt = knobs->mt;
    best.kc = knobs->kc;
    best.ht = knobs->ht;
    best.wt = knobs->wt;
    best.w_resident = knobs->weights_resident;
    if (best.mt > g.cout_g || best.kc < 1 || best.kc > g.cg || best.ht < 1 || best.ht > g.oh ||
        best.wt < 1 || best.wt > g.ow)
      fail("kernel {}: conv tile knobs mt={} kc={} ht={} wt={} outside the layer ({}x{}x{}x{})",
           spec.name, best.mt, best.kc, best.ht, best.wt, g.cout_g, g.cg, g.oh, g.ow);
    if (best.kc % c_step != 0 || best.mt % mt_step != 0)
      fail(
          "kernel {}: conv tile knobs mt={} kc={}: its NC1HWC0 tensors need mt a multiple of {} "
          "and kc a multiple of {}",
          spec.name, best.mt, best.kc, mt_step, c_step);
    if (!fits(best)) fail("kernel {}: conv tile knobs do not fit the scratchpads", spec.name);
  } else {
    std::vector<int64_t> mts, kcs, wts;
    for (int64_t v = m0; v < g.cout_g; v *= 2)
      if (v % mt_step == 0) mts.push_back(v);
    mts.push_back(g.cout_g);
    for (int64_t v = g.cg;; v = ceil_div(v, 2)) {
      if (v % c_step == 0) kcs.push_back(v);
      if (v == 1) break;
    }
    for (int64_t v = g.ow;; v = ceil_div(v, 2)) {
      wts.push_back(v);
      if (v == 1) break;
    }
    double best_cost = std::numeric_limits<double>::infinity();
    std::vector<std::pair<double, ConvChoice>> ranked;
    auto consider = [&](ConvChoice c) {
      if (!fits(c)) return;
      const double v = cost(c);
      ranked.push_back({v, c});
      if (v < best_cost) {
        best_cost = v;
        best = c;
      }
    };
    for (int64_t mt : mts)
      for (int64_t kc : kcs)
        for (int64_t wt : wts)
          for (bool res : {true, false}) {
            if (wt < g.ow && best_cost < std::numeric_limits<double>::infinity() && wt * 4 < n0)
              continue;
            ConvChoice c;
            c.mt = mt;
            c.kc = kc;
            c.wt = wt;
            c.ht = 1;
            c.w_resident = res;
            if (!fits(c)) continue;
            // The most rows that fit, and a few smaller row counts (fewer halo rows are not
            // always better: the pixel tiles must also spread over the cores).
            int64_t lo = 1, hi = g.oh + 1;  // lo fits, hi does not
            while (hi - lo > 1) {
              const int64_t mid = (lo + hi) / 2;
              c.ht = mid;
              (fits(c) ? lo : hi) = mid;
            }
            for (int64_t ht = lo; ht >= 1; ht = ht / 2) {
              c.ht = ht;
              consider(c);
              if (ht == 1) break;
            }
            c.ht = std::min<int64_t>(lo, ceil_div(g.oh, std::min<int64_t>(g.oh, cores)));
            consider(c);
          }
    if (best.mt == 0) {
      // Name what the smallest tile lacks: mts.front() output channels, kcs.back() input
      // channels, one output pixel, its L0 sub-tile (one K chunk of those channels, one row).
      const int64_t mt = mts.front(), kc = kcs.back();
      const int64_t mr = round_up(mt, m0), kk0 = round_up(kc * khw, k0);
      const int64_t window = copies * align32(kc * g.in_h(1) * g.in_w(1) * es);
      const int64_t weights = std::min(align32(mt * g.cg * khw * es),  // resident: one copy
                                       copies * align32(mt * kc * khw * es));
      const auto& b = hw.core.buffers_bytes;
      const std::vector<BufferNeed> needs = {
          {"l1", window + weights, b.l1, false},
          {"l0a", copies * kk0 * mr * es, b.l0a, db},
          {"l0b", copies * kk0 * n0 * es, b.l0b, db},
          {"l0c", copies * mr * n0 * acc_bytes, b.l0c, db},
          {"ub", copies * em.footprint_bytes({1, mt, 1, 1}), b.ub, db}};
      fail(
          "kernel {}: no convolution tile fits the scratchpads: the smallest ({} output channels "
          "x {} input channel{} x 1 output pixel, {}x{} kernel{}) {}",
          spec.name, mt, kc, kc > 1 ? "s" : "", g.kh, g.kw, db ? ", double-buffered" : "",
          shortfall_text(needs));
    }
    if (candidates) {
      // The estimate ranks well between similar tilings but not always between loop structures:
      // offer the best few overall plus the best of every (mt, weights) structure.
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, bool>> seen;
      std::set<std::pair<int64_t, bool>> structures;
      auto add = [&](const ConvChoice& c) {
        if (static_cast<int>(candidates->size()) >= n_candidates) return;
        if (!seen.insert({c.mt, c.kc, c.ht, c.wt, c.w_resident}).second) return;
        structures.insert({c.mt, c.w_resident});
        candidates->push_back(knobs_of(c));
      };
      for (size_t i = 0; i < ranked.size() && i < 3; ++i) add(ranked[i].second);
      for (const auto& [v, c] : ranked)
        if (!structures.count({c.mt, c.w_resident})) add(c);
    }
  }
  const int split = split_of(best);
  if (knobs) *knobs = knobs_of(best);
  em.allocate({1, best.mt, best.ht, best.wt});

  // Scratchpad allocations (full tile; tails use views). L0A/L0B: two buffers each when double
  // buffering, alternated by the tiler itself (so the double_buffer pass leaves them).
  const int64_t kk0_full = round_up(best.kc0 * khw, k0);
  const int64_t grp_full = round_up(best.hr * best.wt, n0);  // pixel columns per row group
  const int64_t n_grp_full = ceil_div(best.ht, best.hr);
  L::Buffer l1_x = L::make_buffer("l1_x", L::MemScope::l1, target.act_dtype,
                                  {best.kc, g.in_h(best.ht), g.in_w(best.wt)});
  const int64_t w_cols = best.w_resident ? g.cg * khw : best.kc * khw;
  L::Buffer l1_w = L::make_buffer("l1_w", L::MemScope::l1, target.act_dtype, {best.mt, w_cols});
  l1_w->no_double_buffer = best.w_resident;
  std::vector<L::Buffer> l0a, l0b;
  for (int64_t i = 0; i < copies; ++i) {
    l0a.push_back(L::make_buffer(i ? "l0a_pong" : "l0a", L::MemScope::l0a, target.act_dtype,
                                 {round_up(best.mt, m0) * kk0_full}));
    l0b.push_back(L::make_buffer(i ? "l0b_pong" : "l0b", L::MemScope::l0b, target.act_dtype,
                                 {kk0_full * grp_full}));
    l0a.back()->no_double_buffer = l0b.back()->no_double_buffer = db;
  }
  L::Buffer l0c = L::make_buffer("l0c", L::MemScope::l0c, acc_dtype(target),
                                 {round_up(best.mt, m0) * n_grp_full * grp_full});
  const L::Buffer gw =
      L::make_view(spec.gm.at(w.get()), spec.gm.at(w.get())->name + "_2d", {g.cout, g.cg * khw},
                   {g.cg * khw, 1}, spec.gm.at(w.get())->elem_offset);

  auto dense_view = [](const L::Buffer& b, const Shape& shape) {
    return b->shape == shape ? b : L::make_view(b, b->name, shape, L::dense_strides(shape), 0);
  };
  // GM -> L1 copy of the weights of output channels [co, co+mt) and input channels
  // [kc0s, kc0s+kc) into l1_w's first kc*khw columns (dense).
  auto copy_weights = [&](const L::Affine& co_abs, int64_t mt, const L::Affine& kc0s, int64_t kc) {
    const int64_t kk = kc * khw;
    L::Buffer wv = dense_view(l1_w, {mt, kk});
    return L::copy(
        L::Region{wv, {L::int_imm(0), L::int_imm(0)}, {mt, kk}},
        L::Region{gw, {em.start_expr(co_abs), em.start_expr(aff_scale(kc0s, khw))}, {mt, kk}});
  };

  L::Var vn = L::make_var("bn"), vg = L::make_var("grp");
  em.register_var(vn);
  em.register_var(vg);
  const L::Affine n_idx = g.n > 1 ? aff_var(vn, 1) : aff_const(0);
  const L::Affine g_idx = g.groups > 1 ? aff_var(vg, 1) : aff_const(0);
  int64_t pp = 0, ppb = 0;  // ping-pong counters of the L0A / L0B buffers (alternate per use)

  // The L0 level of one K chunk: kc channels (chunk start kcs, relative to the group's channels)
  // of the window xv (kc x ih x iw) for an ht x wt pixel tile of mt output channels.
  auto chunk_l0 = [&](const L::Affine& kcs, int64_t kc, int64_t mt, int64_t ht, int64_t wt,
                      int64_t ih, int64_t iw, bool first_chunk) {
    std::vector<L::Stmt> s;
    const int64_t n_grp = ceil_div(ht, best.hr);
    for (int64_t c0 = 0; c0 < kc; c0 += best.kc0) {
      const int64_t kcs0 = std::min(best.kc0, kc - c0);
      const int64_t kk = kcs0 * khw;
      const int64_t buf = db ? pp++ % 2 : 0;
      // Weights of this sub-chunk: columns [(kcs + c0) * khw, +kk) of the resident tile, or
      // [c0 * khw, +kk) of the chunk's copy.
      isa::Load2dArgs a;
      a.dtype = isa_dtype(target.act_dtype);
      a.rows = static_cast<uint32_t>(mt);
      a.cols = static_cast<uint32_t>(kk);
      a.src_row_stride = best.w_resident ? w_cols : kc * khw;
      const L::Affine wcol =
          best.w_resident ? aff_add(aff_scale(kcs, khw), aff_const(c0 * khw)) : aff_const(c0 * khw);
      s.push_back(mk(Opcode::load2d, a, {at0(l0a[buf]), {l1_w, em.start_expr(wcol)}}));
      for (int64_t gi = 0; gi < n_grp; ++gi) {
        const int64_t r0 = gi * best.hr, hr = std::min(best.hr, ht - r0), p = hr * wt;
        const int64_t bbuf = db ? ppb++ % 2 : 0;
        isa::Img2colArgs ic;
        ic.dtype = isa_dtype(target.act_dtype);
        ic.c = static_cast<uint32_t>(kcs0);
        ic.h = static_cast<uint32_t>(ih);
        ic.w = static_cast<uint32_t>(iw);
        ic.kh = static_cast<uint32_t>(g.kh);
        ic.kw = static_cast<uint32_t>(g.kw);
        ic.stride_h = static_cast<uint32_t>(g.sh);
        ic.stride_w = static_cast<uint32_t>(g.sw);
        ic.dilation_h = static_cast<uint32_t>(g.dh);
        ic.dilation_w = static_cast<uint32_t>(g.dw);
        ic.pad_top = static_cast<int32_t>(-r0 * g.sh);  // the group's first window row
        ic.oh = static_cast<uint32_t>(hr);
        ic.ow = static_cast<uint32_t>(wt);
        ic.c0 = x_nc1hwc0 ? static_cast<uint32_t>(c_step) : 0;
        // Channel c0 starts at element c0 * ih * iw in both layouts ([c][ih][iw], or
        // [c/C0][ih][iw][C0] with c0 a multiple of C0).
        s.push_back(mk(Opcode::img2col, ic, {at0(l0b[bbuf]), {l1_x, L::int_imm(c0 * ih * iw)}}));
        isa::MmadArgs mm;
        mm.m1 = static_cast<uint32_t>(ceil_div(mt, m0));
        mm.k1 = static_cast<uint32_t>(ceil_div(kk, k0));
        mm.n1 = static_cast<uint32_t>(ceil_div(p, n0));
        mm.accumulate = !(first_chunk && c0 == 0);
        const int64_t c_off = gi * round_up(mt, m0) * grp_full;
        s.push_back(
            mk(Opcode::mmad, mm, {{l0c, L::int_imm(c_off)}, at0(l0a[buf]), at0(l0b[bbuf])}));
      }
    }
    return L::seq(s);
  };

  L::Stmt co_loop = for_tiles(
      em, "tco", g.cout_g, best.mt,
      [&](const L::Affine& co0, int64_t mt) {
        const L::Affine co_abs = aff_add(aff_scale(g_idx, g.cout_g), co0);
        std::vector<L::Stmt> co_body;
        if (best.w_resident) co_body.push_back(copy_weights(co_abs, mt, aff_const(0), g.cg));
        co_body.push_back(for_tiles(
            em, "toh", g.oh, best.ht,
            [&](const L::Affine& oh0, int64_t ht) {
              return for_tiles(em, "tow", g.ow, best.wt, [&](const L::Affine& ow0, int64_t wt) {
                const int64_t ih = g.in_h(ht), iw = g.in_w(wt);
                std::vector<L::Stmt> tile;
                tile.push_back(for_tiles_first(
                    em, "tkc", g.cg, best.kc, [&](const L::Affine& kcs, int64_t kc, bool first) {
                      std::vector<L::Stmt> s;
                      const L::Affine c_abs = aff_add(aff_scale(g_idx, g.cg), kcs);
                      if (x_nc1hwc0) {
                        // The window as [1][kc/C0][ih][iw][C0] blocks of the NC1HWC0 input.
                        const Shape ext{1, kc / c_step, ih, iw, c_step};
                        const std::optional<L::Affine> c1 = affine_div_exact(c_abs, c_step);
                        TESSEL_CHECK(c1.has_value(), "kernel {}: K chunk not C0-aligned",
                                     spec.name);
                        s.push_back(L::copy(
                            L::Region{dense_view(l1_x, ext), std::vector<L::Expr>(5, L::int_imm(0)),
                                      ext},
                            L::Region{
                                gx,
                                {em.start_expr(n_idx), em.start_expr(*c1),
                                 em.start_expr(aff_add(aff_scale(oh0, g.sh), aff_const(-g.pt))),
                                 em.start_expr(aff_add(aff_scale(ow0, g.sw), aff_const(-g.pl))),
                                 L::int_imm(0)},
                                ext},
                            0.0));
                        if (!best.w_resident) s.push_back(copy_weights(co_abs, mt, kcs, kc));
                        s.push_back(chunk_l0(kcs, kc, mt, ht, wt, ih, iw, first));
                        return L::seq(s);
                      }
                      L::Buffer xv = dense_view(l1_x, {1, kc, ih, iw});
                      s.push_back(L::copy(
                          L::Region{xv,
                                    {L::int_imm(0), L::int_imm(0), L::int_imm(0), L::int_imm(0)},
                                    {1, kc, ih, iw}},
                          L::Region{
                              gx,
                              {em.start_expr(n_idx), em.start_expr(c_abs),
                               em.start_expr(aff_add(aff_scale(oh0, g.sh), aff_const(-g.pt))),
                               em.start_expr(aff_add(aff_scale(ow0, g.sw), aff_const(-g.pl)))},
                              {1, kc, ih, iw}},
                          0.0));
                      if (!best.w_resident) s.push_back(copy_weights(co_abs, mt, kcs, kc));
                      s.push_back(chunk_l0(kcs, kc, mt, ht, wt, ih, iw, first));
                      return L::seq(s);
                    }));
                // Accumulators -> UB (one fix per row group), then the epilogue and the output.
                L::Buffer cv = em.ub_view(conv.get(), {1, mt, ht, wt});
                const L::IntrinOperand cv0 = at0(cv);
                const int64_t cv_off = cv->elem_offset;
                for (int64_t gi = 0, n_grp = ceil_div(ht, best.hr); gi < n_grp; ++gi) {
                  const int64_t r0 = gi * best.hr, hr = std::min(best.hr, ht - r0);
                  isa::FixArgs fx;
                  fx.dst_dtype = isa_dtype(target.act_dtype);
                  fx.m = static_cast<uint32_t>(mt);
                  fx.n = static_cast<uint32_t>(hr * wt);
                  fx.dst_row_stride = ht * wt;
                  tile.push_back(mk(Opcode::fix, fx,
                                    {{cv0.buffer, L::int_imm(cv_off + r0 * wt)},
                                     {l0c, L::int_imm(gi * round_up(mt, m0) * grp_full)}}));
                }
                TileBox box;
                box.start = {n_idx, co_abs, oh0, ow0};
                box.extent = {1, mt, ht, wt};
                tile.push_back(em.emit_tile(box, {{conv.get(), cv}}));
                return L::seq(tile);
              });
            },
            split == 3));
        return L::seq(co_body);
      },
      split == 2);
  L::Stmt body = co_loop;
  if (g.groups > 1)
    body =
        L::for_loop(vg, g.groups, body, split == 1 ? L::ForKind::core_bound : L::ForKind::serial);
  if (g.n > 1)
    body = L::for_loop(vn, g.n, body, split == 0 ? L::ForKind::core_bound : L::ForKind::serial);
  body = L::seq({body});
  body->comment =
      fmt::format("kernel {} (cube conv, mt={} kc={} ht={} wt={}, weights {}, L0 kc0={} hr={})",
                  spec.name, best.mt, best.kc, best.ht, best.wt,
                  best.w_resident ? "resident" : "streamed", best.kc0, best.hr);
  return body;
}

// ---------------------------------------------------------------------------------------------
// Matmul
// ---------------------------------------------------------------------------------------------

L::Stmt matmul_kernel(const KernelSpec& spec, const te::Tensor& mmt, const NpuTarget& target,
                      CubeKnobs* knobs, std::vector<CubeKnobs>* candidates, int n_candidates) {
  const auto& hw = *target.hw;
  const int64_t m0 = hw.core.cube.m, k0 = hw.core.cube.k, n0 = hw.core.cube.n;
  const int64_t es = target.act_bytes();
  const int64_t acc_bytes = dtype_size(acc_dtype(target));
  const te::Tensor& a = mmt->extra_inputs.at(0);
  const te::Tensor& b = mmt->extra_inputs.at(1);
  const bool ta = mmt->attr("trans_a") != 0, tb = mmt->attr("trans_b") != 0;
  if (a->shape.size() < 2 || b->shape.size() < 2)
    throw Unsupported(
        fmt::format("kernel {}: matmul with a 1-D operand is not compiled for the NPU", spec.name));
  const Shape& os = mmt->shape;
  const size_t rank = os.size();
  const int64_t M = os[rank - 2], N = os[rank - 1];
  const int64_t K = ta ? a->shape[a->shape.size() - 2] : a->shape.back();

  TileEmitter em(spec, target, {mmt.get()});
  for (const auto& s : em.stages())
    if (s->is_reduce())
      throw Unsupported(
          fmt::format("kernel {}: epilogue stage {} is a reduction", spec.name, s->name));

  struct Choice {
    int64_t mt, nt, kt;
    bool a_res = false;  // A's m tile (all of K) stays in L1 across the n tiles
  };
  auto out_ext = [&](int64_t mt, int64_t nt) {
    std::vector<int64_t> e(rank, 1);
    e[rank - 2] = mt;
    e[rank - 1] = nt;
    return e;
  };
  const bool db = knobs ? knobs->double_buffer : true;
  const auto cap = [&](int64_t bytes) { return db ? bytes / 2 : bytes; };
  auto fits = [&](const Choice& c) {
    if (c.a_res) {
      if (align32(c.mt * K * es) + (db ? 2 : 1) * align32(c.kt * c.nt * es) >
          hw.core.buffers_bytes.l1)
        return false;
    } else if (align32(c.mt * c.kt * es) + align32(c.kt * c.nt * es) >
               cap(hw.core.buffers_bytes.l1)) {
      return false;
    }
    if (round_up(c.mt, m0) * round_up(c.kt, k0) * es > cap(hw.core.buffers_bytes.l0a)) return false;
    if (round_up(c.kt, k0) * round_up(c.nt, n0) * es > cap(hw.core.buffers_bytes.l0b)) return false;
    if (round_up(c.mt, m0) * round_up(c.nt, n0) * acc_bytes > cap(hw.core.buffers_bytes.l0c))
      return false;
    return em.footprint_bytes(out_ext(c.mt, c.nt)) <= cap(hw.core.buffers_bytes.ub);
  };
  const CostModel cm{hw};
  int64_t batches = 1;
  for (size_t d = 0; d + 2 < rank; ++d) batches *= os[d];
  auto cost = [&](const Choice& c) {
    const double n_m = static_cast<double>(ceil_div(M, c.mt)),
                 n_n = static_cast<double>(ceil_div(N, c.nt));
    const double n_k = static_cast<double>(ceil_div(K, c.kt));
    const double a_chunk = (c.a_res ? 0.0 : cm.dma(c.mt * c.kt * es)) +
                           cm.mte1(round_up(c.mt, m0) * round_up(c.kt, k0) * es);
    const double b_chunk =
        cm.dma(c.kt * c.nt * es) + cm.mte1(round_up(c.kt, k0) * round_up(c.nt, n0) * es);
    const double mm = cm.cube(ceil_div(c.mt, m0) * ceil_div(c.kt, k0) * ceil_div(c.nt, n0));
    double per_tile =
        n_k * (a_chunk + mm) + cm.fix(round_up(c.mt, m0) * round_up(c.nt, n0) * acc_bytes) +
        (1 + em.stages().size()) * cm.vec(c.mt * c.nt * es) + cm.dma(c.mt * c.nt * es);
    double total = batches * n_m * n_n * per_tile;
    total += batches * n_n * (n_k == 1 && !c.a_res ? 1.0 : n_m) * n_k * b_chunk;
    if (c.a_res) total += batches * n_m * cm.dma(c.mt * K * es);
    return total;
  };
  Choice best{0, 0, 0};
  if (knobs && knobs->mt > 0) {
    best = {knobs->mt, knobs->nt, knobs->kt, knobs->a_resident};
    if (best.mt > M || best.nt < 1 || best.nt > N || best.kt < 1 || best.kt > K)
      fail("kernel {}: matmul tile knobs mt={} nt={} kt={} outside {}x{}x{}", spec.name, best.mt,
           best.nt, best.kt, M, N, K);
    if (!fits(best)) fail("kernel {}: matmul tile knobs do not fit the scratchpads", spec.name);
  } else {
    std::vector<int64_t> mts, nts;
    for (int64_t v = m0; v < M; v *= 2) mts.push_back(v);
    mts.push_back(M);
    for (int64_t v = n0; v < N; v *= 2) nts.push_back(v);
    nts.push_back(N);
    double best_cost = std::numeric_limits<double>::infinity();
    std::vector<std::pair<double, Choice>> ranked;
    for (int64_t mt : mts)
      for (int64_t nt : nts)
        for (bool a_res : {false, true}) {
          Choice c{mt, nt, 1, a_res};
          if (!fits(c)) continue;
          int64_t lo = 1, hi = K + 1;
          while (hi - lo > 1) {
            const int64_t mid = (lo + hi) / 2;
            c.kt = mid;
            (fits(c) ? lo : hi) = mid;
          }
          // Prefer whole fractals of K when K is split.
          c.kt = lo < K && lo > k0 ? lo / k0 * k0 : lo;
          const double v = cost(c);
          ranked.push_back({v, c});
          if (v < best_cost) {
            best_cost = v;
            best = c;
          }
        }
    if (best.mt == 0) {
      // Name what the smallest tile (mts.front() x nts.front(), one element of K) lacks.
      const int64_t mt = mts.front(), nt = nts.front(), copies = db ? 2 : 1;
      const auto& b = hw.core.buffers_bytes;
      const std::vector<BufferNeed> needs = {
          {"l1", copies * (align32(mt * es) + align32(nt * es)), b.l1, db},
          {"l0a", copies * round_up(mt, m0) * round_up(1, k0) * es, b.l0a, db},
          {"l0b", copies * round_up(1, k0) * round_up(nt, n0) * es, b.l0b, db},
          {"l0c", copies * round_up(mt, m0) * round_up(nt, n0) * acc_bytes, b.l0c, db},
          {"ub", copies * em.footprint_bytes(out_ext(mt, nt)), b.ub, db}};
      fail(
          "kernel {}: no matmul tile fits the scratchpads: the smallest ({} x {} outputs, K chunk "
          "of 1{}) {}",
          spec.name, mt, nt, db ? ", double-buffered" : "", shortfall_text(needs));
    }
    if (candidates) {
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      // The best few, then the best of each loop structure (A resident or not) not yet in.
      std::set<bool> structures;
      auto add = [&](const Choice& c) {
        if (static_cast<int>(candidates->size()) >= n_candidates) return;
        structures.insert(c.a_res);
        CubeKnobs k{c.mt, 0, 0, 0, c.nt, c.kt, db};
        k.a_resident = c.a_res;
        candidates->push_back(k);
      };
      for (size_t i = 0; i < ranked.size() && i + 1 < static_cast<size_t>(n_candidates); ++i)
        add(ranked[i].second);
      for (const auto& [v, c] : ranked)
        if (!structures.count(c.a_res)) add(c);
    }
  }
  const int cores = hw.cores;
  if (cores > 1 && !(knobs && knobs->mt > 0)) {
    auto n_tiles = [&](const Choice& c) { return batches * ceil_div(M, c.mt) * ceil_div(N, c.nt); };
    if (n_tiles(best) < cores && M > m0) {
      Choice c = best;
      c.mt = std::min(c.mt, round_up(ceil_div(M, cores), m0));
      if (fits(c)) best = c;
    }
    if (n_tiles(best) < cores && N > n0) {
      Choice c = best;
      c.nt = std::min(c.nt, round_up(ceil_div(N, cores), n0));
      if (fits(c)) best = c;
    }
  }
  std::vector<int64_t> loop_counts;
  for (size_t d = 0; d + 2 < rank; ++d) loop_counts.push_back(os[d]);
  loop_counts.push_back(ceil_div(N, best.nt));
  loop_counts.push_back(ceil_div(M, best.mt));
  const int split = pick_split(loop_counts, cores);
  const int split_n = static_cast<int>(rank) - 2, split_m = split_n + 1;
  if (knobs) {
    *knobs = CubeKnobs{best.mt, 0, 0, 0, best.nt, best.kt, db};
    knobs->a_resident = best.a_res;
  }
  em.allocate(out_ext(best.mt, best.nt));

  L::Buffer l1_a = L::make_buffer("l1_a", L::MemScope::l1, target.act_dtype,
                                  {best.mt * (best.a_res ? K : best.kt)});
  l1_a->no_double_buffer = best.a_res;
  L::Buffer l1_b = L::make_buffer("l1_b", L::MemScope::l1, target.act_dtype, {best.kt * best.nt});
  L::Buffer l0a = L::make_buffer("l0a", L::MemScope::l0a, target.act_dtype,
                                 {round_up(best.mt, m0) * round_up(best.kt, k0)});
  L::Buffer l0b = L::make_buffer("l0b", L::MemScope::l0b, target.act_dtype,
                                 {round_up(best.kt, k0) * round_up(best.nt, n0)});
  L::Buffer l0c = L::make_buffer("l0c", L::MemScope::l0c, acc_dtype(target),
                                 {round_up(best.mt, m0) * round_up(best.nt, n0)});
  const L::Buffer ga = spec.gm.at(a.get());
  const L::Buffer gb = spec.gm.at(b.get());
  const int64_t n_k = ceil_div(K, best.kt);
  const bool hoist_b = n_k == 1 && !best.a_res;

  // Batch loops.
  std::vector<L::Var> bvars;
  std::vector<L::Affine> bidx;
  for (size_t d = 0; d + 2 < rank; ++d) {
    L::Var v = L::make_var(fmt::format("bb{}", d));
    em.register_var(v);
    bvars.push_back(v);
    bidx.push_back(os[d] > 1 ? aff_var(v, 1) : aff_const(0));
  }
  // Region of operand `t` (A or B) for a batch index and a (row, col) window of its last 2 dims.
  auto operand_region = [&](const te::Tensor& t, const L::Buffer& gm, const L::Affine& r0,
                            int64_t rows, const L::Affine& c0, int64_t cols) {
    const size_t tr = t->shape.size();
    L::Region reg{gm, {}, {}};
    for (size_t d = 0; d + 2 < tr; ++d) {
      const size_t od = rank - 2 - (tr - 2) + d;
      reg.starts.push_back(t->shape[d] == 1 ? L::int_imm(0) : em.start_expr(bidx[od]));
      reg.extents.push_back(1);
    }
    reg.starts.push_back(em.start_expr(r0));
    reg.extents.push_back(rows);
    reg.starts.push_back(em.start_expr(c0));
    reg.extents.push_back(cols);
    return reg;
  };
  auto load = [&](const te::Tensor& t, const L::Buffer& gm, const L::Buffer& l1,
                  const L::Buffer& l0, bool trans, const L::Affine& r0, int64_t rows,
                  const L::Affine& c0, int64_t cols) {
    // Logical operand tile rows x cols (A: m x k, B: k x n); stored transposed when `trans`.
    const int64_t sr = trans ? cols : rows, sc = trans ? rows : cols;
    L::Region src = trans ? operand_region(t, gm, c0, cols, r0, rows)
                          : operand_region(t, gm, r0, rows, c0, cols);
    Shape vshape(src.extents.begin(), src.extents.end());
    L::Buffer v = L::make_view(l1, l1->name, vshape, L::dense_strides(vshape), 0);
    std::vector<L::Stmt> s;
    s.push_back(
        L::copy(L::Region{v, std::vector<L::Expr>(vshape.size(), L::int_imm(0)), vshape}, src));
    isa::Load2dArgs la;
    la.dtype = isa_dtype(target.act_dtype);
    la.rows = static_cast<uint32_t>(rows);
    la.cols = static_cast<uint32_t>(cols);
    la.src_row_stride = sc;
    la.transpose = trans;
    (void)sr;
    s.push_back(mk(Opcode::load2d, la, {at0(l0), at0(l1)}));
    return L::seq(s);
  };

  // A resident: A's m tile for all of K, copied once (stored as in GM: [mt x K], or [K x mt]
  // when transposed); each K chunk goes L1 -> L0A from its column (row) block.
  auto load_a_resident = [&](const L::Affine& k0s, int64_t mt, int64_t kt) {
    isa::Load2dArgs la;
    la.dtype = isa_dtype(target.act_dtype);
    la.rows = static_cast<uint32_t>(mt);
    la.cols = static_cast<uint32_t>(kt);
    la.src_row_stride = ta ? mt : K;
    la.transpose = ta;
    const L::Expr off = ta ? L::mul(em.start_expr(k0s), L::int_imm(mt)) : em.start_expr(k0s);
    return mk(Opcode::load2d, la, {at0(l0a), {l1_a, off}});
  };
  // One output tile: the K loop (A and B chunks, mmad), fix into UB, the epilogue and the output.
  auto output_tile = [&](const L::Affine& m0s, int64_t mt, const L::Affine& n0s, int64_t nt) {
    std::vector<L::Stmt> tile;
    tile.push_back(
        for_tiles_first(em, "tk", K, best.kt, [&](const L::Affine& k0s, int64_t kt, bool first) {
          std::vector<L::Stmt> s;
          if (best.a_res)
            s.push_back(load_a_resident(k0s, mt, kt));
          else
            s.push_back(load(a, ga, l1_a, l0a, ta, m0s, mt, k0s, kt));
          if (!hoist_b) s.push_back(load(b, gb, l1_b, l0b, tb, k0s, kt, n0s, nt));
          isa::MmadArgs mm;
          mm.m1 = static_cast<uint32_t>(ceil_div(mt, m0));
          mm.k1 = static_cast<uint32_t>(ceil_div(kt, k0));
          mm.n1 = static_cast<uint32_t>(ceil_div(nt, n0));
          mm.accumulate = !first;
          s.push_back(mk(Opcode::mmad, mm, {at0(l0c), at0(l0a), at0(l0b)}));
          return L::seq(s);
        }));
    L::Buffer cv = em.ub_view(mmt.get(), out_ext(mt, nt));
    isa::FixArgs fx;
    fx.dst_dtype = isa_dtype(target.act_dtype);
    fx.m = static_cast<uint32_t>(mt);
    fx.n = static_cast<uint32_t>(nt);
    fx.dst_row_stride = nt;
    tile.push_back(mk(Opcode::fix, fx, {at0(cv), at0(l0c)}));
    TileBox box;
    box.start = bidx;
    box.start.push_back(m0s);
    box.start.push_back(n0s);
    box.extent = out_ext(mt, nt);
    tile.push_back(em.emit_tile(box, {{mmt.get(), cv}}));
    return L::seq(tile);
  };
  L::Stmt n_loop;
  if (best.a_res) {
    // m outer, n inner: A's tile is read from GM once per m tile.
    n_loop = for_tiles(
        em, "tm", M, best.mt,
        [&](const L::Affine& m0s, int64_t mt) {
          std::vector<L::Stmt> mb;
          L::Region src = ta ? operand_region(a, ga, aff_const(0), K, m0s, mt)
                             : operand_region(a, ga, m0s, mt, aff_const(0), K);
          Shape vshape(src.extents.begin(), src.extents.end());
          L::Buffer v = L::make_view(l1_a, l1_a->name, vshape, L::dense_strides(vshape), 0);
          mb.push_back(L::copy(
              L::Region{v, std::vector<L::Expr>(vshape.size(), L::int_imm(0)), vshape}, src));
          mb.push_back(for_tiles(
              em, "tn", N, best.nt,
              [&](const L::Affine& n0s, int64_t nt) { return output_tile(m0s, mt, n0s, nt); },
              split == split_n));
          return L::seq(mb);
        },
        split == split_m);
  } else {
    n_loop = for_tiles(
        em, "tn", N, best.nt,
        [&](const L::Affine& n0s, int64_t nt) {
          std::vector<L::Stmt> nb;
          if (hoist_b) nb.push_back(load(b, gb, l1_b, l0b, tb, aff_const(0), K, n0s, nt));
          nb.push_back(for_tiles(
              em, "tm", M, best.mt,
              [&](const L::Affine& m0s, int64_t mt) { return output_tile(m0s, mt, n0s, nt); },
              split == split_m));
          return L::seq(nb);
        },
        split == split_n);
  }
  L::Stmt body = n_loop;
  for (int d = static_cast<int>(bvars.size()) - 1; d >= 0; --d)
    if (os[d] > 1)
      body = L::for_loop(bvars[d], os[d], body,
                         split == d ? L::ForKind::core_bound : L::ForKind::serial);
  body = L::seq({body});
  body->comment = fmt::format("kernel {} (cube matmul, mt={} nt={} kt={}{})", spec.name, best.mt,
                              best.nt, best.kt, best.a_res ? ", A resident" : "");
  return body;
}

}  // namespace

L::Stmt tile_cube(const KernelSpec& spec, const te::Tensor& contraction, const NpuTarget& target,
                  CubeKnobs* knobs, std::vector<CubeKnobs>* candidates, int n_candidates) {
  if (contraction->tag == "conv2d")
    return conv_kernel(spec, contraction, target, knobs, candidates, n_candidates);
  if (contraction->tag == "matmul")
    return matmul_kernel(spec, contraction, target, knobs, candidates, n_candidates);
  internal_fail("tile_cube: {} is not a cube contraction (tag '{}')", contraction->name,
                contraction->tag);
}

}  // namespace tessel::passes
