// Tensor-expression computes of ONNX ops (opset-17 semantics, https://onnx.ai/onnx/operators/).
#include "compiler/lower/op_compute.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "compiler/loop/loop.h"
#include "compiler/support/error.h"

namespace tessel::lower {

using loop::CallOp;
using loop::Expr;
namespace L = tessel::loop;

namespace {

[[noreturn]] void unsupported(const Node& node, const std::string& what) {
  throw Unsupported(fmt::format("{}: {}", node.describe(), what));
}

const Value* out0(const Node& node) { return node.outputs.at(0); }

/// The scalar value of a constant input with one element, if it is one.
bool scalar_constant(const Value* v, double* out) {
  if (!v || !v->constant || v->constant->numel() != 1) return false;
  *out = v->constant->get_as_double(0);
  return true;
}

/// Reads `t` broadcast (ONNX multidirectional broadcasting) to an output index `idx`.
Expr bcast_read(const te::Tensor& t, const std::vector<Expr>& idx) {
  const size_t rank = t->shape.size();
  std::vector<Expr> ti(rank);
  for (size_t d = 0; d < rank; ++d) {
    const size_t od = idx.size() - rank + d;
    ti[d] = t->shape[d] == 1 ? L::int_imm(0) : idx[od];
  }
  return te::read(t, ti);
}

/// An operand of an elementwise op: a broadcast read, or an immediate for scalar constants.
struct Operand {
  te::Tensor tensor;
  double imm = 0;
  bool is_imm = false;
  Expr at(const std::vector<Expr>& idx) const {
    return is_imm ? L::float_imm(imm) : bcast_read(tensor, idx);
  }
};

Operand operand(const Value* v, ComputeContext& ctx) {
  Operand o;
  if (scalar_constant(v, &o.imm)) {
    o.is_imm = true;
  } else {
    o.tensor = ctx.input(v);
  }
  return o;
}

te::Tensor elementwise(const Node& node, ComputeContext& ctx,
                       const std::function<Expr(const std::vector<Expr>&)>& fn) {
  return te::compute(node.name, out0(node)->shape, fn);
}

te::Tensor unary(const Node& node, ComputeContext& ctx, const std::function<Expr(Expr)>& f) {
  Operand x = operand(node.input(0), ctx);
  return elementwise(node, ctx, [&](const std::vector<Expr>& i) { return f(x.at(i)); });
}

te::Tensor binary(const Node& node, ComputeContext& ctx, const std::function<Expr(Expr, Expr)>& f) {
  Operand a = operand(node.input(0), ctx);
  Operand b = operand(node.input(1), ctx);
  return elementwise(node, ctx, [&](const std::vector<Expr>& i) { return f(a.at(i), b.at(i)); });
}

// f folded over the inputs, each input read through `term` (identity when null).
te::Tensor variadic(const Node& node, ComputeContext& ctx, const std::function<Expr(Expr, Expr)>& f,
                    const std::function<Expr(Expr)>& term = nullptr) {
  std::vector<Operand> ops;
  for (const Value* v : node.inputs)
    if (v) ops.push_back(operand(v, ctx));
  if (ops.empty()) unsupported(node, "needs at least one input");
  auto at = [&](size_t k, const std::vector<Expr>& i) {
    return term ? term(ops[k].at(i)) : ops[k].at(i);
  };
  return elementwise(node, ctx, [&](const std::vector<Expr>& i) {
    Expr r = at(0, i);
    for (size_t k = 1; k < ops.size(); ++k) r = f(r, at(k, i));
    return r;
  });
}

Expr sigmoid(Expr x) { return L::call(CallOp::sigmoid, x); }

// x^y for a constant exponent, as products where exact (ONNX Pow).
te::Tensor pow_compute(const Node& node, ComputeContext& ctx) {
  double y;
  if (!scalar_constant(node.input(1), &y))
    unsupported(node, "Pow needs a scalar constant exponent");
  Operand x = operand(node.input(0), ctx);
  return elementwise(node, ctx, [&](const std::vector<Expr>& i) -> Expr {
    Expr v = x.at(i);
    if (y == 1.0) return v;
    if (y == 2.0) return L::mul(v, v);
    if (y == 3.0) return L::mul(L::mul(v, v), v);
    if (y == 0.5) return L::call(CallOp::sqrt, v);
    if (y == -1.0) return L::call(CallOp::recip, v);
    if (y == -0.5) return L::call(CallOp::rsqrt, v);
    if (y == 0.0) return L::float_imm(1.0);
    unsupported(node, fmt::format("Pow with exponent {} (supported: 0, +-0.5, +-1, 2, 3)", y));
  });
}

// Clip: min(max(x, lo), hi) (ONNX order: lo > hi gives hi). lo and hi are scalar constants
// (immediates) or scalar tensors read at run time; an absent bound does not clip.
te::Tensor clip_compute(const Node& node, ComputeContext& ctx) {
  std::optional<Operand> lo, hi;
  if (node.input(1)) lo = operand(node.input(1), ctx);
  if (node.input(2)) hi = operand(node.input(2), ctx);
  auto bounds = [](const std::optional<Operand>& b) {
    return b && !(b->is_imm && std::isinf(b->imm));
  };
  return elementwise(node, ctx, [&](const std::vector<Expr>& i) {
    Expr x = bcast_read(ctx.input(node.input(0)), i);
    if (bounds(lo)) x = L::max(x, lo->at(i));
    if (bounds(hi)) x = L::min(x, hi->at(i));
    return x;
  });
}

// y = clamp(alpha * x + beta, 0, 1)
te::Tensor hard_sigmoid_compute(const Node& node, ComputeContext& ctx) {
  const double alpha = node.attrs.get_float_or("alpha", 0.2f, node.name);
  const double beta = node.attrs.get_float_or("beta", 0.5f, node.name);
  return unary(node, ctx, [&](Expr x) {
    Expr v = L::add(L::mul(x, L::float_imm(alpha)), L::float_imm(beta));
    return L::min(L::max(v, L::float_imm(0.0)), L::float_imm(1.0));
  });
}

// BatchNormalization (inference): y = x * a[c] + b[c], a = scale / sqrt(var + eps),
// b = bias - mean * a, folded at compile time in fp32 like the reference.
te::Tensor batch_norm_compute(const Node& node, ComputeContext& ctx) {
  for (int i = 1; i <= 4; ++i)
    if (!node.input(i) || !node.input(i)->constant)
      unsupported(node, "BatchNormalization needs constant scale, bias, mean and var");
  const float eps = node.attrs.get_float_or("epsilon", 1e-5f, node.name);
  const auto scale = node.input(1)->constant->to_float_vector();
  const auto bias = node.input(2)->constant->to_float_vector();
  const auto mean = node.input(3)->constant->to_float_vector();
  const auto var = node.input(4)->constant->to_float_vector();
  const int64_t c = static_cast<int64_t>(scale.size());
  std::vector<float> a(c), b(c);
  for (int64_t i = 0; i < c; ++i) {
    a[i] = scale[i] / std::sqrt(var[i] + eps);
    b[i] = bias[i] - mean[i] * a[i];
  }
  te::Tensor ta = ctx.derived_constant(node.name + ".scale", Tensor::from_floats({c}, a));
  te::Tensor tb = ctx.derived_constant(node.name + ".shift", Tensor::from_floats({c}, b));
  te::Tensor x = ctx.input(node.input(0));
  return elementwise(node, ctx, [&](const std::vector<Expr>& i) {
    return L::add(L::mul(te::read(x, i), te::read(ta, {i[1]})), te::read(tb, {i[1]}));
  });
}

std::vector<int64_t> ints_or(const Node& node, const char* name, std::vector<int64_t> fallback) {
  return node.attrs.get_ints_or(name, fallback, node.name);
}

/// Explicit begin/end pads of a conv/pool window from pads or auto_pad (ONNX Conv/MaxPool docs).
std::vector<int64_t> window_pads(const Node& node, const Shape& in, const std::vector<int64_t>& k,
                                 const std::vector<int64_t>& s, const std::vector<int64_t>& d) {
  const size_t sp = k.size();
  std::vector<int64_t> pads = ints_or(node, "pads", std::vector<int64_t>(2 * sp, 0));
  const std::string auto_pad = node.attrs.get_string_or("auto_pad", "NOTSET", node.name);
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < sp; ++i) {
      const int64_t in_dim = in[2 + i];
      const int64_t out_dim = (in_dim + s[i] - 1) / s[i];
      const int64_t total =
          std::max<int64_t>(0, (out_dim - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in_dim);
      const int64_t small = total / 2, big = total - total / 2;
      pads[i] = auto_pad == "SAME_UPPER" ? small : big;
      pads[i + sp] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  }
  return pads;
}

te::Tensor conv_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const Value* wv = node.input(1);
  if (xv->shape.size() != 4) unsupported(node, "only 2-D convolution (NCHW) is compiled");
  if (!wv->constant) unsupported(node, "Conv weights must be constant");
  const int64_t groups = node.attrs.get_int_or("group", 1, node.name);
  const Shape& ws = wv->shape;  // [Cout, Cin/g, KH, KW]
  const std::vector<int64_t> k = {ws[2], ws[3]};
  const auto strides = ints_or(node, "strides", {1, 1});
  const auto dil = ints_or(node, "dilations", {1, 1});
  const auto pads = window_pads(node, xv->shape, k, strides, dil);
  const int64_t cout = ws[0], cin_g = ws[1], cout_g = cout / groups;
  te::Tensor x = ctx.input(xv);
  te::Tensor w = ctx.input(wv);
  auto ci = te::reduce_axis(cin_g, "rc");
  auto kh = te::reduce_axis(k[0], "rh");
  auto kw = te::reduce_axis(k[1], "rw");
  const bool depthwise = cin_g == 1 && cout_g == 1;
  auto conv = std::const_pointer_cast<te::TensorNode>(te::compute(
      node.name + (node.input(2) ? ".conv" : ""), out0(node)->shape,
      [&](const std::vector<Expr>& i) {
        Expr co = i[1];
        Expr cin = depthwise ? co
                             : L::add(L::mul(L::floordiv(co, cout_g), L::int_imm(cin_g)),
                                      L::var_ref(ci.var));
        Expr ih =
            L::add(L::mul(i[2], L::int_imm(strides[0])),
                   L::sub(L::mul(L::var_ref(kh.var), L::int_imm(dil[0])), L::int_imm(pads[0])));
        Expr iw =
            L::add(L::mul(i[3], L::int_imm(strides[1])),
                   L::sub(L::mul(L::var_ref(kw.var), L::int_imm(dil[1])), L::int_imm(pads[1])));
        Expr xr = te::read_padded(x, {i[0], cin, ih, iw}, 0.0);
        Expr wr = te::read(w, {co, depthwise ? L::int_imm(0) : L::var_ref(ci.var),
                               L::var_ref(kh.var), L::var_ref(kw.var)});
        if (depthwise) return te::sum(L::mul(xr, wr), {kh, kw});
        return te::sum(L::mul(xr, wr), {ci, kh, kw});
      },
      depthwise ? "depthwise_conv2d" : "conv2d"));
  conv->attrs = {{"strides", strides},
                 {"dilations", dil},
                 {"pads", pads},
                 {"groups", {groups}},
                 {"kernel", k}};
  conv->extra_inputs = {x, w};
  if (!node.input(2)) return conv;
  Operand b = operand(node.input(2), ctx);
  return te::compute(node.name, out0(node)->shape, [&](const std::vector<Expr>& i) {
    return L::add(te::read(conv, i), b.is_imm ? L::float_imm(b.imm) : te::read(b.tensor, {i[1]}));
  });
}

/// A matrix product over the last two dims with numpy batch broadcasting (ONNX MatMul); 1-D
/// operands are promoted as the doc says. Tagged "matmul" with attrs {m, k, n}.
te::Tensor matmul_core(const std::string& name, const Shape& out_shape, const te::Tensor& a,
                       const te::Tensor& b, bool trans_a, bool trans_b) {
  const Shape& as = a->shape;
  const Shape& bs = b->shape;
  const int64_t kdim = trans_a ? as[as.size() - 2] : as.back();
  auto r = te::reduce_axis(kdim, "rk");
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  auto t = std::const_pointer_cast<te::TensorNode>(te::compute(
      name, out_shape,
      [&](const std::vector<Expr>& i) {
        // Output index layout: batch..., m (absent if a is 1-D), n (absent if b is 1-D).
        const size_t out_rank = i.size();
        Expr m = a_vec ? nullptr : i[out_rank - (b_vec ? 1 : 2)];
        Expr n = b_vec ? nullptr : i[out_rank - 1];
        const size_t batch_rank = out_rank - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
        auto batch_index = [&](const Shape& s, size_t mat_dims) {
          std::vector<Expr> idx;
          const size_t brank = s.size() - mat_dims;
          for (size_t d = 0; d < brank; ++d) {
            const size_t od = batch_rank - brank + d;
            idx.push_back(s[d] == 1 ? L::int_imm(0) : i[od]);
          }
          return idx;
        };
        Expr rk = L::var_ref(r.var);
        std::vector<Expr> ai = batch_index(as, a_vec ? 1 : 2);
        if (a_vec) {
          ai.push_back(rk);
        } else if (trans_a) {
          ai.push_back(rk);
          ai.push_back(m);
        } else {
          ai.push_back(m);
          ai.push_back(rk);
        }
        std::vector<Expr> bi = batch_index(bs, b_vec ? 1 : 2);
        if (b_vec) {
          bi.push_back(rk);
        } else if (trans_b) {
          bi.push_back(n);
          bi.push_back(rk);
        } else {
          bi.push_back(rk);
          bi.push_back(n);
        }
        return te::sum(L::mul(te::read(a, ai), te::read(b, bi)), {r});
      },
      "matmul"));
  t->attrs = {{"trans_a", {trans_a}}, {"trans_b", {trans_b}}};
  t->extra_inputs = {a, b};
  return t;
}

te::Tensor matmul_compute(const Node& node, ComputeContext& ctx) {
  return matmul_core(node.name, out0(node)->shape, ctx.input(node.input(0)),
                     ctx.input(node.input(1)), false, false);
}

// Gemm: Y = alpha * op(A) op(B) + beta * C
te::Tensor gemm_compute(const Node& node, ComputeContext& ctx) {
  const double alpha = node.attrs.get_float_or("alpha", 1.0f, node.name);
  const double beta = node.attrs.get_float_or("beta", 1.0f, node.name);
  const bool ta = node.attrs.get_int_or("transA", 0, node.name) != 0;
  const bool tb = node.attrs.get_int_or("transB", 0, node.name) != 0;
  const bool has_c = node.input(2) != nullptr && beta != 0.0;
  if (alpha == 1.0 && !has_c)
    return matmul_core(node.name, out0(node)->shape, ctx.input(node.input(0)),
                       ctx.input(node.input(1)), ta, tb);
  te::Tensor mm = matmul_core(node.name + ".mm", out0(node)->shape, ctx.input(node.input(0)),
                              ctx.input(node.input(1)), ta, tb);
  Operand c;
  if (has_c) c = operand(node.input(2), ctx);
  return te::compute(node.name, out0(node)->shape, [&](const std::vector<Expr>& i) {
    Expr v = te::read(mm, i);
    if (alpha != 1.0) v = L::mul(v, L::float_imm(alpha));
    if (has_c) {
      Expr cv = c.at(i);
      if (beta != 1.0) cv = L::mul(cv, L::float_imm(beta));
      v = L::add(v, cv);
    }
    return v;
  });
}

std::vector<int64_t> normalized_axes(const Node& node, std::vector<int64_t> axes, size_t rank) {
  for (auto& a : axes) {
    if (a < 0) a += static_cast<int64_t>(rank);
    if (a < 0 || a >= static_cast<int64_t>(rank)) unsupported(node, "axis out of range");
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

/// Reduction over `axes` (keepdims or not) with combiner `op`; `mean` divides by the count.
// The reductions of ONNX Reduce*: y = post(reduce_op over the axes of pre(x)) (pre and post
// default to the identity). `mean` scales each term by 1/count before summing. With `shift_by_max`
// (ReduceLogSumExp) the terms are taken relative to the maximum m over the same axes and m is
// added back: log Σ exp(x) = m + log Σ exp(x − m), which keeps exp within fp16 range.
te::Tensor reduce_compute(const Node& node, ComputeContext& ctx, L::ReduceOp op, bool mean,
                          const std::function<Expr(Expr)>& pre = nullptr,
                          const std::function<Expr(Expr)>& post = nullptr,
                          bool shift_by_max = false) {
  const Value* xv = node.input(0);
  const size_t rank = xv->shape.size();
  std::vector<int64_t> axes;
  if (node.attrs.has("axes")) {
    axes = node.attrs.get_ints_or("axes", {}, node.name);
  } else if (node.input(1)) {
    if (!node.input(1)->constant) unsupported(node, "reduction axes must be constant");
    axes = node.input(1)->constant->to_int64_vector();
  }
  if (axes.empty()) {
    if (node.attrs.get_int_or("noop_with_empty_axes", 0, node.name)) {
      // No axes and noop_with_empty_axes: the input unchanged (ONNX Reduce*, opset 13+).
      te::Tensor x = ctx.input(xv);
      return elementwise(node, ctx, [&](const std::vector<Expr>& i) { return te::read(x, i); });
    }
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  axes = normalized_axes(node, axes, rank);
  const bool keep = node.attrs.get_int_or("keepdims", 1, node.name) != 0;
  te::Tensor x = ctx.input(xv);
  std::vector<te::IterVar> raxes;
  int64_t count = 1;
  for (int64_t a : axes) {
    raxes.push_back(te::reduce_axis(xv->shape[a], fmt::format("r{}", a)));
    count *= xv->shape[a];
  }
  const Shape& out_shape = out0(node)->shape;
  // The input index of output index i and the reduction variables.
  auto input_index = [&](const std::vector<Expr>& i) {
    std::vector<Expr> xi;
    size_t oi = 0, ri = 0;
    for (size_t d = 0; d < rank; ++d) {
      const bool reduced = ri < axes.size() && axes[ri] == static_cast<int64_t>(d);
      if (reduced) {
        xi.push_back(L::var_ref(raxes[ri].var));
        ++ri;
        if (keep) ++oi;
      } else {
        xi.push_back(i[oi++]);
      }
    }
    return xi;
  };
  std::optional<te::Tensor> max;
  if (shift_by_max) {
    max = te::compute(node.name + ".max", out_shape, [&](const std::vector<Expr>& i) {
      return L::reduce(L::ReduceOp::max, te::read(x, input_index(i)), raxes);
    });
  }
  // A mean sums pre-scaled values: the sum of n fp16 values overflows fp16 (65504) long before
  // their mean does.
  const std::string name = post || max ? node.name + ".reduce" : node.name;
  te::Tensor red = te::compute(name, out_shape, [&](const std::vector<Expr>& i) {
    Expr v = te::read(x, input_index(i));
    if (max) v = L::sub(v, te::read(*max, i));
    if (pre) v = pre(v);
    if (mean) v = L::mul(v, L::float_imm(1.0 / static_cast<double>(count)));
    return L::reduce(op, v, raxes);
  });
  if (!post && !max) return red;
  return te::compute(node.name, out_shape, [&](const std::vector<Expr>& i) {
    Expr v = te::read(red, i);
    if (post) v = post(v);
    if (max) v = L::add(v, te::read(*max, i));
    return v;
  });
}

te::Tensor global_pool_compute(const Node& node, ComputeContext& ctx, bool average) {
  const Value* xv = node.input(0);
  te::Tensor x = ctx.input(xv);
  std::vector<te::IterVar> raxes;
  int64_t count = 1;
  for (size_t d = 2; d < xv->shape.size(); ++d) {
    raxes.push_back(te::reduce_axis(xv->shape[d], fmt::format("r{}", d)));
    count *= xv->shape[d];
  }
  const Shape& out_shape = out0(node)->shape;
  // The average sums pre-scaled values (a sum of fp16 values overflows long before their mean).
  return te::compute(node.name, out_shape, [&](const std::vector<Expr>& i) {
    std::vector<Expr> xi = {i[0], i[1]};
    for (const auto& r : raxes) xi.push_back(L::var_ref(r.var));
    Expr v = te::read(x, xi);
    if (average) v = L::mul(v, L::float_imm(1.0 / static_cast<double>(count)));
    return L::reduce(average ? L::ReduceOp::sum : L::ReduceOp::max, v, raxes);
  });
}

te::Tensor pool_compute(const Node& node, ComputeContext& ctx, bool average) {
  const Value* xv = node.input(0);
  if (xv->shape.size() != 4) unsupported(node, "only 2-D pooling (NCHW) is compiled");
  const auto k = node.attrs.get_ints_or("kernel_shape", {}, node.name);
  if (k.size() != 2) unsupported(node, "kernel_shape must have 2 entries");
  const auto strides = ints_or(node, "strides", {1, 1});
  const auto dil = ints_or(node, "dilations", {1, 1});
  const auto pads = window_pads(node, xv->shape, k, strides, dil);
  if (node.outputs.size() > 1 && node.outputs[1]) unsupported(node, "MaxPool Indices output");
  if (node.attrs.get_int_or("storage_order", 0, node.name) != 0)
    unsupported(node, "storage_order=1");
  te::Tensor x = ctx.input(xv);
  auto kh = te::reduce_axis(k[0], "rh");
  auto kw = te::reduce_axis(k[1], "rw");
  const Shape& out_shape = out0(node)->shape;
  const double pad_value = average ? 0.0 : -INFINITY;
  te::Tensor red =
      te::compute(node.name + (average ? ".sum" : ""), out_shape, [&](const std::vector<Expr>& i) {
        Expr ih =
            L::add(L::mul(i[2], L::int_imm(strides[0])),
                   L::sub(L::mul(L::var_ref(kh.var), L::int_imm(dil[0])), L::int_imm(pads[0])));
        Expr iw =
            L::add(L::mul(i[3], L::int_imm(strides[1])),
                   L::sub(L::mul(L::var_ref(kw.var), L::int_imm(dil[1])), L::int_imm(pads[1])));
        return L::reduce(average ? L::ReduceOp::sum : L::ReduceOp::max,
                         te::read_padded(x, {i[0], i[1], ih, iw}, pad_value), {kh, kw});
      });
  if (!average) return red;
  const bool include_pad = node.attrs.get_int_or("count_include_pad", 0, node.name) != 0;
  // Divisor per output position: the window size, or the number of in-bounds taps.
  const int64_t oh = out_shape[2], ow = out_shape[3];
  const int64_t ih = xv->shape[2], iw = xv->shape[3];
  std::vector<float> inv(oh * ow);
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t xq = 0; xq < ow; ++xq) {
      int64_t n = 0;
      for (int64_t a = 0; a < k[0]; ++a)
        for (int64_t b = 0; b < k[1]; ++b) {
          const int64_t r = y * strides[0] + a * dil[0] - pads[0];
          const int64_t c = xq * strides[1] + b * dil[1] - pads[1];
          const bool inside = r >= 0 && r < ih && c >= 0 && c < iw;
          // count_include_pad counts explicit pads, not positions past the padded border.
          const bool in_padded =
              r >= -pads[0] && r < ih + pads[2] && c >= -pads[1] && c < iw + pads[3];
          n += include_pad ? in_padded : inside;
        }
      inv[y * ow + xq] = 1.0f / static_cast<float>(n);
    }
  bool uniform = true;
  for (float v : inv) uniform &= v == inv[0];
  if (uniform) {
    const double s = inv[0];
    return te::compute(node.name, out_shape, [&](const std::vector<Expr>& i) {
      return L::mul(te::read(red, i), L::float_imm(s));
    });
  }
  te::Tensor tinv =
      ctx.derived_constant(node.name + ".inv_count", Tensor::from_floats({oh, ow}, inv));
  return te::compute(node.name, out_shape, [&](const std::vector<Expr>& i) {
    return L::mul(te::read(red, i), te::read(tinv, {i[2], i[3]}));
  });
}

// Softmax (opset 13): exp(x - max) / sum(exp(x - max)) along `axis`.
te::Tensor softmax_compute(const Node& node, ComputeContext& ctx, bool log_softmax) {
  const Value* xv = node.input(0);
  const size_t rank = xv->shape.size();
  int64_t axis = node.attrs.get_int_or("axis", -1, node.name);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  te::Tensor x = ctx.input(xv);
  Shape red_shape = xv->shape;
  red_shape[axis] = 1;
  auto with_axis = [&](const std::vector<Expr>& i, Expr a) {
    std::vector<Expr> r = i;
    r[axis] = a;
    return r;
  };
  auto r1 = te::reduce_axis(xv->shape[axis], "rmax");
  te::Tensor mx = te::compute(node.name + ".max", red_shape, [&](const std::vector<Expr>& i) {
    return te::max_reduce(te::read(x, with_axis(i, L::var_ref(r1.var))), {r1});
  });
  te::Tensor ex = te::compute(node.name + ".exp", xv->shape, [&](const std::vector<Expr>& i) {
    return L::call(CallOp::exp, L::sub(te::read(x, i), te::read(mx, with_axis(i, L::int_imm(0)))));
  });
  auto r2 = te::reduce_axis(xv->shape[axis], "rsum");
  te::Tensor sm = te::compute(node.name + ".sum", red_shape, [&](const std::vector<Expr>& i) {
    return te::sum(te::read(ex, with_axis(i, L::var_ref(r2.var))), {r2});
  });
  if (log_softmax) {
    return te::compute(node.name, xv->shape, [&](const std::vector<Expr>& i) {
      Expr z = with_axis(i, L::int_imm(0))[0];
      return L::sub(L::sub(te::read(x, i), te::read(mx, with_axis(i, L::int_imm(0)))),
                    L::call(CallOp::log, te::read(sm, with_axis(i, L::int_imm(0)))));
    });
  }
  return te::compute(node.name, xv->shape, [&](const std::vector<Expr>& i) {
    return L::fdiv(te::read(ex, i), te::read(sm, with_axis(i, L::int_imm(0))));
  });
}

te::Tensor transpose_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const size_t rank = xv->shape.size();
  std::vector<int64_t> perm;
  for (size_t d = 0; d < rank; ++d) perm.push_back(static_cast<int64_t>(rank - 1 - d));
  perm = node.attrs.get_ints_or("perm", perm, node.name);
  te::Tensor x = ctx.input(xv);
  return elementwise(node, ctx, [&](const std::vector<Expr>& i) {
    std::vector<Expr> xi(rank);
    for (size_t d = 0; d < rank; ++d) xi[perm[d]] = i[d];
    return te::read(x, xi);
  });
}

te::Tensor slice_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const size_t rank = xv->shape.size();
  auto const_ints = [&](int idx) -> std::vector<int64_t> {
    const Value* v = node.input(idx);
    if (!v) return {};
    if (!v->constant) unsupported(node, "Slice starts/ends/axes/steps must be constant");
    return v->constant->to_int64_vector();
  };
  auto starts = const_ints(1), ends = const_ints(2), axes = const_ints(3), steps = const_ints(4);
  if (axes.empty())
    for (size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  if (steps.empty()) steps.assign(starts.size(), 1);
  std::vector<int64_t> begin(rank, 0), step(rank, 1);
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = axes[k] < 0 ? axes[k] + static_cast<int64_t>(rank) : axes[k];
    const int64_t dim = xv->shape[a];
    int64_t s = starts[k];
    if (s < 0) s += dim;
    s = steps[k] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    begin[a] = s;
    step[a] = steps[k];
  }
  te::Tensor x = ctx.input(xv);
  return elementwise(node, ctx, [&](const std::vector<Expr>& i) {
    std::vector<Expr> xi(rank);
    for (size_t d = 0; d < rank; ++d)
      xi[d] = L::add(L::int_imm(begin[d]), L::mul(i[d], L::int_imm(step[d])));
    return te::read(x, xi);
  });
}

te::Tensor concat_compute(const Node& node, ComputeContext& ctx) {
  const size_t rank = out0(node)->shape.size();
  int64_t axis = node.attrs.get_int(std::string("axis"), node.name);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  std::vector<te::Tensor> ins;
  std::vector<int64_t> offsets;
  int64_t off = 0;
  for (const Value* v : node.inputs) {
    if (!v || v->shape[axis] == 0) continue;
    ins.push_back(ctx.input(v));
    offsets.push_back(off);
    off += v->shape[axis];
  }
  auto t = std::const_pointer_cast<te::TensorNode>(te::compute(
      node.name, out0(node)->shape,
      [&](const std::vector<Expr>& i) {
        Expr r;
        for (int k = static_cast<int>(ins.size()) - 1; k >= 0; --k) {
          std::vector<Expr> xi = i;
          xi[axis] = L::sub(i[axis], L::int_imm(offsets[k]));
          Expr v = te::read(ins[k], xi);
          r = r ? L::select(L::lt(i[axis], L::int_imm(offsets[k] + ins[k]->shape[axis])), v, r) : v;
        }
        return r;
      },
      "concat"));
  t->attrs = {{"axis", {axis}}, {"offsets", offsets}};
  t->extra_inputs = ins;
  return t;
}

// The rearrangements below are one kernel each whose output is the node's output (dense) seen
// as a higher-rank tensor in which every read is affine (no div/mod of the output index, which
// the NPU's vector tensorizer needs): op_parts returns them as one part with that view.

// DepthToSpace (NCHW, blocksize b): y[n][c][h·b + i][w·b + j] = x[n][k][h][w] with k =
// (i·b + j)·C' + c in DCR mode (the default) and c·b² + i·b + j in CRD mode, C' = C / b²;
// computed over y seen as [N, C', H, b, W, b].
OpPart depth_to_space_part(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  if (xv->shape.size() != 4) unsupported(node, "DepthToSpace takes a 4-D NCHW input");
  const int64_t b = node.attrs.get_int_or("blocksize", 0, node.name);
  if (b <= 0) unsupported(node, "DepthToSpace needs a positive blocksize");
  const std::string mode = node.attrs.get_string_or("mode", "DCR", node.name);
  if (mode != "DCR" && mode != "CRD") unsupported(node, "DepthToSpace mode '" + mode + "'");
  const Shape& xs = xv->shape;
  const int64_t c_out = xs[1] / (b * b);
  te::Tensor x = ctx.input(xv);
  const Shape view = {xs[0], c_out, xs[2], b, xs[3], b};
  te::Tensor t = te::compute(node.name, view, [&](const std::vector<Expr>& o) {
    // o = (n, c, h, i, w, j)
    Expr ij = L::add(L::mul(o[3], L::int_imm(b)), o[5]);
    Expr k = mode == "DCR" ? L::add(L::mul(ij, L::int_imm(c_out)), o[1])
                           : L::add(L::mul(o[1], L::int_imm(b * b)), ij);
    return te::read(x, {o[0], k, o[2], o[4]});
  });
  return {t, view, L::dense_strides(view), 0};
}

// SpaceToDepth (NCHW, blocksize b): y[n][(i·b + j)·C + c][h][w] = x[n][c][h·b + i][w·b + j],
// computed over y seen as [N, b, b, C, H / b, W / b].
OpPart space_to_depth_part(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  if (xv->shape.size() != 4) unsupported(node, "SpaceToDepth takes a 4-D NCHW input");
  const int64_t b = node.attrs.get_int_or("blocksize", 0, node.name);
  if (b <= 0) unsupported(node, "SpaceToDepth needs a positive blocksize");
  const Shape& xs = xv->shape;
  if (xs[2] % b != 0 || xs[3] % b != 0)
    unsupported(node, fmt::format("SpaceToDepth of {}x{} pixels by blocksize {}", xs[2], xs[3], b));
  te::Tensor x = ctx.input(xv);
  const Shape view = {xs[0], b, b, xs[1], xs[2] / b, xs[3] / b};
  te::Tensor t = te::compute(node.name, view, [&](const std::vector<Expr>& o) {
    // o = (n, i, j, c, h, w)
    return te::read(x, {o[0], o[3], L::add(L::mul(o[4], L::int_imm(b)), o[1]),
                        L::add(L::mul(o[5], L::int_imm(b)), o[2])});
  });
  return {t, view, L::dense_strides(view), 0};
}

// Tile: y[i] = x[i mod shape(x)] per dimension (the repeats only set the output shape), computed
// over y seen as [r0, d0, r1, d1, ...] (r = repeats, d = shape(x)): y[.., a, k, ..] = x[.., k, ..].
OpPart tile_part(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const Shape& xs = xv->shape;
  const Shape& os = out0(node)->shape;
  if (os.size() != xs.size()) unsupported(node, "Tile output rank differs from the input's");
  Shape view;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (xs[d] == 0 || os[d] % xs[d] != 0)
      unsupported(node,
                  fmt::format("Tile: output dim {} ({}) is not a multiple of the input's ({})", d,
                              os[d], xs[d]));
    view.push_back(os[d] / xs[d]);
    view.push_back(xs[d]);
  }
  te::Tensor x = ctx.input(xv);
  te::Tensor t = te::compute(node.name, view, [&](const std::vector<Expr>& o) {
    std::vector<Expr> xi;
    for (size_t d = 0; d < xs.size(); ++d) xi.push_back(o[2 * d + 1]);
    return te::read(x, xi);
  });
  return {t, view, L::dense_strides(view), 0};
}

