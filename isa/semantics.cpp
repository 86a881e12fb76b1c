// Functional semantics of the data instructions (docs/isa.md, "Instructions"): plain C++ over the
// byte arrays of one core's memories. Values are stored raw (f16 as IEEE binary16 bits, f32 as IEEE
// binary32); arithmetic widens to fp32 and rounds back with compiler/support/fp16.h (round to
// nearest even). Hot paths avoid per-element allocation and use memcpy for contiguous rows.
#include "isa/semantics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/support/error.h"
#include "compiler/support/fp16.h"
#include "isa/asm.h"

namespace tessel::isa {

namespace {

// ---------------------------------------------------------------------------------------------
// Element access (unaligned-safe).

template <DType T>
struct Elem;

template <>
struct Elem<DType::f16> {
  static constexpr int kBytes = 2;
  static float load(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return f16_bits_to_f32(h);
  }
  static void store(uint8_t* p, float v) {
    const uint16_t h = f32_to_f16_bits(v);
    std::memcpy(p, &h, 2);
  }
};

template <>
struct Elem<DType::f32> {
  static constexpr int kBytes = 4;
  static float load(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  static void store(uint8_t* p, float v) { std::memcpy(p, &v, 4); }
};

float load_elem(DType t, const uint8_t* p) {
  return t == DType::f16 ? Elem<DType::f16>::load(p) : Elem<DType::f32>::load(p);
}
void store_elem(DType t, uint8_t* p, float v) {
  if (t == DType::f16)
    Elem<DType::f16>::store(p, v);
  else
    Elem<DType::f32>::store(p, v);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---------------------------------------------------------------------------------------------
// Bounding ranges.

// Bounding byte range of the elements base + sum_d i_d * stride_d (elements of `elem_bytes`),
// 0 <= i_d < extent_d. Empty when an extent is 0. Computed in 128 bits so that absurd strides
// cannot wrap into a range that passes the bounds check.
struct Dim {
  int64_t extent;
  int64_t stride;
};

template <size_t N>
bool bounding(int64_t base, const std::array<Dim, N>& dims, int nd, int elem_bytes,
              AccessRange& out) {
  __int128 lo = 0, hi = 0;
  for (int d = 0; d < nd; ++d) {
    if (dims[d].extent <= 0) return false;
    const __int128 span = static_cast<__int128>(dims[d].extent - 1) * dims[d].stride;
    if (span < 0)
      lo += span;
    else
      hi += span;
  }
  const __int128 begin = static_cast<__int128>(base) + lo * elem_bytes;
  const __int128 end = static_cast<__int128>(base) + (hi + 1) * elem_bytes;
  // Negative or beyond-64-bit addresses become a range starting at UINT64_MAX (never in bounds).
  if (begin < 0 || end > static_cast<__int128>(UINT64_MAX)) {
    out.begin = UINT64_MAX;
    out.end = UINT64_MAX;
  } else {
    out.begin = static_cast<uint64_t>(begin);
    out.end = static_cast<uint64_t>(end);
  }
  return true;
}

void add_range(AccessRangeList& list, Scope scope, bool write, int64_t base,
               std::initializer_list<Dim> dims, int elem_bytes) {
  std::array<Dim, 4> d{};
  int n = 0;
  for (const Dim& x : dims) d[n++] = x;
  AccessRange r;
  r.scope = scope;
  r.write = write;
  if (!bounding(base, d, n, elem_bytes, r)) return;
  TESSEL_CHECK(list.count < kMaxAccessRanges, "too many access ranges");
  list.items[list.count++] = r;
}

// A dense range [base, base + bytes).
void add_dense(AccessRangeList& list, Scope scope, bool write, int64_t base, int64_t bytes) {
  if (bytes <= 0) return;
  add_range(list, scope, write, base, {Dim{bytes, 1}}, 1);
}

[[noreturn]] void bad_scope(Opcode op, const char* operand, Scope got, const char* expected) {
  fail("{}: operand {} is in scope {}, expected {}", opcode_name(op), operand, scope_name(got),
       expected);
}

void check_dma_scopes(const DmaArgs& d) {
  const Scope s = d.src.scope, t = d.dst.scope;
  const bool ok = (s == Scope::gm && (t == Scope::l1 || t == Scope::ub)) ||
                  (s == Scope::ub && (t == Scope::gm || t == Scope::l1));
  if (!ok)
    fail("dma: illegal scope pair {} -> {} (legal: gm->l1, gm->ub, ub->gm, ub->l1)", scope_name(s),
         scope_name(t));
  if (d.ndims < 1 || d.ndims > kMaxDmaDims)
    fail("dma: ndims is {}, expected 1..{}", d.ndims, kMaxDmaDims);
}

// Fractal block shape of the L0A/L0B destination: rows x cols blocks of (b0, b1).
struct FractalShape {
  int b0, b1;
};
FractalShape fractal_of(const npu::HwConfig& hw, Opcode op, Scope dst) {
  if (dst == Scope::l0a) return {hw.core.cube.m, hw.core.cube.k};
  if (dst == Scope::l0b) return {hw.core.cube.k, hw.core.cube.n};
  bad_scope(op, "dst", dst, "l0a or l0b");
}

void check_cube_shape(const npu::HwConfig& hw, Opcode op) {
  if (hw.core.cube.m <= 0 || hw.core.cube.k <= 0 || hw.core.cube.n <= 0)
    fail("{}: the hardware config's cube fractal {}x{}x{} is not positive", opcode_name(op),
         hw.core.cube.m, hw.core.cube.k, hw.core.cube.n);
}

// The im2col matrix's logical shape: X is K x N; to L0A it is written transposed (N x K).
struct Img2colShape {
  int64_t rows, cols;  // of the matrix written (B = X or A = X^T)
};
// Bytes of the L1 source block: c*h*w elements dense, ceil(c/c0)*h*w*c0 in NC1HWC0. Computed in
// 128 bits and saturated to INT64_MAX, so absurd sizes fail the bounds check instead of wrapping.
int64_t img2col_source_bytes(const Img2colArgs& g) {
  const __int128 c = g.c, c0 = g.c0;
  const __int128 chans = c0 > 0 ? (c + c0 - 1) / c0 * c0 : c;
  const __int128 bytes = chans * g.h * g.w * dtype_bytes(g.dtype);
  return bytes > INT64_MAX ? INT64_MAX : static_cast<int64_t>(bytes);
}

Img2colShape img2col_shape(const Img2colArgs& g) {
  const int64_t K = int64_t{g.c} * g.kh * g.kw;
  const int64_t N = int64_t{g.oh} * g.ow;
  if (g.dst.scope == Scope::l0a) return {N, K};
  return {K, N};
}

// ---------------------------------------------------------------------------------------------
// dma

template <int ES>
void dma_copy(const DmaArgs& d, uint8_t* dst, const uint8_t* src) {
  // Normalise to 4 dims (leading dims of extent 1).
  std::array<int64_t, 4> ext{}, ds{}, ss{}, vb{}, ve{};
  const int pad = 4 - d.ndims;
  for (int k = 0; k < pad; ++k) {
    ext[k] = 1;
    ds[k] = ss[k] = 0;
    vb[k] = 0;
    ve[k] = 1;
  }
  for (int k = 0; k < d.ndims; ++k) {
    ext[pad + k] = d.extent[k];
    ds[pad + k] = d.dst_stride[k];
    ss[pad + k] = d.src_stride[k];
    vb[pad + k] = std::min<int64_t>(d.valid_begin[k], d.extent[k]);
    ve[pad + k] = std::max<int64_t>(vb[pad + k], std::min<int64_t>(d.valid_end[k], d.extent[k]));
  }
  for (int k = 0; k < 4; ++k)
    if (ext[k] == 0) return;
  uint8_t pad_bits[4];
  if constexpr (ES == 2) {
    const uint16_t h = f32_to_f16_bits(d.pad_value);
    std::memcpy(pad_bits, &h, 2);
  } else {
    std::memcpy(pad_bits, &d.pad_value, 4);
  }
  const int64_t n3 = ext[3], dst3 = ds[3], src3 = ss[3];
  const bool dst_contig = dst3 == 1, src_contig = src3 == 1;
  auto fill = [&](uint8_t* row, int64_t from, int64_t to) {
    for (int64_t e = from; e < to; ++e) std::memcpy(row + e * dst3 * ES, pad_bits, ES);
  };
  for (int64_t i0 = 0; i0 < ext[0]; ++i0) {
    const bool v0 = i0 >= vb[0] && i0 < ve[0];
    for (int64_t i1 = 0; i1 < ext[1]; ++i1) {
      const bool v1 = v0 && i1 >= vb[1] && i1 < ve[1];
      for (int64_t i2 = 0; i2 < ext[2]; ++i2) {
        const bool v2 = v1 && i2 >= vb[2] && i2 < ve[2];
        uint8_t* drow = dst + (i0 * ds[0] + i1 * ds[1] + i2 * ds[2]) * ES;
        if (!v2) {
          fill(drow, 0, n3);
          continue;
        }
        const uint8_t* srow = src + (i0 * ss[0] + i1 * ss[1] + i2 * ss[2]) * ES;
        fill(drow, 0, vb[3]);
        if (dst_contig && src_contig) {
          std::memcpy(drow + vb[3] * ES, srow + vb[3] * ES, (ve[3] - vb[3]) * ES);
        } else {
          for (int64_t e = vb[3]; e < ve[3]; ++e)
            std::memcpy(drow + e * dst3 * ES, srow + e * src3 * ES, ES);
        }
        fill(drow, ve[3], n3);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Fractal writer shared by load2d and img2col.

// Writes an R x C matrix into fractal layout: blocks [ceil(R/b0)][ceil(C/b1)], each b0 x b1
// row-major, zero-padding to whole blocks. seg(row, col0, n, out) writes the n <= b1 elements
// (row, col0 .. col0+n-1) to out (consecutive elements of ES bytes).
template <int ES, class Seg>
void write_fractal(uint8_t* dst, int64_t R, int64_t C, int b0, int b1, Seg&& seg) {
  const int64_t R1 = ceil_div(R, b0), C1 = ceil_div(C, b1);
  for (int64_t rb = 0; rb < R1; ++rb) {
    for (int64_t cb = 0; cb < C1; ++cb) {
      uint8_t* blk = dst + (rb * C1 + cb) * b0 * b1 * ES;
      const int64_t col0 = cb * b1;
      const int64_t n = std::min<int64_t>(b1, C - col0);
      for (int rr = 0; rr < b0; ++rr) {
        const int64_t row = rb * b0 + rr;
        uint8_t* out = blk + int64_t{rr} * b1 * ES;
        if (row < R) {
          seg(row, col0, n, out);
          std::memset(out + n * ES, 0, (b1 - n) * ES);
        } else {
          std::memset(out, 0, int64_t{b1} * ES);
        }
      }
    }
  }
}

template <int ES>
void load2d_exec(const Load2dArgs& l, const FractalShape& f, uint8_t* dst, const uint8_t* src) {
  const int64_t stride = l.src_row_stride;
  if (!l.transpose) {
    write_fractal<ES>(dst, l.rows, l.cols, f.b0, f.b1,
                      [&](int64_t row, int64_t col0, int64_t n, uint8_t* out) {
                        std::memcpy(out, src + (row * stride + col0) * ES, n * ES);
                      });
  } else {
    write_fractal<ES>(dst, l.rows, l.cols, f.b0, f.b1,
                      [&](int64_t row, int64_t col0, int64_t n, uint8_t* out) {
                        for (int64_t c = 0; c < n; ++c)
                          std::memcpy(out + c * ES, src + ((col0 + c) * stride + row) * ES, ES);
                      });
  }
}

template <int ES>
void img2col_exec(const Img2colArgs& g, const FractalShape& f, uint8_t* dst, const uint8_t* fm) {
  const int64_t h = g.h, w = g.w, kh = g.kh, kw = g.kw, ow = g.ow;
  const int64_t sh = g.stride_h, sw = g.stride_w, dh = g.dilation_h, dw = g.dilation_w;
  const int64_t pt = g.pad_top, pl = g.pad_left;
  // fm[ci][hh][ww] is at element chan(ci) + hh * row + ww * pixel: dense (c0 = 0) c x h x w, or
  // NC1HWC0 (c0 > 0) [ceil(c/c0)][h][w][c0].
  const int64_t c0 = g.c0;
  const int64_t pixel = c0 > 0 ? c0 : 1, row = w * pixel;
  auto chan = [&](int64_t ci) { return c0 > 0 ? (ci / c0) * h * row + ci % c0 : ci * h * w; };
  auto put = [&](uint8_t* out, int64_t cbase, int64_t hh, int64_t ww) {
    if (hh >= 0 && hh < h && ww >= 0 && ww < w)
      std::memcpy(out, fm + (cbase + hh * row + ww * pixel) * ES, ES);
    else
      std::memset(out, 0, ES);
  };
  const Img2colShape shape = img2col_shape(g);
  if (g.dst.scope == Scope::l0b) {
    // rows k = (ci*kh + r)*kw + s, cols p = i*ow + j.
    write_fractal<ES>(dst, shape.rows, shape.cols, f.b0, f.b1,
                      [&](int64_t k, int64_t p0, int64_t n, uint8_t* out) {
                        const int64_t s = k % kw, r = (k / kw) % kh, ci = k / (kw * kh);
                        const int64_t hb = r * dh - pt, wb = s * dw - pl, cb = chan(ci);
                        int64_t i = p0 / ow, j = p0 % ow;
                        for (int64_t e = 0; e < n; ++e) {
                          put(out + e * ES, cb, i * sh + hb, j * sw + wb);
                          if (++j == ow) {
                            j = 0;
                            ++i;
                          }
                        }
                      });
  } else {
    // rows p, cols k.
    write_fractal<ES>(dst, shape.rows, shape.cols, f.b0, f.b1,
                      [&](int64_t p, int64_t k0, int64_t n, uint8_t* out) {
                        const int64_t hb = (p / ow) * sh - pt, wb = (p % ow) * sw - pl;
                        int64_t s = k0 % kw, r = (k0 / kw) % kh, ci = k0 / (kw * kh);
                        int64_t cb = chan(ci);
                        for (int64_t e = 0; e < n; ++e) {
                          put(out + e * ES, cb, hb + r * dh, wb + s * dw);
                          if (++s == kw) {
                            s = 0;
                            if (++r == kh) {
                              r = 0;
                              cb = chan(++ci);
                            }
                          }
                        }
                      });
  }
}

// ---------------------------------------------------------------------------------------------
// mmad

void widen(DType t, const uint8_t* src, int64_t n, float* out) {
  if (t == DType::f32) {
    std::memcpy(out, src, n * 4);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = Elem<DType::f16>::load(src + i * 2);
  }
}

void mmad_exec(const npu::HwConfig& hw, const MmadArgs& a, CoreMemory& mem) {
  const int m0 = hw.core.cube.m, k0 = hw.core.cube.k, n0 = hw.core.cube.n;
  const DType in = hw.core.cube.input_dtype, acc = hw.core.cube.acc_dtype;
  const int64_t m1 = a.m1, k1 = a.k1, n1 = a.n1;
  const int64_t a_elems = m1 * k1 * m0 * k0, b_elems = k1 * n1 * k0 * n0;
  // Reused per thread: no allocation once warmed up.
  thread_local std::vector<float> A, B, row;
  A.resize(a_elems);
  B.resize(b_elems);
  row.resize(n0);
  widen(in, mem.base[int(Scope::l0a)] + a.a.offset, a_elems, A.data());
  widen(in, mem.base[int(Scope::l0b)] + a.b.offset, b_elems, B.data());
  uint8_t* C = mem.base[int(Scope::l0c)] + a.c.offset;
  const int acc_bytes = dtype_bytes(acc);
  float* rowp = row.data();
  for (int64_t mb = 0; mb < m1; ++mb) {
    for (int64_t nb = 0; nb < n1; ++nb) {
      uint8_t* cblk = C + (mb * n1 + nb) * m0 * n0 * acc_bytes;
      for (int mm = 0; mm < m0; ++mm) {
        std::fill(rowp, rowp + n0, 0.0f);
        // Sum over k = kb*k0 + kk in increasing order for every (mm, nn).
        for (int64_t kb = 0; kb < k1; ++kb) {
          const float* arow = A.data() + ((mb * k1 + kb) * m0 + mm) * k0;
          const float* bblk = B.data() + (kb * n1 + nb) * k0 * n0;
          for (int kk = 0; kk < k0; ++kk) {
            const float av = arow[kk];
            const float* brow = bblk + int64_t{kk} * n0;
            for (int nn = 0; nn < n0; ++nn) rowp[nn] += av * brow[nn];
          }
        }
        uint8_t* crow = cblk + int64_t{mm} * n0 * acc_bytes;
        for (int nn = 0; nn < n0; ++nn) {
          float v = rowp[nn];
          if (a.accumulate) v = load_elem(acc, crow + nn * acc_bytes) + v;
          store_elem(acc, crow + nn * acc_bytes, v);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// fix

template <DType Acc, DType Dst>
void fix_exec_t(const npu::HwConfig& hw, const FixArgs& f, const uint8_t* src, uint8_t* dst) {
  const int64_t m0 = hw.core.cube.m, n0 = hw.core.cube.n;
  const int64_t N1 = ceil_div(f.n, n0);
  constexpr int AB = Elem<Acc>::kBytes, DB = Elem<Dst>::kBytes;
  for (int64_t i = 0; i < f.m; ++i) {
    const uint8_t* srow = src + ((i / m0) * N1 * m0 + (i % m0)) * n0 * AB;
    uint8_t* drow = dst + i * f.dst_row_stride * DB;
    for (int64_t jb = 0; jb < N1; ++jb) {
      const uint8_t* s = srow + jb * m0 * n0 * AB;
      const int64_t n = std::min<int64_t>(n0, f.n - jb * n0);
      uint8_t* d = drow + jb * n0 * DB;
      for (int64_t j = 0; j < n; ++j) {
        float v = Elem<Acc>::load(s + j * AB);
        if (f.relu) v = std::max(v, 0.0f);
        Elem<Dst>::store(d + j * DB, v);
      }
    }
  }
}

void fix_exec(const npu::HwConfig& hw, const FixArgs& f, CoreMemory& mem) {
  const uint8_t* src = mem.base[int(Scope::l0c)] + f.src.offset;
  uint8_t* dst = mem.base[int(Scope::ub)] + f.dst.offset;
  const bool acc16 = hw.core.cube.acc_dtype == DType::f16, dst16 = f.dst_dtype == DType::f16;
  if (acc16 && dst16)
    fix_exec_t<DType::f16, DType::f16>(hw, f, src, dst);
  else if (acc16)
    fix_exec_t<DType::f16, DType::f32>(hw, f, src, dst);
  else if (dst16)
    fix_exec_t<DType::f32, DType::f16>(hw, f, src, dst);
  else
    fix_exec_t<DType::f32, DType::f32>(hw, f, src, dst);
}

// ---------------------------------------------------------------------------------------------
// Vector unit. `F` maps (dst_old, a, b) -> value; the Use flags say which loads happen.

template <DType T, bool kSrc0, bool kSrc1, bool kDst, class F>
void vec_map(const VectorArgs& v, uint8_t* ub, F f) {
  using E = Elem<T>;
  constexpr int64_t S = E::kBytes;
  const int64_t count = v.count;
  const int64_t de = v.dst.elem_stride * S, ae = v.src0.elem_stride * S,
                be = v.src1.elem_stride * S;
  const int64_t dr = int64_t{v.dst.repeat_stride} * S, ar = int64_t{v.src0.repeat_stride} * S,
                br = int64_t{v.src1.repeat_stride} * S;
  const bool contiguous = de == S && (!kSrc0 || ae == S) && (!kSrc1 || be == S);
  for (int64_t r = 0; r < v.repeat; ++r) {
    uint8_t* d = ub + v.dst.addr.offset + r * dr;
    const uint8_t* a = ub + v.src0.addr.offset + r * ar;
    const uint8_t* b = ub + v.src1.addr.offset + r * br;
    if (contiguous) {
      for (int64_t e = 0; e < count; ++e) {
        const float x = kSrc0 ? E::load(a + e * S) : 0.0f;
        const float y = kSrc1 ? E::load(b + e * S) : 0.0f;
        const float o = kDst ? E::load(d + e * S) : 0.0f;
        E::store(d + e * S, f(o, x, y));
      }
    } else {
      for (int64_t e = 0; e < count; ++e) {
        const float x = kSrc0 ? E::load(a + e * ae) : 0.0f;
        const float y = kSrc1 ? E::load(b + e * be) : 0.0f;
        const float o = kDst ? E::load(d + e * de) : 0.0f;
        E::store(d + e * de, f(o, x, y));
      }
    }
  }
}

template <DType T, class F>
void vec_reduce(const VectorArgs& v, uint8_t* ub, F f) {
  using E = Elem<T>;
  constexpr int64_t S = E::kBytes;
  const int64_t ae = v.src0.elem_stride * S;
  const int64_t dr = int64_t{v.dst.repeat_stride} * S, ar = int64_t{v.src0.repeat_stride} * S;
  for (int64_t r = 0; r < v.repeat; ++r) {
    const uint8_t* a = ub + v.src0.addr.offset + r * ar;
    float acc = E::load(a);
    for (int64_t e = 1; e < v.count; ++e) acc = f(acc, E::load(a + e * ae));
    E::store(ub + v.dst.addr.offset + r * dr, acc);
  }
}

// std::max / std::min semantics (a NaN in the first operand propagates).
inline float fmax_std(float a, float b) { return a < b ? b : a; }
inline float fmin_std(float a, float b) { return b < a ? b : a; }

template <DType T>
void vector_exec_t(const VectorArgs& v, Opcode op, uint8_t* ub) {
  const float s = v.scalar;
  switch (op) {
    case Opcode::vadd:
      return vec_map<T, 1, 1, 0>(v, ub, [](float, float a, float b) { return a + b; });
    case Opcode::vsub:
      return vec_map<T, 1, 1, 0>(v, ub, [](float, float a, float b) { return a - b; });
    case Opcode::vmul:
      return vec_map<T, 1, 1, 0>(v, ub, [](float, float a, float b) { return a * b; });
    case Opcode::vdiv:
      return vec_map<T, 1, 1, 0>(v, ub, [](float, float a, float b) { return a / b; });
    case Opcode::vmax:
      return vec_map<T, 1, 1, 0>(v, ub, [](float, float a, float b) { return fmax_std(a, b); });
    case Opcode::vmin:
      return vec_map<T, 1, 1, 0>(v, ub, [](float, float a, float b) { return fmin_std(a, b); });
    case Opcode::vmla:
      return vec_map<T, 1, 1, 1>(v, ub, [](float d, float a, float b) { return d + a * b; });
    case Opcode::vadds:
      return vec_map<T, 1, 0, 0>(v, ub, [s](float, float a, float) { return a + s; });
    case Opcode::vmuls:
      return vec_map<T, 1, 0, 0>(v, ub, [s](float, float a, float) { return a * s; });
    case Opcode::vmaxs:
      return vec_map<T, 1, 0, 0>(v, ub, [s](float, float a, float) { return fmax_std(a, s); });
    case Opcode::vmins:
      return vec_map<T, 1, 0, 0>(v, ub, [s](float, float a, float) { return fmin_std(a, s); });
    case Opcode::vexp:
      return vec_map<T, 1, 0, 0>(v, ub, [](float, float a, float) { return std::exp(a); });
    case Opcode::vln:
      return vec_map<T, 1, 0, 0>(v, ub, [](float, float a, float) { return std::log(a); });
    case Opcode::vsqrt:
      return vec_map<T, 1, 0, 0>(v, ub, [](float, float a, float) { return std::sqrt(a); });
    case Opcode::vrec:
      return vec_map<T, 1, 0, 0>(v, ub, [](float, float a, float) { return 1.0f / a; });
    case Opcode::vabs:
      return vec_map<T, 1, 0, 0>(v, ub, [](float, float a, float) { return std::fabs(a); });
    case Opcode::vrelu:
      return vec_map<T, 1, 0, 0>(v, ub, [](float, float a, float) { return fmax_std(a, 0.0f); });
    case Opcode::vneg:
      return vec_map<T, 1, 0, 0>(v, ub, [](float, float a, float) { return -a; });
    case Opcode::vcopy:
      return vec_map<T, 1, 0, 0>(v, ub, [](float, float a, float) { return a; });
    case Opcode::vdup:
      return vec_map<T, 0, 0, 0>(v, ub, [s](float, float, float) { return s; });
    case Opcode::vrsum:
      return vec_reduce<T>(v, ub, [](float acc, float x) { return acc + x; });
    case Opcode::vrmax:
      return vec_reduce<T>(v, ub, [](float acc, float x) { return fmax_std(acc, x); });
    case Opcode::vrmin:
      return vec_reduce<T>(v, ub, [](float acc, float x) { return fmin_std(acc, x); });
    default:
      internal_fail("vector_exec: {} is not a vector opcode", opcode_name(op));
  }
}

template <class Args>
const Args& args_of(const Instruction& in) {
  const Args* a = std::get_if<Args>(&in.args);
  if (!a) internal_fail("{}: operand struct does not match the opcode", opcode_name(in.op));
  return *a;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

void check_stream(const std::vector<Instruction>& code, size_t core) {
  for (size_t i = 0; i < code.size(); ++i) {
    const Instruction& in = code[i];
    if (in.args.index() != args_index(in.op))
      fail("core {} instruction {} ({}): the operand struct does not match the opcode", core, i,
           opcode_name(in.op));
    if (const auto* s = std::get_if<ScalarArgs>(&in.args)) {
      if (s->rd >= kNumRegs || s->rs >= kNumRegs || s->rt >= kNumRegs)
        fail("core {} instruction {} ({}): register index out of range x0..x{}", core, i,
             opcode_name(in.op), kNumRegs - 1);
      const bool branch = in.op == Opcode::blt || in.op == Opcode::blti || in.op == Opcode::jmp;
      if (branch && (s->target < 0 || static_cast<size_t>(s->target) > code.size()))
        fail("core {} instruction {} ({}): branch target {} outside the stream of {} instructions",
             core, i, opcode_name(in.op), s->target, code.size());
    }
  }
}

bool is_vector_opcode(Opcode op) { return op >= Opcode::vadd && op <= Opcode::vrmin; }

bool is_data_instruction(Opcode op) { return op >= Opcode::dma && op <= Opcode::vrmin; }

VectorAccess vector_access(Opcode op) {
  VectorAccess u;
  switch (op) {
    case Opcode::vadd:
    case Opcode::vsub:
    case Opcode::vmul:
    case Opcode::vdiv:
    case Opcode::vmax:
    case Opcode::vmin:
      u.src0 = u.src1 = true;
      break;
    case Opcode::vmla:
      u.src0 = u.src1 = u.dst_read = true;
      break;
    case Opcode::vdup:
      break;
    case Opcode::vrsum:
    case Opcode::vrmax:
    case Opcode::vrmin:
      u.src0 = u.reduction = true;
      break;
    default:
      TESSEL_CHECK(is_vector_opcode(op), "{} is not a vector opcode", opcode_name(op));
      u.src0 = true;
  }
  return u;
}

AccessRangeList access_range_list(const npu::HwConfig& hw, const Instruction& in) {
  AccessRangeList list;
  switch (in.op) {
    case Opcode::dma: {
      const auto& d = args_of<DmaArgs>(in);
      check_dma_scopes(d);
      const int es = dtype_bytes(d.dtype);
      std::array<Dim, 4> src{}, dst{};
      bool src_empty = false;
      for (int k = 0; k < d.ndims; ++k) {
        dst[k] = {d.extent[k], d.dst_stride[k]};
        const int64_t vb = std::min<int64_t>(d.valid_begin[k], d.extent[k]);
        const int64_t ve = std::min<int64_t>(d.valid_end[k], d.extent[k]);
        if (ve <= vb) src_empty = true;
        // The valid window starts at vb: fold the offset into the base.
        src[k] = {std::max<int64_t>(0, ve - vb), d.src_stride[k]};
      }
      if (!src_empty) {
        int64_t base = d.src.offset;
        for (int k = 0; k < d.ndims; ++k)
          base += std::min<int64_t>(d.valid_begin[k], d.extent[k]) * d.src_stride[k] * es;
        AccessRange r;
        r.scope = d.src.scope;
        if (bounding(base, src, d.ndims, es, r)) list.items[list.count++] = r;
      }
      AccessRange w;
      w.scope = d.dst.scope;
      w.write = true;
      if (bounding(d.dst.offset, dst, d.ndims, es, w)) list.items[list.count++] = w;
      break;
    }
    case Opcode::load2d: {
      const auto& l = args_of<Load2dArgs>(in);
      check_cube_shape(hw, in.op);
      if (l.src.scope != Scope::l1) bad_scope(in.op, "src", l.src.scope, "l1");
      const FractalShape f = fractal_of(hw, in.op, l.dst.scope);
      const int es = dtype_bytes(l.dtype);
      if (!l.transpose)
        add_range(list, Scope::l1, false, l.src.offset,
                  {Dim{l.rows, l.src_row_stride}, Dim{l.cols, 1}}, es);
      else
        add_range(list, Scope::l1, false, l.src.offset,
                  {Dim{l.cols, l.src_row_stride}, Dim{l.rows, 1}}, es);
      if (l.rows > 0 && l.cols > 0)
        add_dense(list, l.dst.scope, true, l.dst.offset,
                  ceil_div(l.rows, f.b0) * f.b0 * ceil_div(l.cols, f.b1) * f.b1 * es);
      break;
    }
    case Opcode::img2col: {
      const auto& g = args_of<Img2colArgs>(in);
      check_cube_shape(hw, in.op);
      if (g.src.scope != Scope::l1) bad_scope(in.op, "src", g.src.scope, "l1");
      const FractalShape f = fractal_of(hw, in.op, g.dst.scope);
      const int es = dtype_bytes(g.dtype);
      const Img2colShape shape = img2col_shape(g);
      if (shape.rows > 0 && shape.cols > 0) {
        add_dense(list, Scope::l1, false, g.src.offset, img2col_source_bytes(g));
        add_dense(list, g.dst.scope, true, g.dst.offset,
                  ceil_div(shape.rows, f.b0) * f.b0 * ceil_div(shape.cols, f.b1) * f.b1 * es);
      }
      break;
    }
    case Opcode::mmad: {
      const auto& a = args_of<MmadArgs>(in);
      check_cube_shape(hw, in.op);
      if (a.a.scope != Scope::l0a) bad_scope(in.op, "a", a.a.scope, "l0a");
      if (a.b.scope != Scope::l0b) bad_scope(in.op, "b", a.b.scope, "l0b");
      if (a.c.scope != Scope::l0c) bad_scope(in.op, "c", a.c.scope, "l0c");
      const auto& cube = hw.core.cube;
      const int in_b = dtype_bytes(cube.input_dtype), acc_b = dtype_bytes(cube.acc_dtype);
      // add_dense skips empty operands (k1 == 0 reads nothing but still writes C).
      add_dense(list, Scope::l0a, false, a.a.offset, int64_t{a.m1} * a.k1 * cube.m * cube.k * in_b);
      add_dense(list, Scope::l0b, false, a.b.offset, int64_t{a.k1} * a.n1 * cube.k * cube.n * in_b);
      const int64_t c_bytes = int64_t{a.m1} * a.n1 * cube.m * cube.n * acc_b;
      if (a.accumulate) add_dense(list, Scope::l0c, false, a.c.offset, c_bytes);
      add_dense(list, Scope::l0c, true, a.c.offset, c_bytes);
      break;
    }
    case Opcode::fix: {
      const auto& f = args_of<FixArgs>(in);
      check_cube_shape(hw, in.op);
      if (f.src.scope != Scope::l0c) bad_scope(in.op, "src", f.src.scope, "l0c");
      if (f.dst.scope != Scope::ub) bad_scope(in.op, "dst", f.dst.scope, "ub");
      if (f.m == 0 || f.n == 0) break;
      const int64_t m0 = hw.core.cube.m, n0 = hw.core.cube.n;
      const int acc_b = dtype_bytes(hw.core.cube.acc_dtype);
      // Bounding range of the m x n elements read from the [M1][N1][m0][n0] tile: from element 0
      // to the last element of the last block.
      const int64_t M1 = ceil_div(f.m, m0), N1 = ceil_div(f.n, n0);
      const int64_t last = ((M1 - 1) * N1 + (N1 - 1)) * m0 * n0 + (f.m - 1 - (M1 - 1) * m0) * n0 +
                           (f.n - 1 - (N1 - 1) * n0);
      add_dense(list, Scope::l0c, false, f.src.offset, (last + 1) * acc_b);
      add_range(list, Scope::ub, true, f.dst.offset, {Dim{f.m, f.dst_row_stride}, Dim{f.n, 1}},
                dtype_bytes(f.dst_dtype));
      break;
    }
    default: {
      if (!is_vector_opcode(in.op))
        fail("{} is not a data instruction (it has no memory operands)", opcode_name(in.op));
      const auto& v = args_of<VectorArgs>(in);
      const VectorAccess u = vector_access(in.op);
      const int es = dtype_bytes(v.dtype);
      auto operand = [&](const VecOperand& o, const char* name, bool write, bool one_per_repeat) {
        if (o.addr.scope != Scope::ub) bad_scope(in.op, name, o.addr.scope, "ub");
        if (one_per_repeat)
          add_range(list, Scope::ub, write, o.addr.offset, {Dim{v.repeat, o.repeat_stride}}, es);
        else
          add_range(list, Scope::ub, write, o.addr.offset,
                    {Dim{v.repeat, o.repeat_stride}, Dim{v.count, o.elem_stride}}, es);
      };
      if (v.count == 0 || v.repeat == 0) break;
      if (u.src0) operand(v.src0, "src0", false, false);
      if (u.src1) operand(v.src1, "src1", false, false);
      if (u.dst_read) operand(v.dst, "dst", false, false);
      operand(v.dst, "dst", true, u.reduction);
      break;
    }
  }
  return list;
}

std::vector<AccessRange> access_ranges(const npu::HwConfig& hw, const Instruction& resolved) {
  const AccessRangeList l = access_range_list(hw, resolved);
  return std::vector<AccessRange>(l.begin(), l.end());
}

void check_ranges(const Instruction& in, const AccessRangeList& ranges,
                  const std::array<uint64_t, kNumScopes>& sizes, const char* what) {
  for (const AccessRange& r : ranges) {
    const uint64_t size = sizes[int(r.scope)];
    if (r.end <= size && r.begin <= r.end) continue;
    const char* prefix = what && *what ? what : opcode_name(in.op);
    if (r.begin == UINT64_MAX)
      fail("{}: {} of {} at a negative or overflowing address (the {} holds {} bytes)", prefix,
           r.write ? "write" : "read", scope_name(r.scope), scope_name(r.scope), size);
    fail("{}: {} of {} bytes [{}, {}) is outside the {}-byte {}", prefix,
         r.write ? "write" : "read", scope_name(r.scope), r.begin, r.end, size,
         scope_name(r.scope));
  }
}

Instruction resolve(const Instruction& instr, const std::array<int64_t, kNumRegs>& regs) {
  Instruction out = instr;
  auto fix_ref = [&](MemRef& m) {
    if (m.reg >= kNumRegs)
      fail("{}: register x{} does not exist (x0..x{})", opcode_name(instr.op), m.reg, kNumRegs - 1);
    m.offset = static_cast<int64_t>(static_cast<uint64_t>(m.reg == 0 ? 0 : regs[m.reg]) +
                                    static_cast<uint64_t>(m.offset));
    m.reg = 0;
  };
  std::visit(
      [&](auto& a) {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, DmaArgs> || std::is_same_v<A, Load2dArgs> ||
                      std::is_same_v<A, Img2colArgs> || std::is_same_v<A, FixArgs>) {
          fix_ref(a.dst);
          fix_ref(a.src);
        } else if constexpr (std::is_same_v<A, MmadArgs>) {
          fix_ref(a.a);
          fix_ref(a.b);
          fix_ref(a.c);
        } else if constexpr (std::is_same_v<A, VectorArgs>) {
          fix_ref(a.dst.addr);
          fix_ref(a.src0.addr);
          fix_ref(a.src1.addr);
        }
      },
      out.args);
  return out;
}

void execute(const npu::HwConfig& hw, const Instruction& in, CoreMemory& mem) {
  const AccessRangeList ranges = access_range_list(hw, in);  // also validates scopes
  check_ranges(in, ranges, mem.size);
  for (const AccessRange& r : ranges)
    if (!mem.base[int(r.scope)])
      internal_fail("{}: no memory attached for scope {}", opcode_name(in.op), scope_name(r.scope));
  switch (in.op) {
    case Opcode::dma: {
      const auto& d = std::get<DmaArgs>(in.args);
      uint8_t* dst = mem.base[int(d.dst.scope)] + d.dst.offset;
      const uint8_t* src =
          mem.base[int(d.src.scope)] ? mem.base[int(d.src.scope)] + d.src.offset : nullptr;
      if (d.dtype == DType::f16)
        dma_copy<2>(d, dst, src);
      else
        dma_copy<4>(d, dst, src);
      return;
    }
    case Opcode::load2d: {
      const auto& l = std::get<Load2dArgs>(in.args);
      if (l.rows == 0 || l.cols == 0) return;
      const FractalShape f = fractal_of(hw, in.op, l.dst.scope);
      uint8_t* dst = mem.base[int(l.dst.scope)] + l.dst.offset;
      const uint8_t* src = mem.base[int(Scope::l1)] + l.src.offset;
      if (l.dtype == DType::f16)
        load2d_exec<2>(l, f, dst, src);
      else
        load2d_exec<4>(l, f, dst, src);
      return;
    }
    case Opcode::img2col: {
      const auto& g = std::get<Img2colArgs>(in.args);
      const Img2colShape shape = img2col_shape(g);
      if (shape.rows == 0 || shape.cols == 0) return;
      const FractalShape f = fractal_of(hw, in.op, g.dst.scope);
      uint8_t* dst = mem.base[int(g.dst.scope)] + g.dst.offset;
      const uint8_t* fm = mem.base[int(Scope::l1)] + g.src.offset;
      if (g.dtype == DType::f16)
        img2col_exec<2>(g, f, dst, fm);
      else
        img2col_exec<4>(g, f, dst, fm);
      return;
    }
    case Opcode::mmad: {
      const auto& a = std::get<MmadArgs>(in.args);
      if (a.m1 == 0 || a.n1 == 0) return;
      mmad_exec(hw, a, mem);
      return;
    }
    case Opcode::fix: {
      const auto& f = std::get<FixArgs>(in.args);
      if (f.m == 0 || f.n == 0) return;
      fix_exec(hw, f, mem);
      return;
    }
    default: {
      const auto& v = std::get<VectorArgs>(in.args);
      if (v.count == 0 || v.repeat == 0) return;
      uint8_t* ub = mem.base[int(Scope::ub)];
      if (v.dtype == DType::f16)
        vector_exec_t<DType::f16>(v, in.op, ub);
      else
        vector_exec_t<DType::f32>(v, in.op, ub);
      return;
    }
  }
}

}  // namespace tessel::isa
