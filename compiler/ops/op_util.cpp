// Helpers shared by the op families; see op_util.h.
#include "compiler/ops/op_util.h"

#include <algorithm>
#include <cmath>

#include <fmt/ranges.h>

namespace tessel::ops {

void check_arity(const Node& node, size_t min_inputs, size_t max_inputs, size_t min_outputs,
                 size_t max_outputs) {
  size_t n_in = node.inputs.size();
  while (n_in > 0 && node.inputs[n_in - 1] == nullptr) --n_in;  // trailing omitted optionals
  if (n_in < min_inputs || n_in > max_inputs) {
    if (min_inputs == max_inputs) node_fail(node, "expected {} input(s), got {}", min_inputs, n_in);
    node_fail(node, "expected {} to {} inputs, got {}", min_inputs, max_inputs, n_in);
  }
  const size_t n_out = node.outputs.size();
  if (n_out < min_outputs || n_out > max_outputs) {
    if (min_outputs == max_outputs)
      node_fail(node, "expected {} output(s), got {}", min_outputs, n_out);
    node_fail(node, "expected {} to {} outputs, got {}", min_outputs, max_outputs, n_out);
  }
}

const Value& required_input(const Node& node, size_t i, const char* role) {
  const Value* v = node.input(i);
  if (v == nullptr) node_fail(node, "input {} ('{}') is required but absent", i, role);
  return *v;
}

const Tensor& constant_input(const Node& node, size_t i, const char* role) {
  const Value& v = required_input(node, i, role);
  if (!v.is_constant())
    node_unsupported(node,
                     "input {} ('{}', value '{}') must be known at compile time (a constant or a "
                     "value the importer can compute), but it is only known at run time",
                     i, role, v.name);
  return *v.constant;
}

void set_output(Node& node, size_t i, DType dtype, Shape shape) {
  if (i >= node.outputs.size() || node.outputs[i] == nullptr) return;
  node.outputs[i]->dtype = dtype;
  node.outputs[i]->shape = std::move(shape);
}

int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    node_fail(node, "{} {} is out of range for rank {} (expected [{}, {}])", what, axis, rank,
              -rank, rank - 1);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const Node& node, const std::vector<int64_t>& axes,
                                    int64_t rank, const char* what) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(node, a, rank, what);
    if (std::find(out.begin(), out.end(), n) != out.end())
      node_fail(node, "{} contains axis {} twice", what, n);
    out.push_back(n);
  }
  return out;
}

bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16:
    case DType::i32:
    case DType::u32:
    case DType::i64:
    case DType::u64:
      return true;
    default:
      return false;
  }
}

bool dtype_is_signed_integer(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64;
}

void expect_dtype(const Node& node, DType dtype, std::initializer_list<DType> allowed,
                  const char* role) {
  for (DType a : allowed)
    if (a == dtype) return;
  std::string names;
  for (DType a : allowed) {
    if (!names.empty()) names += ", ";
    names += dtype_to_string(a);
  }
  node_fail(node, "{} has dtype {}, expected one of {}", role, dtype_to_string(dtype), names);
}

void expect_float(const Node& node, DType dtype, const char* role) {
  if (!dtype_is_float(dtype))
    node_fail(node, "{} has dtype {}, expected a float type (f16, f32, f64)", role,
              dtype_to_string(dtype));
}

void expect_numeric(const Node& node, DType dtype, const char* role) {
  if (!dtype_is_float(dtype) && !dtype_is_integer(dtype))
    node_fail(node, "{} has dtype {}, expected a numeric type", role, dtype_to_string(dtype));
}

void expect_integer(const Node& node, DType dtype, const char* role) {
  if (!dtype_is_integer(dtype))
    node_fail(node, "{} has dtype {}, expected an integer type", role, dtype_to_string(dtype));
}

void expect_same_dtype(const Node& node, size_t i, size_t j) {
  const Value* a = node.input(i);
  const Value* b = node.input(j);
  if (a && b && a->dtype != b->dtype)
    node_fail(node, "inputs {} and {} must have the same dtype, got {} and {}", i, j,
              dtype_to_string(a->dtype), dtype_to_string(b->dtype));
}

std::vector<int64_t> tensor_to_int64s(const Node& node, const Tensor& t, const char* role) {
  if (!dtype_is_integer(t.dtype()))
    node_fail(node, "{} must be an integer tensor, got {}", role, dtype_to_string(t.dtype()));
  if (t.rank() > 1)
    node_fail(node, "{} must be a scalar or 1-D tensor, got shape {}", role,
              shape_to_string(t.shape()));
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = load_as<int64_t>(t.raw(), t.dtype(), i);
  return out;
}

std::vector<double> tensor_to_doubles(const Node& node, const Tensor& t, const char* role) {
  if (!dtype_is_integer(t.dtype()) && !dtype_is_float(t.dtype()))
    node_fail(node, "{} must be a numeric tensor, got {}", role, dtype_to_string(t.dtype()));
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = load_as<double>(t.raw(), t.dtype(), i);
  return out;
}

bool unidirectional_broadcastable(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[off + i]) return false;
  return true;
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) s[k - 1] = s[k] * shape[k];
  return s;
}

std::vector<int64_t> broadcast_strides(const Shape& in_shape, const Shape& out_shape) {
  TESSEL_CHECK(in_shape.size() <= out_shape.size(), "rank {} > {}", in_shape.size(),
               out_shape.size());
  const size_t off = out_shape.size() - in_shape.size();
  std::vector<int64_t> s(out_shape.size(), 0);
  int64_t stride = 1;
  for (size_t k = in_shape.size(); k-- > 0;) {
    TESSEL_CHECK(in_shape[k] == out_shape[off + k] || in_shape[k] == 1,
                 "shape {} does not broadcast to {}", shape_to_string(in_shape),
                 shape_to_string(out_shape));
    s[off + k] = in_shape[k] == 1 ? 0 : stride;
    stride *= in_shape[k];
  }
  return s;
}

