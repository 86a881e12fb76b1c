// Data-movement and shape ops: Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
// Concat, Split, Slice, Gather, GatherElements, GatherND, Expand, Tile, Pad, ConstantOfShape,
// Range, Constant, OneHot, DepthToSpace, SpaceToDepth, Trilu, EyeLike, NonZero,
// ScatterElements, ScatterND.
//
// Semantics follow the ONNX operator docs at opset 17 (https://onnx.ai/onnx/operators/). Inputs
// that determine an output shape (Reshape shape, Slice starts/ends/axes/steps, ...) must be known
// at compile time: the shape rules read Value::constant and throw tessel::Unsupported otherwise.
// Kernels move raw elements (any dtype with a fixed element size), so they are exact.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/ranges.h>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

/// Calls f(E{}) with an unsigned integer type E of the dtype's element size (1, 2, 4 or 8 bytes).
template <class F>
decltype(auto) dispatch_elem(const Node& node, DType dtype, F&& f) {
  switch (dtype_size(dtype)) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      node_unsupported(node, "dtype {} is not supported", dtype_to_string(dtype));
  }
}

void expect_storable(const Node& node, DType dtype, const char* role) {
  if (dtype_size(dtype) == 0)
    node_unsupported(node, "{} has dtype {}, which tessel cannot store", role,
                     dtype_to_string(dtype));
}

/// out[o] = in[base + sum_k idx_k * in_strides[k]] for every index of out_shape.
Tensor strided_copy(const Node& node, const Tensor& in, const Shape& out_shape,
                    const std::vector<int64_t>& in_strides, int64_t base) {
  Tensor out(in.dtype(), out_shape);
  dispatch_elem(node, in.dtype(), [&](auto tag) {
    using E = decltype(tag);
    const E* src = in.data<E>() + base;
    E* dst = out.data<E>();
    StridedLoop<1> loop(out_shape, {in_strides});
    loop.run([&](int64_t i, const std::array<int64_t, 1>& o) { dst[i] = src[o[0]]; });
  });
  return out;
}

/// Copies the single value of `t` (numel 1).
void expect_scalar_like(const Node& node, const Tensor& t, const char* role) {
  if (t.numel() != 1)
    node_fail(node, "{} must be a scalar, got shape {}", role, shape_to_string(t.shape()));
}

// ---------------------------------------------------------------------------------------------
// Shape, Size
// ---------------------------------------------------------------------------------------------

/// Shape's [start, end) range (opset 15): negative values count from the back, then clamp.
std::pair<int64_t, int64_t> shape_range(const Node& node, int64_t rank) {
  int64_t start = node.attrs.get_int_or("start", 0, node.name);
  int64_t end = node.attrs.get_int_or("end", rank, node.name);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {start, std::max(start, end)};
}

void register_shape_size() {
  register_op({"Shape",
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "data");
                 auto [s, e] = shape_range(node, static_cast<int64_t>(x.shape.size()));
                 set_output(node, 0, DType::i64, {e - s});
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "data");
                 auto [s, e] = shape_range(node, x.rank());
                 std::vector<int64_t> dims(x.shape().begin() + s, x.shape().begin() + e);
                 return one_output(Tensor::from_int64s({e - s}, dims));
               }});
  register_op({"Size",
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 required_input(node, 0, "data");
                 set_output(node, 0, DType::i64, {});
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 return one_output(
                     Tensor::from_int64s({}, {kernel_input(node, inputs, 0, "data").numel()}));
               }});
}

// ---------------------------------------------------------------------------------------------
// Reshape, Flatten, Squeeze, Unsqueeze
// ---------------------------------------------------------------------------------------------

/// Reshape's output shape (opset 14): 0 copies the input dim (unless allowzero=1), one -1 is
/// inferred from the element count.
Shape reshape_shape(const Node& node, const Shape& in, const std::vector<int64_t>& spec) {
  const bool allowzero = node.attrs.get_int_or("allowzero", 0, node.name) != 0;
  Shape out(spec.size());
  int64_t infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (infer_at >= 0) node_fail(node, "shape {} has more than one -1", fmt::join(spec, ","));
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d == 0 && !allowzero) {
      if (i >= in.size())
        node_fail(node, "shape[{}] = 0 copies input dim {}, but the input has rank {}", i, i,
                  in.size());
      d = in[i];
    }
    if (d < 0) node_fail(node, "shape[{}] = {} is invalid", i, d);
    out[i] = d;
    known *= d;
  }
  const int64_t numel = shape_numel(in);
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0)
      node_fail(node, "cannot reshape {} ({} elements) to [{}]", shape_to_string(in), numel,
                fmt::join(spec, ","));
    out[infer_at] = numel / known;
  } else if (known != numel) {
    node_fail(node, "cannot reshape {} ({} elements) to {} ({} elements)", shape_to_string(in),
              numel, shape_to_string(out), known);
  }
  return out;
}

Shape flatten_shape(const Node& node, const Shape& in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = node.attrs.get_int_or("axis", 1, node.name);
  if (axis < -rank || axis > rank)
    node_fail(node, "attribute axis={} out of range [{}, {}]", axis, -rank, rank);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in[i];
  return {outer, inner};
}

/// Squeeze (opset 13): axes from input 1, or every size-1 dim when absent/empty.
Shape squeeze_shape(const Node& node, const Shape& in, const std::vector<int64_t>* axes_in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (axes_in == nullptr || axes_in->empty()) {
    for (int64_t i = 0; i < rank; ++i) drop[i] = in[i] == 1;
  } else {
    for (int64_t a : normalize_axes(node, *axes_in, rank, "axes")) {
      if (in[a] != 1)
        node_fail(node, "cannot squeeze axis {} of size {} (shape {})", a, in[a],
                  shape_to_string(in));
      drop[a] = true;
    }
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i]) out.push_back(in[i]);
  return out;
}

Shape unsqueeze_shape(const Node& node, const Shape& in, const std::vector<int64_t>& axes) {
  const int64_t out_rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : normalize_axes(node, axes, out_rank, "axes")) inserted[a] = true;
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[i] ? 1 : in[k++]);
  return out;
}

