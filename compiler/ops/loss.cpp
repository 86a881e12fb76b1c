// Loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX operator docs, opset
// 13-17). Deterministic, so the reference can run them in inference graphs and conformance.
//
//   NLL: input [N, C, d1..dk] (log-probabilities), target [N, d1..dk] (integer class ids),
//   optional weight [C]. loss[n, d] = -input[n, target[n, d], d] * weight[target[n, d]]
//   (0 where target == ignore_index). reduction: none -> loss [N, d1..dk]; sum -> scalar sum;
//   mean (default) -> sum / (sum of the weights of the non-ignored targets).
//   SCE: log_prob = LogSoftmax(scores, axis=1); loss = NLL(log_prob, labels, weights); the second
//   output (optional) is log_prob.
#include <cmath>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

std::string loss_reduction(const Node& node) {
  const std::string r = node.attrs.get_string_or("reduction", "mean", node.name);
  if (r != "none" && r != "sum" && r != "mean")
    node_fail(node, "reduction '{}', expected none, sum or mean", r);
  return r;
}

/// Checks input [N, C, d...], target [N, d...], weight [C]; returns the loss shape.
Shape loss_shape(const Node& node, const Shape& x, const Shape& target, const Shape* weight) {
  if (x.size() < 2) node_fail(node, "input must be [N, C, d1, ...], got {}", shape_to_string(x));
  Shape expect_t = {x[0]};
  expect_t.insert(expect_t.end(), x.begin() + 2, x.end());
  if (target != expect_t)
    node_fail(node, "target has shape {}, expected {} for input {}", shape_to_string(target),
              shape_to_string(expect_t), shape_to_string(x));
  if (weight && (weight->size() != 1 || (*weight)[0] != x[1]))
    node_fail(node, "weight has shape {}, expected [{}]", shape_to_string(*weight), x[1]);
  return loss_reduction(node) == "none" ? expect_t : Shape{};
}

void loss_infer(Node& node, bool sce) {
  check_arity(node, 2, 3, 1, sce ? 2 : 1);
  const Value& x = required_input(node, 0, sce ? "scores" : "input");
  const Value& t = required_input(node, 1, sce ? "labels" : "target");
  const Value* w = node.input(2);
  expect_float(node, x.dtype, "input 0");
  expect_dtype(node, t.dtype, {DType::i32, DType::i64}, "input 1 (class ids)");
  if (w) expect_same_dtype(node, 0, 2);
  set_output(node, 0, x.dtype, loss_shape(node, x.shape, t.shape, w ? &w->shape : nullptr));
  set_output(node, 1, x.dtype, x.shape);
}

/// NLL over log-probabilities `logp` ([N, C, D] flattened) in compute type C.
template <class C>
Tensor nll(const Node& node, const C* logp, const Shape& x_shape, const Tensor& target,
           const C* weight, DType out_dtype) {
  const std::string reduction = loss_reduction(node);
  const bool has_ignore = node.attrs.has("ignore_index");
  const int64_t ignore = node.attrs.get_int_or("ignore_index", 0, node.name);
  const int64_t N = x_shape[0], Cn = x_shape[1];
  const int64_t D = N * Cn > 0 ? shape_numel(x_shape) / (N * Cn) : 0;
  std::vector<C> loss(static_cast<size_t>(N * D));
  C weight_sum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t c = load_as<int64_t>(target.raw(), target.dtype(), n * D + d);
      if (has_ignore && c == ignore) {
        loss[n * D + d] = C(0);
        continue;
      }
      if (c < 0 || c >= Cn) node_fail(node, "target {} is out of range [0, {})", c, Cn);
      const C w = weight ? weight[c] : C(1);
      loss[n * D + d] = -logp[(n * Cn + c) * D + d] * w;
      weight_sum += w;
    }
  Shape target_shape = {x_shape[0]};
  target_shape.insert(target_shape.end(), x_shape.begin() + 2, x_shape.end());
  if (reduction == "none") {
    OutputBuffer<C> out(out_dtype, target_shape);
    std::copy(loss.begin(), loss.end(), out.data());
    return out.finish();
  }
  C sum = 0;
  for (C v : loss) sum += v;
  OutputBuffer<C> out(out_dtype, {});
  out[0] = reduction == "sum" ? sum : sum / weight_sum;
  return out.finish();
}

std::vector<Tensor> loss_kernel(const Node& node, const std::vector<const Tensor*>& inputs,
                                bool sce) {
  const Tensor& x = kernel_input(node, inputs, 0, sce ? "scores" : "input");
  const Tensor& t = kernel_input(node, inputs, 1, sce ? "labels" : "target");
  const Tensor* w = inputs.size() > 2 ? inputs[2] : nullptr;
  loss_shape(node, x.shape(), t.shape(), w ? &w->shape() : nullptr);
  if (!dtype_is_integer(t.dtype())) node_fail(node, "class ids must be integers");
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> vx(x);
    std::unique_ptr<InputView<C>> vw;
    if (w) vw = std::make_unique<InputView<C>>(*w);
    std::vector<Tensor> outs;
    if (!sce) {
      outs.push_back(nll<C>(node, vx.data(), x.shape(), t, vw ? vw->data() : nullptr, x.dtype()));
      return outs;
    }
    // log_softmax over axis 1, with the max subtracted for stability.
    const int64_t N = x.shape()[0], Cn = x.shape()[1];
    const int64_t D = N * Cn > 0 ? x.numel() / (N * Cn) : 0;
    OutputBuffer<C> logp(x.dtype(), x.shape());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t d = 0; d < D; ++d) {
        C mx = -std::numeric_limits<C>::infinity();
        for (int64_t c = 0; c < Cn; ++c) mx = std::max(mx, vx[(n * Cn + c) * D + d]);
        C sum = 0;
        for (int64_t c = 0; c < Cn; ++c) sum += std::exp(vx[(n * Cn + c) * D + d] - mx);
        const C lse = std::log(sum);
        for (int64_t c = 0; c < Cn; ++c)
          logp[(n * Cn + c) * D + d] = vx[(n * Cn + c) * D + d] - mx - lse;
      }
    outs.push_back(nll<C>(node, logp.data(), x.shape(), t, vw ? vw->data() : nullptr, x.dtype()));
    if (node.outputs.size() > 1) outs.push_back(logp.finish());
    return outs;
  });
}

}  // namespace

void register_loss_ops() {
  register_op({"NegativeLogLikelihoodLoss", [](Node& node) { loss_infer(node, false); },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 return loss_kernel(node, inputs, false);
               }});
  register_op({"SoftmaxCrossEntropyLoss", [](Node& node) { loss_infer(node, true); },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 return loss_kernel(node, inputs, true);
               }});
}

}  // namespace tessel::ops
