// Convolutions: Conv and ConvTranspose over 1, 2 or 3 spatial dims, with groups (depthwise),
// strides, dilations, explicit pads and auto_pad; ONNX operator docs, opset 17.
//
// Layout: X [N, C, D1..Dk], W [M, C/group, K1..Kk] (Conv) or [C, M/group, K1..Kk] (ConvTranspose),
// B [M]. Reference kernels accumulate in fp32 (f64 for f64 tensors) with direct loops; lower
// spatial ranks are treated as 3-D with leading size-1 dims, and the innermost loop runs along the
// output width over a precomputed valid range, so it has no bounds checks and vectorises.
#include <algorithm>

#include <fmt/ranges.h>

#include "compiler/ops/op_util.h"
#include "compiler/support/int_math.h"

namespace tessel::ops {
namespace {

/// A window geometry widened to exactly 3 spatial dims (leading dims of size 1).
struct Geom3 {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
};

Geom3 widen(const Shape& in_spatial, const Shape& out_spatial, const WindowGeometry& g) {
  Geom3 r;
  const size_t n = in_spatial.size();
  const size_t lead = 3 - n;
  for (size_t i = 0; i < 3; ++i) {
    if (i < lead) {
      r.in[i] = r.out[i] = r.k[i] = r.s[i] = r.d[i] = 1;
      r.pb[i] = 0;
    } else {
      const size_t j = i - lead;
      r.in[i] = in_spatial[j];
      r.out[i] = out_spatial[j];
      r.k[i] = g.kernel[j];
      r.s[i] = g.strides[j];
      r.d[i] = g.dilations[j];
      r.pb[i] = g.pad_begin[j];
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Conv
// ---------------------------------------------------------------------------------------------

struct ConvShapes {
  int64_t N, C, M, group;
  Shape in_spatial, kernel;
  WindowGeometry geom;
  Shape out;
};

ConvShapes conv_shapes(const Node& node, const Shape& x, const Shape& w, const Shape* b) {
  if (x.size() < 3 || x.size() > 5)
    node_unsupported(node, "input X must have 1 to 3 spatial dims, got shape {}",
                     shape_to_string(x));
  if (w.size() != x.size())
    node_fail(node, "weight W rank {} differs from input X rank {}", w.size(), x.size());
  ConvShapes r;
  r.N = x[0];
  r.C = x[1];
  r.M = w[0];
  r.group = node.attrs.get_int_or("group", 1, node.name);
  if (r.group < 1 || r.C % r.group != 0 || r.M % r.group != 0)
    node_fail(node, "group={} must divide input channels {} and output channels {}", r.group, r.C,
              r.M);
  if (w[1] * r.group != r.C)
    node_fail(node,
              "W shape {} expects {} input channels per group, X has {} channels in {} groups",
              shape_to_string(w), w[1], r.C, r.group);
  r.in_spatial.assign(x.begin() + 2, x.end());
  r.kernel.assign(w.begin() + 2, w.end());
  const auto ks = node.attrs.get_ints_or("kernel_shape", r.kernel, node.name);
  if (ks != r.kernel)
    node_fail(node, "kernel_shape [{}] differs from W's spatial dims {}", fmt::join(ks, ","),
              shape_to_string(r.kernel));
  if (b != nullptr && (b->size() != 1 || (*b)[0] != r.M))
    node_fail(node, "bias B has shape {}, expected [{}]", shape_to_string(*b), r.M);
  r.geom = window_geometry(node, r.in_spatial, r.kernel, true, false);
  r.out = {r.N, r.M};
  r.out.insert(r.out.end(), r.geom.out.begin(), r.geom.out.end());
  return r;
}

void conv_infer(Node& node) {
  check_arity(node, 2, 3, 1, 1);
  const Value& x = required_input(node, 0, "X");
  const Value& w = required_input(node, 1, "W");
  expect_float(node, x.dtype, "input X");
  expect_same_dtype(node, 0, 1);
  const Value* b = node.input(2);
  if (b) expect_same_dtype(node, 0, 2);
  set_output(node, 0, x.dtype, conv_shapes(node, x.shape, w.shape, b ? &b->shape : nullptr).out);
}

/// Direct convolution in compute type C. out[n, m, o] = B[m] + sum_{c in group, k}
/// W[m, c, k] * X[n, g*Cg + c, o*s + k*d - pad_begin] (zero outside X).
template <class C>
void conv_compute(const ConvShapes& cs, const C* x, const C* w, const C* bias, C* y) {
  const Geom3 g = widen(cs.in_spatial, Shape(cs.out.begin() + 2, cs.out.end()), cs.geom);
  const int64_t Cg = cs.C / cs.group, Mg = cs.M / cs.group;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t k_plane = g.k[0] * g.k[1] * g.k[2];
  // Valid output-width range per kernel column: iw = ow*s + kw*d - pb must lie in [0, in).
  std::vector<int64_t> ow_lo(g.k[2]), ow_hi(g.k[2]);
  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
    const int64_t off = kw * g.d[2] - g.pb[2];
    ow_lo[kw] = std::clamp<int64_t>(ceil_div(-off, g.s[2]), 0, g.out[2]);
    ow_hi[kw] = std::clamp<int64_t>(floor_div(g.in[2] - 1 - off, g.s[2]) + 1, 0, g.out[2]);
  }
  for (int64_t n = 0; n < cs.N; ++n) {
    for (int64_t m = 0; m < cs.M; ++m) {
      C* yp = y + (n * cs.M + m) * out_plane;
      const C b0 = bias ? bias[m] : C(0);
      std::fill(yp, yp + out_plane, b0);
      const int64_t grp = m / Mg;
      for (int64_t c = 0; c < Cg; ++c) {
        const C* xp = x + (n * cs.C + grp * Cg + c) * in_plane;
        const C* wp = w + (m * Cg + c) * k_plane;
        for (int64_t kd = 0; kd < g.k[0]; ++kd)
          for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const C wv = wp[(kd * g.k[1] + kh) * g.k[2] + kw];
              const int64_t lo = ow_lo[kw], hi = ow_hi[kw];
              if (lo >= hi) continue;
              const int64_t woff = kw * g.d[2] - g.pb[2];
              for (int64_t od = 0; od < g.out[0]; ++od) {
                const int64_t id = od * g.s[0] + kd * g.d[0] - g.pb[0];
                if (id < 0 || id >= g.in[0]) continue;
                for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                  const int64_t ih = oh * g.s[1] + kh * g.d[1] - g.pb[1];
                  if (ih < 0 || ih >= g.in[1]) continue;
                  const C* xr = xp + (id * g.in[1] + ih) * g.in[2];
                  C* yr = yp + (od * g.out[1] + oh) * g.out[2];
                  const int64_t sw = g.s[2];
                  if (sw == 1) {
                    for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow + woff];
                  } else {
                    for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow * sw + woff];
                  }
                }
              }
            }
      }
    }
  }
}

