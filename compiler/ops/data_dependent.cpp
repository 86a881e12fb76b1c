// Ops whose output shape depends on input values: Compress, Unique, NonMaxSuppression (ONNX
// operator docs, opset 11+). tessel compiles static shapes, so their shape rules require those
// inputs to be known at compile time (Value::constant) and throw tessel::Unsupported otherwise;
// the kernels are ordinary reference kernels.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

// ---------------------------------------------------------------------------------------------
// Compress: keeps the slices along `axis` (or the elements of the flattened input when axis is
// absent) whose condition entry is true; entries past the condition's length count as false.
// ---------------------------------------------------------------------------------------------

std::vector<int64_t> compress_selection(const Node& node, const Shape& x, const Tensor& cond,
                                        int64_t* axis_out) {
  if (cond.dtype() != DType::boolean || cond.rank() != 1)
    node_fail(node, "condition must be a 1-D bool tensor");
  const bool has_axis = node.attrs.has("axis");
  int64_t dim = shape_numel(x);
  *axis_out = -1;
  if (has_axis) {
    *axis_out = normalize_axis(node, node.attrs.get_int("axis", node.name),
                               static_cast<int64_t>(x.size()), "attribute axis");
    dim = x[*axis_out];
  }
  if (cond.numel() > dim)
    node_fail(node, "condition has {} entries, more than the {} being selected", cond.numel(), dim);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.numel(); ++i)
    if (cond.data<uint8_t>()[i]) keep.push_back(i);
  return keep;
}

Shape compress_shape(const Shape& x, int64_t axis, size_t kept) {
  if (axis < 0) return {static_cast<int64_t>(kept)};
  Shape s = x;
  s[axis] = static_cast<int64_t>(kept);
  return s;
}

std::vector<Tensor> compress_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 2, 2, 1, 1);
  const Tensor& x = kernel_input(node, inputs, 0, "input");
  const Tensor& cond = kernel_input(node, inputs, 1, "condition");
  int64_t axis;
  const auto keep = compress_selection(node, x.shape(), cond, &axis);
  Tensor out(x.dtype(), compress_shape(x.shape(), axis, keep.size()));
  const int64_t es = dtype_size(x.dtype());
  if (es == 0) node_unsupported(node, "dtype is not supported");
  int64_t outer = 1, inner = 1, dim = x.numel();
  if (axis >= 0) {
    for (int64_t k = 0; k < axis; ++k) outer *= x.shape()[k];
    for (int64_t k = axis + 1; k < x.rank(); ++k) inner *= x.shape()[k];
    dim = x.shape()[axis];
  }
  const int64_t n = static_cast<int64_t>(keep.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(out.raw() + ((o * n + j) * inner) * es,
                  x.raw() + ((o * dim + keep[j]) * inner) * es, static_cast<size_t>(inner * es));
  return one_output(std::move(out));
}

// ---------------------------------------------------------------------------------------------
// Unique: unique elements (or slices along `axis`), sorted ascending (sorted=1, lexicographic for
// slices) or in order of first occurrence; outputs Y, indices (first occurrence), inverse_indices,
// counts.
// ---------------------------------------------------------------------------------------------

struct UniqueResult {
  Shape y_shape;
  std::vector<int64_t> first, inverse, counts;  // per unique slice / per input slice
  int64_t outer = 1, dim = 0, inner = 1;
};

