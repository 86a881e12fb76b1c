// Reductions and ops along one axis: ReduceSum (axes input), ReduceMean/Max/Min/Prod/L1/L2/
// LogSum/LogSumExp/SumSquare (axes attribute), ArgMax, ArgMin, Softmax, LogSoftmax, Hardmax
// (opset-13 single-axis semantics), CumSum, TopK; ONNX operator docs, opset 17.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

// ---------------------------------------------------------------------------------------------
// ReduceX
// ---------------------------------------------------------------------------------------------

enum class Reduce { sum, mean, prod, max, min, l1, l2, sum_square, log_sum, log_sum_exp };

struct ReduceShapes {
  bool noop = false;  // empty axes with noop_with_empty_axes=1: the output is the input
  Shape keep;         // input shape with reduced dims set to 1
  Shape out;          // keep, or keep without the reduced dims when keepdims=0
};

ReduceShapes reduce_shapes(const Node& node, const Shape& in, const std::vector<int64_t>& axes_in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  const bool keepdims = node.attrs.get_int_or("keepdims", 1, node.name) != 0;
  const bool noop_empty = node.attrs.get_int_or("noop_with_empty_axes", 0, node.name) != 0;
  ReduceShapes r;
  std::vector<bool> reduced(in.size(), false);
  if (axes_in.empty()) {
    if (noop_empty) {
      r.noop = true;
      r.keep = r.out = in;
      return r;
    }
    std::fill(reduced.begin(), reduced.end(), true);
  } else {
    for (int64_t a : normalize_axes(node, axes_in, rank, "axes")) reduced[a] = true;
  }
  for (int64_t k = 0; k < rank; ++k) {
    r.keep.push_back(reduced[k] ? 1 : in[k]);
    if (!reduced[k] || keepdims) r.out.push_back(reduced[k] ? 1 : in[k]);
  }
  return r;
}

/// The reduction axes of a node: input 1 for ReduceSum (compile-time constant in shape rules),
/// the 'axes' attribute for the others.
std::vector<int64_t> reduce_axes_attr(const Node& node) {
  return node.attrs.get_ints_or("axes", {}, node.name);
}

template <class C>
C reduce_init(Reduce kind) {
  switch (kind) {
    case Reduce::prod:
      return C(1);
    case Reduce::max:
    case Reduce::log_sum_exp:
      if constexpr (std::is_floating_point_v<C>) return -std::numeric_limits<C>::infinity();
      return std::numeric_limits<C>::lowest();
    case Reduce::min:
      if constexpr (std::is_floating_point_v<C>) return std::numeric_limits<C>::infinity();
      return std::numeric_limits<C>::max();
    default:
      return C(0);
  }
}

template <class C>
Tensor reduce_compute(const Tensor& x, const ReduceShapes& rs, Reduce kind) {
  InputView<C> vx(x);
  const int64_t n_out = shape_numel(rs.keep);
  const int64_t n_red = n_out > 0 ? x.numel() / n_out : 0;
  std::vector<C> acc(static_cast<size_t>(n_out), reduce_init<C>(kind));
  const auto st = broadcast_strides(rs.keep, x.shape());
  StridedLoop<1> loop(x.shape(), {st});
  const C* p = vx.data();
  auto nan_max = [](C a, C v) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(v)) return std::numeric_limits<C>::quiet_NaN();
    }
    return v > a ? v : a;
  };
  auto nan_min = [](C a, C v) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(v)) return std::numeric_limits<C>::quiet_NaN();
    }
    return v < a ? v : a;
  };
  std::vector<C> max_for_lse;
  if (kind == Reduce::log_sum_exp) {
    // log(sum exp(x)) = m + log(sum exp(x - m)) with m the max, so exp never overflows.
    max_for_lse = acc;
    loop.run([&](int64_t i, const std::array<int64_t, 1>& o) {
      max_for_lse[o[0]] = nan_max(max_for_lse[o[0]], p[i]);
    });
    for (C& m : max_for_lse)
      if (std::isinf(static_cast<double>(m))) m = C(0);
    std::fill(acc.begin(), acc.end(), C(0));
  }
  switch (kind) {
    case Reduce::sum:
    case Reduce::mean:
    case Reduce::log_sum:
      loop.run([&](int64_t i, const std::array<int64_t, 1>& o) { acc[o[0]] += p[i]; });
      break;
    case Reduce::prod:
      loop.run([&](int64_t i, const std::array<int64_t, 1>& o) { acc[o[0]] *= p[i]; });
      break;
    case Reduce::max:
      loop.run([&](int64_t i, const std::array<int64_t, 1>& o) {
        acc[o[0]] = nan_max(acc[o[0]], p[i]);
      });
      break;
    case Reduce::min:
      loop.run([&](int64_t i, const std::array<int64_t, 1>& o) {
        acc[o[0]] = nan_min(acc[o[0]], p[i]);
      });
      break;
    case Reduce::l1:
      loop.run([&](int64_t i, const std::array<int64_t, 1>& o) {
        acc[o[0]] += p[i] < C(0) ? -p[i] : p[i];
      });
      break;
    case Reduce::l2:
    case Reduce::sum_square:
      loop.run([&](int64_t i, const std::array<int64_t, 1>& o) { acc[o[0]] += p[i] * p[i]; });
      break;
    case Reduce::log_sum_exp:
      loop.run([&](int64_t i, const std::array<int64_t, 1>& o) {
        acc[o[0]] += static_cast<C>(std::exp(p[i] - max_for_lse[o[0]]));
      });
      break;
  }
  OutputBuffer<C> out(x.dtype(), rs.out);
  for (int64_t i = 0; i < n_out; ++i) {
    C v = acc[i];
    switch (kind) {
      case Reduce::mean:
        v = n_red > 0 ? v / static_cast<C>(n_red) : v;
        break;
      case Reduce::l2:
        v = static_cast<C>(std::sqrt(v));
        break;
      case Reduce::log_sum:
        v = static_cast<C>(std::log(v));
        break;
      case Reduce::log_sum_exp:
        v = static_cast<C>(std::log(v)) + max_for_lse[i];
        break;
      default:
        break;
    }
    out[i] = v;
  }
  return out.finish();
}

