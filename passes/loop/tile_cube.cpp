// Pass: tile_cube -- tiling for cube (matrix unit) kernels: convolution and matmul.
//
// What it does: exposes the schedule space of a "conv2d" or "matmul" contraction (plus elementwise
// epilogue stages) and lowers the point it is handed to tiles that fit the scratchpads:
//   conv  -- output tile = mt output channels x (ht x wt) pixels of one image and group; the input
//            window (kc channels x ih x iw, padded at borders) is copied GM->L1, turned into the
//            im2col matrix in L0B by img2col, the weights [mt x kc*kh*kw] go GM->L1->L0A by load2d,
//            mmad accumulates over the kc chunks into L0C, fix converts into UB.
//   matmul -- output tile mt x nt; A and B tiles GM->L1->L0A/L0B by load2d (transposing when the
//            operand is transposed), mmad over kt chunks, fix into UB.
// The epilogue stages (bias, activations) run on the UB tile via TileEmitter, then UB->GM.
// A matmul marked int8 (compiler/backend/npu/int8_ops.h: QLinearMatMul, MatMulInteger) runs in
// the cube's int8 mode: i8/u8 operands at 1 byte in L1/L0A/L0B, the int8 fractal
// (core.cube.int8), int32 accumulators, and a fix that reads the tile's slice of the kernel's
// table (bias, scale; GM -> UB per tile) and writes i32 or requantised i8/u8.
// The knobs (schedule.h): tile sizes per level (L1 tile; L0 sub-chunks k_sub and row groups for
// conv), the loop order (weights_resident / a_resident), double buffering, the loop split over the
// cores and how many cores take part. The pass never ranks points: default_knobs / the tuner choose
// one; every point that does not fit is rejected with the buffer, the bytes needed and available.
// profile() describes a point to the analytical model (npu_model/cost_model.h).
// Runs first (on the kernel TE). Guarantees as tile_vector, for every scratchpad.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "compiler/support/error.h"
#include "compiler/support/int_math.h"
#include "passes/loop/npu_passes.h"
#include "passes/loop/schedule.h"
#include "passes/loop/schedule_util.h"
#include "passes/loop/tile_emitter.h"