// ---- Pad (ONNX Pad-13/18, as canonicalised by the frontend: pads an i64 constant input 1 over
// every axis, [b_0, ..., b_{r-1}, e_0, ..., e_{r-1}], negative = crop; constant_value input 2) ----

/// The pads of a Pad node (input 1, a constant of 2 * rank entries) and its mode; throws
/// tessel::Unsupported naming the node otherwise.
std::vector<int64_t> pad_amounts(const Node& node, std::string* mode) {
  const Value* xv = node.input(0);
  const Value* pv = node.input(1);
  if (!pv || !pv->constant) unsupported(node, "Pad needs constant pads (input 1)");
  std::vector<int64_t> pads = pv->constant->to_int64_vector();
  if (pads.size() != 2 * xv->shape.size())
    unsupported(node, fmt::format("Pad has {} pads for a rank-{} input (expected {})", pads.size(),
                                  xv->shape.size(), 2 * xv->shape.size()));
  *mode = node.attrs.get_string_or("mode", "constant", node.name);
  if (*mode != "constant" && *mode != "reflect" && *mode != "edge")
    unsupported(node, "Pad mode '" + *mode + "' (constant, reflect, edge)");
  return pads;
}

/// True when Pad is one kernel (op_compute): constant mode with an absent or constant scalar
/// constant_value. Otherwise it is computed by op_parts (pad_parts).
bool pad_is_single_kernel(const Node& node) {
  std::string mode;
  pad_amounts(node, &mode);
  double v;
  return mode == "constant" && (!node.input(2) || scalar_constant(node.input(2), &v));
}

