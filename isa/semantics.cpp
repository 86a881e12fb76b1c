// Functional semantics of the data instructions (docs/isa.md, "Instructions"): plain C++ over the
// byte arrays of one core's memories. Values are stored raw (f16 as IEEE binary16 bits, f32 as IEEE
// binary32); arithmetic widens to fp32 and rounds back with compiler/support/fp16.h (round to
// nearest even). Hot paths avoid per-element allocation and use memcpy for contiguous rows.
#include "isa/semantics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "compiler/support/error.h"
#include "compiler/support/fp16.h"
#include "isa/footprint.h"
#include "isa/operand_classes.h"

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

// ---------------------------------------------------------------------------------------------
// Numbers of every dtype (docs/isa.md, "Data types"): a float dtype holds an fp32 value (f16
// widened), a signed integer an int64, an unsigned integer or bool a uint64. Conversions follow
// ONNX Cast (and tessel's reference, Tensor::cast): float -> integer truncates toward zero and
// saturates at the type's range (NaN -> 0); integer -> integer wraps (two's complement); anything
// -> bool is `!= 0`; integer -> f16 rounds to f32 first, then to f16 (round to nearest even).

struct Num {
  DTypeClass cls = DTypeClass::float_;
  float f = 0;
  int64_t i = 0;
  uint64_t u = 0;
};

