// The NPU's quantised contractions (see int8_ops.h).
#include "compiler/backend/npu/int8_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "compiler/lower/op_compute.h"
#include "compiler/support/error.h"

namespace tessel::npu_backend {

namespace L = tessel::loop;

namespace {

[[noreturn]] void refuse(const Node& node, const std::string& why) {
  throw Unsupported(fmt::format("{}: {} on the NPU", node.describe(), why));
}

/// Constant input `i` of `node` (its role for messages), or an Unsupported error.
const Tensor& constant_input(const Node& node, size_t i, const char* role) {
  const Value* v = node.input(i);
  if (!v || !v->constant) refuse(node, fmt::format("{} must be a constant", role));
  return *v->constant;
}

/// A scalar (one element) or, when `per_col` > 0, a 1-D tensor of per_col elements; the value
/// at column j as double.
std::vector<double> param(const Node& node, size_t i, const char* role, int64_t per_col) {
  const Value* v = node.input(i);
  if (!v) return {0.0};  // an absent zero point
  const Tensor& t = constant_input(node, i, role);
  std::vector<double> out(t.numel());
  for (int64_t k = 0; k < t.numel(); ++k) out[k] = t.get_as_double(k);
  if (out.size() == 1) return out;
  if (per_col > 0 && t.rank() == 1 && t.numel() == per_col) return out;
  refuse(node,
         fmt::format("{} of shape [{}] (expected a scalar{})", role, fmt::join(t.shape(), ","),
                     per_col > 0 ? fmt::format(" or [{}]", per_col) : ""));
}

double at(const std::vector<double>& p, int64_t j) { return p.size() == 1 ? p[0] : p[j]; }

}  // namespace

std::vector<std::string> npu_int8_ops() {
  return {"QLinearMatMul", "MatMulInteger",  "QLinearConv",
          "ConvInteger",   "QuantizeLinear", "DequantizeLinear"};
}

bool is_npu_int8_op(const Node& node) {
  const std::vector<std::string> ops = npu_int8_ops();
  return std::find(ops.begin(), ops.end(), node.op_type) != ops.end();
}

namespace {

/// QLinearConv / ConvInteger (see int8_ops.h).
te::Tensor npu_int8_conv(const Node& node, lower::ComputeContext& ctx, int64_t depthwise_block) {
  const bool qlinear = node.op_type == "QLinearConv";
  const size_t iw = qlinear ? 3 : 1;
  const Value* xv = node.input(0);
  const Value* wv = node.input(iw);
  const Value* yv = node.outputs.at(0);
  if (!xv || !wv) refuse(node, "missing x or w");
  if (xv->shape.size() != 4)
    refuse(node, fmt::format("x of rank {} (only the 2-D convolution, NCHW, is compiled)",
                             xv->shape.size()));
  if (!wv->constant) refuse(node, "w (the weights) must be a constant");
  const Tensor& W = *wv->constant;
  if (W.rank() != 4) refuse(node, fmt::format("w of rank {} (expected 4)", W.rank()));
  const int64_t M = W.shape()[0], CG = W.shape()[1], KH = W.shape()[2], KW = W.shape()[3];
  const int64_t groups = node.attrs.get_int_or("group", 1, node.name);
  if (groups < 1 || M % groups != 0 || xv->shape[1] != CG * groups)
    refuse(node, fmt::format("group {} with {} input channels and w of shape [{}]", groups,
                             xv->shape[1], fmt::join(W.shape(), ",")));
  const std::vector<int64_t> k = {KH, KW};
  const auto strides = node.attrs.get_ints_or("strides", {1, 1}, node.name);
  const auto dil = node.attrs.get_ints_or("dilations", {1, 1}, node.name);
  const auto pads = lower::conv_window_pads(node, xv->shape, k, strides, dil);

  const std::vector<double> xzp = param(node, 2, "x_zero_point", 0);
  const std::vector<double> wzp = param(node, qlinear ? 5 : 3, "w_zero_point", M);
  std::vector<double> x_scale{1}, w_scale{1}, y_scale{1}, yzp{0}, bias_in{0};
  if (qlinear) {
    x_scale = param(node, 1, "x_scale", 0);
    w_scale = param(node, 4, "w_scale", M);
    y_scale = param(node, 6, "y_scale", 0);
    yzp = param(node, 7, "y_zero_point", 0);
    if (node.input(8)) bias_in = param(node, 8, "B", M);
  }

  // W' = W - w_zero_point[m], stored as i8 when it fits, else u8.
  const int64_t per_m = CG * KH * KW;
  std::vector<int64_t> wp(M * per_m);
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (int64_t i = 0; i < M * per_m; ++i) {
    wp[i] = static_cast<int64_t>(W.get_as_double(i)) - static_cast<int64_t>(at(wzp, i / per_m));
    lo = std::min(lo, wp[i]);
    hi = std::max(hi, wp[i]);
  }
  // QLinearConv with W' in [-255, 0] (u8 weights below their zero point, e.g. w = 0 at zero
  // point 255): -W' fits u8, and negating the bias and the scale as well gives the same y
  // (float(-v) * -scale = float(v) * scale exactly).
  const bool negate = qlinear && !(lo >= -128 && hi <= 127) && lo >= -255 && hi <= 0;
  if (negate) {
    for (int64_t& v : wp) v = -v;
    std::swap(lo, hi);
    lo = -lo, hi = -hi;
  }
  DType wdt;
  if (lo >= -128 && hi <= 127)
    wdt = DType::i8;
  else if (lo >= 0 && hi <= 255)
    wdt = DType::u8;
  else
    refuse(node,
           fmt::format("w - w_zero_point spans [{}, {}], which neither i8 nor u8 holds", lo, hi));
  // A depthwise conv (one input channel per group, groups > 1) runs as groups of `block`
  // channels with block-diagonal weights: W''[m, c, r, s] = W'[m, 0, r, s] where c is m's own
  // channel within its block, else 0. The zeros add nothing to the int32 sums, so every
  // accumulator (and the fix table's sum of W') is the depthwise one, but one cube group covers
  // `block` output channels (a full fractal of rows) instead of one.
  const int64_t mult = M / groups;  // output channels per input channel
  int64_t block = 1;
  if (CG == 1 && groups > 1 && depthwise_block > 1)
    for (int64_t b = std::min(depthwise_block, groups); b > 1; --b)
      if (groups % b == 0) {
        block = b;
        break;
      }
  const int64_t cg2 = CG * block, groups2 = groups / block;
  Tensor Wp(wdt, {M, cg2, KH, KW});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < cg2; ++c) {
      if (block > 1 && c != (m / mult) % block) continue;  // zero-initialised
      for (int64_t t = 0; t < KH * KW; ++t) {
        const int64_t v = wp[m * per_m + (block > 1 ? 0 : c) * KH * KW + t];
        const int64_t at_i = (m * cg2 + c) * KH * KW + t;
        if (wdt == DType::i8)
          Wp.data<int8_t>()[at_i] = static_cast<int8_t>(v);
        else
          Wp.data<uint8_t>()[at_i] = static_cast<uint8_t>(v);
      }
    }

