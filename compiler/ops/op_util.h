// Helpers shared by the op families (compiler/ops/*.cpp): errors that name the node, input and
// attribute access for shape rules, conversion between storage dtypes and the reference's compute
// types, and broadcasting iteration with precomputed strides.
//
// Compute types (see op_registry.h): f32 and f16 tensors are computed in float (f16 widened on
// load, rounded to nearest even on store), f64 in double, every integer dtype in int64_t, bool as
// uint8_t 0/1.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"
#include "compiler/support/fp16.h"

namespace tessel::ops {

// ---------------------------------------------------------------------------------------------
// Errors naming the node
// ---------------------------------------------------------------------------------------------

/// Throws tessel::Error "<node.describe()>: <message>".
template <class... Args>
[[noreturn]] void node_fail(const Node& node, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(
      fmt::format("{}: {}", node.describe(), fmt::format(format, std::forward<Args>(args)...)));
}

/// Throws tessel::Unsupported "<node.describe()>: <message>" (a valid model tessel does not
/// handle).
template <class... Args>
[[noreturn]] void node_unsupported(const Node& node, fmt::format_string<Args...> format,
                                   Args&&... args) {
  throw Unsupported(
      fmt::format("{}: {}", node.describe(), fmt::format(format, std::forward<Args>(args)...)));
}

// ---------------------------------------------------------------------------------------------
// Shape-rule helpers
// ---------------------------------------------------------------------------------------------

/// Checks that the node has between min_inputs and max_inputs input slots (trailing omitted ones
/// count as absent) and between min_outputs and max_outputs outputs; throws tessel::Error
/// otherwise.
void check_arity(const Node& node, size_t min_inputs, size_t max_inputs, size_t min_outputs,
                 size_t max_outputs);

/// Required input `i` (throws tessel::Error naming `role` when it is absent).
const Value& required_input(const Node& node, size_t i, const char* role);

/// The compile-time value of input `i` (Value::constant). Throws tessel::Unsupported naming the
/// node and `role` when the value is not known at compile time, tessel::Error when the input is
/// absent.
const Tensor& constant_input(const Node& node, size_t i, const char* role);

/// Sets dtype and shape of output `i` (ignored when that optional output is omitted).
void set_output(Node& node, size_t i, DType dtype, Shape shape);

/// Normalises `axis` in [-rank, rank-1] to [0, rank-1]; throws tessel::Error naming `what`.
int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank, const char* what);

/// Normalised, checked list of axes (each in [-rank, rank-1], no duplicates).
std::vector<int64_t> normalize_axes(const Node& node, const std::vector<int64_t>& axes,
                                    int64_t rank, const char* what);

/// Throws tessel::Error unless `dtype` is one of `allowed` (`role` names the input or output).
void expect_dtype(const Node& node, DType dtype, std::initializer_list<DType> allowed,
                  const char* role);
/// Throws tessel::Error unless `dtype` is f16, f32 or f64.
void expect_float(const Node& node, DType dtype, const char* role);
/// Throws tessel::Error unless `dtype` is numeric (float or integer; not bool/string/undefined).
void expect_numeric(const Node& node, DType dtype, const char* role);
/// Throws tessel::Error unless `dtype` is an integer type (signed or unsigned).
void expect_integer(const Node& node, DType dtype, const char* role);
/// Throws tessel::Error unless inputs i and j have the same dtype.
void expect_same_dtype(const Node& node, size_t i, size_t j);

bool dtype_is_integer(DType t);
bool dtype_is_signed_integer(DType t);

/// Reads an int64 list from a 1-D (or scalar) integer tensor.
std::vector<int64_t> tensor_to_int64s(const Node& node, const Tensor& t, const char* role);
/// Reads a double list from a float or integer tensor.
std::vector<double> tensor_to_doubles(const Node& node, const Tensor& t, const char* role);

/// Unidirectional broadcast check: `from` can be broadcast to `to` (ONNX Broadcasting.md).
bool unidirectional_broadcastable(const Shape& from, const Shape& to);

/// Row-major strides (in elements) of `shape`.
std::vector<int64_t> row_major_strides(const Shape& shape);

// ---------------------------------------------------------------------------------------------
// Compute types and conversion
// ---------------------------------------------------------------------------------------------

