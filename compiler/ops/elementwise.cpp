// Elementwise ops: unary math and activations, binary arithmetic with multidirectional
// broadcasting, comparisons and logic, variadic Min/Max/Sum/Mean, Where, Clip, PRelu, Cast,
// CastLike, Identity, Dropout (inference).
//
// Semantics follow the ONNX operator docs at opset 17 (https://onnx.ai/onnx/operators/), plus
// Gelu (opset 20). Broadcasting follows ONNX Broadcasting.md (numpy rules).
#include <cmath>
#include <type_traits>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

// ---------------------------------------------------------------------------------------------
// Unary ops
// ---------------------------------------------------------------------------------------------

/// Which input dtypes a unary op accepts.
enum class UnaryDomain { floats, numeric, signed_numeric };

void check_unary_dtype(const Node& node, DType dt, UnaryDomain domain) {
  switch (domain) {
    case UnaryDomain::floats:
      expect_float(node, dt, "input 0");
      break;
    case UnaryDomain::numeric:
      expect_numeric(node, dt, "input 0");
      break;
    case UnaryDomain::signed_numeric:
      if (!dtype_is_float(dt) && !dtype_is_signed_integer(dt))
        node_fail(node, "input 0 has dtype {}, expected a float or signed integer type",
                  dtype_to_string(dt));
      break;
  }
}

InferFn unary_infer(UnaryDomain domain, bool bool_output = false) {
  return [domain, bool_output](Node& node) {
    check_arity(node, 1, 1, 1, 1);
    const Value& x = required_input(node, 0, "X");
    check_unary_dtype(node, x.dtype, domain);
    set_output(node, 0, bool_output ? DType::boolean : x.dtype, x.shape);
  };
}

/// Applies `op(x)` elementwise in the compute type of x's dtype; output has x's dtype.
/// `make_op` is called once per kernel run with the compute type tag and returns the per-element
/// functor (so attributes are read outside the loop).
template <UnaryDomain Dom, class MakeOp>
Tensor unary_apply(const Node& node, const Tensor& x, MakeOp make_op) {
  auto run = [&](auto tag) -> Tensor {
    using C = decltype(tag);
    InputView<C> in(x);
    OutputBuffer<C> out(x.dtype(), x.shape());
    auto op = make_op(tag);
    const C* src = in.data();
    C* dst = out.data();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<C>(op(src[i]));
    return out.finish();
  };
  check_unary_dtype(node, x.dtype(), Dom);
  if constexpr (Dom == UnaryDomain::floats) {
    return dispatch_float(node, x.dtype(), run);
  } else {
    return dispatch_numeric(node, x.dtype(), run);
  }
}

/// Registers a unary op whose functor does not depend on attributes.
template <UnaryDomain Dom, class Op>
void register_unary(const char* name, Op op) {
  register_op(
      {name, unary_infer(Dom), [op](const Node& node, const std::vector<const Tensor*>& inputs) {
         check_arity(node, 1, 1, 1, 1);
         return one_output(
             unary_apply<Dom>(node, kernel_input(node, inputs, 0, "X"), [&](auto) { return op; }));
       }});
}

/// Registers a float unary op whose functor reads attributes: make(node, tag) -> functor.
template <class Make>
void register_unary_attr(const char* name, Make make) {
  register_op({name, unary_infer(UnaryDomain::floats),
               [make](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 return one_output(
                     unary_apply<UnaryDomain::floats>(node, kernel_input(node, inputs, 0, "X"),
                                                      [&](auto tag) { return make(node, tag); }));
               }});
}

template <class C>
C sigmoid(C x) {
  // Split by sign so exp never overflows: both branches equal 1 / (1 + e^-x).
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}

template <class C>
C softplus(C x) {
  // log(1 + e^x), computed without overflow for large |x|.
  if (x > C(0)) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

template <class C>
C sign_of(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return x;
  }
  return x > C(0) ? C(1) : (x < C(0) ? C(-1) : C(0));
}