  // The fix table per output channel m: (scale bits, bias), bias_m = B[m] - x_zp * sum W'[m];
  // the padded border reads x_zp, so the identity sum (x - x_zp) W' = sum x W' - x_zp sum W'
  // holds at every output pixel. One entry when all channels share it.
  const int64_t x_zero = static_cast<int64_t>(xzp[0]);
  std::vector<float> scales(M);
  std::vector<int32_t> biases(M);
  bool uniform = true;
  for (int64_t m = 0; m < M; ++m) {
    int64_t sum = 0;
    for (int64_t i = 0; i < per_m; ++i) sum += wp[m * per_m + i];
    const int64_t bias = (negate ? -1 : 1) * static_cast<int64_t>(at(bias_in, m)) - x_zero * sum;
    if (bias < std::numeric_limits<int32_t>::min() || bias > std::numeric_limits<int32_t>::max())
      refuse(node, "a bias with its zero-point correction beyond int32");
    biases[m] = static_cast<int32_t>(bias);
    // As ONNX Runtime (and the reference): x_scale * w_scale[m] / y_scale in fp32.
    const float prod = static_cast<float>(x_scale[0]) * static_cast<float>(at(w_scale, m));
    scales[m] = qlinear ? prod / static_cast<float>(y_scale[0]) : 1.0f;
    if (negate) scales[m] = -scales[m];
    uniform &= biases[m] == biases[0] && std::memcmp(&scales[m], &scales[0], 4) == 0;
  }
  const int64_t entries = uniform ? 1 : M;
  Tensor table(DType::i32, {entries * 2});
  for (int64_t e = 0; e < entries; ++e) {
    std::memcpy(&table.data<int32_t>()[2 * e], &scales[e], 4);
    table.data<int32_t>()[2 * e + 1] = biases[e];
  }