// Pad in constant mode with a compile-time value c: y[i] = x[i - b] where inside x, else c (a
// padded read: every index is affine, the pad value an immediate; negative pads crop).
te::Tensor pad_compute(const Node& node, ComputeContext& ctx) {
  std::string mode;
  const std::vector<int64_t> pads = pad_amounts(node, &mode);
  double value = 0.0;
  if (node.input(2) && !scalar_constant(node.input(2), &value))
    unsupported(node, "Pad constant_value is a run-time tensor (computed by op_parts)");
  if (mode != "constant")
    unsupported(node, "Pad mode '" + mode + "' is compiled as several kernels (op_parts)");
  const Value* xv = node.input(0);
  const size_t rank = xv->shape.size();
  te::Tensor x = ctx.input(xv);
  return elementwise(node, ctx, [&](const std::vector<Expr>& i) {
    std::vector<Expr> xi(rank);
    for (size_t d = 0; d < rank; ++d) xi[d] = L::sub(i[d], L::int_imm(pads[d]));
    return te::read_padded(x, xi, value);
  });
}

// Pad in reflect or edge mode, or with a run-time constant_value: the output is cut, along each
// axis, into segments on which the source index is affine: the copied middle (x[o - b], o the
// output index; cropped where a pad is negative), an edge pad (x[0] or x[n-1] for all its
// positions), one segment per reflected position (x[r], r reflected about the edge element
// without repeating it, as numpy's 'reflect', repeating the reflection when the pad exceeds
// n - 1), and in constant mode the pad segments, which read the scalar constant_value. Each
// cell of the product of the axes' segments is one kernel writing its box of the output.
struct PadSegment {
  int64_t out_begin = 0, len = 0;
  int64_t src = 0;    // the source index at the segment's first position
  int64_t step = 0;   // 1 for the copied middle, 0 for a pad
  bool fill = false;  // constant mode: the value, not x
};

std::vector<PadSegment> pad_segments(int64_t n, int64_t b, int64_t e, const std::string& mode,
                                     const Node& node) {
  std::vector<PadSegment> segs;
  const int64_t out = n + b + e;
  if (n == 0 && (b > 0 || e > 0) && mode != "constant")
    unsupported(node, "Pad mode '" + mode + "' of an empty axis");
  auto reflect = [n](int64_t s) {
    if (n == 1) return int64_t{0};
    const int64_t period = 2 * (n - 1);
    s = ((s % period) + period) % period;
    return s >= n ? period - s : s;
  };
  auto pad = [&](int64_t o0, int64_t len) {
    if (len <= 0) return;
    if (mode == "constant") {
      segs.push_back({o0, len, 0, 0, true});
    } else if (mode == "edge") {
      segs.push_back({o0, len, o0 - b < 0 ? 0 : n - 1, 0, false});
    } else {
      for (int64_t o = o0; o < o0 + len; ++o) segs.push_back({o, 1, reflect(o - b), 0, false});
    }
  };
  const int64_t mid_begin = std::max<int64_t>(b, 0), mid_end = std::min<int64_t>(out, b + n);
  pad(0, mid_begin);
  if (mid_end > mid_begin)
    segs.push_back({mid_begin, mid_end - mid_begin, mid_begin - b, 1, false});
  pad(std::max(mid_end, mid_begin), out - std::max(mid_end, mid_begin));
  return segs;
}

std::vector<OpPart> pad_parts(const Node& node, ComputeContext& ctx) {
  std::string mode;
  const std::vector<int64_t> pads = pad_amounts(node, &mode);
  const Value* xv = node.input(0);
  const size_t rank = xv->shape.size();
  const Shape& os = out0(node)->shape;
  const std::vector<int64_t> ostr = L::dense_strides(os);
  std::vector<std::vector<PadSegment>> axes(rank);
  for (size_t d = 0; d < rank; ++d)
    axes[d] = pad_segments(xv->shape[d], pads[d], pads[d + rank], mode, node);
  te::Tensor x = ctx.input(xv);
  Operand value;
  value.is_imm = true;
  if (node.input(2)) value = operand(node.input(2), ctx);
  if (!value.is_imm && shape_numel(value.tensor->shape) != 1)
    unsupported(node, "Pad constant_value must be a scalar");
  std::vector<OpPart> parts;
  std::vector<size_t> pick(rank, 0);
  for (;;) {
    Shape box(rank);
    int64_t offset = 0;
    bool fill = false;
    std::string tag;
    for (size_t d = 0; d < rank; ++d) {
      const PadSegment& s = axes[d][pick[d]];
      box[d] = s.len;
      offset += s.out_begin * ostr[d];
      fill |= s.fill;
      tag += fmt::format("_{}", s.out_begin);
    }
    te::Tensor t = te::compute(node.name + ".part" + tag, box, [&](const std::vector<Expr>& o) {
      if (fill) {
        if (value.is_imm) return L::float_imm(value.imm);
        return te::read(value.tensor, std::vector<Expr>(value.tensor->shape.size(), L::int_imm(0)));
      }
      std::vector<Expr> xi(rank);
      for (size_t d = 0; d < rank; ++d) {
        const PadSegment& s = axes[d][pick[d]];
        xi[d] = s.step ? L::add(o[d], L::int_imm(s.src)) : L::int_imm(s.src);
      }
      return te::read(x, xi);
    });
    parts.push_back({t, box, ostr, offset});
    size_t d = rank;
    while (d > 0 && ++pick[d - 1] == axes[d - 1].size()) pick[--d] = 0;
    if (d == 0) break;
  }
  return parts;
}

// InstanceNormalization (NCHW..., per n and c over the spatial dims):
// y = scale[c] (x - mean) / sqrt(var + epsilon) + B[c]; the moments are sums of pre-scaled terms.
te::Tensor instance_norm_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const size_t rank = xv->shape.size();
  if (rank < 3) unsupported(node, "InstanceNormalization takes N x C x D1 ... inputs");
  const double eps = node.attrs.get_float_or("epsilon", 1e-5f, node.name);
  te::Tensor x = ctx.input(xv);
  te::Tensor scale = ctx.input(node.input(1));
  te::Tensor bias = ctx.input(node.input(2));
  Shape red_shape = xv->shape;
  int64_t count = 1;
  for (size_t d = 2; d < rank; ++d) count *= red_shape[d], red_shape[d] = 1;
  const double inv = 1.0 / static_cast<double>(count);
  auto mean_of = [&](const std::function<Expr(const std::vector<Expr>&)>& term,
                     const std::string& name) {
    std::vector<te::IterVar> raxes;
    for (size_t d = 2; d < rank; ++d)
      raxes.push_back(te::reduce_axis(xv->shape[d], fmt::format("r{}", d)));
    return te::compute(name, red_shape, [&](const std::vector<Expr>& i) {
      std::vector<Expr> xi = i;
      for (size_t d = 2; d < rank; ++d) xi[d] = L::var_ref(raxes[d - 2].var);
      return te::sum(L::mul(term(xi), L::float_imm(inv)), raxes);
    });
  };
  auto at_red = [&](const std::vector<Expr>& i) {
    std::vector<Expr> r = i;
    for (size_t d = 2; d < rank; ++d) r[d] = L::int_imm(0);
    return r;
  };
  te::Tensor mean =
      mean_of([&](const std::vector<Expr>& i) { return te::read(x, i); }, node.name + ".mean");
  te::Tensor centered =
      te::compute(node.name + ".centered", xv->shape, [&](const std::vector<Expr>& i) {
        return L::sub(te::read(x, i), te::read(mean, at_red(i)));
      });
  te::Tensor var = mean_of(
      [&](const std::vector<Expr>& i) {
        Expr c = te::read(centered, i);
        return L::mul(c, c);
      },
      node.name + ".var");
  return te::compute(node.name, xv->shape, [&](const std::vector<Expr>& i) {
    Expr rstd = L::call(CallOp::rsqrt, L::add(te::read(var, at_red(i)), L::float_imm(eps)));
    return L::add(L::mul(L::mul(te::read(centered, i), rstd), te::read(scale, {i[1]})),
                  te::read(bias, {i[1]}));
  });
}

// LRN (across channels, N x C x D1 ...): s[n][c] = Σ x[n][c'][...]² over c' in
// [c - ⌊(size-1)/2⌋, c + ⌈(size-1)/2⌉] (channels outside [0, C) read 0);
// y = x (bias + alpha / size · s)^-beta, the power as exp(-beta log(.)) (the base is positive).
te::Tensor lrn_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  if (xv->shape.size() < 3) unsupported(node, "LRN takes N x C x D1 ... inputs");
  const int64_t size = node.attrs.get_int_or("size", 0, node.name);
  if (size <= 0) unsupported(node, "LRN needs a positive size");
  const double alpha = node.attrs.get_float_or("alpha", 1e-4f, node.name);
  const double beta = node.attrs.get_float_or("beta", 0.75f, node.name);
  const double bias = node.attrs.get_float_or("bias", 1.0f, node.name);
  const int64_t before = (size - 1) / 2;
  te::Tensor x = ctx.input(xv);
  te::IterVar r = te::reduce_axis(size, "rc");
  te::Tensor sq = te::compute(node.name + ".sq", xv->shape, [&](const std::vector<Expr>& i) {
    Expr v = te::read(x, i);
    return L::mul(v, v);
  });
  te::Tensor win = te::compute(node.name + ".sum", xv->shape, [&](const std::vector<Expr>& i) {
    std::vector<Expr> xi = i;
    xi[1] = L::add(i[1], L::sub(L::var_ref(r.var), L::int_imm(before)));
    return te::sum(te::read_padded(sq, xi, 0.0), {r});
  });
  return te::compute(node.name, xv->shape, [&](const std::vector<Expr>& i) {
    Expr base = L::add(L::mul(te::read(win, i), L::float_imm(alpha / static_cast<double>(size))),
                       L::float_imm(bias));
    Expr p = L::call(CallOp::exp, L::mul(L::call(CallOp::log, base), L::float_imm(-beta)));
    return L::mul(te::read(x, i), p);
  });
}

// LayerNormalization (opset 17): normalise over axes [axis, rank) with mean and variance, then
// scale and shift: y = (x - mean) / sqrt(var + epsilon) * scale + bias.
te::Tensor layer_norm_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const size_t rank = xv->shape.size();
  int64_t axis = node.attrs.get_int_or("axis", -1, node.name);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  const double eps = node.attrs.get_float_or("epsilon", 1e-5f, node.name);
  if (node.outputs.size() > 1)
    for (size_t i = 1; i < node.outputs.size(); ++i)
      if (node.outputs[i]) unsupported(node, "LayerNormalization Mean/InvStdDev outputs");
  te::Tensor x = ctx.input(xv);
  Operand scale = operand(node.input(1), ctx);
  Operand bias;
  bias.is_imm = true;
  if (node.input(2)) bias = operand(node.input(2), ctx);
  Shape red_shape = xv->shape;
  int64_t count = 1;
  for (size_t d = static_cast<size_t>(axis); d < rank; ++d) {
    count *= red_shape[d];
    red_shape[d] = 1;
  }
  auto reduce_over = [&](const te::Tensor& t, const std::string& name) {
    std::vector<te::IterVar> raxes;
    for (size_t d = static_cast<size_t>(axis); d < rank; ++d)
      raxes.push_back(te::reduce_axis(xv->shape[d], fmt::format("r{}", d)));
    return te::compute(name, red_shape, [&](const std::vector<Expr>& i) {
      std::vector<Expr> xi = i;
      for (size_t d = static_cast<size_t>(axis); d < rank; ++d)
        xi[d] = L::var_ref(raxes[d - static_cast<size_t>(axis)].var);
      // Pre-scaled, so the sum stays in fp16 range.
      return te::sum(L::mul(te::read(t, xi), L::float_imm(1.0 / static_cast<double>(count))),
                     raxes);
    });
  };
  auto at_red = [&](const std::vector<Expr>& i) {
    std::vector<Expr> r = i;
    for (size_t d = static_cast<size_t>(axis); d < rank; ++d) r[d] = L::int_imm(0);
    return r;
  };
  te::Tensor mean = reduce_over(x, node.name + ".mean");
  te::Tensor centered =
      te::compute(node.name + ".centered", xv->shape, [&](const std::vector<Expr>& i) {
        return L::sub(te::read(x, i), te::read(mean, at_red(i)));
      });
  te::Tensor sq = te::compute(node.name + ".sq", xv->shape, [&](const std::vector<Expr>& i) {
    Expr c = te::read(centered, i);
    return L::mul(c, c);
  });
  te::Tensor var = reduce_over(sq, node.name + ".var");
  te::Tensor rstd = te::compute(node.name + ".rstd", red_shape, [&](const std::vector<Expr>& i) {
    return L::call(CallOp::rsqrt, L::add(te::read(var, i), L::float_imm(eps)));
  });
  return te::compute(node.name, xv->shape, [&](const std::vector<Expr>& i) {
    Expr y = L::mul(L::mul(te::read(centered, i), te::read(rstd, at_red(i))), scale.at(i));
    if (!(bias.is_imm && bias.imm == 0.0)) y = L::add(y, bias.at(i));
    return y;
  });
}

