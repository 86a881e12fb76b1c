// Small typed tensors for the tests of integer, bool and float64 paths: a vector or scalar of any
// dtype from doubles, the values read back as doubles, and the exact comparison of a target's
// outputs with the reference interpreter's (dtype, shape and every element equal, NaN positions
// equal). Shared by the CPU, GPU, NPU int8 and RTL test suites.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/tensor.h"

namespace tessel::testing {

/// A tensor of dtype `dt` holding `v` (converted as Tensor::set_from_double does: integers
/// truncate toward zero, bool is v != 0); shape [v.size()] unless `shape` is given, whose element
/// count must equal v.size().
inline Tensor vec(DType dt, const std::vector<double>& v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  Tensor t(dt, shape);
  for (size_t i = 0; i < v.size(); ++i) t.set_from_double(static_cast<int64_t>(i), v[i]);
  return t;
}

/// A rank-0 tensor of dtype `dt` holding `v`.
inline Tensor scalar(DType dt, double v) {
  Tensor t(dt, {});
  t.set_from_double(0, v);
  return t;
}

/// The elements of `t` in row-major order, read as double.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_as_double(i));
  return v;
}

/// Every output of `ref` is in `got` with the same dtype, shape and values (NaN where NaN);
/// each difference is a gtest failure naming the output and the element.
inline void expect_outputs_exact(const std::map<std::string, Tensor>& got,
                                 const std::map<std::string, Tensor>& ref) {
  for (const auto& [name, r] : ref) {
    EXPECT_TRUE(got.count(name)) << name;
    if (!got.count(name)) continue;
    const Tensor& g = got.at(name);
    EXPECT_EQ(dtype_to_string(g.dtype()), dtype_to_string(r.dtype())) << name;
    EXPECT_EQ(g.shape(), r.shape()) << name;
    if (g.dtype() != r.dtype() || g.shape() != r.shape()) continue;
    for (int64_t i = 0; i < r.numel(); ++i) {
      const double a = g.get_as_double(i), b = r.get_as_double(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      EXPECT_EQ(a, b) << name << "[" << i << "]";
    }
  }
}

}  // namespace tessel::testing
