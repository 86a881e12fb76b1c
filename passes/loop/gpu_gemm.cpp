// gpu_gemm: the GPU schedule for contractions (convolution as implicit GEMM, matmul).
//
// What. A "conv2d" or "matmul" contraction and its elementwise epilogue (contraction.h:
// C[b][m][n] = sum_k A[b][m][k] B[b][k][n]) become one kernel; a thread block computes a
// bm x bn tile of C over K chunks of bk:
//
//   for blk in 0..batch * ceil(M/bm) * ceil(N/bn) [blockIdx.x]:      (batch, m tile, n tile)
//     shared As[bm][bk + pad], Bs[bk][bn + pad]
//     for tid in 0..threads [threadIdx.x]:
//       local acc (registers): tensor cores: per warp (bm/warps_m) x (bn/warps_n) as 16 x 8 mma
//                               fragments; fp32: per thread tm x tn outputs
//       acc = 0
//       for kt in 0..ceil(K/bk):                                     (gpu_double_buffer)
//         As <- A[m tile][k chunk], Bs <- B[k chunk][n tile]          cooperative (gpu_copy)
//         barrier
//         tensor cores: per 16-deep step, fragments from As/Bs (PTX layout, gpu_mma.cpp; fp32
//         tiles rounded to fp16 here), mma.sync into acc; fp32: acc[i][j] += As[..] * Bs[..]
//         barrier
//       C[m][n] = epilogue(acc)  for the elements a thread holds, guarded at the M / N borders
//
// Operands: a constant operand whose index is affine (weights) is packed at compile time into a
// dense [Mp][Kp] (A) / [Kp][Np] (B) matrix, zero padded to whole tiles, in fp16 with tensor cores
// (fp32 without), so its tiles are unguarded 16-byte copies. A run-time operand read as a
// rectangular region (matmul A[.., m, k], B[.., k, n]) is copied as a loop::copy region (padded
// at the borders); anything else -- the implicit im2col matrix of a convolution, transposed or
// batch-folded operands -- is gathered element by element through the contraction's index
// expressions, guarded by k < K and m < M / n < N. Run-time tiles stay in their GM dtype (fp32)
// in shared memory and are rounded to fp16 when a fragment is loaded (tensor cores).
//
// Tiling (knobs = 0): tensor cores: bm, bn in {32, 64, 128} maximising (useful / computed
// outputs) x min(1, blocks / SMs) x sqrt(bm bn / (bm + bn) / 64) (padding waste, one full wave,
// operand reuse per shared-memory byte); warp tiles 64 x 32 (bm = 128) or 32 x 32; bk = 32.
// fp32: 64 x 64 tiles of 4 x 4 per thread (32 x 32 of 2 x 2 when M or N < 64), bk = 16.
//
// Must run on the kernel's TE (no loop IR before it). Guarantees one gpu_block loop around one
// gpu_thread loop, shared allocations directly inside the block loop, the K-chunk loop in the
// form gpu_double_buffer pipelines (it is run here when knobs->double_buffer and K has several
// chunks), and no barrier under a condition that differs between the threads of a block.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compiler/support/error.h"
#include "compiler/support/int_math.h"
#include "passes/loop/contraction.h"
#include "passes/loop/gpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;
using L::Expr;
using L::Var;