void register_reduce(const char* name, Reduce kind, bool axes_as_input) {
  register_op({name,
               [axes_as_input](Node& node) {
                 check_arity(node, 1, axes_as_input ? 2 : 1, 1, 1);
                 const Value& x = required_input(node, 0, "data");
                 expect_numeric(node, x.dtype, "input data");
                 std::vector<int64_t> axes;
                 if (axes_as_input) {
                   if (node.input(1))
                     axes = tensor_to_int64s(node, constant_input(node, 1, "axes"), "axes");
                 } else {
                   axes = reduce_axes_attr(node);
                 }
                 set_output(node, 0, x.dtype, reduce_shapes(node, x.shape, axes).out);
               },
               [kind, axes_as_input](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, axes_as_input ? 2 : 1, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "data");
                 std::vector<int64_t> axes;
                 if (axes_as_input) {
                   if (inputs.size() > 1 && inputs[1])
                     axes = tensor_to_int64s(node, *inputs[1], "axes");
                 } else {
                   axes = reduce_axes_attr(node);
                 }
                 const ReduceShapes rs = reduce_shapes(node, x.shape(), axes);
                 if (rs.noop) return one_output(copy_reshaped(x, x.shape()));
                 return dispatch_numeric(node, x.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   return one_output(reduce_compute<C>(x, rs, kind));
                 });
               }});
}

// ---------------------------------------------------------------------------------------------
// Ops along one axis: view the input as [outer, dim, inner].
// ---------------------------------------------------------------------------------------------

struct AxisView {
  int64_t axis, outer, dim, inner;
};

AxisView axis_view(const Node& node, const Shape& s, int64_t axis_attr) {
  const int64_t rank = static_cast<int64_t>(s.size());
  AxisView v;
  v.axis = normalize_axis(node, axis_attr, rank, "attribute axis");
  v.outer = 1;
  v.inner = 1;
  for (int64_t k = 0; k < v.axis; ++k) v.outer *= s[k];
  for (int64_t k = v.axis + 1; k < rank; ++k) v.inner *= s[k];
  v.dim = s[v.axis];
  return v;
}

