// The one value comparison of the test suites: how far a computed tensor is from the expected one,
// element by element, safe against NaN, infinities and shape mismatches.
//
// A plain `m = std::max(m, |a - b|)` loop drops NaN (every comparison with NaN is false), so an
// output full of NaN would report error 0 and pass; it also reads past the end of the shorter
// tensor when the shapes differ. Here a shape mismatch, a NaN on either side, or an infinity that
// the other side does not equal makes the error +infinity, so every `<=` against a bound fails.
// (Two NaN at the same element, or two equal infinities, count as equal only with
// Specials::must_match, as the ONNX conformance data expects NaN outputs of e.g. Log(-1).)
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "compiler/ir/tensor.h"

namespace tessel::testing {

/// How NaN and infinities in the expected values are judged.
enum class Specials {
  fail,        // any NaN or infinity on either side is an infinite error
  must_match,  // NaN where NaN is expected and equal infinities are exact matches
};

/// The comparison of `actual` with `expected` against |a - e| <= atol + rtol * |e| per element.
struct TensorDiff {
  bool shape_ok = true;
  double max_abs_error = 0;  // max |a - e|; +inf on a shape mismatch, NaN or unequal infinity
  double max_expected = 0;   // max |e| over finite expected elements
  double worst_ratio = 0;    // max |a - e| / (atol + rtol |e|): <= 1 passes; +inf as above
  int64_t worst_index = -1;  // element of worst_ratio (-1: none)
  int64_t bad = 0;           // elements outside the bound
  double actual_at_worst = 0, expected_at_worst = 0;
  bool pass() const { return shape_ok && bad == 0; }
  /// "shape [2,3] vs expected [3,2]" or "3 of 96 elements outside atol + rtol |e|; worst at ...".
  std::string describe(double atol, double rtol) const {
    std::ostringstream s;
    if (!shape_ok) return "shape mismatch";
    s << bad << " elements outside " << atol << " + " << rtol << " |expected|; max abs error "
      << max_abs_error << ", worst element " << worst_index << ": " << actual_at_worst
      << " vs expected " << expected_at_worst << " (error / bound " << worst_ratio << ")";
    return s.str();
  }
};

/// Compares element by element (both tensors read as double, any dtype).
inline TensorDiff diff_tensors(const Tensor& actual, const Tensor& expected, double atol = 0,
                               double rtol = 0, Specials specials = Specials::fail) {
  TensorDiff d;
  if (actual.shape() != expected.shape() || actual.numel() != expected.numel()) {
    d.shape_ok = false;
    d.max_abs_error = d.worst_ratio = INFINITY;
    d.bad = 1;
    return d;
  }
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double e = expected.get_as_double(i);
    if (std::isfinite(e)) d.max_expected = std::max(d.max_expected, std::abs(e));
  }
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double a = actual.get_as_double(i), e = expected.get_as_double(i);
    double err, ratio;
    if (std::isfinite(a) && std::isfinite(e)) {
      err = std::abs(a - e);
      const double bound = atol + rtol * std::abs(e);
      ratio = err == 0 ? 0.0 : bound > 0 ? err / bound : INFINITY;
    } else {
      const bool match = specials == Specials::must_match &&
                         ((std::isnan(a) && std::isnan(e)) || (!std::isnan(e) && a == e));
      err = ratio = match ? 0.0 : INFINITY;
    }
    // `!(x <= y)` rather than `x > y`: stays true for a NaN that slipped through.
    if (!(err <= d.max_abs_error)) d.max_abs_error = err;
    if (!(ratio <= 1.0)) ++d.bad;
    if (d.worst_index < 0 || !(ratio <= d.worst_ratio)) {
      d.worst_ratio = ratio;
      d.worst_index = i;
      d.actual_at_worst = a;
      d.expected_at_worst = e;
    }
  }
  return d;
}

/// Largest |a - e| (+inf on a shape mismatch, a NaN or an infinity on either side).
inline double max_abs_diff(const Tensor& actual, const Tensor& expected) {
  return diff_tensors(actual, expected).max_abs_error;
}

/// Largest |t| (+inf when t holds a NaN or an infinity).
inline double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = std::abs(t.get_as_double(i));
    if (!(v <= m)) m = std::isnan(v) ? INFINITY : v;
  }
  return m;
}

/// gtest assertion: every element within atol + rtol |expected| (EXPECT_TRUE(all_close(...))).
/// The failure message names the worst element.
inline ::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected,
                                            double atol, double rtol = 0,
                                            Specials specials = Specials::fail) {
  const TensorDiff d = diff_tensors(actual, expected, atol, rtol, specials);
  if (d.pass()) return ::testing::AssertionSuccess();
  std::ostringstream s;
  if (!d.shape_ok)
    s << "shape " << shape_to_string(actual.shape()) << " vs expected "
      << shape_to_string(expected.shape());
  else
    s << d.describe(atol, rtol);
  return ::testing::AssertionFailure() << s.str();
}

/// Max over the outputs of `expected` of max |a - e| / (|e| + max|e of that output|): the error
/// relative to each element, floored at the output's magnitude (values that cancel to near zero
/// are judged on the output's scale). +inf for a missing output, a shape mismatch or a NaN.
inline double max_scaled_error(const std::map<std::string, Tensor>& actual,
                               const std::map<std::string, Tensor>& expected) {
  double worst = 0;
  for (const auto& [name, want] : expected) {
    auto it = actual.find(name);
    if (it == actual.end()) return INFINITY;
    const double scale = max_abs(want);
    // rtol 1, atol = scale: the ratio is |a - e| / (scale + |e|).
    const TensorDiff d = diff_tensors(it->second, want, scale + 1e-30, 1.0);
    if (!(d.worst_ratio <= worst)) worst = d.worst_ratio;
  }
  return worst;
}

}  // namespace tessel::testing