void register_unary_ops() {
  using D = UnaryDomain;
  // Float math (https://onnx.ai/onnx/operators/ : Sqrt, Exp, Log, Sin, ... ).
  register_unary<D::floats>("Sqrt", [](auto x) { return std::sqrt(x); });
  register_unary<D::floats>("Exp", [](auto x) { return std::exp(x); });
  register_unary<D::floats>("Log", [](auto x) { return std::log(x); });
  register_unary<D::floats>("Erf", [](auto x) { return std::erf(x); });
  register_unary<D::floats>("Sin", [](auto x) { return std::sin(x); });
  register_unary<D::floats>("Cos", [](auto x) { return std::cos(x); });
  register_unary<D::floats>("Tan", [](auto x) { return std::tan(x); });
  register_unary<D::floats>("Asin", [](auto x) { return std::asin(x); });
  register_unary<D::floats>("Acos", [](auto x) { return std::acos(x); });
  register_unary<D::floats>("Atan", [](auto x) { return std::atan(x); });
  register_unary<D::floats>("Sinh", [](auto x) { return std::sinh(x); });
  register_unary<D::floats>("Cosh", [](auto x) { return std::cosh(x); });
  register_unary<D::floats>("Asinh", [](auto x) { return std::asinh(x); });
  register_unary<D::floats>("Acosh", [](auto x) { return std::acosh(x); });
  register_unary<D::floats>("Atanh", [](auto x) { return std::atanh(x); });
  register_unary<D::floats>("Tanh", [](auto x) { return std::tanh(x); });
  register_unary<D::floats>("Floor", [](auto x) { return std::floor(x); });
  register_unary<D::floats>("Ceil", [](auto x) { return std::ceil(x); });
  // Round: half to even (std::nearbyint in the default rounding mode).
  register_unary<D::floats>("Round", [](auto x) { return std::nearbyint(x); });
  register_unary<D::floats>("Reciprocal", [](auto x) { return decltype(x)(1) / x; });
  register_unary<D::floats>("Sigmoid", [](auto x) { return sigmoid(x); });
  register_unary<D::floats>("Softplus", [](auto x) { return softplus(x); });
  register_unary<D::floats>("Softsign", [](auto x) { return x / (decltype(x)(1) + std::abs(x)); });
  // Mish(x) = x * tanh(softplus(x)).
  register_unary<D::floats>("Mish", [](auto x) { return x * std::tanh(softplus(x)); });
  // HardSwish(x) = x * max(0, min(1, x/6 + 1/2)).
  register_unary<D::floats>("HardSwish", [](auto x) {
    using C = decltype(x);
    return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
  });

  // Numeric (integers too).
  register_unary<D::numeric>("Abs", [](auto x) { return x < decltype(x)(0) ? -x : x; });
  register_unary<D::signed_numeric>("Neg", [](auto x) { return -x; });
  register_unary<D::numeric>("Sign", [](auto x) { return sign_of(x); });
  // Relu: float and signed integers (opset 14).
  register_unary<D::signed_numeric>("Relu",
                                    [](auto x) { return x > decltype(x)(0) ? x : decltype(x)(0); });

  // Activations with attributes.
  register_unary_attr("LeakyRelu", [](const Node& node, auto tag) {
    using C = decltype(tag);
    const C alpha = node.attrs.get_float_or("alpha", 0.01f, node.name);
    return [alpha](C x) { return x < C(0) ? alpha * x : x; };
  });
  register_unary_attr("Elu", [](const Node& node, auto tag) {
    using C = decltype(tag);
    const C alpha = node.attrs.get_float_or("alpha", 1.0f, node.name);
    return [alpha](C x) { return x < C(0) ? alpha * (std::exp(x) - C(1)) : x; };
  });
  register_unary_attr("Selu", [](const Node& node, auto tag) {
    using C = decltype(tag);
    const C alpha = node.attrs.get_float_or("alpha", 1.67326319217681884765625f, node.name);
    const C gamma = node.attrs.get_float_or("gamma", 1.05070102214813232421875f, node.name);
    return [alpha, gamma](C x) {
      return x > C(0) ? gamma * x : gamma * (alpha * std::exp(x) - alpha);
    };
  });
  register_unary_attr("Celu", [](const Node& node, auto tag) {
    using C = decltype(tag);
    const C alpha = node.attrs.get_float_or("alpha", 1.0f, node.name);
    if (alpha == C(0)) node_fail(node, "attribute alpha must be non-zero");
    return [alpha](C x) {
      return std::max(C(0), x) + std::min(C(0), alpha * (std::exp(x / alpha) - C(1)));
    };
  });
  register_unary_attr("HardSigmoid", [](const Node& node, auto tag) {
    using C = decltype(tag);
    const C alpha = node.attrs.get_float_or("alpha", 0.2f, node.name);
    const C beta = node.attrs.get_float_or("beta", 0.5f, node.name);
    return [alpha, beta](C x) { return std::max(C(0), std::min(C(1), alpha * x + beta)); };
  });
  register_unary_attr("ThresholdedRelu", [](const Node& node, auto tag) {
    using C = decltype(tag);
    const C alpha = node.attrs.get_float_or("alpha", 1.0f, node.name);
    return [alpha](C x) { return x > alpha ? x : C(0); };
  });
  // Gelu (opset 20): approximate="none": x/2 (1 + erf(x/sqrt 2));
  // "tanh": x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  register_unary_attr("Gelu", [](const Node& node, auto tag) {
    using C = decltype(tag);
    const std::string approx = node.attrs.get_string_or("approximate", "none", node.name);
    if (approx != "none" && approx != "tanh")
      node_fail(node, "attribute approximate='{}', expected 'none' or 'tanh'", approx);
    const bool use_tanh = approx == "tanh";
    return [use_tanh](C x) {
      if (use_tanh) {
        const C k = C(0.7978845608028654);  // sqrt(2/pi)
        return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
      }
      return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476)));
    };
  });

  // Shrink: numeric; y = x + bias if x < -lambd, x - bias if x > lambd, else 0.
  register_op({"Shrink", unary_infer(D::numeric),
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const double bias = node.attrs.get_float_or("bias", 0.0f, node.name);
                 const double lambd = node.attrs.get_float_or("lambd", 0.5f, node.name);
                 return one_output(unary_apply<D::numeric>(
                     node, kernel_input(node, inputs, 0, "input"), [&](auto tag) {
                       using C = decltype(tag);
                       return [bias, lambd](C x) {
                         const double v = static_cast<double>(x);
                         if (v < -lambd) return static_cast<C>(v + bias);
                         if (v > lambd) return static_cast<C>(v - bias);
                         return C(0);
                       };
                     }));
               }});

  // IsNaN / IsInf: float in, bool out.
  register_op({"IsNaN", unary_infer(D::floats, true),
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "X");
                 return dispatch_float(node, x.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   InputView<C> in(x);
                   Tensor out(DType::boolean, x.shape());
                   uint8_t* o = out.data<uint8_t>();
                   for (int64_t i = 0; i < x.numel(); ++i) o[i] = std::isnan(in[i]) ? 1 : 0;
                   return one_output(std::move(out));
                 });
               }});
  register_op({"IsInf", unary_infer(D::floats, true),
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "X");
                 const bool neg = node.attrs.get_int_or("detect_negative", 1, node.name) != 0;
                 const bool pos = node.attrs.get_int_or("detect_positive", 1, node.name) != 0;
                 return dispatch_float(node, x.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   InputView<C> in(x);
                   Tensor out(DType::boolean, x.shape());
                   uint8_t* o = out.data<uint8_t>();
                   for (int64_t i = 0; i < x.numel(); ++i) {
                     const C v = in[i];
                     o[i] = std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg)) ? 1 : 0;
                   }
                   return one_output(std::move(out));
                 });
               }});
}