std::vector<Tensor> conv_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 2, 3, 1, 1);
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  const Tensor& w = kernel_input(node, inputs, 1, "W");
  const Tensor* b = inputs.size() > 2 ? inputs[2] : nullptr;
  if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
    node_fail(node, "X, W and B must have the same dtype");
  const ConvShapes cs = conv_shapes(node, x.shape(), w.shape(), b ? &b->shape() : nullptr);
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> vx(x), vw(w);
    std::unique_ptr<InputView<C>> vb;
    if (b) vb = std::make_unique<InputView<C>>(*b);
    OutputBuffer<C> out(x.dtype(), cs.out);
    conv_compute<C>(cs, vx.data(), vw.data(), vb ? vb->data() : nullptr, out.data());
    return one_output(out.finish());
  });
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose
// ---------------------------------------------------------------------------------------------

}  // namespace

ConvTShapes convt_shapes(const Node& node, const Shape& x, const Shape& w, const Shape* b) {
  const std::string& nn = node.name;
  if (x.size() < 3 || x.size() > 5)
    node_unsupported(node, "input X must have 1 to 3 spatial dims, got shape {}",
                     shape_to_string(x));
  if (w.size() != x.size())
    node_fail(node, "weight W rank {} differs from input X rank {}", w.size(), x.size());
  const size_t n = x.size() - 2;
  ConvTShapes r;
  r.N = x[0];
  r.C = x[1];
  r.group = node.attrs.get_int_or("group", 1, nn);
  if (r.group < 1 || r.C % r.group != 0)
    node_fail(node, "group={} must divide input channels {}", r.group, r.C);
  if (w[0] != r.C)
    node_fail(node, "W shape {} must have {} rows (input channels)", shape_to_string(w), r.C);
  r.M = w[1] * r.group;
  if (b != nullptr && (b->size() != 1 || (*b)[0] != r.M))
    node_fail(node, "bias B has shape {}, expected [{}]", shape_to_string(*b), r.M);
  r.in_spatial.assign(x.begin() + 2, x.end());
  r.kernel.assign(w.begin() + 2, w.end());
  const auto ks = node.attrs.get_ints_or("kernel_shape", r.kernel, nn);
  if (ks != r.kernel)
    node_fail(node, "kernel_shape [{}] differs from W's spatial dims {}", fmt::join(ks, ","),
              shape_to_string(r.kernel));
  r.strides = node.attrs.get_ints_or("strides", Shape(n, 1), nn);
  r.dilations = node.attrs.get_ints_or("dilations", Shape(n, 1), nn);
  const Shape out_pad = node.attrs.get_ints_or("output_padding", Shape(n, 0), nn);
  Shape pads = node.attrs.get_ints_or("pads", Shape(2 * n, 0), nn);
  const std::string auto_pad = node.attrs.get_string_or("auto_pad", "NOTSET", nn);
  if (r.strides.size() != n || r.dilations.size() != n || out_pad.size() != n ||
      pads.size() != 2 * n)
    node_fail(node, "strides/dilations/output_padding need {} entries and pads {}", n, 2 * n);
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID")
    node_fail(node, "auto_pad='{}', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad);
  Shape out_shape;
  if (node.attrs.has("output_shape")) {
    out_shape = node.attrs.get_ints_or("output_shape", {}, nn);
    if (out_shape.size() == n + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    if (out_shape.size() != n)
      node_fail(node, "output_shape has {} entries, expected {}", out_shape.size(), n);
  }
  r.pad_begin.assign(n, 0);
  r.out = {r.N, r.M};
  for (size_t i = 0; i < n; ++i) {
    if (r.strides[i] < 1 || r.dilations[i] < 1 || r.kernel[i] < 1)
      node_fail(node, "strides, dilations and kernel must be >= 1");
    if (out_pad[i] < 0 || out_pad[i] >= std::max(r.strides[i], r.dilations[i]))
      node_fail(node, "output_padding[{}] = {} must be in [0, max(stride, dilation))", i,
                out_pad[i]);
    const int64_t full =
        r.strides[i] * (r.in_spatial[i] - 1) + out_pad[i] + (r.kernel[i] - 1) * r.dilations[i] + 1;
    int64_t out;
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = !out_shape.empty() ? out_shape[i] : r.in_spatial[i] * r.strides[i];
      // An output larger than the full extent is padded at the end (total padding 0, as
      // onnxruntime does); the extra positions hold only the bias.
      const int64_t total = std::max<int64_t>(0, full - out);
      r.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (auto_pad == "VALID") {
      out = full;
    } else {
      if (pads[i] < 0 || pads[i + n] < 0) node_fail(node, "pads must be non-negative");
      r.pad_begin[i] = pads[i];
      out = full - pads[i] - pads[i + n];
    }
    if (out < 1) node_fail(node, "output size {} on spatial axis {} is < 1", out, i);
    r.out.push_back(out);
  }
  return r;
}

namespace {

void convt_infer(Node& node) {
  check_arity(node, 2, 3, 1, 1);
  const Value& x = required_input(node, 0, "X");
  const Value& w = required_input(node, 1, "W");
  expect_float(node, x.dtype, "input X");
  expect_same_dtype(node, 0, 1);
  const Value* b = node.input(2);
  if (b) expect_same_dtype(node, 0, 2);
  set_output(node, 0, x.dtype, convt_shapes(node, x.shape, w.shape, b ? &b->shape : nullptr).out);
}

/// Transposed convolution (the adjoint of Conv's data path): every input element scatters
/// x[n, c, i] * W[c, m, k] into y[n, g*Mg + m, i*s + k*d - pad_begin] (dropped when outside y).
template <class C>
void convt_compute(const ConvTShapes& cs, const C* x, const C* w, const C* bias, C* y) {
  WindowGeometry wg;
  wg.kernel = cs.kernel;
  wg.strides = cs.strides;
  wg.dilations = cs.dilations;
  wg.pad_begin = cs.pad_begin;
  const Geom3 g = widen(cs.in_spatial, Shape(cs.out.begin() + 2, cs.out.end()), wg);
  const int64_t Cg = cs.C / cs.group, Mg = cs.M / cs.group;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t k_plane = g.k[0] * g.k[1] * g.k[2];
  // Valid input-width range per kernel column: ow = iw*s + kw*d - pb must lie in [0, out).
  std::vector<int64_t> iw_lo(g.k[2]), iw_hi(g.k[2]);
  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
    const int64_t off = kw * g.d[2] - g.pb[2];
    iw_lo[kw] = std::clamp<int64_t>(ceil_div(-off, g.s[2]), 0, g.in[2]);
    iw_hi[kw] = std::clamp<int64_t>(floor_div(g.out[2] - 1 - off, g.s[2]) + 1, 0, g.in[2]);
  }
  for (int64_t n = 0; n < cs.N; ++n) {
    for (int64_t m = 0; m < cs.M; ++m) {
      C* yp = y + (n * cs.M + m) * out_plane;
      std::fill(yp, yp + out_plane, bias ? bias[m] : C(0));
      const int64_t grp = m / Mg, mg = m % Mg;
      for (int64_t c = 0; c < Cg; ++c) {
        const int64_t ci = grp * Cg + c;
        const C* xp = x + (n * cs.C + ci) * in_plane;
        const C* wp = w + (ci * Mg + mg) * k_plane;
        for (int64_t kd = 0; kd < g.k[0]; ++kd)
          for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const C wv = wp[(kd * g.k[1] + kh) * g.k[2] + kw];
              const int64_t lo = iw_lo[kw], hi = iw_hi[kw];
              if (lo >= hi) continue;
              const int64_t woff = kw * g.d[2] - g.pb[2];
              for (int64_t id = 0; id < g.in[0]; ++id) {
                const int64_t od = id * g.s[0] + kd * g.d[0] - g.pb[0];
                if (od < 0 || od >= g.out[0]) continue;
                for (int64_t ih = 0; ih < g.in[1]; ++ih) {
                  const int64_t oh = ih * g.s[1] + kh * g.d[1] - g.pb[1];
                  if (oh < 0 || oh >= g.out[1]) continue;
                  const C* xr = xp + (id * g.in[1] + ih) * g.in[2];
                  C* yr = yp + (od * g.out[1] + oh) * g.out[2];
                  const int64_t sw = g.s[2];
                  for (int64_t iw = lo; iw < hi; ++iw) yr[iw * sw + woff] += wv * xr[iw];
                }
              }
            }
      }
    }
  }
}

std::vector<Tensor> convt_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 2, 3, 1, 1);
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  const Tensor& w = kernel_input(node, inputs, 1, "W");
  const Tensor* b = inputs.size() > 2 ? inputs[2] : nullptr;
  if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
    node_fail(node, "X, W and B must have the same dtype");
  const ConvTShapes cs = convt_shapes(node, x.shape(), w.shape(), b ? &b->shape() : nullptr);
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> vx(x), vw(w);
    std::unique_ptr<InputView<C>> vb;
    if (b) vb = std::make_unique<InputView<C>>(*b);
    OutputBuffer<C> out(x.dtype(), cs.out);
    convt_compute<C>(cs, vx.data(), vw.data(), vb ? vb->data() : nullptr, out.data());
    return one_output(out.finish());
  });
}

