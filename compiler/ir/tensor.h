// Tensor: a dense, row-major, typed n-d array owned by value. Used for constants in the Graph IR,
// for model inputs/outputs and by the reference interpreter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/support/error.h"

namespace tessel {

/// Element types, with the same numbering as ONNX TensorProto.DataType.
enum class DType : int {
  undefined = 0,
  f32 = 1,
  u8 = 2,
  i8 = 3,
  u16 = 4,
  i16 = 5,
  i32 = 6,
  i64 = 7,
  string = 8,
  boolean = 9,
  f16 = 10,
  f64 = 11,
  u32 = 12,
  u64 = 13,
};

/// Bytes per element (0 for undefined/string).
int dtype_size(DType t);
/// Short name used by the IR text form: "f32", "f16", "f64", "i8", ..., "bool".
const char* dtype_to_string(DType t);
/// Inverse of dtype_to_string; throws tessel::Error on an unknown name.
DType dtype_from_string(const std::string& name);
/// True for f16/f32/f64.
bool dtype_is_float(DType t);

using Shape = std::vector<int64_t>;

/// Largest tensor tessel materialises (host memory guard), bytes.
inline constexpr int64_t kMaxTensorBytes = int64_t{4} << 30;

/// Number of elements of `shape` (1 for a scalar, i.e. an empty shape). Throws tessel::Error on
/// a negative dimension or when the count overflows int64.
int64_t shape_numel(const Shape& shape);
/// "[1,3,48,192]".
std::string shape_to_string(const Shape& shape);

/// A dense row-major tensor. Storage is raw bytes; typed access through data<T>() where T must
/// match the dtype's C++ type (float, double, uint16_t for f16 bits, int8_t, ..., int64_t, uint8_t
/// for bool).
class Tensor {
 public:
  Tensor() = default;
  /// Zero-initialised tensor.
  Tensor(DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_numel(shape_); }
  int rank() const { return static_cast<int>(shape_.size()); }
  size_t nbytes() const { return bytes_.size(); }

  template <class T>
  T* data() {
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes_.data());
  }
  std::byte* raw() { return bytes_.data(); }
  const std::byte* raw() const { return bytes_.data(); }

  /// Element `i` (flat index) converted to double, whatever the dtype (f16 decoded).
  double get_as_double(int64_t i) const;
  /// Stores `v` at flat index `i`, converting to the dtype (f16 rounded to nearest even).
  void set_from_double(int64_t i, double v);

  /// All elements as int64 (for shape-like tensors); throws tessel::Error for non-integer dtypes.
  std::vector<int64_t> to_int64_vector() const;
  /// All elements converted to float.
  std::vector<float> to_float_vector() const;

  /// A copy with the same data and a new shape of equal element count.
  Tensor reshaped(Shape new_shape) const;
  /// A copy converted element by element to `dtype` (ONNX Cast semantics for numeric types).
  Tensor cast(DType dtype) const;

  static Tensor from_floats(const Shape& shape, const std::vector<float>& values);
  static Tensor from_int64s(const Shape& shape, const std::vector<int64_t>& values);
  static Tensor scalar_f32(float v);

 private:
  DType dtype_ = DType::undefined;
  Shape shape_;
  std::vector<std::byte> bytes_;
};

}  // namespace tessel
