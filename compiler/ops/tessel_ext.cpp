// tessel extension ops (see tessel_ext.h).
#include "compiler/ops/tessel_ext.h"

#include <cmath>

#include "compiler/ops/op_util.h"

namespace tessel::ops {

namespace {

void silu_infer(Node& node) {
  check_arity(node, 1, 1, 1, 1);
  const Value& x = required_input(node, 0, "X");
  expect_float(node, x.dtype, "input X");
  set_output(node, 0, x.dtype, x.shape);
}

/// y = x * sigmoid(x), sigmoid split by sign so exp never overflows (both forms equal
/// 1 / (1 + e^-x)), computed in the reference's compute type (fp32 for f16/f32, f64 for f64).
std::vector<Tensor> silu_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 1, 1, 1, 1);
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> in(x);
    OutputBuffer<C> out(x.dtype(), x.shape());
    const C* src = in.data();
    C* dst = out.data();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) {
      const C v = src[i];
      C s;
      if (v >= C(0)) {
        s = C(1) / (C(1) + std::exp(-v));
      } else {
        const C e = std::exp(v);
        s = e / (C(1) + e);
      }
      dst[i] = v * s;
    }
    return one_output(out.finish());
  });
}

void trans_data_infer(Node& node) {
  check_arity(node, 1, 1, 1, 1);
  const Value& x = required_input(node, 0, "X");
  expect_float(node, x.dtype, "input X");
  const std::string to = node.attrs.get_string_or("dst_format", "", node.name);
  if (to != "NC1HWC0" && to != "NCHW")
    node_fail(node, "attribute dst_format is '{}' (expected \"NC1HWC0\" or \"NCHW\")", to);
  if (x.shape.size() != 4 || x.shape[1] % kNc1hwc0C0 != 0)
    node_fail(node, "input X is {} (expected a rank-4 [N, C, H, W] tensor, C a multiple of {})",
              shape_to_string(x.shape), kNc1hwc0C0);
  set_output(node, 0, x.dtype, x.shape);
}

/// The logical value is unchanged (a storage format is not part of it): a copy.
std::vector<Tensor> trans_data_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 1, 1, 1, 1);
  return one_output(kernel_input(node, inputs, 0, "X"));
}

}  // namespace

void register_tessel_ext_ops() {
  register_op({"Silu", silu_infer, silu_kernel});
  register_op({"TransData", trans_data_infer, trans_data_kernel});
}

}  // namespace tessel::ops