// ---------------------------------------------------------------------------------------------
// Quantized convolutions: ConvInteger (opset 10) and QLinearConv (opset 10)
// ---------------------------------------------------------------------------------------------

/// Zero point of input `i` for element/channel `c`: 0 when absent, the scalar, or entry c of a
/// per-channel [M] tensor.
int64_t zero_point(const Tensor* zp, int64_t c) {
  if (zp == nullptr) return 0;
  return load_as<int64_t>(zp->raw(), zp->dtype(), zp->numel() == 1 ? 0 : c);
}

void expect_zero_point(const Node& node, size_t i, int64_t channels, const char* role) {
  const Value* v = node.input(i);
  if (v == nullptr) return;
  const int64_t n = shape_numel(v->shape);
  if (n != 1 && !(v->shape.size() == 1 && n == channels))
    node_unsupported(node, "{} of shape {} is not supported (scalar or per output channel)", role,
                     shape_to_string(v->shape));
}

/// Throws unless `t` (when given) holds 1 or `channels` elements.
void check_per_channel(const Node& node, const Tensor* t, int64_t channels, const char* role) {
  if (t && t->numel() != 1 && t->numel() != channels)
    node_unsupported(node, "{} has {} elements (expected 1 or {})", role, t->numel(), channels);
}

/// Integer convolution of (x - x_zero_point) and (w - w_zero_point[m]) accumulated in int64.
std::vector<int64_t> integer_conv(const Node& node, const ConvShapes& cs, const Tensor& x,
                                  const Tensor* xzp, const Tensor& w, const Tensor* wzp,
                                  const Tensor* bias) {
  check_per_channel(node, xzp, 1, "x_zero_point");
  check_per_channel(node, wzp, cs.M, "w_zero_point");
  std::vector<int64_t> vx(static_cast<size_t>(x.numel())), vw(static_cast<size_t>(w.numel()));
  const int64_t x0 = zero_point(xzp, 0);
  for (int64_t i = 0; i < x.numel(); ++i) vx[i] = load_as<int64_t>(x.raw(), x.dtype(), i) - x0;
  const int64_t per_m = w.numel() / std::max<int64_t>(cs.M, 1);
  for (int64_t i = 0; i < w.numel(); ++i)
    vw[i] = load_as<int64_t>(w.raw(), w.dtype(), i) - zero_point(wzp, i / per_m);
  std::vector<int64_t> vb;
  if (bias) {
    vb.resize(static_cast<size_t>(bias->numel()));
    for (int64_t i = 0; i < bias->numel(); ++i)
      vb[i] = load_as<int64_t>(bias->raw(), bias->dtype(), i);
  }
  std::vector<int64_t> acc(static_cast<size_t>(shape_numel(cs.out)));
  conv_compute<int64_t>(cs, vx.data(), vw.data(), bias ? vb.data() : nullptr, acc.data());
  return acc;
}