/// Registers an op whose output is input 0's data with a new shape computed by `shape_fn(node,
/// in_shape, inputs...)`; `value_inputs` lists the inputs the shape depends on.
void register_reshape_family() {
  register_op({"Reshape",
               [](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& x = required_input(node, 0, "data");
                 const Tensor& s = constant_input(node, 1, "shape");
                 set_output(node, 0, x.dtype,
                            reshape_shape(node, x.shape, tensor_to_int64s(node, s, "shape")));
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "data");
                 const Tensor& s = kernel_input(node, inputs, 1, "shape");
                 return one_output(copy_reshaped(
                     x, reshape_shape(node, x.shape(), tensor_to_int64s(node, s, "shape"))));
               }});
  register_op({"Flatten",
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 set_output(node, 0, x.dtype, flatten_shape(node, x.shape));
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "input");
                 return one_output(copy_reshaped(x, flatten_shape(node, x.shape())));
               }});
  register_op({"Squeeze",
               [](Node& node) {
                 check_arity(node, 1, 2, 1, 1);
                 const Value& x = required_input(node, 0, "data");
                 std::vector<int64_t> axes;
                 const bool has_axes = node.input(1) != nullptr;
                 if (has_axes)
                   axes = tensor_to_int64s(node, constant_input(node, 1, "axes"), "axes");
                 set_output(node, 0, x.dtype,
                            squeeze_shape(node, x.shape, has_axes ? &axes : nullptr));
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 2, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "data");
                 std::vector<int64_t> axes;
                 const bool has_axes = inputs.size() > 1 && inputs[1] != nullptr;
                 if (has_axes) axes = tensor_to_int64s(node, *inputs[1], "axes");
                 return one_output(
                     copy_reshaped(x, squeeze_shape(node, x.shape(), has_axes ? &axes : nullptr)));
               }});
  register_op({"Unsqueeze",
               [](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& x = required_input(node, 0, "data");
                 const auto axes = tensor_to_int64s(node, constant_input(node, 1, "axes"), "axes");
                 set_output(node, 0, x.dtype, unsqueeze_shape(node, x.shape, axes));
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "data");
                 const auto axes =
                     tensor_to_int64s(node, kernel_input(node, inputs, 1, "axes"), "axes");
                 return one_output(copy_reshaped(x, unsqueeze_shape(node, x.shape(), axes)));
               }});
}

// ---------------------------------------------------------------------------------------------
// Transpose
// ---------------------------------------------------------------------------------------------

std::vector<int64_t> transpose_perm(const Node& node, size_t rank) {
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  perm = node.attrs.get_ints_or("perm", perm, node.name);
  if (perm.size() != rank)
    node_fail(node, "perm has {} entries for an input of rank {}", perm.size(), rank);
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      node_fail(node, "perm [{}] is not a permutation of 0..{}", fmt::join(perm, ","), rank - 1);
    seen[p] = true;
  }
  return perm;
}

void register_transpose() {
  register_op({"Transpose",
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "data");
                 const auto perm = transpose_perm(node, x.shape.size());
                 Shape out(perm.size());
                 for (size_t i = 0; i < perm.size(); ++i) out[i] = x.shape[perm[i]];
                 set_output(node, 0, x.dtype, out);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "data");
                 const auto perm = transpose_perm(node, x.shape().size());
                 const auto in_strides = row_major_strides(x.shape());
                 Shape out(perm.size());
                 std::vector<int64_t> strides(perm.size());
                 for (size_t i = 0; i < perm.size(); ++i) {
                   out[i] = x.shape()[perm[i]];
                   strides[i] = in_strides[perm[i]];
                 }
                 return one_output(strided_copy(node, x, out, strides, 0));
               }});
}

// ---------------------------------------------------------------------------------------------
// Concat, Split
// ---------------------------------------------------------------------------------------------

Shape concat_shape(const Node& node, const std::vector<const Shape*>& shapes, int64_t* axis_out) {
  if (shapes.empty()) node_fail(node, "expected at least one input");
  const Shape& first = *shapes[0];
  const int64_t rank = static_cast<int64_t>(first.size());
  if (rank == 0) node_fail(node, "cannot concatenate scalars");
  const int64_t axis =
      normalize_axis(node, node.attrs.get_int("axis", node.name), rank, "attribute axis");
  Shape out = first;
  out[axis] = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = *shapes[i];
    if (static_cast<int64_t>(s.size()) != rank)
      node_fail(node, "input {} has rank {}, expected {}", i, s.size(), rank);
    for (int64_t k = 0; k < rank; ++k)
      if (k != axis && s[k] != first[k])
        node_fail(node, "input {} has shape {}, which differs from {} outside axis {}", i,
                  shape_to_string(s), shape_to_string(first), axis);
    out[axis] += s[axis];
  }
  *axis_out = axis;
  return out;
}

/// Split sizes: from the 'split' input when given, else equal parts (one per output).
std::vector<int64_t> split_sizes(const Node& node, int64_t dim, size_t n_outputs,
                                 const std::vector<int64_t>* split) {
  std::vector<int64_t> sizes;
  if (split != nullptr) {
    sizes = *split;
    if (sizes.size() != n_outputs)
      node_fail(node, "split has {} entries for {} outputs", sizes.size(), n_outputs);
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) node_fail(node, "split entry {} is negative", s);
      total += s;
    }
    if (total != dim) node_fail(node, "split sums to {}, but the axis has size {}", total, dim);
  } else {
    if (n_outputs == 0) node_fail(node, "expected at least one output");
    if (dim % static_cast<int64_t>(n_outputs) != 0)
      node_fail(node, "axis of size {} does not split evenly into {} outputs", dim, n_outputs);
    sizes.assign(n_outputs, dim / static_cast<int64_t>(n_outputs));
  }
  return sizes;
}

void register_concat_split() {
  register_op({"Concat",
               [](Node& node) {
                 if (node.inputs.empty()) node_fail(node, "expected at least one input");
                 check_arity(node, 1, node.inputs.size(), 1, 1);
                 std::vector<const Shape*> shapes;
                 for (size_t i = 0; i < node.inputs.size(); ++i) {
                   const Value& v = required_input(node, i, "inputs");
                   expect_same_dtype(node, 0, i);
                   shapes.push_back(&v.shape);
                 }
                 expect_storable(node, node.inputs[0]->dtype, "input 0");
                 int64_t axis;
                 set_output(node, 0, node.inputs[0]->dtype, concat_shape(node, shapes, &axis));
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 std::vector<const Shape*> shapes;
                 for (size_t i = 0; i < inputs.size(); ++i) {
                   shapes.push_back(&kernel_input(node, inputs, i, "inputs").shape());
                   if (inputs[i]->dtype() != inputs[0]->dtype())
                     node_fail(node, "inputs have different dtypes");
                 }
                 int64_t axis;
                 const Shape out_shape = concat_shape(node, shapes, &axis);
                 Tensor out(inputs[0]->dtype(), out_shape);
                 const int64_t esize = dtype_size(out.dtype());
                 if (esize == 0) node_unsupported(node, "dtype is not supported");
                 int64_t outer = 1;
                 for (int64_t k = 0; k < axis; ++k) outer *= out_shape[k];
                 const int64_t out_row = out.numel() / std::max<int64_t>(outer, 1) * esize;
                 int64_t col = 0;  // byte offset of this input's block within an output row
                 for (const Tensor* t : inputs) {
                   const int64_t row = outer == 0 ? 0 : t->numel() / outer * esize;
                   for (int64_t o = 0; o < outer && row > 0; ++o)
                     std::memcpy(out.raw() + o * out_row + col, t->raw() + o * row,
                                 static_cast<size_t>(row));
                   col += row;
                 }
                 return one_output(std::move(out));
               }});
  register_op({"Split",
               [](Node& node) {
                 check_arity(node, 1, 2, 1, SIZE_MAX);
                 const Value& x = required_input(node, 0, "input");
                 const int64_t axis =
                     normalize_axis(node, node.attrs.get_int_or("axis", 0, node.name),
                                    static_cast<int64_t>(x.shape.size()), "attribute axis");
                 std::vector<int64_t> split;
                 const bool has_split = node.input(1) != nullptr;
                 if (has_split)
                   split = tensor_to_int64s(node, constant_input(node, 1, "split"), "split");
                 const auto sizes = split_sizes(node, x.shape[axis], node.outputs.size(),
                                                has_split ? &split : nullptr);
                 for (size_t i = 0; i < sizes.size(); ++i) {
                   Shape s = x.shape;
                   s[axis] = sizes[i];
                   set_output(node, i, x.dtype, s);
                 }
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 const Tensor& x = kernel_input(node, inputs, 0, "input");
                 const int64_t axis = normalize_axis(
                     node, node.attrs.get_int_or("axis", 0, node.name), x.rank(), "attribute axis");
                 std::vector<int64_t> split;
                 const bool has_split = inputs.size() > 1 && inputs[1] != nullptr;
                 if (has_split) split = tensor_to_int64s(node, *inputs[1], "split");
                 const auto sizes = split_sizes(node, x.shape()[axis], node.outputs.size(),
                                                has_split ? &split : nullptr);
                 const auto strides = row_major_strides(x.shape());
                 std::vector<Tensor> outs;
                 int64_t start = 0;
                 for (int64_t size : sizes) {
                   Shape s = x.shape();
                   s[axis] = size;
                   outs.push_back(strided_copy(node, x, s, strides, start * strides[axis]));
                   start += size;
                 }
                 return outs;
               }});
}