namespace tessel::passes {

namespace L = tessel::loop;
using isa::Opcode;

namespace {

DType acc_dtype(const NpuTarget& t) {
  return t.hw->core.cube.acc_dtype == isa::DType::f16 ? DType::f16 : DType::f32;
}

/// The core-set size of a copy that every core of a split reads alike: the split's core count
/// when the NPU multicasts (memory.multicast) and `shared`, else 0 (a plain dma). The cost model
/// counts such a copy's GM bytes once per set (profile()).
int shared_operand_cores(const npu::HwConfig& hw, int64_t cores, bool shared) {
  return hw.multicast && shared && cores > 1 ? static_cast<int>(cores) : 0;
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

/// "needs N bytes of BUF, M available (core.buffers_bytes.BUF C[, halved for double buffering])".
std::string overflow(const char* what, const char* buf, int64_t need, int64_t cap, int64_t total,
                     bool halved) {
  return fmt::format("{} needs {} bytes of {}, {} available (core.buffers_bytes.{} = {}{})", what,
                     need, buf, cap, buf, total, halved ? ", halved for double buffering" : "");
}

/// The set_flag groups (npu::InstrUse::flag_group) of the epilogue's GM -> UB loads start here,
/// after the K step's loads (group 0) and the int8 table (its own set_flag).
constexpr int kEpilogueFlagGroup = 2;

/// The epilogue of a cube tile for the cost model: per input of the epilogue stages one GM -> UB
/// dma of its box, per stage its vector instructions (one per arithmetic node, over the tile's
/// rows), the UB -> GM dma of the output tile. The loads wait behind the set_flags insert_sync
/// gives them (flag_groups: an input first read by a later stage gets its own).
void add_epilogue(npu::KernelProfile& p, const KernelSpec& spec, const TileEmitter& em,
                  const NpuTarget& target, const TileBox& box, int64_t rows, double* gm_bytes,
                  std::vector<double>* gm_parts = nullptr) {
  const auto& hw = *target.hw;
  const auto boxes = em.infer(box);
  std::vector<const te::TensorNode*> loaded;
  std::vector<int> consumers;
  for (const auto& t : em.inputs()) {
    if (!boxes.count(t.get())) continue;
    int first = static_cast<int>(em.stages().size());
    for (size_t s = 0; s < em.stages().size() && first == static_cast<int>(em.stages().size()); ++s)
      for (const auto& in : te::direct_inputs(em.stages()[s]))
        if (in.get() == t.get()) first = static_cast<int>(s);
    loaded.push_back(t.get());
    consumers.push_back(first);
  }
  const std::vector<int> groups = flag_groups(consumers);
  for (size_t i = 0; i < loaded.size(); ++i) {
    const te::TensorNode* t = loaded[i];
    p.add(
        hw,
        make_instr(Opcode::dma, box_dma(spec.gm.at(t), boxes.at(t).extent, true, target.act_dtype)),
        1, 0, true, kEpilogueFlagGroup + groups[i]);
    *gm_bytes += p.uses.back().dram_bytes;
    if (gm_parts) gm_parts->push_back(p.uses.back().dram_bytes);
  }
  const int64_t elems = shape_numel(box.extent);
  isa::VectorArgs v;
  v.dtype = isa_dtype(target.act_dtype);
  v.repeat = static_cast<uint32_t>(std::max<int64_t>(1, rows));
  v.count = static_cast<uint32_t>(std::max<int64_t>(1, elems / std::max<int64_t>(1, rows)));
  for (const auto& s : em.stages())
    p.add(hw, make_instr(Opcode::vadd, v), std::max(1, arithmetic_nodes(s->body)));
  p.add(hw,
        make_instr(Opcode::dma,
                   box_dma(spec.gm.at(spec.out.get()), box.extent, false, target.act_dtype)),
        1, 0, true);
  *gm_bytes += p.uses.back().dram_bytes;
  if (gm_parts) gm_parts->push_back(p.uses.back().dram_bytes);
}

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

/// Throws the error of a cube kernel none of whose tiles fits: "kernel K: no WHAT tile fits the
/// scratchpads: the smallest (SMALLEST[, double-buffered]) " and what each buffer lacks
/// (shortfall_text).
[[noreturn]] void fail_no_tile_fits(const std::string& kernel, const char* what,
                                    const std::string& smallest, bool double_buffered,
                                    const std::vector<BufferNeed>& needs) {
  fail("kernel {}: no {} tile fits the scratchpads: the smallest ({}{}) {}", kernel, what, smallest,
       double_buffered ? ", double-buffered" : "", shortfall_text(needs));
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
// the pixel tiles ("weights resident"); otherwise each K chunk's weights are copied with its
// window. L0 sub-tiles: kc0 channels (k_sub sub-chunks per K chunk) x hr output rows (row_groups
// per pixel tile); for each kc0 sub-chunk the weights go L1->L0A once (load2d of a column block),
// then for each row group img2col builds the im2col block in L0B (reading the window rows of that
// group via a negative pad_top) and mmad accumulates into that group's region of L0C. L0A and L0B
// alternate between two buffers (ping-pong, when double buffering) so MTE1 fills one while the
// cube reads the other. The cores split the batch, the groups, the co tiles or the output-row
// tiles.

struct ConvChoice {
  int64_t mt = 0, kc = 0, ht = 0, wt = 0;  // L1 tile
  bool w_resident = false;
  int64_t kc0 = 0, hr = 0;  // L0 sub-tile
  int64_t k_sub = 1, row_groups = 1;
  bool db = true;
  int split = -1;  // core-bound loop: 0 batch, 1 group, 2 co tiles, 3 row tiles (-1: one core)
  int64_t cores = 1;
};

class ConvSchedule final : public KernelSchedule {
 public:
  ConvSchedule(const KernelSpec& spec, const te::Tensor& conv, const NpuTarget& target);
  npu::KernelProfile profile(const Knobs& knobs) const override;
  L::Stmt emit(const Knobs& knobs) const override;
  void explain_nothing_fits() const override;

 protected:
  bool check(const Knobs& knobs, std::string* why) const override;

 public:
  bool derive(Knobs& knobs) const override;

 private:
  ConvChoice decode(const Knobs& k) const;
  std::vector<int64_t> split_tiles(const ConvChoice& c) const {
    return {g.n, g.groups, ceil_div(g.cout_g, c.mt), ceil_div(g.oh, c.ht)};
  }
  int64_t footprint(int64_t mt, int64_t ht, int64_t wt) const;
  /// The split-independent part of a point's profile (cached): the per-tile instructions and
  /// their GM bytes, the resident weights' load.
  struct Base {
    npu::KernelProfile profile;
    double tile_gm_bytes = 0;
    double tile_x_bytes = 0, tile_w_bytes = 0;  // of tile_gm_bytes: input windows, streamed weights
    int weights_use = -1;  // index of the resident weights' dma in profile.uses
    double weights_bytes = 0;
  };
  const Base& base(const ConvChoice& c) const;

  KernelSpec spec;
  te::Tensor conv;
  NpuTarget target;
  ConvGeom g{};
  int64_t khw = 1, m0 = 16, k0 = 16, n0 = 16, es = 2, acc_bytes = 4;
  // The cube's int8 mode (a conv marked int8 by compiler/backend/npu/int8_ops.h: QLinearConv,
  // ConvInteger): x and W' in their own 1-byte types, the window's border padded with x's zero
  // point, int32 accumulators, and fix applies the table `quant` per output channel (a row of the
  // accumulators: fix per_row) when per_channel, else its one entry.
  bool int8 = false, per_channel = false;
  int32_t zero_point = 0;
  double pad_value = 0;
  DType x_dt = DType::f16, w_dt = DType::f16, acc_dt = DType::f32;
  te::Tensor quant;
  /// The int8 mode's table entries one tile of mt output channels reads (0 in the float mode).
  int64_t quant_entries(int64_t mt) const { return !int8 ? 0 : per_channel ? mt : 1; }
  /// The fix's destination dtype: the output's in the int8 mode, else the activation dtype.
  isa::DType fix_dtype() const {
    return isa_dtype(int8 ? target.storage(conv->dtype) : target.act_dtype);
  }
  bool x_nc1hwc0 = false;
  int64_t c_step = 1, mt_step = 1;
  TileEmitter em;
  mutable std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> footprints_;
  mutable std::map<std::array<int64_t, 8>, Base> bases_;
  /// The epilogue's part of a profile per L1 tile (mt, ht, wt): its uses and, in order, what each
  /// adds to a tile's GM bytes (add_epilogue; replayed in the same order, so the sums are exact).
  struct Epilogue {
    std::vector<npu::InstrUse> uses;
    std::vector<double> gm_bytes;
  };
  mutable std::map<std::tuple<int64_t, int64_t, int64_t>, Epilogue> epilogues_;
};

ConvSchedule::ConvSchedule(const KernelSpec& spec_in, const te::Tensor& conv_in,
                           const NpuTarget& target_in)
    : spec(spec_in), conv(conv_in), target(target_in), em(spec_in, target_in, {conv_in.get()}) {
  name_ = spec.name;
  const auto& hw = *target.hw;
  m0 = hw.core.cube.m;
  k0 = hw.core.cube.k;
  n0 = hw.core.cube.n;
  es = target.act_bytes();
  acc_bytes = dtype_size(acc_dtype(target));
  const te::Tensor& x = conv->extra_inputs.at(0);
  const te::Tensor& w = conv->extra_inputs.at(1);
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
  khw = g.kh * g.kw;
  x_dt = w_dt = target.act_dtype;
  acc_dt = acc_dtype(target);
  if (conv->attrs.count("int8")) {
    int8 = true;
    const npu::CubeFractal f = hw.core.cube.int8_fractal();
    m0 = f.m, k0 = f.k, n0 = f.n;
    es = 1;
    acc_bytes = 4;
    x_dt = x->dtype, w_dt = w->dtype, acc_dt = DType::i32;
    quant = conv->extra_inputs.at(2);
    per_channel = conv->attr("per_channel") != 0;
    zero_point = static_cast<int32_t>(conv->attr("zero_point"));
    pad_value = static_cast<double>(conv->attr("pad_value"));
  }
  for (const auto& s : em.stages())
    if (s->is_reduce())
      throw Unsupported(
          fmt::format("kernel {}: epilogue stage {} is a reduction", spec.name, s->name));
  // NC1HWC0 tensors (graph pass layout_nc1hwc0): an NC1HWC0 input X is read into L1 as
  // [kc/C0][ih][iw][C0] blocks for img2col (c0 operand), so K chunks are whole C0 blocks; an
  // NC1HWC0 output or epilogue operand is moved in C0 blocks of output channels, so mt is too.
  const L::Buffer gx = spec.gm.at(x.get());
  x_nc1hwc0 = is_nc1hwc0(gx, 4);
  if (int8 && x_nc1hwc0)
    fail("kernel {}: an int8 conv reads its input '{}' NCHW, not NC1HWC0", spec.name, x->name);
  c_step = x_nc1hwc0 ? gx->shape[4] : 1;
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

  space_.kind = "conv";
  Knob mt{"mt",
          {},
          mt_step > 1
              ? fmt::format("output channels per L1 tile (mt a multiple of {}: an output or "
                            "epilogue operand is stored NC1HWC0)",
                            mt_step)
              : std::string("output channels per L1 tile"),
          {},
          false};
  for (int64_t v = m0; v < g.cout_g; v *= 2)
    if (v % mt_step == 0) mt.values.push_back(v);
  mt.values.push_back(g.cout_g);
  std::sort(mt.values.rbegin(), mt.values.rend());
  Knob kc{"kc",
          {},
          x_nc1hwc0 ? fmt::format("input channels per K chunk (kc a multiple of {}: the input is "
                                  "stored NC1HWC0)",
                                  c_step)
                    : std::string("input channels per K chunk (one GM->L1 window copy)"),
          {},
          false};
  for (int64_t v = g.cg;; v = ceil_div(v, 2)) {
    if (v % c_step == 0 && std::find(kc.values.begin(), kc.values.end(), v) == kc.values.end())
      kc.values.push_back(v);
    if (v == 1) break;
  }
  Knob ht{"ht", tile_extent_values(g.oh), "output rows per L1 tile", {}, false};
  Knob wt{"wt", tile_extent_values(g.ow), "output columns per L1 tile", {}, false};
  Knob res{"weights_resident",
           {1, 0},
           "loop order: the co tile's weights stay in L1 across the pixel tiles (1) or stream with "
           "every K chunk (0)",
           {},
           false};
  Knob ksub{"k_sub", {}, "L0 sub-chunks per K chunk (kc0 = ceil(kc / k_sub) channels)", {}, true};
  for (int64_t v = 1; v <= g.cg / c_step; v *= 2) ksub.values.push_back(v);
  Knob rg{"row_groups", {}, "L0 row groups per pixel tile (hr = ceil(ht / row_groups))", {}, true};
  for (int64_t v : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32})
    if (v <= g.oh) rg.values.push_back(v);
  space_.knobs = {mt,
                  kc,
                  ht,
                  wt,
                  res,
                  ksub,
                  rg,
                  double_buffer_knob(),
                  split_knob({"batch", "group", "cout", "rows"}),
                  cores_knob(hw)};
}

ConvChoice ConvSchedule::decode(const Knobs& k) const {
  ConvChoice c;
  c.mt = k.at("mt");
  c.kc = k.at("kc");
  c.ht = k.at("ht");
  c.wt = k.at("wt");
  c.w_resident = k.at("weights_resident") != 0;
  c.k_sub = k.at("k_sub");
  c.row_groups = k.at("row_groups");
  c.kc0 = std::min(c.kc, round_up(ceil_div(c.kc, c.k_sub), c_step));
  c.hr = ceil_div(c.ht, c.row_groups);
  c.db = k.at("double_buffer") != 0;
  c.cores = k.at("cores");
  c.split = c.cores > 1 ? static_cast<int>(k.at("split")) : -1;
  return c;
}

int64_t ConvSchedule::footprint(int64_t mt, int64_t ht, int64_t wt) const {
  auto key = std::make_tuple(mt, ht, wt);
  auto it = footprints_.find(key);
  if (it != footprints_.end()) return it->second;
  const int64_t f = em.footprint_bytes({1, mt, ht, wt});
  footprints_[key] = f;
  return f;
}

bool ConvSchedule::check(const Knobs& knobs, std::string* why) const {
  const ConvChoice c = decode(knobs);
  const auto& hw = *target.hw;
  if (!check_split(knobs, *space_.find("split"), split_tiles(c), why)) return false;
  if (ceil_div(c.kc, c.kc0) != c.k_sub)
    return no(why, [&] {
      return fmt::format("k_sub = {} with kc = {}: sub-chunks of {} channels make {} sub-chunks",
                         c.k_sub, c.kc, c.kc0, ceil_div(c.kc, c.kc0));
    });
  if (ceil_div(c.ht, c.hr) != c.row_groups)
    return no(why, [&] {
      return fmt::format("row_groups = {} with ht = {}: groups of {} rows make {} groups",
                         c.row_groups, c.ht, c.hr, ceil_div(c.ht, c.hr));
    });
  const int64_t copies = c.db ? 2 : 1;
  const auto& b = hw.core.buffers_bytes;
  const int64_t window = align32(c.kc * g.in_h(c.ht) * g.in_w(c.wt) * es);
  int64_t l1 = copies * window;
  l1 += c.w_resident ? align32(c.mt * g.cg * khw * es) : copies * align32(c.mt * c.kc * khw * es);
  if (l1 > b.l1)
    return no(why, [&] {
      return overflow(c.w_resident ? "the input window and the resident weights"
                                   : "the input window and a K chunk of weights",
                      "l1", l1, b.l1, b.l1, false);
    });
  const int64_t kk0 = round_up(c.kc0 * khw, k0);
  const int64_t l0a = round_up(c.mt, m0) * kk0 * es;
  if (l0a > b.l0a / copies)
    return no(why, [&] {
      return overflow("the weights of one L0 sub-chunk", "l0a", l0a, b.l0a / copies, b.l0a, c.db);
    });
  const int64_t l0b = kk0 * round_up(c.hr * c.wt, n0) * es;
  if (l0b > b.l0b / copies)
    return no(why, [&] {
      return overflow("the im2col block of one row group", "l0b", l0b, b.l0b / copies, b.l0b, c.db);
    });
  const int64_t l0c =
      round_up(c.mt, m0) * c.row_groups * round_up(c.hr * c.wt, n0) * acc_bytes * copies;
  if (l0c > b.l0c)
    return no(why, [&] {
      return overflow("the accumulators of the pixel tile", "l0c", l0c, b.l0c, b.l0c, false);
    });
  const int64_t ub =
      (footprint(c.mt, c.ht, c.wt) + align32(quant_entries(c.mt) * isa::kFixQuantEntryBytes)) *
      copies;
  if (ub > b.ub)
    return no(why, [&] {
      return overflow("the output tile and its epilogue", "ub", ub, b.ub, b.ub, c.db);
    });
  return true;
}

void ConvSchedule::explain_nothing_fits() const {
  // Name what the smallest tile lacks: the fewest output channels, the fewest input channels per
  // K chunk, one output pixel, its L0 sub-tile (one K chunk of those channels, one row).
  const bool db = double_buffered_only();
  const int64_t copies = db ? 2 : 1;
  const int64_t mt = space_.find("mt")->values.back(), kc = space_.find("kc")->values.back();
  const int64_t mr = round_up(mt, m0), kk0 = round_up(kc * khw, k0);
  const int64_t window = copies * align32(kc * g.in_h(1) * g.in_w(1) * es);
  const int64_t weights = std::min(align32(mt * g.cg * khw * es),  // resident: one copy
                                   copies * align32(mt * kc * khw * es));
  const auto& b = target.hw->core.buffers_bytes;
  const std::vector<BufferNeed> needs = {{"l1", window + weights, b.l1, false},
                                         {"l0a", copies * kk0 * mr * es, b.l0a, db},
                                         {"l0b", copies * kk0 * n0 * es, b.l0b, db},
                                         {"l0c", copies * mr * n0 * acc_bytes, b.l0c, db},
                                         {"ub", copies * footprint(mt, 1, 1), b.ub, db}};
  fail_no_tile_fits(spec.name, "convolution",
                    fmt::format("{} output channels x {} input channel{} x 1 output pixel, {}x{} "
                                "kernel",
                                mt, kc, kc > 1 ? "s" : "", g.kh, g.kw),
                    db, needs);
}

bool ConvSchedule::derive(Knobs& knobs) const {
  // The fewest L0 sub-chunks whose weights fit L0A, then the fewest row groups whose im2col block
  // fits L0B and accumulators fit L0C.
  const int64_t mt = knobs.at("mt"), kc = knobs.at("kc"), ht = knobs.at("ht"), wt = knobs.at("wt");
  const int64_t copies = knobs.at("double_buffer") ? 2 : 1;
  const auto& b = target.hw->core.buffers_bytes;
  for (int64_t ks : space_.find("k_sub")->values) {
    const int64_t kc0 = std::min(kc, round_up(ceil_div(kc, ks), c_step));
    if (ceil_div(kc, kc0) != ks) continue;
    const int64_t kk0 = round_up(kc0 * khw, k0);
    if (round_up(mt, m0) * kk0 * es > b.l0a / copies) continue;
    for (int64_t rg : space_.find("row_groups")->values) {
      const int64_t hr = ceil_div(ht, rg);
      if (ceil_div(ht, hr) != rg) continue;
      if (kk0 * round_up(hr * wt, n0) * es > b.l0b / copies) continue;
      if (round_up(mt, m0) * rg * round_up(hr * wt, n0) * acc_bytes * copies > b.l0c) continue;
      knobs["k_sub"] = ks;
      knobs["row_groups"] = rg;
      return valid(knobs);
    }
    return false;  // more sub-chunks only shrink L0A's part, not L0B's or L0C's
  }
  return false;
}

const ConvSchedule::Base& ConvSchedule::base(const ConvChoice& c) const {
  const std::array<int64_t, 8> key{c.mt,         c.kc, c.ht,    c.wt,
                                   c.w_resident, c.db, c.k_sub, c.row_groups};
  auto it = bases_.find(key);
  if (it != bases_.end()) return it->second;
  if (bases_.size() > 1024) bases_.clear();
  Base& base = bases_[key];
  const auto& hw = *target.hw;
  npu::KernelProfile& p = base.profile;
  p.double_buffer = c.db;
  const int64_t n_kc = ceil_div(g.cg, c.kc);
  const int64_t ih = g.in_h(c.ht), iw = g.in_w(c.wt);
  double tile_gm = 0;
  // GM -> L1: the input window of one K chunk (valid rows and columns only).
  {
    isa::DmaArgs d;
    d.dtype = isa_dtype(x_dt);
    d.src.scope = isa::Scope::gm;
    d.dst.scope = isa::Scope::l1;
    const int64_t vh = std::min(ih, g.h), vw = std::min(iw, g.w);
    if (x_nc1hwc0) {
      d.ndims = 4;
      d.extent = {static_cast<uint32_t>(c.kc / c_step), static_cast<uint32_t>(vh),
                  static_cast<uint32_t>(vw), static_cast<uint32_t>(c_step)};
      d.src_stride = {g.h * g.w * c_step, g.w * c_step, c_step, 1};
    } else {
      d.ndims = 3;
      d.extent = {static_cast<uint32_t>(c.kc), static_cast<uint32_t>(vh), static_cast<uint32_t>(vw),
                  0};
      d.src_stride = {g.h * g.w, g.w, 1, 0};
    }
    for (int k = 0; k < d.ndims; ++k) d.valid_end[k] = d.extent[k];
    p.add(hw, make_instr(Opcode::dma, d), static_cast<double>(n_kc), 0, true, 0);
    tile_gm += n_kc * p.uses.back().dram_bytes;
    base.tile_x_bytes = n_kc * p.uses.back().dram_bytes;
  }
  // GM -> L1: the weights, per K chunk (streamed) or once per co tile (resident).
  isa::DmaArgs wd;
  wd.dtype = isa_dtype(w_dt);
  wd.src.scope = isa::Scope::gm;
  wd.dst.scope = isa::Scope::l1;
  wd.ndims = 2;
  wd.extent = {static_cast<uint32_t>(c.mt),
               static_cast<uint32_t>((c.w_resident ? g.cg : c.kc) * khw), 0, 0};
  wd.src_stride = {g.cg * khw, 1, 0, 0};
  wd.valid_end = wd.extent;
  if (c.w_resident) {
    p.add(hw, make_instr(Opcode::dma, wd), 0, 0, true, 0);
    base.weights_use = static_cast<int>(p.uses.size()) - 1;
    base.weights_bytes = p.uses.back().dram_bytes;
  } else {
    p.add(hw, make_instr(Opcode::dma, wd), static_cast<double>(n_kc), 0, true, 0);
    tile_gm += n_kc * p.uses.back().dram_bytes;
    base.tile_w_bytes = n_kc * p.uses.back().dram_bytes;
  }
  // L1 -> L0A (weights sub-chunk), L1 -> L0B (im2col of a row group), mmad, fix per row group.
  const double subs = static_cast<double>(n_kc * c.k_sub);
  isa::Load2dArgs la;
  la.dtype = isa_dtype(w_dt);
  la.dst.scope = isa::Scope::l0a;
  la.src.scope = isa::Scope::l1;
  la.rows = static_cast<uint32_t>(c.mt);
  la.cols = static_cast<uint32_t>(c.kc0 * khw);
  p.add(hw, make_instr(Opcode::load2d, la), subs);
  isa::Img2colArgs ic;
  ic.dtype = isa_dtype(x_dt);
  ic.dst.scope = isa::Scope::l0b;
  ic.src.scope = isa::Scope::l1;
  ic.c = static_cast<uint32_t>(c.kc0);
  ic.h = static_cast<uint32_t>(ih);
  ic.w = static_cast<uint32_t>(iw);
  ic.kh = static_cast<uint32_t>(g.kh);
  ic.kw = static_cast<uint32_t>(g.kw);
  ic.stride_h = static_cast<uint32_t>(g.sh);
  ic.stride_w = static_cast<uint32_t>(g.sw);
  ic.dilation_h = static_cast<uint32_t>(g.dh);
  ic.dilation_w = static_cast<uint32_t>(g.dw);
  ic.oh = static_cast<uint32_t>(c.hr);
  ic.ow = static_cast<uint32_t>(c.wt);
  ic.c0 = x_nc1hwc0 ? static_cast<uint32_t>(c_step) : 0;
  p.add(hw, make_instr(Opcode::img2col, ic), subs * static_cast<double>(c.row_groups));
  isa::MmadArgs mm;
  mm.m1 = static_cast<uint32_t>(ceil_div(c.mt, m0));
  mm.k1 = static_cast<uint32_t>(ceil_div(c.kc0 * khw, k0));
  mm.n1 = static_cast<uint32_t>(ceil_div(c.hr * c.wt, n0));
  if (int8) mm.a_dtype = isa_dtype(w_dt), mm.b_dtype = isa_dtype(x_dt);
  p.add(hw, make_instr(Opcode::mmad, mm), subs * static_cast<double>(c.row_groups));
  isa::FixArgs fx;
  fx.dst_dtype = fix_dtype();
  fx.m = static_cast<uint32_t>(c.mt);
  fx.n = static_cast<uint32_t>(c.hr * c.wt);
  fx.per_row = per_channel;
  p.add(hw, make_instr(Opcode::fix, fx), static_cast<double>(c.row_groups));
  if (int8) {  // the tile's table entries GM -> UB, per tile
    isa::DmaArgs qd;
    qd.dtype = isa::DType::i32;
    qd.src.scope = isa::Scope::gm;
    qd.dst.scope = isa::Scope::ub;
    qd.ndims = 1;
    qd.extent = {static_cast<uint32_t>(2 * quant_entries(c.mt)), 0, 0, 0};
    qd.src_stride = {1, 0, 0, 0};
    qd.valid_end = qd.extent;
    p.add(hw, make_instr(Opcode::dma, qd), 1, 0, true, 1);
    tile_gm += p.uses.back().dram_bytes;
  }
  auto ep = epilogues_.find({c.mt, c.ht, c.wt});
  if (ep == epilogues_.end()) {
    TileBox box;
    box.start.assign(4, L::Affine{});
    box.extent = {1, c.mt, c.ht, c.wt};
    npu::KernelProfile e;
    Epilogue rec;
    double gm = 0;
    add_epilogue(e, spec, em, target, box, c.mt, &gm, &rec.gm_bytes);
    rec.uses = std::move(e.uses);
    if (epilogues_.size() > 4096) epilogues_.clear();
    ep = epilogues_.emplace(std::make_tuple(c.mt, c.ht, c.wt), std::move(rec)).first;
  }
  p.uses.insert(p.uses.end(), ep->second.uses.begin(), ep->second.uses.end());
  for (double b : ep->second.gm_bytes) tile_gm += b;
  p.scalar_per_tile = 10;
  p.steps_per_tile = static_cast<double>(n_kc);
  base.tile_gm_bytes = tile_gm;
  return base;
}

npu::KernelProfile ConvSchedule::profile(const Knobs& knobs) const {
  const ConvChoice c = decode(knobs);
  const Base& b = base(c);
  npu::KernelProfile p = b.profile;
  const int64_t n_co = ceil_div(g.cout_g, c.mt), n_oh = ceil_div(g.oh, c.ht),
                n_ow = ceil_div(g.ow, c.wt);
  const double tiles = static_cast<double>(g.n * g.groups * n_co * n_oh * n_ow);
  // Tiles of the busiest core and how often each core loads a co tile's resident weights.
  const std::vector<int64_t> counts = split_tiles(c);
  double per_core_tiles = tiles, co_loads = static_cast<double>(g.n * g.groups * n_co),
         co_loads_all = co_loads;
  if (c.split >= 0) {
    const double s = static_cast<double>(counts[c.split]);
    const double share = std::ceil(s / static_cast<double>(c.cores));
    per_core_tiles = tiles / s * share;
    if (c.split == 3) {
      co_loads_all = co_loads * static_cast<double>(c.cores);  // every core loads every co tile
    } else {
      co_loads = co_loads / s * share;
    }
  }
  // Bytes every core of the split reads alike reach DRAM once per set when they are multicast
  // (dma_mc) -- and, with an L2, once when the first core brings them (the others hit).
  const double cores = static_cast<double>(c.cores);
  const bool once = target.hw->multicast || target.hw->l2.enabled();
  const bool w_shared = once && c.cores > 1 && (c.split == 0 || c.split == 3);
  const bool x_shared = once && c.cores > 1 && c.split == 2;
  if (w_shared && c.split == 3) co_loads_all = co_loads;
  double gm = 0;
  if (b.weights_use >= 0) {
    p.uses[static_cast<size_t>(b.weights_use)].per_core = co_loads;
    gm += co_loads_all * b.weights_bytes;
  }
  double tile_gm = b.tile_gm_bytes;
  if (w_shared) tile_gm -= b.tile_w_bytes * (1 - 1 / cores);
  if (x_shared) tile_gm -= b.tile_x_bytes * (1 - 1 / cores);
  p.tiles = per_core_tiles;
  p.dram_bytes = gm + tiles * tile_gm;
  p.cores_used = static_cast<int>(c.cores);
  return p;
}

L::Stmt ConvSchedule::emit(const Knobs& knobs) const {
  require_valid(knobs);
  const ConvChoice best = decode(knobs);
  const auto& hw = *target.hw;
  (void)hw;
  const te::Tensor& w = conv->extra_inputs.at(1);
  const L::Buffer gx = spec.gm.at(conv->extra_inputs.at(0).get());
  const bool db = best.db;
  const int64_t copies = db ? 2 : 1;
  const int split = best.split;
  // Multicast (memory.multicast): the weights are the same on every core of a batch or row
  // split, the input windows on every core of an output-channel split.
  const int mc_w = shared_operand_cores(hw, best.cores, split == 0 || split == 3);
  const int mc_x = shared_operand_cores(hw, best.cores, split == 2);
  TileEmitter em(spec, target, {conv.get()});
  em.allocate({1, best.mt, best.ht, best.wt});

  // Scratchpad allocations (full tile; tails use views). L0A/L0B: two buffers each when double
  // buffering, alternated by the tiler itself (so the double_buffer pass leaves them).
  const int64_t kk0_full = round_up(best.kc0 * khw, k0);
  const int64_t grp_full = round_up(best.hr * best.wt, n0);  // pixel columns per row group
  const int64_t n_grp_full = ceil_div(best.ht, best.hr);
  L::Buffer l1_x =
      L::make_buffer("l1_x", L::MemScope::l1, x_dt, {best.kc, g.in_h(best.ht), g.in_w(best.wt)});
  const int64_t w_cols = best.w_resident ? g.cg * khw : best.kc * khw;
  L::Buffer l1_w = L::make_buffer("l1_w", L::MemScope::l1, w_dt, {best.mt, w_cols});
  l1_w->no_double_buffer = best.w_resident;
  std::vector<L::Buffer> l0a, l0b;
  for (int64_t i = 0; i < copies; ++i) {
    l0a.push_back(L::make_buffer(i ? "l0a_pong" : "l0a", L::MemScope::l0a, w_dt,
                                 {round_up(best.mt, m0) * kk0_full}));
    l0b.push_back(
        L::make_buffer(i ? "l0b_pong" : "l0b", L::MemScope::l0b, x_dt, {kk0_full * grp_full}));
    l0a.back()->no_double_buffer = l0b.back()->no_double_buffer = db;
  }
  L::Buffer l0c = L::make_buffer("l0c", L::MemScope::l0c, acc_dt,
                                 {round_up(best.mt, m0) * n_grp_full * grp_full});
  // The int8 mode's fix table for one tile of output channels (i32 pairs: scale bits, bias).
  L::Buffer ub_q;
  if (int8)
    ub_q = L::make_buffer("ub_quant", L::MemScope::ub, DType::i32, {2 * quant_entries(best.mt)});
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
    L::Stmt c = L::copy(
        L::Region{wv, {L::int_imm(0), L::int_imm(0)}, {mt, kk}},
        L::Region{gw, {em.start_expr(co_abs), em.start_expr(aff_scale(kc0s, khw))}, {mt, kk}});
    c->multicast_cores = mc_w;
    return c;
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
      a.dtype = isa_dtype(w_dt);
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
        ic.dtype = isa_dtype(x_dt);
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
        if (int8) mm.a_dtype = isa_dtype(w_dt), mm.b_dtype = isa_dtype(x_dt);
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
                        s.back()->multicast_cores = mc_x;
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
                          pad_value));
                      s.back()->multicast_cores = mc_x;
                      if (!best.w_resident) s.push_back(copy_weights(co_abs, mt, kcs, kc));
                      s.push_back(chunk_l0(kcs, kc, mt, ht, wt, ih, iw, first));
                      return L::seq(s);
                    }));
                // Accumulators -> UB (one fix per row group), then the epilogue and the output.
                L::Buffer cv = em.ub_view(conv.get(), {1, mt, ht, wt});
                const L::IntrinOperand cv0 = at0(cv);
                const int64_t cv_off = cv->elem_offset;
                L::Buffer qv;
                if (int8) {
                  // The tile's table entries GM -> UB (channels co_abs .. co_abs + mt, or the
                  // one shared entry).
                  const int64_t e = quant_entries(mt);
                  qv = L::make_view(ub_q, ub_q->name, {2 * e}, {1}, 0);
                  const L::Expr start = per_channel ? em.start_expr(aff_scale(co_abs, 2))
                                                    : static_cast<L::Expr>(L::int_imm(0));
                  tile.push_back(L::copy(L::Region{qv, {L::int_imm(0)}, {2 * e}},
                                         L::Region{spec.gm.at(quant.get()), {start}, {2 * e}}));
                }
                for (int64_t gi = 0, n_grp = ceil_div(ht, best.hr); gi < n_grp; ++gi) {
                  const int64_t r0 = gi * best.hr, hr = std::min(best.hr, ht - r0);
                  isa::FixArgs fx;
                  fx.dst_dtype = fix_dtype();
                  fx.m = static_cast<uint32_t>(mt);
                  fx.n = static_cast<uint32_t>(hr * wt);
                  fx.dst_row_stride = ht * wt;
                  std::vector<L::IntrinOperand> ops = {
                      {cv0.buffer, L::int_imm(cv_off + r0 * wt)},
                      {l0c, L::int_imm(gi * round_up(mt, m0) * grp_full)}};
                  if (int8) {
                    fx.per_row = per_channel;
                    fx.zero_point = zero_point;
                    ops.push_back(at0(qv));
                  }
                  tile.push_back(mk(Opcode::fix, fx, ops));
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
  body->comment = fmt::format(
      "kernel {} (cube conv, mt={} kc={} ht={} wt={}, weights {}, L0 kc0={} hr={}{}{})", spec.name,
      best.mt, best.kc, best.ht, best.wt, best.w_resident ? "resident" : "streamed", best.kc0,
      best.hr, db ? "" : ", single-buffered",
      split >= 0
          ? fmt::format(", split {} over {} cores", space_.find("split")->label(split), best.cores)
          : std::string());
  return body;
}

