// Pooling: MaxPool (with optional Indices output), AveragePool, LpPool, GlobalAveragePool,
// GlobalMaxPool, GlobalLpPool; ONNX operator docs, opset 17 (MaxPool-12, AveragePool-11,
// LpPool-11). Input layout X [N, C, D1..Dk] with 1 to 3 spatial dims.
#include <algorithm>
#include <cmath>

#include <fmt/ranges.h>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

enum class PoolKind { max, average, lp };

struct PoolShapes {
  int64_t N, C;
  Shape in_spatial;
  WindowGeometry geom;
  Shape out;
};

PoolShapes pool_shapes(const Node& node, const Shape& x, PoolKind kind) {
  if (x.size() < 3 || x.size() > 5)
    node_unsupported(node, "input X must have 1 to 3 spatial dims, got shape {}",
                     shape_to_string(x));
  PoolShapes r;
  r.N = x[0];
  r.C = x[1];
  r.in_spatial.assign(x.begin() + 2, x.end());
  if (!node.attrs.has("kernel_shape")) node_fail(node, "attribute kernel_shape is required");
  const auto kernel = node.attrs.get_ints_or("kernel_shape", {}, node.name);
  r.geom = window_geometry(node, r.in_spatial, kernel, kind == PoolKind::max, kind != PoolKind::lp);
  r.out = {r.N, r.C};
  r.out.insert(r.out.end(), r.geom.out.begin(), r.geom.out.end());
  return r;
}

/// 3-D view of the geometry (leading size-1 spatial dims).
struct PoolGeom3 {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
};

PoolGeom3 widen(const PoolShapes& ps) {
  PoolGeom3 g;
  const size_t n = ps.in_spatial.size(), lead = 3 - n;
  for (size_t i = 0; i < 3; ++i) {
    if (i < lead) {
      g.in[i] = g.out[i] = g.k[i] = g.s[i] = g.d[i] = 1;
      g.pb[i] = g.pe[i] = 0;
    } else {
      const size_t j = i - lead;
      g.in[i] = ps.in_spatial[j];
      g.out[i] = ps.geom.out[j];
      g.k[i] = ps.geom.kernel[j];
      g.s[i] = ps.geom.strides[j];
      g.d[i] = ps.geom.dilations[j];
      g.pb[i] = ps.geom.pad_begin[j];
      g.pe[i] = ps.geom.pad_end[j];
    }
  }
  return g;
}

/// MaxPool: y = max over the (dilated) window of valid input positions; indices (optional) are
/// flat offsets into X, row-major (storage_order=0) or with the spatial dims column-major (1).
template <class C>
void max_pool(const PoolShapes& ps, const C* x, C* y, int64_t* indices, bool column_major) {
  const PoolGeom3 g = widen(ps);
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  for (int64_t nc = 0; nc < ps.N * ps.C; ++nc) {
    const C* xp = x + nc * in_plane;
    int64_t o = nc * out_plane;
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          C best = std::numeric_limits<C>::lowest();
          if constexpr (std::is_floating_point_v<C>) best = -std::numeric_limits<C>::infinity();
          int64_t best_at = -1;
          for (int64_t kd = 0; kd < g.k[0]; ++kd) {
            const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
            if (id < 0 || id >= g.in[0]) continue;
            for (int64_t kh = 0; kh < g.k[1]; ++kh) {
              const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
              if (ih < 0 || ih >= g.in[1]) continue;
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                if (iw < 0 || iw >= g.in[2]) continue;
                const int64_t at = (id * g.in[1] + ih) * g.in[2] + iw;
                const C v = xp[at];
                if (best_at < 0 || v > best) {
                  best = v;
                  best_at = at;
                }
              }
            }
          }
          y[o] = best;
          if (indices) {
            int64_t flat = best_at;
            if (column_major && best_at >= 0) {
              const int64_t id = best_at / (g.in[1] * g.in[2]);
              const int64_t ih = (best_at / g.in[2]) % g.in[1];
              const int64_t iw = best_at % g.in[2];
              flat = id + ih * g.in[0] + iw * g.in[0] * g.in[1];
            }
            indices[o] = nc * in_plane + flat;
          }
        }
  }
}

/// AveragePool: sum over the valid window positions divided by their count
/// (count_include_pad=0) or by the window size clipped to the padded input (count_include_pad=1).
/// LpPool: (sum |x|^p)^(1/p) over the valid positions (padding contributes 0).
template <class C>
void avg_lp_pool(const PoolShapes& ps, const C* x, C* y, PoolKind kind, bool count_include_pad,
                 double p) {
  const PoolGeom3 g = widen(ps);
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  for (int64_t nc = 0; nc < ps.N * ps.C; ++nc) {
    const C* xp = x + nc * in_plane;
    int64_t o = nc * out_plane;
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          const int64_t start[3] = {od * g.s[0] - g.pb[0], oh * g.s[1] - g.pb[1],
                                    ow * g.s[2] - g.pb[2]};
          C sum = 0;
          int64_t valid = 1, padded = 1;
          int64_t lo[3], hi[3];
          for (int a = 0; a < 3; ++a) {
            const int64_t end = start[a] + g.k[a];
            lo[a] = std::max<int64_t>(start[a], 0);
            hi[a] = std::min<int64_t>(end, g.in[a]);
            valid *= std::max<int64_t>(hi[a] - lo[a], 0);
            padded *= std::min<int64_t>(end, g.in[a] + g.pe[a]) - start[a];
          }
          for (int64_t id = lo[0]; id < hi[0]; ++id)
            for (int64_t ih = lo[1]; ih < hi[1]; ++ih)
              for (int64_t iw = lo[2]; iw < hi[2]; ++iw) {
                const C v = xp[(id * g.in[1] + ih) * g.in[2] + iw];
                if (kind == PoolKind::lp)
                  sum += static_cast<C>(std::pow(std::abs(v), static_cast<C>(p)));
                else
                  sum += v;
              }
          if (kind == PoolKind::lp)
            y[o] = static_cast<C>(std::pow(sum, static_cast<C>(1.0 / p)));
          else
            y[o] = sum / static_cast<C>(count_include_pad ? padded : std::max<int64_t>(valid, 1));
        }
  }
}