namespace {

Expr vref(const Var& v) { return L::var_ref(v); }
Expr imm(int64_t v) { return L::int_imm(v); }

struct Tile {
  int64_t bm = 0, bn = 0, bk = 0, wm = 1, wn = 1, tm = 1, tn = 1;
  int64_t threads() const { return tc ? 32 * wm * wn : (bm / tm) * (bn / tn); }
  bool tc = true;
};

Tile choose_tile(int64_t M, int64_t N, int64_t batch, const GpuTarget& target, bool tc,
                 const GpuGemmKnobs& k) {
  Tile t;
  t.tc = tc;
  if (tc) {
    double best = -1;
    for (int64_t bm : {32, 64, 128})
      for (int64_t bn : {32, 64, 128}) {
        const double blocks = static_cast<double>(batch * ceil_div(M, bm) * ceil_div(N, bn));
        const double waste =
            static_cast<double>(M) * N / (static_cast<double>(round_up(M, bm)) * round_up(N, bn));
        const double fill = std::min(1.0, blocks / target.sm_count);
        const double reuse = std::sqrt(static_cast<double>(bm * bn) / (bm + bn) / 64.0);
        const double score = waste * fill * reuse;
        if (score > best + 1e-9) {
          best = score;
          t.bm = bm;
          t.bn = bn;
        }
      }
    if (k.bm > 0) t.bm = k.bm;
    if (k.bn > 0) t.bn = k.bn;
    t.bk = k.bk > 0 ? k.bk : 32;
    const int64_t wtm = t.bm >= 128 ? 64 : 32, wtn = 32;
    t.wm = k.warps_m > 0 ? k.warps_m : std::max<int64_t>(1, t.bm / wtm);
    t.wn = k.warps_n > 0 ? k.warps_n : std::max<int64_t>(1, t.bn / wtn);
  } else {
    const bool big = M >= 64 && N >= 64;
    t.bm = k.bm > 0 ? k.bm : (big ? 64 : 32);
    t.bn = k.bn > 0 ? k.bn : (big ? 64 : 32);
    t.tm = k.tm > 0 ? k.tm : (big ? 4 : 2);
    t.tn = k.tn > 0 ? k.tn : (big ? 4 : 2);
    t.bk = k.bk > 0 ? k.bk : 16;
  }
  return t;
}

/// The flattened K index `kf` as the contraction's K digits (the first dim outermost).
std::map<const L::VarNode*, Expr> k_digits(const Contraction& g, const Expr& kf) {
  std::map<const L::VarNode*, Expr> sub;
  int64_t inner = 1;
  for (int d = static_cast<int>(g.kext.size()) - 1; d >= 0; --d) {
    Expr q = inner == 1 ? kf : L::floordiv(kf, inner);
    sub[g.kvars[d].get()] = d == 0 ? q : L::floormod(q, g.kext[d]);
    inner *= g.kext[d];
  }
  return sub;
}

/// Whether `idx` reads its operand as the rectangular region [leading..., r, k] (k_last) or
/// [leading..., k, r]: the last two entries are exactly the variables and the others use
/// neither.
bool rectangular(const Contraction& g, const std::vector<Expr>& idx, const Var& r, bool k_last) {
  if (idx.size() < 2 || g.kvars.size() != 1) return false;
  const Expr& a = idx[idx.size() - 2];
  const Expr& b = idx[idx.size() - 1];
  const Var& first = k_last ? r : g.kvars[0];
  const Var& second = k_last ? g.kvars[0] : r;
  auto is = [](const Expr& e, const Var& v) {
    return e->kind == L::ExprKind::VarRef && e->var == v;
  };
  if (!is(a, first) || !is(b, second)) return false;
  for (size_t d = 0; d + 2 < idx.size(); ++d)
    if (uses_var(idx[d], r.get()) || uses_var(idx[d], g.kvars[0].get())) return false;
  return true;
}

}  // namespace