// ---------------------------------------------------------------------------------------------
// Binary ops with multidirectional broadcasting
// ---------------------------------------------------------------------------------------------

/// Shape rule of a broadcasting binary op. `same_dtype`: both inputs must share a dtype.
/// Output dtype: bool when `bool_output`, else input 0's dtype.
void binary_infer(Node& node, bool same_dtype, bool bool_output) {
  check_arity(node, 2, 2, 1, 1);
  const Value& a = required_input(node, 0, "A");
  const Value& b = required_input(node, 1, "B");
  if (same_dtype) expect_same_dtype(node, 0, 1);
  set_output(node, 0, bool_output ? DType::boolean : a.dtype,
             broadcast_shapes(a.shape, b.shape, node.describe()));
}

/// out[i] = op(a[.], b[.]) over the broadcast shape; A and B in compute type C, output written as
/// compute type R into storage `out_dtype`.
template <class C, class R, class Op>
Tensor binary_compute(const Tensor& a, const Tensor& b, DType out_dtype, const Shape& out_shape,
                      Op op) {
  InputView<C> va(a);
  InputView<C> vb(b);
  OutputBuffer<R> out(out_dtype, out_shape);
  const C* pa = va.data();
  const C* pb = vb.data();
  R* po = out.data();
  for_each_broadcast<2>(out_shape, {&a.shape(), &b.shape()},
                        [&](int64_t i, const std::array<int64_t, 2>& off) {
                          po[i] = static_cast<R>(op(pa[off[0]], pb[off[1]]));
                        });
  return out.finish();
}

/// x op y with two's-complement wrapping for signed integer compute types, as ONNX Runtime's
/// integer Add/Sub/Mul wrap (in C++ signed overflow is undefined: found by UBSan on
/// NpuIntOp Mul_i64_wraps); computed in uint64_t and converted back (modular since C++20).
/// Unsigned and floating-point types compute as they are.
template <class C, class Op>
C wrapping(C x, C y, Op op) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    return static_cast<C>(op(static_cast<uint64_t>(x), static_cast<uint64_t>(y)));
  } else {
    return op(x, y);
  }
}

/// Registers an arithmetic op (same dtype in and out). `make(node, tag)` returns the functor.
template <class Make>
void register_arith(const char* name, Make make) {
  register_op({name,
               [](Node& node) {
                 binary_infer(node, true, false);
                 expect_numeric(node, node.inputs[0]->dtype, "input A");
               },
               [make](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 const Tensor& a = kernel_input(node, inputs, 0, "A");
                 const Tensor& b = kernel_input(node, inputs, 1, "B");
                 if (a.dtype() != b.dtype())
                   node_fail(node, "inputs have different dtypes {} and {}",
                             dtype_to_string(a.dtype()), dtype_to_string(b.dtype()));
                 const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), node.describe());
                 return dispatch_numeric(node, a.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   return one_output(
                       binary_compute<C, C>(a, b, a.dtype(), out_shape, make(node, tag)));
                 });
               }});
}