/// The reference's compute type for a storage dtype.
template <DType D>
struct ComputeOf {
  using type = int64_t;
};
template <>
struct ComputeOf<DType::f32> {
  using type = float;
};
template <>
struct ComputeOf<DType::f16> {
  using type = float;
};
template <>
struct ComputeOf<DType::f64> {
  using type = double;
};

/// Loads element i of a raw buffer with storage dtype `dtype` as compute type C.
template <class C>
inline C load_as(const std::byte* data, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::f32:
      return static_cast<C>(reinterpret_cast<const float*>(data)[i]);
    case DType::f64:
      return static_cast<C>(reinterpret_cast<const double*>(data)[i]);
    case DType::f16:
      return static_cast<C>(f16_bits_to_f32(reinterpret_cast<const uint16_t*>(data)[i]));
    case DType::i8:
      return static_cast<C>(reinterpret_cast<const int8_t*>(data)[i]);
    case DType::u8:
    case DType::boolean:
      return static_cast<C>(reinterpret_cast<const uint8_t*>(data)[i]);
    case DType::i16:
      return static_cast<C>(reinterpret_cast<const int16_t*>(data)[i]);
    case DType::u16:
      return static_cast<C>(reinterpret_cast<const uint16_t*>(data)[i]);
    case DType::i32:
      return static_cast<C>(reinterpret_cast<const int32_t*>(data)[i]);
    case DType::u32:
      return static_cast<C>(reinterpret_cast<const uint32_t*>(data)[i]);
    case DType::i64:
      return static_cast<C>(reinterpret_cast<const int64_t*>(data)[i]);
    case DType::u64:
      return static_cast<C>(reinterpret_cast<const uint64_t*>(data)[i]);
    default:
      internal_fail("load_as: dtype {} has no numeric compute type", dtype_to_string(dtype));
  }
}

/// Converts a compute value to an integer storage type: floats truncate toward zero (NaN -> 0,
/// out-of-range values saturate, so the conversion is never undefined behaviour); integers wrap.
template <class S, class C>
inline S to_int_storage(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    if (!(v == v)) return 0;
    const long double lv = static_cast<long double>(v);
    if (lv <= static_cast<long double>(std::numeric_limits<S>::lowest()))
      return std::numeric_limits<S>::lowest();
    if (lv >= static_cast<long double>(std::numeric_limits<S>::max()))
      return std::numeric_limits<S>::max();
    return static_cast<S>(v);
  } else {
    return static_cast<S>(v);
  }
}

/// Stores compute value v at element i of a raw buffer with storage dtype `dtype` (f16 rounded to
/// nearest even, bool = v != 0, integers wrap like a C cast, floats to integers truncate).
template <class C>
inline void store_as(std::byte* data, DType dtype, int64_t i, C v) {
  switch (dtype) {
    case DType::f32:
      reinterpret_cast<float*>(data)[i] = static_cast<float>(v);
      return;
    case DType::f64:
      reinterpret_cast<double*>(data)[i] = static_cast<double>(v);
      return;
    case DType::f16:
      reinterpret_cast<uint16_t*>(data)[i] = f32_to_f16_bits(static_cast<float>(v));
      return;
    case DType::boolean:
      reinterpret_cast<uint8_t*>(data)[i] = v != C(0) ? 1 : 0;
      return;
    case DType::i8:
      reinterpret_cast<int8_t*>(data)[i] = to_int_storage<int8_t>(v);
      return;
    case DType::u8:
      reinterpret_cast<uint8_t*>(data)[i] = to_int_storage<uint8_t>(v);
      return;
    case DType::i16:
      reinterpret_cast<int16_t*>(data)[i] = to_int_storage<int16_t>(v);
      return;
    case DType::u16:
      reinterpret_cast<uint16_t*>(data)[i] = to_int_storage<uint16_t>(v);
      return;
    case DType::i32:
      reinterpret_cast<int32_t*>(data)[i] = to_int_storage<int32_t>(v);
      return;
    case DType::u32:
      reinterpret_cast<uint32_t*>(data)[i] = to_int_storage<uint32_t>(v);
      return;
    case DType::i64:
      reinterpret_cast<int64_t*>(data)[i] = to_int_storage<int64_t>(v);
      return;
    case DType::u64:
      reinterpret_cast<uint64_t*>(data)[i] = to_int_storage<uint64_t>(v);
      return;
    default:
      internal_fail("store_as: dtype {} has no numeric storage", dtype_to_string(dtype));
  }
}