  const te::Tensor x = ctx.input(xv);
  const te::Tensor w = ctx.derived_constant(node.name + ".w_minus_zp", Wp);
  const te::Tensor q = ctx.derived_constant(node.name + ".fix_table", table);
  const int64_t cout_g = M / groups2;
  auto ci = te::reduce_axis(cg2, "rc");
  auto kh = te::reduce_axis(KH, "rh");
  auto kw = te::reduce_axis(KW, "rw");
  // out[n, m, i, j] = sum_{c, r, s} x_pad[n, g(m) * cg2 + c, i*sh + r*dh - pt, j*sw + s*dw - pl]
  //                   * W''[m, c, r, s], x_pad reading x_zp outside x: the raw integer product
  //                   (g(m) = m / cout_g, the group of m after blocking; cg2 = CG unblocked).
  auto t = std::const_pointer_cast<te::TensorNode>(te::compute(
      node.name, yv->shape,
      [&](const std::vector<L::Expr>& i) {
        L::Expr cin =
            L::add(L::mul(L::floordiv(i[1], cout_g), L::int_imm(cg2)), L::var_ref(ci.var));
        L::Expr ih =
            L::add(L::mul(i[2], L::int_imm(strides[0])),
                   L::sub(L::mul(L::var_ref(kh.var), L::int_imm(dil[0])), L::int_imm(pads[0])));
        L::Expr iw2 =
            L::add(L::mul(i[3], L::int_imm(strides[1])),
                   L::sub(L::mul(L::var_ref(kw.var), L::int_imm(dil[1])), L::int_imm(pads[1])));
        L::Expr xr = te::read_padded(x, {i[0], cin, ih, iw2}, static_cast<double>(x_zero));
        L::Expr wr =
            te::read(w, {i[1], L::var_ref(ci.var), L::var_ref(kh.var), L::var_ref(kw.var)});
        return te::sum(L::mul(xr, wr), {ci, kh, kw});
      },
      "conv2d", yv->dtype));
  t->attrs = {{"strides", strides},
              {"dilations", dil},
              {"pads", pads},
              {"groups", {groups2}},
              {"kernel", k},
              {"int8", {1}},
              {"per_channel", {entries > 1}},
              {"zero_point", {static_cast<int64_t>(yzp[0])}},
              {"pad_value", {x_zero}}};
  t->extra_inputs = {x, w, q};
  return t;
}

/// The scale and zero point of a QuantizeLinear / DequantizeLinear (constants, one per tensor or
/// one per index of `axis`) as expressions of the output index `i`: immediates when per tensor,
/// reads of constant tensors along the axis otherwise.
struct QdqParams {
  L::Expr scale, zero_point;
  int64_t zp_per_tensor = 0;
};

QdqParams qdq_params(const Node& node, lower::ComputeContext& ctx, const Shape& xs,
                     const std::vector<L::Expr>& i, const te::Tensor& scale_t,
                     const te::Tensor& zp_t, bool scale_imm) {
  QdqParams p;
  const Value* sv = node.input(1);
  const int64_t n = shape_numel(sv->shape);
  if (n == 1) {
    const Tensor& s = constant_input(node, 1, "scale");
    p.scale = scale_imm ? L::float_imm(s.get_as_double(0)) : te::read(scale_t, {L::int_imm(0)});
    p.zp_per_tensor =
        node.input(2) ? static_cast<int64_t>(constant_input(node, 2, "zero_point").get_as_double(0))
                      : 0;
    p.zero_point = L::float_imm(static_cast<double>(p.zp_per_tensor));
    return p;
  }
  const int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = node.attrs.get_int_or("axis", 1, node.name);
  if (axis < 0) axis += rank;
  (void)ctx;
  p.scale = te::read(scale_t, {i.at(static_cast<size_t>(axis))});
  p.zero_point = zp_t ? te::read(zp_t, {i.at(static_cast<size_t>(axis))}) : L::float_imm(0.0);
  return p;
}

/// QuantizeLinear (x float) and DequantizeLinear (x i8/u8/i32) on the vector unit; see
/// int8_ops.h.
te::Tensor npu_qdq(const Node& node, lower::ComputeContext& ctx, DType act_dtype) {
  const bool quantize = node.op_type == "QuantizeLinear";
  const Value* xv = node.input(0);
  const Value* sv = node.input(1);
  const Value* yv = node.outputs.at(0);
  if (!xv || !sv) refuse(node, "missing x or the scale");
  const Tensor& s = constant_input(node, 1, "the scale");
  if (node.input(2)) constant_input(node, 2, "the zero point");
  const int64_t n = s.numel();
  if (n != 1) {
    if (s.rank() != 1) refuse(node, "a scale of rank > 1");
    int64_t axis = node.attrs.get_int_or("axis", 1, node.name);
    const int64_t rank = static_cast<int64_t>(xv->shape.size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || xv->shape[axis] != n)
      refuse(node, fmt::format("a scale of {} elements along axis {} of x [{}]", n, axis,
                               fmt::join(xv->shape, ",")));
  }
  // Per axis: the scales (f32) and zero points (as f32: exact for 8-bit values) as constants.
  te::Tensor scale_t, zp_t;
  {
    std::vector<float> sc(n), zp(n, 0.0f);
    for (int64_t k = 0; k < n; ++k) sc[k] = static_cast<float>(s.get_as_double(k));
    if (node.input(2)) {
      const Tensor& z = *node.input(2)->constant;
      for (int64_t k = 0; k < n; ++k) zp[k] = static_cast<float>(z.get_as_double(k));
    }
    scale_t = ctx.derived_constant(node.name + ".scale", Tensor::from_floats({n}, sc));
    if (n > 1) zp_t = ctx.derived_constant(node.name + ".zero_point", Tensor::from_floats({n}, zp));
  }
  const te::Tensor x = ctx.input(xv);
  if (quantize) {
    if (!dtype_is_float(xv->dtype))
      refuse(node,
             fmt::format("x of dtype {} (the NPU quantises float x)", dtype_to_string(xv->dtype)));
    const DType out = yv->dtype;
    const double lo = out == DType::i8 ? -128 : 0, hi = out == DType::i8 ? 127 : 255;
    // y = clamp(round_half_even(x / scale) + zp, lo, hi) in float (exact: integers), then the
    // conversion to y's type (vconv; the value is integral and in range, so exact).
    return te::compute(
        node.name, yv->shape,
        [&](const std::vector<L::Expr>& i) {
          const bool f16 = act_dtype == DType::f16;
          const QdqParams p = qdq_params(node, ctx, xv->shape, i, scale_t, zp_t, f16);
          // fp16 activations, per tensor: x * (1 / scale) with the f32 reciprocal (the
          // tensorizer's form of a division by an immediate); else x / scale (vdiv).
          // Clamped to [-512, 511] first (any value beyond saturates all the same: |zp| <= 255
          // and the type's range lies in [-128, 255]), so that the tensorizer rounds with its
          // two-instruction form for values within half its dtype's integer range.
          L::Expr v = L::fdiv(te::read(x, i), p.scale);
          v = L::min(L::max(v, L::float_imm(-512.0)), L::float_imm(511.0));
          L::Expr q = L::call(L::CallOp::round, v);
          q = L::add(q, p.zero_point);
          return L::min(L::max(q, L::float_imm(lo)), L::float_imm(hi));
        },
        "", out);
  }
  // DequantizeLinear: x converted to float (exact: 8-bit values; an i32 beyond 2^11 rounds on
  // an fp16 target), y = (x - zp) * scale with one rounding of the product.
  if (dtype_is_float(xv->dtype)) refuse(node, "a float x");
  const te::Tensor xf = te::compute(
      node.name + ".float", xv->shape,
      [&](const std::vector<L::Expr>& i) { return te::read(x, i); }, "", DType::f32);
  return te::compute(
      node.name, yv->shape,
      [&](const std::vector<L::Expr>& i) {
        const QdqParams p = qdq_params(node, ctx, xv->shape, i, scale_t, zp_t, true);
        L::Expr v = te::read(xf, i);
        if (n > 1 || p.zp_per_tensor != 0) v = L::sub(v, p.zero_point);
        return L::mul(v, p.scale);
      },
      "", DType::f32);
}

}  // namespace