// ---------------------------------------------------------------------------------------------
// Slice
// ---------------------------------------------------------------------------------------------

/// Per-axis (start, step, count) of a Slice (opset 13 clamping rules).
struct SliceSpec {
  std::vector<int64_t> start, step;
  Shape out;
};

SliceSpec slice_spec(const Node& node, const Shape& in, const std::vector<int64_t>& starts,
                     const std::vector<int64_t>& ends, const std::vector<int64_t>* axes_in,
                     const std::vector<int64_t>* steps_in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size())
    node_fail(node, "starts has {} entries but ends has {}", starts.size(), ends.size());
  std::vector<int64_t> axes;
  if (axes_in) {
    axes = normalize_axes(node, *axes_in, rank, "axes");
    if (axes.size() != starts.size())
      node_fail(node, "axes has {} entries but starts has {}", axes.size(), starts.size());
  } else {
    if (static_cast<int64_t>(starts.size()) > rank)
      node_fail(node, "starts has {} entries for an input of rank {}", starts.size(), rank);
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps_in && steps_in->size() != starts.size())
    node_fail(node, "steps has {} entries but starts has {}", steps_in->size(), starts.size());
  SliceSpec spec;
  spec.start.assign(rank, 0);
  spec.step.assign(rank, 1);
  spec.out = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    const int64_t dim = in[a];
    const int64_t step = steps_in ? (*steps_in)[i] : 1;
    if (step == 0) node_fail(node, "steps[{}] is 0", i);
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    spec.start[a] = s;
    spec.step[a] = step;
    spec.out[a] = count;
  }
  return spec;
}

void register_slice() {
  register_op(
      {"Slice",
       [](Node& node) {
         check_arity(node, 3, 5, 1, 1);
         const Value& x = required_input(node, 0, "data");
         const auto starts = tensor_to_int64s(node, constant_input(node, 1, "starts"), "starts");
         const auto ends = tensor_to_int64s(node, constant_input(node, 2, "ends"), "ends");
         std::vector<int64_t> axes, steps;
         if (node.input(3)) axes = tensor_to_int64s(node, constant_input(node, 3, "axes"), "axes");
         if (node.input(4))
           steps = tensor_to_int64s(node, constant_input(node, 4, "steps"), "steps");
         const SliceSpec spec =
             slice_spec(node, x.shape, starts, ends, node.input(3) ? &axes : nullptr,
                        node.input(4) ? &steps : nullptr);
         set_output(node, 0, x.dtype, spec.out);
       },
       [](const Node& node, const std::vector<const Tensor*>& inputs) {
         check_arity(node, 3, 5, 1, 1);
         const Tensor& x = kernel_input(node, inputs, 0, "data");
         const auto starts =
             tensor_to_int64s(node, kernel_input(node, inputs, 1, "starts"), "starts");
         const auto ends = tensor_to_int64s(node, kernel_input(node, inputs, 2, "ends"), "ends");
         const Tensor* taxes = inputs.size() > 3 ? inputs[3] : nullptr;
         const Tensor* tsteps = inputs.size() > 4 ? inputs[4] : nullptr;
         std::vector<int64_t> axes, steps;
         if (taxes) axes = tensor_to_int64s(node, *taxes, "axes");
         if (tsteps) steps = tensor_to_int64s(node, *tsteps, "steps");
         const SliceSpec spec = slice_spec(node, x.shape(), starts, ends, taxes ? &axes : nullptr,
                                           tsteps ? &steps : nullptr);
         const auto in_strides = row_major_strides(x.shape());
         std::vector<int64_t> strides(in_strides.size());
         int64_t base = 0;
         for (size_t k = 0; k < in_strides.size(); ++k) {
           strides[k] = in_strides[k] * spec.step[k];
           if (spec.out[k] > 0) base += in_strides[k] * spec.start[k];
         }
         if (shape_numel(spec.out) == 0) return one_output(Tensor(x.dtype(), spec.out));
         return one_output(strided_copy(node, x, spec.out, strides, base));
       }});
}

// ---------------------------------------------------------------------------------------------
// Gather, GatherElements, GatherND
// ---------------------------------------------------------------------------------------------

Shape gather_shape(const Node& node, const Shape& data, const Shape& indices, int64_t* axis_out) {
  const int64_t rank = static_cast<int64_t>(data.size());
  if (rank == 0) node_fail(node, "data must have rank >= 1");
  const int64_t axis =
      normalize_axis(node, node.attrs.get_int_or("axis", 0, node.name), rank, "attribute axis");
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  *axis_out = axis;
  return out;
}

/// Reads index `i` of an integer tensor, resolving negative values against `dim`; throws naming the
/// node when out of range.
int64_t checked_index(const Node& node, const Tensor& indices, int64_t i, int64_t dim) {
  int64_t v = load_as<int64_t>(indices.raw(), indices.dtype(), i);
  if (v < -dim || v >= dim)
    node_fail(node, "index {} is out of range for an axis of size {}", v, dim);
  return v < 0 ? v + dim : v;
}