// ---------------------------------------------------------------------------------------------
// Matmul
// ---------------------------------------------------------------------------------------------
//
// Output tiles mt x nt over K chunks of kt. Loop order a_resident = 0: n tiles outer, m tiles
// inner, A re-read per n tile (B's n tile is hoisted out of the m loop when one K chunk holds
// all of K); a_resident = 1: m outer, A's m tile (all of K) stays in L1 while the n loop runs.
// The cores split a batch dim, the n tiles or the m tiles.

struct MatmulChoice {
  int64_t mt = 0, nt = 0, kt = 0;
  bool a_res = false;
  bool db = true;
  int split = -1;  // index into the loops [batch dims..., n tiles, m tiles]; -1: one core
  int64_t cores = 1;
};

class MatmulSchedule final : public KernelSchedule {
 public:
  MatmulSchedule(const KernelSpec& spec, const te::Tensor& mmt, const NpuTarget& target);
  npu::KernelProfile profile(const Knobs& knobs) const override;
  L::Stmt emit(const Knobs& knobs) const override;
  void explain_nothing_fits() const override;

 protected:
  bool check(const Knobs& knobs, std::string* why) const override;

 private:
  MatmulChoice decode(const Knobs& k) const;
  std::vector<int64_t> out_ext(int64_t mt, int64_t nt) const {
    std::vector<int64_t> e(rank, 1);
    e[rank - 2] = mt;
    e[rank - 1] = nt;
    return e;
  }
  std::vector<int64_t> split_tiles(const MatmulChoice& c) const {
    std::vector<int64_t> t;
    for (size_t d = 0; d + 2 < rank; ++d) t.push_back(os[d]);
    t.push_back(ceil_div(N, c.nt));
    t.push_back(ceil_div(M, c.mt));
    return t;
  }