/// Mod in compute type C. Integers: fmod=0 takes the divisor's sign (numpy mod), fmod=1 the
/// dividend's (C %); the caller rejects a zero divisor. Floats: C fmod.
template <class C>
C mod_value(C x, C y, bool c_fmod) {
  if constexpr (std::is_integral_v<C>) {
    C r = x % y;
    // fmod=0: the result takes the divisor's sign (Python/numpy mod).
    if (!c_fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  } else {
    return std::fmod(x, y);
  }
}

void register_binary_ops() {
  register_arith("Add", [](const Node&, auto tag) {
    using C = decltype(tag);
    return [](C x, C y) { return wrapping(x, y, [](auto u, auto v) { return u + v; }); };
  });
  register_arith("Sub", [](const Node&, auto tag) {
    using C = decltype(tag);
    return [](C x, C y) { return wrapping(x, y, [](auto u, auto v) { return u - v; }); };
  });
  register_arith("Mul", [](const Node&, auto tag) {
    using C = decltype(tag);
    return [](C x, C y) { return wrapping(x, y, [](auto u, auto v) { return u * v; }); };
  });
  // Div: integers truncate toward zero (C semantics, as ONNX runtimes do); an integer division
  // by zero is an error rather than undefined behaviour.
  register_arith("Div", [](const Node& node, auto tag) {
    using C = decltype(tag);
    return [&node](C x, C y) {
      if constexpr (std::is_integral_v<C>) {
        if (y == 0) node_fail(node, "integer division by zero");
      }
      return x / y;
    };
  });
  // Mod: fmod=0 (integers only) -> sign of the divisor; fmod=1 -> C fmod (sign of the dividend).
  register_op({"Mod",
               [](Node& node) {
                 binary_infer(node, true, false);
                 const DType dt = node.inputs[0]->dtype;
                 expect_numeric(node, dt, "input A");
                 const int64_t fmod = node.attrs.get_int_or("fmod", 0, node.name);
                 if (fmod != 0 && fmod != 1)
                   node_fail(node, "attribute fmod={} must be 0 or 1", fmod);
                 if (dtype_is_float(dt) && fmod == 0)
                   node_fail(node, "float inputs require fmod=1 (ONNX Mod)");
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 const Tensor& a = kernel_input(node, inputs, 0, "A");
                 const Tensor& b = kernel_input(node, inputs, 1, "B");
                 const bool c_fmod = node.attrs.get_int_or("fmod", 0, node.name) == 1;
                 if (a.dtype() != b.dtype()) node_fail(node, "inputs have different dtypes");
                 if (dtype_is_float(a.dtype()) && !c_fmod)
                   node_fail(node, "float inputs require fmod=1 (ONNX Mod)");
                 const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), node.describe());
                 return dispatch_numeric(node, a.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   return one_output(
                       binary_compute<C, C>(a, b, a.dtype(), out_shape, [&node, c_fmod](C x, C y) {
                         if constexpr (std::is_integral_v<C>) {
                           if (y == 0) node_fail(node, "integer modulo by zero");
                         }
                         return mod_value(x, y, c_fmod);
                       }));
                 });
               }});

  // Pow: base T, exponent T1 (any numeric). Float base: pow in the base's compute type; integer
  // base: exact integer power for an integer exponent, else pow in double truncated toward zero.
  register_op(
      {"Pow",
       [](Node& node) {
         binary_infer(node, false, false);
         expect_numeric(node, node.inputs[0]->dtype, "input X");
         expect_numeric(node, node.inputs[1]->dtype, "input Y");
       },
       [](const Node& node, const std::vector<const Tensor*>& inputs) {
         check_arity(node, 2, 2, 1, 1);
         const Tensor& a = kernel_input(node, inputs, 0, "X");
         const Tensor& b = kernel_input(node, inputs, 1, "Y");
         const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), node.describe());
         if (dtype_is_float(a.dtype())) {
           return dispatch_float(node, a.dtype(), [&](auto tag) {
             using C = decltype(tag);
             return one_output(binary_compute<C, C>(a, b, a.dtype(), out_shape,
                                                    [](C x, C y) { return std::pow(x, y); }));
           });
         }
         expect_numeric(node, a.dtype(), "input X");
         if (dtype_is_integer(b.dtype())) {
           return one_output(binary_compute<int64_t, int64_t>(
               a, b, a.dtype(), out_shape, [](int64_t x, int64_t y) {
                 if (y < 0) {  // integer result of x^y for negative y: only |x| == 1 is non-zero
                   if (x == 1) return int64_t{1};
                   if (x == -1) return (y % 2 == 0) ? int64_t{1} : int64_t{-1};
                   return int64_t{0};
                 }
                 uint64_t result = 1, base = static_cast<uint64_t>(x);  // wraps like int64 math
                 for (uint64_t e = static_cast<uint64_t>(y); e != 0; e >>= 1) {
                   if (e & 1) result *= base;
                   base *= base;
                 }
                 return static_cast<int64_t>(result);
               }));
         }
         return one_output(binary_compute<double, double>(
             a, b, a.dtype(), out_shape,
             [](double x, double y) { return std::trunc(std::pow(x, y)); }));
       }});

  // Comparisons: numeric (and bool for Equal) inputs of one dtype, bool output.
  auto register_compare = [](const char* name, auto cmp) {
    register_op({name,
                 [](Node& node) {
                   binary_infer(node, true, true);
                   const DType dt = node.inputs[0]->dtype;
                   if (dt != DType::boolean) expect_numeric(node, dt, "input A");
                 },
                 [cmp](const Node& node, const std::vector<const Tensor*>& inputs) {
                   check_arity(node, 2, 2, 1, 1);
                   const Tensor& a = kernel_input(node, inputs, 0, "A");
                   const Tensor& b = kernel_input(node, inputs, 1, "B");
                   if (a.dtype() != b.dtype()) node_fail(node, "inputs have different dtypes");
                   const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), node.describe());
                   const DType dt = a.dtype() == DType::boolean ? DType::u8 : a.dtype();
                   return dispatch_numeric(node, dt, [&](auto tag) {
                     using C = decltype(tag);
                     return one_output(binary_compute<C, uint8_t>(
                         a, b, DType::boolean, out_shape,
                         [cmp](C x, C y) { return cmp(x, y) ? uint8_t{1} : uint8_t{0}; }));
                   });
                 }});
  };
  register_compare("Equal", [](auto x, auto y) { return x == y; });
  register_compare("Less", [](auto x, auto y) { return x < y; });
  register_compare("Greater", [](auto x, auto y) { return x > y; });
  register_compare("LessOrEqual", [](auto x, auto y) { return x <= y; });
  register_compare("GreaterOrEqual", [](auto x, auto y) { return x >= y; });

  // Logical ops on bool tensors.
  auto register_logic = [](const char* name, auto fn) {
    register_op({name,
                 [](Node& node) {
                   binary_infer(node, true, true);
                   expect_dtype(node, node.inputs[0]->dtype, {DType::boolean}, "input A");
                 },
                 [fn](const Node& node, const std::vector<const Tensor*>& inputs) {
                   check_arity(node, 2, 2, 1, 1);
                   const Tensor& a = kernel_input(node, inputs, 0, "A");
                   const Tensor& b = kernel_input(node, inputs, 1, "B");
                   if (a.dtype() != DType::boolean || b.dtype() != DType::boolean)
                     node_fail(node, "inputs must be bool");
                   const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), node.describe());
                   return one_output(binary_compute<uint8_t, uint8_t>(
                       a, b, DType::boolean, out_shape,
                       [fn](uint8_t x, uint8_t y) { return fn(x != 0, y != 0) ? 1 : 0; }));
                 }});
  };
  register_logic("And", [](bool x, bool y) { return x && y; });
  register_logic("Or", [](bool x, bool y) { return x || y; });
  register_logic("Xor", [](bool x, bool y) { return x != y; });
  register_op({"Not",
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "X");
                 expect_dtype(node, x.dtype, {DType::boolean}, "input X");
                 set_output(node, 0, DType::boolean, x.shape);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "X");
                 if (x.dtype() != DType::boolean) node_fail(node, "input must be bool");
                 Tensor out(DType::boolean, x.shape());
                 for (int64_t i = 0; i < x.numel(); ++i)
                   out.data<uint8_t>()[i] = x.data<uint8_t>()[i] ? 0 : 1;
                 return one_output(std::move(out));
               }});

  // BitShift on unsigned integers (direction LEFT/RIGHT).
  register_op({"BitShift",
               [](Node& node) {
                 binary_infer(node, true, false);
                 expect_dtype(node, node.inputs[0]->dtype,
                              {DType::u8, DType::u16, DType::u32, DType::u64}, "input X");
                 const std::string dir = node.attrs.get_string_or("direction", "", node.name);
                 if (dir != "LEFT" && dir != "RIGHT")
                   node_fail(node, "attribute direction='{}', expected 'LEFT' or 'RIGHT'", dir);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 const Tensor& a = kernel_input(node, inputs, 0, "X");
                 const Tensor& b = kernel_input(node, inputs, 1, "Y");
                 const bool left = node.attrs.get_string_or("direction", "", node.name) == "LEFT";
                 const int bits = dtype_size(a.dtype()) * 8;
                 const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), node.describe());
                 return one_output(binary_compute<uint64_t, uint64_t>(
                     a, b, a.dtype(), out_shape, [left, bits](uint64_t x, uint64_t s) -> uint64_t {
                       if (s >= static_cast<uint64_t>(bits)) return 0;
                       return left ? (x << s) : (x >> s);
                     }));
               }});

  // PRelu: y = x < 0 ? slope * x : x, slope unidirectionally broadcast to X.
  register_op({"PRelu",
               [](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& x = required_input(node, 0, "X");
                 const Value& slope = required_input(node, 1, "slope");
                 expect_numeric(node, x.dtype, "input X");
                 expect_same_dtype(node, 0, 1);
                 if (!unidirectional_broadcastable(slope.shape, x.shape))
                   node_fail(node, "slope shape {} does not broadcast to X shape {}",
                             shape_to_string(slope.shape), shape_to_string(x.shape));
                 set_output(node, 0, x.dtype, x.shape);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "X");
                 const Tensor& slope = kernel_input(node, inputs, 1, "slope");
                 if (!unidirectional_broadcastable(slope.shape(), x.shape()))
                   node_fail(node, "slope shape {} does not broadcast to X shape {}",
                             shape_to_string(slope.shape()), shape_to_string(x.shape()));
                 return dispatch_numeric(node, x.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   return one_output(
                       binary_compute<C, C>(x, slope, x.dtype(), x.shape(),
                                            [](C v, C s) { return v < C(0) ? s * v : v; }));
                 });
               }});
}