void register_gather() {
  register_op({"Gather",
               [](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& data = required_input(node, 0, "data");
                 const Value& idx = required_input(node, 1, "indices");
                 expect_dtype(node, idx.dtype, {DType::i32, DType::i64}, "input indices");
                 int64_t axis;
                 set_output(node, 0, data.dtype, gather_shape(node, data.shape, idx.shape, &axis));
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 const Tensor& data = kernel_input(node, inputs, 0, "data");
                 const Tensor& idx = kernel_input(node, inputs, 1, "indices");
                 if (!dtype_is_integer(idx.dtype())) node_fail(node, "indices must be integers");
                 int64_t axis;
                 const Shape out_shape = gather_shape(node, data.shape(), idx.shape(), &axis);
                 Tensor out(data.dtype(), out_shape);
                 const int64_t esize = dtype_size(data.dtype());
                 if (esize == 0) node_unsupported(node, "dtype is not supported");
                 int64_t outer = 1, inner = 1;
                 for (int64_t k = 0; k < axis; ++k) outer *= data.shape()[k];
                 for (int64_t k = axis + 1; k < data.rank(); ++k) inner *= data.shape()[k];
                 const int64_t dim = data.shape()[axis];
                 const int64_t n_idx = idx.numel();
                 const size_t block = static_cast<size_t>(inner * esize);
                 for (int64_t o = 0; o < outer; ++o)
                   for (int64_t j = 0; j < n_idx; ++j) {
                     const int64_t src = checked_index(node, idx, j, dim);
                     std::memcpy(out.raw() + ((o * n_idx + j) * inner) * esize,
                                 data.raw() + ((o * dim + src) * inner) * esize, block);
                   }
                 return one_output(std::move(out));
               }});

  // GatherElements: out[i0..] = data[..., indices[i0..], ...] along axis; out shape = indices.
  register_op({"GatherElements",
               [](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& data = required_input(node, 0, "data");
                 const Value& idx = required_input(node, 1, "indices");
                 expect_dtype(node, idx.dtype, {DType::i32, DType::i64}, "input indices");
                 normalize_axis(node, node.attrs.get_int_or("axis", 0, node.name),
                                static_cast<int64_t>(data.shape.size()), "attribute axis");
                 if (idx.shape.size() != data.shape.size())
                   node_fail(node, "indices rank {} differs from data rank {}", idx.shape.size(),
                             data.shape.size());
                 set_output(node, 0, data.dtype, idx.shape);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 const Tensor& data = kernel_input(node, inputs, 0, "data");
                 const Tensor& idx = kernel_input(node, inputs, 1, "indices");
                 const int64_t rank = data.rank();
                 const int64_t axis = normalize_axis(
                     node, node.attrs.get_int_or("axis", 0, node.name), rank, "attribute axis");
                 if (idx.rank() != rank) node_fail(node, "indices rank differs from data rank");
                 for (int64_t k = 0; k < rank; ++k)
                   if (k != axis && idx.shape()[k] > data.shape()[k])
                     node_fail(node, "indices shape {} exceeds data shape {} on axis {}",
                               shape_to_string(idx.shape()), shape_to_string(data.shape()), k);
                 Tensor out(data.dtype(), idx.shape());
                 const auto dstrides = row_major_strides(data.shape());
                 dispatch_elem(node, data.dtype(), [&](auto tag) {
                   using E = decltype(tag);
                   const E* src = data.data<E>();
                   E* dst = out.data<E>();
                   std::vector<int64_t> pos(rank, 0);
                   for (int64_t i = 0; i < idx.numel(); ++i) {
                     int64_t off = 0;
                     for (int64_t k = 0; k < rank; ++k)
                       off +=
                           (k == axis ? checked_index(node, idx, i, data.shape()[axis]) : pos[k]) *
                           dstrides[k];
                     dst[i] = src[off];
                     for (int64_t k = rank; k-- > 0;) {
                       if (++pos[k] < idx.shape()[k]) break;
                       pos[k] = 0;
                     }
                   }
                 });
                 return one_output(std::move(out));
               }});

  // GatherND (opset 13) with batch_dims.
  auto gathernd_shape = [](const Node& node, const Shape& data, const Shape& idx) {
    const int64_t b = node.attrs.get_int_or("batch_dims", 0, node.name);
    const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(idx.size());
    if (q < 1 || r < 1) node_fail(node, "data and indices must have rank >= 1");
    if (b < 0 || b >= std::min(q, r)) node_fail(node, "batch_dims={} out of range", b);
    const int64_t last = idx[q - 1];
    if (last < 1 || last > r - b)
      node_fail(node, "indices.shape[-1]={} must be in [1, {}]", last, r - b);
    for (int64_t k = 0; k < b; ++k)
      if (data[k] != idx[k]) node_fail(node, "batch dim {} differs between data and indices", k);
    Shape out(idx.begin(), idx.end() - 1);
    out.insert(out.end(), data.begin() + b + last, data.end());
    return out;
  };
  register_op({"GatherND",
               [gathernd_shape](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& data = required_input(node, 0, "data");
                 const Value& idx = required_input(node, 1, "indices");
                 expect_dtype(node, idx.dtype, {DType::i64}, "input indices");
                 set_output(node, 0, data.dtype, gathernd_shape(node, data.shape, idx.shape));
               },
               [gathernd_shape](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 const Tensor& data = kernel_input(node, inputs, 0, "data");
                 const Tensor& idx = kernel_input(node, inputs, 1, "indices");
                 const Shape out_shape = gathernd_shape(node, data.shape(), idx.shape());
                 const int64_t b = node.attrs.get_int_or("batch_dims", 0, node.name);
                 const int64_t last = idx.shape().back();
                 int64_t batch = 1;
                 for (int64_t k = 0; k < b; ++k) batch *= data.shape()[k];
                 const int64_t tuples_per_batch = idx.numel() / last / std::max<int64_t>(batch, 1);
                 const auto dstrides = row_major_strides(data.shape());
                 const int64_t slice = b + last < data.rank() ? dstrides[b + last - 1] : 1;
                 const int64_t batch_stride = b > 0 ? dstrides[b - 1] : 0;
                 Tensor out(data.dtype(), out_shape);
                 const int64_t esize = dtype_size(data.dtype());
                 if (esize == 0) node_unsupported(node, "dtype is not supported");
                 for (int64_t bi = 0; bi < batch; ++bi)
                   for (int64_t t = 0; t < tuples_per_batch; ++t) {
                     const int64_t tuple = bi * tuples_per_batch + t;
                     int64_t off = bi * batch_stride;
                     for (int64_t k = 0; k < last; ++k)
                       off += checked_index(node, idx, tuple * last + k, data.shape()[b + k]) *
                              dstrides[b + k];
                     std::memcpy(out.raw() + tuple * slice * esize, data.raw() + off * esize,
                                 static_cast<size_t>(slice * esize));
                   }
                 return one_output(std::move(out));
               }});
}

// ---------------------------------------------------------------------------------------------
// Expand, Tile, Pad
// ---------------------------------------------------------------------------------------------