// ArgMax / ArgMin: int64 index of the first (or with select_last_index=1, last) extreme value.
void register_arg(const char* name, bool is_max) {
  auto out_shape = [](const Node& node, const Shape& in) {
    const AxisView v = axis_view(node, in, node.attrs.get_int_or("axis", 0, node.name));
    Shape out = in;
    if (node.attrs.get_int_or("keepdims", 1, node.name) != 0)
      out[v.axis] = 1;
    else
      out.erase(out.begin() + v.axis);
    return out;
  };
  register_op({name,
               [out_shape](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "data");
                 expect_numeric(node, x.dtype, "input data");
                 if (x.shape.empty()) node_fail(node, "input must have rank >= 1");
                 set_output(node, 0, DType::i64, out_shape(node, x.shape));
               },
               [out_shape, is_max](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "data");
                 if (x.rank() == 0) node_fail(node, "input must have rank >= 1");
                 const AxisView v =
                     axis_view(node, x.shape(), node.attrs.get_int_or("axis", 0, node.name));
                 const bool last = node.attrs.get_int_or("select_last_index", 0, node.name) != 0;
                 if (v.dim == 0) node_fail(node, "cannot take the arg-extreme of an empty axis");
                 Tensor out(DType::i64, out_shape(node, x.shape()));
                 dispatch_numeric(node, x.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   InputView<C> vx(x);
                   for (int64_t o = 0; o < v.outer; ++o)
                     for (int64_t i = 0; i < v.inner; ++i) {
                       const C* p = vx.data() + o * v.dim * v.inner + i;
                       int64_t best = 0;
                       for (int64_t k = 1; k < v.dim; ++k) {
                         const C a = p[k * v.inner], b = p[best * v.inner];
                         const bool better =
                             is_max ? (last ? a >= b : a > b) : (last ? a <= b : a < b);
                         if (better) best = k;
                       }
                       out.data<int64_t>()[o * v.inner + i] = best;
                     }
                   return 0;
                 });
                 return one_output(std::move(out));
               }});
}

enum class AxisOp { softmax, log_softmax, hardmax };

/// Softmax (opset 13): y = exp(x - max) / sum(exp(x - max)) along `axis` (default -1);
/// LogSoftmax: x - max - log(sum(exp(x - max))); Hardmax: 1 at the first maximum, else 0.
void register_axis_op(const char* name, AxisOp op) {
  register_op({name,
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 expect_float(node, x.dtype, "input");
                 if (x.shape.empty()) node_fail(node, "input must have rank >= 1");
                 axis_view(node, x.shape, node.attrs.get_int_or("axis", -1, node.name));
                 set_output(node, 0, x.dtype, x.shape);
               },
               [op](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "input");
                 if (x.rank() == 0) node_fail(node, "input must have rank >= 1");
                 const AxisView v =
                     axis_view(node, x.shape(), node.attrs.get_int_or("axis", -1, node.name));
                 return dispatch_float(node, x.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   InputView<C> vx(x);
                   OutputBuffer<C> y(x.dtype(), x.shape());
                   for (int64_t o = 0; o < v.outer; ++o)
                     for (int64_t i = 0; i < v.inner; ++i) {
                       const int64_t base = o * v.dim * v.inner + i;
                       const C* p = vx.data() + base;
                       C* q = y.data() + base;
                       C mx = -std::numeric_limits<C>::infinity();
                       int64_t arg = 0;
                       for (int64_t k = 0; k < v.dim; ++k)
                         if (p[k * v.inner] > mx) {
                           mx = p[k * v.inner];
                           arg = k;
                         }
                       if (op == AxisOp::hardmax) {
                         for (int64_t k = 0; k < v.dim; ++k)
                           q[k * v.inner] = k == arg ? C(1) : C(0);
                         continue;
                       }
                       C sum = 0;
                       for (int64_t k = 0; k < v.dim; ++k) sum += std::exp(p[k * v.inner] - mx);
                       if (op == AxisOp::softmax) {
                         for (int64_t k = 0; k < v.dim; ++k)
                           q[k * v.inner] = std::exp(p[k * v.inner] - mx) / sum;
                       } else {
                         const C lse = std::log(sum);
                         for (int64_t k = 0; k < v.dim; ++k)
                           q[k * v.inner] = p[k * v.inner] - mx - lse;
                       }
                     }
                   return one_output(y.finish());
                 });
               }});
}

// CumSum: running sum along the axis given by input 1 (a scalar); exclusive shifts by one,
// reverse runs from the end.
void register_cumsum() {
  register_op({"CumSum",
               [](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& x = required_input(node, 0, "x");
                 const Value& axis = required_input(node, 1, "axis");
                 expect_numeric(node, x.dtype, "input x");
                 expect_dtype(node, axis.dtype, {DType::i32, DType::i64}, "input axis");
                 set_output(node, 0, x.dtype, x.shape);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "x");
                 const Tensor& ta = kernel_input(node, inputs, 1, "axis");
                 if (ta.numel() != 1) node_fail(node, "axis must be a scalar");
                 const AxisView v =
                     axis_view(node, x.shape(), tensor_to_int64s(node, ta, "axis")[0]);
                 const bool exclusive = node.attrs.get_int_or("exclusive", 0, node.name) != 0;
                 const bool reverse = node.attrs.get_int_or("reverse", 0, node.name) != 0;
                 return dispatch_numeric(node, x.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   InputView<C> vx(x);
                   OutputBuffer<C> y(x.dtype(), x.shape());
                   for (int64_t o = 0; o < v.outer; ++o)
                     for (int64_t i = 0; i < v.inner; ++i) {
                       C run = 0;
                       for (int64_t j = 0; j < v.dim; ++j) {
                         const int64_t k = reverse ? v.dim - 1 - j : j;
                         const int64_t at = (o * v.dim + k) * v.inner + i;
                         if (exclusive) {
                           y[at] = run;
                           run += vx[at];
                         } else {
                           run += vx[at];
                           y[at] = run;
                         }
                       }
                     }
                   return one_output(y.finish());
                 });
               }});
}