/// True when a tensor of `dtype` stores exactly compute type C (no conversion needed).
template <class C>
constexpr bool stores_natively(DType dtype) {
  if constexpr (std::is_same_v<C, float>) return dtype == DType::f32;
  if constexpr (std::is_same_v<C, double>) return dtype == DType::f64;
  if constexpr (std::is_same_v<C, int64_t>) return dtype == DType::i64;
  if constexpr (std::is_same_v<C, uint8_t>) return dtype == DType::boolean || dtype == DType::u8;
  return false;
}

/// A read-only view of a tensor in compute type C: points at the tensor's storage when it already
/// holds C, otherwise owns a converted copy.
template <class C>
class InputView {
 public:
  explicit InputView(const Tensor& t) {
    if (stores_natively<C>(t.dtype())) {
      ptr_ = t.data<C>();
    } else {
      const int64_t n = t.numel();
      copy_.resize(static_cast<size_t>(n));
      const std::byte* raw = t.raw();
      const DType dt = t.dtype();
      for (int64_t i = 0; i < n; ++i) copy_[i] = load_as<C>(raw, dt, i);
      ptr_ = copy_.data();
    }
  }
  InputView(const InputView&) = delete;
  InputView& operator=(const InputView&) = delete;
  const C* data() const { return ptr_; }
  const C& operator[](int64_t i) const { return ptr_[i]; }

 private:
  const C* ptr_ = nullptr;
  std::vector<C> copy_;
};

/// An output being written in compute type C; finish() returns the tensor in storage `dtype`
/// (converting when the dtype does not store C natively).
template <class C>
class OutputBuffer {
 public:
  OutputBuffer(DType dtype, Shape shape) : tensor_(dtype, std::move(shape)) {
    if (stores_natively<C>(dtype)) {
      ptr_ = tensor_.data<C>();
    } else {
      copy_.assign(static_cast<size_t>(tensor_.numel()), C{});
      ptr_ = copy_.data();
    }
  }
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;
  C* data() { return ptr_; }
  C& operator[](int64_t i) { return ptr_[i]; }
  int64_t numel() const { return tensor_.numel(); }
  Tensor finish() {
    if (!copy_.empty()) {
      std::byte* raw = tensor_.raw();
      const DType dt = tensor_.dtype();
      const int64_t n = static_cast<int64_t>(copy_.size());
      for (int64_t i = 0; i < n; ++i) store_as<C>(raw, dt, i, copy_[i]);
    }
    return std::move(tensor_);
  }

 private:
  Tensor tensor_;
  C* ptr_ = nullptr;
  std::vector<C> copy_;
};

/// Calls f(C{}) with the compute type of a numeric dtype: float for f16/f32, double for f64,
/// int64_t for integers. Throws tessel::Unsupported naming the node for other dtypes.
template <class F>
decltype(auto) dispatch_numeric(const Node& node, DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32:
    case DType::f16:
      return f(float{});
    case DType::f64:
      return f(double{});
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16:
    case DType::i32:
    case DType::u32:
    case DType::i64:
    case DType::u64:
      return f(int64_t{});
    default:
      node_unsupported(node, "dtype {} is not supported by the reference kernel",
                       dtype_to_string(dtype));
  }
}

/// Like dispatch_numeric, for ops defined on floats only (throws tessel::Error otherwise).
template <class F>
decltype(auto) dispatch_float(const Node& node, DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32:
    case DType::f16:
      return f(float{});
    case DType::f64:
      return f(double{});
    default:
      node_fail(node, "expected a float tensor (f16/f32/f64), got {}", dtype_to_string(dtype));
  }
}