  KernelSpec spec;
  te::Tensor mmt, a, b;
  NpuTarget target;
  bool ta = false, tb = false;
  Shape os;
  size_t rank = 2;
  int64_t M = 1, N = 1, K = 1, batches = 1;
  int64_t m0 = 16, k0 = 16, n0 = 16, es = 2, acc_bytes = 4;
  // The cube's int8 mode (a matmul marked int8 by compiler/backend/npu/int8_ops.h): A and B in
  // their own 1-byte types, int32 accumulators, and fix applies the table `quant` (per output
  // column when per_channel, else one entry) and the output zero point.
  bool int8 = false, per_channel = false;
  int32_t zero_point = 0;
  DType a_dt = DType::f16, b_dt = DType::f16, acc_dt = DType::f32;
  te::Tensor quant;
  TileEmitter em;
  mutable std::map<std::pair<int64_t, int64_t>, int64_t> footprints_;

  /// The int8 mode's table entries one output tile of nt columns reads (0 in the float mode).
  int64_t quant_entries(int64_t nt) const { return !int8 ? 0 : per_channel ? nt : 1; }
  /// The fix's destination dtype: the output's in the int8 mode, else the activation dtype.
  isa::DType fix_dtype() const {
    return isa_dtype(int8 ? target.storage(mmt->dtype) : target.act_dtype);
  }
};