// Gelu (opset 20): 0.5 x (1 + erf(x / sqrt 2)), or with approximate="tanh"
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
te::Tensor gelu_compute(const Node& node, ComputeContext& ctx) {
  const std::string approx = node.attrs.get_string_or("approximate", "none", node.name);
  if (approx != "none" && approx != "tanh") unsupported(node, "Gelu approximate='" + approx + "'");
  return unary(node, ctx, [&](Expr x) {
    Expr inner;
    if (approx == "tanh") {
      Expr cube = L::mul(L::mul(x, x), x);
      inner = L::call(CallOp::tanh, L::mul(L::add(x, L::mul(cube, L::float_imm(0.044715))),
                                           L::float_imm(std::sqrt(2.0 / M_PI))));
    } else {
      inner = L::call(CallOp::erf, L::mul(x, L::float_imm(M_SQRT1_2)));
    }
    return L::mul(L::mul(x, L::float_imm(0.5)), L::add(inner, L::float_imm(1.0)));
  });
}

using ComputeFn = std::function<te::Tensor(const Node&, ComputeContext&)>;

// The computes of docs/conformance.md's "more ops" (defined below the typed table).
void add_more_computes(std::map<std::string, ComputeFn>& m);
void add_more_typed_computes(std::map<std::string, ComputeFn>& m);

const std::map<std::string, ComputeFn>& computes() {
  static const std::map<std::string, ComputeFn> table = [] {
    std::map<std::string, ComputeFn> m;
    auto un = [&](const char* op, std::function<Expr(Expr)> f) {
      m[op] = [f](const Node& n, ComputeContext& c) { return unary(n, c, f); };
    };
    auto bin = [&](const char* op, std::function<Expr(Expr, Expr)> f) {
      m[op] = [f](const Node& n, ComputeContext& c) { return binary(n, c, f); };
    };
    un("Relu", [](Expr x) { return L::max(x, L::float_imm(0.0)); });
    un("Sigmoid", sigmoid);
    un("Exp", [](Expr x) { return L::call(CallOp::exp, x); });
    un("Log", [](Expr x) { return L::call(CallOp::log, x); });
    un("Sqrt", [](Expr x) { return L::call(CallOp::sqrt, x); });
    un("Reciprocal", [](Expr x) { return L::call(CallOp::recip, x); });
    un("Abs", [](Expr x) { return L::call(CallOp::abs, x); });
    un("Neg", [](Expr x) { return L::call(CallOp::neg, x); });
    un("Tanh", [](Expr x) { return L::call(CallOp::tanh, x); });
    un("Identity", [](Expr x) { return x; });
    // Same logical values; the storage formats of X and Y are the GM buffers' business.
    un("TransData", [](Expr x) { return x; });
    un("HardSwish", [](Expr x) {
      return L::mul(x, L::min(L::max(L::add(L::mul(x, L::float_imm(1.0 / 6.0)), L::float_imm(0.5)),
                                     L::float_imm(0.0)),
                              L::float_imm(1.0)));
    });
    m["LeakyRelu"] = [](const Node& n, ComputeContext& c) {
      const double alpha = n.attrs.get_float_or("alpha", 0.01f, n.name);
      return unary(n, c, [alpha](Expr x) {
        // max(x,0) + alpha*min(x,0)
        return L::add(L::max(x, L::float_imm(0.0)),
                      L::mul(L::min(x, L::float_imm(0.0)), L::float_imm(alpha)));
      });
    };
    bin("Add", [](Expr a, Expr b) { return L::add(a, b); });
    bin("Sub", [](Expr a, Expr b) { return L::sub(a, b); });
    bin("Mul", [](Expr a, Expr b) { return L::mul(a, b); });
    bin("Div", [](Expr a, Expr b) { return L::fdiv(a, b); });
    m["Max"] = [](const Node& n, ComputeContext& c) {
      return variadic(n, c, [](Expr a, Expr b) { return L::max(a, b); });
    };
    m["Min"] = [](const Node& n, ComputeContext& c) {
      return variadic(n, c, [](Expr a, Expr b) { return L::min(a, b); });
    };
    m["Sum"] = [](const Node& n, ComputeContext& c) {
      return variadic(n, c, [](Expr a, Expr b) { return L::add(a, b); });
    };
    m["Pow"] = pow_compute;
    m["Clip"] = clip_compute;
    m["HardSigmoid"] = hard_sigmoid_compute;
    m["BatchNormalization"] = batch_norm_compute;
    m["Conv"] = conv_compute;
    m["Pad"] = pad_compute;
    m["MatMul"] = matmul_compute;
    m["Gemm"] = gemm_compute;
    m["ReduceMean"] = [](const Node& n, ComputeContext& c) {
      return reduce_compute(n, c, L::ReduceOp::sum, true);
    };
    m["ReduceSum"] = [](const Node& n, ComputeContext& c) {
      return reduce_compute(n, c, L::ReduceOp::sum, false);
    };
    m["ReduceMax"] = [](const Node& n, ComputeContext& c) {
      return reduce_compute(n, c, L::ReduceOp::max, false);
    };
    m["ReduceMin"] = [](const Node& n, ComputeContext& c) {
      return reduce_compute(n, c, L::ReduceOp::min, false);
    };
    auto square = [](Expr x) { return L::mul(x, x); };
    auto abs = [](Expr x) { return L::call(CallOp::abs, x); };
    auto log = [](Expr x) { return L::call(CallOp::log, x); };
    auto exp = [](Expr x) { return L::call(CallOp::exp, x); };
    auto sqrt = [](Expr x) { return L::call(CallOp::sqrt, x); };
    m["ReduceL1"] = [=](const Node& n, ComputeContext& c) {
      return reduce_compute(n, c, L::ReduceOp::sum, false, abs);
    };
    m["ReduceL2"] = [=](const Node& n, ComputeContext& c) {
      return reduce_compute(n, c, L::ReduceOp::sum, false, square, sqrt);
    };
    m["ReduceSumSquare"] = [=](const Node& n, ComputeContext& c) {
      return reduce_compute(n, c, L::ReduceOp::sum, false, square);
    };
    m["ReduceLogSum"] = [=](const Node& n, ComputeContext& c) {
      return reduce_compute(n, c, L::ReduceOp::sum, false, nullptr, log);
    };
    m["ReduceLogSumExp"] = [=](const Node& n, ComputeContext& c) {
      return reduce_compute(n, c, L::ReduceOp::sum, false, exp, log, true);
    };
    m["GlobalAveragePool"] = [](const Node& n, ComputeContext& c) {
      return global_pool_compute(n, c, true);
    };
    m["GlobalMaxPool"] = [](const Node& n, ComputeContext& c) {
      return global_pool_compute(n, c, false);
    };
    m["MaxPool"] = [](const Node& n, ComputeContext& c) { return pool_compute(n, c, false); };
    m["AveragePool"] = [](const Node& n, ComputeContext& c) { return pool_compute(n, c, true); };
    m["Softmax"] = [](const Node& n, ComputeContext& c) { return softmax_compute(n, c, false); };
    m["LogSoftmax"] = [](const Node& n, ComputeContext& c) { return softmax_compute(n, c, true); };
    m["Transpose"] = transpose_compute;
    // Expand: x broadcast to the output shape (the shape input only sets that shape).
    un("Expand", [](Expr x) { return x; });
    m["Slice"] = slice_compute;
    m["Concat"] = concat_compute;
    m["LayerNormalization"] = layer_norm_compute;
    m["LRN"] = lrn_compute;
    m["InstanceNormalization"] = instance_norm_compute;
    m["Gelu"] = gelu_compute;
    un("Erf", [](Expr x) { return L::call(CallOp::erf, x); });
    // The exponential-linear family (ONNX Elu, Celu, Selu): the exp term only sees min(x, 0), so
    // it never overflows: max(x, 0) + alpha (exp(min(x, 0) / alpha) - 1) for Celu.
    auto elu = [](Expr x, double alpha, double inv_alpha) {
      Expr neg = L::min(x, L::float_imm(0.0));
      if (inv_alpha != 1.0) neg = L::mul(neg, L::float_imm(inv_alpha));
      return L::add(
          L::max(x, L::float_imm(0.0)),
          L::mul(L::sub(L::call(CallOp::exp, neg), L::float_imm(1.0)), L::float_imm(alpha)));
    };
    m["Elu"] = [elu](const Node& n, ComputeContext& c) {
      const double alpha = n.attrs.get_float_or("alpha", 1.0f, n.name);
      return unary(n, c, [&](Expr x) { return elu(x, alpha, 1.0); });
    };
    m["Celu"] = [elu](const Node& n, ComputeContext& c) {
      const double alpha = n.attrs.get_float_or("alpha", 1.0f, n.name);
      if (alpha == 0.0) unsupported(n, "Celu alpha=0");
      return unary(n, c, [&](Expr x) { return elu(x, alpha, 1.0 / alpha); });
    };
    m["Selu"] = [elu](const Node& n, ComputeContext& c) {
      const double alpha = n.attrs.get_float_or("alpha", 1.67326319217681884765625f, n.name);
      const double gamma = n.attrs.get_float_or("gamma", 1.05070102214813232421875f, n.name);
      return unary(n, c, [&](Expr x) { return L::mul(elu(x, alpha, 1.0), L::float_imm(gamma)); });
    };
    // PRelu: max(x, 0) + slope min(x, 0), slope broadcast to x (unidirectional).
    bin("PRelu", [](Expr x, Expr slope) {
      return L::add(L::max(x, L::float_imm(0.0)), L::mul(L::min(x, L::float_imm(0.0)), slope));
    });
    un("Softsign",
       [](Expr x) { return L::fdiv(x, L::add(L::call(CallOp::abs, x), L::float_imm(1.0))); });
    // Softplus log(1 + exp(x)) as max(x, 0) + log(1 + exp(-|x|)) (no overflow of exp).
    un("Softplus", [](Expr x) {
      Expr e = L::call(CallOp::exp, L::call(CallOp::neg, L::call(CallOp::abs, x)));
      return L::add(L::max(x, L::float_imm(0.0)),
                    L::call(CallOp::log, L::add(e, L::float_imm(1.0))));
    });
    // Inverse hyperbolic functions through log and sqrt.
    un("Asinh", [](Expr x) {
      return L::call(CallOp::log,
                     L::add(x, L::call(CallOp::sqrt, L::add(L::mul(x, x), L::float_imm(1.0)))));
    });
    un("Acosh", [](Expr x) {
      return L::call(CallOp::log,
                     L::add(x, L::call(CallOp::sqrt, L::sub(L::mul(x, x), L::float_imm(1.0)))));
    });
    un("Atanh", [](Expr x) {
      return L::mul(
          L::call(CallOp::log, L::fdiv(L::add(L::float_imm(1.0), x), L::sub(L::float_imm(1.0), x))),
          L::float_imm(0.5));
    });
    un("Sinh", [](Expr x) {
      return L::mul(L::sub(L::call(CallOp::exp, x), L::call(CallOp::exp, L::call(CallOp::neg, x))),
                    L::float_imm(0.5));
    });
    un("Cosh", [](Expr x) {
      return L::mul(L::add(L::call(CallOp::exp, x), L::call(CallOp::exp, L::call(CallOp::neg, x))),
                    L::float_imm(0.5));
    });
    m["Mean"] = [](const Node& n, ComputeContext& c) {
      int64_t count = 0;
      for (const Value* v : n.inputs) count += v != nullptr;
      // Each term pre-scaled by 1/count (a sum of fp16 values can overflow before the mean).
      const double inv = 1.0 / static_cast<double>(std::max<int64_t>(count, 1));
      return variadic(
          n, c, [](Expr a, Expr b) { return L::add(a, b); },
          [inv](Expr x) { return L::mul(x, L::float_imm(inv)); });
    };
    un("Silu", [](Expr x) { return L::mul(x, sigmoid(x)); });
    add_more_computes(m);
    return m;
  }();
  return table;
}

/// The `axis` attribute (default 0) of a node with a rank-`rank` input, negative values counted
/// from the end; tessel::Unsupported naming the node when out of range.
int64_t axis_attr(const Node& node, int64_t rank) {
  int64_t axis = node.attrs.get_int_or("axis", 0, node.name);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    unsupported(node, fmt::format("axis {} of a rank-{} input", axis, rank));
  return axis;
}

/// The constant [0, 1, ..., K-1] of integer `dtype` (NAME.iota): the index an index-producing or
/// index-consuming compute compares values with (the vector unit compares data, not loop indices).
te::Tensor iota_constant(const Node& node, ComputeContext& ctx, DType dtype, int64_t K) {
  Tensor values(dtype, {K});
  for (int64_t k = 0; k < K; ++k) values.set_from_double(k, static_cast<double>(k));
  return ctx.derived_constant(node.name + ".iota", values);
}

// Gather and GatherElements (ONNX opset 13): Gather's out[o.., j.., i..] = data[o.., idx[j..],
// i..] (axis dims o, index dims j, inner dims i); GatherElements' out[p] = data[p with
// p[axis] = idx[p]]. A negative index counts from the end (idx + K, K = data.shape[axis]). The NPU
// has no data-dependent addressing, so the gather is a one-hot reduction over the gathered axis:
// out = sum_k (idx' == k ? data[..k..] : 0), idx' = idx < 0 ? idx + K : idx, k read from a
// constant iota [0, K) in the index dtype. Exactly one term is selected, so the result is the
// element's bits for integers and for every float but -0.0 (0 + -0 = +0); the vector work is
// O(K) per output element (meant for small gathered axes: shape arithmetic, small tables). An
// index outside [-K, K) selects nothing and gives 0 (the reference reports an error).
te::Tensor gather_compute(const Node& node, ComputeContext& ctx) {
  const bool elements = node.op_type == "GatherElements";
  const Value* dv = node.input(0);
  const Value* iv = node.input(1);
  const int64_t rank = static_cast<int64_t>(dv->shape.size());
  const int64_t axis = axis_attr(node, rank);
  const int64_t K = dv->shape[axis];
  if (iv->dtype != DType::i32 && iv->dtype != DType::i64)
    unsupported(node, fmt::format("indices of dtype {}", dtype_to_string(iv->dtype)));
  te::Tensor data = ctx.input(dv);
  te::Tensor idx = ctx.input(iv);
  te::Tensor iota = iota_constant(node, ctx, iv->dtype, K);
  te::Tensor norm = te::compute(node.name + ".index", iv->shape, [&](const std::vector<Expr>& i) {
    Expr x = te::read(idx, i);
    return L::select(L::lt(x, L::float_imm(0.0)), L::add(x, L::float_imm(static_cast<double>(K))),
                     x);
  });
  const size_t irank = iv->shape.size();
  te::IterVar k = te::reduce_axis(K, "k");
  return te::compute(node.name, out0(node)->shape, [&](const std::vector<Expr>& o) {
    std::vector<Expr> di, ii;
    if (elements) {
      ii = o;
      di = o;
      di[axis] = L::var_ref(k.var);
    } else {
      for (int64_t d = 0; d < axis; ++d) di.push_back(o[d]);
      di.push_back(L::var_ref(k.var));
      for (int64_t d = axis + 1; d < rank; ++d) di.push_back(o[d - 1 + irank]);
      ii.assign(o.begin() + axis, o.begin() + axis + static_cast<int64_t>(irank));
    }
    Expr hit = L::eq(te::read(norm, ii), te::read(iota, {L::var_ref(k.var)}));
    return te::sum(L::select(hit, te::read(data, di), L::float_imm(0.0)), {k});
  });
}

