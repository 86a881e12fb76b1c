// Resize (opset 13 input form: X, roi, scales, sizes); ONNX operator doc, opset 13-17, and the
// ONNX reference implementation it is tested against (onnx/backend/test/case/node/resize.py).
//
// Modes: nearest (nearest_mode round_prefer_floor | round_prefer_ceil | floor | ceil), linear
// (n-D multilinear) and cubic (cubic_coeff_a, exclude_outside). Coordinate transformation modes:
// half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn,
// tf_crop_and_resize (roi, extrapolation_value).
//
// For every axis and output coordinate x the source coordinate x_original is computed in double;
// the taps are the 1 (nearest), 2 (linear) or 4 (cubic) input indices around it, clamped to the
// edge (or, with exclude_outside, dropped and the weights renormalised). An output element is the
// sum over the tensor product of the per-axis taps of weight * input, accumulated in double.
#include <algorithm>
#include <cmath>

#include "compiler/ops/resize.h"

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

struct ResizeParams {
  std::string mode, coord, nearest_mode;
  double cubic_a, extrapolation;
  bool exclude_outside;
};

ResizeParams resize_params(const Node& node) {
  ResizeParams p;
  const std::string& nn = node.name;
  p.mode = node.attrs.get_string_or("mode", "nearest", nn);
  p.coord = node.attrs.get_string_or("coordinate_transformation_mode", "half_pixel", nn);
  p.nearest_mode = node.attrs.get_string_or("nearest_mode", "round_prefer_floor", nn);
  p.cubic_a = node.attrs.get_float_or("cubic_coeff_a", -0.75f, nn);
  p.extrapolation = node.attrs.get_float_or("extrapolation_value", 0.0f, nn);
  p.exclude_outside = node.attrs.get_int_or("exclude_outside", 0, nn) != 0;
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic")
    node_fail(node, "mode '{}', expected nearest, linear or cubic", p.mode);
  static const char* coords[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                 "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find_if(std::begin(coords), std::end(coords),
                   [&](const char* c) { return p.coord == c; }) == std::end(coords))
    node_unsupported(node, "coordinate_transformation_mode '{}' is not supported", p.coord);
  if (p.nearest_mode != "round_prefer_floor" && p.nearest_mode != "round_prefer_ceil" &&
      p.nearest_mode != "floor" && p.nearest_mode != "ceil")
    node_fail(node,
              "nearest_mode '{}' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil",
              p.nearest_mode);
  for (const char* a : {"axes", "keep_aspect_ratio_policy", "antialias"})
    if (node.attrs.has(a)) node_unsupported(node, "attribute {} (opset 18+) is not supported", a);
  return p;
}

/// Output shape and the per-axis scale used by the coordinate transformation.
struct ResizeShapes {
  Shape out;
  std::vector<double> scales;
};

/// `scales` / `sizes` are the values of inputs 2 / 3 (nullptr when absent or empty).
ResizeShapes resize_shapes(const Node& node, const Shape& in, const Tensor* scales,
                           const Tensor* sizes) {
  const size_t rank = in.size();
  if ((scales == nullptr) == (sizes == nullptr))
    node_fail(node, "exactly one of scales and sizes must be given");
  ResizeShapes r;
  if (sizes) {
    const auto s = tensor_to_int64s(node, *sizes, "sizes");
    if (s.size() != rank) node_fail(node, "sizes has {} entries for rank {}", s.size(), rank);
    for (size_t i = 0; i < rank; ++i) {
      if (s[i] < 1) node_fail(node, "sizes[{}] = {} must be >= 1", i, s[i]);
      if (in[i] < 1) node_fail(node, "cannot resize an empty axis {}", i);
      r.out.push_back(s[i]);
      r.scales.push_back(static_cast<double>(s[i]) / static_cast<double>(in[i]));
    }
  } else {
    if (!dtype_is_float(scales->dtype())) node_fail(node, "scales must be a float tensor");
    const auto s = tensor_to_doubles(node, *scales, "scales");
    if (s.size() != rank) node_fail(node, "scales has {} entries for rank {}", s.size(), rank);
    for (size_t i = 0; i < rank; ++i) {
      if (!(s[i] > 0)) node_fail(node, "scales[{}] = {} must be positive", i, s[i]);
      const int64_t o = static_cast<int64_t>(std::floor(static_cast<double>(in[i]) * s[i]));
      if (o < 1) node_fail(node, "scales[{}] = {} gives an empty axis", i, s[i]);
      r.out.push_back(o);
      r.scales.push_back(s[i]);
    }
  }
  return r;
}

/// An input index (already scaled by the axis stride) and its weight.
struct Tap {
  int64_t offset;
  double weight;
};

