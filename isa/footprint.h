// Operand footprints: the bytes each memory operand of a data instruction touches, computed once
// per operand class and used by both the run-time checks (isa/semantics.h access_range_list, the
// simulator's hazard ranges) and the static verifier (isa/verifier.cpp). A footprint is the
// bounding span [lo, hi) of the bytes an operand touches, relative to the operand's address
// (x[reg] + offset), in 128-bit arithmetic so that no size or stride can wrap. The operands'
// roles come from the operand classes (isa/operand_classes.h) and the records' traits (reads_dst,
// reduction; isa/instruction_list.h). Internal to the isa library.
//
// Preconditions (checked by the callers, with their own messages): the operand struct matches the
// opcode, the scopes are legal for the opcode (load2d/img2col write l0a or l0b), and a dma has
// 1 <= ndims <= kMaxDmaDims.
#pragma once

#include <algorithm>
#include <cstdint>

#include "isa/isa.h"

namespace tessel::isa::footprint {

using i128 = __int128;

/// The cube fractal (m0, k0, n0) and element sizes the cube-side footprints depend on.
struct Fractal {
  i128 m0 = 1, k0 = 1, n0 = 1;
  int in_bytes = 2, acc_bytes = 4;
  i128 int8_m0 = 1, int8_k0 = 1, int8_n0 = 1;  // the int8 mode's fractal (core.cube.int8)
  /// The fractal of the int8 mode (1-byte operands, int32 accumulators).
  Fractal int8_mode() const {
    Fractal f = *this;
    f.m0 = int8_m0, f.k0 = int8_k0, f.n0 = int8_n0;
    f.in_bytes = 1, f.acc_bytes = 4;
    return f;
  }
};

/// The bytes one access of one memory operand touches: [lo, hi) relative to `*ref`'s address.
struct Span {
  Field field;  // the operand (dst, src, a, ...)
  const MemRef* ref;
  bool write;
  i128 lo, hi;
};

namespace detail {

inline i128 ceil_div(i128 a, i128 b) { return (a + b - 1) / b; }

/// The span of the elements at sum_d i_d * stride_d, begin_d <= i_d < end_d, of `elem_bytes`;
/// false (no access) when a range is empty.
template <int N>
bool box(const i128 (&begin)[N], const i128 (&end)[N], const i128 (&stride)[N], int n,
         int elem_bytes, i128& lo, i128& hi) {
  lo = hi = 0;
  for (int d = 0; d < n; ++d) {
    if (end[d] <= begin[d]) return false;
    const i128 a = begin[d] * stride[d], b = (end[d] - 1) * stride[d];
    lo += std::min(a, b);
    hi += std::max(a, b);
  }
  lo *= elem_bytes;
  hi = (hi + 1) * elem_bytes;
  return true;
}

/// A 2-d strided block: outer x inner elements at r * outer_stride + e * inner_stride.
template <class Fn>
void strided(Fn& fn, Field f, const MemRef& ref, bool write, i128 outer, i128 outer_stride,
             i128 inner, i128 inner_stride, int elem_bytes) {
  const i128 b[2] = {0, 0}, e[2] = {outer, inner}, s[2] = {outer_stride, inner_stride};
  i128 lo, hi;
  if (box(b, e, s, 2, elem_bytes, lo, hi)) fn(Span{f, &ref, write, lo, hi});
}

/// A dense block of `bytes` bytes (none when bytes <= 0).
template <class Fn>
void dense(Fn& fn, Field f, const MemRef& ref, bool write, i128 bytes) {
  if (bytes > 0) fn(Span{f, &ref, write, 0, bytes});
}

/// Bytes of a fractal-padded rows x cols matrix in L0A (m0 x k0 blocks) or L0B (k0 x n0).
inline i128 fractal_bytes(const Fractal& f, Scope s, i128 rows, i128 cols, int elem_bytes) {
  const i128 b0 = s == Scope::l0a ? f.m0 : f.k0, b1 = s == Scope::l0a ? f.k0 : f.n0;
  return ceil_div(rows, b0) * b0 * ceil_div(cols, b1) * b1 * elem_bytes;
}

template <class Fn>
void accesses(const Fractal&, const InstrInfo&, const DmaArgs& d, Fn& fn) {
  // dst[i] for every index, src only inside the valid window (padding reads nothing).
  const int n = d.ndims, es = dtype_bytes(d.dtype);
  i128 zero[kMaxDmaDims] = {}, ext[kMaxDmaDims] = {}, vb[kMaxDmaDims] = {}, ve[kMaxDmaDims] = {};
  i128 ds[kMaxDmaDims] = {}, ss[kMaxDmaDims] = {};
  for (int k = 0; k < n; ++k) {
    ext[k] = d.extent[k];
    vb[k] = std::min(d.valid_begin[k], d.extent[k]);
    ve[k] = std::min(d.valid_end[k], d.extent[k]);
    ds[k] = d.dst_stride[k];
    ss[k] = d.src_stride[k];
  }
  i128 lo, hi;
  if (box(vb, ve, ss, n, es, lo, hi)) fn(Span{Field::src, &d.src, false, lo, hi});
  if (box(zero, ext, ds, n, es, lo, hi)) fn(Span{Field::dst, &d.dst, true, lo, hi});
}

template <class Fn>
void accesses(const Fractal& f0, const InstrInfo&, const Load2dArgs& l, Fn& fn) {
  // (r, c) at r * src_row_stride + c, or transposed at c * src_row_stride + r.
  const Fractal f = is_cube_int8_dtype(l.dtype) ? f0.int8_mode() : f0;
  const int es = dtype_bytes(l.dtype);
  const i128 outer = l.transpose ? l.cols : l.rows, inner = l.transpose ? l.rows : l.cols;
  strided(fn, Field::src, l.src, false, outer, l.src_row_stride, inner, 1, es);
  if (l.rows > 0 && l.cols > 0)
    dense(fn, Field::dst, l.dst, true, fractal_bytes(f, l.dst.scope, l.rows, l.cols, es));
}

template <class Fn>
void accesses(const Fractal& f0, const InstrInfo&, const Img2colArgs& g, Fn& fn) {
  const Fractal f = is_cube_int8_dtype(g.dtype) ? f0.int8_mode() : f0;
  // The source block: dense c x h x w, or NC1HWC0 [ceil(c/c0)][h][w][c0] when c0 > 0. The im2col
  // matrix X is K x N (K = c*kh*kw, N = oh*ow); to L0B it is B = X, to L0A A = X^T.
  const int es = dtype_bytes(g.dtype);
  const i128 K = i128{g.c} * g.kh * g.kw, N = i128{g.oh} * g.ow;
  if (K <= 0 || N <= 0) return;
  // The block's size saturates at INT64_MAX bytes (about 2^97 at most), beyond every memory.
  const i128 chans = g.c0 > 0 ? detail::ceil_div(g.c, g.c0) * g.c0 : i128{g.c};
  dense(fn, Field::src, g.src, false, std::min<i128>(chans * g.h * g.w * es, INT64_MAX));
  const bool to_a = g.dst.scope == Scope::l0a;
  dense(fn, Field::dst, g.dst, true, fractal_bytes(f, g.dst.scope, to_a ? N : K, to_a ? K : N, es));
}

template <class Fn>
void accesses(const Fractal& f0, const InstrInfo&, const MmadArgs& a, Fn& fn) {
  // A [m1][k1][m0][k0], B [k1][n1][k0][n0], C [m1][n1][m0][n0]; k1 == 0 reads nothing but
  // still writes C. C is read as well when accumulating. The int8 mode has its own fractal.
  const Fractal f = mmad_int8(a) ? f0.int8_mode() : f0;
  dense(fn, Field::a, a.a, false, i128{a.m1} * a.k1 * f.m0 * f.k0 * f.in_bytes);
  dense(fn, Field::b, a.b, false, i128{a.k1} * a.n1 * f.k0 * f.n0 * f.in_bytes);
  const i128 c_bytes = i128{a.m1} * a.n1 * f.m0 * f.n0 * f.acc_bytes;
  if (a.accumulate) dense(fn, Field::c, a.c, false, c_bytes);
  dense(fn, Field::c, a.c, true, c_bytes);
}

template <class Fn>
void accesses(const Fractal& f0, const InstrInfo&, const FixArgs& x, Fn& fn) {
  if (x.m == 0 || x.n == 0) return;
  // int32 accumulators of the int8 mode (dst i8/u8/i32) are in the int8 fractal; the int8 mode
  // reads the table: n entries per channel, else one.
  const Fractal f = fix_int8(x) ? f0.int8_mode() : f0;
  if (fix_int8(x))
    dense(fn, Field::quant, x.quant, false, i128{fix_quant_entries(x)} * kFixQuantEntryBytes);
  // The m x n elements read from the [M1][N1][m0][n0] tile span from element 0 to the last
  // element of the last block.
  const i128 M1 = ceil_div(x.m, f.m0), N1 = ceil_div(x.n, f.n0);
  const i128 last = ((M1 - 1) * N1 + (N1 - 1)) * f.m0 * f.n0 + (x.m - 1 - (M1 - 1) * f.m0) * f.n0 +
                    (x.n - 1 - (N1 - 1) * f.n0);
  dense(fn, Field::src, x.src, false, (last + 1) * f.acc_bytes);
  strided(fn, Field::dst, x.dst, true, x.m, x.dst_row_stride, x.n, 1, dtype_bytes(x.dst_dtype));
}

template <class Fn>
void accesses(const Fractal&, const InstrInfo& r, const VectorArgs& v, Fn& fn) {
  if (v.count == 0 || v.repeat == 0) return;
  // Each operand's elements have its own size (vector_operand_dtype: bool destinations of
  // comparisons, vsel's bool mask, vconv's source).
  auto operand = [&](Field f, const VecOperand& o, bool write, bool one_per_repeat) {
    strided(fn, f, o.addr, write, v.repeat, o.repeat_stride, one_per_repeat ? 1 : v.count,
            o.elem_stride, dtype_bytes(vector_operand_dtype(r.op, v, f)));
  };
  if (r.uses(Field::src0)) operand(Field::src0, v.src0, false, false);
  if (r.uses(Field::src1)) operand(Field::src1, v.src1, false, false);
  if (r.uses(Field::src2)) operand(Field::src2, v.src2, false, false);
  if (r.reads_dst) operand(Field::dst, v.dst, false, false);
  operand(Field::dst, v.dst, true, r.reduction);
}

template <class A, class Fn>
void accesses(const Fractal&, const InstrInfo&, const A&, Fn&) {}  // no memory operands

}  // namespace detail

/// Calls fn(Span) for every memory access of data instruction `in`, reads before the write of the
/// same operand. Operands that touch nothing (zero extents, an empty dma valid window) produce no
/// span. Instructions without memory operands produce none.
template <class Fn>
void for_each_access(const Fractal& f, const Instruction& in, Fn&& fn) {
  const InstrInfo& r = instr_info(in.op);
  std::visit([&](const auto& a) { detail::accesses(f, r, a, fn); }, in.args);
}

/// The same for an instruction of opcode `op` whose operand struct `a` is already known.
template <class A, class Fn>
void for_each_access(const Fractal& f, Opcode op, const A& a, Fn&& fn) {
  detail::accesses(f, instr_info(op), a, fn);
}

}  // namespace tessel::isa::footprint