// ArgMax / ArgMin (opset 13): the int64 index of the first (select_last_index=1: the last)
// extreme along `axis`, keepdims as in ONNX. Two reductions over the axis: the extreme m, then
// the index min_k (x[k] == m ? k : K) (last: max_k (x[k] == m ? k : -1)), k read from a constant
// int64 iota. Ties are decided on the stored values: on the NPU, floats closer than fp16
// resolution compare equal (and the first wins) where fp32 may order them.
te::Tensor arg_compute(const Node& node, ComputeContext& ctx) {
  const bool is_max = node.op_type == "ArgMax";
  const Value* xv = node.input(0);
  const int64_t rank = static_cast<int64_t>(xv->shape.size());
  const int64_t axis = axis_attr(node, rank);
  const bool keepdims = node.attrs.get_int_or("keepdims", 1, node.name) != 0;
  const bool last = node.attrs.get_int_or("select_last_index", 0, node.name) != 0;
  const int64_t K = xv->shape[axis];
  te::Tensor x = ctx.input(xv);
  te::Tensor iota = iota_constant(node, ctx, DType::i64, K);
  Shape red = xv->shape;
  red[axis] = 1;
  auto with_axis = [axis](std::vector<Expr> i, Expr k) {
    i[axis] = std::move(k);
    return i;
  };
  te::IterVar r = te::reduce_axis(K, "r");
  te::Tensor m = te::compute(node.name + ".extreme", red, [&](const std::vector<Expr>& i) {
    Expr v = te::read(x, with_axis(i, L::var_ref(r.var)));
    return is_max ? te::max_reduce(v, {r}) : te::min_reduce(v, {r});
  });
  te::IterVar r2 = te::reduce_axis(K, "r2");
  te::Tensor index = te::compute(
      keepdims ? node.name : node.name + ".index", red, [&](const std::vector<Expr>& i) {
        Expr hit = L::eq(te::read(x, with_axis(i, L::var_ref(r2.var))), te::read(m, i));
        Expr v = L::select(hit, te::read(iota, {L::var_ref(r2.var)}),
                           L::float_imm(last ? -1.0 : static_cast<double>(K)));
        return last ? te::max_reduce(v, {r2}) : te::min_reduce(v, {r2});
      });
  if (keepdims) return index;
  return te::compute(node.name, out0(node)->shape, [&](const std::vector<Expr>& o) {
    std::vector<Expr> i(o.begin(), o.end());
    i.insert(i.begin() + axis, L::int_imm(0));
    return te::read(index, i);
  });
}

// Trilu (opset 14): keeps the upper (upper=1: j - i >= k) or lower (j - i <= k) triangle of the
// last two dims and zeroes the rest; k (default 0) may be a runtime scalar. The diagonal offset
// j - i comes from a constant int64 [R, C] tensor, so the mask is a comparison of values (the
// vector unit compares data, not loop indices) and the result a select.
te::Tensor trilu_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const size_t rank = xv->shape.size();
  if (rank < 2) unsupported(node, "input must have rank >= 2");
  const int64_t R = xv->shape[rank - 2], C = xv->shape[rank - 1];
  const bool upper = node.attrs.get_int_or("upper", 1, node.name) != 0;
  te::Tensor x = ctx.input(xv);
  Operand k;
  k.is_imm = true;
  if (node.input(1)) k = operand(node.input(1), ctx);
  if (!k.is_imm && k.tensor->shape.size() > 1) unsupported(node, "k must be a scalar");
  Tensor diff_values(DType::i64, {R, C});
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) diff_values.data<int64_t>()[i * C + j] = j - i;
  te::Tensor diff = ctx.derived_constant(node.name + ".offset", diff_values);
  return te::compute(node.name, xv->shape, [&](const std::vector<Expr>& i) {
    Expr d = te::read(diff, {i[rank - 2], i[rank - 1]});
    Expr kv = k.is_imm
                  ? L::float_imm(k.imm)
                  : te::read(k.tensor, std::vector<Expr>(k.tensor->shape.size(), L::int_imm(0)));
    Expr keep = upper ? L::le(kv, d) : L::le(d, kv);
    return L::select(keep, te::read(x, i), L::float_imm(0.0));
  });
}

// Mod (opset 13) of integers: r = a - trunc(a / b) * b (C %, vdiv truncates toward zero); with
// fmod=0 the result takes the divisor's sign: r + b where r != 0 and (r < 0) != (b < 0). Float
// Mod (fmod=1) is not compiled (no truncation instruction for floats).
te::Tensor mod_compute(const Node& node, ComputeContext& ctx) {
  const Value* av = node.input(0);
  if (dtype_is_float(av->dtype)) unsupported(node, "Mod of floats is not compiled");
  const bool c_fmod = node.attrs.get_int_or("fmod", 0, node.name) != 0;
  Operand a = operand(av, ctx);
  Operand b = operand(node.input(1), ctx);
  te::Tensor r = te::compute(c_fmod ? node.name : node.name + ".rem", out0(node)->shape,
                             [&](const std::vector<Expr>& i) {
                               Expr x = a.at(i), y = b.at(i);
                               return L::sub(x, L::mul(L::fdiv(x, y), y));
                             });
  if (c_fmod) return r;
  return te::compute(node.name, out0(node)->shape, [&](const std::vector<Expr>& i) {
    Expr rv = te::read(r, i), y = b.at(i);
    Expr zero = L::float_imm(0.0);
    Expr fix = L::logical_and(L::ne(rv, zero), L::ne(L::lt(rv, zero), L::lt(y, zero)));
    return L::select(fix, L::add(rv, y), rv);
  });
}

// ---- More ops (issue #15, docs/conformance.md) ------------------------------------------------

/// A scalar compile-time constant input (CumSum's axis): tessel::Unsupported naming the node
/// and `what` when it is absent or not a constant scalar.
int64_t constant_scalar_input(const Node& node, int idx, const char* what) {
  const Value* v = node.input(idx);
  if (!v || !v->constant || v->constant->numel() != 1)
    unsupported(node, fmt::format("{} must be a constant scalar", what));
  return static_cast<int64_t>(v->constant->get_as_double(0));
}

/// The float constant [0, 1, ..., K-1] (NAME.iota_f): index values for computes that compare
/// indices as data on float-only targets (exact in fp16 for K <= 2048).
te::Tensor float_iota(const Node& node, ComputeContext& ctx, int64_t K) {
  if (K > 2048) unsupported(node, fmt::format("an axis of {} > 2048 elements", K));
  std::vector<float> v(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) v[k] = static_cast<float>(k);
  return ctx.derived_constant(node.name + ".iota_f", Tensor::from_floats({K}, v));
}

// Shrink (opset 9): x < -lambd ? x + bias : (x > lambd ? x - bias : 0).
te::Tensor shrink_compute(const Node& node, ComputeContext& ctx) {
  const double lambd = node.attrs.get_float_or("lambd", 0.5f, node.name);
  const double bias = node.attrs.get_float_or("bias", 0.0f, node.name);
  return unary(node, ctx, [&](Expr x) {
    Expr lo = bias == 0 ? x : L::add(x, L::float_imm(bias));
    Expr hi = bias == 0 ? x : L::sub(x, L::float_imm(bias));
    return L::select(L::lt(x, L::float_imm(-lambd)), lo,
                     L::select(L::lt(L::float_imm(lambd), x), hi, L::float_imm(0.0)));
  });
}

// ReduceProd (opset 13, axes attribute): the product of the reduced elements, unrolled as a chain
// of multiplications of reads at constant offsets along the reduced axes (there is no product
// combiner; every read stays affine). At most 256 terms per output; the empty product is 1.
te::Tensor reduce_prod_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const size_t rank = xv->shape.size();
  std::vector<int64_t> axes = node.attrs.get_ints_or("axes", {}, node.name);
  if (axes.empty() && node.input(1)) {
    if (!node.input(1)->constant) unsupported(node, "reduction axes must be constant");
    axes = node.input(1)->constant->to_int64_vector();
  }
  te::Tensor x = ctx.input(xv);
  if (axes.empty()) {
    if (node.attrs.get_int_or("noop_with_empty_axes", 0, node.name))
      return elementwise(node, ctx, [&](const std::vector<Expr>& i) { return te::read(x, i); });
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  axes = normalized_axes(node, axes, rank);
  const bool keep = node.attrs.get_int_or("keepdims", 1, node.name) != 0;
  int64_t count = 1;
  for (int64_t a : axes) count *= xv->shape[a];
  constexpr int64_t kMaxTerms = 256;
  if (count > kMaxTerms)
    unsupported(node, fmt::format("ReduceProd of {} terms per output (at most {} are unrolled)",
                                  count, kMaxTerms));
  return te::compute(node.name, out0(node)->shape, [&](const std::vector<Expr>& o) {
    if (count == 0) return L::float_imm(1.0);
    Expr r;
    for (int64_t t = 0; t < count; ++t) {
      // Digits of t over the reduced axes, row-major.
      std::vector<int64_t> digit(axes.size());
      int64_t rest = t;
      for (int k = static_cast<int>(axes.size()) - 1; k >= 0; --k) {
        digit[k] = rest % xv->shape[axes[k]];
        rest /= xv->shape[axes[k]];
      }
      std::vector<Expr> xi;
      size_t oi = 0, ri = 0;
      for (size_t d = 0; d < rank; ++d) {
        if (ri < axes.size() && axes[ri] == static_cast<int64_t>(d)) {
          xi.push_back(L::int_imm(digit[ri++]));
          if (keep) ++oi;
        } else {
          xi.push_back(o[oi++]);
        }
      }
      Expr v = te::read(x, xi);
      r = r ? L::mul(r, v) : v;
    }
    return r;
  });
}

// CumSum (opset 14): y[..i..] = sum over j of x[..j..] for j <= i (exclusive: j < i; reverse:
// j >= i, j > i) along the constant `axis` input, as sum_j x[..j..] m[i][j] with a constant 0/1
// mask m [K, K] (K <= 1024): O(K) work per output, every read affine.
te::Tensor cumsum_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const int64_t rank = static_cast<int64_t>(xv->shape.size());
  int64_t axis = constant_scalar_input(node, 1, "CumSum axis");
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    unsupported(node, fmt::format("axis {} of a rank-{} input", axis, rank));
  const bool exclusive = node.attrs.get_int_or("exclusive", 0, node.name) != 0;
  const bool reverse = node.attrs.get_int_or("reverse", 0, node.name) != 0;
  const int64_t K = xv->shape[axis];
  if (K > 1024) unsupported(node, fmt::format("CumSum along an axis of {} > 1024 elements", K));
  std::vector<float> mask(static_cast<size_t>(K * K), 0.f);
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < K; ++j) {
      const bool in = reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
      mask[i * K + j] = in ? 1.f : 0.f;
    }
  te::Tensor m = ctx.derived_constant(node.name + ".mask", Tensor::from_floats({K, K}, mask));
  te::Tensor x = ctx.input(xv);
  te::IterVar r = te::reduce_axis(K, "j");
  return te::compute(node.name, xv->shape, [&](const std::vector<Expr>& o) {
    std::vector<Expr> xi = o;
    xi[axis] = L::var_ref(r.var);
    return te::sum(L::mul(te::read(x, xi), te::read(m, {o[axis], L::var_ref(r.var)})), {r});
  });
}

// Hardmax (opset 13): 1 at the first maximum along `axis` (default -1), 0 elsewhere: m = max
// over the axis, f = min over k of (x[k] == m ? k : K), y[i] = (i == f), the indices read from a
// constant float iota (the vector unit compares data, not loop indices).
te::Tensor hardmax_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const int64_t rank = static_cast<int64_t>(xv->shape.size());
  int64_t axis = node.attrs.get_int_or("axis", -1, node.name);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    unsupported(node, fmt::format("axis {} of a rank-{} input", axis, rank));
  const int64_t K = xv->shape[axis];
  te::Tensor x = ctx.input(xv);
  te::Tensor iota = float_iota(node, ctx, K);
  Shape red = xv->shape;
  red[axis] = 1;
  auto with_axis = [axis](std::vector<Expr> i, Expr k) {
    i[axis] = std::move(k);
    return i;
  };
  te::IterVar r = te::reduce_axis(K, "r");
  te::Tensor m = te::compute(node.name + ".max", red, [&](const std::vector<Expr>& i) {
    return te::max_reduce(te::read(x, with_axis(i, L::var_ref(r.var))), {r});
  });
  te::IterVar r2 = te::reduce_axis(K, "r2");
  te::Tensor f = te::compute(node.name + ".first", red, [&](const std::vector<Expr>& i) {
    Expr hit = L::eq(te::read(x, with_axis(i, L::var_ref(r2.var))), te::read(m, i));
    return te::min_reduce(
        L::select(hit, te::read(iota, {L::var_ref(r2.var)}), L::float_imm(static_cast<double>(K))),
        {r2});
  });
  return te::compute(node.name, xv->shape, [&](const std::vector<Expr>& i) {
    Expr hit = L::eq(te::read(iota, {i[axis]}), te::read(f, with_axis(i, L::int_imm(0))));
    return L::select(hit, L::float_imm(1.0), L::float_imm(0.0));
  });
}