/// Taps of one output coordinate along one axis; `outside` = tf_crop_and_resize extrapolation.
struct AxisTaps {
  std::vector<Tap> taps;
  bool outside = false;
};

std::array<double, 4> cubic_coeffs(double r, double A) {
  // Keys cubic convolution with parameter A (ONNX reference cubic_coeffs).
  const double r1 = r + 1, q = 1 - r, q1 = q + 1;
  return {((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
          ((A + 2) * q - (A + 3)) * q * q + 1, ((A * q1 - 5 * A) * q1 + 8 * A) * q1 - 4 * A};
}

std::vector<AxisTaps> axis_taps(const ResizeParams& p, int64_t in, int64_t out, double scale,
                                double roi_start, double roi_end, int64_t stride) {
  std::vector<AxisTaps> result(static_cast<size_t>(out));
  const double out_width = scale * static_cast<double>(in);
  for (int64_t x = 0; x < out; ++x) {
    const double xd = static_cast<double>(x);
    double xo;
    if (p.coord == "align_corners") {
      xo = out_width == 1 ? 0.0 : xd * (in - 1) / (out_width - 1);
    } else if (p.coord == "asymmetric") {
      xo = xd / scale;
    } else if (p.coord == "tf_crop_and_resize") {
      xo = out_width == 1 ? (roi_end - roi_start) * (in - 1) / 2
                          : xd * (roi_end - roi_start) * (in - 1) / (out_width - 1);
      xo += roi_start * (in - 1);
      if (xo < 0 || xo > in - 1) {
        result[x].outside = true;
        continue;
      }
    } else if (p.coord == "tf_half_pixel_for_nn") {
      xo = (xd + 0.5) / scale;
    } else if (p.coord == "pytorch_half_pixel") {
      xo = out_width == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
    } else {  // half_pixel
      xo = (xd + 0.5) / scale - 0.5;
    }
    // Left neighbour and ratio in (0, 1]: an integral x_original is the right tap with ratio 1.
    double base = std::floor(xo);
    double ratio = xo - base;
    if (ratio == 0) {
      base -= 1;
      ratio = 1;
    }
    const int64_t b = static_cast<int64_t>(base);
    std::vector<std::pair<int64_t, double>> raw;  // (index, weight)
    if (p.mode == "nearest") {
      bool right;
      if (ratio == 1)
        right = true;
      else if (p.nearest_mode == "round_prefer_floor")
        right = ratio > 0.5;
      else if (p.nearest_mode == "round_prefer_ceil")
        right = ratio >= 0.5;
      else
        right = p.nearest_mode == "ceil";
      raw.push_back({right ? b + 1 : b, 1.0});
    } else if (p.mode == "linear") {
      raw.push_back({b, 1 - ratio});
      raw.push_back({b + 1, ratio});
    } else {
      const auto c = cubic_coeffs(ratio, p.cubic_a);
      for (int k = 0; k < 4; ++k) raw.push_back({b - 1 + k, c[k]});
    }
    if (p.exclude_outside && p.mode == "cubic") {
      double sum = 0;
      for (auto& [i, w] : raw) {
        if (i < 0 || i >= in) w = 0;
        sum += w;
      }
      for (auto& [i, w] : raw) w /= sum;
    }
    for (auto& [i, w] : raw) {
      if (w == 0) continue;
      const int64_t clamped = std::clamp<int64_t>(i, 0, in - 1);
      result[x].taps.push_back({clamped * stride, w});
    }
  }
  return result;
}

void resize_infer(Node& node) {
  check_arity(node, 1, 4, 1, 1);
  const Value& x = required_input(node, 0, "X");
  expect_numeric(node, x.dtype, "input X");
  const ResizeParams p = resize_params(node);
  if (p.coord == "tf_crop_and_resize") constant_input(node, 1, "roi");
  auto given = [&](size_t i, const char* role) -> const Tensor* {
    const Value* v = node.input(i);
    if (v == nullptr) return nullptr;
    if (shape_numel(v->shape) == 0) return nullptr;
    return &constant_input(node, i, role);
  };
  const Tensor* scales = given(2, "scales");
  const Tensor* sizes = given(3, "sizes");
  set_output(node, 0, x.dtype, resize_shapes(node, x.shape, scales, sizes).out);
}

std::vector<Tensor> resize_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 1, 4, 1, 1);
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  const ResizeParams p = resize_params(node);
  auto given = [&](size_t i) -> const Tensor* {
    if (i >= inputs.size() || inputs[i] == nullptr || inputs[i]->numel() == 0) return nullptr;
    return inputs[i];
  };
  const ResizeShapes rs = resize_shapes(node, x.shape(), given(2), given(3));
  const int64_t rank = x.rank();
  std::vector<double> roi(2 * rank, 0.0);
  for (int64_t i = 0; i < rank; ++i) roi[rank + i] = 1.0;
  if (p.coord == "tf_crop_and_resize") {
    const Tensor* t = given(1);
    if (t == nullptr) node_fail(node, "tf_crop_and_resize requires the roi input");
    roi = tensor_to_doubles(node, *t, "roi");
    if (static_cast<int64_t>(roi.size()) != 2 * rank)
      node_fail(node, "roi has {} entries, expected {}", roi.size(), 2 * rank);
  }
  const auto strides = row_major_strides(x.shape());
  std::vector<std::vector<AxisTaps>> taps(rank);
  for (int64_t d = 0; d < rank; ++d)
    taps[d] =
        axis_taps(p, x.shape()[d], rs.out[d], rs.scales[d], roi[d], roi[rank + d], strides[d]);
  return dispatch_numeric(node, x.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> vx(x);
    OutputBuffer<C> y(x.dtype(), rs.out);
    const C* src = vx.data();
    std::vector<int64_t> pos(rank, 0);
    // Tensor product of the per-axis taps, enumerated with an odometer over tap indices.
    std::vector<size_t> t(rank, 0);
    for (int64_t o = 0; o < y.numel(); ++o) {
      bool outside = false;
      bool empty = false;
      for (int64_t d = 0; d < rank; ++d) {
        outside = outside || taps[d][pos[d]].outside;
        empty = empty || taps[d][pos[d]].taps.empty();
      }
      double acc = 0;
      if (outside) {
        acc = p.extrapolation;
      } else if (empty) {  // every weight of some axis is zero
        acc = 0;
      } else {
        std::fill(t.begin(), t.end(), 0);
        while (true) {
          int64_t off = 0;
          double w = 1;
          for (int64_t d = 0; d < rank; ++d) {
            const Tap& tp = taps[d][pos[d]].taps[t[d]];
            off += tp.offset;
            w *= tp.weight;
          }
          acc += w * static_cast<double>(src[off]);
          int64_t d = rank - 1;
          for (; d >= 0; --d) {
            if (++t[d] < taps[d][pos[d]].taps.size()) break;
            t[d] = 0;
          }
          if (d < 0) break;
        }
      }
      y[o] = static_cast<C>(acc);
      for (int64_t d = rank; d-- > 0;) {
        if (++pos[d] < rs.out[d]) break;
        pos[d] = 0;
      }
    }
    return one_output(y.finish());
  });
}

}  // namespace