void register_expand_tile_pad() {
  register_op(
      {"Expand",
       [](Node& node) {
         check_arity(node, 2, 2, 1, 1);
         const Value& x = required_input(node, 0, "input");
         const auto shape = tensor_to_int64s(node, constant_input(node, 1, "shape"), "shape");
         set_output(node, 0, x.dtype, broadcast_shapes(x.shape, shape, node.describe()));
       },
       [](const Node& node, const std::vector<const Tensor*>& inputs) {
         check_arity(node, 2, 2, 1, 1);
         const Tensor& x = kernel_input(node, inputs, 0, "input");
         const auto shape = tensor_to_int64s(node, kernel_input(node, inputs, 1, "shape"), "shape");
         const Shape out = broadcast_shapes(x.shape(), shape, node.describe());
         return one_output(strided_copy(node, x, out, broadcast_strides(x.shape(), out), 0));
       }});

  auto tile_shape = [](const Node& node, const Shape& in, const std::vector<int64_t>& repeats) {
    if (repeats.size() != in.size())
      node_fail(node, "repeats has {} entries for an input of rank {}", repeats.size(), in.size());
    Shape out(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (repeats[i] < 0) node_fail(node, "repeats[{}] = {} is negative", i, repeats[i]);
      out[i] = in[i] * repeats[i];
    }
    return out;
  };
  register_op({"Tile",
               [tile_shape](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 const auto reps =
                     tensor_to_int64s(node, constant_input(node, 1, "repeats"), "repeats");
                 set_output(node, 0, x.dtype, tile_shape(node, x.shape, reps));
               },
               [tile_shape](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 2, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "input");
                 const auto reps =
                     tensor_to_int64s(node, kernel_input(node, inputs, 1, "repeats"), "repeats");
                 const Shape out_shape = tile_shape(node, x.shape(), reps);
                 Tensor out(x.dtype(), out_shape);
                 const auto in_strides = row_major_strides(x.shape());
                 const int64_t rank = x.rank();
                 dispatch_elem(node, x.dtype(), [&](auto tag) {
                   using E = decltype(tag);
                   const E* src = x.data<E>();
                   E* dst = out.data<E>();
                   std::vector<int64_t> pos(rank, 0);
                   for (int64_t i = 0; i < out.numel(); ++i) {
                     int64_t off = 0;
                     for (int64_t k = 0; k < rank; ++k)
                       off += (pos[k] % x.shape()[k]) * in_strides[k];
                     dst[i] = src[off];
                     for (int64_t k = rank; k-- > 0;) {
                       if (++pos[k] < out_shape[k]) break;
                       pos[k] = 0;
                     }
                   }
                 });
                 return one_output(std::move(out));
               }});

  // Pad (opset 13): pads = [x1_begin, x2_begin, ..., x1_end, x2_end, ...] (negative = crop),
  // mode constant | reflect | edge, constant_value input (default 0).
  auto pad_shape = [](const Node& node, const Shape& in, const std::vector<int64_t>& pads) {
    const size_t rank = in.size();
    if (pads.size() != 2 * rank)
      node_fail(node, "pads has {} entries, expected 2 * rank = {}", pads.size(), 2 * rank);
    Shape out(rank);
    for (size_t k = 0; k < rank; ++k) {
      out[k] = in[k] + pads[k] + pads[k + rank];
      if (out[k] < 0) node_fail(node, "pads make axis {} negative ({})", k, out[k]);
    }
    return out;
  };
  auto pad_mode = [](const Node& node) {
    const std::string mode = node.attrs.get_string_or("mode", "constant", node.name);
    if (mode != "constant" && mode != "reflect" && mode != "edge")
      node_unsupported(node, "mode '{}' is not supported (constant, reflect, edge)", mode);
    return mode;
  };
  register_op({"Pad",
               [pad_shape, pad_mode](Node& node) {
                 check_arity(node, 2, 3, 1, 1);
                 const Value& x = required_input(node, 0, "data");
                 pad_mode(node);
                 const auto pads = tensor_to_int64s(node, constant_input(node, 1, "pads"), "pads");
                 set_output(node, 0, x.dtype, pad_shape(node, x.shape, pads));
               },
               [pad_shape, pad_mode](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 2, 3, 1, 1);
                 const Tensor& x = kernel_input(node, inputs, 0, "data");
                 const std::string mode = pad_mode(node);
                 const auto pads =
                     tensor_to_int64s(node, kernel_input(node, inputs, 1, "pads"), "pads");
                 const Shape out_shape = pad_shape(node, x.shape(), pads);
                 const int64_t rank = x.rank();
                 Tensor out(x.dtype(), out_shape);
                 if (out.numel() == 0) return one_output(std::move(out));
                 if (mode != "constant")
                   for (int64_t k = 0; k < rank; ++k)
                     if (x.shape()[k] == 0 && out_shape[k] > 0)
                       node_fail(node, "mode '{}' cannot pad an empty axis {}", mode, k);
                 // Constant value in the data's dtype (first element of input 2, default 0).
                 Tensor fill(x.dtype(), {});
                 if (inputs.size() > 2 && inputs[2] != nullptr) {
                   if (inputs[2]->dtype() != x.dtype() || inputs[2]->numel() != 1)
                     node_fail(node, "constant_value must be a scalar of the data's dtype");
                   std::memcpy(fill.raw(), inputs[2]->raw(), fill.nbytes());
                 }
                 const auto in_strides = row_major_strides(x.shape());
                 dispatch_elem(node, x.dtype(), [&](auto tag) {
                   using E = decltype(tag);
                   const E* src = x.data<E>();
                   E* dst = out.data<E>();
                   const E fill_value = fill.data<E>()[0];
                   std::vector<int64_t> pos(rank, 0);
                   for (int64_t i = 0; i < out.numel(); ++i) {
                     int64_t off = 0;
                     bool inside = true;
                     for (int64_t k = 0; k < rank; ++k) {
                       const int64_t d = x.shape()[k];
                       int64_t s = pos[k] - pads[k];
                       if (s < 0 || s >= d) {
                         if (mode == "constant") {
                           inside = false;
                           break;
                         } else if (mode == "edge") {
                           s = std::clamp<int64_t>(s, 0, d - 1);
                         } else {  // reflect about the edge element (not repeating it)
                           if (d == 1) {
                             s = 0;
                           } else {
                             const int64_t period = 2 * (d - 1);
                             s = ((s % period) + period) % period;
                             if (s >= d) s = period - s;
                           }
                         }
                       }
                       off += s * in_strides[k];
                     }
                     dst[i] = inside ? src[off] : fill_value;
                     for (int64_t k = rank; k-- > 0;) {
                       if (++pos[k] < out_shape[k]) break;
                       pos[k] = 0;
                     }
                   }
                 });
                 return one_output(std::move(out));
               }});
}

// ---------------------------------------------------------------------------------------------
// ConstantOfShape, Range, Constant, EyeLike, OneHot
// ---------------------------------------------------------------------------------------------

Tensor constant_of_shape_value(const Node& node) {
  const Tensor* v = node.attrs.get_tensor("value");
  if (v == nullptr) return Tensor::scalar_f32(0.0f);
  if (v->numel() != 1) node_fail(node, "attribute value must hold one element");
  expect_storable(node, v->dtype(), "attribute value");
  return *v;
}

Shape constant_of_shape_shape(const Node& node, const Tensor& shape_t) {
  const auto dims = tensor_to_int64s(node, shape_t, "input");
  for (int64_t d : dims)
    if (d < 0) node_fail(node, "shape [{}] has a negative dim", fmt::join(dims, ","));
  return Shape(dims.begin(), dims.end());
}