// Einsum (opset 12): out[free] = sum over the contracted labels of the product of the operands
// read at their labels (repeated labels within an operand read its diagonal; "..." stands for
// the broadcast leading dims, right-aligned, a size-1 dim read at 0). Without "->" the output is
// the "..." dims and then the labels used once, in alphabetical order. One compute: a reduction
// with affine reads (the vector unit's per-step multiply-accumulate, not the cube).
te::Tensor einsum_compute(const Node& node, ComputeContext& ctx) {
  std::string eq = node.attrs.get_string_or("equation", "", node.name);
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t p = 0;;) {
    const size_t c = lhs.find(',', p);
    terms.push_back(lhs.substr(p, c == std::string::npos ? std::string::npos : c - p));
    if (c == std::string::npos) break;
    p = c + 1;
  }
  std::vector<const Value*> ins;
  for (const Value* v : node.inputs)
    if (v) ins.push_back(v);
  if (terms.size() != ins.size())
    unsupported(node, fmt::format("Einsum equation '{}' has {} operands, the node {}", eq,
                                  terms.size(), ins.size()));
  // Labels: letters as themselves, the k-th "..." dim (from the left of E) as 256 + k.
  int64_t E = 0;
  std::vector<std::vector<int>> labels(ins.size());
  auto parse = [&](const std::string& t, int64_t rank, std::vector<int>* out, int64_t* e_out) {
    const size_t dots = t.find("...");
    int64_t letters = 0;
    for (char ch : t)
      if (std::isalpha(static_cast<unsigned char>(ch)))
        ++letters;
      else if (ch != '.')
        unsupported(node, fmt::format("Einsum equation '{}'", eq));
    const int64_t e = dots == std::string::npos ? 0 : rank - letters;
    if (e < 0 || (dots == std::string::npos && letters != rank))
      unsupported(node, fmt::format("Einsum term '{}' does not match a rank-{} operand", t, rank));
    *e_out = e;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '.') {
        if (i == dots)
          for (int64_t k = 0; k < e; ++k) out->push_back(-static_cast<int>(e - k));
        continue;
      }
      out->push_back(t[i]);
    }
  };
  std::vector<int64_t> e_of(ins.size());
  for (size_t k = 0; k < ins.size(); ++k) {
    parse(terms[k], static_cast<int64_t>(ins[k]->shape.size()), &labels[k], &e_of[k]);
    E = std::max(E, e_of[k]);
  }
  // "..." dims as 256 + position from the left of the E broadcast dims (right-aligned).
  for (size_t k = 0; k < ins.size(); ++k)
    for (int& l : labels[k])
      if (l < 0) l = 256 + static_cast<int>(E) + l;  // -(e - j) -> 256 + E - e + j
  std::map<int, int64_t> extent;
  std::map<int, int> uses;
  for (size_t k = 0; k < ins.size(); ++k)
    for (size_t d = 0; d < labels[k].size(); ++d) {
      const int l = labels[k][d];
      const int64_t n = ins[k]->shape[d];
      auto it = extent.find(l);
      if (it == extent.end() || it->second == 1)
        extent[l] = n;
      else if (n != 1 && n != it->second)
        unsupported(node, fmt::format("Einsum label sizes {} and {} differ", it->second, n));
      ++uses[l];
    }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    int64_t e_out = 0;
    const std::string rhs = eq.substr(arrow + 2);
    const size_t dots = rhs.find("...");
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (rhs[i] == '.') {
        if (i == dots)
          for (int64_t k = 0; k < E; ++k) out_labels.push_back(256 + static_cast<int>(k));
        continue;
      }
      if (!extent.count(rhs[i]))
        unsupported(node, fmt::format("Einsum output label '{}' is not an input's", rhs[i]));
      out_labels.push_back(rhs[i]);
    }
    (void)e_out;
  } else {
    for (int64_t k = 0; k < E; ++k) out_labels.push_back(256 + static_cast<int>(k));
    for (const auto& [l, n] : uses)
      if (l < 256 && n == 1) out_labels.push_back(l);
  }
  const Shape& os = out0(node)->shape;
  if (os.size() != out_labels.size()) unsupported(node, "Einsum output rank differs");
  std::map<int, te::IterVar> raxes;
  std::vector<te::IterVar> rlist;
  for (const auto& [l, n] : extent)
    if (std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end()) {
      raxes[l] = te::reduce_axis(n, fmt::format("r{}", l));
      rlist.push_back(raxes[l]);
    }
  std::vector<te::Tensor> ts;
  for (const Value* v : ins) ts.push_back(ctx.input(v));
  return te::compute(node.name, os, [&](const std::vector<Expr>& o) {
    Expr prod;
    for (size_t k = 0; k < ins.size(); ++k) {
      std::vector<Expr> xi;
      for (size_t d = 0; d < labels[k].size(); ++d) {
        const int l = labels[k][d];
        if (ins[k]->shape[d] == 1 && extent[l] != 1) {
          xi.push_back(L::int_imm(0));
          continue;
        }
        auto it = std::find(out_labels.begin(), out_labels.end(), l);
        xi.push_back(it != out_labels.end() ? o[it - out_labels.begin()]
                                            : L::var_ref(raxes.at(l).var));
      }
      Expr v = te::read(ts[k], xi);
      prod = prod ? L::mul(prod, v) : v;
    }
    return rlist.empty() ? prod : te::sum(prod, rlist);
  });
}

// EyeLike (opset 9): the 2-D constant with ones on diagonal k (the input gives only the shape),
// copied from a compile-time constant; dtype the attribute's or the input's.
te::Tensor eyelike_compute(const Node& node, ComputeContext& ctx) {
  const Shape& os = out0(node)->shape;
  const DType dt = out0(node)->dtype;
  if (os.size() != 2) unsupported(node, "EyeLike of a non-2-D input");
  if (!dtype_is_float(dt) && !ctx.typed_values())
    unsupported(node, fmt::format("EyeLike of dtype {} on a target computing float tensors only",
                                  dtype_to_string(dt)));
  const int64_t k = node.attrs.get_int_or("k", 0, node.name);
  Tensor eye(dtype_is_float(dt) ? DType::f32 : dt, os);
  for (int64_t i = 0; i < os[0]; ++i)
    if (i + k >= 0 && i + k < os[1]) eye.set_from_double(i * os[1] + i + k, 1.0);
  te::Tensor e = ctx.derived_constant(node.name + ".eye", eye);
  return te::compute(node.name, os, [&](const std::vector<Expr>& i) { return te::read(e, i); });
}

// OneHot (opset 11): y[.., d, ..] (d on `axis`) = values[1] where the index at the other
// coordinates, normalised (idx < 0: idx + depth), equals d, else values[0]; depth a constant.
// Float indices are truncated toward zero first (as the reference casts them). An index outside
// [-depth, depth) matches nothing (off value), as in the reference.
te::Tensor onehot_compute(const Node& node, ComputeContext& ctx) {
  const Value* iv = node.input(0);
  const Value* vv = node.input(2);
  double depth_v;
  if (!scalar_constant(node.input(1), &depth_v)) unsupported(node, "depth must be a constant");
  const int64_t depth = static_cast<int64_t>(depth_v);
  const Shape& os = out0(node)->shape;
  const int64_t orank = static_cast<int64_t>(os.size());
  int64_t axis = node.attrs.get_int_or("axis", -1, node.name);
  if (axis < 0) axis += orank;
  const bool float_idx = dtype_is_float(iv->dtype);
  te::Tensor idx = ctx.input(iv);
  te::Tensor iota =
      float_idx ? float_iota(node, ctx, depth) : iota_constant(node, ctx, iv->dtype, depth);
  te::Tensor norm = te::compute(node.name + ".index", iv->shape, [&](const std::vector<Expr>& i) {
    Expr x = te::read(idx, i);
    if (float_idx)
      x = L::select(L::lt(x, L::float_imm(0.0)),
                    L::call(CallOp::neg, L::call(CallOp::floor, L::call(CallOp::neg, x))),
                    L::call(CallOp::floor, x));
    return L::select(L::lt(x, L::float_imm(0.0)),
                     L::add(x, L::float_imm(static_cast<double>(depth))), x);
  });
  Operand off, on;
  if (vv->constant && vv->constant->numel() == 2) {
    off.is_imm = on.is_imm = true;
    off.imm = vv->constant->get_as_double(0);
    on.imm = vv->constant->get_as_double(1);
  }
  te::Tensor values = off.is_imm ? nullptr : ctx.input(vv);
  const size_t vrank = vv->shape.size();
  auto value_at = [&](int64_t k) -> Expr {
    if (off.is_imm) return L::float_imm(k ? on.imm : off.imm);
    std::vector<Expr> vi(vrank, L::int_imm(0));
    if (vrank) vi.back() = L::int_imm(k);
    return te::read(values, vi);
  };
  return te::compute(node.name, os, [&](const std::vector<Expr>& o) {
    std::vector<Expr> ii;
    for (int64_t d = 0; d < orank; ++d)
      if (d != axis) ii.push_back(o[d]);
    Expr hit = L::eq(te::read(norm, ii), te::read(iota, {o[axis]}));
    return L::select(hit, value_at(1), value_at(0));
  });
}

// Mod (opset 13) of floats, which ONNX defines for fmod=1 only (C fmod): x - trunc(x / y) y,
// trunc(q) = q < 0 ? ceil(q) : floor(q); integers: mod_compute. The quotient is rounded to the
// storage format before it is truncated, so a quotient within its rounding of an integer may
// truncate to the neighbouring integer (an error of |y|).
te::Tensor any_mod_compute(const Node& node, ComputeContext& ctx) {
  if (!dtype_is_float(node.input(0)->dtype)) return mod_compute(node, ctx);
  if (node.attrs.get_int_or("fmod", 0, node.name) == 0)
    unsupported(node, "Mod of floats needs fmod=1 (ONNX Mod)");
  return binary(node, ctx, [](Expr x, Expr y) {
    Expr q = L::fdiv(x, y);
    Expr n =
        L::select(L::lt(q, L::float_imm(0.0)), L::call(CallOp::ceil, q), L::call(CallOp::floor, q));
    return L::sub(x, L::mul(n, y));
  });
}

// Pow (opset 15) of a float base by a run-time exponent tensor y (float, or integer converted to
// float; a scalar constant: pow_compute); an integer base is refused:
// exp(y log|x|), 1 where y == 0 (also for x = 0 or NaN); for x < 0 the sign (-1)^y for an
// integral y (y / 2 - round(y / 2) = +-0.5 for odd y) and NaN for a non-integral one. The
// relative error grows with |y log x| (exp of a rounded exponent).
te::Tensor pow_tensor_compute(const Node& node, ComputeContext& ctx) {
  double c;
  const Value* xv = node.input(0);
  const Value* yv = node.input(1);
  if (!dtype_is_float(xv->dtype))
    unsupported(node, fmt::format("Pow of an integer base ('{}' is {}) is not compiled: its exact "
                                  "integer power by a run-time exponent has no vector form",
                                  xv->name, dtype_to_string(xv->dtype)));
  if (scalar_constant(yv, &c)) return pow_compute(node, ctx);
  Operand xo = operand(xv, ctx);
  Operand yo = operand(yv, ctx);
  if (!dtype_is_float(yv->dtype)) {
    // An integer exponent tensor is converted to float first (the reference's pow(x, T(y))).
    te::Tensor yi = ctx.input(yv);
    yo.tensor = te::compute(
        node.name + ".exponent", yv->shape,
        [&](const std::vector<Expr>& i) { return te::read(yi, i); }, "", DType::f32);
  }
  return elementwise(node, ctx, [&](const std::vector<Expr>& i) {
    Expr x = xo.at(i), y = yo.at(i);
    Expr mag = L::call(CallOp::exp, L::mul(y, L::call(CallOp::log, L::call(CallOp::abs, x))));
    Expr half = L::mul(y, L::float_imm(0.5));
    Expr odd = L::ne(L::call(CallOp::round, half), half);
    Expr integral = L::eq(L::call(CallOp::round, y), y);
    Expr neg = L::select(integral, L::select(odd, L::call(CallOp::neg, mag), mag),
                         L::float_imm(std::nan("")));
    return L::select(L::eq(y, L::float_imm(0.0)), L::float_imm(1.0),
                     L::select(L::lt(x, L::float_imm(0.0)), neg, mag));
  });
}

// ---- Scatter, GatherND, BitShift, ReverseSequence (issue #15) ----------------------------------
// The NPU has no data-dependent addressing, so each of these compares run-time index values with
// compile-time index constants (iota tensors: the vector unit compares data, not loop indices)
// and selects, as Gather does (gather_compute).

/// idx < 0 ? idx + K : idx (ONNX: a negative index counts from the end of an axis of K).
Expr normalized_index(Expr x, int64_t K) {
  return L::select(L::lt(x, L::float_imm(0.0)), L::add(x, L::float_imm(static_cast<double>(K))), x);
}

/// The `reduction` attribute of ScatterElements / ScatterND: none, add or mul (the reference's
/// set); tessel::Unsupported naming the node otherwise.
std::string scatter_reduction_attr(const Node& node) {
  const std::string r = node.attrs.get_string_or("reduction", "none", node.name);
  if (r != "none" && r != "add" && r != "mul")
    unsupported(node, fmt::format("reduction '{}' (supported: none, add, mul)", r));
  return r;
}

void expect_index_dtype(const Node& node, const Value* iv) {
  if (iv->dtype != DType::i32 && iv->dtype != DType::i64)
    unsupported(node, fmt::format("indices of dtype {} (expected int32 or int64)",
                                  dtype_to_string(iv->dtype)));
}

/// The integer constant [0, 1, ..., T-1] of shape `shape` (NAME.order): the position of each
/// index tuple in index order, compared as data to find the last update of an element.
te::Tensor order_constant(const Node& node, ComputeContext& ctx, const Shape& shape) {
  Tensor values(DType::i64, shape);
  for (int64_t k = 0; k < values.numel(); ++k) values.set_from_double(k, static_cast<double>(k));
  return ctx.derived_constant(node.name + ".order", values);
}

constexpr int64_t kMaxUnrolledUpdates = 256;

/// The scatter result from `hit(o, t)` (update t lands on output element o), `update(o, t)` (its
/// value) and `order(t)` (t's position in index order) over the update axes `axes` of extents
/// `extents`: reduction none: the last update in index order (reference semantics for
/// duplicates) -- last = max_t (hit ? order(t) : -1), then sum_t (order(t) == last ? update : 0)
/// where last >= 0, else data; add: data + sum_t (hit ? update : 0); mul: data times the product
/// of the hitting updates, unrolled (no product combiner; at most kMaxUnrolledUpdates updates).
te::Tensor scatter_result(
    const Node& node, const std::string& reduction, const te::Tensor& data,
    const std::vector<int64_t>& extents,
    const std::function<Expr(const std::vector<Expr>&, const std::vector<Expr>&)>& hit,
    const std::function<Expr(const std::vector<Expr>&, const std::vector<Expr>&)>& update,
    const std::function<Expr(const std::vector<Expr>&)>& order) {
  const Shape& os = out0(node)->shape;
  int64_t count = 1;
  for (int64_t e : extents) count *= e;
  if (reduction == "mul" || extents.empty()) {
    if (count > kMaxUnrolledUpdates)
      unsupported(node, fmt::format("ScatterND/ScatterElements reduction '{}' over {} updates "
                                    "(at most {} are unrolled)",
                                    reduction, count, kMaxUnrolledUpdates));
    return te::compute(node.name, os, [&](const std::vector<Expr>& o) {
      Expr r = te::read(data, o);
      for (int64_t c = 0; c < count; ++c) {
        std::vector<Expr> t(extents.size());
        int64_t rest = c;
        for (int k = static_cast<int>(extents.size()) - 1; k >= 0; --k) {
          t[k] = L::int_imm(rest % extents[k]);
          rest /= extents[k];
        }
        Expr u = update(o, t);
        Expr v = reduction == "mul" ? L::mul(r, u) : reduction == "add" ? L::add(r, u) : u;
        r = L::select(hit(o, t), v, r);
      }
      return r;
    });
  }
  std::vector<te::IterVar> axes;
  for (size_t k = 0; k < extents.size(); ++k)
    axes.push_back(te::reduce_axis(extents[k], fmt::format("u{}", k)));
  auto vars = [&] {
    std::vector<Expr> t;
    for (const auto& a : axes) t.push_back(L::var_ref(a.var));
    return t;
  };
  if (reduction == "add") {
    te::Tensor s = te::compute(node.name + ".sum", os, [&](const std::vector<Expr>& o) {
      const auto t = vars();
      return te::sum(L::select(hit(o, t), update(o, t), L::float_imm(0.0)), axes);
    });
    return te::compute(node.name, os, [&](const std::vector<Expr>& o) {
      return L::add(te::read(data, o), te::read(s, o));
    });
  }
  te::Tensor last = te::compute(node.name + ".last", os, [&](const std::vector<Expr>& o) {
    const auto t = vars();
    return te::max_reduce(L::select(hit(o, t), order(t), L::float_imm(-1.0)), axes);
  });
  std::vector<te::IterVar> axes2;
  for (size_t k = 0; k < extents.size(); ++k)
    axes2.push_back(te::reduce_axis(extents[k], fmt::format("w{}", k)));
  te::Tensor val = te::compute(node.name + ".value", os, [&](const std::vector<Expr>& o) {
    std::vector<Expr> t;
    for (const auto& a : axes2) t.push_back(L::var_ref(a.var));
    return te::sum(L::select(L::eq(order(t), te::read(last, o)), update(o, t), L::float_imm(0.0)),
                   axes2);
  });
  return te::compute(node.name, os, [&](const std::vector<Expr>& o) {
    return L::select(L::le(L::float_imm(0.0), te::read(last, o)), te::read(val, o),
                     te::read(data, o));
  });
}