void expect_pool_dtype(const Node& node, DType dt, PoolKind kind) {
  if (kind == PoolKind::max)
    expect_dtype(node, dt, {DType::f16, DType::f32, DType::f64, DType::i8, DType::u8}, "input X");
  else
    expect_float(node, dt, "input X");
}

void register_pool(const char* name, PoolKind kind) {
  register_op({name,
               [kind](Node& node) {
                 check_arity(node, 1, 1, 1, kind == PoolKind::max ? 2 : 1);
                 const Value& x = required_input(node, 0, "X");
                 expect_pool_dtype(node, x.dtype, kind);
                 const PoolShapes ps = pool_shapes(node, x.shape, kind);
                 set_output(node, 0, x.dtype, ps.out);
                 set_output(node, 1, DType::i64, ps.out);
               },
               [kind](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, kind == PoolKind::max ? 2 : 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "X");
                 expect_pool_dtype(node, x.dtype(), kind);
                 const PoolShapes ps = pool_shapes(node, x.shape(), kind);
                 const bool want_indices = node.outputs.size() > 1 && node.outputs[1] != nullptr;
                 const int64_t storage_order = node.attrs.get_int_or("storage_order", 0, node.name);
                 if (storage_order != 0 && storage_order != 1)
                   node_fail(node, "storage_order={} must be 0 or 1", storage_order);
                 const bool cip = node.attrs.get_int_or("count_include_pad", 0, node.name) != 0;
                 const double p = static_cast<double>(node.attrs.get_int_or("p", 2, node.name));
                 return dispatch_numeric(node, x.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   InputView<C> vx(x);
                   OutputBuffer<C> y(x.dtype(), ps.out);
                   std::vector<Tensor> outs;
                   if (kind == PoolKind::max) {
                     Tensor idx(DType::i64, want_indices ? ps.out : Shape{0});
                     max_pool<C>(ps, vx.data(), y.data(),
                                 want_indices ? idx.data<int64_t>() : nullptr, storage_order == 1);
                     outs.push_back(y.finish());
                     if (node.outputs.size() > 1) outs.push_back(std::move(idx));
                   } else {
                     if constexpr (std::is_floating_point_v<C>) {
                       avg_lp_pool<C>(ps, vx.data(), y.data(), kind, cip, p);
                     }
                     outs.push_back(y.finish());
                   }
                   return outs;
                 });
               }});
}

/// Global pools reduce every spatial dim: [N, C, D...] -> [N, C, 1...].
void register_global_pool(const char* name, PoolKind kind) {
  auto out_shape = [](const Node& node, const Shape& x) {
    if (x.size() < 3)
      node_fail(node, "input X must be [N, C, D1, ...], got {}", shape_to_string(x));
    Shape out(x.size(), 1);
    out[0] = x[0];
    out[1] = x[1];
    return out;
  };
  register_op({name,
               [out_shape](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "X");
                 expect_float(node, x.dtype, "input X");
                 set_output(node, 0, x.dtype, out_shape(node, x.shape));
               },
               [out_shape, kind](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "X");
                 const Shape os = out_shape(node, x.shape());
                 const double p = static_cast<double>(node.attrs.get_int_or("p", 2, node.name));
                 return dispatch_float(node, x.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   InputView<C> vx(x);
                   OutputBuffer<C> y(x.dtype(), os);
                   const int64_t nc = os[0] * os[1];
                   const int64_t plane = nc > 0 ? x.numel() / nc : 0;
                   for (int64_t i = 0; i < nc; ++i) {
                     const C* xp = vx.data() + i * plane;
                     C acc = kind == PoolKind::max ? -std::numeric_limits<C>::infinity() : C(0);
                     for (int64_t j = 0; j < plane; ++j) {
                       if (kind == PoolKind::max)
                         acc = xp[j] > acc ? xp[j] : acc;
                       else if (kind == PoolKind::lp)
                         acc += static_cast<C>(std::pow(std::abs(xp[j]), static_cast<C>(p)));
                       else
                         acc += xp[j];
                     }
                     if (kind == PoolKind::average) acc /= static_cast<C>(plane);
                     if (kind == PoolKind::lp)
                       acc = static_cast<C>(std::pow(acc, C(1) / static_cast<C>(p)));
                     y[i] = acc;
                   }
                   return one_output(y.finish());
                 });
               }});
}

}  // namespace

void register_pool_ops() {
  register_pool("MaxPool", PoolKind::max);
  register_pool("AveragePool", PoolKind::average);
  register_pool("LpPool", PoolKind::lp);
  register_global_pool("GlobalAveragePool", PoolKind::average);
  register_global_pool("GlobalMaxPool", PoolKind::max);
  register_global_pool("GlobalLpPool", PoolKind::lp);
}

}  // namespace tessel::ops
