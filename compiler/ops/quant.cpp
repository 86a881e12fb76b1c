// Linear quantization: QuantizeLinear, DequantizeLinear (opset 13: per-tensor or per-axis scale
// and zero point) and DynamicQuantizeLinear (opset 11); ONNX operator docs.
//   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point), y has the zero
//                     point's dtype (u8 when absent); x / scale in fp32 as the ONNX reference.
//   DequantizeLinear: y = (x - zero_point) * scale in fp32.
//   DynamicQuantizeLinear: scale = (max(0, max x) - min(0, min x)) / 255,
//                     zero_point = saturate(round(-min(0, min x) / scale)), y = quantize(x) (u8).
#include <cmath>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

/// Per-element parameter index: 0 for a per-tensor (numel 1) parameter, else the coordinate of
/// the element along `axis` (per-axis parameter of length shape[axis]).
struct AxisParam {
  int64_t inner = 1, dim = 1;
  bool per_axis = false;
  int64_t index(int64_t i) const { return per_axis ? (i / inner) % dim : 0; }
};

AxisParam axis_param(const Node& node, const Shape& x, const Shape& param, const char* role) {
  AxisParam p;
  if (shape_numel(param) == 1 && param.size() <= 1) return p;
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t axis =
      normalize_axis(node, node.attrs.get_int_or("axis", 1, node.name), rank, "attribute axis");
  if (param.size() != 1 || param[0] != x[axis])
    node_fail(node, "{} has shape {}, expected a scalar or [{}] (axis {})", role,
              shape_to_string(param), x[axis], axis);
  p.per_axis = true;
  p.dim = x[axis];
  for (int64_t k = axis + 1; k < rank; ++k) p.inner *= x[k];
  return p;
}

void quantize_infer(Node& node) {
  check_arity(node, 2, 3, 1, 1);
  const Value& x = required_input(node, 0, "x");
  const Value& s = required_input(node, 1, "y_scale");
  expect_dtype(node, x.dtype, {DType::f32, DType::i32}, "input x");
  expect_dtype(node, s.dtype, {DType::f32}, "input y_scale");
  axis_param(node, x.shape, s.shape, "y_scale");
  DType out = DType::u8;
  if (const Value* zp = node.input(2)) {
    expect_dtype(node, zp->dtype, {DType::u8, DType::i8}, "input y_zero_point");
    if (zp->shape != s.shape) node_fail(node, "y_zero_point and y_scale shapes differ");
    out = zp->dtype;
  }
  set_output(node, 0, out, x.shape);
}

std::vector<Tensor> quantize_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 2, 3, 1, 1);
  const Tensor& x = kernel_input(node, inputs, 0, "x");
  const Tensor& s = kernel_input(node, inputs, 1, "y_scale");
  const Tensor* zp = inputs.size() > 2 ? inputs[2] : nullptr;
  const AxisParam ap = axis_param(node, x.shape(), s.shape(), "y_scale");
  if (zp && zp->shape() != s.shape()) node_fail(node, "y_zero_point and y_scale shapes differ");
  const DType out_dtype = zp ? zp->dtype() : DType::u8;
  const auto [lo, hi] = quantized_range(node, out_dtype);
  InputView<float> vx(x), vs(s);
  Tensor y(out_dtype, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = ap.index(i);
    const int64_t z = zp ? load_as<int64_t>(zp->raw(), zp->dtype(), c) : 0;
    const float q = vx[i] / vs[c];  // fp32 division, as the ONNX reference
    store_as<int64_t>(y.raw(), out_dtype, i, round_half_even_saturate(q, lo - z, hi - z) + z);
  }
  return one_output(std::move(y));
}

void dequantize_infer(Node& node) {
  check_arity(node, 2, 3, 1, 1);
  const Value& x = required_input(node, 0, "x");
  const Value& s = required_input(node, 1, "x_scale");
  expect_dtype(node, x.dtype, {DType::u8, DType::i8, DType::i32}, "input x");
  expect_dtype(node, s.dtype, {DType::f32}, "input x_scale");
  axis_param(node, x.shape, s.shape, "x_scale");
  if (const Value* zp = node.input(2)) {
    expect_same_dtype(node, 0, 2);
    if (zp->shape != s.shape) node_fail(node, "x_zero_point and x_scale shapes differ");
  }
  set_output(node, 0, DType::f32, x.shape);
}

std::vector<Tensor> dequantize_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 2, 3, 1, 1);
  const Tensor& x = kernel_input(node, inputs, 0, "x");
  const Tensor& s = kernel_input(node, inputs, 1, "x_scale");
  const Tensor* zp = inputs.size() > 2 ? inputs[2] : nullptr;
  const AxisParam ap = axis_param(node, x.shape(), s.shape(), "x_scale");
  if (zp && zp->shape() != s.shape()) node_fail(node, "x_zero_point and x_scale shapes differ");
  InputView<float> vs(s);
  Tensor y(DType::f32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = ap.index(i);
    const float z = zp ? load_as<float>(zp->raw(), zp->dtype(), c) : 0.0f;
    y.data<float>()[i] = (load_as<float>(x.raw(), x.dtype(), i) - z) * vs[c];
  }
  return one_output(std::move(y));
}

std::vector<Tensor> dynamic_quantize_kernel(const Node& node,
                                            const std::vector<const Tensor*>& inputs) {
  check_arity(node, 1, 1, 3, 3);
  const Tensor& x = kernel_input(node, inputs, 0, "x");
  if (x.dtype() != DType::f32) node_fail(node, "input x must be f32");
  const float* p = x.data<float>();
  float mn = 0, mx = 0;  // the range always includes 0
  for (int64_t i = 0; i < x.numel(); ++i) {
    mn = std::min(mn, p[i]);
    mx = std::max(mx, p[i]);
  }
  const float scale = (mx - mn) / 255.0f;
  const int64_t zp = scale == 0 ? 0 : round_half_even_saturate((0.0f - mn) / scale, 0, 255);
  Tensor y(DType::u8, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float q = scale == 0 ? 0.0f : p[i] / scale;
    y.data<uint8_t>()[i] = static_cast<uint8_t>(round_half_even_saturate(q, -zp, 255 - zp) + zp);
  }
  Tensor ts(DType::f32, {});
  ts.data<float>()[0] = scale;
  Tensor tz(DType::u8, {});
  tz.data<uint8_t>()[0] = static_cast<uint8_t>(zp);
  std::vector<Tensor> outs;
  outs.push_back(std::move(y));
  outs.push_back(std::move(ts));
  outs.push_back(std::move(tz));
  return outs;
}

}  // namespace

void register_quant_ops() {
  register_op({"QuantizeLinear", quantize_infer, quantize_kernel});
  register_op({"DequantizeLinear", dequantize_infer, dequantize_kernel});
  register_op({"DynamicQuantizeLinear",
               [](Node& node) {
                 check_arity(node, 1, 1, 3, 3);
                 const Value& x = required_input(node, 0, "x");
                 expect_dtype(node, x.dtype, {DType::f32}, "input x");
                 set_output(node, 0, DType::u8, x.shape);
                 set_output(node, 1, DType::f32, {});
                 set_output(node, 2, DType::u8, {});
               },
               dynamic_quantize_kernel});
}

}  // namespace tessel::ops