// TopK (opset 11): the k largest (largest=1) or smallest values along `axis` and their int64
// indices, sorted; ties keep the lower index first. k must be known at compile time.
void register_topk() {
  auto topk_shape = [](const Node& node, const Shape& in, int64_t k, AxisView* v_out) {
    const AxisView v = axis_view(node, in, node.attrs.get_int_or("axis", -1, node.name));
    if (k < 0 || k > v.dim) node_fail(node, "k={} out of range for an axis of size {}", k, v.dim);
    Shape out = in;
    out[v.axis] = k;
    *v_out = v;
    return out;
  };
  register_op({"TopK",
               [topk_shape](Node& node) {
                 check_arity(node, 2, 2, 2, 2);
                 const Value& x = required_input(node, 0, "X");
                 expect_numeric(node, x.dtype, "input X");
                 const auto k = tensor_to_int64s(node, constant_input(node, 1, "K"), "K");
                 if (k.size() != 1) node_fail(node, "K must hold one value");
                 AxisView v;
                 const Shape out = topk_shape(node, x.shape, k[0], &v);
                 set_output(node, 0, x.dtype, out);
                 set_output(node, 1, DType::i64, out);
               },
               [topk_shape](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 2, 2);
                 const Tensor& x = kernel_input(node, inputs, 0, "X");
                 const auto kv = tensor_to_int64s(node, kernel_input(node, inputs, 1, "K"), "K");
                 if (kv.size() != 1) node_fail(node, "K must hold one value");
                 const int64_t k = kv[0];
                 AxisView v;
                 const Shape out_shape = topk_shape(node, x.shape(), k, &v);
                 const bool largest = node.attrs.get_int_or("largest", 1, node.name) != 0;
                 Tensor indices(DType::i64, out_shape);
                 return dispatch_numeric(node, x.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   InputView<C> vx(x);
                   OutputBuffer<C> values(x.dtype(), out_shape);
                   std::vector<int64_t> order(static_cast<size_t>(v.dim));
                   for (int64_t o = 0; o < v.outer; ++o)
                     for (int64_t i = 0; i < v.inner; ++i) {
                       const C* p = vx.data() + o * v.dim * v.inner + i;
                       std::iota(order.begin(), order.end(), 0);
                       std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                         return largest ? p[a * v.inner] > p[b * v.inner]
                                        : p[a * v.inner] < p[b * v.inner];
                       });
                       for (int64_t j = 0; j < k; ++j) {
                         const int64_t at = (o * k + j) * v.inner + i;
                         values[at] = p[order[j] * v.inner];
                         indices.data<int64_t>()[at] = order[j];
                       }
                     }
                   std::vector<Tensor> outs;
                   outs.push_back(values.finish());
                   outs.push_back(std::move(indices));
                   return outs;
                 });
               }});
}

}  // namespace

void register_reduce_ops() {
  register_reduce("ReduceSum", Reduce::sum, true);
  register_reduce("ReduceMean", Reduce::mean, false);
  register_reduce("ReduceProd", Reduce::prod, false);
  register_reduce("ReduceMax", Reduce::max, false);
  register_reduce("ReduceMin", Reduce::min, false);
  register_reduce("ReduceL1", Reduce::l1, false);
  register_reduce("ReduceL2", Reduce::l2, false);
  register_reduce("ReduceSumSquare", Reduce::sum_square, false);
  register_reduce("ReduceLogSum", Reduce::log_sum, false);
  register_reduce("ReduceLogSumExp", Reduce::log_sum_exp, false);
  register_arg("ArgMax", true);
  register_arg("ArgMin", false);
  register_axis_op("Softmax", AxisOp::softmax);
  register_axis_op("LogSoftmax", AxisOp::log_softmax);
  register_axis_op("Hardmax", AxisOp::hardmax);
  register_cumsum();
  register_topk();
}

}  // namespace tessel::ops