void conv_integer_infer(Node& node) {
  check_arity(node, 2, 4, 1, 1);
  const Value& x = required_input(node, 0, "x");
  const Value& w = required_input(node, 1, "w");
  expect_dtype(node, x.dtype, {DType::u8, DType::i8}, "input x");
  expect_dtype(node, w.dtype, {DType::u8, DType::i8}, "input w");
  const ConvShapes cs = conv_shapes(node, x.shape, w.shape, nullptr);
  expect_zero_point(node, 2, 1, "x_zero_point");
  expect_zero_point(node, 3, cs.M, "w_zero_point");
  set_output(node, 0, DType::i32, cs.out);
}

std::vector<Tensor> conv_integer_kernel(const Node& node,
                                        const std::vector<const Tensor*>& inputs) {
  const Tensor& x = kernel_input(node, inputs, 0, "x");
  const Tensor& w = kernel_input(node, inputs, 1, "w");
  const Tensor* xzp = inputs.size() > 2 ? inputs[2] : nullptr;
  const Tensor* wzp = inputs.size() > 3 ? inputs[3] : nullptr;
  const ConvShapes cs = conv_shapes(node, x.shape(), w.shape(), nullptr);
  const auto acc = integer_conv(node, cs, x, xzp, w, wzp, nullptr);
  Tensor y(DType::i32, cs.out);
  for (size_t i = 0; i < acc.size(); ++i) y.data<int32_t>()[i] = static_cast<int32_t>(acc[i]);
  return one_output(std::move(y));
}

