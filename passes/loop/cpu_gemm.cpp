// cpu_gemm: the BLIS schedule for contractions on the CPU.
//
// What. A "conv2d" or "matmul" contraction (compiler/lower/op_compute.cpp) is viewed as
// C[b][m][n] = sum_k A[b][m][k] * B[b][k][n], with N the contiguous output axis (the pixels
// oh*OW+ow of a convolution as one flattened axis; the columns of a matmul), M the other output
// axis (output channels of a group; rows), K the reduction (input channels x window; the inner
// dimension) and b the batch (image and group; matmul batch dims). A convolution needs no im2col
// buffer: packing B reads the padded input window directly. The nest (Goto & van de Geijn 2008,
// as in BLIS with the roles of A and B swapped because C is row-major):
//
//   parallel for task (batch x N block x M chunk):                 thread pool
//     for K block (kc):
//       pack B[k block][n block] -> Bp[nc/nr][kc][nr]               stays in L2 (zero padded)
//       for M block (mc):
//         pack A[m block][k block] -> Ap[mc/mr][kc][mr]             (weights: packed once at
//         for M panel (mr):                                          compile time instead)
//           for N panel (nr):                                       A micro-panel stays in L1
//             acc[mr][nr] = 0 or C                                  registers
//             for k in kc: for i in mr (unrolled): for j in nr/W (unrolled): for l in W (vector):
//               acc[i][jW+l] += Ap[..][k][i] * Bp[..][k][jW+l]       broadcast x vector FMA
//             C = last K block ? epilogue(acc) : acc                 bias/activation/residual
//
// Packing B of a convolution reads the input window directly (no im2col buffer). When the input
// pixels of consecutive flattened outputs are contiguous (stride 1, OW == IW) a panel row is one
// (masked) vector load. Otherwise (stride 2, dilation, "valid" padding, ...) B is packed row-wise
// when the input stride along ow is 1..4: per k, the input row of every output row the N block
// touches goes to a row buffer Rp (a vector of ow per load: contiguous loads de-interleaved by a
// shuffle in codegen.cpp instead of a gather), then Rp, contiguous in n, is copied into the
// panels. Larger strides gather.
//
// Partial panels at the M and N borders compute a full micro-tile on zero-padded panels and
// store it with the same vector code, masked to the valid elements; full panels store unmasked.
// Block sizes follow the analytical model of Low et al. (TOMS 2016): mr x nr from the vector
// registers (mr * nr/W accumulators + nr/W + 1 <= registers), kc so an mr x kc A micro-panel fills
// half of L1, nc so the kc x nc B block fills half of L2; the M/N padding waste decides between
// tiles.
//
// Must run on the kernel's TE (no loop IR before it); guarantees a loop nest whose vectorized
// loops have W iterations with unit-stride stores, unrolled loops of static extent, and one
// parallel loop at the top (when knobs->parallel and the target has several threads).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "compiler/support/error.h"
#include "compiler/support/int_math.h"
#include "passes/loop/contraction.h"
#include "passes/loop/cpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;
using L::Expr;
using L::Var;

namespace {

Expr vref(const Var& v) { return L::var_ref(v); }

/// Micro-tile candidates (mr, vectors per row) for `w` lanes and `regs` registers; returns the
/// best tile's score (useful fraction of the padded tiles x micro-kernel efficiency).
double choose_micro_tile(int64_t M, int64_t N, const CpuTarget& t, int64_t* mr, int64_t* nv) {
  const int64_t w = t.vector_lanes, regs = t.vector_registers;
  double best = -1;
  for (int64_t v = 1; v <= 4; ++v) {
    for (int64_t r = 1; r <= std::min<int64_t>(16, M); ++r) {
      if (r * v + v + 1 > regs) continue;
      const int64_t nr = v * w;
      const double pad =
          static_cast<double>(M) * N / (static_cast<double>(round_up(M, r)) * round_up(N, nr));
      const double acc = static_cast<double>(r * v);
      // Loads per FMA (v vector loads + r broadcasts per r*v FMAs), and enough independent
      // accumulators to hide the FMA latency (about 4 cycles x 2 pipes, 12 to be safe).
      const double kernel =
          acc / (acc + 0.15 * static_cast<double>(r + v)) * std::min(1.0, acc / 12.0);
      const double score = pad * kernel;
      if (score > best + 1e-9) {
        best = score;
        *mr = r;
        *nv = v;
      }
    }
  }
  return best;
}

}  // namespace