// ---------------------------------------------------------------------------------------------
// Variadic Min / Max / Sum / Mean
// ---------------------------------------------------------------------------------------------

void variadic_infer(Node& node) {
  if (node.inputs.empty()) node_fail(node, "expected at least one input");
  check_arity(node, 1, node.inputs.size(), 1, 1);
  Shape shape = required_input(node, 0, "data_0").shape;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value& v = required_input(node, i, "data_i");
    expect_numeric(node, v.dtype, "input");
    expect_same_dtype(node, 0, i);
    shape = broadcast_shapes(shape, v.shape, node.describe());
  }
  set_output(node, 0, node.inputs[0]->dtype, shape);
}

enum class Variadic { min, max, sum, mean };

template <class C>
C combine(Variadic kind, C acc, C v) {
  switch (kind) {
    case Variadic::min:
      if constexpr (std::is_floating_point_v<C>) {
        if (std::isnan(acc) || std::isnan(v)) return std::numeric_limits<C>::quiet_NaN();
      }
      return v < acc ? v : acc;
    case Variadic::max:
      if constexpr (std::is_floating_point_v<C>) {
        if (std::isnan(acc) || std::isnan(v)) return std::numeric_limits<C>::quiet_NaN();
      }
      return v > acc ? v : acc;
    case Variadic::sum:
    case Variadic::mean:
      return acc + v;
  }
  return acc;
}

