// Helpers of the tuner tests: small ONNX models written to files (for the CLI) and a hardware
// config by preset name.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "npu_model/hw_config.h"
#include "tests/frontend/onnx_builder.h"

namespace tessel::testing {

inline npu::HwConfig preset(const std::string& name) {
  return npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/" + name + ".yaml");
}

/// A scratch directory private to this test process.
inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir =
      std::filesystem::path(::testing::TempDir()) / (name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

/// Adds an fp32 initializer of `shape` whose values are (i % 7 - 3) / 8.
inline void add_weights(onnx::ModelProto& m, const std::string& name,
                        const std::vector<int64_t>& shape) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : shape) {
    t->add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i) t->add_float_data(static_cast<float>(i % 7 - 3) / 8.0f);
}

/// conv(x[1, cin, h, w], w[cout, cin, k, k], pads k/2) -> Relu, written to `path`.
inline void write_conv_model(const std::filesystem::path& path, int64_t cin, int64_t cout,
                             int64_t h, int64_t w, int64_t k) {
  onnx::ModelProto m = make_model(17);
  add_input(m, "x", onnx::TensorProto::FLOAT, {int64_t{1}, cin, h, w});
  add_weights(m, "w", {cout, cin, k, k});
  auto* c = add_node(m, "Conv", {"x", "w"}, {"c"}, "conv");
  attr_ints(c, "kernel_shape", {k, k});
  attr_ints(c, "pads", {k / 2, k / 2, k / 2, k / 2});
  add_node(m, "Relu", {"c"}, {"y"}, "relu");
  add_output(m, "y");
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
}

}  // namespace tessel::testing