// ScatterElements (opset 18 without max/min) and Scatter (opset 9, deprecated: ScatterElements
// without reduction): out = data, then for each index position q of `indices`,
// out[q with q[axis] = idx[q]] = updates[q] (reduction add: +=, mul: *=), in index order. The
// update j along the axis lands on output element o when o agrees with q off the axis (o[d] <
// indices.shape[d]: a padded read of the indices gives an index that matches nothing) and the
// normalised idx[o with o[axis] = j] equals o[axis] (read from a constant iota). O(J) vector
// work per output element, J = indices.shape[axis]. An index outside [-K, K) updates nothing
// (the reference reports an error).
te::Tensor scatter_elements_compute(const Node& node, ComputeContext& ctx) {
  const Value* dv = node.input(0);
  const Value* iv = node.input(1);
  const Value* uv = node.input(2);
  if (!dv || !iv || !uv) unsupported(node, "needs data, indices and updates");
  expect_index_dtype(node, iv);
  const std::string reduction =
      node.op_type == "Scatter" ? std::string("none") : scatter_reduction_attr(node);
  const int64_t rank = static_cast<int64_t>(dv->shape.size());
  const int64_t axis = axis_attr(node, rank);
  if (iv->shape != uv->shape || static_cast<int64_t>(iv->shape.size()) != rank)
    unsupported(node, "indices and updates must have data's rank and one shape");
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && iv->shape[d] > dv->shape[d])
      unsupported(node, fmt::format("indices shape {} exceeds data shape {} on axis {}",
                                    shape_to_string(iv->shape), shape_to_string(dv->shape), d));
  const int64_t K = dv->shape[axis], J = iv->shape[axis];
  te::Tensor data = ctx.input(dv);
  te::Tensor idx = ctx.input(iv);
  te::Tensor upd = ctx.input(uv);
  te::Tensor iota = iota_constant(node, ctx, iv->dtype, std::max(K, J));
  const double no_index = -static_cast<double>(K + 1);  // normalises to -1: matches nothing
  auto q_of = [axis](std::vector<Expr> o, const Expr& j) {
    o[axis] = j;
    return o;
  };
  return scatter_result(
      node, reduction, data, {J},
      [&](const std::vector<Expr>& o, const std::vector<Expr>& t) {
        Expr x = normalized_index(te::read_padded(idx, q_of(o, t[0]), no_index), K);
        return L::eq(x, te::read(iota, {o[axis]}));
      },
      [&](const std::vector<Expr>& o, const std::vector<Expr>& t) {
        return te::read_padded(upd, q_of(o, t[0]), 0.0);
      },
      [&](const std::vector<Expr>& t) { return te::read(iota, {t[0]}); });
}

// ScatterND (opset 18 without max/min): out = data, then for each index tuple t (the leading
// dims of `indices`, last dim L), out[idx[t], s..] = updates[t, s..] (add: +=, mul: *=), in index
// order. Tuple t lands on output element o when every normalised idx[t, k] equals o[k], k < L
// (o[k] read from a constant iota). O(T) vector work per output element, T the number of tuples.
te::Tensor scatter_nd_compute(const Node& node, ComputeContext& ctx) {
  const Value* dv = node.input(0);
  const Value* iv = node.input(1);
  const Value* uv = node.input(2);
  if (!dv || !iv || !uv) unsupported(node, "needs data, indices and updates");
  expect_index_dtype(node, iv);
  const std::string reduction = scatter_reduction_attr(node);
  const Shape& ds = dv->shape;
  const Shape& is = iv->shape;
  if (is.empty()) unsupported(node, "indices must have rank >= 1");
  const int64_t L_ = is.back();
  const int64_t r = static_cast<int64_t>(ds.size());
  if (L_ < 1 || L_ > r)
    unsupported(node, fmt::format("indices.shape[-1] = {} of a rank-{} data", L_, r));
  Shape tuples(is.begin(), is.end() - 1);
  Shape us = tuples;
  us.insert(us.end(), ds.begin() + L_, ds.end());
  if (uv->shape != us)
    unsupported(node, fmt::format("updates shape {}, expected {}", shape_to_string(uv->shape),
                                  shape_to_string(us)));
  int64_t longest = 1;
  for (int64_t k = 0; k < L_; ++k) longest = std::max(longest, ds[k]);
  te::Tensor data = ctx.input(dv);
  te::Tensor idx = ctx.input(iv);
  te::Tensor upd = ctx.input(uv);
  te::Tensor iota = iota_constant(node, ctx, iv->dtype, longest);
  te::Tensor order = tuples.empty() ? nullptr : order_constant(node, ctx, tuples);
  return scatter_result(
      node, reduction, data, tuples,
      [&](const std::vector<Expr>& o, const std::vector<Expr>& t) {
        Expr all;
        for (int64_t k = 0; k < L_; ++k) {
          std::vector<Expr> ii = t;
          ii.push_back(L::int_imm(k));
          Expr e = L::eq(normalized_index(te::read(idx, ii), ds[k]), te::read(iota, {o[k]}));
          all = all ? L::logical_and(all, e) : e;
        }
        return all;
      },
      [&](const std::vector<Expr>& o, const std::vector<Expr>& t) {
        std::vector<Expr> ui = t;
        ui.insert(ui.end(), o.begin() + L_, o.end());
        return te::read(upd, ui);
      },
      [&](const std::vector<Expr>& t) { return te::read(order, t); });
}

// GatherND (opset 13): out[b.., t.., s..] = data[b.., idx[b.., t..], s..] (batch_dims b, index
// tuples of L = indices.shape[-1] components, negative components counted from the end). As
// gather_compute, a one-hot reduction over the L indexed axes: sum over r of (every normalised
// idx[.., k] == r_k ? data[b.., r, s..] : 0). O(prod of the indexed extents) vector work per
// output element; an index out of range selects nothing (0).
te::Tensor gather_nd_compute(const Node& node, ComputeContext& ctx) {
  const Value* dv = node.input(0);
  const Value* iv = node.input(1);
  expect_index_dtype(node, iv);
  const Shape& ds = dv->shape;
  const Shape& is = iv->shape;
  const int64_t b = node.attrs.get_int_or("batch_dims", 0, node.name);
  const int64_t r = static_cast<int64_t>(ds.size()), q = static_cast<int64_t>(is.size());
  if (q < 1 || r < 1 || b < 0 || b >= std::min(q, r))
    unsupported(node, fmt::format("batch_dims {} with data rank {} and indices rank {}", b, r, q));
  const int64_t L_ = is.back();
  if (L_ < 1 || L_ > r - b)
    unsupported(node, fmt::format("indices.shape[-1] = {} (expected 1..{})", L_, r - b));
  int64_t longest = 1;
  for (int64_t k = 0; k < L_; ++k) longest = std::max(longest, ds[b + k]);
  te::Tensor data = ctx.input(dv);
  te::Tensor idx = ctx.input(iv);
  te::Tensor iota = iota_constant(node, ctx, iv->dtype, longest);
  std::vector<te::IterVar> axes;
  for (int64_t k = 0; k < L_; ++k)
    axes.push_back(te::reduce_axis(ds[b + k], fmt::format("r{}", k)));
  const int64_t m = q - 1;  // output dims that index the tuples
  return te::compute(node.name, out0(node)->shape, [&](const std::vector<Expr>& o) {
    Expr all;
    std::vector<Expr> di(o.begin(), o.begin() + b);
    for (int64_t k = 0; k < L_; ++k) {
      std::vector<Expr> ii(o.begin(), o.begin() + m);
      ii.push_back(L::int_imm(k));
      Expr e = L::eq(normalized_index(te::read(idx, ii), ds[b + k]),
                     te::read(iota, {L::var_ref(axes[k].var)}));
      all = all ? L::logical_and(all, e) : e;
      di.push_back(L::var_ref(axes[k].var));
    }
    di.insert(di.end(), o.begin() + m, o.end());
    return te::sum(L::select(all, te::read(data, di), L::float_imm(0.0)), axes);
  });
}

// BitShift (opset 11) of unsigned integers: x << y = x * 2^y (wrapping), x >> y = x / 2^y
// (truncating), 2^y looked up in a constant table of the powers 2^0 .. 2^(bits-1) by a one-hot
// sum over y == k; a shift by bits or more finds no power, the factor is 0 and the result 0 (as
// the reference: x * 0, and x / 0 = 0 on both targets).
te::Tensor bitshift_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const Value* yv = node.input(1);
  const DType dt = xv->dtype;
  if (dt != DType::u8 && dt != DType::u16 && dt != DType::u32 && dt != DType::u64)
    unsupported(node,
                fmt::format("BitShift of dtype {} (expected uint8..uint64)", dtype_to_string(dt)));
  if (yv->dtype != dt) unsupported(node, "BitShift operands of different dtypes");
  const std::string dir = node.attrs.get_string_or("direction", "", node.name);
  if (dir != "LEFT" && dir != "RIGHT")
    unsupported(node, fmt::format("direction '{}' (expected LEFT or RIGHT)", dir));
  const int64_t bits = static_cast<int64_t>(dtype_size(dt)) * 8;
  Tensor pow2(dt, {bits});
  for (int64_t k = 0; k < bits; ++k) pow2.set_from_double(k, std::ldexp(1.0, static_cast<int>(k)));
  te::Tensor powers = ctx.derived_constant(node.name + ".pow2", pow2);
  te::Tensor iota = iota_constant(node, ctx, dt, bits);
  te::Tensor y = ctx.input(yv);
  te::IterVar k = te::reduce_axis(bits, "k");
  te::Tensor factor =
      te::compute(node.name + ".factor", yv->shape, [&](const std::vector<Expr>& i) {
        Expr hit = L::eq(te::read(y, i), te::read(iota, {L::var_ref(k.var)}));
        return te::sum(L::select(hit, te::read(powers, {L::var_ref(k.var)}), L::float_imm(0.0)),
                       {k});
      });
  te::Tensor x = ctx.input(xv);
  return te::compute(node.name, out0(node)->shape, [&](const std::vector<Expr>& o) {
    Expr a = bcast_read(x, o), f = bcast_read(factor, o);
    return dir == "LEFT" ? L::mul(a, f) : L::fdiv(a, f);
  });
}