ReferenceFn variadic_kernel(Variadic kind) {
  return [kind](const Node& node, const std::vector<const Tensor*>& inputs) {
    if (inputs.empty()) node_fail(node, "expected at least one input");
    const Tensor& first = kernel_input(node, inputs, 0, "data_0");
    Shape shape = first.shape();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = kernel_input(node, inputs, i, "data_i");
      if (t.dtype() != first.dtype()) node_fail(node, "inputs have different dtypes");
      shape = broadcast_shapes(shape, t.shape(), node.describe());
    }
    if (kind == Variadic::mean && !dtype_is_float(first.dtype()))
      node_fail(node, "Mean requires float inputs");
    return dispatch_numeric(node, first.dtype(), [&](auto tag) {
      using C = decltype(tag);
      const int64_t n = shape_numel(shape);
      std::vector<C> acc(static_cast<size_t>(n));
      for (size_t k = 0; k < inputs.size(); ++k) {
        InputView<C> in(*inputs[k]);
        const C* p = in.data();
        const Shape& in_shape = inputs[k]->shape();
        for_each_broadcast<1>(shape, {&in_shape}, [&](int64_t i, const std::array<int64_t, 1>& o) {
          acc[i] = k == 0 ? p[o[0]] : combine(kind, acc[i], p[o[0]]);
        });
      }
      OutputBuffer<C> out(first.dtype(), shape);
      const C count = static_cast<C>(inputs.size());
      for (int64_t i = 0; i < n; ++i) out[i] = kind == Variadic::mean ? acc[i] / count : acc[i];
      return one_output(out.finish());
    });
  };
}

// ---------------------------------------------------------------------------------------------
// Where, Clip
// ---------------------------------------------------------------------------------------------

/// Where's kernel on raw elements of `elem_bytes` bytes (any dtype).
template <class E>
void where_copy(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) {
  const uint8_t* c = cond.data<uint8_t>();
  const E* px = x.data<E>();
  const E* py = y.data<E>();
  E* po = out.data<E>();
  for_each_broadcast<3>(
      out.shape(), {&cond.shape(), &x.shape(), &y.shape()},
      [&](int64_t i, const std::array<int64_t, 3>& o) { po[i] = c[o[0]] ? px[o[1]] : py[o[2]]; });
}

