// Normalisation ops: BatchNormalization (inference), InstanceNormalization, LayerNormalization
// (opset 17, with optional Mean / InvStdDev outputs), LRN, MeanVarianceNormalization; ONNX
// operator docs, opset 17. Statistics are computed two-pass (mean, then mean of squared
// deviations = biased variance) in the compute type.
#include <cmath>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

// ---------------------------------------------------------------------------------------------
// BatchNormalization
// ---------------------------------------------------------------------------------------------

void bn_check(const Node& node, const Shape& x, const std::vector<const Shape*>& params) {
  if (x.size() < 2) node_fail(node, "input X must be [N, C, ...], got {}", shape_to_string(x));
  const char* names[4] = {"scale", "B", "input_mean", "input_var"};
  for (size_t i = 0; i < 4; ++i)
    if (params[i]->size() != 1 || (*params[i])[0] != x[1])
      node_fail(node, "{} has shape {}, expected [{}] (the channel count)", names[i],
                shape_to_string(*params[i]), x[1]);
}

void bn_infer(Node& node) {
  check_arity(node, 5, 5, 1, 3);
  const Value& x = required_input(node, 0, "X");
  expect_float(node, x.dtype, "input X");
  std::vector<const Shape*> ps;
  const char* names[4] = {"scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    const Value& v = required_input(node, i, names[i - 1]);
    expect_float(node, v.dtype, names[i - 1]);
    ps.push_back(&v.shape);
  }
  if (node.attrs.get_int_or("training_mode", 0, node.name) != 0)
    node_unsupported(node, "training_mode=1 is not supported (inference only)");
  if (node.outputs.size() > 1)
    node_unsupported(node, "running mean/var outputs exist only in training mode");
  bn_check(node, x.shape, ps);
  set_output(node, 0, x.dtype, x.shape);
}

/// y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + B[c].
std::vector<Tensor> bn_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 5, 5, 1, 3);
  if (node.attrs.get_int_or("training_mode", 0, node.name) != 0 || node.outputs.size() > 1)
    node_unsupported(node, "training_mode=1 is not supported (inference only)");
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  std::vector<const Shape*> ps;
  for (size_t i = 1; i < 5; ++i) ps.push_back(&kernel_input(node, inputs, i, "parameter").shape());
  bn_check(node, x.shape(), ps);
  const double eps = node.attrs.get_float_or("epsilon", 1e-5f, node.name);
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> vx(x), scale(*inputs[1]), bias(*inputs[2]), mean(*inputs[3]), var(*inputs[4]);
    OutputBuffer<C> y(x.dtype(), x.shape());
    const int64_t N = x.shape()[0], Cn = x.shape()[1];
    const int64_t plane = N * Cn > 0 ? x.numel() / (N * Cn) : 0;
    for (int64_t c = 0; c < Cn; ++c) {
      const C inv_std = C(1) / std::sqrt(var[c] + static_cast<C>(eps));
      const C m = mean[c], s = scale[c], b = bias[c];
      for (int64_t n = 0; n < N; ++n) {
        const C* xp = vx.data() + (n * Cn + c) * plane;
        C* yp = y.data() + (n * Cn + c) * plane;
        for (int64_t i = 0; i < plane; ++i) yp[i] = (xp[i] - m) * inv_std * s + b;
      }
    }
    return one_output(y.finish());
  });
}

// ---------------------------------------------------------------------------------------------
// InstanceNormalization
// ---------------------------------------------------------------------------------------------

void in_infer(Node& node) {
  check_arity(node, 3, 3, 1, 1);
  const Value& x = required_input(node, 0, "input");
  const Value& s = required_input(node, 1, "scale");
  const Value& b = required_input(node, 2, "B");
  expect_float(node, x.dtype, "input");
  expect_same_dtype(node, 0, 1);
  expect_same_dtype(node, 0, 2);
  if (x.shape.size() < 3)
    node_fail(node, "input must be [N, C, D1, ...], got {}", shape_to_string(x.shape));
  if (s.shape != Shape{x.shape[1]} || b.shape != Shape{x.shape[1]})
    node_fail(node, "scale and B must have shape [{}]", x.shape[1]);
  set_output(node, 0, x.dtype, x.shape);
}

/// y = scale[c] * (x - mean_nc) / sqrt(var_nc + epsilon) + B[c], statistics over spatial dims.
std::vector<Tensor> in_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 3, 3, 1, 1);
  const Tensor& x = kernel_input(node, inputs, 0, "input");
  const Tensor& ts = kernel_input(node, inputs, 1, "scale");
  const Tensor& tb = kernel_input(node, inputs, 2, "B");
  if (x.rank() < 3 || ts.numel() != x.shape()[1] || tb.numel() != x.shape()[1])
    node_fail(node, "input must be [N, C, D1, ...] with scale and B of shape [C]");
  const double eps = node.attrs.get_float_or("epsilon", 1e-5f, node.name);
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> vx(x), scale(ts), bias(tb);
    OutputBuffer<C> y(x.dtype(), x.shape());
    const int64_t N = x.shape()[0], Cn = x.shape()[1];
    const int64_t plane = N * Cn > 0 ? x.numel() / (N * Cn) : 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < Cn; ++c) {
        const C* xp = vx.data() + (n * Cn + c) * plane;
        C* yp = y.data() + (n * Cn + c) * plane;
        C mean = 0;
        for (int64_t i = 0; i < plane; ++i) mean += xp[i];
        mean /= static_cast<C>(plane);
        C var = 0;
        for (int64_t i = 0; i < plane; ++i) var += (xp[i] - mean) * (xp[i] - mean);
        var /= static_cast<C>(plane);
        const C inv_std = C(1) / std::sqrt(var + static_cast<C>(eps));
        for (int64_t i = 0; i < plane; ++i) yp[i] = scale[c] * (xp[i] - mean) * inv_std + bias[c];
      }
    return one_output(y.finish());
  });
}