template <class I>
I float_to_int(float v) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(static_cast<double>(v));
  if (t <= static_cast<double>(std::numeric_limits<I>::lowest()))
    return std::numeric_limits<I>::lowest();
  if (t >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

// Calls fn(T{}) with the C++ storage type of integer dtype `t` (bool: uint8_t).
template <class Fn>
decltype(auto) with_int_type(DType t, Fn&& fn) {
  switch (t) {
    case DType::i8:
      return fn(int8_t{});
    case DType::u8:
    case DType::boolean:
      return fn(uint8_t{});
    case DType::i16:
      return fn(int16_t{});
    case DType::u16:
      return fn(uint16_t{});
    case DType::i32:
      return fn(int32_t{});
    case DType::u32:
      return fn(uint32_t{});
    case DType::i64:
      return fn(int64_t{});
    default:
      return fn(uint64_t{});
  }
}

Num load_num(DType t, const uint8_t* p) {
  Num n;
  n.cls = dtype_class(t);
  if (t == DType::f16 || t == DType::f32) {
    n.f = t == DType::f16 ? Elem<DType::f16>::load(p) : Elem<DType::f32>::load(p);
    return n;
  }
  with_int_type(t, [&](auto tag) {
    using C = decltype(tag);
    C v;
    std::memcpy(&v, p, sizeof(C));
    if constexpr (std::is_signed_v<C>)
      n.i = v;
    else
      n.u = v;
  });
  if (t == DType::boolean) n.u = n.u != 0;
  return n;
}

void store_num(DType t, uint8_t* p, const Num& n) {
  if (t == DType::f16 || t == DType::f32) {
    const float f = n.cls == DTypeClass::float_ ? n.f
                    : n.cls == DTypeClass::sint ? static_cast<float>(n.i)
                                                : static_cast<float>(n.u);
    if (t == DType::f16)
      Elem<DType::f16>::store(p, f);
    else
      Elem<DType::f32>::store(p, f);
    return;
  }
  if (t == DType::boolean) {
    const bool b = n.cls == DTypeClass::float_ ? n.f != 0.0f
                   : n.cls == DTypeClass::sint ? n.i != 0
                                               : n.u != 0;
    *p = b ? 1 : 0;
    return;
  }
  with_int_type(t, [&](auto tag) {
    using C = decltype(tag);
    const C v = n.cls == DTypeClass::float_ ? float_to_int<C>(n.f)
                : n.cls == DTypeClass::sint ? static_cast<C>(n.i)
                                            : static_cast<C>(n.u);
    std::memcpy(p, &v, sizeof(C));
  });
}

// The bytes of an fp32 scalar (a dma pad value, a vector scalar) converted to dtype `t`.
void scalar_bits(DType t, float v, uint8_t* out) {
  Num n;
  n.f = v;
  store_num(t, out, n);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

[[noreturn]] void bad_scope(Opcode op, const char* operand, Scope got, const char* expected) {
  fail("{}: operand {} is in scope {}, expected {}", opcode_name(op), operand, scope_name(got),
       expected);
}

// Fractal block shape of the L0A/L0B destination: rows x cols blocks of (b0, b1).
struct FractalShape {
  int b0, b1;
};
// The fractal of the cube's int8 mode when `int8`, else of the float mode.
FractalShape fractal_of(const npu::HwConfig& hw, Opcode op, Scope dst, bool int8) {
  const npu::CubeFractal f = hw.core.cube.fractal(int8);
  if (dst == Scope::l0a) return {f.m, f.k};
  if (dst == Scope::l0b) return {f.k, f.n};
  bad_scope(op, "dst", dst, "l0a or l0b");
}

void check_cube_shape(const npu::HwConfig& hw, Opcode op) {
  for (const npu::CubeFractal& f : {hw.core.cube.float_fractal(), hw.core.cube.int8_fractal()})
    if (f.m <= 0 || f.k <= 0 || f.n <= 0)
      fail("{}: the hardware config's cube fractal {}x{}x{} is not positive", opcode_name(op), f.m,
           f.k, f.n);
}

// The im2col matrix's logical shape: X is K x N; to L0A it is written transposed (N x K).
struct Img2colShape {
  int64_t rows, cols;  // of the matrix written (B = X or A = X^T)
};
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
  static_assert(ES == 1 || ES == 2 || ES == 4 || ES == 8);
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
  uint8_t pad_bits[8];
  scalar_bits(d.dtype, d.pad_value, pad_bits);
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

// The int8 mode (a_dtype/b_dtype i8 or u8): exact products, summed in int32 (two's complement,
// wrapping; the sum is formed in int64 and truncated, which is the same modulo 2^32).
void widen_int8(DType t, const uint8_t* src, int64_t n, int32_t* out) {
  if (t == DType::i8) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int8_t>(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = src[i];
  }
}

int32_t wrap_i32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

void mmad_int8_exec(const npu::HwConfig& hw, const MmadArgs& a, CoreMemory& mem) {
  const npu::CubeFractal f = hw.core.cube.int8_fractal();
  const int m0 = f.m, k0 = f.k, n0 = f.n;
  const int64_t m1 = a.m1, k1 = a.k1, n1 = a.n1;
  const int64_t a_elems = m1 * k1 * m0 * k0, b_elems = k1 * n1 * k0 * n0;
  thread_local std::vector<int32_t> A, B;
  thread_local std::vector<int64_t> row;
  A.resize(a_elems);
  B.resize(b_elems);
  row.resize(n0);
  widen_int8(a.a_dtype, mem.base[int(Scope::l0a)] + a.a.offset, a_elems, A.data());
  widen_int8(a.b_dtype, mem.base[int(Scope::l0b)] + a.b.offset, b_elems, B.data());
  uint8_t* C = mem.base[int(Scope::l0c)] + a.c.offset;
  int64_t* rowp = row.data();
  for (int64_t mb = 0; mb < m1; ++mb) {
    for (int64_t nb = 0; nb < n1; ++nb) {
      uint8_t* cblk = C + (mb * n1 + nb) * m0 * n0 * 4;
      for (int mm = 0; mm < m0; ++mm) {
        std::fill(rowp, rowp + n0, int64_t{0});
        for (int64_t kb = 0; kb < k1; ++kb) {
          const int32_t* arow = A.data() + ((mb * k1 + kb) * m0 + mm) * k0;
          const int32_t* bblk = B.data() + (kb * n1 + nb) * k0 * n0;
          for (int kk = 0; kk < k0; ++kk) {
            const int64_t av = arow[kk];
            const int32_t* brow = bblk + int64_t{kk} * n0;
            for (int nn = 0; nn < n0; ++nn) rowp[nn] += av * brow[nn];
          }
        }
        uint8_t* crow = cblk + int64_t{mm} * n0 * 4;
        for (int nn = 0; nn < n0; ++nn) {
          int64_t v = rowp[nn];
          if (a.accumulate) {
            int32_t old;
            std::memcpy(&old, crow + nn * 4, 4);
            v += old;
          }
          const int32_t out = wrap_i32(v);
          std::memcpy(crow + nn * 4, &out, 4);
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

}  // namespace

/// fix's requantisation of one int32 accumulator (docs/isa.md, "fix"), as ONNX Runtime's
/// MlasRequantizeOutput: v = acc + bias (int32, wrapping), x = float(v) * scale in fp32, clamped
/// to [lo - zp, hi - zp] (lo raised to zp by relu), rounded half to even, plus zp.
int32_t fix_requantize(int32_t acc, int32_t bias, float scale, int32_t zero_point, DType dst,
                       bool relu) {
  const int64_t lo0 = dst == DType::i8 ? -128 : 0, hi = dst == DType::i8 ? 127 : 255;
  const int64_t lo = relu ? std::max<int64_t>(lo0, zero_point) : lo0;
  const int32_t v = wrap_i32(int64_t{acc} + bias);
  float x = static_cast<float>(v) * scale;
  if (x != x) return static_cast<int32_t>(std::clamp<int64_t>(zero_point, lo, hi));  // NaN
  const float min_v = static_cast<float>(lo - zero_point);
  const float max_v = static_cast<float>(hi - zero_point);
  x = std::min(std::max(x, min_v), max_v);
  const int64_t q = static_cast<int64_t>(std::nearbyint(x)) + zero_point;
  return static_cast<int32_t>(std::clamp<int64_t>(q, lo, hi));
}

namespace {

// fix in the int8 mode: int32 accumulators in the int8 fractal plus the table's bias, to i32 or
// requantised to i8/u8 with the table's scale (the table at f.quant).
void fix_int8_exec(const npu::HwConfig& hw, const FixArgs& f, CoreMemory& mem) {
  const npu::CubeFractal fr = hw.core.cube.int8_fractal();
  const int64_t m0 = fr.m, n0 = fr.n;
  const int64_t N1 = ceil_div(f.n, n0);
  const uint8_t* src = mem.base[int(Scope::l0c)] + f.src.offset;
  uint8_t* dst = mem.base[int(Scope::ub)] + f.dst.offset;
  const uint8_t* table = mem.base[int(Scope::ub)] + f.quant.offset;
  const int DB = dtype_bytes(f.dst_dtype);
  for (int64_t i = 0; i < f.m; ++i) {
    const uint8_t* srow = src + ((i / m0) * N1 * m0 + (i % m0)) * n0 * 4;
    uint8_t* drow = dst + i * f.dst_row_stride * DB;
    for (int64_t j = 0; j < f.n; ++j) {
      int32_t acc;
      std::memcpy(&acc, srow + ((j / n0) * m0 * n0 + j % n0) * 4, 4);
      const uint8_t* e = table + (f.per_row ? i : f.per_channel ? j : 0) * kFixQuantEntryBytes;
      float scale;
      int32_t bias;
      std::memcpy(&scale, e, 4);
      std::memcpy(&bias, e + 4, 4);
      if (f.dst_dtype == DType::i32) {
        acc = wrap_i32(int64_t{acc} + bias);
        if (f.relu) acc = std::max(acc, 0);
        std::memcpy(drow + j * 4, &acc, 4);
        continue;
      }
      const int32_t q = fix_requantize(acc, bias, scale, f.zero_point, f.dst_dtype, f.relu);
      drow[j] = static_cast<uint8_t>(q);  // i8: the two's complement byte
    }
  }
}

void fix_exec(const npu::HwConfig& hw, const FixArgs& f, CoreMemory& mem) {
  if (fix_int8(f)) return fix_int8_exec(hw, f, mem);
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
      internal_fail("vector_exec: {} has no vector semantics (its case in isa/semantics.cpp)",
                    opcode_name(op));
  }
}

// Integer dtypes: elements of C++ type C (bool: uint8_t holding 0 or 1, normalised on load and
// store). Additions, subtractions and products wrap (computed in uint64_t, then truncated).
template <class C, bool kBool>
struct IntElem {
  static C load(const uint8_t* p) {
    C v;
    std::memcpy(&v, p, sizeof(C));
    if constexpr (kBool) v = v != 0;
    return v;
  }
  static void store(uint8_t* p, C v) {
    if constexpr (kBool) v = v != 0;
    std::memcpy(p, &v, sizeof(C));
  }
};

template <class C, bool kBool, bool kSrc0, bool kSrc1, bool kDst, class F>
void vec_map_int(const VectorArgs& v, uint8_t* ub, F f) {
  using E = IntElem<C, kBool>;
  constexpr int64_t S = sizeof(C);
  const int64_t de = v.dst.elem_stride * S, ae = v.src0.elem_stride * S,
                be = v.src1.elem_stride * S;
  const int64_t dr = int64_t{v.dst.repeat_stride} * S, ar = int64_t{v.src0.repeat_stride} * S,
                br = int64_t{v.src1.repeat_stride} * S;
  for (int64_t r = 0; r < v.repeat; ++r) {
    uint8_t* d = ub + v.dst.addr.offset + r * dr;
    const uint8_t* a = ub + v.src0.addr.offset + r * ar;
    const uint8_t* b = ub + v.src1.addr.offset + r * br;
    for (int64_t e = 0; e < v.count; ++e) {
      const C x = kSrc0 ? E::load(a + e * ae) : C{};
      const C y = kSrc1 ? E::load(b + e * be) : C{};
      const C o = kDst ? E::load(d + e * de) : C{};
      E::store(d + e * de, f(o, x, y));
    }
  }
}

template <class C, bool kBool, class F>
void vec_reduce_int(const VectorArgs& v, uint8_t* ub, F f) {
  using E = IntElem<C, kBool>;
  constexpr int64_t S = sizeof(C);
  const int64_t ae = v.src0.elem_stride * S;
  const int64_t dr = int64_t{v.dst.repeat_stride} * S, ar = int64_t{v.src0.repeat_stride} * S;
  for (int64_t r = 0; r < v.repeat; ++r) {
    const uint8_t* a = ub + v.src0.addr.offset + r * ar;
    C acc = E::load(a);
    for (int64_t e = 1; e < v.count; ++e) acc = f(acc, E::load(a + e * ae));
    E::store(ub + v.dst.addr.offset + r * dr, acc);
  }
}

template <class C>
C wrap_add(C a, C b) {
  return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <class C>
C wrap_sub(C a, C b) {
  return static_cast<C>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <class C>
C wrap_mul(C a, C b) {
  return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
// Truncating division; x / 0 = 0, and the one overflowing quotient (lowest / -1) wraps to lowest.
template <class C>
C int_div(C a, C b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<C>) {
    if (a == std::numeric_limits<C>::lowest() && b == C(-1)) return a;
  }
  return static_cast<C>(a / b);
}

template <class C, bool kBool>
void vector_exec_int(const VectorArgs& v, Opcode op, uint8_t* ub) {
  const C s = kBool ? C(v.scalar != 0.0f) : float_to_int<C>(v.scalar);
  auto mx = [](C a, C b) { return a < b ? b : a; };
  auto mn = [](C a, C b) { return b < a ? b : a; };
#define TESSEL_MAP(s0, s1, dr, expr)                                        \
  return vec_map_int<C, kBool, s0, s1, dr>(v, ub, [&](C d, C a, C b) -> C { \
    (void)d;                                                                \
    (void)a;                                                                \
    (void)b;                                                                \
    return static_cast<C>(expr);                                            \
  })
  switch (op) {
    case Opcode::vadd:
      TESSEL_MAP(1, 1, 0, wrap_add(a, b));
    case Opcode::vsub:
      TESSEL_MAP(1, 1, 0, wrap_sub(a, b));
    case Opcode::vmul:
      TESSEL_MAP(1, 1, 0, wrap_mul(a, b));
    case Opcode::vdiv:
      TESSEL_MAP(1, 1, 0, int_div(a, b));
    case Opcode::vmax:
      TESSEL_MAP(1, 1, 0, mx(a, b));
    case Opcode::vmin:
      TESSEL_MAP(1, 1, 0, mn(a, b));
    case Opcode::vmla:
      TESSEL_MAP(1, 1, 1, wrap_add(d, wrap_mul(a, b)));
    case Opcode::vadds:
      TESSEL_MAP(1, 0, 0, wrap_add(a, s));
    case Opcode::vmuls:
      TESSEL_MAP(1, 0, 0, wrap_mul(a, s));
    case Opcode::vmaxs:
      TESSEL_MAP(1, 0, 0, mx(a, s));
    case Opcode::vmins:
      TESSEL_MAP(1, 0, 0, mn(a, s));
    case Opcode::vabs:
      TESSEL_MAP(1, 0, 0, a < C{} ? wrap_sub(C{}, a) : a);
    case Opcode::vrelu:
      TESSEL_MAP(1, 0, 0, mx(a, C{}));
    case Opcode::vneg:
      TESSEL_MAP(1, 0, 0, wrap_sub(C{}, a));
    case Opcode::vcopy:
      TESSEL_MAP(1, 0, 0, a);
    case Opcode::vdup:
      TESSEL_MAP(0, 0, 0, s);
    case Opcode::vand:
      TESSEL_MAP(1, 1, 0, a & b);
    case Opcode::vor:
      TESSEL_MAP(1, 1, 0, a | b);
    case Opcode::vxor:
      TESSEL_MAP(1, 1, 0, a ^ b);
    case Opcode::vnot:
      TESSEL_MAP(1, 0, 0, kBool ? C(!a) : C(~a));
    case Opcode::vrsum:
      return vec_reduce_int<C, kBool>(v, ub, [](C acc, C x) { return wrap_add(acc, x); });
    case Opcode::vrmax:
      return vec_reduce_int<C, kBool>(v, ub, mx);
    case Opcode::vrmin:
      return vec_reduce_int<C, kBool>(v, ub, mn);
    default:
      internal_fail("vector_exec_int: {} has no integer form", opcode_name(op));
  }
#undef TESSEL_MAP
}

// Instructions whose operands hold different element types (vector_operand_dtype): comparisons
// (bool destination), vsel (bool mask) and vconv, element by element through Num.
void vector_exec_mixed(const VectorArgs& v, Opcode op, uint8_t* ub) {
  const DType dt = v.dtype;
  const DType d_t = vector_operand_dtype(op, v, Field::dst);
  const DType a_t = vector_operand_dtype(op, v, Field::src0);
  const int64_t ds = dtype_bytes(d_t), as = dtype_bytes(a_t), bs = dtype_bytes(dt);
  auto at = [&](const VecOperand& o, int64_t r, int64_t e, int64_t es) {
    return ub + o.addr.offset + (r * o.repeat_stride + e * o.elem_stride) * es;
  };
  for (int64_t r = 0; r < v.repeat; ++r) {
    for (int64_t e = 0; e < v.count; ++e) {
      uint8_t* d = at(v.dst, r, e, ds);
      if (op == Opcode::vsel) {
        const bool m = *at(v.src0, r, e, 1) != 0;
        std::memmove(d, at(m ? v.src1 : v.src2, r, e, bs), static_cast<size_t>(bs));
        continue;
      }
      const Num a = load_num(a_t, at(v.src0, r, e, as));
      if (op == Opcode::vconv) {
        store_num(d_t, d, a);
        continue;
      }
      const Num b = load_num(dt, at(v.src1, r, e, bs));
      bool lt, eq;
      if (a.cls == DTypeClass::float_) {
        lt = a.f < b.f;
        eq = a.f == b.f;
      } else if (a.cls == DTypeClass::sint) {
        lt = a.i < b.i;
        eq = a.i == b.i;
      } else {
        lt = a.u < b.u;
        eq = a.u == b.u;
      }
      bool res;
      switch (op) {
        case Opcode::vcmp_eq:
          res = eq;
          break;
        case Opcode::vcmp_ne:
          res = !eq;  // true when either is NaN
          break;
        case Opcode::vcmp_lt:
          res = lt;
          break;
        case Opcode::vcmp_le:
          res = lt || eq;
          break;
        default:
          internal_fail("vector_exec_mixed: {} is not a mixed-dtype instruction", opcode_name(op));
      }
      *d = res ? 1 : 0;
    }
  }
}

// The run-time scope rules (the operand classes' allowed scopes, isa/operand_classes.h), with
// the executors' messages.
template <class A>
void check_scopes(Opcode op, const A& a) {
  using Desc = opclass::ClassDesc<A>;
  if constexpr (requires { Desc::scope_pairs; }) {
    for (const auto& [s, t] : Desc::scope_pairs)
      if (a.src.scope == s && a.dst.scope == t) return;
    std::string legal;
    for (const auto& [s, t] : Desc::scope_pairs)
      legal += fmt::format("{}{}->{}", legal.empty() ? "" : ", ", scope_name(s), scope_name(t));
    fail("{}: illegal scope pair {} -> {} (legal: {})", opcode_name(op), scope_name(a.src.scope),
         scope_name(a.dst.scope), legal);
  } else {
    opclass::for_each_field_indexed<A>([&](const auto& d, int i) {
      using K = typename std::decay_t<decltype(d)>::kind_type;
      if constexpr (opclass::kIsMemory<K>) {
        const Scope s = opclass::mem_ref(d.get(a)).scope;
        if (d.allowed && opclass::field_used(op, i) && !opclass::in_set(d.allowed, s))
          bad_scope(op, field_name(d.name), s, opclass::scope_list(d.allowed).c_str());
      }
    });
  }
}

footprint::Fractal checked_fractal(const npu::HwConfig& hw, Opcode op) {
  check_cube_shape(hw, op);
  const auto& c = hw.core.cube;
  const npu::CubeFractal i8 = c.int8_fractal();
  return {c.m, c.k, c.n, dtype_bytes(c.input_dtype), dtype_bytes(c.acc_dtype), i8.m, i8.k, i8.n};
}

// Executors of the data instruction classes.
void exec(const npu::HwConfig&, Opcode, const DmaArgs& d, CoreMemory& mem) {
  uint8_t* dst = mem.base[int(d.dst.scope)] + d.dst.offset;
  const uint8_t* src =
      mem.base[int(d.src.scope)] ? mem.base[int(d.src.scope)] + d.src.offset : nullptr;
  switch (dtype_bytes(d.dtype)) {
    case 1:
      return dma_copy<1>(d, dst, src);
    case 2:
      return dma_copy<2>(d, dst, src);
    case 4:
      return dma_copy<4>(d, dst, src);
    default:
      return dma_copy<8>(d, dst, src);
  }
}

// The cube side (load2d, img2col, mmad, fix) moves f16/f32 (the float mode) or i8/u8 (the int8
// mode; fix also writes i32).
void check_cube_dtype(Opcode op, DType t, bool allow_i32 = false) {
  if (!is_float_dtype(t) && !is_cube_int8_dtype(t) && !(allow_i32 && t == DType::i32))
    fail("{}: dtype {} is not f16, f32, i8 or u8{} (the cube's float and int8 modes)",
         opcode_name(op), dtype_name(t), allow_i32 ? " or i32" : "");
}

void exec(const npu::HwConfig& hw, Opcode op, const Load2dArgs& l, CoreMemory& mem) {
  check_cube_dtype(op, l.dtype);
  if (l.rows == 0 || l.cols == 0) return;
  const FractalShape f = fractal_of(hw, op, l.dst.scope, is_cube_int8_dtype(l.dtype));
  uint8_t* dst = mem.base[int(l.dst.scope)] + l.dst.offset;
  const uint8_t* src = mem.base[int(Scope::l1)] + l.src.offset;
  if (l.dtype == DType::f16)
    load2d_exec<2>(l, f, dst, src);
  else if (l.dtype == DType::f32)
    load2d_exec<4>(l, f, dst, src);
  else
    load2d_exec<1>(l, f, dst, src);
}

void exec(const npu::HwConfig& hw, Opcode op, const Img2colArgs& g, CoreMemory& mem) {
  check_cube_dtype(op, g.dtype);
  const Img2colShape shape = img2col_shape(g);
  if (shape.rows == 0 || shape.cols == 0) return;
  const FractalShape f = fractal_of(hw, op, g.dst.scope, is_cube_int8_dtype(g.dtype));
  uint8_t* dst = mem.base[int(g.dst.scope)] + g.dst.offset;
  const uint8_t* fm = mem.base[int(Scope::l1)] + g.src.offset;
  if (g.dtype == DType::f16)
    img2col_exec<2>(g, f, dst, fm);
  else if (g.dtype == DType::f32)
    img2col_exec<4>(g, f, dst, fm);
  else
    img2col_exec<1>(g, f, dst, fm);
}

void exec(const npu::HwConfig& hw, Opcode op, const MmadArgs& a, CoreMemory& mem) {
  const bool ia = is_cube_int8_dtype(a.a_dtype), ib = is_cube_int8_dtype(a.b_dtype);
  if (ia != ib || (!ia && (!is_float_dtype(a.a_dtype) || !is_float_dtype(a.b_dtype))))
    fail(
        "{}: a_dtype {} and b_dtype {} are not both float (the float mode) or both i8/u8 (the "
        "int8 mode)",
        opcode_name(op), dtype_name(a.a_dtype), dtype_name(a.b_dtype));
  if (a.m1 == 0 || a.n1 == 0) return;
  if (ia)
    mmad_int8_exec(hw, a, mem);
  else
    mmad_exec(hw, a, mem);
}

void exec(const npu::HwConfig& hw, Opcode op, const FixArgs& f, CoreMemory& mem) {
  check_cube_dtype(op, f.dst_dtype, true);
  if (f.m == 0 || f.n == 0) return;
  fix_exec(hw, f, mem);
}

void exec(const npu::HwConfig&, Opcode op, const VectorArgs& v, CoreMemory& mem) {
  const InstrInfo& r = instr_info(op);
  if (r.float_only && !is_float_dtype(v.dtype))
    fail("{}: dtype {} is not a float type (f16 or f32)", opcode_name(op), dtype_name(v.dtype));
  if (r.bits_only && is_float_dtype(v.dtype))
    fail("{}: dtype {} is not an integer type or bool", opcode_name(op), dtype_name(v.dtype));
  if (v.count == 0 || v.repeat == 0) return;
  uint8_t* ub = mem.base[int(Scope::ub)];
  if (r.bool_dst || r.bool_src0 || r.converts) return vector_exec_mixed(v, op, ub);
  switch (v.dtype) {
    case DType::f16:
      return vector_exec_t<DType::f16>(v, op, ub);
    case DType::f32:
      return vector_exec_t<DType::f32>(v, op, ub);
    case DType::boolean:
      return vector_exec_int<uint8_t, true>(v, op, ub);
    default:
      return with_int_type(v.dtype,
                           [&](auto tag) { vector_exec_int<decltype(tag), false>(v, op, ub); });
  }
}

// l2_prefetch / l2_discard: hints to the shared L2; they change no value (docs/isa.md).
void exec(const npu::HwConfig&, Opcode, const L2HintArgs&, CoreMemory&) {}

template <class A>
void exec(const npu::HwConfig&, Opcode op, const A&, CoreMemory&) {
  internal_fail("execute: {} is not a data instruction", opcode_name(op));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

void check_instruction(const Instruction& in, size_t i, size_t size, size_t core) {
  if (!is_valid_opcode(in.op))
    fail("core {} instruction {}: invalid opcode value {}", core, i, static_cast<int>(in.op));
  if (in.args.index() != args_index(in.op))
    fail("core {} instruction {} ({}): the operand struct does not match the opcode", core, i,
         opcode_name(in.op));
  if (const auto* s = std::get_if<ScalarArgs>(&in.args)) {
    if (s->rd >= kNumRegs || s->rs >= kNumRegs || s->rt >= kNumRegs)
      fail("core {} instruction {} ({}): register index out of range x0..x{}", core, i,
           opcode_name(in.op), kNumRegs - 1);
    if (is_branch(in.op) && (s->target < 0 || static_cast<size_t>(s->target) > size))
      fail("core {} instruction {} ({}): branch target {} outside the stream of {} instructions",
           core, i, opcode_name(in.op), s->target, size);
  }
}

void check_stream(const std::vector<Instruction>& code, size_t core) {
  for (size_t i = 0; i < code.size(); ++i) check_instruction(code[i], i, code.size(), core);
}

VectorAccess vector_access(Opcode op) {
  TESSEL_CHECK(is_valid_opcode(op) && is_vector_opcode(op), "{} is not a vector opcode",
               opcode_name(op));
  const InstrInfo& r = instr_info(op);
  return {r.uses(Field::src0), r.uses(Field::src1), r.uses(Field::src2), r.reads_dst, r.reduction};
}

AccessRangeList access_range_list(const npu::HwConfig& hw, const Instruction& in) {
  if (!is_valid_opcode(in.op) || !is_data_instruction(in.op))
    fail("{} is not a data instruction (it has no memory operands)", opcode_name(in.op));
  if (in.args.index() != args_index(in.op))
    internal_fail("{}: operand struct does not match the opcode", opcode_name(in.op));
  AccessRangeList list;
  auto add = [&](const footprint::Span& s) {
    TESSEL_CHECK(list.count < kMaxAccessRanges, "too many access ranges");
    AccessRange& r = list.items[list.count++];
    r.scope = s.ref->scope;
    r.write = s.write;
    // Negative or beyond-64-bit addresses become a range starting at UINT64_MAX (never in bounds).
    const footprint::i128 begin = s.ref->offset + s.lo, end = s.ref->offset + s.hi;
    if (begin < 0 || end > static_cast<footprint::i128>(UINT64_MAX)) {
      r.begin = r.end = UINT64_MAX;
    } else {
      r.begin = static_cast<uint64_t>(begin);
      r.end = static_cast<uint64_t>(end);
    }
  };
  std::visit(
      [&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        check_scopes(in.op, a);
        if constexpr (std::is_same_v<A, DmaArgs>) {
          if (a.ndims < 1 || a.ndims > kMaxDmaDims)
            fail("dma: ndims is {}, expected 1..{}", a.ndims, kMaxDmaDims);
        }
        footprint::Fractal fractal;
        if constexpr (requires { opclass::ClassDesc<A>::uses_fractal; })
          fractal = checked_fractal(hw, in.op);
        footprint::for_each_access(fractal, in.op, a, add);
      },
      in.args);
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
  std::visit(
      [&](auto& a) {
        using A = std::decay_t<decltype(a)>;
        opclass::for_each_field<A>([&](const auto& d) {
          using K = typename std::decay_t<decltype(d)>::kind_type;
          if constexpr (opclass::kIsMemory<K>) {
            MemRef& m = opclass::mem_ref(d.get(a));
            if (m.reg >= kNumRegs)
              fail("{}: register x{} does not exist (x0..x{})", opcode_name(instr.op), m.reg,
                   kNumRegs - 1);
            m.offset = static_cast<int64_t>(static_cast<uint64_t>(m.reg == 0 ? 0 : regs[m.reg]) +
                                            static_cast<uint64_t>(m.offset));
            m.reg = 0;
          }
        });
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
  std::visit([&](const auto& a) { exec(hw, in.op, a, mem); }, in.args);
}

}  // namespace tessel::isa