std::optional<CpuGemmResult> gpu_gemm(const CpuKernelSpec& spec, const te::Tensor& contraction,
                                      const GpuTarget& target, GpuGemmKnobs* knobs_io) {
  const te::Tensor& c = contraction;
  std::optional<Contraction> con = contraction_of(c);
  if (!con || !epilogue_ok(spec.out, c)) return std::nullopt;
  Contraction& g = *con;
  const int64_t M = g.M, N = g.N, K = g.K(), batch = g.batch();
  if (M < 8 || N < 8 || K < 1) return std::nullopt;
  GpuGemmKnobs knobs = knobs_io ? *knobs_io : GpuGemmKnobs{};
  const bool tc = knobs.tensor_cores && target.tensor_cores;
  const Tile t = choose_tile(M, N, batch, target, tc, knobs);
  const int64_t threads = t.threads();
  if (tc && (t.bk % 16 != 0 || t.bm % (16 * t.wm) != 0 || t.bn % (8 * t.wn) != 0))
    fail(
        "{}: gpu gemm knobs bm={} bn={} bk={} warps {}x{}: bk must be a multiple of 16, bm of "
        "16 x warps_m and bn of 8 x warps_n",
        spec.name, t.bm, t.bn, t.bk, t.wm, t.wn);
  if (!tc && (t.bm % t.tm != 0 || t.bn % t.tn != 0))
    fail("{}: gpu gemm knobs bm={} bn={} tm={} tn={}: tm must divide bm and tn divide bn",
         spec.name, t.bm, t.bn, t.tm, t.tn);
  if (threads > target.max_threads_per_block)
    fail("{}: gpu gemm tile needs {} threads, more than the {} of a block", spec.name, threads,
         target.max_threads_per_block);
  const int64_t TMt = ceil_div(M, t.bm), TNt = ceil_div(N, t.bn), KT = ceil_div(K, t.bk);
  const int64_t NB = batch * TMt * TNt;
  if (knobs_io) {
    knobs_io->bm = t.bm;
    knobs_io->bn = t.bn;
    knobs_io->bk = t.bk;
    knobs_io->warps_m = tc ? t.wm : 0;
    knobs_io->warps_n = tc ? t.wn : 0;
    knobs_io->tm = tc ? 0 : t.tm;
    knobs_io->tn = tc ? 0 : t.tn;
    knobs_io->tensor_cores = tc;
  }
  CpuGemmResult result;
  result.flops = 2.0 * static_cast<double>(batch) * M * N * K;
  const L::Buffer& out_buf = spec.buffers.at(spec.out.get());

  // ---- block -> (batch, m tile, n tile) ----
  Var blk = L::make_var("blk"), tid = L::make_var("tid"), kt = L::make_var("kt");
  Expr rest = vref(blk);
  Expr tn_i = TNt == 1 ? imm(0) : L::floormod(rest, TNt);
  rest = L::floordiv(rest, TNt);
  Expr tm_i = TMt == 1 ? imm(0) : L::floormod(rest, TMt);
  rest = L::floordiv(rest, TMt);
  std::map<const L::VarNode*, Expr> bsub;
  for (int i = static_cast<int>(g.bvars.size()) - 1; i >= 0; --i) {
    bsub[g.bvars[i].get()] = g.bext[i] == 1 ? imm(0) : L::floormod(rest, g.bext[i]);
    rest = L::floordiv(rest, g.bext[i]);
  }
  Expr m0 = L::mul(tm_i, imm(t.bm)), n0 = L::mul(tn_i, imm(t.bn));
  Expr k0 = L::mul(vref(kt), imm(t.bk));
  auto with = [&](const Expr& e, std::map<const L::VarNode*, Expr> sub) {
    for (const auto& [v, x] : bsub) sub[v] = x;
    return L::substitute(e, sub);
  };
  auto buf_of = [&](const te::Tensor& x) -> L::Buffer {
    auto it = spec.buffers.find(x.get());
    TESSEL_CHECK(it != spec.buffers.end(), "{}: operand {} has no buffer", spec.name, x->name);
    return it->second;
  };

  // ---- constant operands packed dense and padded, fp16 with tensor cores ----
  const DType pack_dt = tc ? DType::f16 : DType::f32;
  const int64_t Kp = round_up(K, t.bk);
  auto packable = [&](const te::Tensor& x, const std::vector<Expr>& idx) {
    if (!spec.constants.count(x.get())) return false;
    L::Buffer dense = L::make_buffer(x->name, L::MemScope::host, DType::f32, x->shape);
    return L::to_affine(linear_index(*dense, idx)).has_value();
  };
  // [used batch..., R, Kp] (k_last) or [used batch..., Kp, R]: element (b, r, k) of the operand.
  auto pack = [&](const te::Tensor& x, const std::vector<Expr>& idx, const Var& rvar, int64_t R,
                  int64_t Rp, bool k_last, const std::string& what) {
    const Tensor& data = *spec.constants.at(x.get());
    const auto used = used_batch_dims(g, idx);
    Shape shape;
    for (size_t i : used) shape.push_back(g.bext[i]);
    shape.push_back(k_last ? Rp : Kp);
    shape.push_back(k_last ? Kp : Rp);
    Tensor packed(pack_dt, shape);  // zero: the padding
    const bool affine = for_each_operand_element(
        g, x->shape, idx, rvar, R, [&](int64_t bi, int64_t kf, int64_t r, int64_t src) {
          TESSEL_CHECK(src >= 0 && src < data.numel(), "{}: packing {} reads element {} of {}",
                       spec.name, what, src, data.numel());
          packed.set_from_double(bi * Rp * Kp + (k_last ? r * Kp + kf : kf * Rp + r),
                                 data.get_as_double(src));
        });
    TESSEL_CHECK(affine, "{}: {} index is not affine", spec.name, what);
    PackedConstant pc;
    pc.buffer = L::make_buffer(fmt::format("{}.{}_packed", spec.name, what), L::MemScope::host,
                               pack_dt, shape);
    pc.data = std::move(packed);
    result.constants.push_back(pc);
    return std::make_pair(pc.buffer, used);
  };

  // ---- shared tiles ----
  const L::Buffer a_buf = buf_of(g.a), b_buf = buf_of(g.b);
  const bool a_const = packable(g.a, g.a_idx), b_const = packable(g.b, g.b_idx);
  const DType a_dt = a_const ? pack_dt : a_buf->dtype;
  const DType b_dt = b_const ? pack_dt : b_buf->dtype;
  auto pad_of = [](DType dt) { return dt == DType::f16 ? 8 : 4; };
  L::Buffer As =
      L::make_buffer(spec.name + ".As", L::MemScope::shared, a_dt, {t.bm, t.bk + pad_of(a_dt)});
  L::Buffer Bs =
      L::make_buffer(spec.name + ".Bs", L::MemScope::shared, b_dt, {t.bk, t.bn + pad_of(b_dt)});
  auto vec_of = [](DType dt) -> int64_t { return 16 / dtype_size(dt); };
  const bool staged = knobs.double_buffer && KT > 1;
  const int64_t shared_bytes = (staged ? 2 : 1) * (As->alloc_bytes + Bs->alloc_bytes);
  if (shared_bytes > target.max_shared_bytes)
    fail(
        "{}: gpu gemm tile {}x{}x{} needs {} bytes of shared memory, more than the {} a block "
        "may use (GpuTarget::max_shared_bytes)",
        spec.name, t.bm, t.bn, t.bk, shared_bytes, target.max_shared_bytes);

  // A tile: As[i][k] = A[m0 + i][k0 + k].
  L::Stmt copy_a;
  if (a_const) {
    auto [ap, used] = pack(g.a, g.a_idx, g.m, M, TMt * t.bm, true, "A");
    copy_a = cooperative_copy(tid, threads, {t.bm, t.bk}, vec_of(a_dt), As,
                              [&](const std::vector<Expr>& i) {
                                std::vector<Expr> at;
                                for (size_t u : used) at.push_back(with(vref(g.bvars[u]), {}));
                                at.push_back(L::add(m0, i[0]));
                                at.push_back(L::add(k0, i[1]));
                                return L::load(ap, at);
                              });
  } else if (rectangular(g, g.a_idx, g.m, true)) {
    L::Region src{a_buf, {}, {}}, dst{As, {imm(0), imm(0)}, {t.bm, t.bk}};
    for (size_t d = 0; d + 2 < g.a_idx.size(); ++d) {
      src.starts.push_back(with(g.a_idx[d], {}));
      src.extents.push_back(1);
    }
    src.starts.push_back(m0);
    src.starts.push_back(k0);
    src.extents.push_back(t.bm);
    src.extents.push_back(t.bk);
    // Tile rows keep the region's rank: view As with the leading unit dims.
    Shape vs(src.extents.begin(), src.extents.end());
    std::vector<int64_t> vst(vs.size(), 0);
    vst[vs.size() - 2] = As->strides[0];
    vst[vs.size() - 1] = 1;
    L::Buffer asv = L::make_view(As, As->name, vs, vst, 0);
    dst = {asv, std::vector<Expr>(vs.size(), imm(0)), src.extents};
    L::Stmt cp = L::copy(dst, src, 0.0);
    const int64_t v = a_buf->shape.back() % vec_of(a_dt) == 0 ? vec_of(a_dt) : 1;
    copy_a = cooperative_copy(tid, threads, *cp, v);
    // The copy stores through the view: redirect to the allocation (gpu_double_buffer stages
    // allocations, not views).
    copy_a = L::rewrite_stmt(copy_a, [&](const L::Stmt& n) -> L::Stmt {
      if (n->kind == L::StmtKind::Store && n->buffer == asv) {
        n->buffer = As;
        n->indices = {n->indices[n->indices.size() - 2], n->indices.back()};
      }
      return n;
    });
  } else {
    copy_a = cooperative_copy(tid, threads, {t.bm, t.bk}, 1, As, [&](const std::vector<Expr>& i) {
      Expr m = L::add(m0, i[0]), kf = L::add(k0, i[1]);
      auto sub = k_digits(g, kf);
      sub[g.m.get()] = m;
      std::vector<Expr> at;
      for (const auto& e : g.a_idx) at.push_back(with(e, sub));
      Expr ok = L::logical_and(L::lt(m, imm(M)), L::lt(kf, imm(K)));
      return L::select(ok, L::load(a_buf, at), L::float_imm(0.0));
    });
  }
  // B tile: Bs[k][j] = B[k0 + k][n0 + j].
  L::Stmt copy_b;
  if (b_const) {
    auto [bp, used] = pack(g.b, g.b_idx, g.n, N, TNt * t.bn, false, "B");
    copy_b = cooperative_copy(tid, threads, {t.bk, t.bn}, vec_of(b_dt), Bs,
                              [&](const std::vector<Expr>& i) {
                                std::vector<Expr> at;
                                for (size_t u : used) at.push_back(with(vref(g.bvars[u]), {}));
                                at.push_back(L::add(k0, i[0]));
                                at.push_back(L::add(n0, i[1]));
                                return L::load(bp, at);
                              });
  } else if (rectangular(g, g.b_idx, g.n, false)) {
    L::Region src{b_buf, {}, {}};
    for (size_t d = 0; d + 2 < g.b_idx.size(); ++d) {
      src.starts.push_back(with(g.b_idx[d], {}));
      src.extents.push_back(1);
    }
    src.starts.push_back(k0);
    src.starts.push_back(n0);
    src.extents.push_back(t.bk);
    src.extents.push_back(t.bn);
    Shape vs(src.extents.begin(), src.extents.end());
    std::vector<int64_t> vst(vs.size(), 0);
    vst[vs.size() - 2] = Bs->strides[0];
    vst[vs.size() - 1] = 1;
    L::Buffer bsv = L::make_view(Bs, Bs->name, vs, vst, 0);
    L::Stmt cp = L::copy({bsv, std::vector<Expr>(vs.size(), imm(0)), src.extents}, src, 0.0);
    const int64_t v = b_buf->shape.back() % vec_of(b_dt) == 0 ? vec_of(b_dt) : 1;
    copy_b = cooperative_copy(tid, threads, *cp, v);
    copy_b = L::rewrite_stmt(copy_b, [&](const L::Stmt& n) -> L::Stmt {
      if (n->kind == L::StmtKind::Store && n->buffer == bsv) {
        n->buffer = Bs;
        n->indices = {n->indices[n->indices.size() - 2], n->indices.back()};
      }
      return n;
    });
  } else {
    // The implicit im2col matrix of a convolution (or a transposed / folded operand): gathered.
    auto value = [&](const std::vector<Expr>& i) {
      Expr kf = L::add(k0, i[0]), n = L::add(n0, i[1]);
      auto sub = k_digits(g, kf);
      sub[g.n.get()] = n;
      std::vector<Expr> at;
      for (const auto& e : g.b_idx) at.push_back(with(e, sub));
      Expr ok = L::logical_and(L::lt(kf, imm(K)), L::lt(n, imm(N)));
      return L::select(ok, L::load(b_buf, at, g.b_padded, 0.0), L::float_imm(0.0));
    };
    // Rows of consecutive n are contiguous in the input (stride 1, OW == IW): vectorized.
    int64_t v = 1;
    if (N % vec_of(b_dt) == 0) {
      Var j = L::make_var("j");
      std::vector<Expr> probe = {imm(0), L::add(L::mul(vref(j), imm(1)), imm(0))};
      Expr e = value(probe);
      const L::ExprNode& ld = *e->args[1];
      auto cf = var_coefficient(linear_index(*ld.buffer, ld.args), j.get());
      if (cf && *cf == 1) v = vec_of(b_dt);
    }
    copy_b = cooperative_copy(tid, threads, {t.bk, t.bn}, v, Bs, value);
  }
  L::Stmt copies = L::seq({copy_a, copy_b});

  // ---- compute and epilogue ----
  auto c_index = [&](const Expr& m, const Expr& n) {
    std::map<const L::VarNode*, Expr> sub;
    sub[g.m.get()] = m;
    sub[g.n.get()] = n;
    std::vector<Expr> idx;
    for (const auto& e : g.c_idx) idx.push_back(with(e, sub));
    return idx;
  };
  const bool full = M % t.bm == 0 && N % t.bn == 0;
  auto store_c = [&](const Expr& m, const Expr& n, const Expr& accv) -> L::Stmt {
    std::vector<Expr> idx = c_index(m, n);
    Expr v = epilogue_at(spec.out, c, idx, accv, spec.buffers);
    std::map<const L::VarNode*, Expr> bs(bsub.begin(), bsub.end());
    v = L::substitute(v, bs);
    L::Stmt s = L::store(out_buf, idx, v);
    if (full) return s;
    return L::if_then(L::logical_and(L::lt(m, imm(M)), L::lt(n, imm(N))), s);
  };
  auto unroll = [](const Var& v, int64_t n, L::Stmt body) {
    return n == 1 ? L::substitute_stmt(body, {{v.get(), imm(0)}})
                  : L::for_loop(v, n, body, L::ForKind::unrolled);
  };
  L::Stmt zero, compute, epilogue;
  L::Buffer acc;
  std::vector<L::Buffer> locals;
  if (tc) {
    const int64_t wtm = t.bm / t.wm, wtn = t.bn / t.wn, MI = wtm / 16, NI = wtn / 8;
    acc = L::make_buffer(spec.name + ".acc", L::MemScope::local, DType::f32, {MI, NI, 4});
    L::Buffer af = L::make_buffer(spec.name + ".af", L::MemScope::local, DType::f16, {MI, 8});
    L::Buffer bf = L::make_buffer(spec.name + ".bf", L::MemScope::local, DType::f16, {NI, 4});
    locals = {acc, af, bf};
    Expr warp = L::floordiv(vref(tid), 32), lane = L::floormod(vref(tid), 32);
    Expr wm_i = t.wn == 1 ? warp : L::floordiv(warp, t.wn);
    Expr wn_i = t.wn == 1 ? imm(0) : L::floormod(warp, t.wn);
    if (t.wm == 1) wm_i = imm(0);
    Expr row0 = L::mul(wm_i, imm(wtm)), col0 = L::mul(wn_i, imm(wtn));
    Var i = L::make_var("mi"), j = L::make_var("ni"), r = L::make_var("r"), ks = L::make_var("ks");
    {
      Var e = L::make_var("e");
      zero =
          L::for_loop(e, MI * NI * 4,
                      L::store(acc,
                               {L::floordiv(vref(e), NI * 4),
                                L::floormod(L::floordiv(vref(e), 4), NI), L::floormod(vref(e), 4)},
                               L::float_imm(0.0)),
                      L::ForKind::unrolled);
    }
    std::vector<L::Stmt> step;
    for (int q = 0; q < 8; ++q) {
      Expr row = L::add(L::add(row0, L::mul(vref(i), imm(16))), mma_a_row(lane, q));
      Expr col = L::add(L::mul(vref(ks), imm(16)), mma_a_col(lane, q));
      step.push_back(unroll(i, MI, L::store(af, {vref(i), imm(q)}, L::load(As, {row, col}))));
    }
    for (int q = 0; q < 4; ++q) {
      Expr row = L::add(L::mul(vref(ks), imm(16)), mma_b_row(lane, q));
      Expr col = L::add(L::add(col0, L::mul(vref(j), imm(8))), mma_b_col(lane, q));
      step.push_back(unroll(j, NI, L::store(bf, {vref(j), imm(q)}, L::load(Bs, {row, col}))));
    }
    L::Stmt mma = L::gpu_intrin(L::GpuOp::mma_m16n8k16,
                                {{acc, L::mul(L::add(L::mul(vref(i), imm(NI)), vref(j)), imm(4))},
                                 {af, L::mul(vref(i), imm(8))},
                                 {bf, L::mul(vref(j), imm(4))}});
    step.push_back(unroll(i, MI, unroll(j, NI, mma)));
    const int64_t steps = t.bk / 16;
    compute = steps == 1 ? L::substitute_stmt(L::seq(step), {{ks.get(), imm(0)}})
                         : L::for_loop(ks, steps, L::seq(step),
                                       steps <= 4 ? L::ForKind::unrolled : L::ForKind::serial);
    compute->comment = fmt::format("mma.sync m16n8k16: warp tile {}x{}", wtm, wtn);
    std::vector<L::Stmt> outs;
    for (int q = 0; q < 4; ++q) {
      Expr m = L::add(L::add(L::add(m0, row0), L::mul(vref(i), imm(16))), mma_c_row(lane, q));
      Expr n = L::add(L::add(L::add(n0, col0), L::mul(vref(j), imm(8))), mma_c_col(lane, q));
      outs.push_back(store_c(m, n, L::load(acc, {vref(i), vref(j), imm(q)})));
    }
    epilogue = unroll(i, MI, unroll(j, NI, L::seq(outs)));
  } else {
    const int64_t TY = t.bm / t.tm, TX = t.bn / t.tn;
    acc = L::make_buffer(spec.name + ".acc", L::MemScope::local, DType::f32, {t.tm, t.tn});
    locals = {acc};
    Expr ty = L::floordiv(vref(tid), TX), tx = L::floormod(vref(tid), TX);
    Var i = L::make_var("i"), j = L::make_var("j"), k = L::make_var("k");
    zero = unroll(i, t.tm, unroll(j, t.tn, L::store(acc, {vref(i), vref(j)}, L::float_imm(0.0))));
    Expr av = L::load(As, {L::add(ty, L::mul(vref(i), imm(TY))), vref(k)});
    Expr bv = L::load(Bs, {vref(k), L::add(tx, L::mul(vref(j), imm(TX)))});
    L::Stmt fma =
        L::store(acc, {vref(i), vref(j)}, L::add(L::load(acc, {vref(i), vref(j)}), L::mul(av, bv)));
    compute = L::for_loop(k, t.bk, unroll(i, t.tm, unroll(j, t.tn, fma)),
                          t.bk <= 16 ? L::ForKind::unrolled : L::ForKind::serial);
    compute->comment = fmt::format("fp32 register tile {}x{} per thread", t.tm, t.tn);
    Expr m = L::add(L::add(m0, ty), L::mul(vref(i), imm(TY)));
    Expr n = L::add(L::add(n0, tx), L::mul(vref(j), imm(TX)));
    epilogue = unroll(i, t.tm, unroll(j, t.tn, store_c(m, n, L::load(acc, {vref(i), vref(j)}))));
  }
  L::Stmt barrier = L::gpu_intrin(L::GpuOp::barrier);
  L::Stmt kloop = L::for_loop(kt, KT, L::seq({copies, barrier, compute, barrier}));
  kloop->comment = fmt::format("K chunks of {}", t.bk);
  L::Stmt thread_body = L::seq({zero, kloop, epilogue});
  for (auto it = locals.rbegin(); it != locals.rend(); ++it)
    thread_body = L::allocate(*it, thread_body);
  L::Stmt block = L::for_loop(tid, threads, thread_body, L::ForKind::gpu_thread);
  block = L::allocate(As, L::allocate(Bs, block));
  L::Stmt body = L::for_loop(blk, NB, block, L::ForKind::gpu_block);
  if (staged) body = gpu_double_buffer(body, kt.get(), target.cp_async);
  if (knobs_io) knobs_io->double_buffer = staged;
  body->comment = fmt::format("gemm {}: M={} N={} K={} batch={} {} tile {}x{}x{} {} threads{}",
                              spec.name, M, N, K, batch, tc ? "mma.sync fp16" : "fp32", t.bm, t.bn,
                              t.bk, threads, staged ? " double-buffered" : "");
  result.body = body;
  return result;
}

}  // namespace tessel::passes