/// A kernel result holding one output, moved in (a braced std::vector<Tensor>{t} would copy it).
inline std::vector<Tensor> one_output(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

/// Copies a tensor's bytes into a new tensor of the same dtype and the given shape.
Tensor copy_reshaped(const Tensor& t, Shape shape);

/// Required runtime input i of a reference kernel (throws tessel::Error naming the node if absent).
const Tensor& kernel_input(const Node& node, const std::vector<const Tensor*>& inputs, size_t i,
                           const char* role);

// ---------------------------------------------------------------------------------------------
// Broadcasting iteration
// ---------------------------------------------------------------------------------------------

/// Element strides of `in_shape` viewed as broadcast to `out_shape` (right-aligned; stride 0 on
/// broadcast dims). `in_shape` must be broadcastable to `out_shape`.
std::vector<int64_t> broadcast_strides(const Shape& in_shape, const Shape& out_shape);

/// A loop nest over an output shape with per-operand strides, with adjacent dims merged where every
/// operand allows it (so same-shape operands become one flat loop).
template <size_t N>
struct StridedLoop {
  Shape dims;                                   // merged output dims (at least one)
  std::array<std::vector<int64_t>, N> strides;  // per operand, per merged dim

  StridedLoop(const Shape& out_shape, const std::array<std::vector<int64_t>, N>& operand_strides) {
    const size_t rank = out_shape.size();
    Shape d;
    std::array<std::vector<int64_t>, N> s;
    for (size_t k = 0; k < rank; ++k) {
      if (out_shape[k] == 1) continue;  // size-1 dims contribute nothing
      bool merge = !d.empty();
      if (merge) {
        for (size_t op = 0; op < N; ++op)
          if (s[op].back() != operand_strides[op][k] * out_shape[k]) merge = false;
      }
      if (merge) {
        d.back() *= out_shape[k];
        for (size_t op = 0; op < N; ++op) s[op].back() = operand_strides[op][k];
      } else {
        d.push_back(out_shape[k]);
        for (size_t op = 0; op < N; ++op) s[op].push_back(operand_strides[op][k]);
      }
    }
    if (d.empty()) {
      d.push_back(1);
      for (size_t op = 0; op < N; ++op) s[op].push_back(0);
    }
    dims = std::move(d);
    strides = std::move(s);
  }

  /// Calls fn(out_index, offsets) for every output element in row-major order, where offsets[op]
  /// is operand op's element offset. fn is inlined (a template), no per-element indirection.
  template <class F>
  void run(F&& fn) const {
    const size_t rank = dims.size();
    for (int64_t d : dims)
      if (d == 0) return;
    const int64_t inner = dims[rank - 1];
    std::array<int64_t, N> inner_stride;
    for (size_t op = 0; op < N; ++op) inner_stride[op] = strides[op][rank - 1];
    std::vector<int64_t> idx(rank, 0);
    std::array<int64_t, N> base{};
    int64_t out = 0;
    while (true) {
      std::array<int64_t, N> off = base;
      for (int64_t j = 0; j < inner; ++j) {
        fn(out + j, off);
        for (size_t op = 0; op < N; ++op) off[op] += inner_stride[op];
      }
      out += inner;
      // Advance the odometer over the outer dims.
      size_t k = rank - 1;
      while (true) {
        if (k == 0) return;
        --k;
        ++idx[k];
        for (size_t op = 0; op < N; ++op) base[op] += strides[op][k];
        if (idx[k] < dims[k]) break;
        for (size_t op = 0; op < N; ++op) base[op] -= strides[op][k] * dims[k];
        idx[k] = 0;
      }
    }
  }
};

/// Runs fn(out_index, offsets) over `out_shape` where operand op has shape in_shapes[op]
/// (multidirectional broadcasting).
template <size_t N, class F>
void for_each_broadcast(const Shape& out_shape, const std::array<const Shape*, N>& in_shapes,
                        F&& fn) {
  std::array<std::vector<int64_t>, N> strides;
  for (size_t op = 0; op < N; ++op) strides[op] = broadcast_strides(*in_shapes[op], out_shape);
  StridedLoop<N> loop(out_shape, strides);
  loop.run(std::forward<F>(fn));
}

// ---------------------------------------------------------------------------------------------
// Sliding-window geometry (Conv, MaxPool, AveragePool, LpPool)
// ---------------------------------------------------------------------------------------------

/// Per spatial axis: kernel extent, stride, dilation, begin/end padding and output size.
struct WindowGeometry {
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end, out;
};

/// Computes the window geometry of a Conv/pool node over `in_spatial` (the input's spatial dims)
/// from the attributes strides, dilations (when `has_dilations`), pads, auto_pad and ceil_mode
/// (when `has_ceil_mode`), following the ONNX Conv / MaxPool / AveragePool docs (opset 17):
///   NOTSET: out = floor((in + pb + pe - ((k-1)*d + 1)) / s) + 1 (ceil with ceil_mode=1; a last
///           window that would start beyond the input and begin padding is dropped, as in
///           PyTorch and later ONNX versions, so no window is empty);
///   SAME_UPPER / SAME_LOWER: out = ceil(in / s), total pad = max(0, (out-1)*s + (k-1)*d + 1 - in)
///           split evenly, the odd element at the end (UPPER) or the beginning (LOWER);
///   VALID: no padding, out = floor((in - ((k-1)*d + 1)) / s) + 1.
/// Throws tessel::Error naming the node on inconsistent attribute lengths, non-positive values,
/// an output size < 1, or pads given together with auto_pad.
WindowGeometry window_geometry(const Node& node, const Shape& in_spatial,
                               const std::vector<int64_t>& kernel, bool has_dilations,
                               bool has_ceil_mode);

/// ConvTranspose geometry: batch N, input channels C, output channels M, group, and per spatial
/// axis the input extent, kernel, stride, dilation, begin padding and (in `out`, after N and M) the
/// output extent.
struct ConvTShapes {
  int64_t N, C, M, group;
  Shape in_spatial, kernel, strides, dilations, pad_begin, out;
};

/// The geometry of ConvTranspose `node` with input X of shape `x`, weight W `w` ([C, M/group,
/// K...]) and bias B `b` (null when absent), after the ONNX ConvTranspose doc (opset 11+):
///   out = s*(in-1) + output_padding + ((k-1)*d + 1) - pad_begin - pad_end    (explicit pads)
///   output_shape given: total = s*(in-1) + output_padding + ((k-1)*d+1) - out, split with the
///     odd element at the beginning unless auto_pad=SAME_UPPER (then at the end);
///   auto_pad SAME_*: out = in * s, pads from the same total.
/// Throws tessel::Error naming the node on inconsistent shapes or attributes, Unsupported for
/// more than 3 spatial dims.
ConvTShapes convt_shapes(const Node& node, const Shape& x, const Shape& w, const Shape* b);

/// ONNX QuantizeLinear rounding: round half to even (std::nearbyint in the default rounding mode),
/// then saturate to [lo, hi].
inline int64_t round_half_even_saturate(double v, int64_t lo, int64_t hi) {
  if (!(v == v)) return 0;  // NaN
  const double r = std::nearbyint(v);
  if (r <= static_cast<double>(lo)) return lo;
  if (r >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(r);
}

/// The requantisation of QLinearConv / QLinearMatMul, bit for bit ONNX Runtime's
/// MlasRequantizeOutput (onnxruntime/core/mlas/lib/quantize.cpp): `scale` is the fp32
/// x_scale * w_scale / y_scale (computed in fp32, in that order, as ORT's kernels do), the int32
/// accumulator (bias included) is converted to fp32 and multiplied in fp32, clamped to
/// [lo - zero_point, hi - zero_point], rounded half to even (nearbyintf in the default rounding
/// mode; ORT's magic-number add, equal for |v| < 2^22, which the clamp ensures) and offset by the
/// zero point.
inline int64_t requantize_fp32(int64_t acc, float scale, int64_t zero_point, int64_t lo,
                               int64_t hi) {
  float v = static_cast<float>(acc) * scale;
  v = std::min(std::max(v, static_cast<float>(lo - zero_point)),
               static_cast<float>(hi - zero_point));
  return static_cast<int64_t>(std::nearbyintf(v)) + zero_point;
}

/// Saturation range [lo, hi] of an 8/16/32-bit integer quantized dtype (u8, i8, u16, i16, i32);
/// nullopt for any other dtype. (ONNX QuantizeLinear: saturate to the output type's range.)
std::optional<std::pair<int64_t, int64_t>> quantized_dtype_range(DType dtype);

/// quantized_dtype_range, failing with a node-named error for a dtype outside it.
std::pair<int64_t, int64_t> quantized_range(const Node& node, DType dtype);

/// Registers the ops of each family (called from register_builtin_ops()).
void register_elementwise_ops();
void register_conv_ops();
void register_pool_ops();
void register_matmul_ops();
void register_norm_ops();
void register_reduce_ops();
void register_shape_ops();
void register_resize_ops();
void register_loss_ops();
void register_quant_ops();
void register_misc_ops();
void register_rnn_ops();
void register_sample_ops();
void register_signal_ops();
void register_data_dependent_ops();
void register_control_flow_ops();

}  // namespace tessel::ops