int64_t range_count(const Node& node, double start, double limit, double delta) {
  if (delta == 0) node_fail(node, "delta is 0");
  const double n = std::ceil((limit - start) / delta);
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

/// The tensor a Constant node holds (value / value_float(s) / value_int(s) attributes).
Tensor constant_value(const Node& node) {
  const auto& a = node.attrs;
  if (const Tensor* t = a.get_tensor("value")) return *t;
  if (a.has("value_float")) return Tensor::scalar_f32(a.get_float_or("value_float", 0, node.name));
  if (a.has("value_floats")) {
    const auto v = a.get_floats_or("value_floats", {}, node.name);
    return Tensor::from_floats({static_cast<int64_t>(v.size())}, v);
  }
  if (a.has("value_int")) return Tensor::from_int64s({}, {a.get_int("value_int", node.name)});
  if (a.has("value_ints")) {
    const auto v = a.get_ints_or("value_ints", {}, node.name);
    return Tensor::from_int64s({static_cast<int64_t>(v.size())}, v);
  }
  for (const char* s : {"value_string", "value_strings", "sparse_value"})
    if (a.has(s)) node_unsupported(node, "attribute {} is not supported", s);
  node_fail(node, "has none of the attributes value, value_float(s), value_int(s)");
}

void register_generators() {
  register_op({"ConstantOfShape",
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor value = constant_of_shape_value(node);
                 set_output(node, 0, value.dtype(),
                            constant_of_shape_shape(node, constant_input(node, 0, "input")));
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor value = constant_of_shape_value(node);
                 Tensor out(value.dtype(),
                            constant_of_shape_shape(node, kernel_input(node, inputs, 0, "input")));
                 const size_t es = static_cast<size_t>(dtype_size(value.dtype()));
                 for (int64_t i = 0; i < out.numel(); ++i)
                   std::memcpy(out.raw() + i * es, value.raw(), es);
                 return one_output(std::move(out));
               }});

  // Range: start, limit, delta scalars; n = max(ceil((limit - start) / delta), 0).
  register_op(
      {"Range",
       [](Node& node) {
         check_arity(node, 3, 3, 1, 1);
         const Value& s = required_input(node, 0, "start");
         expect_dtype(node, s.dtype, {DType::f32, DType::f64, DType::i16, DType::i32, DType::i64},
                      "input start");
         expect_same_dtype(node, 0, 1);
         expect_same_dtype(node, 0, 2);
         double v[3];
         const char* roles[3] = {"start", "limit", "delta"};
         for (int i = 0; i < 3; ++i) {
           const Tensor& t = constant_input(node, i, roles[i]);
           expect_scalar_like(node, t, roles[i]);
           v[i] = t.get_as_double(0);
         }
         set_output(node, 0, s.dtype, {range_count(node, v[0], v[1], v[2])});
       },
       [](const Node& node, const std::vector<const Tensor*>& inputs) {
         check_arity(node, 3, 3, 1, 1);
         const Tensor& ts = kernel_input(node, inputs, 0, "start");
         const Tensor& tl = kernel_input(node, inputs, 1, "limit");
         const Tensor& td = kernel_input(node, inputs, 2, "delta");
         for (const Tensor* t : {&ts, &tl, &td}) expect_scalar_like(node, *t, "start/limit/delta");
         return dispatch_numeric(node, ts.dtype(), [&](auto tag) {
           using C = decltype(tag);
           const C start = load_as<C>(ts.raw(), ts.dtype(), 0);
           const C limit = load_as<C>(tl.raw(), tl.dtype(), 0);
           const C delta = load_as<C>(td.raw(), td.dtype(), 0);
           const int64_t n = range_count(node, static_cast<double>(start),
                                         static_cast<double>(limit), static_cast<double>(delta));
           OutputBuffer<C> out(ts.dtype(), {n});
           // start + i * delta (ONNX's reference accumulates; integers agree exactly and floats
           // within rounding).
           for (int64_t i = 0; i < n; ++i)
             out[i] = static_cast<C>(start + static_cast<C>(i) * delta);
           return one_output(out.finish());
         });
       }});

  register_op({"Constant",
               [](Node& node) {
                 check_arity(node, 0, 0, 1, 1);
                 const Tensor t = constant_value(node);
                 expect_storable(node, t.dtype(), "value");
                 set_output(node, 0, t.dtype(), t.shape());
               },
               [](const Node& node, const std::vector<const Tensor*>&) {
                 return one_output(constant_value(node));
               }});

  // EyeLike: 2-D, ones on diagonal k, dtype attribute or the input's.
  auto eyelike_dtype = [](const Node& node, DType in) {
    const int64_t dt = node.attrs.get_int_or("dtype", static_cast<int64_t>(in), node.name);
    const DType t = static_cast<DType>(dt);
    if (dt <= 0 || dt > static_cast<int64_t>(DType::u64) || dtype_size(t) == 0)
      node_unsupported(node, "dtype {} is not supported", dt);
    return t;
  };
  register_op({"EyeLike",
               [eyelike_dtype](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 if (x.shape.size() != 2) node_fail(node, "input must be 2-D");
                 set_output(node, 0, eyelike_dtype(node, x.dtype), x.shape);
               },
               [eyelike_dtype](const Node& node, const std::vector<const Tensor*>& inputs) {
                 const Tensor& x = kernel_input(node, inputs, 0, "input");
                 if (x.rank() != 2) node_fail(node, "input must be 2-D");
                 const int64_t k = node.attrs.get_int_or("k", 0, node.name);
                 Tensor out(eyelike_dtype(node, x.dtype()), x.shape());
                 for (int64_t i = 0; i < x.shape()[0]; ++i) {
                   const int64_t j = i + k;
                   if (j >= 0 && j < x.shape()[1])
                     store_as<int64_t>(out.raw(), out.dtype(), i * x.shape()[1] + j, 1);
                 }
                 return one_output(std::move(out));
               }});

  // OneHot: indices, depth (scalar, compile-time), values [off, on]; axis (default -1) is where
  // the depth dim is inserted. Negative indices count from the back; out-of-range ones give off.
  auto onehot_shape = [](const Node& node, const Shape& idx, int64_t depth, int64_t* axis_out) {
    const int64_t out_rank = static_cast<int64_t>(idx.size()) + 1;
    const int64_t axis = normalize_axis(node, node.attrs.get_int_or("axis", -1, node.name),
                                        out_rank, "attribute axis");
    if (depth < 1) node_fail(node, "depth {} must be positive", depth);
    Shape out(idx.begin(), idx.end());
    out.insert(out.begin() + axis, depth);
    *axis_out = axis;
    return out;
  };
  register_op({"OneHot",
               [onehot_shape](Node& node) {
                 check_arity(node, 3, 3, 1, 1);
                 const Value& idx = required_input(node, 0, "indices");
                 const Value& values = required_input(node, 2, "values");
                 expect_numeric(node, idx.dtype, "input indices");
                 const Tensor& depth = constant_input(node, 1, "depth");
                 expect_scalar_like(node, depth, "depth");
                 if (shape_numel(values.shape) != 2) node_fail(node, "values must have 2 elements");
                 int64_t axis;
                 set_output(node, 0, values.dtype,
                            onehot_shape(node, idx.shape,
                                         static_cast<int64_t>(depth.get_as_double(0)), &axis));
               },
               [onehot_shape](const Node& node, const std::vector<const Tensor*>& inputs) {
                 check_arity(node, 3, 3, 1, 1);
                 const Tensor& idx = kernel_input(node, inputs, 0, "indices");
                 const Tensor& dt = kernel_input(node, inputs, 1, "depth");
                 const Tensor& values = kernel_input(node, inputs, 2, "values");
                 expect_scalar_like(node, dt, "depth");
                 if (values.numel() != 2) node_fail(node, "values must have 2 elements");
                 const int64_t depth = static_cast<int64_t>(dt.get_as_double(0));
                 int64_t axis;
                 const Shape out_shape = onehot_shape(node, idx.shape(), depth, &axis);
                 Tensor out(values.dtype(), out_shape);
                 const int64_t es = dtype_size(values.dtype());
                 if (es == 0) node_unsupported(node, "dtype is not supported");
                 int64_t outer = 1, inner = 1;
                 for (int64_t k = 0; k < axis; ++k) outer *= out_shape[k];
                 for (int64_t k = axis + 1; k < static_cast<int64_t>(out_shape.size()); ++k)
                   inner *= out_shape[k];
                 for (int64_t o = 0; o < outer; ++o)
                   for (int64_t d = 0; d < depth; ++d)
                     for (int64_t i = 0; i < inner; ++i) {
                       int64_t v = static_cast<int64_t>(idx.get_as_double(o * inner + i));
                       if (v < 0) v += depth;
                       const int64_t which = v == d ? 1 : 0;
                       std::memcpy(out.raw() + ((o * depth + d) * inner + i) * es,
                                   values.raw() + which * es, static_cast<size_t>(es));
                     }
                 return one_output(std::move(out));
               }});
}