bool ResizeAxisMatrix::identity() const {
  if (in != out) return false;
  for (int64_t o = 0; o < out; ++o) {
    if (outside[o]) return false;
    for (int64_t i = 0; i < in; ++i)
      if (weights[o * in + i] != (o == i ? 1.0 : 0.0)) return false;
  }
  return true;
}

double resize_extrapolation_value(const Node& node) { return resize_params(node).extrapolation; }

std::vector<ResizeAxisMatrix> resize_axis_matrices(const Node& node) {
  const Value& xv = required_input(node, 0, "X");
  const ResizeParams p = resize_params(node);
  auto given = [&](size_t i, const char* role) -> const Tensor* {
    const Value* v = node.input(i);
    if (v == nullptr || shape_numel(v->shape) == 0) return nullptr;
    return &constant_input(node, i, role);
  };
  const Shape& xs = xv.shape;
  const ResizeShapes rs = resize_shapes(node, xs, given(2, "scales"), given(3, "sizes"));
  const int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<double> roi(2 * rank, 0.0);
  for (int64_t i = 0; i < rank; ++i) roi[rank + i] = 1.0;
  if (p.coord == "tf_crop_and_resize") {
    const Tensor* t = given(1, "roi");
    if (t == nullptr) node_fail(node, "tf_crop_and_resize requires the roi input");
    roi = tensor_to_doubles(node, *t, "roi");
    if (static_cast<int64_t>(roi.size()) != 2 * rank)
      node_fail(node, "roi has {} entries, expected {}", roi.size(), 2 * rank);
  }
  std::vector<ResizeAxisMatrix> result(rank);
  for (int64_t d = 0; d < rank; ++d) {
    ResizeAxisMatrix& m = result[d];
    m.in = xs[d];
    m.out = rs.out[d];
    m.weights.assign(static_cast<size_t>(m.in * m.out), 0.0);
    m.outside.assign(static_cast<size_t>(m.out), false);
    const auto taps = axis_taps(p, m.in, m.out, rs.scales[d], roi[d], roi[rank + d], 1);
    for (int64_t o = 0; o < m.out; ++o) {
      m.outside[o] = taps[o].outside;
      for (const Tap& t : taps[o].taps) m.weights[o * m.in + t.offset] += t.weight;
    }
  }
  return result;
}

void register_resize_ops() { register_op({"Resize", resize_infer, resize_kernel}); }

}  // namespace tessel::ops