UniqueResult unique_compute(const Node& node, const Tensor& x) {
  UniqueResult r;
  const bool has_axis = node.attrs.has("axis");
  const bool sorted = node.attrs.get_int_or("sorted", 1, node.name) != 0;
  int64_t axis = -1;
  if (has_axis) {
    axis = normalize_axis(node, node.attrs.get_int("axis", node.name), x.rank(), "attribute axis");
    for (int64_t k = 0; k < axis; ++k) r.outer *= x.shape()[k];
    for (int64_t k = axis + 1; k < x.rank(); ++k) r.inner *= x.shape()[k];
    r.dim = x.shape()[axis];
  } else {
    r.dim = x.numel();
  }
  // Slice j = the elements x[o, j, i] for all o, i (compared as doubles, lexicographically).
  auto elem = [&](int64_t j, int64_t e) {
    const int64_t o = e / r.inner, i = e % r.inner;
    return x.get_as_double((o * r.dim + j) * r.inner + i);
  };
  const int64_t slice = r.outer * r.inner;
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t e = 0; e < slice; ++e) {
      const double va = elem(a, e), vb = elem(b, e);
      if (va != vb) return va < vb;
    }
    return false;
  };
  auto equal = [&](int64_t a, int64_t b) { return !less(a, b) && !less(b, a); };
  std::vector<int64_t> uniq;  // first-occurrence index of each unique slice
  r.inverse.assign(static_cast<size_t>(r.dim), 0);
  for (int64_t j = 0; j < r.dim; ++j) {
    int64_t found = -1;
    for (size_t u = 0; u < uniq.size() && found < 0; ++u)
      if (equal(uniq[u], j)) found = static_cast<int64_t>(u);
    if (found < 0) {
      found = static_cast<int64_t>(uniq.size());
      uniq.push_back(j);
    }
    r.inverse[j] = found;
  }
  std::vector<int64_t> order(uniq.size());
  std::iota(order.begin(), order.end(), 0);
  if (sorted)
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return less(uniq[a], uniq[b]); });
  std::vector<int64_t> rank_of(uniq.size());
  for (size_t k = 0; k < order.size(); ++k) rank_of[order[k]] = static_cast<int64_t>(k);
  for (int64_t& v : r.inverse) v = rank_of[v];
  r.counts.assign(uniq.size(), 0);
  for (int64_t v : r.inverse) ++r.counts[v];
  for (int64_t k : order) r.first.push_back(uniq[k]);
  const int64_t n = static_cast<int64_t>(uniq.size());
  if (has_axis) {
    r.y_shape = x.shape();
    r.y_shape[axis] = n;
  } else {
    r.y_shape = {n};
  }
  return r;
}

std::vector<Tensor> unique_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 1, 1, 1, 4);
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  const UniqueResult r = unique_compute(node, x);
  const int64_t n = static_cast<int64_t>(r.first.size());
  Tensor y(x.dtype(), r.y_shape);
  const int64_t es = dtype_size(x.dtype());
  for (int64_t o = 0; o < r.outer; ++o)
    for (int64_t k = 0; k < n; ++k)
      std::memcpy(y.raw() + ((o * n + k) * r.inner) * es,
                  x.raw() + ((o * r.dim + r.first[k]) * r.inner) * es,
                  static_cast<size_t>(r.inner * es));
  std::vector<Tensor> outs;
  outs.push_back(std::move(y));
  const std::vector<int64_t>* lists[3] = {&r.first, &r.inverse, &r.counts};
  for (size_t k = 1; k < node.outputs.size(); ++k)
    outs.push_back(
        Tensor::from_int64s({static_cast<int64_t>(lists[k - 1]->size())}, *lists[k - 1]));
  return outs;
}

// ---------------------------------------------------------------------------------------------
// NonMaxSuppression: per batch and class, boxes with score > score_threshold in descending score
// order (ties: lower box index first) are selected greedily unless their IoU with an already
// selected box exceeds iou_threshold, up to max_output_boxes_per_class (0 = none). Boxes are
// corners [y1, x1, y2, x2] in any order (center_point_box=0) or [x_c, y_c, w, h] (1). Output
// [num_selected, 3] int64 (batch, class, box), batch-major then class-major.
// ---------------------------------------------------------------------------------------------

