// Tensor expression construction and traversal.
#include "compiler/te/te.h"

#include <fmt/format.h>

#include <set>

#include "compiler/support/error.h"

namespace tessel::te {

int64_t TensorNode::attr(const std::string& key, size_t i) const {
  auto it = attrs.find(key);
  TESSEL_CHECK(it != attrs.end() && i < it->second.size(), "tensor {} has no attr {}[{}]", name,
               key, i);
  return it->second[i];
}

Tensor placeholder(const std::string& name, const Shape& shape, DType dtype) {
  auto t = std::make_shared<TensorNode>();
  t->name = name;
  t->kind = TensorNode::Kind::placeholder;
  t->shape = shape;
  t->dtype = dtype;
  return t;
}

Tensor compute(const std::string& name, const Shape& shape,
               const std::function<Expr(const std::vector<Expr>&)>& fn, const std::string& tag,
               std::optional<DType> dtype) {
  auto t = std::make_shared<TensorNode>();
  t->name = name;
  t->kind = TensorNode::Kind::compute;
  t->shape = shape;
  t->tag = tag;
  std::vector<Expr> idx;
  static const char* names[] = {"i", "j", "k", "l", "m", "n", "o", "p"};
  for (size_t d = 0; d < shape.size(); ++d) {
    t->axes.push_back(loop::make_var(d < 8 ? names[d] : fmt::format("i{}", d)));
    idx.push_back(loop::var_ref(t->axes.back()));
  }
  t->body = fn(idx);
  TESSEL_CHECK(t->body, "compute {}: no body", name);
  const std::optional<DType> body_type = value_dtype(t->body);
  TESSEL_CHECK(t->body->is_float || body_type, "compute {}: body must be a value expression", name);
  t->dtype = dtype ? *dtype : body_type.value_or(DType::f32);
  return t;
}

std::optional<DType> value_dtype(const Expr& e) {
  return loop::value_dtype(e, [](const loop::ExprNode& leaf) -> std::optional<DType> {
    if (leaf.kind == loop::ExprKind::TensorRead) return leaf.tensor->dtype;
    return std::nullopt;
  });
}

IterVar reduce_axis(int64_t extent, const std::string& name) {
  TESSEL_CHECK(extent > 0, "reduce axis {} with extent {}", name, extent);
  return IterVar{loop::make_var(name), extent};
}

namespace {
Expr make_read(const Tensor& t, std::vector<Expr> indices, bool padded, double pad_value) {
  TESSEL_CHECK(indices.size() == t->shape.size(), "read of {} with {} indices, rank {}", t->name,
               indices.size(), t->shape.size());
  auto n = std::make_shared<loop::ExprNode>();
  n->kind = loop::ExprKind::TensorRead;
  n->is_float = true;
  n->tensor = t;
  n->args = std::move(indices);
  n->padded = padded;
  n->pad_value = pad_value;
  return n;
}
}  // namespace

Expr read(const Tensor& t, std::vector<Expr> indices) {
  return make_read(t, std::move(indices), false, 0);
}
Expr read_padded(const Tensor& t, std::vector<Expr> indices, double pad_value) {
  return make_read(t, std::move(indices), true, pad_value);
}

Expr sum(Expr source, std::vector<IterVar> axes) {
  return loop::reduce(loop::ReduceOp::sum, std::move(source), std::move(axes));
}
Expr max_reduce(Expr source, std::vector<IterVar> axes) {
  return loop::reduce(loop::ReduceOp::max, std::move(source), std::move(axes));
}
Expr min_reduce(Expr source, std::vector<IterVar> axes) {
  return loop::reduce(loop::ReduceOp::min, std::move(source), std::move(axes));
}

std::vector<Tensor> direct_inputs(const Tensor& t) {
  std::vector<Tensor> out;
  std::set<const TensorNode*> seen;
  if (t->is_placeholder()) return out;
  loop::visit_expr(t->body, [&](const loop::ExprNode& n) {
    if (n.kind == loop::ExprKind::TensorRead && seen.insert(n.tensor.get()).second)
      out.push_back(n.tensor);
  });
  for (const auto& x : t->extra_inputs)
    if (seen.insert(x.get()).second) out.push_back(x);
  return out;
}

std::vector<Tensor> post_order(const Tensor& out) {
  std::vector<Tensor> order;
  std::set<const TensorNode*> done;
  std::function<void(const Tensor&)> dfs = [&](const Tensor& t) {
    if (done.count(t.get())) return;
    done.insert(t.get());
    for (const auto& in : direct_inputs(t)) dfs(in);
    order.push_back(t);
  };
  dfs(out);
  return order;
}

std::string to_string(const Tensor& out) {
  std::string s;
  for (const auto& t : post_order(out)) {
    if (t->is_placeholder()) {
      s += fmt::format("placeholder {}{}\n", t->name, shape_to_string(t->shape));
      continue;
    }
    std::string axes;
    for (const auto& a : t->axes) axes += (axes.empty() ? "" : ",") + a->name;
    s += fmt::format("{}[{}]{} = {}{}\n", t->name, axes, shape_to_string(t->shape),
                     loop::to_string(t->body), t->tag.empty() ? "" : "  # " + t->tag);
  }
  return s;
}

}  // namespace tessel::te
