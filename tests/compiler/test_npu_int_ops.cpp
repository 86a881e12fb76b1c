// Integer and bool tensors on the NPU: every case compiles a graph with integer or bool inputs
// (or a float -> integer/bool conversion), runs it with check_npu (npu_test_util.h: the SystemC
// model computes the interpreter's bits, the multicore program the single-core program's bits)
// and requires every integer and bool output to equal the reference interpreter's (compiler/ops)
// bit for bit, in the same dtype: there is no tolerance for integers. Float outputs of a
// conversion (Cast int -> float) are exact too, because the cases keep |x| <= 2048, where fp16
// represents every integer. Float inputs of comparisons and of Cast float -> int lie on the fp16
// grid (multiples of 1/4 in [-64, 64]), so their conversion to the activation dtype is exact.
//
// Semantics stated and tested (ONNX operator docs; ONNX Runtime's CPU kernels; docs/isa.md):
//   - Add, Sub, Mul wrap (two's complement) at the type's width: i8 100 + 100 = -56, i32
//     2^31 - 1 + 1 = -2^31, i64 near 2^62 products wrap mod 2^64, u8 200 * 3 = 88;
//   - Div of integers truncates toward zero (-7 / 2 = -3, 7 / -2 = -3);
//   - Min, Max, Abs, Neg are exact (Abs/Neg of the lowest value wrap to itself);
//   - comparisons give bool; Where copies its branches bit-exactly; And/Or/Xor/Not on bool;
//   - Cast: float -> int truncates toward zero, int -> int wraps (keeps the low bits),
//     anything -> bool is != 0, bool -> number is 0/1.
#include <fmt/format.h>

#include <functional>

#include "compiler/lower/op_compute.h"
#include "tests/compiler/npu_test_util.h"