std::optional<CpuGemmResult> cpu_gemm(const CpuKernelSpec& spec, const te::Tensor& contraction,
                                      const CpuTarget& target, CpuGemmKnobs* knobs_io) {
  const te::Tensor& c = contraction;
  std::optional<Contraction> con = contraction_of(c);
  if (!con || !epilogue_ok(spec.out, c)) return std::nullopt;
  Contraction& g = *con;
  const L::Buffer& out_buf = spec.buffers.at(spec.out.get());
  const int64_t W = target.vector_lanes;
  if (g.M <= 0 || g.N <= 0 || g.K() <= 0) return std::nullopt;

  // ---- knobs ----
  CpuGemmKnobs knobs = knobs_io ? *knobs_io : CpuGemmKnobs{};
  // Transposed orientation: a convolution with constant weights and few output pixels (deep
  // layers, 7x7 or 14x14) vectorizes along its output channels instead: C^T = B^T A^T, the input
  // packed at run time as the broadcast operand (rows of MR pixels), the weights as the vector
  // panels, C stored through a scatter (stride OH * OW) once per micro-tile and K block.
  bool a_padded = false;
  {
    const bool possible =
        g.conv && spec.constants.count(g.a.get()) && !spec.constants.count(g.b.get()) && g.M >= W;
    bool swap = false;
    if (knobs.transposed == 1) {
      if (!possible)
        fail(
            "{}: cpu gemm knob transposed=1 needs a convolution with constant weights and at "
            "least {} output channels",
            spec.name, W);
      swap = true;
    } else if (knobs.transposed == -1 && possible && knobs.mr <= 0 && knobs.nr <= 0) {
      int64_t r0, v0, r1, v1;
      const double normal = choose_micro_tile(g.M, g.N, target, &r0, &v0);
      const double swapped = choose_micro_tile(g.N, g.M, target, &r1, &v1);
      swap = swapped > normal * 1.2;  // measured: 14x14 layers (ratio ~1.1) lose, 7x7 gain
    }
    knobs.transposed = swap ? 1 : 0;
    if (swap) {
      std::swap(g.a, g.b);
      std::swap(g.a_idx, g.b_idx);
      std::swap(g.m, g.n);
      std::swap(g.M, g.N);
      a_padded = g.b_padded;
      g.b_padded = false;
      g.conv = false;  // B (the weights) is packed at compile time: no row-wise pack
    }
  }
  const int64_t M = g.M, N = g.N, K = g.K();
  int64_t MR = knobs.mr, NV = knobs.nr / W;
  if (knobs.nr % W != 0)
    fail("{}: cpu gemm knob nr={} is not a multiple of the vector width {}", spec.name, knobs.nr,
         W);
  if (MR <= 0 || NV <= 0) choose_micro_tile(M, N, target, &MR, &NV);
  const int64_t NR = NV * W;
  const int64_t KR = K / g.kext[0];  // K elements per step of the first K dim
  int64_t KC = knobs.kc;
  if (KC <= 0) KC = std::clamp<int64_t>(target.l1d_bytes / 2 / (4 * MR), 128, 512);
  int64_t KC0 = std::clamp<int64_t>(KC / KR, 1, g.kext[0]);
  if (KC0 < g.kext[0]) {  // prefer a block dividing the first K dim (no tail block)
    for (int64_t d = KC0; d >= std::max<int64_t>(1, KC0 / 2); --d)
      if (g.kext[0] % d == 0) {
        KC0 = d;
        break;
      }
  }
  KC = KC0 * KR;
  const int64_t kblocks = g.kext[0] / KC0, ktail0 = g.kext[0] % KC0;
  int64_t NC = knobs.nc;
  if (NC <= 0) {
    const int64_t nc_cache = std::max<int64_t>(NR, target.l2_bytes / 2 / (KC * 4) / NR * NR);
    int64_t tn = ceil_div(N, nc_cache);
    const int64_t bt = g.batch();
    if (knobs.parallel && target.threads > 1 && (bt * tn) % target.threads != 0 &&
        ceil_div(N, NR) >= target.threads)
      tn = round_up(std::max<int64_t>(tn, 1) * bt, target.threads) / bt;
    NC = round_up(ceil_div(N, std::max<int64_t>(tn, 1)), NR);
  }
  NC = std::min(round_up(NC, NR), round_up(N, NR));
  const int64_t Tn = ceil_div(N, NC);
  const int64_t Mp = ceil_div(M, MR);
  int64_t Tm = knobs.tasks_m;
  if (Tm <= 0) {
    Tm = 1;
    const int64_t tasks = g.batch() * Tn;
    if (knobs.parallel && target.threads > 1 && tasks < 2 * target.threads)
      Tm = std::min(Mp, ceil_div(2 * target.threads, tasks));
  }
  Tm = std::clamp<int64_t>(Tm, 1, Mp);
  const int64_t MPC = ceil_div(Mp, Tm);  // M panels per chunk
  int64_t MC = knobs.mc;
  // A constant operand whose element offset is affine in (batch, m or n, k) is packed at compile
  // time; anything else is packed at run time.
  auto packable = [&](const te::Tensor& t, const std::vector<Expr>& idx) {
    if (!spec.constants.count(t.get())) return false;
    L::Buffer dense = L::make_buffer(t->name, L::MemScope::host, DType::f32, t->shape);
    return L::to_affine(linear_index(*dense, idx)).has_value();
  };
  const bool a_const = packable(g.a, g.a_idx);
  const bool b_const = packable(g.b, g.b_idx);
  if (MC <= 0)
    MC = a_const ? MPC * MR
                 : std::min(MPC * MR,
                            round_up(std::max<int64_t>(MR, target.l2_bytes / 2 / (KC * 4)), MR));
  MC = std::clamp(round_up(MC, MR), MR, MPC * MR);
  const int64_t MCP = MC / MR;
  const int64_t Tic = ceil_div(MPC, MCP);
  // Prefetch of the constant operand's next micro-panel: A's (the weights; B's when only B is
  // constant: the transposed orientation, a matmul by constant weights).
  if (knobs.prefetch == 1 && !a_const && !b_const)
    fail(
        "{}: cpu gemm knob prefetch=1 needs an operand packed at compile time (constant "
        "weights)",
        spec.name);
  // Automatic: A's only. Measured on ResNet-50 (1 thread, per-kernel minima, docs/results.md):
  // layer3's A prefetch gains 5-6%, B's (the transposed layer4 kernels, the fc) loses 1-8%.
  const bool prefetch = knobs.prefetch == 1 || (knobs.prefetch == -1 && a_const);
  knobs.prefetch = prefetch ? 1 : 0;
  if (knobs_io) {
    knobs_io->prefetch = knobs.prefetch;
    knobs_io->mr = MR;
    knobs_io->nr = NR;
    knobs_io->kc = KC;
    knobs_io->nc = NC;
    knobs_io->mc = MC;
    knobs_io->tasks_m = Tm;
    knobs_io->transposed = knobs.transposed;
  }

  CpuGemmResult result;
  result.flops = 2.0 * static_cast<double>(g.batch()) * M * N * K;

  // ---- operand access ----
  auto buf_of = [&](const te::Tensor& t) -> L::Buffer {
    auto it = spec.buffers.find(t.get());
    TESSEL_CHECK(it != spec.buffers.end(), "{}: operand {} has no buffer", spec.name, t->name);
    return it->second;
  };
  const L::Buffer a_buf = buf_of(g.a), b_buf = buf_of(g.b);
  // Batch vars an operand's index uses (the packed constant has one copy per value of those).
  auto used_batch = [&](const std::vector<Expr>& idx) { return used_batch_dims(g, idx); };
  // Packs a constant operand at compile time into panels [used batch..., P, K, R] where P
  // panels of R along `rvar` (m for A, n for B) and K the flattened reduction, zero padded.
  auto pack_constant = [&](const te::Tensor& t, const std::vector<Expr>& idx, const Var& rvar,
                           int64_t extent, int64_t R, const std::string& what) -> PackedConstant {
    const Tensor& data = *spec.constants.at(t.get());
    const auto used = used_batch(idx);
    Shape pshape;
    int64_t bcount = 1;
    for (size_t i : used) {
      pshape.push_back(g.bext[i]);
      bcount *= g.bext[i];
    }
    const int64_t P = ceil_div(extent, R);
    pshape.push_back(P);
    pshape.push_back(K);
    pshape.push_back(R);
    std::vector<float> packed(static_cast<size_t>(bcount * P * K * R), 0.f);
    const int64_t n_el = data.numel();
    const float* f32 = data.dtype() == DType::f32 ? data.data<float>() : nullptr;
    const bool affine = for_each_operand_element(
        g, t->shape, idx, rvar, extent, [&](int64_t bi, int64_t kf, int64_t r, int64_t src) {
          TESSEL_CHECK(src >= 0 && src < n_el, "{}: packing {} reads element {} of {}", spec.name,
                       what, src, n_el);
          packed[static_cast<size_t>(((bi * P + r / R) * K + kf) * R + r % R)] =
              f32 ? f32[src] : static_cast<float>(data.get_as_double(src));
        });
    if (!affine) internal_fail("{}: {} index is not affine", spec.name, what);
    PackedConstant pc;
    pc.buffer = L::make_buffer(fmt::format("{}.{}_packed", spec.name, what), L::MemScope::host,
                               DType::f32, pshape);
    pc.data = Tensor::from_floats(pshape, packed);
    return pc;
  };
  // Index of a packed constant for batch vars / panel / flattened k / lane.
  auto packed_index = [&](const std::vector<Expr>& idx, Expr panel, Expr kflat, Expr lane) {
    std::vector<Expr> r;
    for (size_t i : used_batch(idx)) r.push_back(vref(g.bvars[i]));
    r.push_back(std::move(panel));
    r.push_back(std::move(kflat));
    r.push_back(std::move(lane));
    return r;
  };
  std::optional<PackedConstant> a_packed, b_packed;
  if (a_const) {
    a_packed = pack_constant(g.a, g.a_idx, g.m, M, MR, "A");
    result.constants.push_back(*a_packed);
  }
  if (b_const) {
    b_packed = pack_constant(g.b, g.b_idx, g.n, N, NR, "B");
    result.constants.push_back(*b_packed);
  }

  // ---- the nest ----
  Var t = L::make_var("task");
  const int64_t T = g.batch() * Tn * Tm;
  // task -> (batch..., jn, jm)
  std::map<const L::VarNode*, Expr> bsub;
  Expr rest = vref(t);
  Expr jm = Tm == 1 ? L::int_imm(0) : L::floormod(rest, Tm);
  rest = L::floordiv(rest, Tm);
  Expr jn = Tn == 1 ? L::int_imm(0) : L::floormod(rest, Tn);
  rest = L::floordiv(rest, Tn);
  for (int i = static_cast<int>(g.bvars.size()) - 1; i >= 0; --i) {
    bsub[g.bvars[i].get()] = g.bext[i] == 1 ? L::int_imm(0) : L::floormod(rest, g.bext[i]);
    rest = L::floordiv(rest, g.bext[i]);
  }
  auto with_batch = [&](const Expr& e) { return L::substitute(e, bsub); };
  auto with_batch_v = [&](std::vector<Expr> v) {
    for (auto& e : v) e = with_batch(e);
    return v;
  };
  Expr n0 = L::mul(jn, L::int_imm(NC));
  Expr mp_chunk = L::mul(jm, L::int_imm(MPC));

  L::Buffer bp =
      b_const ? nullptr
              : L::make_buffer(spec.name + ".Bp", L::MemScope::host, DType::f32, {NC / NR, KC, NR});
  // Row-wise pack of B (convolution whose input pixels are not contiguous along the flattened
  // n, e.g. stride 2, but are with a small constant stride along ow): Rp holds the input rows
  // of one k for the output rows an N block touches, plus one vector of slack for the last
  // chunk's lanes past the row end.
  bool row_pack = false;
  if (g.conv && !b_const) {
    auto flat = var_coefficient(linear_index(*b_buf, g.b_idx), g.n.get());
    auto along_ow = var_coefficient(linear_index(*b_buf, g.b_idx_rows), g.ow.get());
    row_pack = (!flat || *flat != 1) && along_ow && *along_ow >= 1 && *along_ow <= 4;
  }
  const int64_t row_chunks = ceil_div(g.OW, W);
  const int64_t row_count = row_pack ? std::min(g.OH, (g.OW - 1 + NC - 1) / g.OW + 1) : 0;
  L::Buffer rp = row_pack ? L::make_buffer(spec.name + ".Rp", L::MemScope::host, DType::f32,
                                           {row_count * g.OW + W})
                          : nullptr;
  L::Buffer ap =
      a_const ? nullptr
              : L::make_buffer(spec.name + ".Ap", L::MemScope::host, DType::f32, {MCP, KC, MR});

  // K loops of one block: first dim from kb0 over kc0 steps, the other dims whole; kflat is the
  // flattened index inside the block.
  auto k_nest =
      [&](Expr kb0, int64_t kc0,
          const std::function<L::Stmt(const std::map<const L::VarNode*, Expr>&, Expr)>& body) {
        std::vector<Var> vs;
        std::map<const L::VarNode*, Expr> ks;
        Expr kflat = L::int_imm(0);
        for (size_t d = 0; d < g.kext.size(); ++d) {
          const int64_t ext = d == 0 ? kc0 : g.kext[d];
          Var v = L::make_var(g.kvars[d]->name + "p");
          vs.push_back(v);
          Expr val = ext == 1 ? L::int_imm(0) : vref(v);
          ks[g.kvars[d].get()] = d == 0 ? L::add(kb0, val) : val;
          kflat = L::add(L::mul(kflat, L::int_imm(ext)), val);
        }
        L::Stmt s = body(ks, kflat);
        for (int d = static_cast<int>(vs.size()) - 1; d >= 0; --d) {
          const int64_t ext = d == 0 ? kc0 : g.kext[d];
          if (ext > 1) s = L::for_loop(vs[d], ext, s);
        }
        return s;
      };

  auto emit_block = [&](Expr pc, int64_t kc0, Expr is_first, Expr is_last) -> L::Stmt {
    Expr kb0 = L::mul(pc, L::int_imm(KC0));
    const int64_t kc = kc0 * KR;
    std::vector<L::Stmt> block;
    // pack B, row-wise: per k, the input rows of the N block's output rows go to Rp
    // (contiguous in ow, so a stride-s read of the row is de-interleaved from contiguous loads
    // instead of gathered), then Rp, contiguous in the flattened n, is copied into the panels.
    if (!b_const && row_pack) {
      Var row = L::make_var("row"), owc = L::make_var("owc"), l = L::make_var("l");
      Var jr = L::make_var("jr"), jv = L::make_var("jv"), l2 = L::make_var("l");
      Expr oh_first = L::floordiv(n0, g.OW);
      Expr ohv = L::add(oh_first, vref(row));
      Expr owv = L::add(L::mul(vref(owc), L::int_imm(W)), vref(l));
      Expr n = L::add(
          L::add(L::add(n0, L::mul(vref(jr), L::int_imm(NR))), L::mul(vref(jv), L::int_imm(W))),
          vref(l2));
      L::Stmt pack = k_nest(kb0, kc0, [&](const auto& ks, Expr kflat) {
        std::map<const L::VarNode*, Expr> sub = ks;
        sub[g.oh.get()] = ohv;
        sub[g.ow.get()] = owv;
        std::vector<Expr> idx;
        for (const auto& e : g.b_idx_rows) idx.push_back(with_batch(L::substitute(e, sub)));
        // Padded even without conv padding: lanes past the row end (ow >= OW) stay in the buffer.
        Expr v = L::load(b_buf, idx, true, 0.0);
        L::Stmt build = L::for_loop(l, W,
                                    L::store(rp,
                                             {L::add(L::add(L::mul(vref(row), L::int_imm(g.OW)),
                                                            L::mul(vref(owc), L::int_imm(W))),
                                                     vref(l))},
                                             v),
                                    L::ForKind::vectorized);
        // Chunks in increasing ow and rows in increasing oh: a chunk's lanes past the row end
        // are overwritten by the next row's first chunk.
        build = L::for_loop(owc, row_chunks, build,
                            row_chunks <= 4 ? L::ForKind::unrolled : L::ForKind::serial);
        build = L::if_then(
            L::logical_and(L::lt(ohv, L::int_imm(g.OH)),
                           L::lt(L::mul(ohv, L::int_imm(g.OW)), L::add(n0, L::int_imm(NC)))),
            build);
        build = L::for_loop(row, row_count, build);
        Expr rv = L::load(rp, {L::sub(n, L::mul(oh_first, L::int_imm(g.OW)))});
        if (N % NR != 0) rv = L::select(L::lt(n, L::int_imm(N)), rv, L::float_imm(0.0));
        L::Stmt copy = L::for_loop(
            l2, W,
            L::store(bp, {vref(jr), kflat, L::add(L::mul(vref(jv), L::int_imm(W)), vref(l2))}, rv),
            L::ForKind::vectorized);
        copy = L::for_loop(jv, NV, copy, L::ForKind::unrolled);
        copy = L::if_then(L::lt(L::add(n0, L::mul(vref(jr), L::int_imm(NR))), L::int_imm(N)), copy);
        copy = L::for_loop(jr, NC / NR, copy);
        return L::seq({build, copy});
      });
      pack->comment = "pack B (row-wise)";
      block.push_back(pack);
    } else if (!b_const) {
      Var jr = L::make_var("jr"), jv = L::make_var("jv"), l = L::make_var("l");
      Expr n = L::add(
          L::add(L::add(n0, L::mul(vref(jr), L::int_imm(NR))), L::mul(vref(jv), L::int_imm(W))),
          vref(l));
      L::Stmt pack = k_nest(kb0, kc0, [&](const auto& ks, Expr kflat) {
        std::map<const L::VarNode*, Expr> sub = ks;
        sub[g.n.get()] = n;
        std::vector<Expr> idx;
        for (const auto& e : g.b_idx) idx.push_back(with_batch(L::substitute(e, sub)));
        Expr v = L::load(b_buf, idx, g.b_padded, 0.0);
        if (N % NR != 0) v = L::select(L::lt(n, L::int_imm(N)), v, L::float_imm(0.0));
        return L::for_loop(
            l, W,
            L::store(bp, {vref(jr), kflat, L::add(L::mul(vref(jv), L::int_imm(W)), vref(l))}, v),
            L::ForKind::vectorized);
      });
      pack = L::for_loop(jv, NV, pack);
      pack = L::if_then(L::lt(L::add(n0, L::mul(vref(jr), L::int_imm(NR))), L::int_imm(N)), pack);
      pack = L::for_loop(jr, NC / NR, pack);
      pack->comment = "pack B";
      block.push_back(pack);
    }
    // M blocks
    Var ic = L::make_var("ic"), ir = L::make_var("ir"), jr = L::make_var("jr");
    Expr panel_in_chunk = L::add(L::mul(vref(ic), L::int_imm(MCP)), vref(ir));
    Expr mp = L::add(mp_chunk, panel_in_chunk);
    Expr panel_ok =
        L::logical_and(L::lt(panel_in_chunk, L::int_imm(MPC)), L::lt(mp, L::int_imm(Mp)));
    std::vector<L::Stmt> mblock;
    if (!a_const) {
      Var i = L::make_var("i");
      Expr m = L::add(L::mul(mp, L::int_imm(MR)), vref(i));
      L::Stmt pack = k_nest(kb0, kc0, [&](const auto& ks, Expr kflat) {
        std::map<const L::VarNode*, Expr> sub = ks;
        sub[g.m.get()] = m;
        std::vector<Expr> idx;
        for (const auto& e : g.a_idx) idx.push_back(with_batch(L::substitute(e, sub)));
        Expr v = L::load(a_buf, idx, a_padded, 0.0);
        if (M % MR != 0) v = L::select(L::lt(m, L::int_imm(M)), v, L::float_imm(0.0));
        return L::for_loop(i, MR, L::store(ap, {vref(ir), kflat, vref(i)}, v),
                           L::ForKind::unrolled);
      });
      pack = L::for_loop(ir, MCP, L::if_then(panel_ok, pack));
      pack->comment = "pack A";
      mblock.push_back(pack);
    }
    // micro-tiles
    L::Buffer acc = L::make_buffer(spec.name + ".acc", L::MemScope::host, DType::f32, {MR, NR});
    Expr n_base = L::add(n0, L::mul(vref(jr), L::int_imm(NR)));
    auto tile_loops = [&](const std::function<L::Stmt(Expr i, Expr j, const Var& l)>& f) {
      Var i = L::make_var("i"), jv = L::make_var("jv"), l = L::make_var("l");
      Expr j = L::add(L::mul(vref(jv), L::int_imm(W)), vref(l));
      L::Stmt s = L::for_loop(l, W, f(vref(i), j, l), L::ForKind::vectorized);
      if (NV > 1) {
        s = L::for_loop(jv, NV, s, L::ForKind::unrolled);
      } else {
        s = L::substitute_stmt(s, {{jv.get(), L::int_imm(0)}});
      }
      return MR > 1 ? L::for_loop(i, MR, s, L::ForKind::unrolled)
                    : L::substitute_stmt(s, {{i.get(), L::int_imm(0)}});
    };
    auto c_index = [&](Expr i, Expr j) {
      std::map<const L::VarNode*, Expr> sub;
      sub[g.m.get()] = L::add(L::mul(mp, L::int_imm(MR)), i);
      sub[g.n.get()] = L::add(n_base, j);
      std::vector<Expr> idx;
      for (const auto& e : g.c_idx) idx.push_back(with_batch(L::substitute(e, sub)));
      return idx;
    };
    auto stored_value = [&](Expr accv, Expr i, Expr j, bool last) {
      if (!last) return accv;
      return with_batch(epilogue_at(spec.out, c, c_index(i, j), accv, spec.buffers));
    };
    auto valid = [&](Expr i, Expr j) {
      return L::logical_and(L::lt(L::add(L::mul(mp, L::int_imm(MR)), i), L::int_imm(M)),
                            L::lt(L::add(n_base, j), L::int_imm(N)));
    };
    const bool always_full = M % MR == 0 && N % NR == 0;
    Expr full = always_full
                    ? L::int_imm(1)
                    : L::logical_and(
                          L::le(L::add(L::mul(mp, L::int_imm(MR)), L::int_imm(MR)), L::int_imm(M)),
                          L::le(L::add(n_base, L::int_imm(NR)), L::int_imm(N)));
    // Both paths of a full/partial choice; constant conditions select one.
    auto choose = [](Expr cond, L::Stmt a, L::Stmt b) -> L::Stmt {
      if (cond->kind == L::ExprKind::Int) return cond->int_value ? a : b;
      return L::if_then(cond, a, b);
    };
    // init
    L::Stmt zero = tile_loops([&](Expr i, Expr j, const Var&) {
      return L::store(acc, {i, j}, L::float_imm(0.0));
    });
    L::Stmt load_full = tile_loops([&](Expr i, Expr j, const Var&) {
      return L::store(acc, {i, j}, L::load(out_buf, c_index(i, j)));
    });
    // Partial tiles: the same vector code, loads and stores masked to the valid elements.
    L::Stmt load_part = tile_loops([&](Expr i, Expr j, const Var&) {
      return L::store(acc, {i, j},
                      L::select(valid(i, j), L::load(out_buf, c_index(i, j)), L::float_imm(0.0)));
    });
    L::Stmt init = choose(is_first, zero, choose(full, load_full, load_part));
    // k loop
    Var kf = L::make_var("kf");
    // Prefetches, one group per k step, of the constant operand's micro-panel used after this
    // micro-tile's (weights stream from memory once per call; the hardware prefetchers do not
    // run far enough ahead of the FMAs).
    //   A constant: the next M panel's kc x mr micro-panel (mp + 1 in this K block; after the
    //   chunk's last panel, its first panel in the next K block), spread over the N panels of
    //   this M panel: step s = jr * kc + kf of nb * kc requests element s * mr / nb of it (a line
    //   of 64 bytes is requested about 16 nb / mr times in a row: duplicates cost a load slot).
    //   B constant: the next N panel's row kf (nr elements, a line per 64 bytes).
    std::vector<L::Stmt> pf;
    if (prefetch && a_const) {
      const int64_t nb = NC / NR;
      Expr step = L::add(L::mul(vref(jr), L::int_imm(kc)), vref(kf));
      Expr e = L::mul(step, L::int_imm(MR));
      if (nb > 1) e = L::floordiv(e, nb);
      Expr last_panel = L::logical_or(L::le(L::int_imm(MPC), L::add(panel_in_chunk, L::int_imm(1))),
                                      L::le(L::int_imm(Mp), L::add(mp, L::int_imm(1))));
      Expr k0 = L::mul(kb0, L::int_imm(KR));
      Expr panel = L::select(last_panel, mp_chunk, L::add(mp, L::int_imm(1)));
      Expr kstart = L::select(last_panel, L::add(k0, L::int_imm(kc)), k0);
      pf.push_back(
          L::prefetch(a_packed->buffer, with_batch_v(packed_index(g.a_idx, panel, kstart, e))));
    } else if (prefetch && b_const) {
      Expr panel = L::add(L::add(L::floordiv(n0, NR), vref(jr)), L::int_imm(1));
      Expr k = L::add(L::mul(kb0, L::int_imm(KR)), vref(kf));
      const int64_t per_line = 64 / 4;  // fp32 elements per 64-byte line
      for (int64_t q = 0; q < ceil_div(NR, per_line); ++q)
        pf.push_back(
            L::prefetch(b_packed->buffer,
                        with_batch_v(packed_index(g.b_idx, panel, k, L::int_imm(q * per_line)))));
    }
    L::Stmt fmas = tile_loops([&](Expr i, Expr j, const Var&) {
      Expr av = a_const
                    ? L::load(a_packed->buffer,
                              with_batch_v(packed_index(
                                  g.a_idx, mp, L::add(L::mul(kb0, L::int_imm(KR)), vref(kf)), i)))
                    : L::load(ap, {vref(ir), vref(kf), i});
      Expr bv = b_const ? L::load(b_packed->buffer,
                                  with_batch_v(packed_index(
                                      g.b_idx, L::add(L::floordiv(n0, NR), vref(jr)),
                                      L::add(L::mul(kb0, L::int_imm(KR)), vref(kf)), j)))
                        : L::load(bp, {vref(jr), vref(kf), j});
      return L::store(acc, {i, j}, L::add(L::load(acc, {i, j}), L::mul(av, bv)));
    });
    pf.push_back(fmas);
    L::Stmt kloop = L::for_loop(kf, kc, pf.size() == 1 ? fmas : L::seq(pf));
    // store
    auto store_full = [&](bool last) {
      return tile_loops([&](Expr i, Expr j, const Var&) {
        return L::store(out_buf, c_index(i, j), stored_value(L::load(acc, {i, j}), i, j, last));
      });
    };
    auto store_part = [&](bool last) {
      return tile_loops([&](Expr i, Expr j, const Var&) {
        return L::if_then(valid(i, j), L::store(out_buf, c_index(i, j),
                                                stored_value(L::load(acc, {i, j}), i, j, last)));
      });
    };
    auto store_for = [&](bool last) { return choose(full, store_full(last), store_part(last)); };
    L::Stmt fin = is_last->kind == L::ExprKind::Int
                      ? store_for(is_last->int_value != 0)
                      : L::if_then(is_last, store_for(true), store_for(false));
    L::Stmt micro = L::allocate(acc, L::seq({init, kloop, fin}));
    micro = L::if_then(L::logical_and(panel_ok, L::lt(n_base, L::int_imm(N))), micro);
    L::Stmt tiles = L::for_loop(ir, MCP, L::for_loop(jr, NC / NR, micro));
    tiles->comment = "micro-tiles";
    mblock.push_back(tiles);
    L::Stmt mloop = L::seq(mblock);
    if (Tic > 1) {
      mloop = L::for_loop(ic, Tic, mloop);
    } else {
      mloop = L::substitute_stmt(mloop, {{ic.get(), L::int_imm(0)}});
    }
    block.push_back(mloop);
    return L::seq(block);
  };

  std::vector<L::Stmt> kparts;
  Var pc = L::make_var("pc");
  const int64_t nblk = kblocks + (ktail0 ? 1 : 0);
  if (kblocks == 1) {
    kparts.push_back(emit_block(L::int_imm(0), KC0, L::int_imm(1), L::int_imm(ktail0 ? 0 : 1)));
  } else if (kblocks > 1) {
    Expr first = L::eq(vref(pc), L::int_imm(0));
    Expr last = ktail0 ? L::int_imm(0) : L::eq(vref(pc), L::int_imm(kblocks - 1));
    kparts.push_back(L::for_loop(pc, kblocks, emit_block(vref(pc), KC0, first, last)));
  }
  if (ktail0) {
    kparts.push_back(
        emit_block(L::int_imm(kblocks), ktail0, L::int_imm(nblk == 1 ? 1 : 0), L::int_imm(1)));
  }
  L::Stmt task = L::seq(kparts);
  if (ap) task = L::allocate(ap, task);
  if (bp) task = L::allocate(bp, task);
  if (rp) task = L::allocate(rp, task);
  const bool par = knobs.parallel && target.threads > 1 && T > 1;
  L::Stmt body;
  if (T == 1) {
    body = L::substitute_stmt(task, {{t.get(), L::int_imm(0)}});
  } else {
    body = L::for_loop(t, T, task, par ? L::ForKind::parallel : L::ForKind::serial);
  }
  body->comment =
      fmt::format("gemm {}: M={} N={} K={} batch={} mr={} nr={} kc={} nc={} mc={}{}{}", spec.name,
                  M, N, K, g.batch(), MR, NR, KC, NC, MC, knobs.transposed ? " transposed" : "",
                  prefetch ? (a_const ? " prefetch=A" : " prefetch=B") : "");
  result.body = body;
  return result;
}

}  // namespace tessel::passes
