// Helpers for CPU backend tests: small graphs, a JIT run and the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "compiler/backend/cpu/compile.h"
#include "compiler/backend/cpu/jit.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"

namespace tessel::testing {

/// Deterministic pseudo-random tensor with values in [lo, hi).
inline Tensor cpu_random(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_floats(shape, v);
}

/// A graph under construction.
struct CpuGraph {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();
  CpuGraph() {
    g->name = "test";
    g->opset = 17;
  }
  Value* input(const std::string& name, const Shape& shape) {
    Value* v = g->add_value(name, DType::f32, shape);
    g->inputs.push_back(v);
    return v;
  }
  Value* constant(const std::string& name, Tensor t) { return g->add_constant(name, std::move(t)); }
  Value* node(const std::string& op, std::vector<Value*> ins, Attributes attrs = {}) {
    Value* out =
        g->add_value(op + "_out" + std::to_string(g->nodes().size()), DType::undefined, {});
    Node* n = g->add_node(op, op + "_" + std::to_string(g->nodes().size()), std::move(ins), {out},
                          std::move(attrs));
    ops::infer_node(*n);
    return out;
  }
  std::unique_ptr<Graph> finish(std::vector<Value*> outputs) {
    g->outputs = std::move(outputs);
    return std::move(g);
  }
};

inline Attributes attrs(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attributes a;
  for (auto& [k, v] : kv) a.set(k, v);
  return a;
}

inline double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::abs(t.get_as_double(i)));
  return m;
}

/// Largest |a - b| over all elements (infinity on a shape mismatch or NaN).
inline double max_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::abs(a.get_as_double(i) - b.get_as_double(i));
    if (std::isnan(d)) return INFINITY;
    m = std::max(m, d);
  }
  return m;
}

/// Compiles `graph` for the CPU (JIT), runs it and checks every output against the reference
/// interpreter: |cpu - ref| <= rel * max|ref| + 1e-6. Returns the JIT result.
inline cpu_backend::CpuJit::Result check_cpu(const Graph& graph,
                                             const std::map<std::string, Tensor>& inputs,
                                             double rel, cpu_backend::CpuCompileOptions opts = {}) {
  cpu_backend::CpuJit jit(cpu_backend::compile_cpu(graph, opts));
  auto got = jit.run(inputs, true);
  auto want = ops::run_reference(graph, inputs);
  for (const auto& [name, ref] : want) {
    EXPECT_TRUE(got.outputs.count(name)) << name;
    if (!got.outputs.count(name)) continue;
    EXPECT_LE(max_diff(got.outputs.at(name), ref), rel * max_abs(ref) + 1e-6) << name;
  }
  return got;
}

}  // namespace tessel::testing