namespace tessel::testing {
namespace {

struct IntCase {
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> inputs;
  std::string op;  // the op that must run as a kernel
};
using IntCaseFn = std::function<IntCase()>;

/// The elementwise shape: the last axis (37) is not a multiple of the vector width, so tails run.
const Shape kShape = {3, 40, 37};
const Shape kCol = {40, 1};  // broadcast along the last axis

/// x [3,40,37] op y [40,1] of `dtype`, x in [xlo, xhi], y in [ylo, yhi].
IntCase binary(const std::string& op, DType dtype, int64_t xlo, int64_t xhi, int64_t ylo,
               int64_t yhi) {
  GraphBuilder b;
  Value* x = b.input("x", kShape, dtype);
  Value* y = b.input("y", kCol, dtype);
  Value* z = b.node(op, {x, y});
  return {b.finish({z}),
          {{"x", random_int_tensor(kShape, dtype, 201, xlo, xhi)},
           {"y", random_int_tensor(kCol, dtype, 202, ylo, yhi)}},
          op};
}

IntCase unary(const std::string& op, DType dtype, int64_t lo, int64_t hi, Attributes a = {}) {
  GraphBuilder b;
  Value* x = b.input("x", kShape, dtype);
  Value* y = b.node(op, {x}, std::move(a));
  return {b.finish({y}), {{"x", random_int_tensor(kShape, dtype, 203, lo, hi)}}, op};
}

/// Floats on the fp16 grid: multiples of 1/4 in [lo, hi] (exact in fp16 and fp32).
Tensor quarter_grid(const Shape& shape, uint32_t seed, int64_t lo, int64_t hi) {
  const Tensor q = random_int_tensor(shape, DType::i64, seed, 4 * lo, 4 * hi);
  Tensor t(DType::f32, shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = static_cast<float>(q.data<int64_t>()[i]) / 4.0f;
  return t;
}

/// x op y on floats of the quarter grid in [-4, 4] (many ties for Equal and LessOrEqual).
IntCase float_compare(const std::string& op) {
  GraphBuilder b;
  Value* x = b.input("x", kShape);
  Value* y = b.input("y", kCol);
  Value* z = b.node(op, {x, y});
  return {b.finish({z}),
          {{"x", quarter_grid(kShape, 204, -4, 4)}, {"y", quarter_grid(kCol, 205, -4, 4)}},
          op};
}

IntCase cast(DType from, DType to, Tensor x) {
  GraphBuilder b;
  Value* xv = b.input("x", x.shape(), from);
  Value* y = b.node("Cast", {xv}, attrs({{"to", static_cast<int64_t>(to)}}));
  return {b.finish({y}), {{"x", std::move(x)}}, "Cast"};
}

/// op(data, indices) along `axis` with runtime indices of `index_dtype` and shape `index_shape`,
/// uniform in [-K, K) (K = data.shape[axis]), the first two -K and -1.
IntCase gather(const std::string& op, Tensor data, DType index_dtype, const Shape& index_shape,
               int64_t axis) {
  GraphBuilder b;
  const int64_t K = data.shape()[axis];
  Value* d = b.input("data", data.shape(), data.dtype());
  Value* i = b.input("indices", index_shape, index_dtype);
  Value* y = b.node(op, {d, i}, attrs({{"axis", axis}}));
  // The first index is -K (the first element, from the end) and the second -1 (the last).
  Tensor idx = random_int_tensor(index_shape, index_dtype, 229, -K, K - 1);
  idx.set_from_double(0, static_cast<double>(-K));
  if (idx.numel() > 1) idx.set_from_double(1, -1.0);
  return {b.finish({y}), {{"data", std::move(data)}, {"indices", std::move(idx)}}, op};
}

/// ScatterElements / Scatter of `data` along `axis` with `index_shape` runtime i64 indices
/// uniform in [-K, K) (duplicates occur: the last update in index order wins, or all combine) and
/// `updates` of data's dtype.
IntCase scatter_elements(const std::string& op, Tensor data, const Shape& index_shape,
                         Tensor updates, int64_t axis, const std::string& reduction) {
  GraphBuilder b;
  const int64_t K = data.shape()[axis];
  Value* d = b.input("data", data.shape(), data.dtype());
  Value* i = b.input("indices", index_shape, DType::i64);
  Value* u = b.input("updates", index_shape, data.dtype());
  Attributes a = attrs({{"axis", axis}});
  if (op != "Scatter") a.set("reduction", reduction);
  Value* y = b.node(op, {d, i, u}, a);
  return {b.finish({y}),
          {{"data", std::move(data)},
           {"indices", random_int_tensor(index_shape, DType::i64, 241, -K, K - 1)},
           {"updates", std::move(updates)}},
          op};
}

/// ScatterND of `data` with i64 `indices` [T, L] (components uniform in [-D, D)) and `updates`.
IntCase scatter_nd(Tensor data, int64_t T, int64_t L, Tensor updates, const std::string& reduction,
                   uint32_t seed) {
  GraphBuilder b;
  Value* d = b.input("data", data.shape(), data.dtype());
  Value* i = b.input("indices", {T, L}, DType::i64);
  Value* u = b.input("updates", updates.shape(), data.dtype());
  Value* y = b.node("ScatterND", {d, i, u}, attrs({{"reduction", reduction}}));
  Tensor idx(DType::i64, {T, L});
  const Tensor r = random_int_tensor({T, L}, DType::i64, seed, 0, 1 << 20);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < L; ++k) {
      const int64_t D = data.shape()[k];
      idx.data<int64_t>()[t * L + k] = r.data<int64_t>()[t * L + k] % (2 * D) - D;
    }
  return {b.finish({y}),
          {{"data", std::move(data)}, {"indices", std::move(idx)}, {"updates", std::move(updates)}},
          "ScatterND"};
}

/// GatherND of `data` with i64 `indices` of `index_shape` (components in [-D, D)).
IntCase gather_nd(Tensor data, const Shape& index_shape, int64_t batch_dims, uint32_t seed) {
  GraphBuilder b;
  Value* d = b.input("data", data.shape(), data.dtype());
  Value* i = b.input("indices", index_shape, DType::i64);
  Value* y = b.node("GatherND", {d, i}, attrs({{"batch_dims", batch_dims}}));
  Tensor idx = random_int_tensor(index_shape, DType::i64, seed, 0, 1 << 20);
  const int64_t L = index_shape.back();
  for (int64_t e = 0; e < idx.numel(); ++e) {
    const int64_t D = data.shape()[batch_dims + e % L];
    idx.data<int64_t>()[e] = idx.data<int64_t>()[e] % (2 * D) - D;
  }
  return {b.finish({y}), {{"data", std::move(data)}, {"indices", std::move(idx)}}, "GatherND"};
}

/// BitShift `direction` of `dtype` x [3,40,37] by y [40,1] in [0, bits + 2] (shifts by the width
/// or more give 0).
IntCase bitshift(DType dtype, const std::string& direction, int64_t xhi) {
  GraphBuilder b;
  const int64_t bits = static_cast<int64_t>(dtype_size(dtype)) * 8;
  Value* x = b.input("x", kShape, dtype);
  Value* y = b.input("y", kCol, dtype);
  Value* z = b.node("BitShift", {x, y}, attrs({{"direction", direction}}));
  return {b.finish({z}),
          {{"x", random_int_tensor(kShape, dtype, 242, 0, xhi)},
           {"y", random_int_tensor(kCol, dtype, 243, 0, bits + 2)}},
          "BitShift"};
}

/// op over `axis` of x [3,40,37] on the quarter grid in [-2, 2].
IntCase arg(const std::string& op, int64_t axis, int64_t keepdims, int64_t last) {
  GraphBuilder b;
  Value* x = b.input("x", kShape);
  Value* y =
      b.node(op, {x}, attrs({{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", last}}));
  return {b.finish({y}), {{"x", quarter_grid(kShape, 233, -2, 2)}}, op};
}

const std::map<std::string, IntCaseFn>& cases() {
  static const std::map<std::string, IntCaseFn> m = {
      // Wrapping arithmetic: operands near the type's limits so most results overflow.
      {"Add_i32_wraps", [] { return binary("Add", DType::i32, 2147483000, 2147483647, 1, 2000); }},
      {"Sub_i32_wraps",
       [] { return binary("Sub", DType::i32, -2147483648, -2147483000, 1, 2000); }},
      {"Mul_i32_wraps", [] { return binary("Mul", DType::i32, -100000, 100000, -90000, 90000); }},
      {"Add_i8_wraps", [] { return binary("Add", DType::i8, 60, 127, 40, 127); }},
      {"Mul_u8_wraps", [] { return binary("Mul", DType::u8, 0, 255, 0, 255); }},
      {"Mul_i64_wraps",
       [] {
         return binary("Mul", DType::i64, int64_t{1} << 40, int64_t{1} << 50, -(int64_t{1} << 30),
                       int64_t{1} << 30);
       }},
      {"Add_i64",
       [] { return binary("Add", DType::i64, -(int64_t{1} << 62), int64_t{1} << 62, -5, 5); }},
      {"Add_i16", [] { return binary("Add", DType::i16, -32768, 32767, -32768, 32767); }},
      // Division truncates toward zero: negative dividends and divisors, no zero divisor.
      {"Div_i32_truncates",
       [] {
         IntCase c = binary("Div", DType::i32, -1000, 1000, 1, 7);
         // y in [1, 7] -> alternate signs so both operand signs occur: y' = y odd ? -y : y.
         Tensor& y = c.inputs.at("y");
         for (int64_t i = 0; i < y.numel(); ++i)
           if (y.data<int32_t>()[i] % 2) y.data<int32_t>()[i] = -y.data<int32_t>()[i];
         return c;
       }},
      {"Min_i32", [] { return binary("Min", DType::i32, -50, 50, -50, 50); }},
      {"Max_i64",
       [] { return binary("Max", DType::i64, -(int64_t{1} << 40), int64_t{1} << 40, -9, 9); }},
      {"Abs_i32", [] { return unary("Abs", DType::i32, -2147483648, 2147483647); }},
      {"Neg_i8", [] { return unary("Neg", DType::i8, -128, 127); }},
      // Scalar constants: vadds with an exact immediate; c - x and x / c broadcast the constant.
      {"Add_i32_scalar_constant",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape, DType::i32);
         Value* y =
             b.node("Add", {x, b.constant("c", Tensor::from_int64s({}, {-7}).cast(DType::i32))});
         return IntCase{
             b.finish({y}),
             {{"x", random_int_tensor(kShape, DType::i32, 206, -2147483648, 2147483647)}},
             "Add"};
       }},
      {"Sub_i32_constant_first",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape, DType::i32);
         Value* y =
             b.node("Sub", {b.constant("c", Tensor::from_int64s({}, {5}).cast(DType::i32)), x});
         return IntCase{
             b.finish({y}),
             {{"x", random_int_tensor(kShape, DType::i32, 207, -2147483648, 2147483647)}},
             "Sub"};
       }},
      {"Sub_u8_constant_first",  // 5 - x wraps mod 256 (the scalar -1 of vmuls would saturate)
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape, DType::u8);
         Value* y =
             b.node("Sub", {b.constant("c", Tensor::from_int64s({}, {5}).cast(DType::u8)), x});
         return IntCase{
             b.finish({y}), {{"x", random_int_tensor(kShape, DType::u8, 230, 0, 255)}}, "Sub"};
       }},
      {"Div_i64_by_constant",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape, DType::i64);
         Value* y = b.node("Div", {x, b.constant("c", Tensor::from_int64s({}, {-3}))});
         return IntCase{b.finish({y}),
                        {{"x", random_int_tensor(kShape, DType::i64, 208, -100000, 100000)}},
                        "Div"};
       }},
      // Comparisons (bool results) on integers with many ties, and on fp16-exact floats.
      {"Equal_i32", [] { return binary("Equal", DType::i32, -3, 3, -3, 3); }},
      {"Less_i64", [] { return binary("Less", DType::i64, -3, 3, -3, 3); }},
      {"LessOrEqual_i8", [] { return binary("LessOrEqual", DType::i8, -3, 3, -3, 3); }},
      {"Greater_u16", [] { return binary("Greater", DType::u16, 0, 6, 0, 6); }},
      {"GreaterOrEqual_i32", [] { return binary("GreaterOrEqual", DType::i32, -3, 3, -3, 3); }},
      {"Equal_float", [] { return float_compare("Equal"); }},
      {"Less_float", [] { return float_compare("Less"); }},
      {"GreaterOrEqual_float", [] { return float_compare("GreaterOrEqual"); }},
      // Logic on bool.
      {"And_bool", [] { return binary("And", DType::boolean, 0, 1, 0, 1); }},
      {"Or_bool", [] { return binary("Or", DType::boolean, 0, 1, 0, 1); }},
      {"Xor_bool", [] { return binary("Xor", DType::boolean, 0, 1, 0, 1); }},
      {"Not_bool", [] { return unary("Not", DType::boolean, 0, 1); }},
      // Where: a bool mask selecting between integer (or float) branches, broadcast.
      {"Where_i32",
       [] {
         GraphBuilder b;
         Value* c = b.input("c", kShape, DType::boolean);
         Value* x = b.input("x", kCol, DType::i32);
         Value* y = b.input("y", kShape, DType::i32);
         Value* z = b.node("Where", {c, x, y});
         return IntCase{
             b.finish({z}),
             {{"c", random_int_tensor(kShape, DType::boolean, 209, 0, 1)},
              {"x", random_int_tensor(kCol, DType::i32, 210, -2147483648, 2147483647)},
              {"y", random_int_tensor(kShape, DType::i32, 211, -2147483648, 2147483647)}},
             "Where"};
       }},
      {"Where_float_scalar_branch",
       [] {
         GraphBuilder b;
         Value* c = b.input("c", kShape, DType::boolean);
         Value* x = b.input("x", kShape);
         Value* z = b.node("Where", {c, x, b.constant("zero", Tensor::from_floats({}, {0.5f}))});
         return IntCase{b.finish({z}),
                        {{"c", random_int_tensor(kShape, DType::boolean, 212, 0, 1)},
                         {"x", quarter_grid(kShape, 213, -64, 64)}},
                        "Where"};
       }},
      // Cast.
      {"Cast_float_to_i32_truncates",
       [] { return cast(DType::f32, DType::i32, quarter_grid(kShape, 214, -64, 64)); }},
      {"Cast_i32_to_float",
       [] {
         return cast(DType::i32, DType::f32,
                     random_int_tensor(kShape, DType::i32, 215, -2048, 2048));
       }},
      {"Cast_i32_to_i8_wraps",
       [] {
         return cast(DType::i32, DType::i8,
                     random_int_tensor(kShape, DType::i32, 216, -100000, 100000));
       }},
      {"Cast_i64_to_i32_wraps",
       [] {
         return cast(
             DType::i64, DType::i32,
             random_int_tensor(kShape, DType::i64, 217, -(int64_t{1} << 40), int64_t{1} << 40));
       }},
      {"Cast_i32_to_bool",
       [] {
         return cast(DType::i32, DType::boolean, random_int_tensor(kShape, DType::i32, 218, -2, 2));
       }},
      {"Cast_bool_to_i64",
       [] {
         return cast(DType::boolean, DType::i64,
                     random_int_tensor(kShape, DType::boolean, 219, 0, 1));
       }},
      {"Cast_float_to_bool",
       [] { return cast(DType::f32, DType::boolean, quarter_grid(kShape, 220, -1, 1)); }},
      {"Cast_bool_to_float",
       [] {
         return cast(DType::boolean, DType::f32,
                     random_int_tensor(kShape, DType::boolean, 221, 0, 1));
       }},
      // Gather / GatherElements: runtime indices, negative ones counted from the end.
      {"Gather_axis0_float_negative_indices",
       [] {
         return gather("Gather", quarter_grid({5, 6}, 224, -64, 64), DType::i64, {3, 2}, 0);
       }},
      {"Gather_axis1_i32",
       [] {
         return gather("Gather",
                       random_int_tensor({4, 7, 3}, DType::i32, 225, -2147483648, 2147483647),
                       DType::i32, {5}, 1);
       }},
      {"Gather_scalar_index_i64",
       [] {
         return gather(
             "Gather",
             random_int_tensor({6, 4}, DType::i64, 226, -(int64_t{1} << 60), int64_t{1} << 60),
             DType::i64, {}, 0);
       }},
      {"GatherElements_axis1_i64",
       [] {
         return gather("GatherElements", random_int_tensor({4, 6}, DType::i64, 227, -1000, 1000),
                       DType::i64, {4, 3}, 1);
       }},
      {"GatherElements_axis0_float",
       [] {
         return gather("GatherElements", quarter_grid({3, 5}, 228, -64, 64), DType::i32, {4, 5}, 0);
       }},
      // ArgMax / ArgMin: int64 indices, ties (the quarter grid in [-2, 2] has 17 values, so each
      // row of 37 holds repeated extremes) resolved to the first or the last.
      {"ArgMax_axis2_first_of_ties", [] { return arg("ArgMax", 2, 1, 0); }},
      {"ArgMax_axis1_last_no_keepdims", [] { return arg("ArgMax", 1, 0, 1); }},
      {"ArgMin_axis0", [] { return arg("ArgMin", 0, 1, 0); }},
      {"ArgMin_axis2_last", [] { return arg("ArgMin", -1, 0, 1); }},
      // Clip and MaxPool of integers (exact: min/max and the -inf padding saturate to the type).
      {"Clip_i8",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape, DType::i8);
         Value* y =
             b.node("Clip", {x, b.constant("lo", Tensor::from_int64s({}, {-20}).cast(DType::i8)),
                             b.constant("hi", Tensor::from_int64s({}, {90}).cast(DType::i8))});
         return IntCase{
             b.finish({y}), {{"x", random_int_tensor(kShape, DType::i8, 231, -128, 127)}}, "Clip"};
       }},
      {"MaxPool_u8_padded",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {1, 3, 9, 11}, DType::u8);
         Value* y = b.node("MaxPool", {x},
                           attrs({{"kernel_shape", std::vector<int64_t>{3, 3}},
                                  {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                  {"strides", std::vector<int64_t>{2, 2}}}));
         return IntCase{b.finish({y}),
                        {{"x", random_int_tensor({1, 3, 9, 11}, DType::u8, 232, 0, 255)}},
                        "MaxPool"};
       }},
      // Trilu with a runtime k (the kept triangle's offset from the diagonal) and without.
      {"Trilu_upper_runtime_k_i32",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {2, 5, 7}, DType::i32);
         Value* k = b.input("k", {}, DType::i64);
         Value* y = b.node("Trilu", {x, k});
         return IntCase{b.finish({y}),
                        {{"x", random_int_tensor({2, 5, 7}, DType::i32, 234, -1000, 1000)},
                         {"k", Tensor::from_int64s({}, {-2})}},
                        "Trilu"};
       }},
      {"Trilu_lower_float",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {6, 4});
         Value* y = b.node("Trilu", {x}, attrs({{"upper", int64_t{0}}}));
         return IntCase{b.finish({y}), {{"x", quarter_grid({6, 4}, 235, -64, 64)}}, "Trilu"};
       }},
      // Mod: the divisor's sign (fmod=0) and C % (fmod=1), both operand signs, no zero divisor.
      {"Mod_i32_sign_of_divisor",
       [] {
         IntCase c = binary("Mod", DType::i32, -1000, 1000, 1, 9);
         Tensor& y = c.inputs.at("y");
         for (int64_t i = 0; i < y.numel(); ++i)
           if (y.data<int32_t>()[i] % 2) y.data<int32_t>()[i] = -y.data<int32_t>()[i];
         return c;
       }},
      {"Mod_i64_fmod",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape, DType::i64);
         Value* y = b.node("Mod", {x, b.constant("c", Tensor::from_int64s({}, {-7}))},
                           attrs({{"fmod", int64_t{1}}}));
         return IntCase{b.finish({y}),
                        {{"x", random_int_tensor(kShape, DType::i64, 236, -100000, 100000)}},
                        "Mod"};
       }},
      // IsNaN / IsInf (bool results) on grid floats with NaN and +-inf put in.
      {"IsNaN_f32",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape);
         Value* y = b.node("IsNaN", {x});
         Tensor xs = quarter_grid(kShape, 237, -64, 64);
         for (int64_t i = 0; i < xs.numel(); i += 7) xs.data<float>()[i] = NAN;
         for (int64_t i = 3; i < xs.numel(); i += 11) xs.data<float>()[i] = INFINITY;
         return IntCase{b.finish({y}), {{"x", xs}}, "IsNaN"};
       }},
      {"IsInf_f32_negative_only",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape);
         Value* y = b.node("IsInf", {x}, attrs({{"detect_positive", int64_t{0}}}));
         Tensor xs = quarter_grid(kShape, 238, -64, 64);
         for (int64_t i = 0; i < xs.numel(); i += 5) xs.data<float>()[i] = -INFINITY;
         for (int64_t i = 2; i < xs.numel(); i += 9) xs.data<float>()[i] = INFINITY;
         for (int64_t i = 4; i < xs.numel(); i += 13) xs.data<float>()[i] = NAN;
         return IntCase{b.finish({y}), {{"x", xs}}, "IsInf"};
       }},
      // CastLike: Cast to the dtype of the second input (truncation toward zero to i32).
      {"CastLike_f32_to_i32",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", kShape);
         Value* like = b.input("like", {2}, DType::i32);
         Value* y = b.node("CastLike", {x, like});
         return IntCase{b.finish({y}),
                        {{"x", quarter_grid(kShape, 239, -64, 64)},
                         {"like", random_int_tensor({2}, DType::i32, 240, 0, 9)}},
                        "CastLike"};
       }},
      // Scatter: runtime indices with duplicates and negative values, data larger than the
      // indices off the scatter axis (elements no update can reach keep data).
      {"ScatterElements_axis1_i64_add",
       [] {
         return scatter_elements(
             "ScatterElements", random_int_tensor({4, 6}, DType::i64, 244, -1000000, 1000000),
             {3, 9}, random_int_tensor({3, 9}, DType::i64, 245, -1000, 1000), 1, "add");
       }},
      {"ScatterElements_axis0_float_last_wins",
       [] {
         return scatter_elements("ScatterElements", quarter_grid({5, 7}, 246, -64, 64), {8, 6},
                                 quarter_grid({8, 6}, 247, -64, 64), 0, "none");
       }},
      {"ScatterElements_axis1_i32_mul",
       [] {
         return scatter_elements("ScatterElements",
                                 random_int_tensor({3, 5}, DType::i32, 248, -9, 9), {3, 4},
                                 random_int_tensor({3, 4}, DType::i32, 249, -9, 9), 1, "mul");
       }},
      {"Scatter_axis1_i32",
       [] {
         return scatter_elements("Scatter", random_int_tensor({4, 5}, DType::i32, 250, -99, 99),
                                 {2, 7}, random_int_tensor({2, 7}, DType::i32, 251, -99, 99), 1,
                                 "none");
       }},
      {"ScatterND_rows_float_last_wins",
       [] {
         return scatter_nd(quarter_grid({6, 4, 3}, 252, -64, 64), 9, 1,
                           quarter_grid({9, 4, 3}, 253, -64, 64), "none", 254);
       }},
      {"ScatterND_elements_i64_add",
       [] {
         return scatter_nd(random_int_tensor({5, 6}, DType::i64, 255, -100000, 100000), 12, 2,
                           random_int_tensor({12}, DType::i64, 256, -1000, 1000), "add", 257);
       }},
      {"ScatterND_rows_i32_mul",
       [] {
         return scatter_nd(random_int_tensor({4, 5}, DType::i32, 258, -9, 9), 6, 1,
                           random_int_tensor({6, 5}, DType::i32, 259, -9, 9), "mul", 260);
       }},
      {"GatherND_float_pairs",
       [] {
         return gather_nd(quarter_grid({4, 5, 3}, 261, -64, 64), {3, 2, 2}, 0, 262);
       }},
      {"GatherND_i32_batch_dims1",
       [] {
         return gather_nd(random_int_tensor({3, 4, 5}, DType::i32, 263, -2147483648, 2147483647),
                          {3, 2, 1}, 1, 264);
       }},
      {"BitShift_left_u8", [] { return bitshift(DType::u8, "LEFT", 255); }},
      {"BitShift_right_u16", [] { return bitshift(DType::u16, "RIGHT", 65535); }},
      {"BitShift_left_u32", [] { return bitshift(DType::u32, "LEFT", 4294967295); }},
      {"BitShift_right_u64", [] { return bitshift(DType::u64, "RIGHT", int64_t{1} << 62); }},
      {"BitShift_left_u64", [] { return bitshift(DType::u64, "LEFT", int64_t{1} << 40); }},
      // ReverseSequence: batch axis 0 and time axis 0, lengths 0..T (0 and 1 reverse nothing).
      {"ReverseSequence_batch_axis0_float",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {5, 6, 3});
         Value* l = b.input("lens", {5}, DType::i64);
         Value* y = b.node("ReverseSequence", {x, l},
                           attrs({{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}));
         return IntCase{b.finish({y}),
                        {{"x", quarter_grid({5, 6, 3}, 265, -64, 64)},
                         {"lens", Tensor::from_int64s({5}, {0, 1, 6, 3, 4})}},
                        "ReverseSequence"};
       }},
      {"ReverseSequence_time_axis0_i64",
       [] {
         GraphBuilder b;
         Value* x = b.input("x", {7, 4}, DType::i64);
         Value* l = b.input("lens", {4}, DType::i64);
         Value* y = b.node("ReverseSequence", {x, l});
         return IntCase{b.finish({y}),
                        {{"x", random_int_tensor({7, 4}, DType::i64, 266, -(int64_t{1} << 60),
                                                 int64_t{1} << 60)},
                         {"lens", Tensor::from_int64s({4}, {7, 2, 5, 1})}},
                        "ReverseSequence"};
       }},
      // A chain with integer and bool intermediates: Where(x + y < 0, -x, x * y).
      {"Chain_i32",
       [] {
         GraphBuilder b(true);
         Value* x = b.input("x", kShape, DType::i32);
         Value* y = b.input("y", kCol, DType::i32);
         Value* s = b.node("Add", {x, y});
         Value* neg =
             b.node("Less", {s, b.constant("zero", Tensor::from_int64s({}, {0}).cast(DType::i32))});
         Value* nx = b.node("Neg", {x});
         Value* p = b.node("Mul", {x, y});
         Value* z = b.node("Where", {neg, nx, p});
         return IntCase{b.finish({z}),
                        {{"x", random_int_tensor(kShape, DType::i32, 222, -1000, 1000)},
                         {"y", random_int_tensor(kCol, DType::i32, 223, -1000, 1000)}},
                        "Where"};
       }},
  };
  return m;
}