// QLinearConv: y = saturate(round((conv(x - x_zp, w - w_zp) + B) * x_scale * w_scale[m] /
// y_scale) + y_zp) in y_zp's dtype, the requantisation in fp32 as ONNX Runtime's
// (requantize_fp32).
void qlinear_conv_infer(Node& node) {
  check_arity(node, 8, 9, 1, 1);
  const Value& x = required_input(node, 0, "x");
  const Value& w = required_input(node, 3, "w");
  const Value& yzp = required_input(node, 7, "y_zero_point");
  expect_dtype(node, x.dtype, {DType::u8, DType::i8}, "input x");
  expect_dtype(node, w.dtype, {DType::u8, DType::i8}, "input w");
  expect_dtype(node, yzp.dtype, {DType::u8, DType::i8}, "input y_zero_point");
  for (size_t i : {1, 4, 6})
    expect_dtype(node, required_input(node, i, "scale").dtype, {DType::f32}, "scale");
  const Value* b = node.input(8);
  if (b) expect_dtype(node, b->dtype, {DType::i32}, "input B");
  const ConvShapes cs = conv_shapes(node, x.shape, w.shape, b ? &b->shape : nullptr);
  expect_zero_point(node, 2, 1, "x_zero_point");
  expect_zero_point(node, 5, cs.M, "w_zero_point");
  expect_zero_point(node, 4, cs.M, "w_scale");
  set_output(node, 0, yzp.dtype, cs.out);
}