void register_where_clip() {
  register_op({"Where",
               [](Node& node) {
                 check_arity(node, 3, 3, 1, 1);
                 const Value& c = required_input(node, 0, "condition");
                 const Value& x = required_input(node, 1, "X");
                 const Value& y = required_input(node, 2, "Y");
                 expect_dtype(node, c.dtype, {DType::boolean}, "input condition");
                 expect_same_dtype(node, 1, 2);
                 if (dtype_size(x.dtype) == 0)
                   node_unsupported(node, "dtype {} is not supported", dtype_to_string(x.dtype));
                 Shape s = broadcast_shapes(c.shape, x.shape, node.describe());
                 s = broadcast_shapes(s, y.shape, node.describe());
                 set_output(node, 0, x.dtype, s);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 3, 3, 1, 1);
                 const Tensor& c = kernel_input(node, inputs, 0, "condition");
                 const Tensor& x = kernel_input(node, inputs, 1, "X");
                 const Tensor& y = kernel_input(node, inputs, 2, "Y");
                 if (c.dtype() != DType::boolean) node_fail(node, "condition must be bool");
                 if (x.dtype() != y.dtype()) node_fail(node, "X and Y have different dtypes");
                 Shape s = broadcast_shapes(c.shape(), x.shape(), node.describe());
                 s = broadcast_shapes(s, y.shape(), node.describe());
                 Tensor out(x.dtype(), s);
                 switch (dtype_size(x.dtype())) {
                   case 1:
                     where_copy<uint8_t>(c, x, y, out);
                     break;
                   case 2:
                     where_copy<uint16_t>(c, x, y, out);
                     break;
                   case 4:
                     where_copy<uint32_t>(c, x, y, out);
                     break;
                   case 8:
                     where_copy<uint64_t>(c, x, y, out);
                     break;
                   default:
                     node_unsupported(node, "dtype {} is not supported",
                                      dtype_to_string(x.dtype()));
                 }
                 return one_output(std::move(out));
               }});

  // Clip (opset 13): min and max are optional scalar inputs of the input's dtype.
  register_op({"Clip",
               [](Node& node) {
                 check_arity(node, 1, 3, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 expect_numeric(node, x.dtype, "input");
                 for (size_t i = 1; i < 3; ++i) {
                   const Value* b = node.input(i);
                   if (b == nullptr) continue;
                   if (b->dtype != x.dtype)
                     node_fail(node, "input {} ({}) has dtype {}, expected {} like the input", i,
                               i == 1 ? "min" : "max", dtype_to_string(b->dtype),
                               dtype_to_string(x.dtype));
                   if (shape_numel(b->shape) != 1)
                     node_fail(node, "input {} ({}) must be a scalar, got shape {}", i,
                               i == 1 ? "min" : "max", shape_to_string(b->shape));
                 }
                 set_output(node, 0, x.dtype, x.shape);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 3, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "input");
                 const Tensor* tmin = inputs.size() > 1 ? inputs[1] : nullptr;
                 const Tensor* tmax = inputs.size() > 2 ? inputs[2] : nullptr;
                 for (const Tensor* b : {tmin, tmax})
                   if (b && b->numel() != 1) node_fail(node, "min/max must be scalars");
                 return dispatch_numeric(node, x.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   const C lo = tmin ? load_as<C>(tmin->raw(), tmin->dtype(), 0)
                                     : std::numeric_limits<C>::lowest();
                   const C hi = tmax ? load_as<C>(tmax->raw(), tmax->dtype(), 0)
                                     : std::numeric_limits<C>::max();
                   InputView<C> in(x);
                   OutputBuffer<C> out(x.dtype(), x.shape());
                   const C* p = in.data();
                   C* o = out.data();
                   for (int64_t i = 0; i < x.numel(); ++i) {
                     const C v = p[i];
                     // min then max (ONNX: when min > max the output is max).
                     o[i] = v < lo ? lo : v;
                     o[i] = o[i] > hi ? hi : o[i];
                   }
                   return one_output(out.finish());
                 });
               }});
}

// ---------------------------------------------------------------------------------------------
// Cast, CastLike, Identity, Dropout
// ---------------------------------------------------------------------------------------------

bool castable(DType t) { return dtype_is_float(t) || dtype_is_integer(t) || t == DType::boolean; }