MatmulSchedule::MatmulSchedule(const KernelSpec& spec_in, const te::Tensor& mmt_in,
                               const NpuTarget& target_in)
    : spec(spec_in), mmt(mmt_in), target(target_in), em(spec_in, target_in, {mmt_in.get()}) {
  name_ = spec.name;
  const auto& hw = *target.hw;
  m0 = hw.core.cube.m;
  k0 = hw.core.cube.k;
  n0 = hw.core.cube.n;
  es = target.act_bytes();
  acc_bytes = dtype_size(acc_dtype(target));
  a = mmt->extra_inputs.at(0);
  b = mmt->extra_inputs.at(1);
  a_dt = b_dt = target.act_dtype;
  acc_dt = acc_dtype(target);
  if (mmt->attrs.count("int8")) {
    int8 = true;
    const npu::CubeFractal f = hw.core.cube.int8_fractal();
    m0 = f.m, k0 = f.k, n0 = f.n;
    es = 1;
    acc_bytes = 4;
    a_dt = a->dtype, b_dt = b->dtype, acc_dt = DType::i32;
    quant = mmt->extra_inputs.at(2);
    per_channel = mmt->attr("per_channel") != 0;
    zero_point = static_cast<int32_t>(mmt->attr("zero_point"));
  }
  ta = mmt->attr("trans_a") != 0;
  tb = mmt->attr("trans_b") != 0;
  if (a->shape.size() < 2 || b->shape.size() < 2)
    throw Unsupported(
        fmt::format("kernel {}: matmul with a 1-D operand is not compiled for the NPU", spec.name));
  os = mmt->shape;
  rank = os.size();
  M = os[rank - 2];
  N = os[rank - 1];
  K = ta ? a->shape[a->shape.size() - 2] : a->shape.back();
  for (size_t d = 0; d + 2 < rank; ++d) batches *= os[d];
  for (const auto& s : em.stages())
    if (s->is_reduce())
      throw Unsupported(
          fmt::format("kernel {}: epilogue stage {} is a reduction", spec.name, s->name));
  space_.kind = "matmul";
  Knob mt{"mt", {}, "rows of A (and the output) per tile", {}, false};
  for (int64_t v = m0; v < M; v *= 2) mt.values.push_back(v);
  mt.values.push_back(M);
  std::sort(mt.values.rbegin(), mt.values.rend());
  Knob nt{"nt", {}, "columns of B (and the output) per tile", {}, false};
  for (int64_t v = n0; v < N; v *= 2) nt.values.push_back(v);
  nt.values.push_back(N);
  std::sort(nt.values.rbegin(), nt.values.rend());
  Knob kt{"kt", tile_extent_values(K, k0), "K elements per chunk", {}, false};
  Knob ares{
      "a_resident",
      {1, 0},
      "loop order: A's m tile (all of K) stays in L1 across the n tiles (1), or n outer and A "
      "re-read per n tile (0)",
      {},
      false};
  std::vector<std::string> loops;
  for (size_t d = 0; d + 2 < rank; ++d) loops.push_back(fmt::format("batch{}", d));
  loops.push_back("n");
  loops.push_back("m");
  space_.knobs = {mt, nt, kt, ares, double_buffer_knob(), split_knob(loops), cores_knob(hw)};
}