// ---------------------------------------------------------------------------------------------
// DepthToSpace, SpaceToDepth, Trilu, NonZero
// ---------------------------------------------------------------------------------------------

void register_rearrange() {
  // DepthToSpace: [N, C, H, W] -> [N, C/b^2, H*b, W*b]. DCR: channel = (bh*b + bw)*C' + c;
  // CRD: channel = (c*b + bh)*b + bw.
  auto d2s_check = [](const Node& node, const Shape& s) {
    const int64_t b = node.attrs.get_int("blocksize", node.name);
    const std::string mode = node.attrs.get_string_or("mode", "DCR", node.name);
    if (s.size() != 4) node_fail(node, "input must be 4-D, got {}", shape_to_string(s));
    if (b < 1 || s[1] % (b * b) != 0)
      node_fail(node, "channels {} not divisible by blocksize^2 ({})", s[1], b * b);
    if (mode != "DCR" && mode != "CRD") node_fail(node, "mode '{}' must be DCR or CRD", mode);
    return std::make_pair(b, mode == "DCR");
  };
  register_op({"DepthToSpace",
               [d2s_check](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 auto [b, dcr] = d2s_check(node, x.shape);
                 set_output(node, 0, x.dtype,
                            {x.shape[0], x.shape[1] / (b * b), x.shape[2] * b, x.shape[3] * b});
               },
               [d2s_check](const Node& node, const std::vector<const Tensor*>& inputs) {
                 const Tensor& x = kernel_input(node, inputs, 0, "input");
                 auto [b, dcr] = d2s_check(node, x.shape());
                 const Shape& s = x.shape();
                 const int64_t C = s[1] / (b * b), H = s[2], W = s[3];
                 // View out as [N, C', H, b, W, b] and gather from the input's strides.
                 const auto is = row_major_strides(s);
                 const int64_t cs = is[1];
                 const Shape view = {s[0], C, H, b, W, b};
                 const std::vector<int64_t> st =
                     dcr ? std::vector<int64_t>{is[0], cs, is[2], b * C * cs, is[3], C * cs}
                         : std::vector<int64_t>{is[0], b * b * cs, is[2], b * cs, is[3], cs};
                 Tensor out = strided_copy(node, x, view, st, 0);
                 return one_output(copy_reshaped(out, {s[0], C, H * b, W * b}));
               }});
  register_op({"SpaceToDepth",
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 const int64_t b = node.attrs.get_int("blocksize", node.name);
                 if (x.shape.size() != 4 || b < 1 || x.shape[2] % b || x.shape[3] % b)
                   node_fail(node, "input {} must be 4-D with H and W divisible by blocksize {}",
                             shape_to_string(x.shape), b);
                 set_output(node, 0, x.dtype,
                            {x.shape[0], x.shape[1] * b * b, x.shape[2] / b, x.shape[3] / b});
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 const Tensor& x = kernel_input(node, inputs, 0, "input");
                 const int64_t b = node.attrs.get_int("blocksize", node.name);
                 const Shape& s = x.shape();
                 if (s.size() != 4 || b < 1 || s[2] % b || s[3] % b)
                   node_fail(node, "input must be 4-D with H and W divisible by blocksize");
                 const int64_t C = s[1], H = s[2] / b, W = s[3] / b;
                 const auto is = row_major_strides(s);
                 // out[n, (bh*b + bw)*C + c, h, w] = in[n, c, h*b + bh, w*b + bw]
                 const Shape view = {s[0], b, b, C, H, W};
                 const std::vector<int64_t> st = {is[0], is[2], is[3], is[1], b * is[2], b * is[3]};
                 Tensor out = strided_copy(node, x, view, st, 0);
                 return one_output(copy_reshaped(out, {s[0], C * b * b, H, W}));
               }});

  // Trilu: keeps the upper (upper=1) or lower triangle of the last two dims, diagonal offset k.
  register_op({"Trilu",
               [](Node& node) {
                 check_arity(node, 1, 2, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 if (x.shape.size() < 2) node_fail(node, "input must have rank >= 2");
                 set_output(node, 0, x.dtype, x.shape);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 const Tensor& x = kernel_input(node, inputs, 0, "input");
                 if (x.rank() < 2) node_fail(node, "input must have rank >= 2");
                 int64_t k = 0;
                 if (inputs.size() > 1 && inputs[1]) {
                   expect_scalar_like(node, *inputs[1], "k");
                   k = tensor_to_int64s(node, *inputs[1], "k")[0];
                 }
                 const bool upper = node.attrs.get_int_or("upper", 1, node.name) != 0;
                 Tensor out = copy_reshaped(x, x.shape());
                 const int64_t R = x.shape()[x.rank() - 2], Cc = x.shape()[x.rank() - 1];
                 const int64_t es = dtype_size(x.dtype());
                 for (int64_t m = 0; m < x.numel() / std::max<int64_t>(R * Cc, 1); ++m)
                   for (int64_t i = 0; i < R; ++i)
                     for (int64_t j = 0; j < Cc; ++j) {
                       const bool keep = upper ? (j - i >= k) : (j - i <= k);
                       if (!keep)
                         std::memset(out.raw() + ((m * R + i) * Cc + j) * es, 0,
                                     static_cast<size_t>(es));
                     }
                 return one_output(std::move(out));
               }});

  // NonZero: [rank, nnz] int64 indices of non-zero elements in row-major order. The output shape
  // depends on the values, so the input must be known at compile time.
  auto nonzero = [](const Node& node, const Tensor& x) {
    std::vector<int64_t> flat;
    for (int64_t i = 0; i < x.numel(); ++i)
      if (x.get_as_double(i) != 0) flat.push_back(i);
    const int64_t rank = x.rank(), nnz = static_cast<int64_t>(flat.size());
    Tensor out(DType::i64, {rank, nnz});
    const auto st = row_major_strides(x.shape());
    for (int64_t j = 0; j < nnz; ++j)
      for (int64_t k = 0; k < rank; ++k)
        out.data<int64_t>()[k * nnz + j] = (flat[j] / st[k]) % x.shape()[k];
    return out;
  };
  register_op({"NonZero",
               [nonzero](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Tensor& x = constant_input(node, 0, "X");
                 set_output(node, 0, DType::i64, nonzero(node, x).shape());
               },
               [nonzero](const Node& node, const std::vector<const Tensor*>& inputs) {
                 return one_output(nonzero(node, kernel_input(node, inputs, 0, "X")));
               }});
}

