// Spatial sampling ops: GridSample (opset 16) and RoiAlign (opset 16); ONNX operator docs.
//
// GridSample follows the semantics the ONNX doc defers to (PyTorch grid_sample, which produced
// the ONNX test data): grid (x, y) in [-1, 1] is unnormalised to pixel coordinates
// (align_corners=1: (g + 1) / 2 * (size - 1); 0: ((g + 1) * size - 1) / 2); padding_mode border
// clamps, reflection reflects the coordinate (bilinear/nearest) or each tap index (bicubic);
// zeros reads 0 outside. nearest rounds half to even; bicubic uses A = -0.75 on a 4x4 patch.
//
// RoiAlign: each output bin averages (mode avg) or takes the maximum (mode max, of the weighted
// corner values per sample point, as onnxruntime) of bilinear samples on a
// sampling_ratio x sampling_ratio grid (adaptive ceil(roi_size / output_size) when 0).
#include <cmath>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

// ---------------------------------------------------------------------------------------------
// GridSample
// ---------------------------------------------------------------------------------------------

struct GridParams {
  std::string mode, padding;
  bool align_corners;
};

GridParams grid_params(const Node& node) {
  GridParams p;
  p.mode = node.attrs.get_string_or("mode", "bilinear", node.name);
  p.padding = node.attrs.get_string_or("padding_mode", "zeros", node.name);
  p.align_corners = node.attrs.get_int_or("align_corners", 0, node.name) != 0;
  if (p.mode != "bilinear" && p.mode != "nearest" && p.mode != "bicubic")
    node_fail(node, "mode '{}', expected bilinear, nearest or bicubic", p.mode);
  if (p.padding != "zeros" && p.padding != "border" && p.padding != "reflection")
    node_fail(node, "padding_mode '{}', expected zeros, border or reflection", p.padding);
  return p;
}

Shape grid_out_shape(const Node& node, const Shape& x, const Shape& grid) {
  if (x.size() != 4 || grid.size() != 4 || grid[0] != x[0] || grid[3] != 2)
    node_unsupported(node, "expected X [N, C, H, W] and grid [N, H_out, W_out, 2], got {} and {}",
                     shape_to_string(x), shape_to_string(grid));
  return {x[0], x[1], grid[1], grid[2]};
}

double unnormalize(double g, int64_t size, bool align) {
  return align ? (g + 1) / 2 * static_cast<double>(size - 1)
               : ((g + 1) * static_cast<double>(size) - 1) / 2;
}