std::vector<Tensor> qlinear_conv_kernel(const Node& node,
                                        const std::vector<const Tensor*>& inputs) {
  const Tensor& x = kernel_input(node, inputs, 0, "x");
  const Tensor& xs = kernel_input(node, inputs, 1, "x_scale");
  const Tensor& w = kernel_input(node, inputs, 3, "w");
  const Tensor& ws = kernel_input(node, inputs, 4, "w_scale");
  const Tensor& ys = kernel_input(node, inputs, 6, "y_scale");
  const Tensor& yzp = kernel_input(node, inputs, 7, "y_zero_point");
  const Tensor* bias = inputs.size() > 8 ? inputs[8] : nullptr;
  const ConvShapes cs = conv_shapes(node, x.shape(), w.shape(), bias ? &bias->shape() : nullptr);
  const auto acc = integer_conv(node, cs, x, inputs[2], w, inputs[5], bias);
  check_per_channel(node, &ws, cs.M, "w_scale");
  check_per_channel(node, &yzp, 1, "y_zero_point");
  const auto [lo, hi] = quantized_range(node, yzp.dtype());
  const int64_t z = zero_point(&yzp, 0);
  const int64_t plane = shape_numel(cs.out) / std::max<int64_t>(cs.N * cs.M, 1);
  Tensor y(yzp.dtype(), cs.out);
  const float xsv = xs.data<float>()[0], ysv = ys.data<float>()[0];
  for (int64_t i = 0; i < static_cast<int64_t>(acc.size()); ++i) {
    const int64_t m = (i / plane) % cs.M;
    const float scale = xsv * ws.data<float>()[ws.numel() == 1 ? 0 : m] / ysv;  // as ORT, fp32
    store_as<int64_t>(y.raw(), y.dtype(), i, requantize_fp32(acc[i], scale, z, lo, hi));
  }
  return one_output(std::move(y));
}

}  // namespace

void register_conv_ops() {
  register_op({"Conv", conv_infer, conv_kernel});
  register_op({"ConvTranspose", convt_infer, convt_kernel});
  register_op({"ConvInteger", conv_integer_infer, conv_integer_kernel});
  register_op({"QLinearConv", qlinear_conv_infer, qlinear_conv_kernel});
}

}  // namespace tessel::ops