std::vector<int64_t> nms_select(const Node& node, const std::vector<const Tensor*>& in) {
  const Tensor& boxes = kernel_input(node, in, 0, "boxes");
  const Tensor& scores = kernel_input(node, in, 1, "scores");
  auto opt = [&](size_t i) -> const Tensor* { return i < in.size() ? in[i] : nullptr; };
  if (boxes.rank() != 3 || boxes.shape()[2] != 4 || scores.rank() != 3 ||
      scores.shape()[0] != boxes.shape()[0] || scores.shape()[2] != boxes.shape()[1])
    node_fail(node, "expected boxes [B, N, 4] and scores [B, C, N], got {} and {}",
              shape_to_string(boxes.shape()), shape_to_string(scores.shape()));
  const int64_t max_out = opt(2) && opt(2)->numel() > 0
                              ? tensor_to_int64s(node, *opt(2), "max_output_boxes_per_class")[0]
                              : 0;
  const double iou_thr = opt(3) && opt(3)->numel() > 0 ? opt(3)->get_as_double(0) : 0.0;
  const bool has_score_thr = opt(4) && opt(4)->numel() > 0;
  const double score_thr = has_score_thr ? opt(4)->get_as_double(0) : 0.0;
  const bool center = node.attrs.get_int_or("center_point_box", 0, node.name) != 0;
  const int64_t B = boxes.shape()[0], N = boxes.shape()[1], C = scores.shape()[1];
  struct Box {
    double y1, x1, y2, x2;
  };
  auto box_at = [&](int64_t b, int64_t i) {
    const int64_t o = (b * N + i) * 4;
    const double a = boxes.get_as_double(o), c = boxes.get_as_double(o + 1);
    const double d = boxes.get_as_double(o + 2), e = boxes.get_as_double(o + 3);
    if (center) return Box{c - e / 2, a - d / 2, c + e / 2, a + d / 2};
    return Box{std::min(a, d), std::min(c, e), std::max(a, d), std::max(c, e)};
  };
  auto iou = [](const Box& p, const Box& q) {
    const double ap = (p.y2 - p.y1) * (p.x2 - p.x1), aq = (q.y2 - q.y1) * (q.x2 - q.x1);
    if (ap <= 0 || aq <= 0) return 0.0;
    const double ih = std::max(0.0, std::min(p.y2, q.y2) - std::max(p.y1, q.y1));
    const double iw = std::max(0.0, std::min(p.x2, q.x2) - std::max(p.x1, q.x1));
    const double inter = ih * iw;
    return inter / (ap + aq - inter);
  };
  std::vector<int64_t> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < N; ++i)
        if (!has_score_thr || scores.get_as_double((b * C + c) * N + i) > score_thr)
          cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) {
        return scores.get_as_double((b * C + c) * N + p) >
               scores.get_as_double((b * C + c) * N + q);
      });
      std::vector<int64_t> sel;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(sel.size()) >= max_out) break;
        bool keep = true;
        for (int64_t s : sel)
          if (iou(box_at(b, i), box_at(b, s)) > iou_thr) keep = false;
        if (keep) sel.push_back(i);
      }
      for (int64_t s : sel) out.insert(out.end(), {b, c, s});
    }
  return out;
}

}  // namespace

void register_data_dependent_ops() {
  register_op({"Compress",
               [](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 int64_t axis;
                 const auto keep =
                     compress_selection(node, x.shape, constant_input(node, 1, "condition"), &axis);
                 set_output(node, 0, x.dtype, compress_shape(x.shape, axis, keep.size()));
               },
               compress_kernel});
  register_op({"Unique",
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 4);
                 const Value& x = required_input(node, 0, "X");
                 const UniqueResult r = unique_compute(node, constant_input(node, 0, "X"));
                 set_output(node, 0, x.dtype, r.y_shape);
                 const int64_t n = static_cast<int64_t>(r.first.size());
                 set_output(node, 1, DType::i64, {n});
                 set_output(node, 2, DType::i64, {r.dim});
                 set_output(node, 3, DType::i64, {n});
               },
               unique_kernel});
  register_op(
      {"NonMaxSuppression",
       [](Node& node) {
         check_arity(node, 2, 5, 1, 1);
         expect_float(node, required_input(node, 0, "boxes").dtype, "input boxes");
         const char* roles[5] = {"boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
                                 "score_threshold"};
         std::vector<const Tensor*> values;
         for (size_t i = 0; i < node.inputs.size(); ++i)
           values.push_back(node.input(i) ? &constant_input(node, i, roles[i]) : nullptr);
         const int64_t n = static_cast<int64_t>(nms_select(node, values).size() / 3);
         set_output(node, 0, DType::i64, {n, 3});
       },
       [](const Node& node, const std::vector<const Tensor*>& inputs) {
         const auto sel = nms_select(node, inputs);
         return one_output(Tensor::from_int64s({static_cast<int64_t>(sel.size() / 3), 3}, sel));
       }});
}

}  // namespace tessel::ops
