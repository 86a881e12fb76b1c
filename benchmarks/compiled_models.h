// The models the benchmarks run, compiled once per process: zoo:resnet50 at 1x3x224x224
// (compiler/driver/zoo.h) and the PP-OCR direction classifier at 1x3x48x192 (models/), both for
// hw_configs/npu_4core.yaml with the default schedule (double buffering, 4 cores unless asked
// otherwise). Shared by bench_models.cpp (simulation), bench_isa.cpp (assembler, encoder, verifier,
// interpreter) and bench_sim_scale.cpp (simulation at 4 to 1,024 cores).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "compiler/backend/npu/compile.h"
#include "compiler/driver/runner.h"
#include "npu_model/hw_config.h"

namespace tessel::bench {

struct CompiledModel {
  npu::HwConfig hw;
  npu_backend::NpuModule module;
};

/// "resnet50" or "ppocr_cls", compiled on first use (outside any timed loop); `cores` overrides
/// the preset's core count (bench_sim_scale.cpp).
inline const CompiledModel& compiled_model(const std::string& which, int cores = 4) {
  static std::map<std::pair<std::string, int>, std::unique_ptr<CompiledModel>> cache;
  auto& c = cache[{which, cores}];
  if (c) return *c;
  c = std::make_unique<CompiledModel>();
  c->hw = npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml",
                              {{"cores", std::to_string(cores)}});
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::npu);
  std::unique_ptr<Graph> g =
      which == "resnet50"
          ? driver::load_model("zoo:resnet50", {{"input", {1, 3, 224, 224}}}, passes)
          : driver::load_model(
                std::string(TESSEL_MODELS_DIR) + "/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                {{"x", {1, 3, 48, 192}}}, passes);
  c->module = npu_backend::compile_npu(*g, c->hw);
  return *c;
}

}  // namespace tessel::bench