MatmulChoice MatmulSchedule::decode(const Knobs& k) const {
  MatmulChoice c;
  c.mt = k.at("mt");
  c.nt = k.at("nt");
  c.kt = k.at("kt");
  c.a_res = k.at("a_resident") != 0;
  c.db = k.at("double_buffer") != 0;
  c.cores = k.at("cores");
  c.split = c.cores > 1 ? static_cast<int>(k.at("split")) : -1;
  return c;
}

bool MatmulSchedule::check(const Knobs& knobs, std::string* why) const {
  const MatmulChoice c = decode(knobs);
  if (!check_split(knobs, *space_.find("split"), split_tiles(c), why)) return false;
  const auto& bb = target.hw->core.buffers_bytes;
  const int64_t copies = c.db ? 2 : 1;
  if (c.a_res) {
    const int64_t l1 = align32(c.mt * K * es) + copies * align32(c.kt * c.nt * es);
    if (l1 > bb.l1)
      return no(why, [&] {
        return overflow("A's resident m tile and a B chunk", "l1", l1, bb.l1, bb.l1, false);
      });
  } else {
    const int64_t l1 = align32(c.mt * c.kt * es) + align32(c.kt * c.nt * es);
    if (l1 > bb.l1 / copies)
      return no(why, [&] {
        return overflow("an A chunk and a B chunk", "l1", l1, bb.l1 / copies, bb.l1, c.db);
      });
  }
  const int64_t l0a = round_up(c.mt, m0) * round_up(c.kt, k0) * es;
  if (l0a > bb.l0a / copies)
    return no(why,
              [&] { return overflow("an A chunk", "l0a", l0a, bb.l0a / copies, bb.l0a, c.db); });
  const int64_t l0b = round_up(c.kt, k0) * round_up(c.nt, n0) * es;
  if (l0b > bb.l0b / copies)
    return no(why,
              [&] { return overflow("a B chunk", "l0b", l0b, bb.l0b / copies, bb.l0b, c.db); });
  const int64_t l0c = round_up(c.mt, m0) * round_up(c.nt, n0) * acc_bytes;
  if (l0c > bb.l0c / copies)
    return no(why, [&] {
      return overflow("the accumulators of the tile", "l0c", l0c, bb.l0c / copies, bb.l0c, c.db);
    });
  auto key = std::make_pair(c.mt, c.nt);
  auto it = footprints_.find(key);
  if (it == footprints_.end())
    it = footprints_
             .emplace(key, em.footprint_bytes(out_ext(c.mt, c.nt)) +
                               align32(quant_entries(c.nt) * isa::kFixQuantEntryBytes))
             .first;
  if (it->second > bb.ub / copies)
    return no(why, [&] {
      return overflow("the output tile and its epilogue", "ub", it->second, bb.ub / copies, bb.ub,
                      c.db);
    });
  return true;
}