// ---------------------------------------------------------------------------------------------
// ScatterElements, ScatterND
// ---------------------------------------------------------------------------------------------

/// Applies the reduction ('none' | 'add' | 'mul') of ScatterElements/ScatterND at element `dst`.
template <class C>
void scatter_update(C& dst, C v, const std::string& reduction) {
  if (reduction == "add")
    dst += v;
  else if (reduction == "mul")
    dst *= v;
  else
    dst = v;
}

std::string scatter_reduction(const Node& node) {
  const std::string r = node.attrs.get_string_or("reduction", "none", node.name);
  if (r != "none" && r != "add" && r != "mul")
    node_unsupported(node, "reduction '{}' is not supported (none, add, mul)", r);
  return r;
}

void register_scatter() {
  // Scatter (opset 9-10, deprecated) is ScatterElements without the reduction attribute.
  for (const char* name : {"ScatterElements", "Scatter"})
    register_op({name,
                 [](Node& node) {
                   check_arity(node, 3, 3, 1, 1);
                   const Value& data = required_input(node, 0, "data");
                   const Value& idx = required_input(node, 1, "indices");
                   const Value& upd = required_input(node, 2, "updates");
                   scatter_reduction(node);
                   if (idx.shape != upd.shape) node_fail(node, "indices and updates shapes differ");
                   if (idx.shape.size() != data.shape.size())
                     node_fail(node, "indices rank differs from data");
                   expect_same_dtype(node, 0, 2);
                   set_output(node, 0, data.dtype, data.shape);
                 },
                 [](const Node& node, const std::vector<const Tensor*>& inputs) {
                   const Tensor& data = kernel_input(node, inputs, 0, "data");
                   const Tensor& idx = kernel_input(node, inputs, 1, "indices");
                   const Tensor& upd = kernel_input(node, inputs, 2, "updates");
                   const std::string red = scatter_reduction(node);
                   const int64_t rank = data.rank();
                   const int64_t axis = normalize_axis(
                       node, node.attrs.get_int_or("axis", 0, node.name), rank, "attribute axis");
                   if (idx.shape() != upd.shape() || idx.rank() != rank)
                     node_fail(node, "indices/updates shapes are inconsistent with data");
                   for (int64_t k = 0; k < rank; ++k)
                     if (k != axis && idx.shape()[k] > data.shape()[k])
                       node_fail(node, "indices shape {} exceeds data shape {} on axis {}",
                                 shape_to_string(idx.shape()), shape_to_string(data.shape()), k);
                   const auto st = row_major_strides(data.shape());
                   return dispatch_numeric(node, data.dtype(), [&](auto tag) {
                     using C = decltype(tag);
                     InputView<C> d(data);
                     std::vector<C> acc(d.data(), d.data() + data.numel());
                     InputView<C> u(upd);
                     std::vector<int64_t> pos(rank, 0);
                     for (int64_t i = 0; i < idx.numel(); ++i) {
                       int64_t off = 0;
                       for (int64_t k = 0; k < rank; ++k)
                         off += (k == axis ? checked_index(node, idx, i, data.shape()[axis])
                                           : pos[k]) *
                                st[k];
                       scatter_update(acc[off], u[i], red);
                       for (int64_t k = rank; k-- > 0;) {
                         if (++pos[k] < idx.shape()[k]) break;
                         pos[k] = 0;
                       }
                     }
                     OutputBuffer<C> out(data.dtype(), data.shape());
                     std::copy(acc.begin(), acc.end(), out.data());
                     return one_output(out.finish());
                   });
                 }});
  register_op({"ScatterND",
               [](Node& node) {
                 check_arity(node, 3, 3, 1, 1);
                 const Value& data = required_input(node, 0, "data");
                 scatter_reduction(node);
                 expect_same_dtype(node, 0, 2);
                 set_output(node, 0, data.dtype, data.shape);
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 const Tensor& data = kernel_input(node, inputs, 0, "data");
                 const Tensor& idx = kernel_input(node, inputs, 1, "indices");
                 const Tensor& upd = kernel_input(node, inputs, 2, "updates");
                 const std::string red = scatter_reduction(node);
                 if (idx.rank() < 1) node_fail(node, "indices must have rank >= 1");
                 const int64_t last = idx.shape().back();
                 if (last < 1 || last > data.rank())
                   node_fail(node, "indices.shape[-1] out of range");
                 const auto st = row_major_strides(data.shape());
                 const int64_t slice = last < data.rank() ? st[last - 1] : 1;
                 const int64_t tuples = idx.numel() / last;
                 if (upd.numel() != tuples * slice)
                   node_fail(node, "updates shape is inconsistent");
                 return dispatch_numeric(node, data.dtype(), [&](auto tag) {
                   using C = decltype(tag);
                   InputView<C> d(data);
                   std::vector<C> acc(d.data(), d.data() + data.numel());
                   InputView<C> u(upd);
                   for (int64_t t = 0; t < tuples; ++t) {
                     int64_t off = 0;
                     for (int64_t k = 0; k < last; ++k)
                       off += checked_index(node, idx, t * last + k, data.shape()[k]) * st[k];
                     for (int64_t j = 0; j < slice; ++j)
                       scatter_update(acc[off + j], u[t * slice + j], red);
                   }
                   OutputBuffer<C> out(data.dtype(), data.shape());
                   std::copy(acc.begin(), acc.end(), out.data());
                   return one_output(out.finish());
                 });
               }});
}

}  // namespace

void register_shape_ops() {
  register_shape_size();
  register_reshape_family();
  register_transpose();
  register_concat_split();
  register_slice();
  register_gather();
  register_expand_tile_pad();
  register_generators();
  register_rearrange();
  register_scatter();
}

}  // namespace tessel::ops