// ---------------------------------------------------------------------------------------------
// LayerNormalization
// ---------------------------------------------------------------------------------------------

struct LnShapes {
  int64_t axis, outer, inner;
  Shape stat_shape;  // X.shape[:axis] + [1] * (rank - axis)
};

LnShapes ln_shapes(const Node& node, const Shape& x, const Shape& scale, const Shape* bias) {
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank < 1) node_fail(node, "input X must have rank >= 1");
  LnShapes r;
  r.axis =
      normalize_axis(node, node.attrs.get_int_or("axis", -1, node.name), rank, "attribute axis");
  r.outer = 1;
  r.inner = 1;
  for (int64_t k = 0; k < rank; ++k) (k < r.axis ? r.outer : r.inner) *= x[k];
  r.stat_shape = x;
  for (int64_t k = r.axis; k < rank; ++k) r.stat_shape[k] = 1;
  if (!unidirectional_broadcastable(scale, x))
    node_fail(node, "Scale shape {} does not broadcast to X shape {}", shape_to_string(scale),
              shape_to_string(x));
  if (bias && !unidirectional_broadcastable(*bias, x))
    node_fail(node, "B shape {} does not broadcast to X shape {}", shape_to_string(*bias),
              shape_to_string(x));
  const int64_t stash = node.attrs.get_int_or("stash_type", 1, node.name);
  if (stash != 1) node_unsupported(node, "stash_type={} is not supported (only 1 = float)", stash);
  return r;
}

void ln_infer(Node& node) {
  check_arity(node, 2, 3, 1, 3);
  const Value& x = required_input(node, 0, "X");
  const Value& s = required_input(node, 1, "Scale");
  const Value* b = node.input(2);
  expect_float(node, x.dtype, "input X");
  expect_same_dtype(node, 0, 1);
  if (b) expect_same_dtype(node, 0, 2);
  const LnShapes ls = ln_shapes(node, x.shape, s.shape, b ? &b->shape : nullptr);
  set_output(node, 0, x.dtype, x.shape);
  set_output(node, 1, DType::f32, ls.stat_shape);
  set_output(node, 2, DType::f32, ls.stat_shape);
}

/// Over the trailing dims from `axis`: mean, inv_std = 1 / sqrt(var + epsilon);
/// y = (x - mean) * inv_std * Scale + B (Scale, B broadcast to X).
std::vector<Tensor> ln_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 2, 3, 1, 3);
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  const Tensor& ts = kernel_input(node, inputs, 1, "Scale");
  const Tensor* tb = inputs.size() > 2 ? inputs[2] : nullptr;
  const LnShapes ls = ln_shapes(node, x.shape(), ts.shape(), tb ? &tb->shape() : nullptr);
  const double eps = node.attrs.get_float_or("epsilon", 1e-5f, node.name);
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> vx(x), scale(ts);
    std::vector<C> normalized(static_cast<size_t>(x.numel()));
    Tensor mean_t(DType::f32, ls.stat_shape), inv_t(DType::f32, ls.stat_shape);
    for (int64_t o = 0; o < ls.outer; ++o) {
      const C* xp = vx.data() + o * ls.inner;
      C mean = 0;
      for (int64_t i = 0; i < ls.inner; ++i) mean += xp[i];
      mean /= static_cast<C>(ls.inner);
      C var = 0;
      for (int64_t i = 0; i < ls.inner; ++i) var += (xp[i] - mean) * (xp[i] - mean);
      var /= static_cast<C>(ls.inner);
      const C inv_std = C(1) / std::sqrt(var + static_cast<C>(eps));
      for (int64_t i = 0; i < ls.inner; ++i)
        normalized[o * ls.inner + i] = (xp[i] - mean) * inv_std;
      mean_t.data<float>()[o] = static_cast<float>(mean);
      inv_t.data<float>()[o] = static_cast<float>(inv_std);
    }
    OutputBuffer<C> y(x.dtype(), x.shape());
    C* py = y.data();
    const C* ps = scale.data();
    for_each_broadcast<1>(
        x.shape(), {&ts.shape()},
        [&](int64_t i, const std::array<int64_t, 1>& o) { py[i] = normalized[i] * ps[o[0]]; });
    if (tb) {
      InputView<C> bias(*tb);
      const C* pb = bias.data();
      for_each_broadcast<1>(x.shape(), {&tb->shape()},
                            [&](int64_t i, const std::array<int64_t, 1>& o) { py[i] += pb[o[0]]; });
    }
    std::vector<Tensor> outs;
    outs.push_back(y.finish());
    if (node.outputs.size() > 1) outs.push_back(std::move(mean_t));
    if (node.outputs.size() > 2) outs.push_back(std::move(inv_t));
    return outs;
  });
}