/// ONNX Cast between numeric and bool dtypes: float -> integer truncates toward zero, integer ->
/// integer wraps (two's complement), anything -> bool is (x != 0), f16 rounds to nearest even.
Tensor cast_tensor(const Node& node, const Tensor& x, DType to) {
  if (!castable(x.dtype()) || !castable(to))
    node_unsupported(node, "Cast from {} to {} is not supported (numeric and bool only)",
                     dtype_to_string(x.dtype()), dtype_to_string(to));
  if (x.dtype() == to) return copy_reshaped(x, x.shape());
  Tensor out(to, x.shape());
  const int64_t n = x.numel();
  const std::byte* src = x.raw();
  std::byte* dst = out.raw();
  if (dtype_is_float(x.dtype())) {
    for (int64_t i = 0; i < n; ++i)
      store_as<double>(dst, to, i, load_as<double>(src, x.dtype(), i));
  } else if (x.dtype() == DType::u64) {
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t v = load_as<uint64_t>(src, x.dtype(), i);
      if (dtype_is_float(to))
        store_as<double>(dst, to, i, static_cast<double>(v));
      else
        store_as<uint64_t>(dst, to, i, v);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = load_as<int64_t>(src, x.dtype(), i);
      if (dtype_is_float(to))
        store_as<double>(dst, to, i, static_cast<double>(v));
      else
        store_as<int64_t>(dst, to, i, v);
    }
  }
  return out;
}

DType cast_target(const Node& node) {
  const int64_t to = node.attrs.get_int("to", node.name);
  const DType t = static_cast<DType>(to);
  if (to <= 0 || to > static_cast<int64_t>(DType::u64))
    node_unsupported(node, "Cast to ONNX data type {} is not supported", to);
  if (!castable(t))
    node_unsupported(node, "Cast to {} is not supported (numeric and bool only)",
                     dtype_to_string(t));
  return t;
}

void register_cast_identity() {
  register_op({"Cast",
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 const DType to = cast_target(node);
                 if (!castable(x.dtype))
                   node_unsupported(node, "Cast from {} is not supported (numeric and bool only)",
                                    dtype_to_string(x.dtype));
                 set_output(node, 0, to, x.shape);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 return one_output(
                     cast_tensor(node, kernel_input(node, inputs, 0, "input"), cast_target(node)));
               }});
  register_op({"CastLike",
               [](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 const Value& like = required_input(node, 1, "target_type");
                 if (!castable(x.dtype) || !castable(like.dtype))
                   node_unsupported(node, "CastLike from {} to {} is not supported",
                                    dtype_to_string(x.dtype), dtype_to_string(like.dtype));
                 set_output(node, 0, like.dtype, x.shape);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 return one_output(
                     cast_tensor(node, kernel_input(node, inputs, 0, "input"),
                                 kernel_input(node, inputs, 1, "target_type").dtype()));
               }});
  register_op({"Identity",
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 set_output(node, 0, x.dtype, x.shape);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "input");
                 return one_output(copy_reshaped(x, x.shape()));
               }});

  // Dropout (opset 13) in inference: output = input, optional mask all true. Training mode
  // (input 2 true) with a non-zero ratio is random and therefore unsupported; training mode with
  // ratio 0 is deterministic (scale 1/(1-0) = 1, nothing dropped) and supported.
  register_op({"Dropout",
               [](Node& node) {
                 check_arity(node, 1, 3, 1, 2);
                 const Value& x = required_input(node, 0, "data");
                 expect_float(node, x.dtype, "input data");
                 set_output(node, 0, x.dtype, x.shape);
                 set_output(node, 1, DType::boolean, x.shape);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 3, 1, 2);
                 const Tensor& x = kernel_input(node, inputs, 0, "data");
                 const Tensor* ratio = inputs.size() > 1 ? inputs[1] : nullptr;
                 const Tensor* training = inputs.size() > 2 ? inputs[2] : nullptr;
                 if (training != nullptr) {
                   if (training->numel() != 1 || training->dtype() != DType::boolean)
                     node_fail(node, "training_mode must be a bool scalar");
                   const double r = ratio ? ratio->get_as_double(0) : 0.5;
                   if (training->data<uint8_t>()[0] != 0 && r != 0.0)
                     node_unsupported(
                         node,
                         "training-mode Dropout with ratio {} is random; only inference "
                         "(or ratio 0) is supported",
                         r);
                 }
                 std::vector<Tensor> out;
                 out.push_back(copy_reshaped(x, x.shape()));
                 if (node.outputs.size() > 1) {
                   Tensor mask(DType::boolean, x.shape());
                   for (int64_t i = 0; i < mask.numel(); ++i) mask.data<uint8_t>()[i] = 1;
                   out.push_back(std::move(mask));
                 }
                 return out;
               }});
}

}  // namespace

void register_elementwise_ops() {
  register_unary_ops();
  register_binary_ops();
  register_op({"Min", variadic_infer, variadic_kernel(Variadic::min)});
  register_op({"Max", variadic_infer, variadic_kernel(Variadic::max)});
  register_op({"Sum", variadic_infer, variadic_kernel(Variadic::sum)});
  register_op({"Mean", variadic_infer, variadic_kernel(Variadic::mean)});
  register_where_clip();
  register_cast_identity();
}

}  // namespace tessel::ops
