// Tensor and DType helpers (see tensor.h).
#include "compiler/ir/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "compiler/support/fp16.h"

namespace tessel {

int dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::u8:
      return 1;
    case DType::i8:
      return 1;
    case DType::u16:
      return 2;
    case DType::i16:
      return 2;
    case DType::i32:
      return 4;
    case DType::i64:
      return 8;
    case DType::boolean:
      return 1;
    case DType::f16:
      return 2;
    case DType::f64:
      return 8;
    case DType::u32:
      return 4;
    case DType::u64:
      return 8;
    case DType::undefined:
    case DType::string:
      return 0;
  }
  return 0;
}

const char* dtype_to_string(DType t) {
  switch (t) {
    case DType::undefined:
      return "undefined";
    case DType::f32:
      return "f32";
    case DType::u8:
      return "u8";
    case DType::i8:
      return "i8";
    case DType::u16:
      return "u16";
    case DType::i16:
      return "i16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::string:
      return "string";
    case DType::boolean:
      return "bool";
    case DType::f16:
      return "f16";
    case DType::f64:
      return "f64";
    case DType::u32:
      return "u32";
    case DType::u64:
      return "u64";
  }
  return "invalid";
}

DType dtype_from_string(const std::string& name) {
  static const DType all[] = {DType::undefined, DType::f32,     DType::u8,  DType::i8,
                              DType::u16,       DType::i16,     DType::i32, DType::i64,
                              DType::string,    DType::boolean, DType::f16, DType::f64,
                              DType::u32,       DType::u64};
  for (DType t : all) {
    if (name == dtype_to_string(t)) return t;
  }
  fail(
      "unknown element type '{}' (expected one of f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, "
      "u64, bool, string, undefined)",
      name);
}

bool dtype_is_float(DType t) { return t == DType::f16 || t == DType::f32 || t == DType::f64; }

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("shape {} has a negative dimension", shape_to_string(shape));
    if (__builtin_mul_overflow(n, d, &n))
      fail("shape {} has more elements than a 64-bit count can hold", shape_to_string(shape));
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  s += ']';
  return s;
}

namespace {

// Calls f(T{}) with T the C++ storage type of `t` (uint16_t holds f16 bits, uint8_t holds bool).
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      return f(float{});
    case DType::u8:
      return f(uint8_t{});
    case DType::i8:
      return f(int8_t{});
    case DType::u16:
      return f(uint16_t{});
    case DType::i16:
      return f(int16_t{});
    case DType::i32:
      return f(int32_t{});
    case DType::i64:
      return f(int64_t{});
    case DType::boolean:
      return f(uint8_t{});
    case DType::f16:
      return f(uint16_t{});
    case DType::f64:
      return f(double{});
    case DType::u32:
      return f(uint32_t{});
    case DType::u64:
      return f(uint64_t{});
    case DType::undefined:
    case DType::string:
      break;
  }
  internal_fail("tensor element access with element type '{}'", dtype_to_string(t));
}

// Float -> integer conversion as in ONNX Cast (truncation toward zero). Values outside the target
// range (undefined behaviour in C++) saturate; NaN becomes 0.
template <class I>
I float_to_int(double v) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<I>::lowest())) {
    return std::numeric_limits<I>::lowest();
  }
  if (t >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

// One element of storage type S (dtype `from`) converted to storage type D (dtype `to`).
template <class S, class D>
D convert_element(S s, DType from, DType to) {
  if (to == DType::boolean) {
    if (from == DType::f16) return f16_bits_to_f32(s) != 0.0f ? 1 : 0;
    return s != S{} ? 1 : 0;
  }
  if (from == DType::f16) {
    const float f = f16_bits_to_f32(static_cast<uint16_t>(s));
    if (to == DType::f16) return static_cast<D>(s);
    if constexpr (std::is_floating_point_v<D>) {
      return static_cast<D>(f);
    } else {
      return float_to_int<D>(f);
    }
  }
  if (to == DType::f16) {
    // f64 -> f16 goes through f32 (double rounding is possible only for values within 2^-24
    // relative of an f16 rounding boundary).
    return static_cast<D>(f32_to_f16_bits(static_cast<float>(s)));
  }
  if constexpr (std::is_floating_point_v<S> && !std::is_floating_point_v<D>) {
    return float_to_int<D>(static_cast<double>(s));
  } else {
    return static_cast<D>(s);
  }
}

}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  if (dtype == DType::string) throw Unsupported("string tensors are not supported");
  if (dtype_size(dtype) == 0) {
    fail("cannot create a tensor of element type '{}'", dtype_to_string(dtype));
  }
  for (int64_t d : shape_) {
    if (d < 0) fail("tensor shape {} has a negative dimension", shape_to_string(shape_));
  }
  const int64_t n = numel();
  if (n > kMaxTensorBytes / dtype_size(dtype))
    fail("a {} tensor of shape {} needs {} bytes, more than the {} GiB tessel allows per tensor",
         dtype_to_string(dtype), shape_to_string(shape_),
         static_cast<double>(n) * dtype_size(dtype), kMaxTensorBytes >> 30);
  bytes_.resize(static_cast<size_t>(n) * static_cast<size_t>(dtype_size(dtype)));
}