// ---------------------------------------------------------------------------------------------
// LRN, MeanVarianceNormalization
// ---------------------------------------------------------------------------------------------

void same_shape_float_infer(Node& node) {
  check_arity(node, 1, 1, 1, 1);
  const Value& x = required_input(node, 0, "X");
  expect_float(node, x.dtype, "input X");
  set_output(node, 0, x.dtype, x.shape);
}

/// LRN: y = x / (bias + alpha / size * sum_{c' in [c - floor((size-1)/2), c + ceil((size-1)/2)]}
/// x[c']^2)^beta, across channels of X [N, C, ...].
std::vector<Tensor> lrn_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  if (x.rank() < 3) node_fail(node, "input X must be [N, C, D1, ...]");
  const int64_t size = node.attrs.get_int("size", node.name);
  if (size < 1) node_fail(node, "attribute size={} must be >= 1", size);
  const double alpha = node.attrs.get_float_or("alpha", 1e-4f, node.name);
  const double beta = node.attrs.get_float_or("beta", 0.75f, node.name);
  const double bias = node.attrs.get_float_or("bias", 1.0f, node.name);
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> vx(x);
    OutputBuffer<C> y(x.dtype(), x.shape());
    const int64_t N = x.shape()[0], Cn = x.shape()[1];
    const int64_t plane = x.numel() / std::max<int64_t>(N * Cn, 1);
    const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < Cn; ++c)
        for (int64_t i = 0; i < plane; ++i) {
          C sq = 0;
          for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min<int64_t>(Cn - 1, c + hi);
               ++k) {
            const C v = vx[(n * Cn + k) * plane + i];
            sq += v * v;
          }
          const int64_t at = (n * Cn + c) * plane + i;
          y[at] = vx[at] /
                  static_cast<C>(std::pow(static_cast<C>(bias) + static_cast<C>(alpha / size) * sq,
                                          static_cast<C>(beta)));
        }
    return one_output(y.finish());
  });
}

/// MeanVarianceNormalization (opset 13 function): y = (x - E[x]) / (sqrt(E[(x - E[x])^2]) + 1e-9),
/// expectations over `axes` (default [0, 2, 3]).
std::vector<Tensor> mvn_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  const int64_t rank = x.rank();
  const auto axes = normalize_axes(node, node.attrs.get_ints_or("axes", {0, 2, 3}, node.name), rank,
                                   "attribute axes");
  Shape reduced = x.shape();
  for (int64_t a : axes) reduced[a] = 1;
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> vx(x);
    const int64_t n_red = x.numel() / std::max<int64_t>(shape_numel(reduced), 1);
    std::vector<C> mean(static_cast<size_t>(shape_numel(reduced)), C(0));
    std::vector<C> var(mean.size(), C(0));
    const auto st = broadcast_strides(reduced, x.shape());
    StridedLoop<1> loop(x.shape(), {st});
    loop.run([&](int64_t i, const std::array<int64_t, 1>& o) { mean[o[0]] += vx[i]; });
    for (C& m : mean) m /= static_cast<C>(n_red);
    loop.run([&](int64_t i, const std::array<int64_t, 1>& o) {
      const C d = vx[i] - mean[o[0]];
      var[o[0]] += d * d;
    });
    for (C& v : var) v /= static_cast<C>(n_red);
    OutputBuffer<C> y(x.dtype(), x.shape());
    loop.run([&](int64_t i, const std::array<int64_t, 1>& o) {
      y[i] = (vx[i] - mean[o[0]]) / (std::sqrt(var[o[0]]) + static_cast<C>(1e-9));
    });
    return one_output(y.finish());
  });
}

}  // namespace

void register_norm_ops() {
  register_op({"BatchNormalization", bn_infer, bn_kernel});
  register_op({"InstanceNormalization", in_infer, in_kernel});
  register_op({"LayerNormalization", ln_infer, ln_kernel});
  register_op({"LRN",
               [](Node& node) {
                 same_shape_float_infer(node);
                 if (node.inputs[0]->shape.size() < 3)
                   node_fail(node, "input X must be [N, C, D1, ...]");
                 if (node.attrs.get_int("size", node.name) < 1)
                   node_fail(node, "size must be >= 1");
               },
               lrn_kernel});
  register_op({"MeanVarianceNormalization",
               [](Node& node) {
                 same_shape_float_infer(node);
                 normalize_axes(node, node.attrs.get_ints_or("axes", {0, 2, 3}, node.name),
                                static_cast<int64_t>(node.inputs[0]->shape.size()),
                                "attribute axes");
               },
               mvn_kernel});
}

}  // namespace tessel::ops
