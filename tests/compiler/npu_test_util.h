// Helpers for NPU compiler tests: build small graphs, compile them, run the program on the
// functional interpreter and compare with the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "compiler/backend/npu/compile.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "compiler/support/fp16.h"
#include "isa/interpreter.h"
#include "npu_model/hw_config.h"
#include "simulator/simulator.h"
#include "tests/test_compare.h"
#include "tests/test_graph_builder.h"

namespace tessel::testing {

inline npu::HwConfig preset(const std::string& name) {
  return npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/" + name + ".yaml");
}

/// The GM image holding `mod`'s constants and `inputs` (floats converted to the activation dtype).
inline std::vector<uint8_t> initial_gm(const npu_backend::NpuModule& mod,
                                       const std::map<std::string, Tensor>& inputs) {
  std::vector<uint8_t> gm(mod.program.gm_bytes, 0);
  for (const auto& b : mod.program.buffers)
    if (!b.init.empty()) std::memcpy(gm.data() + b.address, b.init.data(), b.init.size());
  for (const auto& in : mod.inputs)
    npu_backend::pack_gm_elements(inputs.at(in.value), in.storage, gm.data() + in.address);
  return gm;
}

/// Reads every graph output of `mod` from a GM image (floats as f32, integers and bool as they
/// are).
inline std::map<std::string, Tensor> read_outputs(const npu_backend::NpuModule& mod,
                                                  const std::vector<uint8_t>& gm) {
  std::map<std::string, Tensor> out;
  for (const auto& o : mod.outputs)
    out[o.value] = npu_backend::unpack_gm_value(o, gm.data() + o.address);
  return out;
}

/// Runs `mod` on the functional interpreter with `inputs` and returns the outputs (as f32).
inline std::map<std::string, Tensor> run_interpreter(const npu_backend::NpuModule& mod,
                                                     const npu::HwConfig& hw,
                                                     const std::map<std::string, Tensor>& inputs) {
  std::vector<uint8_t> gm = initial_gm(mod, inputs);
  isa::interpret(mod.program, hw, gm);
  return read_outputs(mod, gm);
}

/// Runs `mod` on the SystemC cycle model (functional) and returns the outputs and the result.
inline std::map<std::string, Tensor> run_simulator(const npu_backend::NpuModule& mod,
                                                   const npu::HwConfig& hw,
                                                   const std::map<std::string, Tensor>& inputs,
                                                   sim::SimResult* result = nullptr) {
  std::vector<uint8_t> gm = initial_gm(mod, inputs);
  sim::Simulator s(hw);
  s.load(mod.program);
  s.write_gm(0, gm.data(), gm.size());
  sim::SimResult r = s.run();
  if (result) *result = r;
  std::vector<uint8_t> after(gm.size());
  s.read_gm(0, after.data(), after.size());
  return read_outputs(mod, after);
}

/// True when the two tensors hold the same bits.
inline bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

/// A per-element bound on |npu - reference|: atol + rtol * |reference|.
struct Bound {
  double atol = 0, rtol = 0;
};

/// Compiles `graph` for the preset `hw_name`, runs it on the functional interpreter and on the
/// SystemC model and checks: (1) the cycle model computes the same bits as the in-order
/// interpreter -- so the inserted set_flag/wait_flag pairs order every cross-pipe dependence; (2)
/// with several cores, the result equals the single-core program's bit for bit (same tiles, work
/// split over cores); (3) every output is within `bound` of the fp32 reference interpreter
/// (compiler/ops, which shares no code with the NPU's instruction semantics), element by element,
/// NaN- and shape-safe (tests/test_compare.h). Returns the compiled module and the outputs.
struct NpuCheck {
  npu_backend::NpuModule module;
  std::map<std::string, Tensor> outputs, reference;
};
inline NpuCheck check_npu(const Graph& graph, const std::map<std::string, Tensor>& inputs,
                          const std::string& hw_name, Bound bound,
                          const npu_backend::NpuCompileOptions& options = {}) {
  npu::HwConfig hw = preset(hw_name);
  auto mod = npu_backend::compile_npu(graph, hw, options);
  auto got = run_interpreter(mod, hw, inputs);
  auto simulated = run_simulator(mod, hw, inputs);
  for (const auto& [name, t] : got)
    EXPECT_TRUE(bit_equal(t, simulated.at(name))) << name << ": simulator differs from interpreter";
  if (hw.cores > 1) {
    npu::HwConfig one = npu::load_hw_config(hw.source_file, {{"cores", "1"}});
    const npu_backend::NpuCompileOptions same_tiles = npu_backend::same_tiles_on_one_core(mod);
    auto single = run_interpreter(npu_backend::compile_npu(graph, one, same_tiles), one, inputs);
    for (const auto& [name, t] : got)
      EXPECT_TRUE(bit_equal(t, single.at(name))) << name << ": multicore differs from one core";
  }
  const auto want = ops::run_reference(graph, inputs);
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [name, ref] : want) {
    EXPECT_TRUE(got.count(name)) << name << " was not computed on the NPU";
    if (!got.count(name)) continue;
    EXPECT_TRUE(all_close(got.at(name), ref, bound.atol, bound.rtol))
        << name << " on " << hw_name << " (bound " << bound.atol << " + " << bound.rtol
        << " |expected|)";
  }
  return {std::move(mod), std::move(got), want};
}

}  // namespace tessel::testing
