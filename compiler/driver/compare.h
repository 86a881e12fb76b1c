// Comparing a target's outputs with expected values, and the tolerances used.
#pragma once

#include <string>

#include "compiler/ir/tensor.h"
#include "npu_model/hw_config.h"

namespace tessel::driver {

/// Pass when |actual - expected| <= atol + rtol * |expected| for every element (numpy.allclose).
struct Tolerance {
  double atol = 0, rtol = 0;
  std::string basis;  // one line saying where the numbers come from
};

/// Tolerance for the fp32 reference interpreter against independent expected values (ONNX test
/// data, ONNX Runtime): rtol 1e-3 as the ONNX backend tests use, atol 1e-5 for float
/// summation-order differences near zero.
Tolerance reference_tolerance();

/// Tolerance for the NPU against the fp32 reference. The NPU stores activations and weights in
/// `cube.input_dtype`: for fp16 the unit roundoff is u = 2^-11. Every kernel rounds its output
/// once (relative error u) and sees inputs already off by the previous kernels' error, so the
/// error relative to a value's scale grows roughly linearly with the number of kernels on the
/// path to it (measured: ~10 u after 30 kernels of the PP-OCRv4 detector) and is amplified by a
/// saturating output (a sigmoid of logits of magnitude ~40 maps their 0.5 % error to 5 % of its
/// [0, 1] range). The bound allows 128 u relative to each element and 128 u of the output's
/// largest magnitude (values that cancel to near zero are judged on the scale of the output),
/// plus 128 steps of the format's smallest subnormal (2^-24 for fp16: fp16 cannot tell apart
/// outputs closer to zero than that): rtol = 128 u = 0.0625 for fp16; for fp32 storage
/// (u = 2^-24) 128 u = 7.6e-6.
Tolerance npu_tolerance(const npu::HwConfig& hw, const Tensor& expected);

struct OutputCheck {
  std::string name;
  bool shape_ok = true;
  double max_abs_error = 0;
  double max_rel_error = 0;  // over elements with |expected| >= 1e-3 * max|expected|
  double max_expected = 0;   // max |expected|
  /// The tested quantity: max over elements of |actual - expected| / (atol + rtol |expected|);
  /// <= 1 passes, so it says how far below its bound the output is. +inf for a NaN or infinity
  /// mismatch, a shape mismatch, or an error against a zero bound.
  double worst_ratio = 0;
  Tolerance tolerance;
  bool pass = false;
};

/// Compares one output. NaN in either (where the other is not NaN) fails.
OutputCheck compare_output(const std::string& name, const Tensor& actual, const Tensor& expected,
                           const Tolerance& tolerance);

}  // namespace tessel::driver
