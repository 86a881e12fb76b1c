// Helpers for the zoo tests: build a zoo model, import it with tessel's frontend, make inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "compiler/driver/zoo.h"
#include "compiler/frontend/onnx_import.h"
#include "npu_model/hw_config.h"

namespace tessel::testing {

/// A zoo model serialized and imported back (shapes inferred by the frontend).
struct ImportedZooModel {
  std::string bytes;
  std::unique_ptr<Graph> graph;
};

/// Options with batch `batch` and the model's default seed.
inline zoo::ZooOptions with_batch(int64_t batch) {
  zoo::ZooOptions o;
  o.batch = batch;
  return o;
}
/// Options with seed `seed` and batch 1.
inline zoo::ZooOptions with_seed(uint64_t seed) {
  zoo::ZooOptions o;
  o.seed = seed;
  return o;
}

inline ImportedZooModel import_zoo(const std::string& name, const zoo::ZooOptions& options = {}) {
  ImportedZooModel m;
  m.bytes = zoo::serialize_model(zoo::build_zoo_model(name, options));
  m.graph = frontend::import_onnx_bytes(m.bytes, "zoo " + name);
  return m;
}

/// The zoo's input convention (zoo.h): unit mean square. Uniform in [-sqrt(3), sqrt(3)) has
/// mean square 1.
inline Tensor unit_input(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-std::sqrt(3.0f), std::sqrt(3.0f));
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_floats(shape, v);
}

/// Inputs of a zoo graph (its single input) by name.
inline std::map<std::string, Tensor> zoo_inputs(const Graph& g, uint32_t seed = 7) {
  return {{g.inputs.at(0)->name, unit_input(g.inputs.at(0)->shape, seed)}};
}

inline double mean_square(const Tensor& t) {
  double s = 0;
  const float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) s += double(p[i]) * p[i];
  return s / static_cast<double>(t.numel());
}

inline bool all_finite(const Tensor& t) {
  const float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

inline npu::HwConfig zoo_preset(const std::string& name) {
  return npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/" + name + ".yaml");
}

}  // namespace tessel::testing