// ReverseSequence (opset 10): out[t, b] = x[len[b] - 1 - t, b] for t < len[b], else x[t, b]
// (time_axis / batch_axis 0 and 1 in either order, trailing dims carried along). The source time
// src = t < len ? len - 1 - t : t is integer data (t from a constant iota), and the read a one-hot
// sum over the time axis: sum_s (s == src ? x[s, b] : 0). O(T) vector work per element.
te::Tensor reverse_sequence_compute(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const Value* lv = node.input(1);
  const int64_t ta = node.attrs.get_int_or("time_axis", 0, node.name);
  const int64_t ba = node.attrs.get_int_or("batch_axis", 1, node.name);
  const Shape& xs = xv->shape;
  if (xs.size() < 2 || !((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
    unsupported(
        node, fmt::format("time_axis {} and batch_axis {} of a rank-{} input", ta, ba, xs.size()));
  if (lv->dtype != DType::i64 && lv->dtype != DType::i32)
    unsupported(node, fmt::format("sequence_lens of dtype {}", dtype_to_string(lv->dtype)));
  const int64_t T = xs[ta];
  te::Tensor x = ctx.input(xv);
  te::Tensor lens = ctx.input(lv);
  te::Tensor iota = iota_constant(node, ctx, lv->dtype, T);
  te::Tensor src = te::compute(node.name + ".src", {xs[0], xs[1]}, [&](const std::vector<Expr>& i) {
    Expr t = te::read(iota, {i[ta]});
    Expr len = te::read(lens, {i[ba]});
    return L::select(L::lt(t, len), L::sub(L::sub(len, L::float_imm(1.0)), t), t);
  });
  te::IterVar s = te::reduce_axis(T, "s");
  return te::compute(node.name, xs, [&](const std::vector<Expr>& o) {
    std::vector<Expr> xi = o;
    xi[ta] = L::var_ref(s.var);
    Expr hit = L::eq(te::read(iota, {L::var_ref(s.var)}), te::read(src, {o[0], o[1]}));
    return te::sum(L::select(hit, te::read(x, xi), L::float_imm(0.0)), {s});
  });
}

void add_more_computes(std::map<std::string, ComputeFn>& m) {
  auto un = [&](const char* op, std::function<Expr(Expr)> f) {
    m[op] = [f](const Node& n, ComputeContext& c) { return unary(n, c, f); };
  };
  m["Shrink"] = shrink_compute;
  m["ThresholdedRelu"] = [](const Node& n, ComputeContext& c) {
    const double alpha = n.attrs.get_float_or("alpha", 1.0f, n.name);
    return unary(n, c, [alpha](Expr x) {
      return L::select(L::lt(L::float_imm(alpha), x), x, L::float_imm(0.0));
    });
  };
  // Sign: 1, -1, or x itself (0, -0, NaN).
  un("Sign", [](Expr x) {
    return L::select(L::lt(L::float_imm(0.0), x), L::float_imm(1.0),
                     L::select(L::lt(x, L::float_imm(0.0)), L::float_imm(-1.0), x));
  });
  un("Floor", [](Expr x) { return L::call(CallOp::floor, x); });
  un("Ceil", [](Expr x) { return L::call(CallOp::ceil, x); });
  un("Round", [](Expr x) { return L::call(CallOp::round, x); });
  un("Sin", [](Expr x) { return L::call(CallOp::sin, x); });
  un("Cos", [](Expr x) { return L::call(CallOp::cos, x); });
  un("Tan", [](Expr x) { return L::fdiv(L::call(CallOp::sin, x), L::call(CallOp::cos, x)); });
  un("Atan", [](Expr x) { return L::call(CallOp::atan, x); });
  // asin x = atan(x / sqrt((1 - x)(1 + x))) (inf at |x| = 1 gives +-pi/2); acos x =
  // 2 atan(sqrt((1 - x) / (1 + x))) (no cancellation near x = 1; x = -1 gives 2 atan(inf) = pi).
  un("Asin", [](Expr x) {
    Expr d = L::mul(L::sub(L::float_imm(1.0), x), L::add(L::float_imm(1.0), x));
    return L::call(CallOp::atan, L::mul(x, L::call(CallOp::rsqrt, d)));
  });
  un("Acos", [](Expr x) {
    Expr r = L::fdiv(L::sub(L::float_imm(1.0), x), L::add(L::float_imm(1.0), x));
    return L::mul(L::call(CallOp::atan, L::call(CallOp::sqrt, r)), L::float_imm(2.0));
  });
  m["ReduceProd"] = reduce_prod_compute;
  m["CumSum"] = cumsum_compute;
  m["Hardmax"] = hardmax_compute;
  m["Einsum"] = einsum_compute;
  m["EyeLike"] = eyelike_compute;
  m["OneHot"] = onehot_compute;
  m["Mod"] = any_mod_compute;
  m["Pow"] = pow_tensor_compute;
}

// Computes of targets with typed values (ComputeContext::typed_values, the NPU): comparisons
// (bool results), logic on bools, Where and Cast (conversion rules of ONNX Cast; the instruction
// semantics in docs/isa.md). Greater/GreaterOrEqual are Less/LessOrEqual with swapped operands,
// Xor of bools is !=, Not is == 0.
const std::map<std::string, ComputeFn>& typed_computes() {
  static const std::map<std::string, ComputeFn> table = [] {
    std::map<std::string, ComputeFn> m;
    auto bin = [&](const char* op, std::function<Expr(Expr, Expr)> f) {
      m[op] = [f](const Node& n, ComputeContext& c) { return binary(n, c, f); };
    };
    bin("Equal", [](Expr a, Expr b) { return L::eq(a, b); });
    bin("Less", [](Expr a, Expr b) { return L::lt(a, b); });
    bin("LessOrEqual", [](Expr a, Expr b) { return L::le(a, b); });
    bin("Greater", [](Expr a, Expr b) { return L::lt(b, a); });
    bin("GreaterOrEqual", [](Expr a, Expr b) { return L::le(b, a); });
    bin("And", [](Expr a, Expr b) { return L::logical_and(a, b); });
    bin("Or", [](Expr a, Expr b) { return L::logical_or(a, b); });
    bin("Xor", [](Expr a, Expr b) { return L::ne(a, b); });
    m["Not"] = [](const Node& n, ComputeContext& c) {
      return unary(n, c, [](Expr x) { return L::eq(x, L::float_imm(0.0)); });
    };
    m["Where"] = [](const Node& n, ComputeContext& c) {
      Operand cond = operand(n.input(0), c);
      Operand x = operand(n.input(1), c);
      Operand y = operand(n.input(2), c);
      return elementwise(n, c, [&](const std::vector<Expr>& i) {
        return L::select(cond.at(i), x.at(i), y.at(i));
      });
    };
    m["Cast"] = [](const Node& n, ComputeContext& c) {
      const DType to = out0(n)->dtype;
      te::Tensor x = c.input(n.input(0));
      return te::compute(
          n.name, out0(n)->shape, [&](const std::vector<Expr>& i) { return te::read(x, i); }, "",
          dtype_is_float(to) ? DType::f32 : to);
    };
    m["ArgMax"] = arg_compute;
    m["ArgMin"] = arg_compute;
    m["Trilu"] = trilu_compute;
    m["Mod"] = mod_compute;
    m["Gather"] = gather_compute;
    m["GatherElements"] = gather_compute;
    add_more_typed_computes(m);
    return m;
  }();
  return table;
}

void add_more_typed_computes(std::map<std::string, ComputeFn>& m) {
  // CastLike (opset 15): Cast to the dtype of its second input (already the output's).
  m["CastLike"] = m.at("Cast");
  m["ScatterElements"] = scatter_elements_compute;
  m["Scatter"] = scatter_elements_compute;
  m["ScatterND"] = scatter_nd_compute;
  m["GatherND"] = gather_nd_compute;
  m["BitShift"] = bitshift_compute;
  m["ReverseSequence"] = reverse_sequence_compute;
  // IsNaN: x != x. IsInf (opset 10): x == +inf (detect_positive, default 1) or x == -inf
  // (detect_negative, default 1).
  m["IsNaN"] = [](const Node& n, ComputeContext& c) {
    return unary(n, c, [](Expr x) { return L::ne(x, x); });
  };
  m["IsInf"] = [](const Node& n, ComputeContext& c) {
    const bool pos = n.attrs.get_int_or("detect_positive", 1, n.name) != 0;
    const bool neg = n.attrs.get_int_or("detect_negative", 1, n.name) != 0;
    return unary(n, c, [pos, neg](Expr x) -> Expr {
      Expr p = L::eq(x, L::float_imm(INFINITY));
      Expr q = L::eq(x, L::float_imm(-INFINITY));
      if (pos && neg) return L::logical_or(p, q);
      if (pos) return p;
      if (neg) return q;
      return L::logical_and(p, q);  // neither detected: never true
    });
  };
}

}  // namespace

/// Ops whose computes are exact on integer tensors (wrapping arithmetic, truncating division,
/// data movement, comparisons): a typed target takes integer and bool inputs for these.
bool exact_on_integers(const std::string& op) {
  static const std::set<std::string> ops = {"Add",
                                            "Sub",
                                            "Mul",
                                            "Div",
                                            "Min",
                                            "Max",
                                            "Sum",
                                            "Abs",
                                            "Neg",
                                            "Relu",
                                            "Identity",
                                            "Transpose",
                                            "Slice",
                                            "Expand",
                                            "Equal",
                                            "Less",
                                            "LessOrEqual",
                                            "Greater",
                                            "GreaterOrEqual",
                                            "And",
                                            "Or",
                                            "Xor",
                                            "Not",
                                            "Where",
                                            "Cast",
                                            "Squeeze",
                                            "Unsqueeze",
                                            "Reshape",
                                            "Flatten",
                                            "Concat",
                                            "Tile",
                                            "Gather",
                                            "ArgMax",
                                            "ArgMin",
                                            "Clip",
                                            "MaxPool",
                                            "Trilu",
                                            "Mod",
                                            "GatherElements",
                                            "ScatterElements",
                                            "Scatter",
                                            "ScatterND",
                                            "GatherND",
                                            "BitShift",
                                            "ReverseSequence",
                                            "Pow"};
  // OneHot's indices, EyeLike's input (its shape only), CastLike's inputs.
  return ops.count(op) > 0 || op == "OneHot" || op == "EyeLike" || op == "CastLike";
}

std::vector<std::string> typed_compute_ops() {
  std::vector<std::string> names;
  for (const auto& [k, v] : typed_computes()) names.push_back(k);
  return names;
}

bool is_alias_op(const Node& node) {
  static const std::set<std::string> alias = {"Reshape",   "Flatten",  "Squeeze",
                                              "Unsqueeze", "Identity", "Dropout"};
  if (alias.count(node.op_type)) return true;
  if (node.op_type == "Cast" || node.op_type == "CastLike") {
    const Value* in = node.input(0);
    const Value* out = node.outputs.at(0);
    return in && dtype_is_float(in->dtype) && dtype_is_float(out->dtype);
  }
  return false;
}

te::Tensor op_compute(const Node& node, ComputeContext& ctx) {
  const auto& table = computes();
  auto it = table.find(node.op_type);
  if (it == table.end() && ctx.typed_values()) {
    auto t = typed_computes().find(node.op_type);
    if (t != typed_computes().end()) it = t;
  }
  const auto parts = parts_ops();
  if (it == table.end() && std::find(parts.begin(), parts.end(), node.op_type) != parts.end())
    throw Unsupported(fmt::format("{}: {} is compiled as several kernels (op_parts)",
                                  node.describe(), node.op_type));
  if (it == table.end() &&
      (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan"))
    throw Unsupported(fmt::format(
        "{}: control flow is compiled when its path is known at compile time (an If's condition, "
        "a Loop's trip count; bind the inputs they depend on, e.g. with --input-shape); this one "
        "is not",
        node.describe()));
  if (it == table.end())
    throw Unsupported(
        fmt::format("{}: op '{}' has no compute definition (no lowering for compiled "
                    "targets)",
                    node.describe(), node.op_type));
  for (const Value* v : node.inputs) {
    if (!v || dtype_is_float(v->dtype)) continue;
    if (!ctx.typed_values()) {
      if (!v->constant)
        unsupported(node,
                    fmt::format("input '{}' has dtype {}; compiled targets take float tensors",
                                v->name, dtype_to_string(v->dtype)));
    } else if (!exact_on_integers(node.op_type) && !v->constant) {
      unsupported(node, fmt::format("input '{}' has dtype {}; {} is compiled for float tensors "
                                    "only",
                                    v->name, dtype_to_string(v->dtype), node.op_type));
    }
  }
  return it->second(node, ctx);
}

bool resize_repeats_pixels(const Node& node, std::string* why) {
  auto no = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  const Value* xv = node.input(0);
  const Value* yv = node.outputs.at(0);
  if (node.op_type != "Resize" || !xv || !yv) return no("not a Resize");
  const std::string mode = node.attrs.get_string_or("mode", "nearest", node.name);
  const std::string ctm =
      node.attrs.get_string_or("coordinate_transformation_mode", "half_pixel", node.name);
  const std::string nm = node.attrs.get_string_or("nearest_mode", "round_prefer_floor", node.name);
  // Nearest resizing by an integer factor s picks source pixel floor(x / s) (x = s q + r) in
  // these modes: asymmetric + floor (x / s = q + r / s); half_pixel and pytorch_half_pixel
  // with round_prefer_floor/ceil ((x + 0.5) / s - 0.5 = q + d with |d| < 0.5, which rounds to
  // q); tf_half_pixel_for_nn + floor ((x + 0.5) / s = q + d with 0 < d < 1).
  const bool half_pixel = ctm == "half_pixel" || ctm == "pytorch_half_pixel";
  const bool picks_floor =
      mode == "nearest" &&
      ((ctm == "asymmetric" && nm == "floor") ||
       (half_pixel && (nm == "round_prefer_floor" || nm == "round_prefer_ceil")) ||
       (ctm == "tf_half_pixel_for_nn" && nm == "floor"));
  if (!picks_floor)
    return no(
        fmt::format("Resize mode={} coordinate_transformation_mode={} nearest_mode={} is "
                    "not pixel repetition (it is compiled as MatMuls by resize_as_matmul)",
                    mode, ctm, nm));
  if (xv->shape.size() != 4) return no("Resize of a non-4-D tensor");
  const Shape& os = yv->shape;
  for (size_t d = 0; d < 4; ++d) {
    if (xv->shape[d] < 1 || os[d] % xv->shape[d] != 0)
      return no(
          fmt::format("Resize by a non-integer factor {}/{} on axis {}", os[d], xv->shape[d], d));
    if (d < 2 && os[d] != xv->shape[d]) return no("Resize along N or C");
  }
  return true;
}

std::vector<OpPart> op_parts(const Node& node, ComputeContext& ctx) {
  std::vector<OpPart> parts;
  const Value* out = node.outputs.at(0);
  const Shape& os = out->shape;
  std::vector<int64_t> ostr(os.size(), 1);
  for (int d = static_cast<int>(os.size()) - 2; d >= 0; --d) ostr[d] = ostr[d + 1] * os[d + 1];
  auto copy_of = [&](const te::Tensor& src, const std::string& name) {
    return te::compute(name, src->shape,
                       [&](const std::vector<Expr>& i) { return te::read(src, i); });
  };
  if (node.op_type == "DepthToSpace") return {depth_to_space_part(node, ctx)};
  if (node.op_type == "SpaceToDepth") return {space_to_depth_part(node, ctx)};
  if (node.op_type == "Tile") return {tile_part(node, ctx)};
  if (node.op_type == "Pad") return pad_is_single_kernel(node) ? parts : pad_parts(node, ctx);
  if (node.op_type == "Concat") {
    int64_t axis = node.attrs.get_int("axis", node.name);
    if (axis < 0) axis += static_cast<int64_t>(os.size());
    int64_t offset = 0;
    for (const Value* v : node.inputs) {
      if (!v || v->shape[axis] == 0) continue;
      te::Tensor src = ctx.input(v);
      parts.push_back({copy_of(src, fmt::format("{}.part{}", node.name, offset)), v->shape, ostr,
                       offset * ostr[axis]});
      offset += v->shape[axis];
    }
    return parts;
  }
  if (node.op_type == "Resize") {
    const Value* xv = node.input(0);
    std::string why;
    if (!resize_repeats_pixels(node, &why)) unsupported(node, why);
    std::vector<int64_t> scale(4);
    for (size_t d = 0; d < 4; ++d) scale[d] = os[d] / xv->shape[d];
    te::Tensor src = ctx.input(xv);
    // One part per row phase a: output rows a, a + sh, ... as a [N, C, H, W, sw] tensor whose
    // last axis repeats the source pixel (out[n][c][y*sh + a][x*sw + b] = x[n][c][y][x]), so each
    // part writes whole output rows: contiguous DRAM runs instead of every sw-th element.
    const Shape& xs = xv->shape;
    for (int64_t a = 0; a < scale[2]; ++a) {
      te::Tensor rows =
          te::compute(fmt::format("{}.row{}", node.name, a), {xs[0], xs[1], xs[2], xs[3], scale[3]},
                      [&](const std::vector<Expr>& i) {
                        return te::read(src, {i[0], i[1], i[2], i[3]});
                      });
      parts.push_back({rows,
                       {xs[0], xs[1], xs[2], xs[3], scale[3]},
                       {ostr[0], ostr[1], ostr[2] * scale[2], ostr[3] * scale[3], ostr[3]},
                       a * ostr[2]});
    }
    return parts;
  }
  if (node.op_type == "ConvTranspose") {
    const Value* xv = node.input(0);
    const Value* wv = node.input(1);  // [Cin, Cout/group, KH, KW]
    if (xv->shape.size() != 4) unsupported(node, "only 2-D ConvTranspose is compiled");
    if (!wv->constant) unsupported(node, "ConvTranspose weights must be constant");
    const int64_t groups = node.attrs.get_int_or("group", 1, node.name);
    const Shape& ws = wv->shape;
    const auto strides = node.attrs.get_ints_or("strides", {1, 1}, node.name);
    const auto dil = node.attrs.get_ints_or("dilations", {1, 1}, node.name);
    const auto pads = node.attrs.get_ints_or("pads", {0, 0, 0, 0}, node.name);
    const auto opad = node.attrs.get_ints_or("output_padding", {0, 0}, node.name);
    const bool simple = groups == 1 && ws[2] == strides[0] && ws[3] == strides[1] && dil[0] == 1 &&
                        dil[1] == 1 &&
                        std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }) &&
                        opad[0] == 0 && opad[1] == 0 && !node.attrs.has("output_shape") &&
                        node.attrs.get_string_or("auto_pad", "NOTSET", node.name) == "NOTSET";
    if (!simple)
      unsupported(node,
                  "ConvTranspose is compiled when kernel == stride, group 1, no padding, "
                  "dilation 1 and no output padding");
    const int64_t cin = ws[0], cout = ws[1], kh = ws[2], kw = ws[3];
    const Tensor& wt = *wv->constant;
    te::Tensor x = ctx.input(xv);
    Operand b;
    b.is_imm = true;
    if (node.input(2)) b = operand(node.input(2), ctx);
    const Shape part_shape = {xv->shape[0], cout, xv->shape[2], xv->shape[3]};
    for (int64_t a = 0; a < kh; ++a)
      for (int64_t c = 0; c < kw; ++c) {
        // The tap (a, c) is a 1x1 convolution with weights w[:, :, a, c]^T.
        std::vector<float> tap(static_cast<size_t>(cout * cin));
        for (int64_t co = 0; co < cout; ++co)
          for (int64_t ci = 0; ci < cin; ++ci)
            tap[co * cin + ci] =
                static_cast<float>(wt.get_as_double(((ci * cout + co) * kh + a) * kw + c));
        te::Tensor w = ctx.derived_constant(fmt::format("{}.w{}{}", node.name, a, c),
                                            Tensor::from_floats({cout, cin, 1, 1}, tap));
        auto ci = te::reduce_axis(cin, "rc");
        auto conv = std::const_pointer_cast<te::TensorNode>(te::compute(
            fmt::format("{}.tap{}{}", node.name, a, c) + (node.input(2) ? ".conv" : ""), part_shape,
            [&](const std::vector<Expr>& i) {
              Expr xr = te::read_padded(x, {i[0], L::var_ref(ci.var), i[2], i[3]}, 0.0);
              Expr wr = te::read(w, {i[1], L::var_ref(ci.var), L::int_imm(0), L::int_imm(0)});
              return te::sum(L::mul(xr, wr), {ci});
            },
            "conv2d"));
        conv->attrs = {{"strides", {1, 1}},
                       {"dilations", {1, 1}},
                       {"pads", {0, 0, 0, 0}},
                       {"groups", {1}},
                       {"kernel", {1, 1}}};
        conv->extra_inputs = {x, w};
        te::Tensor result = conv;
        if (node.input(2)) {
          result =
              te::compute(fmt::format("{}.tap{}{}", node.name, a, c), part_shape,
                          [&](const std::vector<Expr>& i) {
                            return L::add(te::read(conv, i), b.is_imm ? L::float_imm(b.imm)
                                                                      : te::read(b.tensor, {i[1]}));
                          });
        }
        parts.push_back({result,
                         part_shape,
                         {ostr[0], ostr[1], ostr[2] * kh, ostr[3] * kw},
                         a * ostr[2] + c * ostr[3]});
      }
    return parts;
  }
  return parts;
}

std::vector<std::string> parts_ops() {
  return {"ConvTranspose", "DepthToSpace", "Resize", "SpaceToDepth", "Tile"};
}

std::vector<std::string> compute_ops() {
  std::vector<std::string> names;
  for (const auto& [k, v] : computes()) names.push_back(k);
  return names;
}

std::vector<int64_t> conv_window_pads(const Node& node, const Shape& in,
                                      const std::vector<int64_t>& kernel,
                                      const std::vector<int64_t>& strides,
                                      const std::vector<int64_t>& dilations) {
  return window_pads(node, in, kernel, strides, dilations);
}

}  // namespace tessel::lower