double Tensor::get_as_double(int64_t i) const {
  TESSEL_CHECK(i >= 0 && i < numel(), "index {} out of range for shape {}", i,
               shape_to_string(shape_));
  if (dtype_ == DType::f16) return f16_bits_to_f32(data<uint16_t>()[i]);
  return visit_dtype(dtype_, [&](auto tag) -> double {
    using T = decltype(tag);
    return static_cast<double>(data<T>()[i]);
  });
}

void Tensor::set_from_double(int64_t i, double v) {
  TESSEL_CHECK(i >= 0 && i < numel(), "index {} out of range for shape {}", i,
               shape_to_string(shape_));
  if (dtype_ == DType::f16) {
    data<uint16_t>()[i] = f32_to_f16_bits(static_cast<float>(v));
    return;
  }
  if (dtype_ == DType::boolean) {
    data<uint8_t>()[i] = v != 0.0 ? 1 : 0;
    return;
  }
  visit_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      data<T>()[i] = static_cast<T>(v);
    } else {
      data<T>()[i] = float_to_int<T>(v);
    }
  });
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  if (dtype_is_float(dtype_) || dtype_size(dtype_) == 0) {
    fail("expected an integer tensor, got {}{}", dtype_to_string(dtype_), shape_to_string(shape_));
  }
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  visit_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    const T* p = data<T>();
    for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<int64_t>(p[k]);
  });
  return out;
}

std::vector<float> Tensor::to_float_vector() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  if (dtype_ == DType::f16) {
    const uint16_t* p = data<uint16_t>();
    for (size_t k = 0; k < out.size(); ++k) out[k] = f16_bits_to_f32(p[k]);
    return out;
  }
  visit_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    const T* p = data<T>();
    for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<float>(p[k]);
  });
  return out;
}

Tensor Tensor::reshaped(Shape new_shape) const {
  if (shape_numel(new_shape) != numel()) {
    fail("cannot reshape a tensor of shape {} ({} elements) to {} ({} elements)",
         shape_to_string(shape_), numel(), shape_to_string(new_shape), shape_numel(new_shape));
  }
  for (int64_t d : new_shape) {
    if (d < 0) fail("cannot reshape to {}: negative dimension", shape_to_string(new_shape));
  }
  Tensor out = *this;
  out.shape_ = std::move(new_shape);
  return out;
}

Tensor Tensor::cast(DType to) const {
  Tensor out(to, shape_);
  const int64_t n = numel();
  visit_dtype(dtype_, [&](auto src_tag) {
    using S = decltype(src_tag);
    visit_dtype(to, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      const S* src = data<S>();
      D* dst = out.data<D>();
      if (dtype_ == to) {
        std::memcpy(dst, src, nbytes());
        return;
      }
      for (int64_t k = 0; k < n; ++k) dst[k] = convert_element<S, D>(src[k], dtype_, to);
    });
  });
  return out;
}

Tensor Tensor::from_floats(const Shape& shape, const std::vector<float>& values) {
  Tensor t(DType::f32, shape);
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    fail("Tensor::from_floats: {} values for shape {} ({} elements)", values.size(),
         shape_to_string(shape), t.numel());
  }
  if (!values.empty()) std::memcpy(t.raw(), values.data(), t.nbytes());
  return t;
}

Tensor Tensor::from_int64s(const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t(DType::i64, shape);
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    fail("Tensor::from_int64s: {} values for shape {} ({} elements)", values.size(),
         shape_to_string(shape), t.numel());
  }
  if (!values.empty()) std::memcpy(t.raw(), values.data(), t.nbytes());
  return t;
}

Tensor Tensor::scalar_f32(float v) { return from_floats({}, {v}); }

}  // namespace tessel
