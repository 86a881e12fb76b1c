// Shared by the compiler and CPU backend tests: deterministic random tensors and a small graph
// builder (each node's shape inferred as it is added).
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"

namespace tessel::testing {

/// Deterministic pseudo-random tensor with values in [lo, hi) (std::mt19937 seeded with `seed`).
inline Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_floats(shape, v);
}

/// Deterministic pseudo-random integers uniform in [lo, hi] (std::mt19937_64 seeded with `seed`),
/// stored as `dtype` (an integer dtype or bool; values outside its range wrap as ONNX Cast does).
inline Tensor random_int_tensor(const Shape& shape, DType dtype, uint32_t seed, int64_t lo,
                                int64_t hi) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<int64_t> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = dist(rng);
  const Tensor t = Tensor::from_int64s(shape, v);
  return dtype == DType::i64 ? t : t.cast(dtype);
}

/// Node attributes from {name, value} pairs, e.g. attrs({{"axis", int64_t{1}}}).
inline Attributes attrs(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attributes a;
  for (auto& [k, v] : kv) a.set(k, v);
  return a;
}

/// A graph under construction: inputs, constants and nodes named OP_INDEX. A node's output is
/// named OP_out, or OP_outINDEX with `unique_output_names` (needed when an op type repeats).
struct GraphBuilder {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();
  bool unique_output_names = false;
  explicit GraphBuilder(bool unique_names = false) : unique_output_names(unique_names) {
    g->name = "test";
    g->opset = 17;
  }
  Value* input(const std::string& name, const Shape& shape, DType dtype = DType::f32) {
    Value* v = g->add_value(name, dtype, shape);
    g->inputs.push_back(v);
    return v;
  }
  Value* constant(const std::string& name, Tensor t) { return g->add_constant(name, std::move(t)); }
  Value* node(const std::string& op, std::vector<Value*> ins, Attributes attrs = {}) {
    const std::string index = std::to_string(g->nodes().size());
    Value* out =
        g->add_value(op + "_out" + (unique_output_names ? index : ""), DType::undefined, {});
    Node* n = g->add_node(op, op + "_" + index, std::move(ins), {out}, std::move(attrs));
    ops::infer_node(*n);
    return out;
  }
  std::unique_ptr<Graph> finish(std::vector<Value*> outputs) {
    g->outputs = std::move(outputs);
    return std::move(g);
  }
};

}  // namespace tessel::testing