te::Tensor npu_int8_compute(const Node& node, lower::ComputeContext& ctx, DType act_dtype,
                            int64_t depthwise_block) {
  if (node.op_type == "QLinearConv" || node.op_type == "ConvInteger")
    return npu_int8_conv(node, ctx, depthwise_block);
  if (node.op_type == "QuantizeLinear" || node.op_type == "DequantizeLinear")
    return npu_qdq(node, ctx, act_dtype);
  const bool qlinear = node.op_type == "QLinearMatMul";
  const size_t ia = 0, ib = qlinear ? 3 : 1;
  const Value* av = node.input(ia);
  const Value* bv = node.input(ib);
  const Value* yv = node.outputs.at(0);
  if (!av || !bv) refuse(node, "missing A or B");
  if (!bv->constant) refuse(node, "B (the weights) must be a constant");
  const Tensor& B = *bv->constant;
  if (B.rank() != 2) refuse(node, fmt::format("B of rank {} (expected 2)", B.rank()));
  if (av->shape.size() < 2) refuse(node, "a 1-D A");
  const int64_t K = B.shape()[0], N = B.shape()[1];
  if (av->shape.back() != K) refuse(node, "A's last dim differs from B's rows");

  // Zero points and scales (constants; b's per column).
  const std::vector<double> azp = param(node, qlinear ? 2 : 2, "a_zero_point", 0);
  const std::vector<double> bzp = param(node, qlinear ? 5 : 3, "b_zero_point", N);
  std::vector<double> a_scale{1}, b_scale{1}, y_scale{1}, yzp{0};
  if (qlinear) {
    a_scale = param(node, 1, "a_scale", 0);
    b_scale = param(node, 4, "b_scale", N);
    y_scale = param(node, 6, "y_scale", 0);
    yzp = param(node, 7, "y_zero_point", 0);
  }

  // B' = B - b_zero_point, stored as i8 when it fits, else u8 when it fits.
  std::vector<int64_t> bp(K * N);
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) {
      const int64_t v =
          static_cast<int64_t>(B.get_as_double(k * N + j)) - static_cast<int64_t>(at(bzp, j));
      bp[k * N + j] = v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  DType bdt;
  if (lo >= -128 && hi <= 127)
    bdt = DType::i8;
  else if (lo >= 0 && hi <= 255)
    bdt = DType::u8;
  else
    refuse(node,
           fmt::format("B - b_zero_point spans [{}, {}], which neither i8 nor u8 holds", lo, hi));
  Tensor Bp(bdt, {K, N});
  for (int64_t i = 0; i < K * N; ++i) {
    if (bdt == DType::i8)
      Bp.data<int8_t>()[i] = static_cast<int8_t>(bp[i]);
    else
      Bp.data<uint8_t>()[i] = static_cast<uint8_t>(bp[i]);
  }

  // The fix table: per column (scale bits, bias), bias_j = -a_zp * sum_k B'[k][j]; one entry
  // when all columns share it.
  const int64_t a_zero = static_cast<int64_t>(azp[0]);
  std::vector<float> scales(N);
  std::vector<int32_t> biases(N);
  bool uniform = true;
  for (int64_t j = 0; j < N; ++j) {
    int64_t colsum = 0;
    for (int64_t k = 0; k < K; ++k) colsum += bp[k * N + j];
    const int64_t bias = -a_zero * colsum;
    if (bias < std::numeric_limits<int32_t>::min() || bias > std::numeric_limits<int32_t>::max())
      refuse(node, "a zero-point correction beyond int32");
    biases[j] = static_cast<int32_t>(bias);
    // ONNX Runtime: output_scale = a_scale * b_scale[j] / y_scale, in fp32 left to right.
    const float prod = static_cast<float>(a_scale[0]) * static_cast<float>(at(b_scale, j));
    scales[j] = qlinear ? prod / static_cast<float>(y_scale[0]) : 1.0f;
    uniform &= biases[j] == biases[0] && std::memcmp(&scales[j], &scales[0], 4) == 0;
  }
  const int64_t entries = uniform ? 1 : N;
  Tensor table(DType::i32, {entries * 2});
  for (int64_t e = 0; e < entries; ++e) {
    std::memcpy(&table.data<int32_t>()[2 * e], &scales[e], 4);
    table.data<int32_t>()[2 * e + 1] = biases[e];
  }

  const te::Tensor a = ctx.input(av);
  const te::Tensor b = ctx.derived_constant(node.name + ".b_minus_zp", Bp);
  const te::Tensor q = ctx.derived_constant(node.name + ".fix_table", table);
  // out[.., m, n] = sum_k a[.., m, k] * b'[k, n]: the raw integer product (the fix applies the
  // table); batch dims of A are the output's.
  const Shape& os = yv->shape;
  auto r = te::reduce_axis(K, "rk");
  auto t = std::const_pointer_cast<te::TensorNode>(te::compute(
      node.name, os,
      [&](const std::vector<L::Expr>& i) {
        std::vector<L::Expr> ai(i.begin(), i.end() - 1);
        ai.push_back(L::var_ref(r.var));
        return te::sum(L::mul(te::read(a, ai), te::read(b, {L::var_ref(r.var), i.back()})), {r});
      },
      "matmul", yv->dtype));
  t->attrs = {{"trans_a", {0}},
              {"trans_b", {0}},
              {"int8", {1}},
              {"per_channel", {entries > 1}},
              {"zero_point", {static_cast<int64_t>(yzp[0])}}};
  t->extra_inputs = {a, b, q};
  return t;
}

}  // namespace tessel::npu_backend
