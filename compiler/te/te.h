// Tensor expressions (after TVM's TE and Halide, Ragan-Kelley et al. PLDI'13; Chen et al. OSDI'18):
// every op is defined once as a compute in index notation -- output index -> expression over reads
// of other tensors, with named reduction axes. The loop nests of every target are generated from
// it.
//
// A compute body is either an element expression or a Reduce at its top level (as in TVM, a
// reduction is one stage; arithmetic on a reduced value is a following stage). `tag` names the
// pattern a target schedule may specialise (e.g. "conv2d", "matmul"); generic schedules handle
// the rest from the expression itself.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/tensor.h"
#include "compiler/loop/expr.h"

namespace tessel::te {

using loop::Expr;
using loop::IterVar;
using loop::Var;

struct TensorNode {
  enum class Kind { placeholder, compute };
  std::string name;
  Kind kind = Kind::placeholder;
  Shape shape;
  DType dtype = DType::f32;
  // compute
  std::vector<Var> axes;  // one per output dim
  Expr body;              // float expression over axes (a Reduce at top level for reductions)
  std::string tag;        // schedule pattern, "" for generic
  std::map<std::string, std::vector<int64_t>> attrs;  // pattern parameters (e.g. conv strides)
  std::vector<std::shared_ptr<const TensorNode>>
      extra_inputs;  // inputs the tag needs besides reads

  bool is_placeholder() const { return kind == Kind::placeholder; }
  bool is_reduce() const { return body && body->kind == loop::ExprKind::Reduce; }
  int64_t attr(const std::string& key, size_t i = 0) const;
};
using Tensor = std::shared_ptr<const TensorNode>;

/// A tensor supplied from outside (a graph value in memory).
Tensor placeholder(const std::string& name, const Shape& shape, DType dtype = DType::f32);

/// A computed tensor: `fn` receives one index expression per output dim. Its dtype is `dtype`
/// when given (a conversion, ONNX Cast: the body's values are converted to it), else the body's
/// value type (loop::value_dtype over the tensors read: f32 for float data, the integer type of
/// integer reads, bool for comparisons and logic), f32 for an untyped body.
Tensor compute(const std::string& name, const Shape& shape,
               const std::function<Expr(const std::vector<Expr>&)>& fn, const std::string& tag = "",
               std::optional<DType> dtype = std::nullopt);

/// The element type of a value expression over tensor reads (loop::value_dtype).
std::optional<DType> value_dtype(const Expr& e);

/// A fresh reduction axis of `extent`.
IterVar reduce_axis(int64_t extent, const std::string& name);

/// Reads `t` at `indices`. read_padded: indices outside `t`'s shape give `pad_value` (how
/// convolution and pooling windows express their padding).
Expr read(const Tensor& t, std::vector<Expr> indices);
Expr read_padded(const Tensor& t, std::vector<Expr> indices, double pad_value);

Expr sum(Expr source, std::vector<IterVar> axes);
Expr max_reduce(Expr source, std::vector<IterVar> axes);
Expr min_reduce(Expr source, std::vector<IterVar> axes);

/// Tensors read directly by `t`'s body, in first-read order, without duplicates.
std::vector<Tensor> direct_inputs(const Tensor& t);
/// All tensors `out` depends on (incl. itself), producers before consumers.
std::vector<Tensor> post_order(const Tensor& out);

/// Text form "name[d0,d1] = body" for every compute stage of `out`.
std::string to_string(const Tensor& out);

}  // namespace tessel::te