void MatmulSchedule::explain_nothing_fits() const {
  // Name what the smallest tile (the fewest rows and columns, one element of K) lacks.
  const bool db = double_buffered_only();
  const int64_t copies = db ? 2 : 1;
  const int64_t mt = space_.find("mt")->values.back(), nt = space_.find("nt")->values.back();
  const auto& bb = target.hw->core.buffers_bytes;
  const std::vector<BufferNeed> needs = {
      {"l1", copies * (align32(mt * es) + align32(nt * es)), bb.l1, db},
      {"l0a", copies * round_up(mt, m0) * round_up(1, k0) * es, bb.l0a, db},
      {"l0b", copies * round_up(1, k0) * round_up(nt, n0) * es, bb.l0b, db},
      {"l0c", copies * round_up(mt, m0) * round_up(nt, n0) * acc_bytes, bb.l0c, db},
      {"ub", copies * em.footprint_bytes(out_ext(mt, nt)), bb.ub, db}};
  fail_no_tile_fits(spec.name, "matmul", fmt::format("{} x {} outputs, K chunk of 1", mt, nt), db,
                    needs);
}

npu::KernelProfile MatmulSchedule::profile(const Knobs& knobs) const {
  const MatmulChoice c = decode(knobs);
  const auto& hw = *target.hw;
  npu::KernelProfile p;
  p.double_buffer = c.db;
  const int64_t n_m = ceil_div(M, c.mt), n_n = ceil_div(N, c.nt), n_k = ceil_div(K, c.kt);
  const bool hoist_b = n_k == 1 && !c.a_res;
  const double tiles = static_cast<double>(batches * n_m * n_n);
  const std::vector<int64_t> counts = split_tiles(c);
  const int split_n = static_cast<int>(rank) - 2, split_m = split_n + 1;
  // Per core: tiles, B n-tile loads (hoisted), A m-tile loads (resident); and in all cores.
  double core_tiles = tiles, b_loads = static_cast<double>(batches * n_n), b_all = b_loads,
         a_loads = static_cast<double>(batches * n_m), a_all = a_loads;
  if (c.split >= 0) {
    const double s = static_cast<double>(counts[c.split]);
    const double share = std::ceil(s / static_cast<double>(c.cores));
    core_tiles = tiles / s * share;
    if (c.split == split_m) {
      b_all = b_loads * static_cast<double>(c.cores);
      a_loads = a_loads / s * share;
    } else if (c.split == split_n) {
      a_all = a_loads * static_cast<double>(c.cores);
      b_loads = b_loads / s * share;
    } else {
      a_loads = a_loads / s * share;
      b_loads = b_loads / s * share;
    }
  }
  // A [mt x kt] (or transposed [kt x mt]) and B [kt x nt] (or [nt x kt]) chunks GM -> L1.
  auto chunk = [&](int64_t rows, int64_t cols, int64_t row_stride, DType dt) {
    isa::DmaArgs d;
    d.dtype = isa_dtype(dt);
    d.src.scope = isa::Scope::gm;
    d.dst.scope = isa::Scope::l1;
    d.ndims = 2;
    d.extent = {static_cast<uint32_t>(rows), static_cast<uint32_t>(cols), 0, 0};
    d.src_stride = {row_stride, 1, 0, 0};
    d.valid_end = d.extent;
    return make_instr(Opcode::dma, d);
  };
  const int64_t lda = a->shape.back(), ldb = b->shape.back();
  const isa::Instruction a_chunk = ta ? chunk(c.kt, c.mt, lda, a_dt) : chunk(c.mt, c.kt, lda, a_dt);
  const isa::Instruction a_tile = ta ? chunk(K, c.mt, lda, a_dt) : chunk(c.mt, K, lda, a_dt);
  const isa::Instruction b_chunk =
      tb ? chunk(hoist_b ? c.nt : c.nt, c.kt, ldb, b_dt) : chunk(c.kt, c.nt, ldb, b_dt);
  // An operand every core of the split reads alike reaches DRAM once per set when it is
  // multicast (dma_mc) -- and, with an L2, once when the first core brings it (the others hit).
  const bool once = (hw.multicast || hw.l2.enabled()) && c.cores > 1;
  const double cores = static_cast<double>(c.cores);
  const bool a_shared = once && c.split == split_n, b_shared = once && c.split == split_m;
  if (a_shared) a_all = a_loads;
  if (b_shared) b_all = b_loads;
  double gm = 0, tile_gm = 0;
  if (c.a_res) {
    p.add(hw, a_tile, 0, a_loads, true, 0);
    gm += a_all * p.uses.back().dram_bytes;
  } else {
    p.add(hw, a_chunk, static_cast<double>(n_k), 0, true, 0);
    tile_gm += n_k * p.uses.back().dram_bytes / (a_shared ? cores : 1);
  }
  isa::Load2dArgs la;
  la.dtype = isa_dtype(a_dt);
  la.src.scope = isa::Scope::l1;
  la.dst.scope = isa::Scope::l0a;
  la.rows = static_cast<uint32_t>(c.mt);
  la.cols = static_cast<uint32_t>(c.kt);
  p.add(hw, make_instr(Opcode::load2d, la), static_cast<double>(n_k));
  isa::Load2dArgs lb = la;
  lb.dtype = isa_dtype(b_dt);
  lb.dst.scope = isa::Scope::l0b;
  lb.rows = static_cast<uint32_t>(c.kt);
  lb.cols = static_cast<uint32_t>(c.nt);
  if (hoist_b) {
    p.add(hw, b_chunk, 0, b_loads, true, 0);
    gm += b_all * p.uses.back().dram_bytes;
    p.add(hw, make_instr(Opcode::load2d, lb), 0, b_loads);
  } else {
    p.add(hw, b_chunk, static_cast<double>(n_k), 0, true, 0);
    tile_gm += n_k * p.uses.back().dram_bytes / (b_shared ? cores : 1);
    p.add(hw, make_instr(Opcode::load2d, lb), static_cast<double>(n_k));
  }
  isa::MmadArgs mm;
  mm.m1 = static_cast<uint32_t>(ceil_div(c.mt, m0));
  mm.k1 = static_cast<uint32_t>(ceil_div(c.kt, k0));
  mm.n1 = static_cast<uint32_t>(ceil_div(c.nt, n0));
  if (int8) mm.a_dtype = isa_dtype(a_dt), mm.b_dtype = isa_dtype(b_dt);
  p.add(hw, make_instr(Opcode::mmad, mm), static_cast<double>(n_k));
  isa::FixArgs fx;
  fx.dst_dtype = fix_dtype();
  fx.m = static_cast<uint32_t>(c.mt);
  fx.n = static_cast<uint32_t>(c.nt);
  fx.per_channel = per_channel;
  p.add(hw, make_instr(Opcode::fix, fx), 1);
  if (int8) {  // the table's entries of the tile, GM -> UB, per tile
    p.add(hw, chunk(1, 2 * quant_entries(c.nt), 1, DType::i32), 1, 0, true, 1);
    tile_gm += p.uses.back().dram_bytes;
  }
  TileBox box;
  box.start.assign(rank, L::Affine{});
  box.extent = out_ext(c.mt, c.nt);
  add_epilogue(p, spec, em, target, box, c.mt, &tile_gm);
  p.scalar_per_tile = 8;
  p.steps_per_tile = static_cast<double>(n_k);
  p.tiles = core_tiles;
  p.dram_bytes = gm + tiles * tile_gm;
  p.cores_used = static_cast<int>(c.cores);
  return p;
}

