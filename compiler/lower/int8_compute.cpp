// Generic tensor expressions of ONNX's quantised ops (see int8_compute.h).
#include "compiler/lower/int8_compute.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compiler/ops/op_util.h"
#include "compiler/support/error.h"

namespace tessel::lower {

namespace L = tessel::loop;
using L::Expr;

namespace {

[[noreturn]] void refuse(const Node& node, const std::string& what) {
  throw Unsupported(fmt::format("{}: {}", node.describe(), what));
}

/// The saturation range of a quantised output dtype; any other dtype is refused (unsupported
/// here, where the reference fails it as an error: ops::quantized_range).
std::pair<double, double> range_of(const Node& node, DType dt) {
  const auto r = ops::quantized_dtype_range(dt);
  if (!r) refuse(node, fmt::format("a quantised output of dtype {}", dtype_to_string(dt)));
  return {static_cast<double>(r->first), static_cast<double>(r->second)};
}

const Tensor& constant_input(const Node& node, size_t i, const char* role) {
  const Value* v = node.input(i);
  if (!v || !v->constant)
    refuse(node, fmt::format("{} ('{}') is a run-time tensor; it must be a constant", role,
                             v ? v->name : std::string("absent")));
  return *v->constant;
}

/// `t` (its values) converted to `dt`: a conversion stage of its own, never inlined into its
/// reader (lower_te.h), so that the reader computes in `dt`.
te::Tensor converted(const Node& node, const te::Tensor& t, DType dt, const std::string& what) {
  if (t->dtype == dt) return t;
  return te::compute(
      node.name + "." + what, t->shape, [&](const std::vector<Expr>& i) { return te::read(t, i); },
      "", dt);
}

/// A scale or zero point of `node` (input `slot`, optional when `zero` is given) read for output
/// index `i`: per tensor (one element) or per index of axis `axis` of the indexed tensor.
/// Absent: the immediate `zero`.
Expr param_at(const Node& node, ComputeContext& ctx, size_t slot, const std::vector<Expr>& i,
              int64_t axis, const char* role) {
  const Value* v = node.input(slot);
  if (!v) return L::float_imm(0.0);
  const te::Tensor t = ctx.input(v);
  const int64_t n = shape_numel(v->shape);
  if (n == 1) return te::read(t, std::vector<Expr>(v->shape.size(), L::int_imm(0)));
  if (v->shape.size() != 1)
    refuse(node, fmt::format("{} of shape {} (a scalar or 1-D)", role, shape_to_string(v->shape)));
  if (axis < 0 || axis >= static_cast<int64_t>(i.size()))
    refuse(node, fmt::format("a per-axis {} of {} elements here", role, n));
  return te::read(t, {i[static_cast<size_t>(axis)]});
}

int64_t quant_axis(const Node& node, size_t rank) {
  if (node.attrs.get_int_or("block_size", 0, node.name) != 0)
    refuse(node, "blocked quantisation (block_size)");
  int64_t axis = node.attrs.get_int_or("axis", 1, node.name);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  return axis;
}

te::Tensor quantize(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const Value* yv = node.outputs.at(0);
  const auto [lo, hi] = range_of(node, yv->dtype);
  const te::Tensor x = converted(node, ctx.input(xv), DType::f32, "float");
  const int64_t axis = quant_axis(node, xv->shape.size());
  return te::compute(
      node.name, yv->shape,
      [&](const std::vector<Expr>& i) {
        const Expr s = param_at(node, ctx, 1, i, axis, "y_scale");
        const Expr z = param_at(node, ctx, 2, i, axis, "y_zero_point");
        const Expr q = L::fdiv(te::read(x, i), s);
        const Expr r = L::min(L::max(L::call(L::CallOp::round, q), L::sub(L::float_imm(lo), z)),
                              L::sub(L::float_imm(hi), z));
        // NaN: the reference's round_half_even_saturate gives 0 (then + zp).
        return L::add(L::select(L::ne(q, q), L::float_imm(0.0), r), z);
      },
      "", yv->dtype);
}

te::Tensor dequantize(const Node& node, ComputeContext& ctx) {
  const Value* xv = node.input(0);
  const Value* yv = node.outputs.at(0);
  if (dtype_is_float(xv->dtype)) refuse(node, "a float x");
  const te::Tensor x = ctx.input(xv);
  const int64_t axis = quant_axis(node, xv->shape.size());
  return te::compute(
      node.name, yv->shape,
      [&](const std::vector<Expr>& i) {
        // The scale first: the expression's value type is fp32, x and zp convert at their loads.
        const Expr s = param_at(node, ctx, 1, i, axis, "x_scale");
        if (!node.input(2)) return L::mul(s, te::read(x, i));
        return L::mul(s, L::sub(te::read(x, i), param_at(node, ctx, 2, i, axis, "x_zero_point")));
      },
      "", DType::f32);
}

/// The int32 accumulator of MatMulInteger / QLinearMatMul: A at input `ia`, B at `ib`, their
/// zero points at `iaz` / `ibz` (per tensor, per row of A or per column of B).
te::Tensor matmul_acc(const Node& node, ComputeContext& ctx, size_t ia, size_t ib, size_t iaz,
                      size_t ibz) {
  const Value* av = node.input(ia);
  const Value* bv = node.input(ib);
  const Shape& out = node.outputs.at(0)->shape;
  if (!av || !bv) refuse(node, "missing A or B");
  if (av->shape.size() < 2 || bv->shape.size() < 2)
    refuse(node, fmt::format("operands of shapes {} and {} (rank >= 2 only)",
                             shape_to_string(av->shape), shape_to_string(bv->shape)));
  const te::Tensor a = converted(node, ctx.input(av), DType::i32, "a32");
  const te::Tensor b = converted(node, ctx.input(bv), DType::i32, "b32");
  const int64_t ra = static_cast<int64_t>(av->shape.size());
  const int64_t rb = static_cast<int64_t>(bv->shape.size());
  const int64_t ro = static_cast<int64_t>(out.size());
  auto k = te::reduce_axis(av->shape.back(), "rk");
  return te::compute(
      node.name + ".acc", out,
      [&](const std::vector<Expr>& i) {
        // Batch dims aligned from the right; a dim of 1 broadcasts.
        auto batch = [&](const Shape& s, int64_t r) {
          std::vector<Expr> idx;
          for (int64_t d = 0; d + 2 < r; ++d)
            idx.push_back(s[d] == 1 ? L::int_imm(0) : i[static_cast<size_t>(d + ro - r)]);
          return idx;
        };
        std::vector<Expr> ai = batch(av->shape, ra), bi = batch(bv->shape, rb);
        const Expr m = i[static_cast<size_t>(ro - 2)], n = i[static_cast<size_t>(ro - 1)];
        ai.push_back(m);
        ai.push_back(L::var_ref(k.var));
        bi.push_back(L::var_ref(k.var));
        bi.push_back(n);
        // Zero points: per row m of A ([M]) or per column n of B ([N]); index 0 / 1 of {m, n}.
        const std::vector<Expr> mn = {m, n};
        Expr x = te::read(a, ai), y = te::read(b, bi);
        if (node.input(iaz)) x = L::sub(x, param_at(node, ctx, iaz, mn, 0, "a_zero_point"));
        if (node.input(ibz)) y = L::sub(y, param_at(node, ctx, ibz, mn, 1, "b_zero_point"));
        return te::sum(L::mul(x, y), {k});
      },
      "", DType::i32);
}

/// The int32 accumulator of ConvInteger / QLinearConv: x at input `ix`, w at `iw`, zero points
/// at `ixz` (per tensor) and `iwz` (per tensor or per output channel).
te::Tensor conv_acc(const Node& node, ComputeContext& ctx, size_t ix, size_t iw, size_t ixz,
                    size_t iwz) {
  const Value* xv = node.input(ix);
  const Value* wv = node.input(iw);
  const Shape& out = node.outputs.at(0)->shape;
  if (!xv || !wv) refuse(node, "missing x or w");
  if (xv->shape.size() != 4 || wv->shape.size() != 4)
    refuse(node,
           fmt::format("x of shape {} (2-D convolutions, NCHW, only)", shape_to_string(xv->shape)));
  const int64_t groups = node.attrs.get_int_or("group", 1, node.name);
  const Shape& ws = wv->shape;  // [M, C/G, KH, KW]
  const std::vector<int64_t> kern = {ws[2], ws[3]};
  const auto strides = node.attrs.get_ints_or("strides", {1, 1}, node.name);
  const auto dil = node.attrs.get_ints_or("dilations", {1, 1}, node.name);
  const auto pads = conv_window_pads(node, xv->shape, kern, strides, dil);
  const int64_t cin_g = ws[1], cout_g = ws[0] / groups;
  // X' = int32(x) - x_zp: read padded with 0 (the border's x_zp - x_zp).
  const te::Tensor x32 = converted(node, ctx.input(xv), DType::i32, "x32");
  te::Tensor xs = x32;
  if (node.input(ixz))
    xs = te::compute(node.name + ".xs", xv->shape, [&](const std::vector<Expr>& i) {
      return L::sub(te::read(x32, i), param_at(node, ctx, ixz, i, -1, "x_zero_point"));
    });
  const te::Tensor w32 = converted(node, ctx.input(wv), DType::i32, "w32");
  auto c = te::reduce_axis(cin_g, "rc");
  auto kh = te::reduce_axis(kern[0], "rh");
  auto kw = te::reduce_axis(kern[1], "rw");
  return te::compute(
      node.name + ".acc", out,
      [&](const std::vector<Expr>& i) {
        const Expr m = i[1];
        const Expr cin =
            L::add(L::mul(L::floordiv(m, cout_g), L::int_imm(cin_g)), L::var_ref(c.var));
        const Expr ih =
            L::add(L::mul(i[2], L::int_imm(strides[0])),
                   L::sub(L::mul(L::var_ref(kh.var), L::int_imm(dil[0])), L::int_imm(pads[0])));
        const Expr iw2 =
            L::add(L::mul(i[3], L::int_imm(strides[1])),
                   L::sub(L::mul(L::var_ref(kw.var), L::int_imm(dil[1])), L::int_imm(pads[1])));
        const Expr xr = te::read_padded(xs, {i[0], cin, ih, iw2}, 0.0);
        Expr wr = te::read(w32, {m, L::var_ref(c.var), L::var_ref(kh.var), L::var_ref(kw.var)});
        if (node.input(iwz)) wr = L::sub(wr, param_at(node, ctx, iwz, i, 1, "w_zero_point"));
        return te::sum(L::mul(xr, wr), {c, kh, kw});
      },
      "", DType::i32);
}

/// y = clamp(round(float(acc) * scale_j), lo - y_zp, hi - y_zp) + y_zp with scale_j the
/// compile-time fp32(fp32(x_scale * w_scale_j) / y_scale), j the index of axis `axis` of the
/// output (per-column B of QLinearMatMul, per-channel w of QLinearConv).
te::Tensor requantize(const Node& node, ComputeContext& ctx, const te::Tensor& acc, size_t ixs,
                      size_t iws, size_t iys, size_t iyz, int64_t axis) {
  const Value* yv = node.outputs.at(0);
  const Tensor& xs = constant_input(node, ixs, "the input scale");
  const Tensor& ws = constant_input(node, iws, "the weight scale");
  const Tensor& ys = constant_input(node, iys, "y_scale");
  const Tensor& yz = constant_input(node, iyz, "y_zero_point");
  if (xs.numel() != 1 || ys.numel() != 1 || yz.numel() != 1)
    refuse(node, "a per-axis input scale, y_scale or y_zero_point");
  const int64_t n = ws.numel();
  if (n != 1 && n != yv->shape[static_cast<size_t>(axis)])
    refuse(node, fmt::format("a weight scale of {} elements for {} outputs along axis {}", n,
                             yv->shape[static_cast<size_t>(axis)], axis));
  std::vector<float> scale(static_cast<size_t>(n));
  const float xsv = static_cast<float>(xs.get_as_double(0));
  const float ysv = static_cast<float>(ys.get_as_double(0));
  for (int64_t j = 0; j < n; ++j)
    scale[static_cast<size_t>(j)] = xsv * static_cast<float>(ws.get_as_double(j)) / ysv;
  const te::Tensor st = ctx.derived_constant(node.name + ".scale", Tensor::from_floats({n}, scale));
  const auto [lo, hi] = range_of(node, yv->dtype);
  const double z = yz.get_as_double(0);
  return te::compute(
      node.name, yv->shape,
      [&](const std::vector<Expr>& i) {
        const Expr s = te::read(st, {n == 1 ? L::int_imm(0) : i[static_cast<size_t>(axis)]});
        // The scale first: fp32 value type, the int32 accumulator converts at its load.
        const Expr v = L::call(L::CallOp::round, L::mul(s, te::read(acc, i)));
        return L::add(L::min(L::max(v, L::float_imm(lo - z)), L::float_imm(hi - z)),
                      L::float_imm(z));
      },
      "", yv->dtype);
}

}  // namespace

std::vector<std::string> int8_compute_ops() {
  return {"ConvInteger", "DequantizeLinear", "MatMulInteger",
          "QLinearConv", "QLinearMatMul",    "QuantizeLinear"};
}

bool is_int8_compute_op(const std::string& op) {
  const auto ops = int8_compute_ops();
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

te::Tensor int8_compute(const Node& node, ComputeContext& ctx) {
  const std::string& op = node.op_type;
  if (op == "QuantizeLinear") return quantize(node, ctx);
  if (op == "DequantizeLinear") return dequantize(node, ctx);
  if (op == "MatMulInteger") return matmul_acc(node, ctx, 0, 1, 2, 3);
  if (op == "ConvInteger") return conv_acc(node, ctx, 0, 1, 2, 3);
  if (op == "QLinearMatMul") {
    // a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp; b_scale per column of a 2-D b.
    const te::Tensor acc = matmul_acc(node, ctx, 0, 3, 2, 5);
    const int64_t axis = static_cast<int64_t>(node.outputs.at(0)->shape.size()) - 1;
    return requantize(node, ctx, acc, 1, 4, 6, 7, axis);
  }
  if (op == "QLinearConv") {
    // x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B (int32 per output channel).
    te::Tensor acc = conv_acc(node, ctx, 0, 3, 2, 5);
    if (const Value* bv = node.input(8)) {
      // acc + B in int32, converted to fp32 by its store (a conversion stage: one rounding, as
      // ONNX Runtime's float(acc)), so the requantisation never adds them in fp32.
      const te::Tensor b = ctx.input(bv);
      const te::Tensor a = acc;
      acc = te::compute(
          node.name + ".biased", a->shape,
          [&](const std::vector<Expr>& i) { return L::add(te::read(a, i), te::read(b, {i[1]})); },
          "", DType::f32);
    }
    return requantize(node, ctx, acc, 1, 4, 6, 7, 1);
  }
  refuse(node, "not a quantised op int8_compute lowers");
}

}  // namespace tessel::lower
