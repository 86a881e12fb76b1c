// The NPU's quantised contractions (see int8_ops.h).
#include "compiler/backend/npu/int8_ops.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

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

bool is_npu_int8_op(const Node& node) {
  return node.op_type == "QLinearMatMul" || node.op_type == "MatMulInteger";
}

te::Tensor npu_int8_compute(const Node& node, lower::ComputeContext& ctx) {
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