Tensor copy_reshaped(const Tensor& t, Shape shape) {
  Tensor out(t.dtype(), std::move(shape));
  TESSEL_CHECK(out.nbytes() == t.nbytes(), "copy_reshaped: {} bytes vs {}", out.nbytes(),
               t.nbytes());
  if (t.nbytes() > 0) std::memcpy(out.raw(), t.raw(), t.nbytes());
  return out;
}

const Tensor& kernel_input(const Node& node, const std::vector<const Tensor*>& inputs, size_t i,
                           const char* role) {
  if (i >= inputs.size() || inputs[i] == nullptr)
    node_fail(node, "input {} ('{}') is required but absent", i, role);
  return *inputs[i];
}

std::optional<std::pair<int64_t, int64_t>> quantized_dtype_range(DType dtype) {
  switch (dtype) {
    case DType::u8:
      return std::pair<int64_t, int64_t>{0, 255};
    case DType::i8:
      return std::pair<int64_t, int64_t>{-128, 127};
    case DType::u16:
      return std::pair<int64_t, int64_t>{0, 65535};
    case DType::i16:
      return std::pair<int64_t, int64_t>{-32768, 32767};
    case DType::i32:
      return std::pair<int64_t, int64_t>{std::numeric_limits<int32_t>::min(),
                                         std::numeric_limits<int32_t>::max()};
    default:
      return std::nullopt;
  }
}

std::pair<int64_t, int64_t> quantized_range(const Node& node, DType dtype) {
  if (auto r = quantized_dtype_range(dtype)) return *r;
  node_fail(node, "quantized dtype {} is not one of u8, i8, u16, i16, i32", dtype_to_string(dtype));
}

WindowGeometry window_geometry(const Node& node, const Shape& in_spatial,
                               const std::vector<int64_t>& kernel, bool has_dilations,
                               bool has_ceil_mode) {
  const size_t n = in_spatial.size();
  const std::string& nn = node.name;
  WindowGeometry g;
  g.kernel = kernel;
  if (kernel.size() != n)
    node_fail(node, "kernel has {} spatial dims, input has {}", kernel.size(), n);
  g.strides = node.attrs.get_ints_or("strides", std::vector<int64_t>(n, 1), nn);
  g.dilations = has_dilations ? node.attrs.get_ints_or("dilations", std::vector<int64_t>(n, 1), nn)
                              : std::vector<int64_t>(n, 1);
  if (!has_dilations && node.attrs.has("dilations"))
    node_unsupported(node, "attribute dilations is not supported for this op");
  std::vector<int64_t> pads = node.attrs.get_ints_or("pads", std::vector<int64_t>(2 * n, 0), nn);
  const std::string auto_pad = node.attrs.get_string_or("auto_pad", "NOTSET", nn);
  const bool ceil_mode = has_ceil_mode && node.attrs.get_int_or("ceil_mode", 0, nn) != 0;
  if (g.strides.size() != n)
    node_fail(node, "strides has {} entries, expected {}", g.strides.size(), n);
  if (g.dilations.size() != n)
    node_fail(node, "dilations has {} entries, expected {}", g.dilations.size(), n);
  if (pads.size() != 2 * n) node_fail(node, "pads has {} entries, expected {}", pads.size(), 2 * n);
  for (size_t i = 0; i < n; ++i) {
    if (g.kernel[i] < 1)
      node_fail(node, "kernel size {} on spatial axis {} must be >= 1", g.kernel[i], i);
    if (g.strides[i] < 1) node_fail(node, "strides[{}] = {} must be >= 1", i, g.strides[i]);
    if (g.dilations[i] < 1) node_fail(node, "dilations[{}] = {} must be >= 1", i, g.dilations[i]);
    if (pads[i] < 0 || pads[i + n] < 0)
      node_fail(node, "pads [{}] must be non-negative", fmt::join(pads, ","));
  }
  if (auto_pad != "NOTSET") {
    for (int64_t p : pads)
      if (p != 0) node_fail(node, "explicit pads cannot be combined with auto_pad={}", auto_pad);
  }
  g.pad_begin.assign(n, 0);
  g.pad_end.assign(n, 0);
  g.out.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = in_spatial[i], s = g.strides[i];
    const int64_t eff = (g.kernel[i] - 1) * g.dilations[i] + 1;  // dilated kernel extent
    if (auto_pad == "NOTSET") {
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[i + n];
      const int64_t span = in + pads[i] + pads[i + n] - eff;
      if (span < 0)
        node_fail(node, "kernel extent {} exceeds padded input {} on spatial axis {}", eff,
                  in + pads[i] + pads[i + n], i);
      int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
      if (ceil_mode && (out - 1) * s >= in + pads[i]) --out;
      g.out[i] = out;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + eff - in);
      const int64_t small = total / 2;
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : total - small;
      g.pad_end[i] = total - g.pad_begin[i];
      g.out[i] = out;
    } else if (auto_pad == "VALID") {
      if (in < eff)
        node_fail(node, "kernel extent {} exceeds input {} on spatial axis {} (auto_pad=VALID)",
                  eff, in, i);
      g.out[i] = (in - eff) / s + 1;
    } else {
      node_fail(node, "auto_pad='{}', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad);
    }
    if (g.out[i] < 1) node_fail(node, "output size {} on spatial axis {} is < 1", g.out[i], i);
  }
  return g;
}

}  // namespace tessel::ops