/// Reflects `v` into [lo2 / 2, hi2 / 2] (PyTorch reflect_coordinates with doubled bounds).
double reflect(double v, double lo2, double hi2) {
  if (lo2 == hi2) return 0;
  const double mn = lo2 / 2, span = (hi2 - lo2) / 2;
  v = std::abs(v - mn);
  const double extra = std::fmod(v, span);
  const int64_t flips = static_cast<int64_t>(std::floor(v / span));
  return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

/// Applies border / reflection padding to a coordinate (zeros: unchanged).
double pad_coord(double v, int64_t size, const GridParams& p) {
  if (p.padding == "border") return std::clamp(v, 0.0, static_cast<double>(size - 1));
  if (p.padding == "reflection") {
    v = p.align_corners ? reflect(v, 0, 2.0 * static_cast<double>(size - 1))
                        : reflect(v, -1, 2.0 * static_cast<double>(size) - 1);
    return std::clamp(v, 0.0, static_cast<double>(size - 1));
  }
  return v;
}

std::array<double, 4> cubic_weights(double t) {
  const double A = -0.75;
  auto near = [&](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [&](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

std::vector<Tensor> grid_sample_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 2, 2, 1, 1);
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  const Tensor& grid = kernel_input(node, inputs, 1, "grid");
  const GridParams p = grid_params(node);
  const Shape os = grid_out_shape(node, x.shape(), grid.shape());
  const int64_t N = os[0], C = os[1], Ho = os[2], Wo = os[3], H = x.shape()[2], W = x.shape()[3];
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    InputView<T> vx(x), vg(grid);
    OutputBuffer<T> y(x.dtype(), os);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        const T* plane = vx.data() + (n * C + c) * H * W;
        auto at = [&](int64_t yy, int64_t xx) -> double {
          if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0.0;
          return static_cast<double>(plane[yy * W + xx]);
        };
        for (int64_t i = 0; i < Ho; ++i)
          for (int64_t j = 0; j < Wo; ++j) {
            const T* g = vg.data() + ((n * Ho + i) * Wo + j) * 2;
            double ix = unnormalize(static_cast<double>(g[0]), W, p.align_corners);
            double iy = unnormalize(static_cast<double>(g[1]), H, p.align_corners);
            double v = 0;
            if (p.mode == "bicubic") {
              const double fx = std::floor(ix), fy = std::floor(iy);
              const auto wx = cubic_weights(ix - fx), wy = cubic_weights(iy - fy);
              for (int a = 0; a < 4; ++a)
                for (int b = 0; b < 4; ++b) {
                  double yy = fy - 1 + a, xx = fx - 1 + b;
                  if (p.padding != "zeros") {
                    yy = pad_coord(yy, H, p);
                    xx = pad_coord(xx, W, p);
                  }
                  v += wy[a] * wx[b] * at(static_cast<int64_t>(yy), static_cast<int64_t>(xx));
                }
            } else {
              ix = pad_coord(ix, W, p);
              iy = pad_coord(iy, H, p);
              if (p.mode == "nearest") {
                v = at(static_cast<int64_t>(std::nearbyint(iy)),
                       static_cast<int64_t>(std::nearbyint(ix)));
              } else {
                const double x0 = std::floor(ix), y0 = std::floor(iy);
                const double tx = ix - x0, ty = iy - y0;
                const int64_t xi = static_cast<int64_t>(x0), yi = static_cast<int64_t>(y0);
                v = at(yi, xi) * (1 - tx) * (1 - ty) + at(yi, xi + 1) * tx * (1 - ty) +
                    at(yi + 1, xi) * (1 - tx) * ty + at(yi + 1, xi + 1) * tx * ty;
              }
            }
            y[((n * C + c) * Ho + i) * Wo + j] = static_cast<T>(v);
          }
      }
    return one_output(y.finish());
  });
}

// ---------------------------------------------------------------------------------------------
// RoiAlign
// ---------------------------------------------------------------------------------------------

Shape roi_align_shape(const Node& node, const Shape& x, const Shape& rois, const Shape& idx) {
  if (x.size() != 4) node_fail(node, "X must be [N, C, H, W], got {}", shape_to_string(x));
  if (rois.size() != 2 || rois[1] != 4)
    node_fail(node, "rois must be [num_rois, 4], got {}", shape_to_string(rois));
  if (idx != Shape{rois[0]}) node_fail(node, "batch_indices must be [{}]", rois[0]);
  const int64_t oh = node.attrs.get_int_or("output_height", 1, node.name);
  const int64_t ow = node.attrs.get_int_or("output_width", 1, node.name);
  if (oh < 1 || ow < 1) node_fail(node, "output_height/width must be >= 1");
  return {rois[0], x[1], oh, ow};
}

