// Helpers for the op-library unit tests: build a one-node graph, run its shape rule and its
// reference kernel, and check that both agree on the outputs' dtype and shape.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/support/fp16.h"

namespace tessel::testing_ops {

/// An input of the node under test: a tensor, known at compile time (a constant) or not, or an
/// omitted optional input.
struct Arg {
  Tensor tensor;
  bool constant = false;
  bool omitted = false;
};

inline Arg in(Tensor t) { return {std::move(t), false, false}; }
inline Arg cst(Tensor t) { return {std::move(t), true, false}; }
inline Arg none() { return {Tensor(), false, true}; }

inline Tensor f32(const Shape& s, const std::vector<float>& v) { return Tensor::from_floats(s, v); }
inline Tensor i64(const Shape& s, const std::vector<int64_t>& v) {
  return Tensor::from_int64s(s, v);
}
inline Tensor f64(const Shape& s, const std::vector<double>& v) {
  Tensor t(DType::f64, s);
  std::memcpy(t.raw(), v.data(), v.size() * sizeof(double));
  return t;
}
inline Tensor f16(const Shape& s, const std::vector<float>& v) {
  Tensor t(DType::f16, s);
  for (size_t i = 0; i < v.size(); ++i) t.data<uint16_t>()[i] = f32_to_f16_bits(v[i]);
  return t;
}
/// A tensor of `dtype` holding `v` converted element by element.
inline Tensor typed(DType dtype, const Shape& s, const std::vector<double>& v) {
  Tensor t(dtype, s);
  for (size_t i = 0; i < v.size(); ++i) t.set_from_double(static_cast<int64_t>(i), v[i]);
  return t;
}
inline Tensor boolean(const Shape& s, const std::vector<int>& v) {
  Tensor t(DType::boolean, s);
  for (size_t i = 0; i < v.size(); ++i) t.data<uint8_t>()[i] = v[i] ? 1 : 0;
  return t;
}

/// A one-node graph: inputs become graph values (constants when Arg::constant), `n_outputs`
/// outputs are created untyped and filled by the shape rule.
struct OneNode {
  Graph graph;
  Node* node = nullptr;
  std::vector<Tensor> input_tensors;

  OneNode(const std::string& op, std::vector<Arg> args, Attributes attrs = {}, size_t n_outputs = 1,
          const std::string& name = "n0") {
    std::vector<Value*> ins;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].omitted) {
        ins.push_back(nullptr);
        input_tensors.emplace_back();
        continue;
      }
      const std::string vname = "in" + std::to_string(i);
      if (args[i].constant)
        ins.push_back(graph.add_constant(vname, args[i].tensor));
      else
        ins.push_back(graph.add_value(vname, args[i].tensor.dtype(), args[i].tensor.shape()));
      input_tensors.push_back(std::move(args[i].tensor));
    }
    std::vector<Value*> outs;
    for (size_t k = 0; k < n_outputs; ++k)
      outs.push_back(graph.add_value("out" + std::to_string(k), DType::undefined, {}));
    node = graph.add_node(op, name, ins, outs, std::move(attrs));
  }

  /// Runs the shape rule (throws what it throws).
  void infer() { ops::infer_node(*node); }

  /// Runs the shape rule, then the kernel; checks the kernel's outputs against the rule.
  std::vector<Tensor> run() {
    infer();
    std::vector<const Tensor*> ptrs;
    for (size_t i = 0; i < node->inputs.size(); ++i)
      ptrs.push_back(node->inputs[i] ? &input_tensors[i] : nullptr);
    std::vector<Tensor> outs = ops::run_reference_node(*node, ptrs);
    EXPECT_EQ(outs.size(), node->outputs.size());
    for (size_t k = 0; k < outs.size() && k < node->outputs.size(); ++k) {
      EXPECT_EQ(outs[k].dtype(), node->outputs[k]->dtype) << "output " << k;
      EXPECT_EQ(outs[k].shape(), node->outputs[k]->shape) << "output " << k;
    }
    return outs;
  }
};

/// Runs op on args and returns output 0.
inline Tensor run1(const std::string& op, std::vector<Arg> args, Attributes attrs = {}) {
  OneNode n(op, std::move(args), std::move(attrs));
  return n.run().at(0);
}

/// Attributes from an initializer list of (name, value).
inline Attributes attrs(std::initializer_list<std::pair<std::string, AttrValue>> list) {
  Attributes a;
  for (const auto& [k, v] : list) a.set(k, v);
  return a;
}

/// All elements as doubles.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.get_as_double(i);
  return v;
}

/// Expects dtype, shape and values (within `tol` absolute).
inline void expect_tensor(const Tensor& t, DType dtype, const Shape& shape,
                          const std::vector<double>& expected, double tol = 1e-6) {
  EXPECT_EQ(t.dtype(), dtype);
  ASSERT_EQ(t.shape(), shape);
  ASSERT_EQ(static_cast<size_t>(t.numel()), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(t.get_as_double(static_cast<int64_t>(i)), expected[i], tol) << "element " << i;
}

/// The message of the tessel::Error `f` throws ("<no error>" if none; fails on other types).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

/// True when `f` throws tessel::Unsupported.
template <class F>
bool throws_unsupported(F&& f) {
  try {
    f();
  } catch (const Unsupported&) {
    return true;
  } catch (...) {
    return false;
  }
  return false;
}

}  // namespace tessel::testing_ops