class NpuIntOp : public ::testing::TestWithParam<std::string> {};

TEST_P(NpuIntOp, BitExactAgainstTheReference) {
  IntCase c = cases().at(GetParam())();
  const NpuCheck r = check_npu(*c.graph, c.inputs, "npu_4core", Bound{0, 0});
  ASSERT_FALSE(r.reference.empty());
  for (const auto& [name, ref] : r.reference) {
    ASSERT_TRUE(r.outputs.count(name)) << name;
    const Tensor& got = r.outputs.at(name);
    const Tensor want = dtype_is_float(ref.dtype()) ? ref.cast(DType::f32) : ref;
    EXPECT_EQ(got.dtype(), want.dtype()) << name;
    const TensorDiff d = diff_tensors(got, want);
    EXPECT_TRUE(bit_equal(got, want)) << name << ": " << d.describe(0, 0);
  }
  bool ran = false;
  for (const auto& k : r.module.kernels)
    ran |= k.op_type.find(c.op) != std::string::npos && k.kind != "const";
  EXPECT_TRUE(ran) << c.op << " did not become a kernel";
}

std::vector<std::string> case_names() {
  std::vector<std::string> v;
  for (const auto& [k, f] : cases()) v.push_back(k);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Cases, NpuIntOp, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(NpuIntOps, EveryTypedOpHasACase) {
  for (const auto& op : lower::typed_compute_ops()) {
    bool found = false;
    for (const auto& [name, fn] : cases()) found |= name.rfind(op + "_", 0) == 0;
    EXPECT_TRUE(found) << op << " is compiled for the NPU but has no integer/bool case here";
  }
}

TEST(NpuIntOps, AnIntegerImmediateNotExactInTheScalarFieldIsRefused) {
  GraphBuilder b;
  Value* x = b.input("x", kShape, DType::i64);
  Value* y = b.node("Add", {x, b.constant("c", Tensor::from_int64s({}, {(int64_t{1} << 40) + 1}))});
  auto g = b.finish({y});
  try {
    npu_backend::compile_npu(*g, preset("npu_4core"));
    FAIL() << "compiled";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("not exact in the f32 scalar field"), std::string::npos)
        << e.what();
  }
}

TEST(NpuIntOps, AFloatOnlyOpRefusesIntegerInputsNamingTheNode) {
  GraphBuilder b;
  Value* x = b.input("x", {4, 4}, DType::i32);
  Value* s = b.node("ReduceMax", {x});
  auto g = b.finish({s});
  try {
    npu_backend::compile_npu(*g, preset("npu_4core"));
    FAIL() << "compiled";
  } catch (const Unsupported& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("ReduceMax"), std::string::npos) << w;
    EXPECT_NE(w.find("i32"), std::string::npos) << w;
  }
}

}  // namespace
}  // namespace tessel::testing