L::Stmt MatmulSchedule::emit(const Knobs& knobs) const {
  require_valid(knobs);
  const MatmulChoice best = decode(knobs);
  const int split = best.split;
  const int split_n = static_cast<int>(rank) - 2, split_m = split_n + 1;
  // Multicast (memory.multicast): A is the same on every core of an n split, B of an m split.
  const int mc_a = shared_operand_cores(*target.hw, best.cores, split == split_n);
  const int mc_b = shared_operand_cores(*target.hw, best.cores, split == split_m);
  TileEmitter em(spec, target, {mmt.get()});
  em.allocate(out_ext(best.mt, best.nt));

  L::Buffer l1_a =
      L::make_buffer("l1_a", L::MemScope::l1, a_dt, {best.mt * (best.a_res ? K : best.kt)});
  l1_a->no_double_buffer = best.a_res;
  L::Buffer l1_b = L::make_buffer("l1_b", L::MemScope::l1, b_dt, {best.kt * best.nt});
  L::Buffer l0a = L::make_buffer("l0a", L::MemScope::l0a, a_dt,
                                 {round_up(best.mt, m0) * round_up(best.kt, k0)});
  L::Buffer l0b = L::make_buffer("l0b", L::MemScope::l0b, b_dt,
                                 {round_up(best.kt, k0) * round_up(best.nt, n0)});
  L::Buffer l0c = L::make_buffer("l0c", L::MemScope::l0c, acc_dt,
                                 {round_up(best.mt, m0) * round_up(best.nt, n0)});
  // The int8 mode's fix table for one output tile (i32 pairs: scale bits, bias).
  L::Buffer ub_q;
  if (int8)
    ub_q = L::make_buffer("ub_quant", L::MemScope::ub, DType::i32, {2 * quant_entries(best.nt)});
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
    s.back()->multicast_cores = t.get() == a.get() ? mc_a : mc_b;
    isa::Load2dArgs la;
    la.dtype = isa_dtype(l1->dtype);
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
    la.dtype = isa_dtype(a_dt);
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
          if (int8) mm.a_dtype = isa_dtype(a_dt), mm.b_dtype = isa_dtype(b_dt);
          s.push_back(mk(Opcode::mmad, mm, {at0(l0c), at0(l0a), at0(l0b)}));
          return L::seq(s);
        }));
    L::Buffer cv = em.ub_view(mmt.get(), out_ext(mt, nt));
    isa::FixArgs fx;
    fx.dst_dtype = fix_dtype();
    fx.m = static_cast<uint32_t>(mt);
    fx.n = static_cast<uint32_t>(nt);
    fx.dst_row_stride = nt;
    if (int8) {
      // The tile's table entries GM -> UB (columns n0s .. n0s + nt, or the one shared entry).
      fx.per_channel = per_channel;
      fx.zero_point = zero_point;
      const int64_t e = quant_entries(nt);
      L::Buffer qv = L::make_view(ub_q, ub_q->name, {2 * e}, {1}, 0);
      const L::Expr start =
          per_channel ? em.start_expr(aff_scale(n0s, 2)) : static_cast<L::Expr>(L::int_imm(0));
      tile.push_back(L::copy(L::Region{qv, {L::int_imm(0)}, {2 * e}},
                             L::Region{spec.gm.at(quant.get()), {start}, {2 * e}}));
      tile.push_back(mk(Opcode::fix, fx, {at0(cv), at0(l0c), at0(qv)}));
    } else {
      tile.push_back(mk(Opcode::fix, fx, {at0(cv), at0(l0c)}));
    }
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
          mb.back()->multicast_cores = mc_a;
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
  body->comment = fmt::format(
      "kernel {} (cube matmul, mt={} nt={} kt={}{}{}{})", spec.name, best.mt, best.nt, best.kt,
      best.a_res ? ", A resident" : "", best.db ? "" : ", single-buffered",
      split >= 0
          ? fmt::format(", split {} over {} cores", space_.find("split")->label(split), best.cores)
          : std::string());
  return body;
}

}  // namespace

std::unique_ptr<KernelSchedule> cube_schedule(const KernelSpec& spec, const te::Tensor& contraction,
                                              const NpuTarget& target) {
  if (contraction->tag == "conv2d")
    return std::make_unique<ConvSchedule>(spec, contraction, target);
  if (contraction->tag == "matmul")
    return std::make_unique<MatmulSchedule>(spec, contraction, target);
  internal_fail("tile_cube: {} is not a cube contraction (tag '{}')", contraction->name,
                contraction->tag);
}

L::Stmt tile_cube(const KernelSpec& spec, const te::Tensor& contraction, const NpuTarget& target,
                  const Knobs& knobs) {
  return cube_schedule(spec, contraction, target)->emit(knobs);
}

}  // namespace tessel::passes
