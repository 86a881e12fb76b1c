// Output comparison (see compare.h).
#include "compiler/driver/compare.h"

#include <fmt/format.h>

#include <cmath>

namespace tessel::driver {

Tolerance reference_tolerance() {
  return {1e-5, 1e-3,
          "fp32 reference vs independent data: rtol 1e-3 (ONNX backend tests), atol 1e-5"};
}

Tolerance npu_tolerance(const npu::HwConfig& hw, const Tensor& expected) {
  const bool f16 = hw.core.cube.input_dtype == isa::DType::f16;
  const double u = f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -24);
  // Smallest step of the storage format near zero (fp16 subnormals are 2^-24 apart).
  const double quantum = f16 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -149);
  double scale = 0;
  for (int64_t i = 0; i < expected.numel(); ++i)
    scale = std::max(scale, std::abs(expected.get_as_double(i)));
  const double k = 128 * u;
  return {k * scale + 128 * quantum, k,
          fmt::format("{} storage: 128 u = {:.3g} relative, and 128 u x max|expected| + 128 x {:.3g} = "
                      "{:.3g} absolute",
                      f16 ? "fp16" : "fp32", k, quantum, k * scale + 128 * quantum)};
}

OutputCheck compare_output(const std::string& name, const Tensor& actual, const Tensor& expected,
                           const Tolerance& tolerance) {
  OutputCheck c;
  c.name = name;
  c.tolerance = tolerance;
  if (actual.shape() != expected.shape()) {
    c.shape_ok = false;
    c.pass = false;
    c.max_abs_error = c.worst_ratio = INFINITY;
    return c;
  }
  const int64_t n = expected.numel();
  for (int64_t i = 0; i < n; ++i)
    c.max_expected = std::max(c.max_expected, std::abs(expected.get_as_double(i)));
  bool pass = true;
  for (int64_t i = 0; i < n; ++i) {
    const double a = actual.get_as_double(i), e = expected.get_as_double(i);
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) != std::isnan(e)) {
        pass = false;
        c.max_abs_error = c.worst_ratio = INFINITY;
      }
      continue;
    }
    if (std::isinf(e) || std::isinf(a)) {
      if (a != e) {
        pass = false;
        c.max_abs_error = c.worst_ratio = INFINITY;
      }
      continue;
    }
    const double d = std::abs(a - e);
    c.max_abs_error = std::max(c.max_abs_error, d);
    if (std::abs(e) >= 1e-3 * c.max_expected && std::abs(e) > 0)
      c.max_rel_error = std::max(c.max_rel_error, d / std::abs(e));
    const double bound = tolerance.atol + tolerance.rtol * std::abs(e);
    if (d > 0) c.worst_ratio = std::max(c.worst_ratio, bound > 0 ? d / bound : INFINITY);
    if (d > bound) pass = false;
  }
  c.pass = pass;
  return c;
}

}  // namespace tessel::driver