std::vector<Tensor> roi_align_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 3, 3, 1, 1);
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  const Tensor& rois = kernel_input(node, inputs, 1, "rois");
  const Tensor& bidx = kernel_input(node, inputs, 2, "batch_indices");
  const Shape os = roi_align_shape(node, x.shape(), rois.shape(), bidx.shape());
  const std::string mode = node.attrs.get_string_or("mode", "avg", node.name);
  const std::string ctm =
      node.attrs.get_string_or("coordinate_transformation_mode", "half_pixel", node.name);
  if (mode != "avg" && mode != "max") node_fail(node, "mode '{}', expected avg or max", mode);
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    node_fail(node, "coordinate_transformation_mode '{}' is not half_pixel or output_half_pixel",
              ctm);
  const double scale = node.attrs.get_float_or("spatial_scale", 1.0f, node.name);
  const int64_t ratio = node.attrs.get_int_or("sampling_ratio", 0, node.name);
  const int64_t C = x.shape()[1], H = x.shape()[2], W = x.shape()[3], OH = os[2], OW = os[3];
  const double offset = ctm == "half_pixel" ? 0.5 : 0.0;
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    InputView<T> vx(x), vr(rois);
    OutputBuffer<T> y(x.dtype(), os);
    for (int64_t r = 0; r < os[0]; ++r) {
      const int64_t b = load_as<int64_t>(bidx.raw(), bidx.dtype(), r);
      if (b < 0 || b >= x.shape()[0]) node_fail(node, "batch index {} is out of range", b);
      const double x1 = vr[r * 4] * scale - offset, y1 = vr[r * 4 + 1] * scale - offset;
      const double x2 = vr[r * 4 + 2] * scale - offset, y2 = vr[r * 4 + 3] * scale - offset;
      double rw = x2 - x1, rh = y2 - y1;
      if (ctm == "output_half_pixel") {
        rw = std::max(rw, 1.0);
        rh = std::max(rh, 1.0);
      }
      const double bh = rh / OH, bw = rw / OW;
      const int64_t gh = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rh / OH));
      const int64_t gw = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rw / OW));
      const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
      for (int64_t c = 0; c < C; ++c) {
        const T* plane = vx.data() + (b * C + c) * H * W;
        for (int64_t ph = 0; ph < OH; ++ph)
          for (int64_t pw = 0; pw < OW; ++pw) {
            double acc = 0;
            bool first = true;
            for (int64_t iy = 0; iy < gh; ++iy)
              for (int64_t ix = 0; ix < gw; ++ix) {
                double yy = y1 + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
                double xx = x1 + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
                double v = 0;
                if (!(yy < -1.0 || yy > H || xx < -1.0 || xx > W)) {
                  yy = std::max(yy, 0.0);
                  xx = std::max(xx, 0.0);
                  int64_t ylo = static_cast<int64_t>(yy), xlo = static_cast<int64_t>(xx), yhi, xhi;
                  if (ylo >= H - 1) {
                    yhi = ylo = H - 1;
                    yy = static_cast<double>(ylo);
                  } else {
                    yhi = ylo + 1;
                  }
                  if (xlo >= W - 1) {
                    xhi = xlo = W - 1;
                    xx = static_cast<double>(xlo);
                  } else {
                    xhi = xlo + 1;
                  }
                  const double ly = yy - ylo, lx = xx - xlo, hy = 1 - ly, hx = 1 - lx;
                  const double c1 = hy * hx * plane[ylo * W + xlo],
                               c2 = hy * lx * plane[ylo * W + xhi];
                  const double c3 = ly * hx * plane[yhi * W + xlo],
                               c4 = ly * lx * plane[yhi * W + xhi];
                  v = mode == "avg" ? c1 + c2 + c3 + c4
                                    : std::max(std::max(c1, c2), std::max(c3, c4));
                }
                if (mode == "avg")
                  acc += v;
                else
                  acc = first ? v : std::max(acc, v);
                first = false;
              }
            y[((r * C + c) * OH + ph) * OW + pw] =
                static_cast<T>(mode == "avg" ? acc / count : acc);
          }
      }
    }
    return one_output(y.finish());
  });
}

}  // namespace

void register_sample_ops() {
  register_op({"GridSample",
               [](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& x = required_input(node, 0, "X");
                 const Value& g = required_input(node, 1, "grid");
                 expect_float(node, x.dtype, "input X");
                 expect_same_dtype(node, 0, 1);
                 grid_params(node);
                 set_output(node, 0, x.dtype, grid_out_shape(node, x.shape, g.shape));
               },
               grid_sample_kernel});
  register_op({"RoiAlign",
               [](Node& node) {
                 check_arity(node, 3, 3, 1, 1);
                 const Value& x = required_input(node, 0, "X");
                 const Value& rois = required_input(node, 1, "rois");
                 const Value& idx = required_input(node, 2, "batch_indices");
                 expect_float(node, x.dtype, "input X");
                 expect_same_dtype(node, 0, 1);
                 expect_integer(node, idx.dtype, "input batch_indices");
                 set_output(node, 0, x.dtype,
                            roi_align_shape(node, x.shape, rois.shape, idx.shape));
               },
               roi_align_kernel});
}

}  // namespace tessel::ops
